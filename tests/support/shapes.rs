//! Kubeconfig shapes of managed and corporate clusters, written into a folder of their own
//! (with the test cluster's certificates and exec credential plugins beside them), and run
//! side by side: `kubectl get lease` and `kubectl dispatch lease`, same kubeconfig, same
//! flags, same environment. kubectl is the oracle.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Cluster, Run, plugin_path, unique};

pub const LEASE_NS: &str = "dispatch-system";
pub const LEASE: &str = "dispatch-admission";
pub const HOLDER: &str = "dispatch-admission-7d9f_3b1e";

pub struct Shapes {
    pub dir: PathBuf,
    pub server: String,
    /// Where kubectl runs (default: `dir`, the kubeconfigs' folder).
    pub cwd: PathBuf,
}

/// Exec credential plugins, as shell scripts. Each counts its runs in `$RUNS` when set.
const PLUGINS: &[(&str, &str)] = &[
    (
        // The admin client certificate, as `$API` (v1 or v1beta1); `$EXPIRES_IN` seconds of life.
        "exec-cert",
        r#"#!/usr/bin/env bash
set -eu
[[ -n ${RUNS:-} ]] && echo run >>"$RUNS"
pem() { awk '{printf "%s\\n", $0}' "$1"; }
exp=""
[[ -n ${EXPIRES_IN:-} ]] && exp=",\"expirationTimestamp\":\"$(date -u -d "+${EXPIRES_IN} seconds" +%Y-%m-%dT%H:%M:%SZ)\""
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"clientCertificateData":"%s","clientKeyData":"%s"%s}}\n' \
  "$API" "$(pem "$DIR/pki/admin.crt")" "$(pem "$DIR/pki/admin.key")" "$exp"
"#,
    ),
    (
        // A bearer token read from `$TOKEN_FILE`.
        "exec-token",
        r#"#!/usr/bin/env bash
set -eu
[[ -n ${RUNS:-} ]] && echo run >>"$RUNS"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$(cat "$TOKEN_FILE")"
"#,
    ),
    (
        "exec-fail",
        r#"#!/usr/bin/env bash
echo "opening the login page" >&2
echo "login failed: the session expired, run corp-login again" >&2
exit 3
"#,
    ),
    // Hangs; its process id in `$PIDFILE`, so a test can see that it was killed.
    ("exec-hang", "#!/usr/bin/env bash\n[[ -n ${PIDFILE:-} ]] && echo $$ >\"$PIDFILE\"\nexec sleep 600\n"),
    (
        // Records whether it got a terminal and what KUBERNETES_EXEC_INFO said, in `$SEEN`.
        "exec-tty",
        r#"#!/usr/bin/env bash
set -eu
if [[ -t 0 ]]; then t=tty; else t=notty; fi
echo "$t $(printf '%s' "$KUBERNETES_EXEC_INFO" | grep -o '"interactive":[a-z]*')" >>"$SEEN"
exec "$DIR/exec-cert"
"#,
    ),
    (
        "exec-empty",
        "#!/usr/bin/env bash\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{}}'\n",
    ),
];

impl Shapes {
    /// A folder with the cluster's certificates under `pki/` and the plugins; and the Lease,
    /// held and fresh for an hour, so that kubectl's get succeeds whenever the plugin's can.
    pub fn new(c: &Cluster) -> Shapes {
        let dir = std::env::temp_dir().join(unique("dispatch-shapes"));
        std::fs::create_dir_all(dir.join("pki")).unwrap();
        for f in ["ca.crt", "admin.crt", "admin.key", "viewer.crt", "viewer.key", "no-lease.crt", "no-lease.key"] {
            std::fs::copy(c.state_dir.join("pki").join(f), dir.join("pki").join(f)).unwrap();
        }
        for (name, text) in PLUGINS {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        c.apply(&super::fixtures::lease(LEASE_NS, LEASE, Some(HOLDER), Some(0), Some(3600)));
        Shapes { cwd: dir.clone(), dir, server: c.env["APISERVER_URL"].clone() }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// Writes a kubeconfig with one context `x` (cluster and user YAML bodies as given,
    /// indented by the caller to four spaces) and returns its path.
    pub fn kubeconfig(&self, name: &str, cluster: &str, user: &str) -> PathBuf {
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: x\n    user: x\nclusters:\n- name: x\n  cluster:\n{cluster}users:\n- name: x\n  user:\n{user}"
        );
        let path = self.dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The cluster body with the CA as an absolute path.
    pub fn cluster(&self) -> String {
        format!("    server: {}\n    certificate-authority: {}\n", self.server, self.path("pki/ca.crt"))
    }

    /// An exec user body running plugin `name` with these `env` entries.
    pub fn exec_user(&self, name: &str, api: &str, extra: &str, env: &[(&str, &str)]) -> String {
        let mut text =
            format!("    exec:\n      apiVersion: {api}\n      command: {}\n{extra}      env:\n", self.path(name));
        for (k, v) in [("DIR", self.dir.to_str().unwrap()), ("API", api)].iter().chain(env) {
            text += &format!("      - name: {k}\n        value: \"{v}\"\n");
        }
        text
    }

    /// `kubectl FLAGS get lease` and `kubectl dispatch FLAGS lease`, each with `--kubeconfig`.
    pub fn side_by_side(&self, kubeconfig: &Path, flags: &[&str], env: &[(&str, &str)]) -> (Run, Run) {
        let kc = kubeconfig.to_str().unwrap();
        let mut get = vec!["--kubeconfig", kc];
        get.extend_from_slice(flags);
        get.extend_from_slice(&["get", "lease", "-n", LEASE_NS, LEASE, "-o", "name"]);
        let mut ours = vec!["dispatch", "--kubeconfig", kc];
        ours.extend_from_slice(flags);
        ours.push("lease");
        (self.kubectl(&get, env), self.kubectl(&ours, env))
    }

    /// The real kubectl, the fresh plugin first on PATH, in this folder.
    pub fn kubectl(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        Run::from(self.command(args, env).output().unwrap())
    }

    /// `kubectl ARGS` with a terminal (a pty from util-linux's `script`) as its standard input
    /// and output, as a person runs it.
    pub fn kubectl_in_terminal(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let line: Vec<String> = std::iter::once(super::kubectls::program().to_string_lossy().into_owned())
            .chain(args.iter().map(|a| a.to_string()))
            .map(|a| format!("'{a}'"))
            .collect();
        // The same environment as [`Shapes::command`] gives kubectl.
        let plain = self.command(&[], env);
        let mut script = Command::new("script");
        script.args(["-qec", &line.join(" "), "/dev/null"]).current_dir(&self.cwd).stdin(Stdio::null());
        for (k, v) in plain.get_envs() {
            match v {
                Some(v) => script.env(k, v),
                None => script.env_remove(k),
            };
        }
        Run::from(script.output().unwrap())
    }

    /// The command [`Shapes::kubectl`] runs, to start it another way.
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(super::kubectls::program());
        cmd.args(args)
            .current_dir(&self.cwd)
            .env("PATH", plugin_path())
            .env("RUST_BACKTRACE", "1")
            .env_remove("KUBECONFIG")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }
}

impl Drop for Shapes {
    fn drop(&mut self) {
        if std::env::var_os("DISPATCH_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Both work: kubectl got the Lease, and the plugin shows its holder.
pub fn both_work(kubectl: &Run, ours: &Run) {
    assert_eq!(kubectl.code, 0, "kubectl failed:\n{}", kubectl.stderr);
    assert_eq!(kubectl.stdout.trim(), format!("lease.coordination.k8s.io/{LEASE}"));
    ours.expect_code(0);
    assert!(ours.stdout.contains(HOLDER), "stdout:\n{}\nstderr:\n{}", ours.stdout, ours.stderr);
}

/// Both fail; the plugin with one `error:` line containing `error`, at most one hint line, no
/// backtrace, exit 1.
pub fn both_fail(kubectl: &Run, ours: &Run, error: &str) {
    assert_ne!(kubectl.code, 0, "kubectl worked where the plugin should fail:\n{}", kubectl.stdout);
    ours.expect_one_error(error);
}

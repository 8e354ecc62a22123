//! Test support for the real tier: one test cluster per test binary (a real kube-apiserver and
//! etcd, Kueue's CRDs, RBAC users), fixtures applied with the real kubectl, and the plugin run
//! the way a user runs it, `kubectl dispatch ...`, with the fresh binary first on PATH.
//!
//! A test that needs the cluster and cannot start it fails with the reason; nothing skips.

#![allow(dead_code)]

pub mod controller;
pub mod elector;
pub mod fixtures;
pub mod forward;
pub mod hostile;
pub mod inprocess;
pub mod kubectls;
pub mod kueue;
pub mod pods;
pub mod printcheck;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod script;
pub mod shapes;
pub mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Polls `f` every 200 ms until it returns Ok, or panics after `limit` naming `what` and the
/// last state `f` described.
pub fn eventually<T>(what: &str, limit: Duration, f: impl FnMut() -> Result<T, String>) -> T {
    try_eventually(limit, f)
        .unwrap_or_else(|state| panic!("timed out after {limit:?} waiting until {what}; last seen:\n{state}"))
}

/// Polls `f` every 200 ms until it returns Ok; after `limit`, its last Err, for a caller that
/// has more to do (or to say) than [`eventually`]'s panic.
pub fn try_eventually<T, E>(limit: Duration, mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(state) if start.elapsed() >= limit => return Err(state),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A running test cluster, torn down by its reaper when this test binary exits.
pub struct Cluster {
    pub state_dir: PathBuf,
    pub env: HashMap<String, String>,
}

static SHARED: OnceLock<Cluster> = OnceLock::new();

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty folder under the system's temporary folder, named for `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(&format!("dispatch-{tag}")));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Every .rs file under src/, as its path relative to src/ ("cluster/reading/fetch.rs"), sorted.
pub fn src_files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(base).expect("under src").to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let src = repo().join("src");
    let mut out = Vec::new();
    walk(&src, &src, &mut out);
    out.sort();
    out
}

/// Whether an audit event's user agent is the plugin's own: kubectl's plugin dispatcher
/// (`kubectl-dispatcher/v1.0`) is not the plugin.
pub fn is_plugin_agent(user_agent: &str) -> bool {
    user_agent.starts_with("kubectl-dispatch/")
}

/// A name no other test in this run uses.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}", std::process::id() % 100_000, NEXT.fetch_add(1, Ordering::SeqCst))
}

impl Cluster {
    /// The cluster shared by every test of this binary, with Kueue v0.17.0's CRDs.
    pub fn shared() -> &'static Cluster {
        SHARED.get_or_init(|| Cluster::start("v0.17.0"))
    }

    /// A new cluster with the given Kueue CRDs (`none` for none).
    pub fn start(kueue: &str) -> Cluster {
        Cluster::start_with(kueue, &[])
    }

    /// A new cluster with Kueue `version` running: its own controller manager, every CRD of
    /// the version, its webhooks registered (see `support::kueue`), and more of the harness's
    /// Kueue flags (`--kueue-leader-elect`, `--kueue-v1beta2-only`).
    pub fn start_with_kueue_manager_and(version: &str, flags: &[&str]) -> Cluster {
        let mut extra = vec!["--kueue-manager"];
        extra.extend_from_slice(flags);
        Cluster::start_with(version, &extra)
    }

    /// A new cluster on kube-apiserver `version` (`--apiserver-version`: a version of
    /// tests/cluster/apiserver/, or the default's), with Kueue v0.17.0's CRDs.
    pub fn start_on_apiserver(version: &str) -> Cluster {
        Cluster::start_with("v0.17.0", &["--apiserver-version", version])
    }

    /// A new cluster whose kube-apiserver serves lists and watches from etcd rather than its
    /// watch cache, so a watch resumed at a revision etcd compacted, or a continue token from
    /// before a compaction, gets etcd's 410 Gone.
    pub fn start_without_watch_cache() -> Cluster {
        Cluster::start_with("v0.17.0", &["--no-watch-cache"])
    }

    fn start_with(kueue: &str, extra: &[&str]) -> Cluster {
        let state_dir = std::env::temp_dir().join(unique("dispatch-cluster"));
        let out = Command::new(repo().join("tests/cluster/testcluster"))
            .args(["start", "--state-dir"])
            .arg(&state_dir)
            .args(["--kueue", kueue, "--owner-pid", &std::process::id().to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run tests/cluster/testcluster: {e}"));
        assert!(
            out.status.success(),
            "the test cluster did not start ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(state_dir.join("env"))
            .unwrap_or_else(|e| panic!("the test cluster wrote no env file: {e}"));
        let env = text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Cluster { state_dir, env }
    }

    pub fn kubeconfig(&self) -> &str {
        &self.env["KUBECONFIG"]
    }

    pub fn audit_log(&self) -> &Path {
        Path::new(&self.env["DISPATCH_TEST_AUDIT_LOG"])
    }

    /// The audit log's events so far (level Metadata, one JSON object a line), in order: whole
    /// lines only, as the last may be in the middle of its write while the cluster runs.
    pub fn audit_events(&self) -> Vec<serde_json::Value> {
        let log =
            std::fs::read_to_string(self.audit_log()).unwrap_or_else(|e| panic!("cannot read the audit log: {e}"));
        log[..log.rfind('\n').map_or(0, |i| i + 1)]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}")))
            .collect()
    }

    /// The audit log's events of the plugin's own requests (`audit_events` by `is_plugin_agent`),
    /// in order.
    pub fn plugin_events(&self) -> Vec<serde_json::Value> {
        let mut events = self.audit_events();
        events.retain(|e| e["userAgent"].as_str().is_some_and(is_plugin_agent));
        events
    }

    fn harness(&self, verb: &str) {
        let out = Command::new(repo().join("tests/cluster/testcluster"))
            .args([verb, "--state-dir"])
            .arg(&self.state_dir)
            .output()
            .expect("run testcluster");
        assert!(out.status.success(), "testcluster {verb} failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn kill_apiserver(&self) {
        self.harness("kill-apiserver");
    }

    pub fn start_apiserver(&self) {
        self.harness("start-apiserver");
    }

    /// Compacts etcd past every resourceVersion handed out so far (`testcluster compact`).
    pub fn compact(&self) {
        self.harness("compact");
    }

    /// `https://127.0.0.1:PORT` of the kube-apiserver.
    pub fn apiserver_url(&self) -> &str {
        &self.env["APISERVER_URL"]
    }

    pub fn stop(&self) {
        self.harness("stop");
    }

    /// Stops Kueue's manager (its webhooks stop answering); `start_kueue_manager` restarts it.
    pub fn stop_kueue_manager(&self) {
        self.harness("stop-kueue-manager");
    }

    pub fn start_kueue_manager(&self) {
        self.harness("start-kueue-manager");
    }

    /// SIGKILLs Kueue's manager: a Lease it held keeps its holder and goes stale.
    pub fn kill_kueue_manager(&self) {
        self.harness("kill-kueue-manager");
    }

    /// Kueue's manager's log (`--kueue-manager`).
    pub fn kueue_manager_log(&self) -> PathBuf {
        self.state_dir.join("kueue-manager.log")
    }

    /// `kubectl ARGS` with this cluster's kubeconfig.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run(self.command("kubectl", args), stdin)
    }

    /// `kubectl ARGS` as admin; panics with kubectl's stderr on failure.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl(args, stdin);
        assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl dispatch ARGS`, through the real kubectl, the fresh binary first on PATH.
    pub fn dispatch(&self, args: &[&str]) -> Run {
        let mut full = vec!["dispatch"];
        full.extend_from_slice(args);
        Run::from(run(self.command("kubectl", &full), None))
    }

    /// `program ARGS` with this cluster's kubeconfig and the plugin first on PATH; `kubectl`
    /// is the kubectl this thread runs ([`kubectls::program`]).
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = if program == "kubectl" { Command::new(kubectls::program()) } else { Command::new(program) };
        cmd.args(args).env("KUBECONFIG", self.kubeconfig()).env("PATH", plugin_path()).env_remove("NO_COLOR");
        cmd
    }

    /// Applies YAML objects (server-side, as admin), then their `status` through /status.
    pub fn apply(&self, yaml: &str) {
        self.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(yaml));
        let with_status: Vec<&str> = yaml.split("---\n").filter(|doc| doc.contains("\nstatus:")).collect();
        if !with_status.is_empty() {
            self.kubectl_ok(
                &["apply", "--server-side", "--force-conflicts", "--subresource=status", "-f", "-"],
                Some(&with_status.join("---\n")),
            );
        }
    }
}

/// A kubeconfig whose contexts (`admin`, the current one, and `other`) name a server nothing
/// answers at: for runs that must end before they connect.
pub const UNREACHABLE_KUBECONFIG: &str = "apiVersion: v1\nkind: Config\ncurrent-context: admin\ncontexts:\n- name: admin\n  context: {cluster: x, user: x}\n- name: other\n  context: {cluster: x, user: x}\nclusters:\n- name: x\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: x\n  user: {token: abc}\n";

/// Runs `kubectl dispatch ARGS` with a kubeconfig file of our own.
pub fn with_kubeconfig(kubeconfig: &str, args: &[&str]) -> Run {
    let dir = std::env::temp_dir().join(unique("dispatch-kc"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig).unwrap();
    let mut full = vec!["dispatch"];
    full.extend_from_slice(args);
    let out = Command::new(kubectls::program())
        .args(&full)
        .env("KUBECONFIG", &path)
        .env("PATH", plugin_path())
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    Run::from(out)
}

/// PATH with the freshly built plugin's folder first (or `DISPATCH_PLUGIN_DIR`'s, to run a
/// test against another build of the plugin, such as the one before a change).
pub fn plugin_path() -> String {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-dispatch"));
    let built = bin.parent().expect("binary folder").to_path_buf();
    let dir = std::env::var_os("DISPATCH_PLUGIN_DIR").map(PathBuf::from).unwrap_or(built);
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", dir.display())
}

fn run(mut cmd: Command, stdin: Option<&str>) -> Output {
    use std::io::Write;
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    if let Some(text) = stdin {
        child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

/// A finished run of the plugin.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    /// Asserts the exit code, showing the output when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    pub fn has_line(&self, line: &str) -> bool {
        self.stdout.lines().any(|l| l == line)
    }

    /// One `error:` line containing `error`, at most one hint line, no panic or backtrace,
    /// nothing on stdout, exit 1.
    pub fn expect_one_error(&self, error: &str) -> &Self {
        self.expect_code(1);
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert!(!lines.is_empty() && lines.len() <= 2, "stderr:\n{}", self.stderr);
        assert!(lines[0].starts_with("error: ") && lines[0].contains(error), "want {error:?} in:\n{}", self.stderr);
        assert!(!self.stderr.contains("panicked") && !self.stderr.contains("backtrace"), "{}", self.stderr);
        assert!(self.stdout.is_empty(), "stdout: {}", self.stdout);
        self
    }

    pub fn expect_line(&self, line: &str) -> &Self {
        assert!(self.has_line(line), "no line {line:?} in stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }
}

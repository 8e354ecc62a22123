//! Trust under hostile servers, side by side with kubectl: no credential goes to a server that
//! is not TLS (client-go's "only try to read the auth information if we are secure"), for any
//! source of credentials, and an exec plugin is not run for one; answers no kube-apiserver
//! gives (the harness's `testcluster hostile`) end with one `error:` line, in bounded time.
//! Over https the credentials are sent as before: e2e_connect and every e2e test with a token,
//! certificate or exec user show that.

mod support;

use std::path::PathBuf;

use support::fixtures::Scenario;
use support::hostile::{Hostile, Seen};
use support::{Cluster, Run, plugin_path, unique};

/// A folder for kubeconfigs and the exec plugin, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let dir = std::env::temp_dir().join(unique("dispatch-trust"));
        std::fs::create_dir_all(&dir).unwrap();
        // An exec plugin that leaves a mark when it runs, then gives a token.
        let plugin = dir.join("exec-marks");
        std::fs::write(
            &plugin,
            "#!/usr/bin/env bash\necho ran >>\"$MARK\"\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token\"}}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Dir(dir)
    }

    fn mark(&self) -> PathBuf {
        self.0.join("exec-ran")
    }

    fn kubeconfig(&self, name: &str, server: &str, user: &str) -> PathBuf {
        let path = self.0.join(format!("{name}.kubeconfig"));
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: x\n    user: x\nclusters:\n- name: x\n  cluster:\n    server: {server}\nusers:\n- name: x\n  user:\n{user}"
        );
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `kubectl ARGS` with the fresh plugin first on PATH, no kubeconfig or proxy from the
/// environment but `env`.
fn kubectl(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = std::process::Command::new("kubectl");
    cmd.args(args).env("PATH", plugin_path()).stdin(std::process::Stdio::null());
    for var in ["KUBECONFIG", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().expect("run kubectl"))
}

/// Runs `kubectl FLAGS get lease -A` and `kubectl dispatch FLAGS lease` against the server;
/// asserts that both asked it (through `server`'s log) and that neither sent a credential.
fn neither_sends_credentials(server: &Hostile, flags: &[&str], env: &[(&str, &str)], case: &str) {
    server.clear();
    let mut get = flags.to_vec();
    get.extend_from_slice(&["get", "lease", "-A"]);
    let k = kubectl(&get, env);
    let mut ours = vec!["dispatch"];
    ours.extend_from_slice(flags);
    ours.push("lease");
    let ours = kubectl(&ours, env);
    assert_ne!(k.code, 0, "{case}: kubectl worked against a server that answers 401:\n{}", k.stdout);
    ours.expect_one_error("");
    let seen = server.seen();
    let (plugin, theirs): (Vec<&Seen>, Vec<&Seen>) = seen.iter().partition(|s| s.by_plugin());
    assert!(!theirs.is_empty(), "{case}: kubectl never reached the server:\n{}", k.stderr);
    assert!(!plugin.is_empty(), "{case}: the plugin never reached the server:\n{}", ours.stderr);
    for s in &seen {
        for header in ["Authorization", "Proxy-Authorization"] {
            assert_eq!(
                s.header(header),
                None,
                "{case}: {} sent {header} on {} {}",
                if s.by_plugin() { "the plugin" } else { "kubectl" },
                s.method,
                s.uri
            );
        }
    }
}

#[test]
fn no_credential_goes_to_a_server_that_is_not_tls() {
    let server = Hostile::start("headers");
    let dir = Dir::new();
    let mark = dir.mark();
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, "file-token").unwrap();
    // Files that are there but hold no certificate: over https both would fail to parse them
    // (the control test below); over http neither reads them.
    let junk = dir.0.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let junk = junk.display();
    let users = [
        ("token", "    token: kubeconfig-token\n".to_string()),
        ("token-file", format!("    tokenFile: {}\n", token_file.display())),
        ("basic", "    username: admin\n    password: secret\n".to_string()),
        ("client-certificate", format!("    client-certificate: {junk}\n    client-key: {junk}\n")),
        (
            "exec",
            format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n      env:\n      - name: MARK\n        value: {}\n",
                dir.0.join("exec-marks").display(),
                mark.display()
            ),
        ),
        (
            "auth-provider",
            "    auth-provider:\n      name: oidc\n      config:\n        client-id: x\n        id-token: not-a-jwt\n        idp-issuer-url: https://127.0.0.1:1\n".into(),
        ),
    ];
    let http = server.url();
    let bare = server.addr.clone();
    for (name, user) in &users {
        for (shape, url) in [("http://", http.as_str()), ("host:port", bare.as_str())] {
            let kc = dir.kubeconfig(name, url, user);
            neither_sends_credentials(
                &server,
                &["--kubeconfig", kc.to_str().unwrap()],
                &[],
                &format!("{name}, {shape}"),
            );
        }
    }
    assert!(!mark.exists(), "an exec plugin was run for an http server");

    // --token and -s on the command line: with a scheme, and without (which is http).
    let empty = dir.0.join("empty.kubeconfig");
    std::fs::write(&empty, "apiVersion: v1\nkind: Config\n").unwrap();
    let empty = empty.to_str().unwrap();
    for url in [http.as_str(), bare.as_str()] {
        let flags = ["--kubeconfig", empty, "-s", url, "--token", "flag-token"];
        neither_sends_credentials(&server, &flags, &[], &format!("--token with -s {url}"));
        // the flag token over a kubeconfig's exec user: still nothing, and no exec run
        let kc = dir.kubeconfig("exec", url, &users[4].1);
        let flags = ["--kubeconfig", kc.to_str().unwrap(), "--token", "flag-token"];
        neither_sends_credentials(&server, &flags, &[], &format!("--token over exec, {url}"));
    }
    assert!(!mark.exists(), "an exec plugin was run for an http server");
}

#[test]
fn no_credential_crosses_an_http_proxy_to_a_plain_http_server() {
    // The hostile server as the HTTP_PROXY (it answers a CONNECT and serves the tunnel too,
    // logging both): the server's name is not loopback, so the environment's proxy applies.
    let proxy = Hostile::start("headers");
    let dir = Dir::new();
    let kc = dir.kubeconfig("via-proxy", "http://kube.dispatch.invalid:8080", "    token: kubeconfig-token\n");
    let env = [("HTTP_PROXY", proxy.url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    neither_sends_credentials(&proxy, &["--kubeconfig", kc.to_str().unwrap()], &env, "through HTTP_PROXY");
    let seen = proxy.seen();
    assert!(
        seen.iter().all(|s| s.host.starts_with("kube.dispatch.invalid")),
        "every request went through the proxy to the server: {seen:?}"
    );
}

#[test]
fn a_missing_certificate_file_is_refused_whatever_the_server() {
    // kubectl opens the files before it looks at the scheme: a configuration error over http
    // too, with the same words.
    let dir = Dir::new();
    let cert = "    client-certificate: /nonexistent/c.crt\n    client-key: /nonexistent/c.key\n";
    for server in ["http://127.0.0.1:1", "https://127.0.0.1:1"] {
        let kc = dir.kubeconfig("missing-cert", server, cert);
        let k = kubectl(&["--kubeconfig", kc.to_str().unwrap(), "get", "lease", "-A"], &[]);
        let ours = kubectl(&["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease"], &[]);
        let words = "unable to read client-cert /nonexistent/c.crt for x due to open /nonexistent/c.crt: ";
        assert!(k.code != 0 && k.stderr.contains(words), "kubectl, {server}:\n{}", k.stderr);
        ours.expect_one_error(words);
    }
}

#[test]
fn over_https_the_same_kubeconfig_shapes_do_send_their_credentials() {
    // The control for the tests above: the same users, with an https server, make both read
    // their credentials (the certificate files are missing, the exec plugin runs), so the
    // absence above is the http rule, not a user shape that sends nothing anyway.
    let dir = Dir::new();
    let mark = dir.mark();
    let junk = dir.0.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let cert = format!("    client-certificate: {0}\n    client-key: {0}\n", junk.display());
    let kc = dir.kubeconfig("cert-https", "https://127.0.0.1:1", &cert);
    let k = kubectl(&["--kubeconfig", kc.to_str().unwrap(), "get", "lease", "-A"], &[]);
    let ours = kubectl(&["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease"], &[]);
    assert!(k.stderr.contains("PEM"), "kubectl read the certificate over https:\n{}", k.stderr);
    ours.expect_one_error("identity PEM is missing a private key");
    let exec = format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n      env:\n      - name: MARK\n        value: {}\n",
        dir.0.join("exec-marks").display(),
        mark.display()
    );
    let kc = dir.kubeconfig("exec-https", "https://127.0.0.1:1", &exec);
    let ours = kubectl(&["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease"], &[]);
    assert_ne!(ours.code, 0);
    assert!(mark.exists(), "the exec plugin ran for an https server:\n{}", ours.stderr);
}

/// No panic, no abort (134): whatever the code, the plugin ended on its own terms.
fn no_crash(run: &Run, what: &str) {
    assert!(
        run.code != 134 && run.code != 101 && !run.stderr.contains("panicked") && !run.stderr.contains("overflow"),
        "{what} crashed ({}):\n{}",
        run.code,
        run.stderr
    );
}

#[test]
fn a_lease_renewed_at_the_end_of_year_9999_is_judged_not_a_crash() {
    let c = Cluster::shared();
    let s = Scenario::new("y9999");
    c.apply(&s.healthy_yaml());
    // The last instant a MicroTime can hold, stored by the real apiserver.
    let far = format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {}\n  namespace: {}\nspec:\n  holderIdentity: dispatch-admission-7d9f_1\n  leaseDurationSeconds: 15\n  acquireTime: \"9999-12-31T23:59:00.000000Z\"\n  renewTime: \"9999-12-31T23:59:59.999999Z\"\n  leaseTransitions: 2\n",
        s.lease_name, s.lease_ns
    );
    c.apply(&far);
    let stored =
        c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "jsonpath={.spec.renewTime}"], None);
    assert_eq!(stored, "9999-12-31T23:59:59.999999Z");

    // The adapter's rule passes a renewTime in the future (a negative age); what it says is
    // clock skew. Every mode judges it and ends as it always does.
    let lease = c.dispatch(&s.args("lease", &["-o", "wide"]));
    no_crash(&lease, "lease");
    lease.expect_code(0);
    assert!(lease.stdout.contains("fresh"), "{}", lease.stdout);
    let json = c.dispatch(&s.args("lease", &["-o", "json"]));
    no_crash(&json, "lease -o json");
    json.expect_code(0);
    let doc = json.json();
    // Past the last instant a jiff timestamp holds, read as that instant: the same judgement.
    assert_eq!(doc["lease"]["renewTime"], "9999-12-30T22:00:00.999999Z", "{}", json.stdout);
    assert_eq!(doc["lease"]["status"], "fresh");
    let warning = doc["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.contains("in the future: the holder's clock is ahead"), "{}", json.stdout);

    let gate = c.dispatch(&s.args("gate", &[]));
    no_crash(&gate, "gate");
    gate.expect_code(0);
    assert!(
        gate.stderr.contains("the Lease's renewTime is")
            && gate.stderr.contains("in the future: the holder's clock is ahead"),
        "gate warns of the skew:\n{}",
        gate.stderr
    );

    // A plain watch ends at --timeout; waiting for stale reaches --timeout first (exit 5):
    // the deadline lies past the last instant a timestamp holds, so it is never reached.
    let watch = c.dispatch(&s.args("lease", &["--watch", "--timeout", "3s"]));
    no_crash(&watch, "lease --watch");
    watch.expect_code(0);
    let until = c.dispatch(&s.args("lease", &["--watch", "--until", "stale", "--timeout", "3s"]));
    no_crash(&until, "lease --watch --until stale");
    until.expect_code(5);
    let gate_watch = c.dispatch(&s.args("gate", &["--watch", "--timeout", "3s"]));
    no_crash(&gate_watch, "gate --watch");
    gate_watch.expect_code(0);
}

#[test]
fn absurd_durations_are_usage_errors_beside_kubectls_refusal() {
    let c = Cluster::shared();
    // kubectl: "Invalid timeout value" (its exit 1); the plugin: a usage error (2), one line.
    let k = c.kubectl(&["--request-timeout=10000000000000000000", "get", "ns"], None);
    assert_eq!(k.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&k.stderr).contains("Invalid timeout value"));
    for args in [
        vec!["--request-timeout", "10000000000000000000", "lease"],
        vec!["--request-timeout=3000000h", "gate"],
        vec!["lease", "--watch", "--timeout", "99999999999999999999"],
        vec!["gate", "--wait", "--timeout", "9223372037"],
    ] {
        let run = c.dispatch(&args);
        no_crash(&run, &format!("{args:?}"));
        run.expect_code(2);
        let lines: Vec<&str> = run.stderr.lines().collect();
        let verb = args.iter().find(|a| ["gate", "lease"].contains(a)).unwrap();
        assert!(
            lines.len() == 2
                && lines[0].starts_with("error: invalid --")
                && lines[0].contains("longer than 2562047h47m16s, the longest timeout kubectl takes")
                && lines[1] == format!("See 'kubectl dispatch {} --help' for usage.", verb),
            "{args:?}:\n{}",
            run.stderr
        );
    }
    // The longest kubectl takes is taken.
    c.dispatch(&["--request-timeout", "2562047h", "lease", "--lease", "dispatch-system/none"]).expect_code(3);
}

/// Runs `kubectl dispatch ARGS` with its stdout a pipe whose reader is already gone, so every
/// write fails as `| head -1` makes it fail once head has its line.
fn with_closed_stdout(c: &Cluster, args: &[&str]) -> std::process::ExitStatus {
    let mut full = vec!["dispatch"];
    full.extend_from_slice(args);
    let mut child = c
        .command("kubectl", &full)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start kubectl dispatch");
    drop(child.stdout.take());
    child.wait().expect("wait")
}

#[test]
fn a_closed_stdout_changes_no_exit_code_whatever_was_written() {
    use std::os::unix::process::ExitStatusExt;
    let c = Cluster::shared();
    let s = Scenario::new("pipe");
    c.apply(&s.healthy_yaml());
    // The Lease stale (the verdict no, 3), and 40 Workloads waiting at dispatch's check: the
    // JSON is far more than the 8 KiB written before the first write reaches the pipe.
    c.apply(&support::fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl_1"), Some(600), Some(15)));
    let workloads: String = (0..40)
        .map(|i| {
            support::fixtures::workload(
                &s.ns,
                &format!("w{i}"),
                &s.lq,
                Some(&s.cq),
                &[(&s.check, "Pending", "waiting", 30)],
            )
        })
        .collect();
    c.apply(&workloads);
    let mut large = s.args("gate", &["-A", "-o", "json"]);
    let full = c.dispatch(&large);
    full.expect_code(3);
    assert!(full.stdout.len() > 16 * 1024, "the output is large: {} bytes", full.stdout.len());
    let small = c.dispatch(&s.args("gate", &[]));
    small.expect_code(3);
    assert!(small.stdout.len() < 1024, "{}", small.stdout);
    for (what, args) in [("large", &mut large), ("small", &mut s.args("gate", &[]))] {
        let status = with_closed_stdout(c, args);
        assert_eq!(status.code(), Some(3), "{what} output into a closed pipe: {status:?}");
    }
    // In a shell pipeline, as the README shows it.
    let line = format!("set -o pipefail; kubectl dispatch {} | head -1 >/dev/null", large.join(" "));
    let piped = c.command("bash", &["-c", &line]).output().unwrap();
    assert_eq!(piped.status.code(), Some(3), "{}", String::from_utf8_lossy(&piped.stderr));

    // kubectl beside it: Go dies of SIGPIPE on a closed stdout once it writes (a shell says
    // 141), and exits 0 when its output fits in the pipe before the reader goes: its code
    // depends on the size. The plugin's does not.
    let mut kubectl = c
        .command("kubectl", &["get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(kubectl.stdout.take());
    let status = kubectl.wait().unwrap();
    assert_eq!(status.signal(), Some(13), "kubectl on a closed stdout: {status:?}");

    // A live mode is told and ends, as Ctrl-C ends it (a watch: 0).
    let status = with_closed_stdout(c, &s.args("gate", &["--watch", "-A"]));
    assert_eq!(status.code(), Some(0), "gate --watch into a closed pipe: {status:?}");
}

/// `kubectl ARGS` (no kubeconfig), ended by force if it is still running after `limit`: a
/// generous watchdog, so that a hang fails with its reason rather than holding the suite.
fn within(args: &[&str], limit: std::time::Duration) -> Run {
    within_sampled(args, limit, &mut |_| {})
}

/// [`within`], calling `sample` with kubectl's process id every 100 ms while it runs.
fn within_sampled(args: &[&str], limit: std::time::Duration, sample: &mut dyn FnMut(u32)) -> Run {
    support::hostile::kubectl_watched(args, &[], limit, std::time::Duration::from_millis(100), sample)
}

const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(120);

#[test]
fn a_crafted_status_message_gives_one_error_line() {
    let server = Hostile::start("status-escape");
    let url = server.url();
    for verb in ["lease", "gate"] {
        let ours = within(&["dispatch", "-s", &url, verb], WATCHDOG);
        ours.expect_one_error("500");
        assert!(!ours.stderr.contains("forged second line"), "the message's second line was printed:\n{}", ours.stderr);
        // The escape sequences themselves are the output boundary's to neutralize (its test
        // feeds them through every verb); here: one line, exit 1.
    }
    let k = within(&["-s", &url, "get", "lease", "-n", "dispatch-system", "x"], WATCHDOG);
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
}

#[test]
fn an_absurd_retry_after_is_not_waited_on() {
    // 503 with Retry-After: 10000000000000000000 (more than Go's longest duration, which
    // client-go cannot parse either): the answer is final, at once, with or without a timeout.
    let server = Hostile::start("retry-after");
    let url = server.url();
    for flags in [vec![], vec!["--request-timeout", "5s"]] {
        server.clear();
        let mut args = vec!["dispatch", "-s", &url];
        args.extend(flags.iter().copied());
        args.push("lease");
        let ours = within(&args, WATCHDOG);
        ours.expect_one_error("the server is currently unable to handle the request (503)");
        let asked = server.seen().iter().filter(|s| s.by_plugin()).count();
        assert_eq!(asked, 1, "the plugin asked again after an absurd Retry-After ({flags:?})");
    }
    let k = within(&["-s", &url, "get", "lease", "-n", "dispatch-system", "x"], WATCHDOG);
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
    assert!(k.stderr.contains("ServiceUnavailable"), "{}", k.stderr);
}

#[test]
fn a_body_that_never_ends_or_drips_is_bounded_by_the_request_timeout() {
    for mode in ["endless", "drip"] {
        let server = Hostile::start(mode);
        let url = server.url();
        for verb in ["lease", "gate"] {
            let ours = within(&["dispatch", "-s", &url, "--request-timeout", "3s", verb], WATCHDOG);
            ours.expect_one_error(&format!("no answer from the API server at {url} within 3s"));
        }
        let k =
            within(&["-s", &url, "--request-timeout", "3s", "get", "lease", "-n", "dispatch-system", "x"], WATCHDOG);
        assert_eq!(k.code, 1, "kubectl, {mode}:\n{}", k.stderr);
        assert!(k.stderr.contains("Client.Timeout") || k.stderr.contains("context deadline exceeded"), "{}", k.stderr);
    }
}

/// The peak resident memory (VmHWM, in KiB) of `pid` and its descendants now: kubectl runs a
/// plugin by exec, in its own process, so the plugin is `pid` itself (or a child of it).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let own = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children.split_whitespace().filter_map(|c| c.parse().ok()).map(peak_kib).fold(own, u64::max)
}

#[test]
fn a_watch_event_line_that_never_ends_is_an_outage_in_bounded_memory() {
    // The Lease is listed as a real server lists it, then every watch streams one event line
    // that never ends. kube's own watch read it without limit (7 GB in 15 s, then exit 0).
    let server = Hostile::start("endless-watch");
    let url = server.url();
    let mut peak = 0;
    let mut sample = |pid| peak = peak.max(peak_kib(pid));
    let ours = within_sampled(&["dispatch", "-s", &url, "lease", "--watch", "--timeout", "15s"], WATCHDOG, &mut sample);
    eprintln!("peak RSS of the plugin: {} KiB ({} MiB)", peak, peak / 1024);
    let all = format!("exit {}\nstdout:\n{}\nstderr:\n{}", ours.code, ours.stdout, ours.stderr);
    assert_eq!(ours.code, 1, "{all}");
    let errors: Vec<&str> = ours.stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{all}");
    assert!(errors[0].contains("--timeout 15s came while the connection was down"), "{all}");
    assert!(errors[0].contains("16 MiB limit") && errors[0].contains("/leases"), "{all}");
    let after: Vec<&str> = ours.stderr.lines().skip_while(|l| *l != errors[0]).skip(1).collect();
    assert!(after.len() <= 1, "only the error's hint comes after it: {all}");
    assert!(!ours.stderr.contains("panicked"), "{all}");
    // The list's Lease is the one row: nothing the broken watch sent became a fresh row.
    let rows: Vec<&str> = ours.stdout.lines().filter(|l| l.contains("hostile_0001")).collect();
    assert_eq!(rows.len(), 1, "{all}");
    assert!(ours.stdout.lines().last() == Some(rows[0]), "{all}");
    assert!(server.seen().iter().any(|s| s.uri.contains("watch=true")), "the watch was asked: {all}");
    assert!(peak > 0, "no memory figure was read from /proc");
    assert!(peak < 256 * 1024, "peak RSS {peak} KiB: {all}");
}

#[test]
fn a_watch_that_closes_at_once_is_not_asked_again_in_a_tight_loop() {
    // Every watch is answered 200 and closed at once. Without the backoff the plugin would
    // ask thousands of times in 10 s; with it (0.5 s doubling to 2 s) a handful.
    let server = Hostile::start("closing-watch");
    let url = server.url();
    let ours = within(&["dispatch", "-s", &url, "lease", "--watch", "--timeout", "10s"], WATCHDOG);
    let all = format!("exit {}\nstdout:\n{}\nstderr:\n{}", ours.code, ours.stdout, ours.stderr);
    assert!(!ours.stderr.contains("panicked"), "{all}");
    let watches = server.seen().iter().filter(|s| s.uri.contains("watch=true")).count();
    eprintln!("watch requests in 10 s: {watches}");
    assert!(watches >= 2, "the watch was asked again: {watches}, {all}");
    // Two streams (dispatch's Lease and Kueue's), each asking at 0, 0.5, 1.5, 3.5, 5.5, 7.5
    // and 9.5 s: 14 at most (a slow machine asks fewer, never more); no backoff: thousands.
    assert!(watches <= 20, "{watches} watch requests in 10 s: {all}");
}

#[test]
fn a_list_answered_410_for_ever_is_not_asked_again_in_a_tight_loop() {
    // Every list of Leases and every watch is answered 410 Gone (Expired, "too old resource
    // version"), as a server whose etcd compacted the revision answers: the plugin relists for
    // ever. Without the backoff after a 410 it lists thousands of times in 10 s; with it a
    // handful.
    let server = Hostile::start("gone-list");
    let url = server.url();
    let ours = within(&["dispatch", "-s", &url, "lease", "--watch", "--timeout", "10s"], WATCHDOG);
    let all = format!("exit {}\nstdout:\n{}\nstderr:\n{}", ours.code, ours.stdout, ours.stderr);
    assert!(!ours.stderr.contains("panicked"), "{all}");
    let lists = server.seen().iter().filter(|s| s.uri.contains("/leases?") && !s.uri.contains("watch=true")).count();
    eprintln!("Lease list requests in 10 s: {lists}");
    assert!(lists >= 2, "the list was asked again after the 410: {lists}, {all}");
    // One stream (Kueue's manager's Lease is followed only once dispatch's was answered),
    // listing at 0, 0.5, 1.5, 3.5, 5.5, 7.5 and 9.5 s: 7 at most (a slow machine asks fewer,
    // never more); no backoff: thousands.
    assert!(lists <= 10, "{lists} list requests in 10 s: {all}");
    // The 410 is said once, however many relists; no list was ever answered, so the timeout
    // came in an outage: one error line and exit 1.
    assert_eq!(ours.stderr.matches("410 Gone); relisting").count(), 1, "{all}");
    assert_eq!(ours.code, 1, "{all}");
    let errors: Vec<&str> = ours.stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors, ["error: --timeout 10s came before the API server answered"], "{all}");
    assert!(ours.stdout.is_empty(), "no row without an answer: {all}");
}

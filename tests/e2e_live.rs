//! The live modes meet answers that retrying cannot change, on the real test cluster, beside
//! `kubectl get -w` where kubectl has a behaviour: a bad token (401), a user without RBAC
//! (403), a Kueue CRD deleted under `gate --watch` (404), a token revoked while watching (the
//! credential fetched anew once, from an exec plugin or a kubeconfig `tokenFile`, then the end), and `--timeout` while the API server is down;
//! and a clock 40 s fast (under libfaketime), which every verb says once. Where a run without
//! `--timeout` is the case, `--timeout 2m` is added so that a regression fails (wrong code)
//! rather than hangs; the runs end long before it.

mod support;

use std::path::Path;
use std::time::Duration;

use support::fixtures::Scenario;
use support::shapes::{LEASE, LEASE_NS, Shapes};
use support::watch::{Watch, is_event};
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);

/// The server's words after kubectl's `Error from server (Forbidden): `.
fn kubectl_forbidden(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("Error from server (Forbidden): "))
        .unwrap_or_else(|| panic!("kubectl did not say Forbidden (exit {:?}):\n{stderr}", out.status.code()));
    line.trim_start_matches("Error from server (Forbidden): ").to_string()
}

/// One `error:` line, then at most one hint; nothing on stdout; the given exit code.
fn expect_error(run: &Run, code: i32, line: &str) {
    run.expect_code(code);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "stderr:\n{}", run.stderr);
    assert_eq!(lines[0], format!("error: {line}"), "stderr:\n{}", run.stderr);
    assert!(run.stdout.is_empty(), "stdout:\n{}", run.stdout);
}

#[test]
fn a_bad_token_ends_the_live_modes_at_once_as_kubectl_get_w_does() {
    let c = Cluster::shared();
    let s = Scenario::new("lv-401");
    c.apply(&s.healthy_yaml());
    let bad = ["--context", "token", "--token", "not-a-token"];
    let kubectl = c.kubectl(&[&bad[..], &["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w"]].concat(), None);
    assert_eq!(kubectl.status.code(), Some(1), "{kubectl:?}");
    assert!(String::from_utf8_lossy(&kubectl.stderr).contains("Unauthorized"), "{kubectl:?}");
    let refused = format!("the API server at {} rejected the credentials (401 Unauthorized)", c.apiserver_url());
    for live in [
        &["lease", "--watch", "--until", "stale", "--timeout", "2m"][..],
        &["lease", "--watch", "--timeout", "5s"],
        &["lease", "--watch", "-o", "json", "--timeout", "2m"],
    ] {
        let run = c.dispatch(&[&bad[..], live, &["--lease", &s.lease]].concat());
        expect_error(&run, 1, &refused);
    }
    // The one-shot says the same, with the same code.
    expect_error(&c.dispatch(&[&bad[..], &["lease", "--lease", &s.lease]].concat()), 1, &refused);
    for live in [&["--watch", "--timeout", "2m"][..], &["--wait", "--timeout", "5s"]] {
        expect_error(&c.dispatch(&[&bad[..], &s.args("gate", live)].concat()), 1, &refused);
    }
}

#[test]
fn without_rbac_the_live_modes_end_with_the_servers_words_and_4() {
    let c = Cluster::shared();
    let s = Scenario::new("lv-403");
    c.apply(&s.healthy_yaml());
    // nobody may read nothing, no-lease everything but Leases: both are refused the Lease.
    for user in ["nobody", "no-lease"] {
        let kubectl = c.kubectl(&["--context", user, "get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w"], None);
        assert_eq!(kubectl.status.code(), Some(1), "{kubectl:?}");
        let words = kubectl_forbidden(&kubectl);
        for live in [
            &["--watch", "--timeout", "2m"][..],
            &["--watch", "--until", "stale", "--timeout", "2m"],
            &["--watch", "--until", "fresh", "--timeout", "1m"],
        ] {
            let run = c.dispatch(&[&["--context", user], &s.args("lease", live)[..]].concat());
            expect_error(&run, 4, &words);
            assert_eq!(
                run.stderr.lines().nth(1),
                Some(format!(
                    "missing RBAC: get, list and watch leases.coordination.k8s.io {:?} in namespace {}",
                    s.lease_name, s.lease_ns
                ))
                .as_deref(),
                "{}",
                run.stderr
            );
        }
    }
    // The gate: ClusterQueues and AdmissionChecks allowed, the Lease not. The one-shot answers
    // unknown (4); the live modes end with the same code, at once.
    c.dispatch(&[&["--context", "no-lease"], &s.args("gate", &[])[..]].concat()).expect_code(4);
    let lease_words = {
        let k = c.kubectl(&["--context", "no-lease", "get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w"], None);
        kubectl_forbidden(&k)
    };
    for live in [&["--watch", "--timeout", "2m"][..], &["--wait", "--timeout", "1m"]] {
        let run = c.dispatch(&[&["--context", "no-lease"], &s.args("gate", live)[..]].concat());
        expect_error(&run, 4, &lease_words);
    }
    // Get alone is not the end: lease-get is polled, as before, until --timeout.
    let polled = c.dispatch(&[
        "--context",
        "lease-get",
        "lease",
        "--watch",
        "--until",
        "holder-change",
        "--timeout",
        "4s",
        "-o",
        "json",
        "--lease",
        &format!("{}/{}", s.lease_ns, s.lease_name),
    ]);
    polled.expect_code(5);
    assert!(polled.stderr.starts_with(&format!("polling Lease {} with get every 3s", s.lease)), "{}", polled.stderr);
    // Its one error line is the timeout's, as kubectl wait says it (docs/usage.md): no read failed.
    let errors: Vec<&str> = polled.stderr.lines().filter(|l| l.contains("error:")).collect();
    assert!(errors.len() == 1 && errors[0].starts_with("error: timed out waiting for Lease"), "{}", polled.stderr);
}

/// A cluster of its own, for a test that kills its API server or deletes a CRD.
fn own_cluster() -> &'static Cluster {
    Box::leak(Box::new(Cluster::start("v0.17.0")))
}

#[test]
fn a_kueue_crd_deleted_under_gate_watch_ends_it_with_the_one_shot_error() {
    let c = own_cluster();
    let s = Scenario::new("lv-404");
    c.apply(&s.healthy_yaml());
    let mut w = Watch::start(c, &s.args("gate", &["--watch"]));
    w.wait_for("the first verdict", 30 * S, |l| l.starts_with("ReadmissionGate: yes"));
    let mut kubectl =
        Watch::spawn(c.command("kubectl", &["get", "admissionchecks.kueue.x-k8s.io", "-w", "--no-headers"]));
    kubectl.wait_for("kubectl's row", 30 * S, |l| l.starts_with(&s.check));
    c.kubectl_ok(&["delete", "crd", "admissionchecks.kueue.x-k8s.io"], None);
    let code = w.finish(60 * S);
    let error = "Kueue's AdmissionChecks API is not served (/apis/kueue.x-k8s.io/v1beta2/admissionchecks)";
    assert_eq!(code, 1, "stdout:\n{}\nstderr:\n{}", w.seen.join("\n"), w.stderr.join("\n"));
    assert_eq!(
        w.stderr.iter().filter(|l| l.starts_with("error: ")).collect::<Vec<_>>(),
        [&format!("error: {error}")],
        "{:#?}",
        w.stderr
    );
    // kubectl's watch ends too, silently and with 0; the plugin says why, with the one-shot
    // gate's error and code.
    assert_eq!(kubectl.finish(60 * S), 0, "kubectl get -w after the CRD was deleted: {:?}", kubectl.stderr);
    assert!(kubectl.stderr.is_empty(), "{:?}", kubectl.stderr);
    expect_error(&c.dispatch(&s.args("gate", &[])), 1, error);
    c.stop();
}

/// Replaces the API server's static token file (read at its start only): the old token is
/// revoked, `token` is token-user's from the next start on.
fn revoke_and_grant(c: &Cluster, token: &str) {
    std::fs::write(c.state_dir.join("token-auth.csv"), format!("{token},token-user,token-user,\"viewer\"\n")).unwrap();
}

fn runs(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn timeout_while_the_api_server_is_down_is_1_and_a_revoked_token_is_fetched_anew_once() {
    let c = own_cluster();
    let s = Scenario::new("lv-down");
    c.apply(&s.healthy_yaml());

    // --timeout while the API server is down: not a result (it was 0, or the last state's code).
    let mut lease = Watch::start(c, &s.args("lease", &["--watch", "--timeout", "50s", "-o", "json"]));
    let mut until =
        Watch::start(c, &s.args("lease", &["--watch", "--until", "holder-change", "--timeout", "50s", "-o", "json"]));
    let mut gate = Watch::start(c, &s.args("gate", &["--watch", "--timeout", "50s"]));
    // And one without --timeout: a restart is no refusal (the CRDs are served again a moment
    // after the API server answers), so it follows its six streams through it.
    let mut survivor = Watch::start(c, &s.args("gate", &["--watch"]));
    survivor.wait_for("the first verdict", 30 * S, |l| l.starts_with("ReadmissionGate: yes"));
    lease.wait_for("the first row", 30 * S, is_event("observed"));
    until.wait_for("the first row", 30 * S, is_event("observed"));
    gate.wait_for("the first verdict", 30 * S, |l| l.starts_with("ReadmissionGate: yes"));
    c.kill_apiserver();
    for w in [&mut lease, &mut until, &mut gate] {
        w.wait_for_stderr_prefix("watch interrupted: ", 30 * S);
        assert_eq!(w.finish(90 * S), 1, "stdout:\n{}\nstderr:\n{}", w.seen.join("\n"), w.stderr.join("\n"));
        let errors: Vec<&String> = w.stderr.iter().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(errors.len(), 1, "{:#?}", w.stderr);
        let prefix = "error: --timeout 50s came while the connection was down: the API server ";
        assert!(errors[0].starts_with(prefix), "{:#?}", w.stderr);
    }
    c.start_apiserver();
    survivor.wait_for_stderr("watch resumed", 60 * S);
    // Still following after the restart: the Lease deleted now turns its verdict (a wait on
    // what it prints, not a fixed sleep).
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    survivor.wait_for("the verdict after the restart", 60 * S, |l| {
        l.starts_with("ReadmissionGate: no") && l.contains("does not exist")
    });
    let (code, _, stderr) = survivor.stop();
    assert_eq!(code, 0, "still following, then ended by SIGTERM: {stderr:#?}");
    assert!(!stderr.iter().any(|l| l.starts_with("error: ")), "{stderr:#?}");

    // A token revoked while watching: fetched anew from the exec plugin once, and the watch
    // goes on; revoked again within a minute of that refresh: the end at once, exit 1, the
    // plugin not run again (it was retried for ever, the plugin run at every retry; and a
    // success in between does not reset the window, issue 34).
    let shapes = Shapes::new(c);
    let token_file = shapes.dir.join("current-token");
    let counted = shapes.dir.join("runs");
    std::fs::copy(&c.env["DISPATCH_TEST_TOKEN_FILE"], &token_file).unwrap();
    let env = [("TOKEN_FILE", token_file.to_str().unwrap()), ("RUNS", counted.to_str().unwrap())];
    let user =
        shapes.exec_user("exec-token", "client.authentication.k8s.io/v1", "      interactiveMode: Never\n", &env);
    let kc = shapes.kubeconfig("revoked", &shapes.cluster(), &user);
    let lease_ref = format!("{LEASE_NS}/{LEASE}");
    let kc_arg = kc.to_str().unwrap();
    let mut w =
        Watch::spawn(shapes.command(
            &["dispatch", "--kubeconfig", kc_arg, "lease", "--watch", "-o", "json", "--lease", &lease_ref],
            &[],
        ));
    w.wait_for("the first row", 30 * S, is_event("observed"));
    assert_eq!(runs(&counted), 1);
    c.kill_apiserver();
    w.wait_for_stderr_prefix("watch interrupted: ", 30 * S);
    revoke_and_grant(c, "second-token-of-token-user");
    std::fs::write(&token_file, "second-token-of-token-user").unwrap();
    c.start_apiserver();
    w.wait_for_stderr("watch resumed", 60 * S);
    assert_eq!(runs(&counted), 2, "the plugin ran once more, for the revoked token; stderr {:#?}", w.stderr);
    c.kill_apiserver();
    revoke_and_grant(c, "third-token-of-token-user");
    c.start_apiserver();
    assert_eq!(w.finish(60 * S), 1, "stderr {:#?}", w.stderr);
    let refused = format!("error: the API server at {} rejected the credentials (401 Unauthorized)", c.apiserver_url());
    assert_eq!(w.stderr.iter().filter(|l| l.starts_with("error: ")).collect::<Vec<_>>(), [&refused], "{:#?}", w.stderr);
    assert_eq!(runs(&counted), 2, "no fetch for a second refusal within the window, the end: {:#?}", w.stderr);
    // kubectl, with the same kubeconfig and the plugin's revoked token, fails at once too.
    let kubectl = shapes.kubectl(&["--kubeconfig", kc_arg, "get", "lease", "-n", LEASE_NS, LEASE, "-w"], &env);
    assert_eq!(kubectl.code, 1, "{kubectl:?}");

    // The same with a kubeconfig `tokenFile` (as client-go reads it: trimmed, so the newline
    // is no part of the token): revoked and rotated in the file while watching, the 401 reads
    // the file again and the watch goes on; revoked again with the file unchanged, one more
    // read, then the end, exit 1. kubectl reads the rotated file, and fails on the revoked one.
    let file = shapes.dir.join("token-file");
    std::fs::write(&file, "third-token-of-token-user\n").unwrap();
    let kc = shapes.kubeconfig("token-file", &shapes.cluster(), &format!("    tokenFile: {}\n", file.display()));
    let kc_arg = kc.to_str().unwrap();
    let get = ["--kubeconfig", kc_arg, "get", "lease", "-n", LEASE_NS, LEASE];
    let kubectl = shapes.kubectl(&get, &[]);
    assert_eq!(kubectl.code, 0, "{kubectl:?}");
    let mut w =
        Watch::spawn(shapes.command(
            &["dispatch", "--kubeconfig", kc_arg, "lease", "--watch", "-o", "json", "--lease", &lease_ref],
            &[],
        ));
    w.wait_for("the first row", 30 * S, is_event("observed"));
    c.kill_apiserver();
    w.wait_for_stderr_prefix("watch interrupted: ", 30 * S);
    revoke_and_grant(c, "fourth-token-of-token-user");
    std::fs::write(&file, "fourth-token-of-token-user").unwrap();
    c.start_apiserver();
    w.wait_for_stderr("watch resumed", 60 * S);
    let kubectl = shapes.kubectl(&get, &[]);
    assert_eq!(kubectl.code, 0, "kubectl reads the rotated file: {kubectl:?}");
    c.kill_apiserver();
    revoke_and_grant(c, "fifth-token-of-token-user");
    c.start_apiserver();
    assert_eq!(w.finish(60 * S), 1, "stderr {:#?}", w.stderr);
    assert_eq!(w.stderr.iter().filter(|l| l.starts_with("error: ")).collect::<Vec<_>>(), [&refused], "{:#?}", w.stderr);
    let kubectl = shapes.kubectl(&[&get[..], &["-w"]].concat(), &[]);
    assert_eq!(kubectl.code, 1, "{kubectl:?}");
    assert!(kubectl.stderr.contains("Unauthorized"), "{kubectl:?}");
    c.stop();
}

/// `kubectl dispatch ARGS` with this machine's clock 40 s fast for the plugin alone: libfaketime
/// (`faketime`, the Debian package) moves the clock of every program that reads it through
/// libc; kubectl, a Go program, reads it without libc and keeps the true time, so kubectl and
/// the API server agree and only the plugin is off. Monotonic time is left alone, so timers
/// and `--timeout` run as usual.
fn ahead(c: &Cluster, args: &[&str]) -> std::process::Command {
    let found = std::process::Command::new("faketime").arg("--help").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "faketime is required for the clock-skew tests: apt-get install faketime"
    );
    let mut full = vec!["-f", "+40s", "kubectl", "dispatch"];
    full.extend_from_slice(args);
    let mut cmd = c.command("faketime", &full);
    cmd.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    cmd
}

fn skew_warnings(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("Warning: this machine's clock is about ")).collect()
}

/// The warning, for 40 s ahead: the header has one-second resolution, so 39 to 41 s.
fn expect_skew_warning(line: &str) {
    let rest = line.trim_start_matches("Warning: this machine's clock is about ");
    let (secs, tail) = rest.split_once("s ").unwrap_or_else(|| panic!("{line}"));
    assert!(["39", "40", "41"].contains(&secs), "{line}");
    assert_eq!(tail, "ahead of the API server's; Lease ages are measured with this machine's clock", "{line}");
}

#[test]
fn a_clock_40s_fast_is_said_by_every_verb_once() {
    let c = Cluster::shared();
    let s = Scenario::new("lv-skew");
    c.apply(&s.healthy_yaml());
    // The same Lease with the true clock: fresh, and no warning.
    let honest = c.dispatch(&s.args("lease", &[]));
    honest.expect_code(0);
    assert!(skew_warnings(&honest.stderr).is_empty(), "{}", honest.stderr);
    // 40 s fast, a live 15 s Lease (renewed 2 s ago, limit 30 s) reads stale: said, once.
    let run = |args: &[&str]| Run::from(ahead(c, args).output().expect("run faketime"));
    for (args, code) in [
        (s.args("lease", &[]), 3),
        (s.args("lease", &["-o", "json"]), 3),
        (s.args("gate", &[]), 3),
        (s.args("lease", &["--watch", "--until", "stale", "--timeout", "1m", "-o", "json"]), 0),
        (s.args("lease", &["--watch", "--timeout", "5s"]), 0),
        (s.args("gate", &["--wait", "--timeout", "5s"]), 3),
        (s.args("gate", &["--watch", "--timeout", "5s"]), 0),
    ] {
        let r = run(&args);
        r.expect_code(code);
        let warnings = skew_warnings(&r.stderr);
        assert_eq!(warnings.len(), 1, "{args:?}: once\n{}", r.stderr);
        expect_skew_warning(warnings[0]);
    }
    // Polled every 3 s (get only), each answer compared: still said once.
    let lease = format!("{}/{}", s.lease_ns, s.lease_name);
    let polled =
        run(&["--context", "lease-get", "lease", "--watch", "--timeout", "8s", "-o", "json", "--lease", &lease]);
    polled.expect_code(0);
    assert_eq!(skew_warnings(&polled.stderr).len(), 1, "{}", polled.stderr);
}

#[test]
fn an_exec_plugin_that_fails_after_a_401_ends_the_watch_with_one_error_as_kubectl_fails() {
    // Issue 26: the plugin's failure came back as a transport error and was retried every 2 s
    // for ever. A ServiceAccount token from the exec plugin, the ServiceAccount deleted (its
    // token then gets 401 once kube-apiserver's ~10 s token cache has passed), the plugin made
    // to fail, the connection cut: the reconnect's 401 fetches the credential anew, the plugin
    // fails, and the watch ends with the plugin's error, exit 1.
    let c = Cluster::shared();
    let shapes = Shapes::new(c);
    let sa = "lv-exec-later";
    c.kubectl_ok(&["create", "serviceaccount", sa, "-n", LEASE_NS], None);
    let binding = format!("--serviceaccount={LEASE_NS}:{sa}");
    c.kubectl_ok(&["create", "clusterrolebinding", sa, "--clusterrole=cluster-admin", &binding], None);
    let token = c.kubectl_ok(&["create", "token", sa, "-n", LEASE_NS], None);
    let token_file = shapes.dir.join("sa-token");
    std::fs::write(&token_file, token.trim()).unwrap();
    let user = shapes.exec_user(
        "exec-token",
        "client.authentication.k8s.io/v1",
        "      interactiveMode: Never\n",
        &[("TOKEN_FILE", token_file.to_str().unwrap())],
    );
    let port = c.apiserver_url().trim_start_matches("https://").to_string();
    let cutter = support::forward::Cutter::start(&port);
    let cluster = format!("    server: {}\n    certificate-authority: {}\n", cutter.url(), shapes.path("pki/ca.crt"));
    let kc = shapes.kubeconfig("exec-later", &cluster, &user);
    let kc_arg = kc.to_str().unwrap();
    let lease_ref = format!("{LEASE_NS}/{LEASE}");
    let watch = ["dispatch", "--kubeconfig", kc_arg, "lease", "--watch", "--timeout", "2m", "-o", "json", "--lease"];
    let mut w = Watch::spawn(shapes.command(&[&watch[..], &[lease_ref.as_str()]].concat(), &[]));
    w.wait_for("the first row", 30 * S, is_event("observed"));
    // From now on the plugin fails, as a login that expired does.
    std::fs::copy(shapes.dir.join("exec-fail"), shapes.dir.join("exec-token")).unwrap();
    c.kubectl_ok(&["delete", "serviceaccount", sa, "-n", LEASE_NS], None);
    c.kubectl_ok(&["delete", "clusterrolebinding", sa], None);
    // Until the API server refuses the deleted account's token (it caches a token's review for
    // a few seconds): a wait on that, not a fixed sleep.
    let direct = shapes.kubeconfig("sa-direct", &shapes.cluster(), &format!("    token: {}\n", token.trim()));
    let direct_arg = direct.to_str().unwrap();
    support::eventually("the API server refuses the deleted account's token", 60 * S, || {
        let run = shapes.kubectl(&["--kubeconfig", direct_arg, "get", "--raw", "/api"], &[]);
        if run.code == 0 { Err(run.stdout) } else { Ok(()) }
    });
    cutter.cut();
    assert_eq!(w.finish(60 * S), 1, "stdout {:#?}\nstderr {:#?}", w.seen, w.stderr);
    let errors: Vec<&String> = w.stderr.iter().filter(|l| l.starts_with("error: ")).collect();
    let expected = format!(
        "error: the exec credential plugin {:?} exited with status 3: login failed: the session expired, run corp-login again",
        shapes.path("exec-token")
    );
    assert_eq!(errors, [&expected], "{:#?}", w.stderr);
    // kubectl, with the same kubeconfig: the revoked token's 401, the plugin run again, its failure: 1.
    let kubectl = shapes.kubectl(&["--kubeconfig", kc_arg, "get", "lease", "-n", LEASE_NS, LEASE], &[]);
    assert_eq!(kubectl.code, 1, "{kubectl:?}");
    assert!(kubectl.stderr.contains("exit status 3") || kubectl.stderr.contains("exec"), "{kubectl:?}");
}

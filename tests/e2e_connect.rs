//! Connecting as kubectl does, on the kubeconfig shapes people really have: exec credential
//! plugins, kubectl's connection flags, TLS settings and `--request-timeout`. Each shape runs
//! `kubectl get lease` and `kubectl dispatch lease` side by side on the same kubeconfig: both
//! work, or both fail and the plugin says why in one line. Proxies are in e2e_proxy.rs.

mod support;

use std::time::{Duration, Instant};

use support::Cluster;
use support::kubectls::each_kubectl;
use support::shapes::{Shapes, both_fail, both_work};

const V1: &str = "client.authentication.k8s.io/v1";
const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";
const NEVER: &str = "      interactiveMode: Never\n";

#[test]
fn exec_plugins_v1_and_v1beta1_that_return_a_client_certificate_or_a_token() {
    each_kubectl(|_kubectl| {
        let s = Shapes::new(Cluster::shared());
        for (api, mode) in [(V1, NEVER), (V1BETA1, ""), (V1, "      interactiveMode: IfAvailable\n")] {
            let kc = s.kubeconfig("exec-cert", &s.cluster(), &s.exec_user("exec-cert", api, mode, &[]));
            let (k, ours) = s.side_by_side(&kc, &[], &[]);
            both_work(&k, &ours);
        }
        // A plugin that returns a bearer token: the harness's static-token user, viewer's rights.
        let token_file = Cluster::shared().env["DISPATCH_TEST_TOKEN_FILE"].clone();
        let kc = s.kubeconfig(
            "exec-token",
            &s.cluster(),
            &s.exec_user("exec-token", V1, NEVER, &[("TOKEN_FILE", &token_file)]),
        );
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_work(&k, &ours);
        let whoami = s.kubectl(
            &["--kubeconfig", kc.to_str().unwrap(), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
            &[],
        );
        assert_eq!(whoami.stdout, "token-user", "{}", whoami.stderr);
        // kubectl refuses a v1 plugin without interactiveMode; so does the plugin.
        let kc = s.kubeconfig("exec-v1-no-mode", &s.cluster(), &s.exec_user("exec-cert", V1, "", &[]));
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_fail(&k, &ours, "interactiveMode must be specified");
    });
}

#[test]
fn a_missing_exec_plugin_names_itself_and_shows_the_install_hint() {
    each_kubectl(|_kubectl| {
        let s = Shapes::new(Cluster::shared());
        let user = format!(
            "    exec:\n      apiVersion: {V1}\n      command: corp-login-not-installed\n{NEVER}      installHint: |\n        corp-login is not installed.\n        Install it with: brew install corp-login\n"
        );
        let kc = s.kubeconfig("exec-missing", &s.cluster(), &user);
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_fail(&k, &ours, r#"the exec credential plugin "corp-login-not-installed" for user "x" was not found"#);
        assert!(k.stderr.contains("brew install corp-login"), "kubectl shows the hint too:\n{}", k.stderr);
        assert_eq!(
            ours.stderr.lines().nth(1),
            Some("corp-login is not installed. Install it with: brew install corp-login"),
            "{}",
            ours.stderr
        );
    });
}

#[test]
fn a_failing_exec_plugin_shows_the_last_line_of_its_stderr() {
    each_kubectl(|_kubectl| {
        let s = Shapes::new(Cluster::shared());
        let kc = s.kubeconfig("exec-fail", &s.cluster(), &s.exec_user("exec-fail", V1, NEVER, &[]));
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        assert_ne!(k.code, 0);
        // Its stderr reaches ours as it comes, as kubectl passes it on (both show the two lines);
        // then the one error line, naming the command, its status and its last line.
        for run in [&k, &ours] {
            assert!(
                run.stderr.starts_with("opening the login page\nlogin failed: the session expired"),
                "{}",
                run.stderr
            );
        }
        let error = format!(
            "error: the exec credential plugin {:?} exited with status 3: login failed: the session expired, run corp-login again",
            s.path("exec-fail")
        );
        ours.expect_code(1);
        assert_eq!(ours.stderr.lines().skip(2).collect::<Vec<_>>(), [error.as_str()], "{}", ours.stderr);
        assert!(ours.stdout.is_empty());
        let kc = s.kubeconfig("exec-empty", &s.cluster(), &s.exec_user("exec-empty", V1, NEVER, &[]));
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_fail(&k, &ours, "produced no credential: it returned neither a token nor a client certificate and key");
    });
}

#[test]
fn an_exec_plugin_gets_the_terminal_only_in_one_shot_commands() {
    let s = Shapes::new(Cluster::shared());
    let seen = s.dir.join("seen");
    let seen_arg = seen.to_str().unwrap();
    let mode = |m: &str| format!("      interactiveMode: {m}\n");
    let kc = s.kubeconfig(
        "exec-tty",
        &s.cluster(),
        &s.exec_user("exec-tty", V1, &mode("IfAvailable"), &[("SEEN", seen_arg)]),
    );
    let kc_arg = kc.to_str().unwrap();
    let take = || {
        let text = std::fs::read_to_string(&seen).unwrap_or_default();
        std::fs::remove_file(&seen).ok();
        text
    };
    // kubectl, at a terminal, hands the plugin the terminal; so does a one-shot plugin command.
    let k = s.kubectl_in_terminal(
        &["--kubeconfig", kc_arg, "get", "lease", "-n", "dispatch-system", "dispatch-admission"],
        &[],
    );
    assert_eq!(k.code, 0, "{}", k.stdout);
    assert_eq!(take().lines().next(), Some("tty \"interactive\":true"));
    let ours = s.kubectl_in_terminal(&["dispatch", "--kubeconfig", kc_arg, "lease"], &[]);
    assert_eq!(ours.code, 0, "{}", ours.stdout);
    assert_eq!(take(), "tty \"interactive\":true\n");
    // A watch never does, even at a terminal: a refresh hours later would find nobody there.
    let watch = s.kubectl_in_terminal(
        &["dispatch", "--kubeconfig", kc_arg, "lease", "--watch", "--until", "fresh", "--timeout", "20s"],
        &[],
    );
    assert_eq!(watch.code, 0, "{}", watch.stdout);
    assert_eq!(take(), "notty \"interactive\":false\n");
    // Without a terminal, one-shot too runs it without one.
    s.kubectl(&["dispatch", "--kubeconfig", kc_arg, "lease"], &[]).expect_code(0);
    assert_eq!(take(), "notty \"interactive\":false\n");
    // interactiveMode: Always under --watch is refused, and says why.
    let kc =
        s.kubeconfig("exec-always", &s.cluster(), &s.exec_user("exec-tty", V1, &mode("Always"), &[("SEEN", seen_arg)]));
    let watch = s.kubectl_in_terminal(&["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease", "--watch"], &[]);
    assert_eq!(watch.code, 1, "{}", watch.stdout);
    assert!(
        watch.stdout.contains("needs a terminal (interactiveMode: Always), and this mode never gives it one"),
        "{}",
        watch.stdout
    );
    assert_eq!(take(), "", "the plugin was not run");
}

#[test]
fn a_hanging_exec_plugin_is_bounded_in_every_mode() {
    let c = Cluster::shared();
    let s = Shapes::new(c);
    let pidfile = s.dir.join("hang.pid");
    let user = s.exec_user("exec-hang", V1, NEVER, &[("PIDFILE", pidfile.to_str().unwrap())]);
    let kc = s.kubeconfig("exec-hang", &s.cluster(), &user);
    let kc_arg = kc.to_str().unwrap();
    // The plugin's process is killed once the command is over: gone, or a zombie waiting for
    // init, within moments (a SIGKILLed process on a loaded machine may still be running for
    // the instant before it is scheduled to die; one not killed sleeps its 600 s).
    let killed = || {
        let pid = std::fs::read_to_string(&pidfile).expect("the plugin ran").trim().to_string();
        std::fs::remove_file(&pidfile).unwrap();
        support::eventually("the hanging plugin gone", Duration::from_secs(10), || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.contains(") Z ") { Ok(()) } else { Err(format!("{pid} still runs: {stat}")) }
        });
    };
    // One-shot: --request-timeout bounds the plugin's run.
    let started = Instant::now();
    let ours = s.kubectl(&["dispatch", "--kubeconfig", kc_arg, "lease", "--request-timeout", "2s"], &[]);
    ours.expect_one_error(&format!("the exec credential plugin {:?} did not finish within 2s", s.path("exec-hang")));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    killed();
    // Watch: the same bound, and no terminal.
    let started = Instant::now();
    let ours = s.kubectl(&["dispatch", "--kubeconfig", kc_arg, "lease", "--watch", "--request-timeout", "2s"], &[]);
    ours.expect_one_error("did not finish within 2s");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    killed();

    // Fleet: a context whose plugin hangs is an error row; the others are judged.
    let merged = s.dir.join("merged");
    std::fs::write(&merged, std::fs::read_to_string(&kc).unwrap().replace("current-context: x\n", "")).unwrap();
    let both = format!("{}:{}", merged.display(), c.kubeconfig());
    let started = Instant::now();
    let fleet = s.kubectl(
        &["dispatch", "gate", "--context", "x", "--context", "admin", "--request-timeout", "3s"],
        &[("KUBECONFIG", both.as_str())],
    );
    assert!(started.elapsed() < Duration::from_secs(12), "took {:?}", started.elapsed());
    let rows: Vec<&str> = fleet.stdout.lines().collect();
    let hung = rows.iter().find(|r| r.starts_with("x ")).unwrap_or_else(|| panic!("no row for x:\n{}", fleet.stdout));
    assert!(hung.contains("error") && hung.contains("exec credential plugin"), "stdout:\n{}", fleet.stdout);
    assert!(rows.iter().any(|r| r.starts_with("admin ")), "stdout:\n{}\nstderr:\n{}", fleet.stdout, fleet.stderr);

    // Completion: TAB never waits on the plugin for long. The completer is called as kubectl
    // calls it (`kubectl __complete dispatch ...` runs it with the words after `dispatch`), but
    // directly: kubectl's own `__complete` runs this kubeconfig's exec plugin itself, unbounded.
    let completer = s.dir.join("kubectl_complete-dispatch");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-dispatch"), &completer).unwrap();
    let started = Instant::now();
    let done = support::Run::from(
        std::process::Command::new(&completer)
            .args(["--kubeconfig", kc_arg, "gate", "--cluster-queue", ""])
            .output()
            .unwrap(),
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stdout.ends_with(":4\n"), "stdout:\n{}", done.stdout);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    killed();
}

#[test]
fn an_exec_credential_is_fetched_again_before_it_lapses_under_watch() {
    // A cluster of its own: this test restarts kube-apiserver.
    let c = Cluster::start("v0.17.0");
    let s = Shapes::new(&c);
    let runs = s.dir.join("runs");
    let runs_path = runs.to_str().unwrap();
    let user = s.exec_user("exec-cert", V1, NEVER, &[("RUNS", runs_path), ("EXPIRES_IN", "8")]);
    let kc = s.kubeconfig("exec-expiring", &s.cluster(), &user);
    let mut full = vec!["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease", "--watch", "-o", "json"];
    full.push("--changes-only");
    let mut watch = support::watch::Watch::spawn(s.command(&full, &[]));
    watch.wait_for("the first row", Duration::from_secs(20), |l| l.contains(support::shapes::HOLDER));
    // Past the credential's expiry (8 s after the plugin last ran), the watch has to reconnect:
    // new requests, new credential.
    support::eventually("the credential expired", Duration::from_secs(30), || {
        let ran = std::fs::metadata(&runs).and_then(|m| m.modified()).map_err(|e| e.to_string())?;
        let age = ran.elapsed().unwrap_or_default();
        if age > Duration::from_secs(8) { Ok(()) } else { Err(format!("the plugin last ran {age:?} ago")) }
    });
    c.kill_apiserver();
    c.start_apiserver();
    watch.wait_for_stderr("watch resumed", Duration::from_secs(30));
    c.apply(&support::fixtures::lease(
        support::shapes::LEASE_NS,
        support::shapes::LEASE,
        Some("new-holder_1"),
        Some(0),
        Some(3600),
    ));
    watch.wait_for("the takeover after the restart", Duration::from_secs(20), |l| l.contains("new-holder_1"));
    let count = std::fs::read_to_string(&runs).unwrap().lines().count();
    assert!(count >= 2, "the plugin ran {count} time(s); the expired credential was reused");
    // Once at the start and once or twice around the restart: not on every request.
    assert!(count <= 4, "the plugin ran {count} times; a credential should serve until it is due");
    watch.stop();
    c.stop();
}

#[test]
fn tls_settings_agree_with_kubectl() {
    each_kubectl(|_kubectl| {
        let mut s = Shapes::new(Cluster::shared());
        let admin = "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n";
        // Certificate files relative to the kubeconfig's folder (the test runs elsewhere).
        let relative = format!("    server: {}\n    certificate-authority: pki/ca.crt\n", s.server);
        let kc = s.kubeconfig("relative", &relative, admin);
        s.cwd = "/".into();
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_work(&k, &ours);
        s.cwd = s.dir.clone();
        // insecure-skip-tls-verify without a CA.
        let insecure = format!("    server: {}\n    insecure-skip-tls-verify: true\n", s.server);
        let (k, ours) = s.side_by_side(&s.kubeconfig("insecure", &insecure, admin), &[], &[]);
        both_work(&k, &ours);
        // tls-server-name: a name the certificate has, and one it does not.
        let named = |name: &str| format!("{}    tls-server-name: {name}\n", s.cluster());
        let (k, ours) = s.side_by_side(&s.kubeconfig("name-right", &named("localhost"), admin), &[], &[]);
        both_work(&k, &ours);
        let (k, ours) = s.side_by_side(&s.kubeconfig("name-wrong", &named("wrong.example"), admin), &[], &[]);
        both_fail(&k, &ours, "certificate not valid for name \"wrong.example\"");
        // insecure and a CA together: kubectl refuses the kubeconfig, and so does the plugin.
        let both = format!("{}    insecure-skip-tls-verify: true\n", s.cluster());
        let (k, ours) = s.side_by_side(&s.kubeconfig("insecure-and-ca", &both, admin), &[], &[]);
        both_fail(&k, &ours, "specifying a root certificates file with the insecure flag is not allowed");
    });
}

#[test]
fn each_connection_flag_on_an_empty_kubeconfig() {
    each_kubectl(|_kubectl| {
        let s = Shapes::new(Cluster::shared());
        let empty = s.dir.join("empty");
        std::fs::write(&empty, "apiVersion: v1\nkind: Config\n").unwrap();
        let (ca, cert, key) = (s.path("pki/ca.crt"), s.path("pki/admin.crt"), s.path("pki/admin.key"));
        let server = s.server.clone();
        let admin: Vec<&str> = vec!["--client-certificate", &cert, "--client-key", &key];
        let with = |extra: &[&str]| -> Vec<String> {
            let mut all: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            all.extend(admin.iter().map(|s| s.to_string()));
            all
        };
        let shapes: Vec<(Vec<String>, Option<&str>)> = vec![
            (with(&["-s", &server, "--certificate-authority", &ca]), None),
            (with(&["--server", &server, "--insecure-skip-tls-verify"]), None),
            (with(&["--server", &server, "--insecure-skip-tls-verify=true"]), None),
            (with(&["-s", &server, "--certificate-authority", &ca, "--tls-server-name", "localhost"]), None),
            (with(&["-s", &server, "--certificate-authority", &ca, "--as", "viewer", "--as-uid", "42"]), None),
            (with(&["-s", &server, "--certificate-authority", &ca, "--disable-compression"]), None),
            // Without a scheme kubectl speaks plain http, even with TLS flags: the server says 400.
            (with(&["-s", server.trim_start_matches("https://"), "--certificate-authority", &ca]), Some("400")),
            (
                with(&["-s", &server, "--certificate-authority", &ca, "--tls-server-name", "wrong.example"]),
                Some("wrong.example"),
            ),
            (with(&["-s", &server]), Some("TLS with the API server")),
            (
                with(&["-s", &server, "--certificate-authority", &ca, "--as-uid", "42"]),
                Some("without impersonating a user"),
            ),
            (
                vec![
                    "-s".into(),
                    server.clone(),
                    "--certificate-authority".into(),
                    ca.clone(),
                    "--token".into(),
                    "not-a-token".into(),
                ],
                Some("401 Unauthorized"),
            ),
        ];
        for (flags, failure) in shapes {
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let (k, ours) = s.side_by_side(&empty, &flags, &[]);
            match failure {
                None => both_work(&k, &ours),
                Some(error) => both_fail(&k, &ours, error),
            }
        }
        // Impersonating no-lease (with a uid): kubectl is forbidden the Lease, the plugin says
        // unknown, naming the rule; so --as and --as-uid reached the server.
        let flags = with(&["-s", &server, "--certificate-authority", &ca, "--as", "no-lease", "--as-uid", "42"]);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (k, ours) = s.side_by_side(&empty, &flags, &[]);
        assert!(k.code != 0 && k.stderr.contains("Forbidden"), "{}", k.stderr);
        ours.expect_code(4);
    });
}

#[test]
fn flags_take_precedence_over_the_kubeconfig() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let s = Shapes::new(c);
        let kc = std::path::PathBuf::from(c.kubeconfig());
        let (cert, key, ca) = (s.path("pki/admin.crt"), s.path("pki/admin.key"), s.path("pki/ca.crt"));
        // --server over the context's server (a dead one in this kubeconfig).
        let dead = s.kubeconfig("dead-server", "    server: https://127.0.0.1:1\n", "    token: x\n");
        let flags =
            ["-s", &s.server, "--certificate-authority", &ca, "--client-certificate", &cert, "--client-key", &key];
        let (k, ours) = s.side_by_side(&dead, &flags, &[]);
        // Both send the kubeconfig's token beside the flags' certificate; the certificate authenticates.
        both_work(&k, &ours);
        // --token over the token user's own token: an unknown one is refused, for both.
        let token_user = s.kubeconfig(
            "token-user",
            &s.cluster(),
            &format!("    token: {}\n", std::fs::read_to_string(&c.env["DISPATCH_TEST_TOKEN_FILE"]).unwrap().trim()),
        );
        let (k, ours) = s.side_by_side(&token_user, &[], &[]);
        both_work(&k, &ours);
        let (k, ours) = s.side_by_side(&token_user, &["--token", "unknown"], &[]);
        both_fail(&k, &ours, "401 Unauthorized");
        // --client-certificate/--client-key over the kubeconfig's certificate files: as no-lease,
        // kubectl is forbidden the Lease and the plugin says unknown (exit 4).
        let (nl_cert, nl_key) = (s.path("pki/no-lease.crt"), s.path("pki/no-lease.key"));
        let admin_files = s.kubeconfig(
            "admin-files",
            &s.cluster(),
            "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n",
        );
        let (k, ours) = s.side_by_side(&admin_files, &["--client-certificate", &nl_cert, "--client-key", &nl_key], &[]);
        assert!(k.code != 0 && k.stderr.contains("Forbidden"), "kubectl: {}", k.stderr);
        ours.expect_code(4);
        // Over embedded certificate data, kubectl refuses the two together; so does the plugin.
        let (k, ours) = s.side_by_side(&kc, &["--client-certificate", &nl_cert, "--client-key", &nl_key], &[]);
        both_fail(&k, &ours, "client-cert-data and client-cert are both specified for admin");
        // --insecure-skip-tls-verify over a kubeconfig whose CA is wrong: both work.
        let wrong_ca = format!("    server: {}\n    certificate-authority: {}\n", s.server, s.path("pki/admin.crt"));
        let wrong = s.kubeconfig(
            "wrong-ca",
            &wrong_ca,
            "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n",
        );
        let (k, ours) = s.side_by_side(&wrong, &[], &[]);
        both_fail(&k, &ours, "TLS with the API server");
        let (k, ours) = s.side_by_side(&wrong, &["--insecure-skip-tls-verify"], &[]);
        both_work(&k, &ours);
        // --certificate-authority over the kubeconfig's CA data: a wrong CA fails both, the right
        // one over the wrong kubeconfig works for both.
        let (k, ours) = s.side_by_side(&kc, &["--certificate-authority", &s.path("pki/admin.crt")], &[]);
        both_fail(&k, &ours, "TLS with the API server");
        let (k, ours) = s.side_by_side(&wrong, &["--certificate-authority", &ca], &[]);
        both_work(&k, &ours);
    });
}

#[test]
fn request_timeout_bounds_a_server_that_accepts_and_never_answers() {
    let s = Shapes::new(Cluster::shared());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and keeps it, unanswered, for as long as this test binary runs.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.push(conn);
        }
    });
    let cluster = format!("    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n");
    let kc = s.kubeconfig("silent", &cluster, "    token: x\n");
    let kc_arg = kc.to_str().unwrap();
    let kubectl = s.kubectl(&["--kubeconfig", kc_arg, "--request-timeout", "2s", "get", "lease", "-A"], &[]);
    assert_ne!(kubectl.code, 0, "{}", kubectl.stdout);
    let started = Instant::now();
    let ours = s.kubectl(&["dispatch", "--kubeconfig", kc_arg, "--request-timeout", "2s", "lease"], &[]);
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    ours.expect_one_error(&format!("no answer from the API server at https://127.0.0.1:{port} within 2s"));

    // Without --request-timeout, the TLS handshake has kubectl's 10 s, for both.
    let kubectl = std::thread::scope(|scope| {
        let theirs = scope.spawn(|| s.kubectl(&["--kubeconfig", kc_arg, "get", "lease", "-A"], &[]));
        let started = Instant::now();
        let ours = s.kubectl(&["dispatch", "--kubeconfig", kc_arg, "lease"], &[]);
        let took = started.elapsed();
        assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(20), "took {took:?}");
        ours.expect_one_error(&format!(
            "TLS with the API server at https://127.0.0.1:{port} failed: the TLS handshake did not finish within 10s"
        ));
        theirs.join().unwrap()
    });
    assert!(kubectl.code != 0 && kubectl.stderr.contains("TLS handshake timeout"), "{}", kubectl.stderr);
}

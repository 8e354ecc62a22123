//! End to end on real clusters: the read-only proof, Kueue absent or only v1beta1, plain HTTP/1.1
//! through `kubectl proxy`, and every kind of bad input ending in one clear line and a
//! documented exit code.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::fixtures::{self, Scenario};
use support::{Cluster, Run, plugin_path};

/// Runs `kubectl dispatch ARGS` with a kubeconfig file of our own.
fn with_kubeconfig(kubeconfig: &str, args: &[&str]) -> Run {
    let dir = std::env::temp_dir().join(support::unique("dispatch-kc"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig).unwrap();
    let mut full = vec!["dispatch"];
    full.extend_from_slice(args);
    let out = Command::new("kubectl")
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

/// The admin context's kubeconfig, minified, with its credentials inline.
fn admin_kubeconfig(c: &Cluster) -> String {
    c.kubectl_ok(&["config", "view", "--raw", "--minify", "--context", "admin"], None)
}

fn drop_lines(yaml: &str, needle: &str) -> String {
    yaml.lines().filter(|l| !l.contains(needle)).map(|l| format!("{l}\n")).collect()
}

/// One `error:` line and at most one hint; never a panic or a backtrace.
fn assert_one_error(run: &Run, error: &str) {
    run.expect_one_error(error);
}

#[test]
fn every_request_of_the_plugin_is_a_read() {
    let c = Cluster::shared();
    let s = Scenario::new("audit");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "w", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "m", 5)]));
    for args in [
        s.args("gate", &[]),
        s.args("gate", &["-A", "-o", "json"]),
        s.args("gate", &["--all-states", "-n", &s.ns]),
        s.args("lease", &["-o", "yaml"]),
        vec!["gate", "--context", "no-lease", "--controller-name", &s.controller],
    ] {
        c.dispatch(&args);
    }
    let log = std::fs::read_to_string(c.audit_log()).expect("audit log");
    let mut ours = 0;
    for line in log.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("audit line is JSON");
        let agent = event["userAgent"].as_str().unwrap_or_default();
        if !agent.starts_with("kubectl-dispatch/") {
            continue;
        }
        ours += 1;
        let verb = event["verb"].as_str().unwrap_or_default();
        assert!(["get", "list", "watch"].contains(&verb), "a {verb} request: {line}");
    }
    assert!(ours >= 10, "only {ours} requests by kubectl-dispatch/ in the audit log");
}

#[test]
fn without_kueue_the_gate_says_kueue_is_not_installed() {
    let c = Cluster::start("none");
    let run = c.dispatch(&["gate"]);
    assert_one_error(&run, "error: Kueue is not installed: the API server does not serve the API group kueue.x-k8s.io");
    assert_eq!(
        run.stderr.lines().nth(1),
        Some("install Kueue (its CRDs), or choose the cluster that runs it with --context")
    );
    // The Lease needs no Kueue.
    c.apply(&fixtures::lease("dispatch-system", "dispatch-admission", Some("p_1"), Some(1), Some(15)));
    c.dispatch(&["lease"]).expect_code(0);

    // A malformed object (permissive CRDs let a wrong type in) is one line too.
    for (plural, kind, scope) in [
        ("clusterqueues", "ClusterQueue", "Cluster"),
        ("admissionchecks", "AdmissionCheck", "Cluster"),
        ("localqueues", "LocalQueue", "Namespaced"),
        ("workloads", "Workload", "Namespaced"),
    ] {
        c.apply(&format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.kueue.x-k8s.io\nspec:\n  group: kueue.x-k8s.io\n  scope: {scope}\n  names: {{plural: {plural}, kind: {kind}}}\n  versions:\n  - name: v1beta2\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
        ));
        c.kubectl_ok(&["wait", "--for=condition=Established", &format!("crd/{plural}.kueue.x-k8s.io")], None);
        wait_until_served(&c, &format!("/apis/kueue.x-k8s.io/v1beta2/{plural}"));
    }
    c.apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: broken\nspec:\n  admissionChecksStrategy: not-an-object\n");
    let run = c.dispatch(&["gate"]);
    assert_one_error(&run, "error: cannot decode ClusterQueues: ");
    c.stop();
}

fn wait_until_served(c: &Cluster, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c.kubectl(&["get", "--raw", path], None).status.success() {
        assert!(Instant::now() < deadline, "{path} never served");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn kueue_v1beta1_only_is_read_with_both_cluster_queue_shapes() {
    let c = Cluster::start("v0.14.0");
    let s = Scenario::new("v1beta1");
    let v1 = |yaml: String| yaml.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1");
    c.apply(&v1(s.healthy_yaml()));
    // v1beta1's short form, spec.admissionChecks, on a second ClusterQueue.
    let short = v1(fixtures::cluster_queue(&format!("{}-short", s.cq), &[])).replace(
        "  namespaceSelector: {}\n",
        &format!("  namespaceSelector: {{}}\n  admissionChecks: [{}]\n", s.check),
    );
    c.apply(&short);
    c.apply(&v1(fixtures::workload(&s.ns, "w1", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "old kueue", 5)])));
    let run = c.dispatch(&s.args("gate", &["-A", "-o", "json"]));
    run.expect_code(0);
    let json = run.json();
    let queues: Vec<&str> =
        json["chains"].as_array().unwrap().iter().map(|c| c["clusterQueue"].as_str().unwrap()).collect();
    assert_eq!(queues, vec![s.cq.clone(), format!("{}-short", s.cq)]);
    assert_eq!(json["verdict"], "yes");
    assert_eq!(json["waiting"][0]["message"], "old kueue");
    c.dispatch(&s.args("gate", &["-v", "1"])).expect_code(0);
    let logged = c.dispatch(&s.args("gate", &["-v", "1"]));
    assert!(logged.stderr.contains("I Kueue API kueue.x-k8s.io/v1beta1"), "{}", logged.stderr);
    c.stop();
}

#[test]
fn unreachable_server_is_one_line() {
    let kc = "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {cluster: x, user: x}\nclusters:\n- name: x\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: x\n  user: {token: abc}\n";
    let run = with_kubeconfig(kc, &["gate"]);
    assert_one_error(&run, "error: cannot reach the API server at https://127.0.0.1:1: ");
}

#[test]
fn a_server_that_never_answers_is_bounded_by_request_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(2).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(conns);
    });
    let kc = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {{cluster: x, user: x}}\nclusters:\n- name: x\n  cluster: {{server: \"https://127.0.0.1:{port}\"}}\nusers:\n- name: x\n  user: {{token: abc}}\n"
    );
    let started = Instant::now();
    let run = with_kubeconfig(&kc, &["lease", "--request-timeout", "1"]);
    assert_one_error(&run, &format!("error: no answer from the API server at https://127.0.0.1:{port} within 1s"));
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    drop(hold);
}

#[test]
fn tls_failure_401_and_secrets_never_printed() {
    let c = Cluster::shared();
    let admin = admin_kubeconfig(c);
    // No CA: the server's certificate cannot be verified.
    let run = with_kubeconfig(&drop_lines(&admin, "certificate-authority-data"), &["gate"]);
    assert_one_error(&run, "error: TLS with the API server at https://127.0.0.1:");

    // A token the server does not know: 401.
    let token = "s3cr3t-token-never-printed";
    let with_token = drop_lines(&drop_lines(&admin, "client-certificate-data"), "client-key-data")
        .replace("  user:\n", &format!("  user:\n    token: {token}\n"));
    for verbosity in ["0", "9"] {
        let run = with_kubeconfig(&with_token, &["gate", "-v", verbosity]);
        assert_one_error_or_logs(&run, "the credentials (401 Unauthorized)");
        assert!(!run.stdout.contains(token) && !run.stderr.contains(token), "token printed:\n{}", run.stderr);
    }

    // A client key never appears either, at any verbosity.
    let key_line = admin.lines().find(|l| l.contains("client-key-data")).unwrap();
    let key = key_line.split(':').nth(1).unwrap().trim();
    let run = with_kubeconfig(&admin, &["gate", "-v", "9", "-A", "-o", "yaml"]);
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains(&key[..40]) && !text.contains("PRIVATE KEY"), "key material printed");
    }
    assert!(run.stderr.contains("I GET /apis/kueue.x-k8s.io 200"), "-v 9 logs requests:\n{}", run.stderr);
}

/// With -v the log lines come first; the error is still the one `error:` line.
fn assert_one_error_or_logs(run: &Run, error: &str) {
    run.expect_code(1);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| !l.starts_with("I ")).collect();
    assert!(errors.len() <= 2 && errors[0].starts_with("error: ") && errors[0].contains(error), "{}", run.stderr);
}

#[test]
fn kubeconfig_problems_are_one_line() {
    let c = Cluster::shared();
    assert_one_error(
        &c.dispatch(&["gate", "--context", "nope"]),
        "error: context \"nope\" not found in the kubeconfig",
    );
    assert_one_error(
        &c.dispatch(&["lease", "--kubeconfig", "/nonexistent/config"]),
        "error: cannot read kubeconfig /nonexistent/config: ",
    );
    assert_one_error(&with_kubeconfig("clusters: [oops\n", &["gate"]), "error: cannot read kubeconfig ");
    let run = c
        .command("kubectl", &["dispatch", "gate"])
        .env("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert_one_error(&Run::from(run), "error: no kubeconfig found");
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let c = Cluster::shared();
    let run = c.dispatch(&["gate", "--bogus"]);
    run.expect_code(2);
    assert_eq!(run.stderr, "error: unexpected argument '--bogus' found\nSee 'kubectl dispatch --help' for usage.\n");
    let run = c.dispatch(&["lease", "--lease", "no-slash"]);
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: invalid value 'no-slash' for '--lease <NAMESPACE/NAME>'"), "{}", run.stderr);
    let run = c.dispatch(&["gate", "--request-timeout", "soon"]);
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: invalid --request-timeout \"soon\""), "{}", run.stderr);
    let run = c.dispatch(&["gate", "-o", "bogus"]);
    run.expect_code(2);
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let c = Cluster::shared();
    let s = Scenario::new("pipe");
    c.apply(&s.healthy_yaml());
    let mut child = c
        .command(
            "sh",
            &["-c", &format!("kubectl dispatch gate --controller-name {} --lease {} -A | true", s.controller, s.lease)],
        )
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    child.wait().unwrap();
    assert_eq!(stderr, "", "a closed pipe printed something");
}

#[test]
fn kubeconfig_lists_merge_like_kubectl_and_flags_pick_the_entries() {
    let c = Cluster::shared();
    let s = Scenario::new("merge");
    c.apply(&s.healthy_yaml());
    let dir = std::env::temp_dir().join(support::unique("dispatch-merge"));
    std::fs::create_dir_all(&dir).unwrap();
    // The first file to set current-context wins; a missing file in the list is ignored.
    let first = dir.join("first");
    std::fs::write(&first, "apiVersion: v1\nkind: Config\ncurrent-context: no-lease\n").unwrap();
    let list = format!("{}:{}:{}", dir.join("missing").display(), first.display(), c.kubeconfig());
    let run = |extra: &[&str]| {
        let mut args = vec!["dispatch"];
        args.extend(s.args("gate", extra));
        Run::from(c.command("kubectl", &args).env("KUBECONFIG", &list).output().unwrap())
    };
    let merged = run(&["-v", "1"]);
    merged.expect_code(4);
    assert!(merged.stderr.contains("I context no-lease, server https://127.0.0.1:"), "{}", merged.stderr);
    run(&["--context", "admin"]).expect_code(0);
    // --user picks another credential for the same context.
    run(&["--context", "admin", "--user", "no-lease"]).expect_code(4);
    // Impersonation, as admin.
    run(&["--context", "admin", "--as", "no-lease"]).expect_code(4);
    run(&["--context", "admin", "--as", "someone", "--as-group", "system:masters"]).expect_code(0);
    let unknown_cluster = run(&["--context", "admin", "--cluster", "nope"]);
    assert_one_error(&unknown_cluster, "error: invalid kubeconfig: ");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_lease_verb_reports_each_status() {
    let c = Cluster::shared();
    let s = Scenario::new("leaseverb");
    c.apply(&s.healthy_yaml());
    let fresh = c.dispatch(&s.args("lease", &["-o", "json"]));
    fresh.expect_code(0);
    let json = fresh.json();
    assert_eq!(json["kind"], "LeaseReport");
    assert_eq!(json["lease"]["status"], "fresh");
    assert_eq!(json["lease"]["leaseDurationSeconds"], 15);
    assert_eq!(json["lease"]["leaseTransitions"], 2);
    let forbidden = c.dispatch(&s.args("lease", &["--context", "no-lease", "--no-headers"]));
    forbidden.expect_code(4);
    let cells: Vec<&str> = forbidden.stdout.split_whitespace().collect();
    assert_eq!(cells, vec![s.lease.as_str(), "<none>", "<none>", "<none>", "<none>", "forbidden", "<none>", "<none>"]);
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    let missing = c.dispatch(&s.args("lease", &["-o", "wide"]));
    missing.expect_code(3);
    assert!(
        missing.lines()[1].ends_with(&format!(
            "missing   <none>        <none>     <none>       <none>         Lease {} does not exist   <none>",
            s.lease
        )),
        "{}",
        missing.stdout
    );
}

/// HTTP/1.1 without TLS: a kubeconfig pointing at `kubectl proxy` (plain http, no ALPN, so no
/// HTTP/2) gets the same verdict, with the Workloads, as the direct HTTPS/HTTP/2 connection.
#[test]
fn gate_through_kubectl_proxy_over_plain_http() {
    let c = Cluster::shared();
    let s = Scenario::new("proxy");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "w", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting here", 5)]));
    let mut proxy = c
        .command("kubectl", &["proxy", "--port=0", "--context", "admin"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kubectl proxy");
    let mut stdout = proxy.stdout.take().expect("proxy stdout");
    // "Starting to serve on 127.0.0.1:PORT"
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut byte = [0u8; 1];
    while !seen.ends_with('\n') && Instant::now() < deadline && stdout.read(&mut byte).unwrap_or(0) == 1 {
        seen.push(byte[0] as char);
    }
    let address = seen.trim().rsplit(' ').next().unwrap_or_default().to_string();
    assert!(address.starts_with("127.0.0.1:"), "kubectl proxy said: {seen:?}");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: p\n  cluster:\n    server: http://{address}\nusers:\n- name: p\n  user: {{}}\ncontexts:\n- name: p\n  context:\n    cluster: p\n    user: p\ncurrent-context: p\n"
    );
    let proxied = with_kubeconfig(&kubeconfig, &s.args("gate", &["-A", "-o", "json"]));
    let _ = proxy.kill();
    let _ = proxy.wait();
    proxied.expect_code(0);
    let direct = c.dispatch(&s.args("gate", &["-A", "-o", "json"]));
    direct.expect_code(0);
    let (p, d) = (proxied.json(), direct.json());
    assert_eq!(p["verdict"], "yes");
    // Each chain's queue, verdict and check results (the details carry ages, which tick).
    let chains = |v: &serde_json::Value| -> Vec<String> {
        let chains = v["chains"].as_array().cloned().unwrap_or_default();
        chains
            .iter()
            .map(|c| {
                let checks: Vec<String> = c["checks"]
                    .as_array()
                    .map(|a| a.iter().map(|k| format!("{}={}", k["id"], k["result"])).collect())
                    .unwrap_or_default();
                format!("{} {} {}", c["clusterQueue"], c["verdict"], checks.join(","))
            })
            .collect()
    };
    assert_eq!(chains(&p), chains(&d));
    assert_eq!(chains(&p).len(), 1, "{}", proxied.stdout);
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["waiting"].as_array().map(|a| a.iter().map(|w| w["name"].to_string()).collect()).unwrap_or_default()
    };
    assert_eq!(names(&p), names(&d));
    assert!(names(&p).contains(&"\"w\"".to_string()), "{}", proxied.stdout);
}

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

/// `--no-headers` pipes like kubectl's: stdout has table rows and nothing else (the titles,
/// notes and verdict lines go to stderr), beside `kubectl get --no-headers` on the same objects.
#[test]
fn no_headers_prints_only_table_rows_like_kubectl() {
    let c = Cluster::shared();
    let s = Scenario::new("noheaders");
    c.apply(&s.healthy_yaml());
    for name in ["job-a", "job-b"] {
        c.apply(&fixtures::workload(&s.ns, name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
    }
    let theirs = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "--no-headers"], None);
    let mut their_names: Vec<&str> = theirs.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    their_names.sort();
    assert_eq!(their_names, ["job-a", "job-b"], "kubectl prints one row per Workload:\n{theirs}");

    let ours = c.dispatch(&s.args("gate", &["-n", &s.ns, "--no-headers"]));
    ours.expect_code(0);
    let rows: Vec<Vec<&str>> = ours.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    // The four checks, then one row per waiting Workload; no title, note, verdict or blank line.
    assert_eq!(rows.len(), 6, "{}", ours.stdout);
    for (i, row) in rows[..4].iter().enumerate() {
        assert_eq!(row[0], (i + 1).to_string(), "{}", ours.stdout);
    }
    let mut our_names: Vec<&str> = rows[4..].iter().map(|r| r[1]).collect();
    our_names.sort();
    assert_eq!(our_names, their_names, "{}", ours.stdout);
    assert!(rows[4..].iter().all(|r| r[0] == s.ns && r[2] == s.cq), "{}", ours.stdout);
    for line in ["ReadmissionGate: yes (the adapter writes)", "2 workloads wait at dispatch's Pending check"] {
        assert!(!ours.stdout.contains(line.split(':').next().unwrap()), "{line:?} on stdout:\n{}", ours.stdout);
    }
    assert!(ours.stderr.lines().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{}", ours.stderr);
    assert!(ours.stderr.lines().any(|l| l.starts_with(&format!("ClusterQueue {}", s.cq))), "{}", ours.stderr);
    // Without --no-headers the same lines are on stdout.
    let full = c.dispatch(&s.args("gate", &["-n", &s.ns]));
    full.expect_line("ReadmissionGate: yes (the adapter writes)");

    // The Lease: one row each, with nothing else on stdout.
    let theirs = c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "--no-headers"], None);
    let ours = c.dispatch(&s.args("lease", &["--no-headers"]));
    ours.expect_code(0);
    assert_eq!((theirs.lines().count(), ours.lines().len()), (1, 1), "{theirs}\n{}", ours.stdout);
    assert_eq!(theirs.split_whitespace().next(), Some(s.lease_name.as_str()));
    assert_eq!(ours.stdout.split_whitespace().next(), Some(s.lease.as_str()));

    // A fleet: one row per context and ClusterQueue.
    let fleet = c.dispatch(&s.args("gate", &["--context", "admin", "--context", "admin", "--no-headers", "-A"]));
    fleet.expect_code(0);
    assert!(fleet.lines().iter().all(|l| l.starts_with("admin ")) && fleet.lines().len() == 2, "{}", fleet.stdout);
}

/// Flags a verb does not use are usage errors (exit 2, clap's two lines), wherever they stand;
/// gate's -n/-A may come before the verb, as kubectl's flags may.
#[test]
fn flags_a_verb_does_not_use_are_usage_errors() {
    let c = Cluster::shared();
    let s = Scenario::new("verbflags");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "w", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
    let usage = |args: &[&str], first: &str| {
        let run = c.dispatch(args);
        run.expect_code(2);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {}", run.stderr);
        assert!(lines[0].starts_with(&format!("error: {first}")), "{args:?}: {}", run.stderr);
        assert_eq!(lines[1], "See 'kubectl dispatch --help' for usage.");
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    };
    for flag in ["--cluster-queue", "--admission-check", "--controller-name", "--namespace"] {
        usage(&["lease", flag, "x"], &format!("unexpected argument '{flag}' found"));
    }
    usage(&["lease", "-A"], "unexpected argument '-A' found");
    usage(&["-n", "x", "lease"], "lease takes no --namespace or --all-namespaces");
    usage(&["gate", "--timeout", "5s"], "the following required arguments were not provided: <--watch|--wait>");
    usage(&["gate", "--all-contexts", "--context", "admin"], "the argument '--all-contexts' cannot be used with");
    usage(&["--context", "admin", "gate", "--all-contexts"], "the argument '--all-contexts' cannot be used with");
    usage(&["lease", "-o", "prometheus"], "invalid value 'prometheus' for '--output <FORMAT>'");

    // -n before the verb reads the same namespace as after it.
    let after = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "json"])).json();
    let mut before_args = vec!["-n", s.ns.as_str()];
    before_args.extend(s.args("gate", &["-o", "json"]));
    let before = c.dispatch(&before_args).json();
    // Two runs a moment apart: everything but the age they were read at is the same.
    let rows = |v: &serde_json::Value| {
        let mut w = v["waiting"].clone();
        w.as_array_mut().unwrap().iter_mut().for_each(|r| r["sinceSeconds"] = serde_json::Value::Null);
        w
    };
    assert_eq!(rows(&before), rows(&after));
    assert_eq!(after["waiting"][0]["name"], "w");

    // --help shows what the verb uses.
    let help = c.dispatch(&["lease", "--help"]);
    help.expect_code(0);
    for foreign in ["--namespace", "--cluster-queue", "--admission-check", "--controller-name", "--all-namespaces"] {
        assert!(!help.stdout.contains(foreign), "lease --help shows {foreign}");
    }
}

/// The live modes keep --no-headers' promise too: table rows on stdout, the rest on stderr.
#[test]
fn no_headers_with_watch_and_wait_keeps_stdout_to_rows() {
    use support::watch::Watch;
    let c = Cluster::shared();
    let s = Scenario::new("noheaderslive");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "job-1", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 5)]));
    let is_row = |l: &str| {
        let first = l.split_whitespace().next().unwrap_or_default();
        ["1", "2", "3", "4", s.ns.as_str()].contains(&first)
    };
    let mut w = Watch::start(c, &s.args("gate", &["--watch", "-A", "--no-headers"]));
    w.wait_for("the Lease check's row", Duration::from_secs(20), |l| l.starts_with("4 "));
    // The verdict and the waiting count follow the rows at once.
    std::thread::sleep(Duration::from_secs(1));
    let (code, stdout, stderr) = w.stop();
    assert_eq!(code, 0);
    assert!(stdout.iter().all(|l| is_row(l)), "stdout:\n{}", stdout.join("\n"));
    assert!(stderr.iter().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{stderr:?}");
    assert!(stderr.iter().any(|l| l.ends_with(" 1 workload waits at dispatch's Pending check")), "{stderr:?}");

    let wait = c.dispatch(&s.args("gate", &["--wait", "--timeout", "20s", "-A", "--no-headers"]));
    wait.expect_code(0);
    assert!(wait.lines().iter().all(|l| is_row(l)) && wait.lines().len() == 5, "{}", wait.stdout);
    assert!(wait.stderr.lines().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{}", wait.stderr);
}

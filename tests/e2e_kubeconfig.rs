//! The kubeconfig as kubectl reads it, on the real test cluster: lists of files merged like
//! kubectl's and the flags that pick their entries, a server whose certificate cannot be
//! verified, a token the server does not know (with no secret ever printed, at any
//! verbosity), and a kubeconfig pointing at `kubectl proxy` over plain HTTP/1.1.

mod support;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::fixtures::{self, Scenario};
use support::kubectls::each_kubectl;
use support::{Cluster, Run, with_kubeconfig};

/// The admin context's kubeconfig, minified, with its credentials inline.
fn admin_kubeconfig(c: &Cluster) -> String {
    c.kubectl_ok(&["config", "view", "--raw", "--minify", "--context", "admin"], None)
}

fn drop_lines(yaml: &str, needle: &str) -> String {
    yaml.lines().filter(|l| !l.contains(needle)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn tls_failure_401_and_secrets_never_printed() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let admin = admin_kubeconfig(c);
        // No CA: the server's certificate cannot be verified.
        let run = with_kubeconfig(&drop_lines(&admin, "certificate-authority-data"), &["gate"]);
        Run::expect_one_error(&run, "error: TLS with the API server at https://127.0.0.1:");

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
    });
}

/// With -v the log lines come first; the error is still the one `error:` line.
fn assert_one_error_or_logs(run: &Run, error: &str) {
    run.expect_code(1);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| !l.starts_with("I ")).collect();
    assert!(errors.len() <= 2 && errors[0].starts_with("error: ") && errors[0].contains(error), "{}", run.stderr);
}

#[test]
fn kubeconfig_lists_merge_like_kubectl_and_flags_pick_the_entries() {
    each_kubectl(|_kubectl| {
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
        Run::expect_one_error(&unknown_cluster, "error: invalid kubeconfig: ");
        std::fs::remove_dir_all(&dir).unwrap();
    });
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

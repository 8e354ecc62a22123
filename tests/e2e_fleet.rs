//! Fleet mode on real test clusters: two healthy clusters with different verdicts and one that
//! never answers, which gets an error row and delays nobody beyond its timeout.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fixtures::{self, Scenario};
use support::{Cluster, Run, plugin_path};

/// The admin entries of a cluster's kubeconfig, renamed to `name`.
fn entries(c: &Cluster, name: &str) -> (Value, Value, Value) {
    let text = c.kubectl_ok(&["config", "view", "--raw", "--minify", "--context", "admin", "-o", "json"], None);
    let v: Value = serde_json::from_str(&text).unwrap();
    let cluster = json!({"name": name, "cluster": v["clusters"][0]["cluster"]});
    let user = json!({"name": name, "user": v["users"][0]["user"]});
    let context = json!({"name": name, "context": {"cluster": name, "user": name}});
    (cluster, user, context)
}

#[test]
fn all_contexts_judges_each_cluster_and_a_dead_one_delays_nobody() {
    let a = Cluster::shared();
    let b = Cluster::start("v0.17.0");
    let s = Scenario::new("fleet");
    a.apply(&s.healthy_yaml());
    b.apply(&s.healthy_yaml());
    b.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl_1"), Some(90), Some(15)));
    b.apply(&fixtures::workload(&s.ns, "stuck", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));

    // A server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(8).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let (ca, ua, xa) = entries(a, "a");
    let (cb, ub, xb) = entries(&b, "b");
    let dead_cluster = json!({"name": "dead", "cluster": {"server": format!("https://127.0.0.1:{port}"), "insecure-skip-tls-verify": true}});
    let dead_user = json!({"name": "dead", "user": {"token": "t"}});
    let dead_context = json!({"name": "dead", "context": {"cluster": "dead", "user": "dead"}});
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [ca, cb, dead_cluster], "users": [ua, ub, dead_user], "contexts": [xa, xb, dead_context],
    });
    let dir = std::env::temp_dir().join(support::unique("dispatch-fleet"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig.to_string()).unwrap();

    let run = |args: &[&str]| -> (Run, Duration) {
        let mut full = vec!["dispatch"];
        full.extend(s.args("gate", args));
        let started = Instant::now();
        let out =
            Command::new("kubectl").args(&full).env("KUBECONFIG", &path).env("PATH", plugin_path()).output().unwrap();
        (Run::from(out), started.elapsed())
    };
    let (table, took) = run(&["--all-contexts", "--request-timeout", "2s", "-A"]);
    table.expect_code(3);
    assert!(took < Duration::from_secs(6), "the dead context held the others up: {took:?}");
    let rows: Vec<Vec<&str>> = table.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["CONTEXT", "CLUSTERQUEUE", "VERDICT", "REASON", "WAITING"]);
    assert_eq!(rows[1], ["a", s.cq.as_str(), "yes", "<none>", "0"]);
    assert_eq!(rows[2][..3], ["b", s.cq.as_str(), "no"]);
    // Renewed 90 s before the fixture was written; the clusters take a few seconds to start.
    let b_row = table.lines()[2];
    assert!(
        b_row.contains("the admission controller's Lease was last renewed 1m") && b_row.contains("s ago, beyond 30s"),
        "{}",
        table.stdout
    );
    assert_eq!(rows[2].last(), Some(&"1"));
    assert_eq!(rows[3][..3], ["dead", "<none>", "error"]);
    let dead = table.lines()[3];
    assert!(dead.contains("no answer from the API server at ") && dead.contains(" within 2s"), "{}", table.stdout);

    let (json, _) = run(&["--context", "a", "--context", "b", "-A", "-o", "json"]);
    json.expect_code(3);
    let v = json.json();
    assert_eq!(v["kind"], "FleetReport");
    assert_eq!(v["contexts"][0]["context"], "a");
    assert_eq!(v["contexts"][0]["report"]["verdict"], "yes");
    assert_eq!(v["contexts"][1]["report"]["verdict"], "no");
    assert_eq!(v["contexts"][1]["report"]["waiting"][0]["name"], "stuck");

    let (healthy, _) = run(&["--context", "a", "--context", "a"]);
    healthy.expect_code(0);
    std::fs::remove_dir_all(&dir).unwrap();
    b.stop();
}

//! Fleet mode on real test clusters: two healthy clusters with different verdicts and one that
//! never answers, which gets an error row and delays nobody beyond its timeout.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fixtures::{self, Scenario};
use support::shapes::Shapes;
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
    // Each context's rows as it is judged: a and b (in either order), then dead, which waits
    // out its timeout.
    let row = |name: &str| rows.iter().position(|r| r[0] == name).unwrap_or_else(|| panic!("{}", table.stdout));
    assert_eq!(rows[row("a")], ["a", s.cq.as_str(), "yes", "<none>", "0"]);
    assert_eq!(rows[row("b")][..3], ["b", s.cq.as_str(), "no"]);
    // Renewed 90 s before the fixture was written; the clusters take a few seconds to start.
    let b_row = table.lines()[row("b")];
    // kubectl's HumanDuration writes 90 to 119 seconds as `90s` to `119s` (not Go's `1m30s`).
    let age = b_row
        .split_once("the admission controller's Lease was last renewed ")
        .and_then(|(_, rest)| rest.split_once(" ago, beyond 30s"))
        .map(|(age, _)| age)
        .unwrap_or_else(|| panic!("{}", table.stdout));
    let seconds: Option<u64> = age.strip_suffix('s').and_then(|n| n.parse().ok());
    assert!(seconds.is_some_and(|n| n >= 90) || age.starts_with("2m"), "{age}: {}", table.stdout);
    assert_eq!(rows[row("b")].last(), Some(&"1"));
    assert_eq!(row("dead"), 3, "{}", table.stdout);
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

    // A repeated context is judged once: one row, and no duplicate series.
    let (healthy, _) = run(&["--context", "a", "--context", "a"]);
    healthy.expect_code(0);
    assert_eq!(healthy.lines().len(), 2, "one header, one row:\n{}", healthy.stdout);
    let (prom, _) = run(&["--context", "a", "--context", "b", "--context", "a", "-o", "prometheus"]);
    let series: Vec<&str> = prom.lines().into_iter().filter(|l| !l.starts_with('#')).collect();
    let mut names: Vec<&str> = series.iter().map(|l| l.rsplit_once(' ').map_or(*l, |(k, _)| k)).collect();
    let all = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all, "duplicate series:\n{}", prom.stdout);
    assert!(series.iter().any(|l| l.contains("context=\"b\"")), "{}", prom.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
    b.stop();
}

#[test]
fn max_concurrency_bounds_the_contexts_judged_at_once() {
    // Ten contexts on one real cluster, each user an exec plugin that counts the plugins
    // running at the same moment (under flock) while it sleeps a second, then hands out the
    // admin certificate. No context's plugin starts before a free slot: the most seen at once
    // never exceeds the limit (a bound, not a timing: a slow machine only sees fewer).
    let c = Cluster::shared();
    let shapes = Shapes::new(c);
    let counter = shapes.dir.join("exec-count");
    std::fs::write(
        &counter,
        "#!/usr/bin/env bash\nset -eu\nexec 9>>\"$COUNT.lock\"\nflock 9\nn=$(( $(cat \"$COUNT\" 2>/dev/null || echo 0) + 1 ))\necho $n >\"$COUNT\"\necho $n >>\"$SEEN\"\nflock -u 9\nsleep 1\nflock 9\necho $(( $(cat \"$COUNT\") - 1 )) >\"$COUNT\"\nflock -u 9\nexec \"$DIR/exec-cert\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&counter, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Scenario::new("bounded");
    c.apply(&s.healthy_yaml());
    // Fresh for two hours: the runs take as long as the machine makes them.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(0), Some(3600)));
    for (limit, flags) in [(2usize, vec!["--max-concurrency", "2"]), (8, vec![])] {
        let seen = shapes.dir.join(format!("seen-{limit}"));
        let count = shapes.dir.join(format!("count-{limit}"));
        let exec = json!({
            "apiVersion": "client.authentication.k8s.io/v1", "command": counter.to_str().unwrap(),
            "interactiveMode": "Never",
            "env": [
                {"name": "DIR", "value": shapes.dir.to_str().unwrap()},
                {"name": "API", "value": "client.authentication.k8s.io/v1"},
                {"name": "COUNT", "value": count.to_str().unwrap()},
                {"name": "SEEN", "value": seen.to_str().unwrap()},
            ],
        });
        let names: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let cluster = json!({"server": shapes.server, "certificate-authority": shapes.path("pki/ca.crt")});
        let kubeconfig = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c0",
            "clusters": names.iter().map(|n| json!({"name": n, "cluster": cluster})).collect::<Vec<_>>(),
            "users": names.iter().map(|n| json!({"name": n, "user": {"exec": exec}})).collect::<Vec<_>>(),
            "contexts": names.iter().map(|n| json!({"name": n, "context": {"cluster": n, "user": n}})).collect::<Vec<_>>(),
        });
        let path = shapes.dir.join(format!("fleet-{limit}.kubeconfig"));
        std::fs::write(&path, kubeconfig.to_string()).unwrap();
        let mut args = vec!["dispatch"];
        args.extend(s.args("gate", &["--all-contexts"]));
        args.extend(flags.iter().copied());
        let run = Run::from(
            Command::new("kubectl").args(&args).env("KUBECONFIG", &path).env("PATH", plugin_path()).output().unwrap(),
        );
        run.expect_code(0);
        assert_eq!(run.lines().len(), 11, "a row per context:\n{}", run.stdout);
        let counts: Vec<usize> =
            std::fs::read_to_string(&seen).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(counts.len(), 10, "each context's plugin ran once: {counts:?}");
        let most = counts.iter().copied().max().unwrap_or_default();
        assert!(most <= limit, "{most} plugins ran at once, past --max-concurrency {limit}: {counts:?}");
    }
}

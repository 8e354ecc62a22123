//! `gate -o prometheus` on a real cluster: the exposition is parsed and linted by Prometheus'
//! own code (`testcluster metricscheck`: prometheus/common's expfmt text parser and
//! client_golang's promlint, the linter behind `promtool check metrics`), and its values are
//! checked against the objects as kubectl reads them: the Lease's renewTime and
//! leaseDurationSeconds, the Workloads created, the contexts of a fleet.

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use support::fixtures::{self, Scenario};
use support::{Cluster, Run, plugin_path, repo};

/// The families of one exposition, as Prometheus' parser read them.
struct Families(Vec<Value>);

impl Families {
    /// Parses `text` with `testcluster metricscheck`; panics with its complaint when the
    /// parser or the linter refuses it.
    fn parse(text: &str) -> Families {
        use std::io::Write;
        let mut child = Command::new(repo().join("tests/cluster/testcluster"))
            .arg("metricscheck")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start tests/cluster/testcluster metricscheck");
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "Prometheus' parser refused the exposition: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        Families(serde_json::from_slice(&out.stdout).expect("metricscheck prints JSON"))
    }

    /// The value of the one sample of `name` whose labels include `labels`; `None` when there
    /// is none (panics when several match).
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let family = self.0.iter().find(|f| f["name"] == name)?;
        assert_eq!(family["type"], "GAUGE", "{name}");
        assert!(!family["help"].as_str().unwrap_or_default().is_empty(), "{name} has no HELP");
        let hits: Vec<f64> = family["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| labels.iter().all(|(k, v)| m["labels"][*k] == *v))
            .map(|m| m["value"].as_f64().unwrap())
            .collect();
        assert!(hits.len() <= 1, "{name}{labels:?} matches {} samples", hits.len());
        hits.first().copied()
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or_else(|| panic!("no sample {name}{labels:?} in {:#}", json!(self.0)))
    }

    /// The label value whose state-set sample is 1, among `values` of `label`.
    fn state(&self, name: &str, labels: &[(&str, &str)], label: &str, values: &[&str]) -> String {
        let on: Vec<&str> = values
            .iter()
            .copied()
            .filter(|v| {
                let mut l = labels.to_vec();
                l.push((label, v));
                self.value(name, &l) == 1.0
            })
            .collect();
        assert_eq!(on.len(), 1, "{name}{labels:?}: exactly one {label} is 1, got {on:?}");
        on[0].to_string()
    }

    fn contexts(&self) -> BTreeMap<String, f64> {
        let family = self.0.iter().find(|f| f["name"] == "kubectl_dispatch_gate_evaluation_success").unwrap();
        family["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["labels"]["context"].as_str().unwrap().to_string(), m["value"].as_f64().unwrap()))
            .collect()
    }
}

const VERDICTS: &[&str] = &["yes", "no", "unknown"];
const STATUSES: &[&str] = &["fresh", "stale", "no holder", "never renewed", "missing", "forbidden"];

/// The Lease as kubectl reads it: renewTime as Unix seconds, and leaseDurationSeconds.
fn lease_on_cluster(c: &Cluster, s: &Scenario) -> (f64, f64) {
    let text = c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "json"], None);
    let v: Value = serde_json::from_str(&text).unwrap();
    let renewed: Timestamp = v["spec"]["renewTime"].as_str().unwrap().parse().unwrap();
    (renewed.as_microsecond() as f64 / 1e6, v["spec"]["leaseDurationSeconds"].as_f64().unwrap())
}

/// Workloads in `ns` that reserved quota in `cq` and are Pending at `check`, as kubectl lists them.
fn stalled_on_cluster(c: &Cluster, ns: &str, cq: &str, check: &str) -> usize {
    let text = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", ns, "-o", "json"], None);
    let v: Value = serde_json::from_str(&text).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["status"]["admission"]["clusterQueue"] == cq)
        .filter(|w| {
            w["status"]["admissionChecks"]
                .as_array()
                .is_some_and(|checks| checks.iter().any(|k| k["name"] == check && k["state"] == "Pending"))
        })
        .count()
}

fn now_seconds() -> f64 {
    Timestamp::now().as_microsecond() as f64 / 1e6
}

#[test]
fn gate_metrics_parse_with_prometheus_and_match_the_cluster() {
    let c = Cluster::shared();
    let s = Scenario::new("metrics");
    c.apply(&s.healthy_yaml());
    for name in ["train-1", "train-2"] {
        c.apply(&fixtures::workload(&s.ns, name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
    }
    // Before quota: not waiting at dispatch's check.
    c.apply(&fixtures::workload(&s.ns, "queued", &s.lq, None, &[(&s.check, "Pending", "", 30)]));
    let context = c.kubectl_ok(&["config", "current-context"], None).trim().to_string();

    let before = now_seconds();
    let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "prometheus"]));
    let after = now_seconds();
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let m = Families::parse(&run.stdout);
    let cq: &[(&str, &str)] = &[("context", &context), ("cluster_queue", &s.cq)];
    assert_eq!(m.contexts(), BTreeMap::from([(context.clone(), 1.0)]));
    assert_eq!(m.state("kubectl_dispatch_gate_verdict", cq, "verdict", VERDICTS), "yes");
    for check in ["listed", "controllerName", "active", "leaseHeartbeat"] {
        let mut labels = cq.to_vec();
        labels.push(("check", check));
        assert_eq!(m.state("kubectl_dispatch_gate_check", &labels, "result", &["pass", "fail", "unknown"]), "pass");
    }
    // The waiting count is the Workloads created with reserved quota, as kubectl lists them.
    assert_eq!(stalled_on_cluster(c, &s.ns, &s.cq, &s.check), 2);
    assert_eq!(m.value("kubectl_dispatch_waiting_workloads", cq), 2.0);

    // The Lease's values against the object.
    let lease: &[(&str, &str)] = &[("context", &context), ("lease", &s.lease)];
    let (renewed, duration) = lease_on_cluster(c, &s);
    let evaluated = m.value("kubectl_dispatch_gate_evaluated_timestamp_seconds", &[("context", &context)]);
    assert!(before - 0.001 <= evaluated && evaluated <= after + 0.001, "{before} <= {evaluated} <= {after}");
    assert!((m.value("kubectl_dispatch_lease_renew_time_seconds", lease) - renewed).abs() < 1e-6);
    let age = m.value("kubectl_dispatch_lease_renewal_age_seconds", lease);
    assert!((age - (evaluated - renewed)).abs() < 1e-3, "age {age} = {evaluated} - {renewed}");
    assert_eq!(m.value("kubectl_dispatch_lease_limit_seconds", lease), 2.0 * duration);
    assert_eq!(m.state("kubectl_dispatch_lease_status", lease, "status", STATUSES), "fresh");

    // Stale: renewed 90 s ago. The exit code stays the gate's.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl_1"), Some(90), Some(15)));
    let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "prometheus"]));
    run.expect_code(3);
    let m = Families::parse(&run.stdout);
    assert_eq!(m.state("kubectl_dispatch_gate_verdict", cq, "verdict", VERDICTS), "no");
    let mut heartbeat = cq.to_vec();
    heartbeat.push(("check", "leaseHeartbeat"));
    assert_eq!(m.state("kubectl_dispatch_gate_check", &heartbeat, "result", &["pass", "fail", "unknown"]), "fail");
    assert_eq!(m.state("kubectl_dispatch_lease_status", lease, "status", STATUSES), "stale");
    let (renewed, _) = lease_on_cluster(c, &s);
    let evaluated = m.value("kubectl_dispatch_gate_evaluated_timestamp_seconds", &[("context", &context)]);
    let age = m.value("kubectl_dispatch_lease_renewal_age_seconds", lease);
    assert!((age - (evaluated - renewed)).abs() < 1e-3 && age > 90.0, "age {age}");
    assert!(age > m.value("kubectl_dispatch_lease_limit_seconds", lease), "the alert rule's comparison holds");

    // No Lease at all: its status says so, and there is no age to report.
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "prometheus"]));
    run.expect_code(3);
    let m = Families::parse(&run.stdout);
    assert_eq!(m.state("kubectl_dispatch_lease_status", lease, "status", STATUSES), "missing");
    assert_eq!(m.get("kubectl_dispatch_lease_renewal_age_seconds", lease), None);
    assert_eq!(m.get("kubectl_dispatch_lease_limit_seconds", lease), None);
}

/// A kubeconfig with the shared cluster's contexts, and two more: `partial`, admin's
/// credentials impersonating `user`, who may read everything but Workloads; and `refused`, a
/// server on a loopback port nothing listens on.
fn kubeconfig_with_partial(c: &Cluster, user: &str) -> std::path::PathBuf {
    let text = c.kubectl_ok(&["config", "view", "--raw", "-o", "json"], None);
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let admin = v["contexts"].as_array().unwrap().iter().find(|x| x["name"] == "admin").unwrap().clone();
    let admin_user = admin["context"]["user"].as_str().unwrap().to_string();
    let mut creds = v["users"].as_array().unwrap().iter().find(|u| u["name"] == admin_user).unwrap()["user"].clone();
    creds["as"] = json!(user);
    v["users"].as_array_mut().unwrap().push(json!({"name": "partial", "user": creds}));
    let cluster = admin["context"]["cluster"].clone();
    v["contexts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "partial", "context": {"cluster": cluster, "user": "partial"}}));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = json!({"name": "refused", "cluster": {"server": format!("https://127.0.0.1:{port}")}});
    v["clusters"].as_array_mut().unwrap().push(refused);
    v["contexts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "refused", "context": {"cluster": "refused", "user": "partial"}}));
    let dir = std::env::temp_dir().join(support::unique("dispatch-metrics"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

/// Read rights for `user`: Kueue's ClusterQueues, AdmissionChecks and LocalQueues, and Leases
/// in `lease_ns`, but not Workloads.
fn rbac_without_workloads(user: &str, lease_ns: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {user}\nrules:\n- apiGroups: [\"kueue.x-k8s.io\"]\n  resources: [\"clusterqueues\", \"admissionchecks\", \"localqueues\"]\n  verbs: [\"get\", \"list\", \"watch\"]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {user}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {user}\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {user}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {user}\n  namespace: {lease_ns}\nrules:\n- apiGroups: [\"coordination.k8s.io\"]\n  resources: [\"leases\"]\n  verbs: [\"get\", \"list\", \"watch\"]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {user}\n  namespace: {lease_ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {user}\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {user}\n---\n"
    )
}

#[test]
fn fleet_metrics_and_each_contexts_warnings() {
    let c = Cluster::shared();
    let s = Scenario::new("fleetmetrics");
    let user = support::unique("partial-reader");
    c.apply(&s.healthy_yaml());
    c.apply(&rbac_without_workloads(&user, &s.lease_ns));
    c.apply(&fixtures::workload(&s.ns, "stuck", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
    let kubeconfig = kubeconfig_with_partial(c, &user);
    let run = |args: &[&str]| -> Run {
        // A fresh renewal, so admin's verdict is yes whatever the time since the scenario began.
        c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl_1"), Some(1), Some(15)));
        let mut full = vec!["dispatch"];
        full.extend(s.args("gate", args));
        let out = Command::new("kubectl")
            .args(&full)
            .env("KUBECONFIG", &kubeconfig)
            .env("PATH", plugin_path())
            .output()
            .unwrap();
        Run::from(out)
    };
    // admin: yes; viewer: unknown (it may read only the Lease named dispatch-admission);
    // partial: yes, but its Workloads may not be listed. The worst verdict is unknown: exit 4.
    let contexts = ["--context", "admin", "--context", "viewer", "--context", "partial", "-A"];
    let mut args = contexts.to_vec();
    args.extend(["-o", "prometheus"]);
    let prom = run(&args);
    prom.expect_code(4);
    let m = Families::parse(&prom.stdout);
    assert_eq!(m.contexts(), BTreeMap::from([("admin".into(), 1.0), ("partial".into(), 1.0), ("viewer".into(), 1.0)]));
    let verdict = |ctx: &str| {
        m.state("kubectl_dispatch_gate_verdict", &[("context", ctx), ("cluster_queue", &s.cq)], "verdict", VERDICTS)
    };
    assert_eq!(
        (verdict("admin"), verdict("viewer"), verdict("partial")),
        ("yes".into(), "unknown".into(), "yes".into())
    );
    let lease_of = |ctx: &'static str| [("context", ctx), ("lease", s.lease.as_str())];
    assert_eq!(m.state("kubectl_dispatch_lease_status", &lease_of("viewer"), "status", STATUSES), "forbidden");
    assert_eq!(m.get("kubectl_dispatch_lease_renewal_age_seconds", &lease_of("viewer")), None);
    assert!(m.get("kubectl_dispatch_lease_renewal_age_seconds", &lease_of("partial")).is_some());
    let waiting =
        |ctx: &'static str| m.get("kubectl_dispatch_waiting_workloads", &[("context", ctx), ("cluster_queue", &s.cq)]);
    assert_eq!((waiting("admin"), waiting("viewer"), waiting("partial")), (Some(1.0), Some(1.0), None));
    let rule = "cannot show waiting Workloads: missing RBAC: list workloads.kueue.x-k8s.io";
    assert!(
        prom.stderr.lines().any(|l| l.starts_with(&format!("Warning: context partial: {rule}"))),
        "the partial context's warning, prefixed by it:\n{}",
        prom.stderr
    );

    // The table keeps the warning too, and its rows agree with the metrics.
    let table = run(&contexts);
    table.expect_code(4);
    assert_eq!(
        table.stderr.lines().filter(|l| l.starts_with("Warning: context ")).collect::<Vec<_>>(),
        prom.stderr.lines().filter(|l| l.starts_with("Warning: context ")).collect::<Vec<_>>(),
        "{}",
        table.stderr
    );
    let rows: Vec<Vec<&str>> = table.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    // Each context's rows come as it is judged, so in no fixed order after the header.
    let partial = rows.iter().find(|r| r[0] == "partial").unwrap_or_else(|| panic!("{}", table.stdout));
    assert_eq!(partial[..3], ["partial", s.cq.as_str(), "yes"]);
    assert_eq!(partial.last(), Some(&"?"));

    // --all-contexts covers every context of the kubeconfig; one that cannot be judged is a 0
    // with its error on stderr (no row carries it), and the exit says a context failed (1).
    let all = run(&["--all-contexts", "-A", "-o", "prometheus", "--request-timeout", "5s"]);
    all.expect_code(1);
    let m = Families::parse(&all.stdout);
    for ctx in ["admin", "viewer", "no-lease", "partial"] {
        assert_eq!(m.contexts().get(ctx), Some(&1.0), "{ctx} in {:?}", m.contexts());
    }
    assert_eq!(m.contexts().get("refused"), Some(&0.0));
    assert_eq!(m.get("kubectl_dispatch_gate_evaluated_timestamp_seconds", &[("context", "refused")]), None);
    assert!(all.stderr.lines().any(|l| l.starts_with("error: context refused: ")), "{}", all.stderr);
    std::fs::remove_dir_all(kubeconfig.parent().unwrap()).unwrap();
}

/// Every golden exposition parses and lints with Prometheus' own code too.
#[test]
fn golden_expositions_parse_with_prometheus() {
    let dir = repo().join("tests/golden");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "prom") {
            let text = std::fs::read_to_string(&path).unwrap();
            let m = Families::parse(&text);
            assert!(!m.contexts().is_empty(), "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} golden expositions");
    // The escaped context name reads back as it was written.
    let m = Families::parse(&std::fs::read_to_string(dir.join("fleet.prom")).unwrap());
    assert_eq!(m.contexts().get("lab \"b\"\\\n2"), Some(&1.0));
    assert_eq!(m.contexts().get("edge"), Some(&0.0));
}

//! An operator's first hour on the real test cluster: a stale Lease ends with the next step, a
//! typo is told from an outage (stderr and reasonCode), a namespace with none waiting points
//! at -A, `lease NAME -n NS` reads what `kubectl get lease NAME -n NS` reads, one-shot lease
//! says forbidden and missing on stderr, a --wait that times out says so, and an
//! --admission-check that matches nothing says "did you mean".

mod support;

use support::fixtures::{self, Scenario};
use support::{Cluster, Run};

fn gate(c: &Cluster, s: &Scenario, extra: &[&str]) -> Run {
    c.dispatch(&s.args("gate", extra))
}

#[test]
fn a_stale_lease_ends_with_the_next_step_and_other_namespaces_point_at_all() {
    let c = Cluster::shared();
    let s = Scenario::new("first-stale");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("gone-pod-1_a"), Some(125), Some(15)));
    c.apply(&fixtures::workload(&s.ns, "job-a", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 60)]));
    let run = gate(c, &s, &["-A"]);
    run.expect_code(3);
    // The holder's pod, read for the default view now that the Lease decides; then the steps.
    run.expect_line(&format!("pod gone-pod-1 is gone: no pod of that name in namespace {}", s.lease_ns));
    run.expect_line("Next:");
    run.expect_line(&format!("  kubectl get pods -n {}", s.lease_ns));
    run.expect_line(&format!("  kubectl dispatch workload job-a -n {}", s.ns));
    run.expect_line("  kubectl dispatch doctor");
    assert!(!run.stdout.contains("Active alone proves nothing"), "{}", run.stdout);
    let json = gate(c, &s, &["-A", "-o", "json"]).json();
    assert_eq!(json["chains"][0]["reasonCode"], "LeaseStale", "{json}");

    // In a namespace where none waits, the count elsewhere and -A.
    let run = gate(c, &s, &["-n", "default"]);
    assert!(run.stderr.contains("No workloads wait at dispatch's check in namespace default."), "{}", run.stderr);
    assert!(run.stderr.contains("1 workload waits in other namespaces: use -A to see them."), "{}", run.stderr);
}

#[test]
fn a_typo_says_so_on_stderr_and_in_its_reason_code() {
    let c = Cluster::shared();
    let s = Scenario::new("first-typo");
    c.apply(&s.healthy_yaml());
    let typo = format!("{}x", s.cq);
    let run = gate(c, &s, &["--cluster-queue", &typo]);
    run.expect_code(3);
    run.expect_line(&format!("ReadmissionGate: no (observe-only): ClusterQueue {typo} does not exist"));
    assert!(
        run.stderr.contains(&format!("Warning: ClusterQueue {typo} does not exist; did you mean {}?", s.cq)),
        "{}",
        run.stderr
    );
    let reached: Vec<&str> = run.lines().into_iter().filter(|l| l.contains("   not reached   ")).collect();
    assert_eq!(reached.len(), 3, "{}", run.stdout);
    let json = gate(c, &s, &["--cluster-queue", &typo, "-o", "json"]).json();
    assert_eq!(json["chains"][0]["reasonCode"], "ClusterQueueNotFound");
    assert_eq!(json["chains"][0]["checks"][1]["reached"], false);

    // A Lease that does not exist: the adapter's verdict, and the Leases there are.
    let missing = format!("{}/{}x", s.lease_ns, s.lease_name);
    let run = c.dispatch(&["gate", "--controller-name", &s.controller, "--lease", &missing]);
    run.expect_code(3);
    assert!(run.stderr.contains(&format!("did you mean {}?", s.lease_name)), "{}", run.stderr);
}

/// `--admission-check` that matches nothing: the adapter's verdict on stdout, and on stderr
/// the typo said as a typo with the closest AdmissionCheck there is, as `--cluster-queue` and
/// `--lease` say theirs.
#[test]
fn an_admission_check_typo_says_did_you_mean() {
    let c = Cluster::shared();
    let s = Scenario::new("first-check");
    c.apply(&s.healthy_yaml());
    let typo = format!("{}x", s.check);
    let run = gate(c, &s, &["--admission-check", &typo]);
    run.expect_code(3);
    run.expect_line(&format!("ReadmissionGate: no (observe-only): no ClusterQueue lists AdmissionCheck {typo}"));
    let want = format!("Warning: AdmissionCheck {typo} does not exist; did you mean {}?", s.check);
    assert!(run.stderr.lines().any(|l| l.starts_with(&want)), "{}", run.stderr);
    assert!(!run.stdout.contains("did you mean"), "the hint is for stderr:\n{}", run.stdout);
    let json = gate(c, &s, &["--admission-check", &typo, "-o", "json"]);
    assert_eq!(json.json()["chains"][0]["reasonCode"], "NoClusterQueueListsCheck");
    assert!(json.stderr.contains(&want), "{}", json.stderr);
    // The name that is there says nothing of the kind.
    let right = gate(c, &s, &["--admission-check", &s.check]);
    right.expect_code(0);
    assert!(!right.stderr.contains("did you mean"), "{}", right.stderr);
}

#[test]
fn lease_name_and_namespace_as_kubectl_get_lease() {
    let c = Cluster::shared();
    let s = Scenario::new("first-lease");
    c.apply(&s.healthy_yaml());
    // kubectl's answer for the same words, side by side.
    let kubectl = c
        .kubectl_ok(&["get", "lease", &s.lease_name, "-n", &s.lease_ns, "-o", "jsonpath={.spec.holderIdentity}"], None);
    let run = c.dispatch(&["lease", &s.lease_name, "-n", &s.lease_ns, "-o", "json"]);
    run.expect_code(0);
    assert_eq!(run.json()["lease"]["holder"], kubectl.trim());
    let before = c.dispatch(&["-n", &s.lease_ns, "lease", &s.lease_name, "-o", "json"]);
    assert_eq!(before.json()["lease"]["holder"], kubectl.trim());
    // Missing: kubectl says NotFound; for the plugin it is a verdict (no): its row, exit 3, and
    // the reason on stderr, not an `error:` line.
    let nope = c.kubectl(&["get", "lease", "nope", "-n", &s.lease_ns], None);
    assert!(!nope.status.success());
    let run = c.dispatch(&["lease", "nope", "-n", &s.lease_ns]);
    run.expect_code(3);
    assert!(run.stderr.starts_with(&format!("Lease {}/nope does not exist", s.lease_ns)), "{}", run.stderr);
    assert!(!run.stderr.contains("error:"), "{}", run.stderr);
}

#[test]
fn one_shot_lease_forbidden_says_what_the_watch_says() {
    let c = Cluster::shared();
    let run = c.dispatch(&["--context", "nobody", "lease"]);
    run.expect_code(4);
    // The first line is the watch's and kubectl's: the server's words.
    let words = "leases.coordination.k8s.io \"dispatch-admission\" is forbidden: User \"nobody\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"dispatch-system\"";
    assert!(
        run.stderr.contains(&format!("error: {words}\nmissing RBAC: get leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system")),
        "{}",
        run.stderr
    );
    let kubectl =
        c.kubectl(&["--context", "nobody", "get", "lease", "-n", "dispatch-system", "dispatch-admission"], None);
    assert!(String::from_utf8_lossy(&kubectl.stderr).contains(words), "kubectl says the same: {kubectl:?}");
    let watch = c.dispatch(&["--context", "nobody", "lease", "--watch", "--timeout", "5s"]);
    watch.expect_code(4);
    assert!(watch.stderr.starts_with(&format!("error: {words}\n")), "{}", watch.stderr);
}

#[test]
fn gate_wait_timeout_says_so() {
    let c = Cluster::shared();
    let s = Scenario::new("first-wait");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("pod-1_a"), Some(125), Some(15)));
    let run = gate(c, &s, &["--wait", "--timeout", "3s"]);
    run.expect_code(3);
    assert!(
        run.stderr.contains("error: timed out waiting for the gate to be yes (--timeout 3s; last: no)"),
        "{}",
        run.stderr
    );
}

#[test]
fn lease_until_timeout_says_so() {
    let c = Cluster::shared();
    let s = Scenario::new("first-until");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("pod-1_a"), Some(0), Some(3600)));
    let run = c.dispatch(&s.args("lease", &["--watch", "--until", "stale", "--timeout", "3s"]));
    run.expect_code(5);
    let want = format!("error: timed out waiting for Lease {} to be stale (--timeout 3s; last: fresh)", s.lease);
    assert!(run.stderr.contains(&want), "{}", run.stderr);
}

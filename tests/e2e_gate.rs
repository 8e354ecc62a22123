//! `kubectl dispatch gate` end to end on the real test cluster, one test per path.

mod support;

use support::fixtures::{self, Scenario, gate};
use support::{Cluster, Run};

#[test]
fn healthy_gate_says_yes_and_the_adapter_writes() {
    let c = Cluster::shared();
    let s = Scenario::new("healthy");
    c.apply(&s.healthy_yaml());
    let run = gate(c, &s, &[]);
    run.expect_code(0);
    run.expect_line(&format!("ClusterQueue {}, AdmissionCheck {}, Lease {}", s.cq, s.check, s.lease));
    run.expect_line("ReadmissionGate: yes (the adapter writes)");
    // Always true, so said in -o wide (and docs/design.md), not under every default gate.
    assert!(!run.stdout.contains("note: Active alone proves nothing"), "{}", run.stdout);
    assert!(gate(c, &s, &["-o", "wide"]).stdout.contains("note: Active alone proves nothing"));
    let checks: Vec<&str> = run.lines().iter().filter(|l| l.starts_with(['1', '2', '3', '4'])).copied().collect();
    assert_eq!(checks.len(), 4, "{}", run.stdout);
    assert!(checks.iter().all(|l| l.contains("   pass   ")), "{}", run.stdout);
    assert!(checks[3].contains("holder dispatch-admission-7d9f_1, renewed "), "{}", checks[3]);
    assert!(checks[3].contains("limit 30s, stale in "), "{}", checks[3]);

    let json = gate(c, &s, &["-o", "json"]).json();
    assert_eq!(json["schema"], "kubectl-dispatch/v1");
    assert_eq!(json["verdict"], "yes");
    assert_eq!(json["mode"], "writes");
    assert_eq!(json["chains"][0]["clusterQueue"], s.cq.as_str());
    assert_eq!(json["lease"]["status"], "fresh");
    assert_eq!(json["lease"]["holder"], "dispatch-admission-7d9f_1");
    assert_eq!(json["lease"]["limitSeconds"], 30);
}

#[test]
fn a_check_not_listed_fails_the_first_check() {
    let c = Cluster::shared();
    let s = Scenario::new("unlisted");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::cluster_queue(&s.cq, &[]));
    let run = gate(c, &s, &["-o", "json"]);
    run.expect_code(3);
    let json = run.json();
    let want = format!("no ClusterQueue lists an AdmissionCheck whose controllerName is {}", s.controller);
    assert_eq!(json["chains"][0]["checks"][0]["result"], "fail");
    assert_eq!(json["chains"][0]["reason"], want.as_str());

    let named = gate(c, &s, &["--cluster-queue", &s.cq]);
    named.expect_code(3).expect_line(&format!(
        "ReadmissionGate: no (observe-only): ClusterQueue {} does not list an AdmissionCheck whose controllerName is {}",
        s.cq, s.controller
    ));
}

#[test]
fn a_wrong_controller_name_fails_the_second_check() {
    let c = Cluster::shared();
    let s = Scenario::new("wrongctl");
    c.apply(&s.healthy_yaml());
    let other = fixtures::admission_check(&format!("{}-other", s.check), "example.com/someone-else", Some(true));
    let cq = format!("{}-other", s.cq);
    c.apply(&(other + &fixtures::cluster_queue(&cq, &[&format!("{}-other", s.check)])));
    let run = gate(c, &s, &["--admission-check", &format!("{}-other", s.check)]);
    run.expect_code(3).expect_line(&format!(
        "ReadmissionGate: no (observe-only): AdmissionCheck {}-other names controller \"example.com/someone-else\", not {}",
        s.check, s.controller
    ));
}

#[test]
fn an_inactive_check_and_a_check_without_active_fail_the_third_check() {
    let c = Cluster::shared();
    let s = Scenario::new("inactive");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::admission_check(&s.check, &s.controller, Some(false)));
    gate(c, &s, &[]).expect_code(3).expect_line(&format!(
        "ReadmissionGate: no (observe-only): AdmissionCheck {} is not Active (Active=False, ControllerDown: The controller stopped)",
        s.check
    ));

    // Two failures: the first decides, and the check after it, a stale Lease here, is not
    // reached (its detail still says what was seen; JSON keeps its result).
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-0_x"), Some(600), Some(15)));
    let run = gate(c, &s, &[]);
    run.expect_code(3);
    let row4 = run.lines().into_iter().find(|l| l.starts_with("4 ")).unwrap().to_string();
    assert!(row4.contains("   not reached   holder ctl-0_x, renewed 10m ago, limit 30s, stale for 9m"), "{row4}");
    let json = gate(c, &s, &["-o", "json"]).json();
    assert_eq!(
        (&json["chains"][0]["checks"][3]["reached"], &json["chains"][0]["checks"][3]["result"]),
        (&serde_json::json!(false), &serde_json::json!("fail"))
    );

    let t = Scenario::new("noactive");
    c.apply(&t.healthy_yaml().replace(&fixtures::admission_check(&t.check, &t.controller, Some(true)), ""));
    c.apply(&fixtures::admission_check(&t.check, &t.controller, None));
    gate(c, &t, &[]).expect_code(3).expect_line(&format!(
        "ReadmissionGate: no (observe-only): AdmissionCheck {} has no Active condition",
        t.check
    ));
}

fn lease_case(tag: &str, lease_yaml: impl Fn(&Scenario) -> String, want: &str, code: i32) {
    let c = Cluster::shared();
    let s = Scenario::new(tag);
    c.apply(&s.healthy_yaml());
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    let yaml = lease_yaml(&s);
    if !yaml.is_empty() {
        c.apply(&yaml);
    }
    let run = gate(c, &s, &[]);
    run.expect_code(code);
    let want = want.replace("{lease}", &s.lease);
    run.expect_line(&format!("ReadmissionGate: no (observe-only): {want}"));
}

#[test]
fn a_missing_lease_says_so() {
    lease_case("nolease", |_| String::new(), "Lease {lease} does not exist", 3);
}

#[test]
fn a_lease_without_holder_has_no_holder() {
    lease_case(
        "noholder",
        |s| fixtures::lease(&s.lease_ns, &s.lease_name, None, Some(1), Some(15)),
        "the admission controller's Lease has no holder",
        3,
    );
    lease_case(
        "released",
        |s| fixtures::lease(&s.lease_ns, &s.lease_name, Some(""), Some(1), Some(1)),
        "the admission controller's Lease has no holder",
        3,
    );
}

#[test]
fn a_lease_never_renewed_says_so() {
    lease_case(
        "never",
        |s| fixtures::lease(&s.lease_ns, &s.lease_name, Some("pod-1_a"), None, Some(15)),
        "the admission controller's Lease has never been renewed",
        3,
    );
}

#[test]
fn a_stale_lease_closes_the_gate_and_names_the_stall() {
    let c = Cluster::shared();
    let s = Scenario::new("stale");
    c.apply(&s.healthy_yaml());
    let written = std::time::Instant::now();
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("pod-1_a"), Some(125), Some(15)));
    c.apply(&fixtures::workload(
        &s.ns,
        "job-a",
        &s.lq,
        Some(&s.cq),
        &[(&s.check, "Pending", "waiting for dispatch", 60)],
    ));
    let run = gate(c, &s, &["-n", &s.ns]);
    run.expect_code(3);
    let verdict = run.lines().into_iter().find(|l| l.starts_with("ReadmissionGate:")).unwrap().to_string();
    // Renewed 125 s before the fixture was written; the seconds this test took since then
    // (a loaded machine) add to the age, so each of those ages is the exact line to expect.
    let waited = written.elapsed().as_secs() as i64 + 1;
    let expected: Vec<String> = (125..=125 + waited)
        .map(|age| {
            format!(
                "ReadmissionGate: no (observe-only): the admission controller's Lease was last renewed {}m{}s ago, beyond 30s",
                age / 60,
                age % 60
            )
        })
        .collect();
    assert!(expected.contains(&verdict), "{verdict}");
    run.expect_line("1 workload waits at dispatch's Pending check; the controller's Lease is stale");
    let json = gate(c, &s, &["-n", &s.ns, "-o", "json"]).json();
    assert_eq!(json["lease"]["status"], "stale");
    assert_eq!(json["waiting"][0]["name"], "job-a");
    assert_eq!(json["waiting"][0]["message"], "waiting for dispatch");
    assert_eq!(json["waiting"][0]["clusterQueue"], s.cq.as_str());
    assert_eq!(json["summary"], "1 workload waits at dispatch's Pending check; the controller's Lease is stale");
}

#[test]
fn a_forbidden_lease_gives_unknown_and_names_the_rule() {
    let c = Cluster::shared();
    let s = Scenario::new("forbidden");
    c.apply(&s.healthy_yaml());
    let run = gate(c, &s, &["--context", "no-lease"]);
    run.expect_code(4);
    run.expect_line(&format!(
        "ReadmissionGate: unknown (observe-only): Lease is a live heartbeat: cannot be read without RBAC: get leases.coordination.k8s.io {:?} in namespace dispatch-system",
        s.lease_name
    ));
}

#[test]
fn the_viewer_user_has_exactly_what_the_plugin_needs() {
    // The only test that uses the default Lease, dispatch-system/dispatch-admission, which the
    // viewer Role names.
    let c = Cluster::shared();
    let s = Scenario::new("viewer");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease("dispatch-system", "dispatch-admission", Some("pod-v_1"), Some(1), Some(15)));
    let run = c.dispatch(&["gate", "--context", "viewer", "--controller-name", &s.controller, "-A"]);
    run.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    let lease = c.dispatch(&["lease", "--context", "viewer"]);
    lease.expect_code(0);
    assert!(lease.lines()[1].starts_with("dispatch-system/dispatch-admission   pod-v_1   "), "{}", lease.stdout);
}

#[test]
fn several_cluster_queues_each_get_a_chain() {
    let c = Cluster::shared();
    let s = Scenario::new("multi");
    c.apply(&s.healthy_yaml());
    let second = format!("{}-b", s.cq);
    c.apply(&fixtures::cluster_queue(&second, &[&s.check]));
    let json = gate(c, &s, &["-o", "json"]).json();
    let queues: Vec<&str> =
        json["chains"].as_array().unwrap().iter().map(|c| c["clusterQueue"].as_str().unwrap()).collect();
    assert_eq!(queues, vec![s.cq.as_str(), second.as_str()]);
    let missing = gate(c, &s, &["--cluster-queue", &s.cq, "--cluster-queue", "nope-queue"]);
    missing.expect_code(3);
    missing.expect_line("ReadmissionGate: yes (the adapter writes)");
    missing.expect_line("ReadmissionGate: no (observe-only): ClusterQueue nope-queue does not exist");
}

#[test]
fn waiting_workloads_follow_the_namespace_scope() {
    let c = Cluster::shared();
    let s = Scenario::new("scope");
    c.apply(&s.healthy_yaml());
    let other_ns = format!("{}-b", s.ns);
    c.apply(&fixtures::local_queue(&other_ns, &s.lq, &s.cq));
    c.apply(&fixtures::workload(&s.ns, "w-1", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "first", 30)]));
    c.apply(&fixtures::workload(&other_ns, "w-2", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "second", 30)]));
    c.apply(&fixtures::workload(&s.ns, "w-ready", &s.lq, Some(&s.cq), &[(&s.check, "Ready", "", 30)]));
    c.apply(&fixtures::workload(&s.ns, "w-retry", &s.lq, Some(&s.cq), &[(&s.check, "Retry", "try later", 30)]));
    c.apply(&fixtures::workload(&s.ns, "w-noquota", &s.lq, None, &[(&s.check, "Pending", "", 30)]));

    let names = |run: &Run| -> Vec<(String, String)> {
        run.json()["waiting"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["namespace"].as_str().unwrap().to_string(), w["name"].as_str().unwrap().to_string()))
            .collect()
    };
    let in_ns = gate(c, &s, &["-n", &s.ns, "-o", "json"]);
    assert_eq!(names(&in_ns), vec![(s.ns.clone(), "w-1".to_string())]);
    let all = gate(c, &s, &["-A", "-o", "json"]);
    assert_eq!(names(&all), vec![(s.ns.clone(), "w-1".to_string()), (other_ns.clone(), "w-2".to_string())]);
    let states = gate(c, &s, &["-n", &s.ns, "--all-states", "-o", "json"]);
    assert_eq!(
        names(&states),
        vec![(s.ns.clone(), "w-1".into()), (s.ns.clone(), "w-noquota".into()), (s.ns.clone(), "w-retry".into())]
    );
    assert_eq!(states.json()["waiting"][1]["clusterQueue"], s.cq.as_str(), "found through the LocalQueue");

    let table = gate(c, &s, &["-A"]);
    let header = table.lines().into_iter().find(|l| l.starts_with("NAMESPACE")).unwrap().to_string();
    assert!(header.split_whitespace().eq(["NAMESPACE", "NAME", "CLUSTERQUEUE", "CHECK", "STATE", "SINCE", "MESSAGE"]));
    let row: Vec<&str> = table.lines().into_iter().find(|l| l.contains(" w-1 ")).unwrap().split_whitespace().collect();
    assert_eq!(row[..5], [s.ns.as_str(), "w-1", s.cq.as_str(), s.check.as_str(), "Pending"], "{}", table.stdout);
    assert_eq!(row.last(), Some(&"first"));

    // A selector that matches none: the line says it looked with -l, not at every Workload.
    let none = gate(c, &s, &["-n", &s.ns, "-l", "app=x"]);
    none.expect_code(0);
    assert!(
        none.stderr.contains(&format!("No workloads wait at dispatch's check in namespace {} (-l app=x).\n", s.ns)),
        "{}",
        none.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// Kueue's remaining shapes: several of dispatch's checks on one ClusterQueue, onFlavors, and
// Kueue's own Active condition on the ClusterQueue
// ---------------------------------------------------------------------------------------------

/// The chain of checks as the operator compares them: everything but the Lease's ages.
fn chain_without_ages(json: &serde_json::Value) -> serde_json::Value {
    let mut chain = json["chains"][0].clone();
    chain["checks"].as_array_mut().unwrap().truncate(3);
    chain
}

#[test]
fn several_of_dispatchs_checks_on_one_cluster_queue_are_each_judged_in_either_order() {
    let c = Cluster::shared();
    let s = Scenario::new("several");
    c.apply(&s.healthy_yaml());
    let gpu = format!("{}-gpu", s.check);
    c.apply(&fixtures::admission_check(&gpu, &s.controller, Some(false)));
    let by_name = [s.check.as_str(), gpu.as_str()];
    let reason = format!("AdmissionCheck {gpu} is not Active (Active=False, ControllerDown: The controller stopped)");

    let mut chains = Vec::new();
    for listed in [[gpu.as_str(), s.check.as_str()], by_name] {
        c.kubectl_ok(&["delete", "clusterqueue", &s.cq, "--ignore-not-found"], None);
        c.apply(&fixtures::cluster_queue(&s.cq, &listed));
        let stored = c.kubectl_ok(
            &["get", "clusterqueue", &s.cq, "-o", "jsonpath={.spec.admissionChecksStrategy.admissionChecks[*].name}"],
            None,
        );
        assert_eq!(stored, listed.join(" "), "the ClusterQueue lists them in this order");
        let run = gate(c, &s, &[]);
        run.expect_code(3);
        run.expect_line(&format!("ClusterQueue {}, AdmissionChecks {}, {gpu}, Lease {}", s.cq, s.check, s.lease));
        run.expect_line(&format!("ReadmissionGate: no (observe-only): {reason}"));
        assert!(!run.stdout.contains("none found"), "{}", run.stdout);
        let json = gate(c, &s, &["-o", "json"]).json();
        assert_eq!(json["chains"].as_array().unwrap().len(), 1, "one chain for the ClusterQueue: {json}");
        let chain = &json["chains"][0];
        assert_eq!(chain["admissionChecks"], serde_json::json!(by_name));
        assert_eq!(chain["admissionCheck"], gpu.as_str(), "the check that decides");
        assert_eq!(chain["checks"][1]["result"], "pass");
        assert_eq!(
            chain["checks"][1]["detail"],
            format!("{} names {}; {gpu} names {}", s.check, s.controller, s.controller)
        );
        assert_eq!(chain["checks"][2]["reason"], reason.as_str());
        chains.push(chain_without_ages(&json));
    }
    assert_eq!(chains[0], chains[1], "the ClusterQueue's order changes nothing");

    // A ClusterQueue that is not there: both checks are still judged, never "none found".
    let run = gate(c, &s, &["--cluster-queue", &format!("{}-nope", s.cq), "-o", "json"]);
    run.expect_code(3);
    assert!(!run.stdout.contains("none found"), "{}", run.stdout);
    assert_eq!(run.json()["chains"][0]["admissionChecks"], serde_json::json!(by_name));

    // Both Active: yes.
    c.apply(&fixtures::admission_check(&gpu, &s.controller, Some(true)));
    gate(c, &s, &[]).expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
}

#[test]
fn on_flavors_show_in_check_1s_row_and_the_json() {
    let c = Cluster::shared();
    let s = Scenario::new("flavors");
    c.apply(&s.healthy_yaml());
    let flavors: &[&str] = &["default-flavor", "gpu-a100"];
    c.apply(&fixtures::cluster_queue_with("v1beta2", &s.cq, &[(&s.check, flavors), ("provisioning", &[])], None));
    let run = gate(c, &s, &[]);
    run.expect_code(0);
    let row = run.lines().into_iter().find(|l| l.starts_with("1 ")).unwrap().to_string();
    assert!(
        row.ends_with(&format!("   pass     {} lists {} (onFlavors: default-flavor, gpu-a100)", s.cq, s.check)),
        "{row}"
    );
    let json = gate(c, &s, &["-o", "json"]).json();
    assert_eq!(
        json["chains"][0]["admissionCheckRules"],
        serde_json::json!([{"name": s.check, "onFlavors": flavors}]),
        "dispatch's rules only"
    );
}

#[test]
fn kueues_active_condition_on_the_cluster_queue_shows_beside_check_3() {
    let c = Cluster::shared();
    let s = Scenario::new("cq-active");
    c.apply(&s.healthy_yaml());
    // dispatch's check is down, and Kueue has stopped the ClusterQueue because of it.
    c.apply(&fixtures::admission_check(&s.check, &s.controller, Some(false)));
    let message = format!("Can't admit new workloads: references inactive AdmissionCheck(s): {}.", s.check);
    let rules: &[(&str, &[&str])] = &[(&s.check, &[])];
    c.apply(&fixtures::cluster_queue_with(
        "v1beta2",
        &s.cq,
        rules,
        Some(("False", "AdmissionCheckInactive", &message)),
    ));
    let run = gate(c, &s, &[]);
    run.expect_code(3).expect_line(&format!(
        "ReadmissionGate: no (observe-only): AdmissionCheck {} is not Active (Active=False, ControllerDown: The controller stopped)",
        s.check
    ));
    let row = run.lines().into_iter().find(|l| l.starts_with("3 ")).unwrap().to_string();
    // RESULT is as wide as check 4's `not reached` (after check 3's failure, where the adapter stops).
    assert!(
        row.contains("   fail   ")
            && row.ends_with(&format!(
                "   Active=False, ControllerDown: The controller stopped; ClusterQueue {}: Active=False, AdmissionCheckInactive: {message}",
                s.cq
            )),
        "{row}"
    );
    let json = gate(c, &s, &["-o", "json"]).json();
    let active = &json["chains"][0]["clusterQueueActive"];
    assert_eq!(active["status"], "False", "{active}");
    assert_eq!(active["reason"], "AdmissionCheckInactive", "{active}");
    assert_eq!(active["message"], message.as_str(), "{active}");
    assert!(active["lastTransitionTime"].is_string(), "{active}");

    // Kueue stopped the ClusterQueue for its own reasons: shown, and dispatch's gate still holds.
    c.apply(&fixtures::admission_check(&s.check, &s.controller, Some(true)));
    c.apply(&fixtures::cluster_queue_with(
        "v1beta2",
        &s.cq,
        rules,
        Some(("False", "Stopped", "Can't admit new workloads: is stopped.")),
    ));
    let run = gate(c, &s, &[]);
    run.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(
        run.stdout.contains(&format!(
            "; ClusterQueue {}: Active=False, Stopped: Can't admit new workloads: is stopped.",
            s.cq
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn the_v1beta1_shapes_on_kueue_v0_14() {
    // v0.14.0 serves v1beta1 only: spec.admissionChecks, and admissionChecksStrategy with
    // onFlavors, each with Kueue's Active condition.
    let c = Cluster::start("v0.14.0");
    let s = Scenario::new("v1beta1");
    let gpu = format!("{}-gpu", s.check);
    let flavored = format!("{}-flavored", s.cq);
    let message = format!("Can't admit new workloads: references inactive AdmissionCheck(s): {gpu}.");
    let flavors: &[&str] = &["gpu-a100"];
    c.apply(
        &[
            fixtures::admission_check_of("v1beta1", &s.check, &s.controller, Some(true)),
            fixtures::admission_check_of("v1beta1", &gpu, &s.controller, Some(false)),
            fixtures::cluster_queue_v1beta1(
                &s.cq,
                &[&gpu, &s.check],
                Some(("False", "AdmissionCheckInactive", &message)),
            ),
            fixtures::cluster_queue_with(
                "v1beta1",
                &flavored,
                &[(&s.check, flavors)],
                Some(("True", "Ready", "Can admit new workloads")),
            ),
            fixtures::lease(&s.lease_ns, &s.lease_name, Some("pod-1_a"), Some(1), Some(15)),
        ]
        .concat(),
    );
    let run = gate(&c, &s, &["-o", "json"]);
    run.expect_code(3);
    let json = run.json();
    let chains = json["chains"].as_array().unwrap();
    let queues: Vec<&str> = chains.iter().map(|c| c["clusterQueue"].as_str().unwrap()).collect();
    assert_eq!(queues, [s.cq.as_str(), flavored.as_str()]);
    assert_eq!(chains[0]["admissionChecks"], serde_json::json!([s.check, gpu]));
    assert_eq!(
        chains[0]["reason"],
        format!("AdmissionCheck {gpu} is not Active (Active=False, ControllerDown: The controller stopped)")
    );
    assert_eq!(chains[0]["clusterQueueActive"]["reason"], "AdmissionCheckInactive");
    assert_eq!(chains[0]["clusterQueueActive"]["message"], message.as_str());
    assert_eq!(chains[1]["verdict"], "yes");
    assert_eq!(chains[1]["checks"][0]["detail"], format!("{flavored} lists {} (onFlavors: gpu-a100)", s.check));
    assert_eq!(chains[1]["admissionCheckRules"], serde_json::json!([{"name": s.check, "onFlavors": flavors}]));
    assert_eq!(chains[1]["clusterQueueActive"]["reason"], "Ready");
    c.stop();
}

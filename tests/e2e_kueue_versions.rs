//! Kueue's API as clusters serve it, each on a cluster of its own: no Kueue at all (the gate
//! says so in one line; the Lease needs no Kueue), Kueue's CRDs with objects of the wrong shape
//! (one line too), and Kueue v0.14.0's v1beta1 only, read with both ClusterQueue shapes.

mod support;

use std::time::Duration;

use support::fixtures::{self, Scenario};
use support::{Cluster, Run, eventually};

#[test]
fn without_kueue_the_gate_says_kueue_is_not_installed() {
    let c = Cluster::start("none");
    let run = c.dispatch(&["gate"]);
    Run::expect_one_error(
        &run,
        "error: Kueue is not installed: the API server does not serve the API group kueue.x-k8s.io",
    );
    assert_eq!(
        run.stderr.lines().nth(1),
        Some("install Kueue (its CRDs), or choose the cluster that runs it with --context")
    );
    // The Lease needs no Kueue.
    c.apply(&fixtures::lease("dispatch-system", "dispatch-admission", Some("p_1"), Some(1), Some(15)));
    c.dispatch(&["lease"]).expect_code(0);

    // A malformed object (permissive CRDs let a wrong type in) is one warning line.
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
    // One odd object never makes the whole list unreadable: it is said once, on stderr, and
    // left out; the gate judges the rest (here no ClusterQueue lists dispatch's check: no).
    let run = c.dispatch(&["gate"]);
    run.expect_code(3);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("Warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].starts_with("Warning: cannot read ClusterQueue \"broken\", left out: "), "{}", run.stderr);
    assert!(!run.stderr.contains("error:"), "{}", run.stderr);
    c.stop();
}

fn wait_until_served(c: &Cluster, path: &str) {
    eventually(&format!("{path} is served"), Duration::from_secs(20), || {
        let out = c.kubectl(&["get", "--raw", path], None);
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    });
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

//! Paging end to end on the real test cluster: with more Workloads than one LIST page (500),
//! `kubectl dispatch gate` still finds every one waiting at dispatch's Pending check.

mod support;

use std::collections::BTreeSet;

use support::Cluster;
use support::fixtures::{self, Scenario};

const TOTAL: usize = 1_100; // three pages of at most 500

/// A Workload with no status at all (as a Job's Workload is before Kueue reconciles it).
fn bare_workload(ns: &str, name: &str, lq: &str) -> String {
    let doc = fixtures::workload(ns, name, lq, None, &[]);
    let spec = doc.split("status:\n").next().expect("a Workload document");
    format!("{spec}---\n")
}

#[test]
fn every_waiting_workload_is_found_across_list_pages() {
    let c = Cluster::shared();
    let s = Scenario::new("paging");
    c.apply(&s.healthy_yaml());

    // Every 18th Workload waits, and so do the last of page one, the first of page two and
    // the very last; a few others hold the check Ready, or Pending before quota (not waiting).
    let mut bare = String::new();
    let mut with_status = String::new();
    let mut want = BTreeSet::new();
    for i in 0..TOTAL {
        let name = format!("w-{i:04}");
        if i % 18 == 0 || [499, 500, TOTAL - 1].contains(&i) {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]);
            want.insert(name);
        } else if i % 18 == 1 {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, Some(&s.cq), &[(&s.check, "Ready", "", 60)]);
        } else if i % 18 == 2 {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, None, &[(&s.check, "Pending", "", 60)]);
        } else {
            bare += &bare_workload(&s.ns, &name, &s.lq);
        }
    }
    // One kubectl call for all the objects, one for the statuses. --validate=false: kubectl's
    // client-side validation against the large Workload schema costs about 30 ms of CPU per
    // object (the apiserver still validates each one).
    let objects = format!("{bare}{with_status}");
    c.kubectl_ok(&["apply", "--server-side", "--validate=false", "-f", "-"], Some(&objects));
    c.kubectl_ok(
        &["apply", "--server-side", "--validate=false", "--subresource=status", "-f", "-"],
        Some(&with_status),
    );

    // Loading takes a while on a busy machine: renew the Lease, so the gate is yes.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(1), Some(15)));
    let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "json", "-v", "6"]));
    run.expect_code(0);
    let json = run.json();
    let found: BTreeSet<String> = json["waiting"]
        .as_array()
        .expect("waiting is a list")
        .iter()
        .map(|w| {
            assert_eq!(w["namespace"], s.ns.as_str());
            assert_eq!(w["state"], "Pending");
            w["name"].as_str().expect("a name").to_string()
        })
        .collect();
    assert_eq!(found.len(), json["waiting"].as_array().unwrap().len(), "a Workload is listed twice");
    assert_eq!(found, want, "the waiting Workloads across pages");

    let pages = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("I LIST ") && l.contains(&format!("/namespaces/{}/workloads?limit=500", s.ns)))
        .count();
    assert!(pages >= TOTAL.div_ceil(500), "{pages} LIST pages of Workloads, expected at least 3:\n{}", run.stderr);
}

//! The read-only proof, end to end: every request the plugin sends to the real test cluster,
//! as its audit log records them, is a get, a list or a watch.

mod support;

use support::Cluster;
use support::fixtures::{self, Scenario};

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
        s.args("workloads", &["-A"]),
        vec!["gate", "--context", "no-lease", "--controller-name", &s.controller],
    ] {
        c.dispatch(&args);
    }
    let events = c.plugin_events();
    let ours = events.len();
    for event in &events {
        let verb = event["verb"].as_str().unwrap_or_default();
        assert!(["get", "list", "watch"].contains(&verb), "a {verb} request: {event}");
    }
    assert!(ours >= 10, "only {ours} requests by kubectl-dispatch/ in the audit log");
}

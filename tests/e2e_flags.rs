//! kubectl's flags where kubectl takes them, on the real test cluster: gate's -n may come
//! before the verb, as kubectl's flags may, and reads the same namespace. (The flags a verb does
//! not use are usage errors, decided with no cluster: tests/cli_usage.rs.)

mod support;

use support::Cluster;
use support::fixtures::{self, Scenario};

/// gate's -n/-A may come before the verb, as kubectl's flags may.
#[test]
fn namespace_flags_before_the_verb_read_the_same_namespace() {
    let c = Cluster::shared();
    let s = Scenario::new("verbflags");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "w", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
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
}

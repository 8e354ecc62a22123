//! `kubectl dispatch lease` on the real test cluster: each status (fresh, forbidden, missing)
//! in JSON, in a table without headers and in the wide table.

mod support;

use support::Cluster;
use support::fixtures::Scenario;

#[test]
fn the_lease_verb_reports_each_status() {
    let c = Cluster::shared();
    let s = Scenario::new("leaseverb");
    c.apply(&s.healthy_yaml());
    let fresh = c.dispatch(&s.args("lease", &["-o", "json"]));
    fresh.expect_code(0);
    let json = fresh.json();
    assert_eq!(json["kind"], "LeaseReport");
    assert_eq!(json["lease"]["status"], "fresh");
    assert_eq!(json["lease"]["leaseDurationSeconds"], 15);
    assert_eq!(json["lease"]["leaseTransitions"], 2);
    let forbidden = c.dispatch(&s.args("lease", &["--context", "no-lease", "--no-headers"]));
    forbidden.expect_code(4);
    let cells: Vec<&str> = forbidden.stdout.split_whitespace().collect();
    assert_eq!(cells, vec![s.lease.as_str(), "<none>", "<none>", "<none>", "<none>", "forbidden", "<none>", "<none>"]);
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    let missing = c.dispatch(&s.args("lease", &["-o", "wide"]));
    missing.expect_code(3);
    assert!(
        missing.lines()[1].ends_with(&format!(
            "missing   <none>        <none>     <none>       <none>         Lease {} does not exist   <none>",
            s.lease
        )),
        "{}",
        missing.stdout
    );
}

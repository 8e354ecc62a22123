//! What a run leaves on stdout, on the real test cluster: `--no-headers` keeps it to table rows
//! as `kubectl get --no-headers` does (beside kubectl on the same objects), in the one-shot and
//! the live modes. (A closed stdout ending a run quietly is the fast tier's,
//! tests/inprocess_commands.rs.)

mod support;

use std::time::Duration;

use support::Cluster;
use support::fixtures::{self, Scenario};

/// `--no-headers` pipes like kubectl's: stdout has one table's rows and nothing else (gate's:
/// the waiting Workloads'; the chains with their check rows, notes and verdict lines go to
/// stderr), beside `kubectl get --no-headers` on the same objects.
#[test]
fn no_headers_prints_only_table_rows_like_kubectl() {
    let c = Cluster::shared();
    let s = Scenario::new("noheaders");
    c.apply(&s.healthy_yaml());
    for name in ["job-a", "job-b"] {
        c.apply(&fixtures::workload(&s.ns, name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 30)]));
    }
    let theirs = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "--no-headers"], None);
    let mut their_names: Vec<&str> = theirs.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    their_names.sort();
    assert_eq!(their_names, ["job-a", "job-b"], "kubectl prints one row per Workload:\n{theirs}");

    let ours = c.dispatch(&s.args("gate", &["-n", &s.ns, "--no-headers"]));
    ours.expect_code(0);
    let rows: Vec<Vec<&str>> = ours.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    // One table: a row per waiting Workload; no check row, title, note, verdict or blank line.
    assert_eq!(rows.len(), 2, "{}", ours.stdout);
    let mut our_names: Vec<&str> = rows.iter().map(|r| r[1]).collect();
    our_names.sort();
    assert_eq!(our_names, their_names, "{}", ours.stdout);
    assert!(rows.iter().all(|r| r[0] == s.ns && r[2] == s.cq), "{}", ours.stdout);
    // What `| awk '{print $1 "/" $2}'` makes of it: the Workloads, nothing else.
    let listed: Vec<String> = rows.iter().map(|r| format!("{}/{}", r[0], r[1])).collect();
    assert!(listed.iter().all(|l| l.starts_with(&format!("{}/job-", s.ns))), "{listed:?}");
    // The four check rows went to stderr, after the chain's title, before its verdict.
    let err: Vec<&str> = ours.stderr.lines().collect();
    let title = err.iter().position(|l| l.starts_with(&format!("ClusterQueue {}", s.cq))).expect("the title");
    for (i, line) in err[title + 1..title + 5].iter().enumerate() {
        assert_eq!(line.split_whitespace().next(), Some(&*(i + 1).to_string()), "{}", ours.stderr);
    }
    assert_eq!(err[title + 5], "ReadmissionGate: yes (the adapter writes)", "{}", ours.stderr);
    for line in ["ReadmissionGate: yes (the adapter writes)", "2 workloads wait at dispatch's Pending check"] {
        assert!(!ours.stdout.contains(line.split(':').next().unwrap()), "{line:?} on stdout:\n{}", ours.stdout);
    }
    assert!(ours.stderr.lines().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{}", ours.stderr);
    assert!(ours.stderr.lines().any(|l| l.starts_with(&format!("ClusterQueue {}", s.cq))), "{}", ours.stderr);
    // Without --no-headers the same lines are on stdout.
    let full = c.dispatch(&s.args("gate", &["-n", &s.ns]));
    full.expect_line("ReadmissionGate: yes (the adapter writes)");

    // `workload NAME`: one table on stdout too, its admission checks (here dispatch's, the one
    // check); the conditions and the gate's chain go to stderr.
    let one = c.dispatch(&s.args("workload", &["job-a", "-n", &s.ns, "--no-headers"]));
    let rows: Vec<Vec<&str>> = one.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 1, "one check row and nothing else:\n{}", one.stdout);
    assert_eq!(rows[0][0], s.check, "{}", one.stdout);
    assert!(one.stderr.lines().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{}", one.stderr);
    assert!(one.stderr.lines().any(|l| l.split_whitespace().next() == Some("4")), "the chain's rows: {}", one.stderr);

    // The Lease: one row each, with nothing else on stdout.
    let theirs = c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "--no-headers"], None);
    let ours = c.dispatch(&s.args("lease", &["--no-headers"]));
    ours.expect_code(0);
    assert_eq!((theirs.lines().count(), ours.lines().len()), (1, 1), "{theirs}\n{}", ours.stdout);
    assert_eq!(theirs.split_whitespace().next(), Some(s.lease_name.as_str()));
    assert_eq!(ours.stdout.split_whitespace().next(), Some(s.lease.as_str()));

    // A fleet: one row per context and ClusterQueue (a context named twice is judged once).
    let fleet = c.dispatch(&s.args("gate", &["--context", "admin", "--context", "admin", "--no-headers", "-A"]));
    fleet.expect_code(0);
    assert!(fleet.lines().iter().all(|l| l.starts_with("admin ")) && fleet.lines().len() == 1, "{}", fleet.stdout);
}

/// The live modes keep --no-headers' promise too: one table's rows on stdout (the watch's, its
/// checks; --wait's, as the one-shot gate's, the waiting Workloads), the rest on stderr.
#[test]
fn no_headers_with_watch_and_wait_keeps_stdout_to_rows() {
    use support::watch::Watch;
    let c = Cluster::shared();
    let s = Scenario::new("noheaderslive");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::workload(&s.ns, "job-1", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 5)]));
    let is_row = |l: &str| {
        let first = l.split_whitespace().next().unwrap_or_default();
        ["1", "2", "3", "4", s.ns.as_str()].contains(&first)
    };
    let mut w = Watch::start(c, &s.args("gate", &["--watch", "-A", "--no-headers"]));
    w.wait_for("the Lease check's row", Duration::from_secs(20), |l| l.starts_with("4 "));
    // The verdict and the waiting count follow the rows at once, on stderr.
    w.wait_for_stderr_any("the verdict", Duration::from_secs(20), |l| l == "ReadmissionGate: yes (the adapter writes)");
    w.wait_for_stderr_any("the waiting count", Duration::from_secs(20), |l| {
        l.ends_with(" 1 workload waits at dispatch's Pending check")
    });
    let (code, stdout, stderr) = w.stop();
    assert_eq!(code, 0);
    assert!(stdout.iter().all(|l| is_row(l)), "stdout:\n{}", stdout.join("\n"));
    assert!(stderr.iter().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{stderr:?}");
    assert!(stderr.iter().any(|l| l.ends_with(" 1 workload waits at dispatch's Pending check")), "{stderr:?}");

    // --wait prints as the one-shot gate: the waiting Workload's row alone on stdout.
    let wait = c.dispatch(&s.args("gate", &["--wait", "--timeout", "20s", "-A", "--no-headers"]));
    wait.expect_code(0);
    let row: Vec<&str> = wait.stdout.split_whitespace().take(2).collect();
    assert!(wait.lines().len() == 1 && row == [s.ns.as_str(), "job-1"], "{}", wait.stdout);
    assert!(wait.stderr.lines().any(|l| l == "ReadmissionGate: yes (the adapter writes)"), "{}", wait.stderr);
}

//! A silent partition, on the real test cluster through `kubectl dispatch`: the plugin's
//! connections go through a forwarder that, at a chosen moment, stops passing bytes either way
//! while keeping both sockets open (a dropped NAT entry, a dead load-balancer backend, a
//! suspended laptop), and passes new connections as before. The Lease is renewed every 2 s on
//! the server all along. `stale` may be said only after a read confirms it: here the read (on
//! a connection of its own) finds the Lease renewed, so the watch is said dead and started
//! again, and no `stale` row, no `--until stale` and no stale verdict ever comes.
//!
//! Before issue 34 the plugin printed `stale` one limit after the last event it saw and
//! `--until stale` exited 0.

mod support;

use std::time::Duration;

use support::Cluster;
use support::controller::Controller;
use support::fixtures::{self, Scenario};
use support::forward::Cutter;
use support::watch::{Watch, is_event};

const S: Duration = Duration::from_secs(1);

/// The scenario's Lease renewed every 2 s (duration 3 s: stale 6 s after a renewal), and a
/// forwarder to the API server.
fn renewed_behind_a_forwarder(c: &'static Cluster, tag: &str) -> (Scenario, Controller, Cutter) {
    let s = Scenario::new(tag);
    c.apply(&s.healthy_yaml());
    let ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 3);
    let port = c.apiserver_url().trim_start_matches("https://").to_string();
    (s, ctl, Cutter::start(&port))
}

fn said_dead(stderr: &[String]) -> bool {
    stderr.iter().any(|l| l.starts_with("watch interrupted: no event") && l.ends_with("; reconnecting"))
}

/// Ends `w` (its `--timeout`), prints what it said (the closing note's before and after), and
/// returns its code and the stdout lines after the first `after` ones.
fn ended(w: &mut Watch, what: &str, after: usize) -> (i32, Vec<String>) {
    let code = w.finish(60 * S);
    println!("== {what}: exit {code}\n-- stdout:\n{}\n-- stderr:\n{}", w.seen.join("\n"), w.stderr.join("\n"));
    (code, w.seen[after.min(w.seen.len())..].to_vec())
}

#[test]
fn a_silent_partition_is_never_stale_under_lease_watch() {
    let c = Cluster::shared();
    let (s, _ctl, cutter) = renewed_behind_a_forwarder(c, "sil-lease");
    let server = cutter.url();
    let lease = s.lease.as_str();
    let until_args = [
        "lease",
        "--watch",
        "--until",
        "stale",
        "--timeout",
        "30s",
        "-o",
        "json",
        "--lease",
        lease,
        "--server",
        &server,
    ];
    let mut until = Watch::start(c, &until_args);
    let rows_args = ["lease", "--watch", "--timeout", "30s", "--lease", lease, "--server", &server];
    let mut rows = Watch::start(c, &rows_args);
    until.wait_for("a renewal", 20 * S, is_event("renewed"));
    rows.wait_for("a renewal", 20 * S, |l| l.split_whitespace().nth(1) == Some("renewed"));
    cutter.freeze();
    let frozen = (until.seen.len(), rows.seen.len());
    // The confirming read finds the Lease renewed: the watch was dead; it is started again,
    // and no stale row comes.
    let (code, after) = ended(&mut until, "lease --watch --until stale --timeout 30s -o json", frozen.0);
    assert!(said_dead(&until.stderr), "{:#?}", until.stderr);
    assert!(until.stderr.iter().any(|l| l == "watch resumed"), "{:#?}", until.stderr);
    assert!(!until.seen.iter().any(|l| is_event("stale")(l)), "{:#?}", until.seen);
    assert!(after.iter().any(|l| is_event("renewed")(l)), "renewals seen again on the new watch: {after:#?}");
    assert_eq!(code, 5, "--until stale is never reached: {:#?}", until.stderr);
    let (code, after) = ended(&mut rows, "lease --watch --timeout 30s", frozen.1);
    assert_eq!(code, 0);
    assert!(said_dead(&rows.stderr), "{:#?}", rows.stderr);
    assert!(!rows.seen.iter().any(|l| l.split_whitespace().nth(1) == Some("stale")), "{:#?}", rows.seen);
    assert!(after.iter().any(|l| l.split_whitespace().nth(1) == Some("renewed")), "{after:#?}");
}

#[test]
fn a_silent_partition_is_never_a_stale_verdict_under_gate_watch_or_wait() {
    let c = Cluster::shared();
    let (s, _ctl, cutter) = renewed_behind_a_forwarder(c, "sil-gate");
    let server = cutter.url();
    let mut watch = Watch::start(c, &s.args("gate", &["--watch", "--timeout", "30s", "--server", &server]));
    watch.wait_for("the first verdict", 20 * S, |l| l == "ReadmissionGate: yes (the adapter writes)");
    // gate --wait on a gate that is no for another reason (the check not Active): at --timeout
    // it prints the last verdict, whose reasons must not include a Lease it did not see go stale.
    let (w, _ctl2, cutter2) = renewed_behind_a_forwarder(c, "sil-wait");
    c.apply(&fixtures::admission_check(&w.check, &w.controller, Some(false)));
    let server2 = cutter2.url();
    let mut wait = Watch::start(c, &w.args("gate", &["--wait", "--timeout", "25s", "--server", &server2]));
    std::thread::sleep(4 * S);
    cutter.freeze();
    cutter2.freeze();
    let (code, _) = ended(&mut watch, "gate --watch --timeout 30s", 0);
    assert_eq!(code, 0, "{:#?}", watch.stderr);
    assert!(!watch.seen.iter().any(|l| l.starts_with("ReadmissionGate: no")), "{:#?}", watch.seen);
    assert!(said_dead(&watch.stderr), "{:#?}", watch.stderr);
    let (code, _) = ended(&mut wait, "gate --wait --timeout 25s (the check not Active)", 0);
    assert_eq!(code, 3, "the check's no: {:#?}\n{:#?}", wait.seen, wait.stderr);
    assert!(said_dead(&wait.stderr), "{:#?}", wait.stderr);
    assert!(!wait.seen.iter().any(|l| l.contains("Lease was last renewed")), "{:#?}", wait.seen);
}

//! The live modes' `--timeout` as kubectl wait's, on the real test cluster: `--timeout 0`
//! checks once (beside `kubectl wait --timeout=0` on the same Lease: both answer at once, 0
//! when met, non-zero when not), and `gate --wait --no-headers` prints the last chain before
//! its timeout's error line.

mod support;

use std::time::{Duration, Instant};

use support::fixtures::{self, Scenario};
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);

fn timed(c: &Cluster, args: &[&str]) -> (Run, Duration) {
    let started = Instant::now();
    let run = c.dispatch(args);
    (run, started.elapsed())
}

/// A healthy gate whose Lease stays fresh for an hour, however slow the machine.
fn fresh(c: &Cluster, s: &Scenario) {
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(0), Some(3600)));
}

fn stale(c: &Cluster, s: &Scenario) {
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(600), Some(15)));
}

#[test]
fn timeout_zero_checks_once_as_kubectl_wait() {
    let c = Cluster::shared();
    let s = Scenario::new("t0");
    fresh(c, &s);
    // kubectl wait --timeout=0 on the same Lease: met at once (0), not met at once (1).
    let wait = |value: &str| {
        let lease = format!("lease/{}", s.lease_name);
        let cond = format!("--for=jsonpath={{.spec.holderIdentity}}={value}");
        let started = Instant::now();
        let out = c.kubectl(&["wait", &lease, "-n", &s.lease_ns, &cond, "--timeout=0"], None);
        (out.status.code(), started.elapsed())
    };
    let (met, took) = wait("ctl-a_1");
    assert_eq!(met, Some(0));
    assert!(took < 10 * S, "{took:?}");
    let (not_met, took) = wait("nobody");
    assert_eq!(not_met, Some(1));
    assert!(took < 10 * S, "{took:?}");

    // gate --wait: yes at once is 0, with the chain.
    let (run, took) = timed(c, &s.args("gate", &["--wait", "--timeout", "0"]));
    run.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(took < 10 * S, "{took:?}");
    // lease --watch: the observed row, then the end (0), as a plain watch ends on --timeout.
    let (run, took) = timed(c, &["lease", "--watch", "--timeout", "0s", "--lease", &s.lease, "-o", "json"]);
    run.expect_code(0);
    assert!(took < 10 * S, "{took:?}");
    let rows: Vec<serde_json::Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 1, "{}", run.stdout);
    assert_eq!(rows[0]["event"], "observed", "{}", run.stdout);
    // --until: met at once is 0; not met is --timeout's code, said in kubectl wait's words.
    let until = |what: &str| timed(c, &["lease", "--watch", "--until", what, "--timeout", "0", "--lease", &s.lease]);
    until("fresh").0.expect_code(0);
    let (run, took) = until("stale");
    run.expect_code(5);
    assert!(took < 10 * S, "{took:?}");
    let last = run.stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!("error: condition not met for Lease {} to be stale (--timeout 0 checks once; last: fresh)", s.lease)
    );

    // Stale: gate --wait --timeout 0 answers at once with the verdict's code.
    stale(c, &s);
    let (run, took) = timed(c, &s.args("gate", &["--wait", "--timeout", "0"]));
    run.expect_code(3);
    assert!(took < 10 * S, "{took:?}");
    assert!(run.stdout.contains("ReadmissionGate: no (observe-only): "), "{}", run.stdout);
    assert_eq!(
        run.stderr.lines().last(),
        Some("error: condition not met for the gate to be yes (--timeout 0 checks once; last: no)")
    );
}

/// With --no-headers the chain's checks and verdict go to stderr: they come before the error
/// line that ends the wait, so the error is the last word, as kubectl ends with its error.
#[test]
fn wait_no_headers_prints_the_chain_before_the_timeout_error() {
    let c = Cluster::shared();
    let s = Scenario::new("t-nh");
    fresh(c, &s);
    stale(c, &s);
    let run = c.dispatch(&s.args("gate", &["--wait", "--timeout", "2s", "--no-headers"]));
    run.expect_code(3);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let verdict = lines.iter().position(|l| l.starts_with("ReadmissionGate: no (observe-only): "));
    let error =
        lines.iter().position(|l| l.starts_with("error: timed out waiting for the gate to be yes (--timeout 2s"));
    assert!(verdict.is_some() && error == Some(lines.len() - 1) && verdict < error, "{}", run.stderr);
    assert!(lines.iter().any(|l| l.starts_with("4 ") && l.contains("stale for")), "{}", run.stderr);
}

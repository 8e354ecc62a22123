//! The Lease written by real leader election: `testcluster elector`, client-go's
//! `tools/leaderelection` with a LeaseLock as dispatch-admission runs it, on the real test
//! cluster, judged through `kubectl dispatch`. A rolling restart with ReleaseOnCancel off, a
//! clean stop with it on, and a leader killed outright. Lease durations are 4 s (renew
//! deadline and retry period in controller-runtime's proportions), so the limit is 8 s.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use support::elector::{Campaign, Elector};
use support::fixtures::Scenario;
use support::watch::Watch;
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);
const DURATION: &str = "4s";
const LIMIT: SignedDuration = SignedDuration::from_secs(8);

fn json_event(line: &str) -> Option<(String, serde_json::Value)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some((v["event"].as_str()?.to_string(), v))
}

fn is_event(event: &str) -> impl Fn(&str) -> bool + '_ {
    move |l| json_event(l).is_some_and(|(e, _)| e == event)
}

/// The Kueue side of a healthy gate, and no Lease yet: the first leader creates it.
fn scenario(c: &Cluster, tag: &str) -> Scenario {
    let s = Scenario::new(tag);
    c.apply(&s.queue_yaml());
    s
}

fn campaign(s: &Scenario, release_on_cancel: bool) -> Campaign<'_> {
    Campaign { namespace: &s.lease_ns, name: &s.lease_name, duration: DURATION, release_on_cancel }
}

/// `<pod name>_<uid>`, as controller-runtime names a leader.
fn pod_identity(pod: &str) -> String {
    format!("dispatch-admission-6c4f9-{pod}_{}", support::unique("uid"))
}

fn gate(c: &Cluster, s: &Scenario) -> Run {
    c.dispatch(&s.args("gate", &["-o", "json"]))
}

fn timestamp(v: &serde_json::Value) -> Timestamp {
    v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}")).parse().unwrap()
}

#[test]
fn a_rolling_restart_keeps_the_gate_yes_and_lease_watch_shows_the_takeover() {
    let c = Cluster::shared();
    let s = scenario(c, "el-roll");
    let (old_id, new_id) = (pod_identity("a1"), pod_identity("b2"));
    let mut old = Elector::start(c, campaign(&s, false), &old_id);
    old.wait_leading(20 * S);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal by the first leader", 20 * S, is_event("renewed"));
    let before = gate(c, &s);
    before.expect_code(0);
    let transitions = before.json()["lease"]["leaseTransitions"].as_i64().expect("leaseTransitions");

    // The rolling restart: the old pod stops (SIGTERM, ReleaseOnCancel off: the Lease keeps
    // its holder) and the new one starts at once. It takes the Lease only after a full lease
    // duration without a renewal, as client-go does.
    assert_eq!(old.stop(), 0, "SIGTERM ends the elector with 0");
    let stopped = Instant::now();
    let mut new = Elector::start(c, campaign(&s, false), &new_id);

    // The gate, asked over and over through the handover, never says no.
    let mut polls = 0;
    let mut oldest_seen_under_old = 0;
    let mut polls_after_takeover = 0;
    while polls_after_takeover < 3 {
        assert!(stopped.elapsed() < 30 * S, "no takeover within 30 s\n{}", new.report());
        let leads = new.leads();
        let run = gate(c, &s);
        polls += 1;
        assert_eq!(
            run.code,
            0,
            "the gate turned during the handover ({:?} after the stop, poll {polls}):\n{}\n{}",
            stopped.elapsed(),
            run.stdout,
            run.stderr
        );
        let json = run.json();
        assert_eq!(json["verdict"], "yes", "{json}");
        let lease = &json["lease"];
        if lease["holder"] == old_id.as_str() {
            oldest_seen_under_old = oldest_seen_under_old.max(lease["ageSeconds"].as_i64().unwrap());
        }
        if leads {
            assert_eq!(lease["holder"], new_id.as_str(), "{json}");
            polls_after_takeover += 1;
        }
    }
    // Polled deep into the handover: the old holder's Lease was seen older than most of a
    // lease duration (a limit of one duration would soon have said no), and the gate said yes.
    assert!(oldest_seen_under_old >= 3, "the oldest Lease seen under the old holder: {oldest_seen_under_old}s");

    let takeover = w.wait_for("the takeover", 10 * S, is_event("takeover"));
    let (_, v) = json_event(&takeover).unwrap();
    assert_eq!(v["previousHolder"], old_id.as_str(), "{v}");
    assert_eq!(v["lease"]["holder"], new_id.as_str(), "{v}");
    assert_eq!(v["lease"]["leaseTransitions"].as_i64(), Some(transitions + 1), "{v}");
    assert_eq!(v["lease"]["leaseDurationSeconds"], 4, "{v}");
    let gap = v["gapSeconds"].as_i64().unwrap();
    assert!((4..8).contains(&gap), "a takeover one duration and a retry or two after the last renewal: {gap}s");
    w.wait_for("a renewal by the new leader", 10 * S, is_event("renewed"));
    let (code, seen, _) = w.stop();
    assert_eq!(code, 0);
    let events: Vec<String> = seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).collect();
    assert!(!events.iter().any(|e| e == "stale" || e == "deleted"), "{events:?}");
    eprintln!("{polls} gate polls through the handover, all yes; takeover after {gap}s");
}

#[test]
fn with_release_on_cancel_a_stopped_leader_leaves_no_holder_and_the_gate_says_so() {
    let c = Cluster::shared();
    let s = scenario(c, "el-release");
    let id = pod_identity("r1");
    let mut leader = Elector::start(c, campaign(&s, true), &id);
    leader.wait_leading(20 * S);
    gate(c, &s).expect_code(0);

    assert_eq!(leader.stop(), 0, "SIGTERM ends the elector with 0, after it released the Lease");
    let run = c.dispatch(&s.args("gate", &[]));
    run.expect_code(3)
        .expect_line("ReadmissionGate: no (observe-only): the admission controller's Lease has no holder");
    let json = gate(c, &s).json();
    let lease = &json["lease"];
    // client-go's release: an empty holder and a duration of 1 s; the rest stays.
    assert_eq!(lease["status"], "no holder", "{json}");
    assert_eq!(lease["holder"], "", "{json}");
    assert_eq!(lease["leaseDurationSeconds"], 1, "{json}");
    assert_eq!(json["chains"][0]["checks"][3]["reason"], "the admission controller's Lease has no holder");
    let table = c.dispatch(&["lease", "--lease", &s.lease]);
    table.expect_code(3);
    assert!(table.lines()[1].contains(" no holder"), "{}", table.stdout);
}

#[test]
fn a_killed_leader_goes_stale_within_twice_the_duration_with_no_api_event() {
    let c = Cluster::shared();
    let s = scenario(c, "el-kill");
    let id = pod_identity("k1");
    let mut leader = Elector::start(c, campaign(&s, false), &id);
    leader.wait_leading(20 * S);
    // Let it renew a few times first, as a running leader does.
    std::thread::sleep(2 * S);
    gate(c, &s).expect_code(0);

    leader.kill();
    let killed = Timestamp::now();
    let rv = || {
        c.kubectl_ok(
            &["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "jsonpath={.metadata.resourceVersion}"],
            None,
        )
    };
    let version = rv();
    let renewed = timestamp(&gate(c, &s).json()["lease"]["renewTime"]);
    assert!(killed.duration_since(renewed) < SignedDuration::from_secs(1), "renewed {renewed}, killed {killed}");

    let started = Instant::now();
    let run =
        c.dispatch(&["lease", "--watch", "-o", "json", "--until", "stale", "--timeout", "30s", "--lease", &s.lease]);
    let returned = Timestamp::now();
    run.expect_code(0);
    let events: Vec<(String, serde_json::Value)> = run.stdout.lines().filter_map(json_event).collect();
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["observed", "stale"], "nothing but the first row and the stale one:\n{}", run.stdout);
    let stale = &events[1].1;
    assert_eq!(timestamp(&stale["lease"]["renewTime"]), renewed, "{stale}");
    assert_eq!(stale["lease"]["holder"], id.as_str(), "{stale}");
    // Stale at renewTime + 2 x 4 s: not before, and promptly after (a timer, not an event).
    let deadline = renewed + LIMIT;
    assert!(returned >= deadline, "returned at {returned}, before the stale deadline {deadline}");
    assert!(
        returned.duration_since(deadline) < SignedDuration::from_secs(2),
        "returned {} after the deadline",
        returned.duration_since(deadline)
    );
    assert!(started.elapsed() <= 9 * S, "within 2 x the duration of the kill: {:?}", started.elapsed());
    // No API event: nothing wrote the Lease after the kill.
    assert_eq!(rv(), version, "the Lease was written after its leader was killed");
    let run = c.dispatch(&s.args("gate", &[]));
    run.expect_code(3);
    let verdict = run.lines().into_iter().find(|l| l.starts_with("ReadmissionGate:")).unwrap().to_string();
    assert!(
        verdict.starts_with("ReadmissionGate: no (observe-only): the admission controller's Lease was last renewed ")
            && verdict.ends_with(" ago, beyond 8s"),
        "{verdict}"
    );
}

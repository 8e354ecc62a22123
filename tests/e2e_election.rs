//! The Lease written by real leader election: `testcluster elector`, client-go's
//! `tools/leaderelection` with a LeaseLock as dispatch-admission runs it, on the real test
//! cluster, judged through `kubectl dispatch`. A rolling restart with ReleaseOnCancel off, a
//! clean stop with it on, and a leader killed outright. Lease durations are 4 s (renew
//! deadline and retry period in controller-runtime's proportions), so the limit is 8 s.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use support::elector::{Campaign, Elector};
use support::fixtures::Scenario;
use support::watch::{Watch, connection_lines, is_event, json_event};
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);
const DURATION: &str = "4s";
const LIMIT: SignedDuration = SignedDuration::from_secs(8);

/// The Kueue side of a healthy gate, and no Lease yet: the first leader creates it.
fn queue_without_lease(c: &Cluster, tag: &str) -> Scenario {
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

fn gate_json(c: &Cluster, s: &Scenario) -> Run {
    c.dispatch(&s.args("gate", &["-o", "json"]))
}

fn timestamp(v: &serde_json::Value) -> Timestamp {
    v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}")).parse().unwrap()
}

#[test]
fn a_rolling_restart_keeps_the_gate_yes_and_lease_watch_shows_the_takeover() {
    let c = Cluster::shared();
    let s = queue_without_lease(c, "el-roll");
    let (old_id, new_id) = (pod_identity("a1"), pod_identity("b2"));
    let mut old = Elector::start(c, campaign(&s, false), &old_id);
    old.wait_leading(20 * S);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal by the first leader", 20 * S, is_event("renewed"));
    let before = gate_json(c, &s);
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
        let run = gate_json(c, &s);
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
    let s = queue_without_lease(c, "el-release");
    let id = pod_identity("r1");
    let mut leader = Elector::start(c, campaign(&s, true), &id);
    leader.wait_leading(20 * S);
    gate_json(c, &s).expect_code(0);

    assert_eq!(leader.stop(), 0, "SIGTERM ends the elector with 0, after it released the Lease");
    let run = c.dispatch(&s.args("gate", &[]));
    run.expect_code(3)
        .expect_line("ReadmissionGate: no (observe-only): the admission controller's Lease has no holder");
    let json = gate_json(c, &s).json();
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
    let s = queue_without_lease(c, "el-kill");
    let id = pod_identity("k1");
    let mut leader = Elector::start(c, campaign(&s, false), &id);
    leader.wait_leading(20 * S);
    // Let it renew a few times first, as a running leader does: two renewals after the
    // renewTime it took the Lease with.
    let mut renewals = BTreeSet::new();
    support::eventually("the leader renews the Lease twice", 20 * S, || {
        renewals.insert(
            c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "jsonpath={.spec.renewTime}"], None),
        );
        if renewals.len() >= 3 { Ok(()) } else { Err(format!("renewTimes seen: {renewals:?}")) }
    });
    gate_json(c, &s).expect_code(0);

    leader.kill();
    let killed = Timestamp::now();
    let rv = || {
        c.kubectl_ok(
            &["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "jsonpath={.metadata.resourceVersion}"],
            None,
        )
    };
    let version = rv();
    let renewed = timestamp(&gate_json(c, &s).json()["lease"]["renewTime"]);
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

#[test]
fn three_apiserver_restarts_while_client_go_renews_with_a_takeover_across_the_second() {
    // The operator's story of issue 14: client-go's leader election renews the Lease while
    // kube-apiserver is SIGKILLed and restarted three times; during the second outage the
    // leader dies and another candidate starts, and takes the Lease once the API server is
    // back. Each outage is one `interrupted` line and one `resumed`, in order; renewals
    // follow each restart, and the takeover is a row. A lease duration of 30 s (renew
    // deadline 20 s): a leader survives an outage of a loaded machine's restart (about 10 s
    // here; with 4 s it would stop leading after 2.7 s without the API server).
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start("v0.17.0")));
    let s = queue_without_lease(c, "el-kill3");
    let campaign = Campaign { duration: "30s", ..campaign(&s, false) };
    let (a_id, b_id) = (pod_identity("a1"), pod_identity("b2"));
    let mut a = Elector::start(c, campaign, &a_id);
    a.wait_leading(20 * S);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    let mut a = Some(a);
    let mut b: Option<Elector> = None;
    for round in 1..=3 {
        let killed = Timestamp::now();
        c.kill_apiserver();
        w.wait_for_stderr_prefix("watch interrupted: ", 15 * S);
        if round == 2 {
            a.take().unwrap().kill();
            b = Some(Elector::start(c, campaign, &b_id));
        }
        c.start_apiserver();
        w.wait_for_stderr("watch resumed", 15 * S);
        if round == 2 {
            let takeover = w.wait_for("the takeover after the second restart", 60 * S, is_event("takeover"));
            let (_, v) = json_event(&takeover).unwrap();
            assert_eq!(v["previousHolder"], a_id.as_str(), "{v}");
            assert_eq!(v["lease"]["holder"], b_id.as_str(), "{v}");
        }
        // A renewal written after the kill: after the API server came back.
        w.wait_for(&format!("a renewal after restart {round}"), 20 * S, |l| {
            json_event(l).is_some_and(|(e, v)| e == "renewed" && timestamp(&v["lease"]["renewTime"]) > killed)
        });
    }
    let (code, seen, stderr) = w.stop();
    assert_eq!(code, 0);
    assert_eq!(
        connection_lines(&stderr).into_iter().filter(|l| *l != "expired").collect::<Vec<_>>(),
        ["interrupted", "resumed", "interrupted", "resumed", "interrupted", "resumed"],
        "{stderr:#?}"
    );
    let events: Vec<String> = seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).collect();
    assert_eq!(events.iter().filter(|e| *e == "takeover").count(), 1, "{events:?}");
    assert!(!events.iter().any(|e| e == "stale"), "a 30 s Lease is never stale here: {events:?}");
    drop(b);
    c.stop();
}

#[test]
fn with_only_get_on_the_lease_lease_watch_polls_and_shows_renewals_a_takeover_and_stale() {
    // lease-get may get the Leases of dispatch-system but not list or watch them (as the
    // adapter is granted): kubectl get -w is refused; the plugin says once that it polls and
    // why, and follows the heartbeat anyway.
    let c = Cluster::shared();
    let s = queue_without_lease(c, "el-get");
    let (a_id, b_id) = (pod_identity("g1"), pod_identity("g2"));
    let mut a = Elector::start(c, campaign(&s, false), &a_id);
    a.wait_leading(20 * S);
    let kubectl = c.kubectl(&["--context", "lease-get", "get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w"], None);
    assert!(!kubectl.status.success(), "kubectl get -w with get only is refused");
    // kubectl gets the Lease (allowed), prints it, then its watch is refused.
    assert!(String::from_utf8_lossy(&kubectl.stderr).contains("cannot watch resource \"leases\""), "{kubectl:?}");
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--context", "lease-get", "--lease", &s.lease]);
    w.wait_for("a renewal, polled", 20 * S, is_event("renewed"));
    assert_eq!(a.stop(), 0);
    let mut b = Elector::start(c, campaign(&s, false), &b_id);
    let takeover = w.wait_for("the takeover, polled", 30 * S, is_event("takeover"));
    let (_, v) = json_event(&takeover).unwrap();
    assert_eq!(
        (v["previousHolder"].as_str(), v["lease"]["holder"].as_str()),
        (Some(a_id.as_str()), Some(b_id.as_str()))
    );
    b.wait_leading(10 * S);
    w.wait_for("b's renewal, polled", 10 * S, is_event("renewed"));
    b.kill();
    let killed = Timestamp::now();
    // --until stale, polled, beside the streaming rows.
    let until = c.dispatch(&[
        "lease",
        "--watch",
        "--until",
        "stale",
        "--timeout",
        "30s",
        "-o",
        "json",
        "--context",
        "lease-get",
        "--lease",
        &s.lease,
    ]);
    until.expect_code(0);
    let stale = w.wait_for("the stale row", 15 * S, is_event("stale"));
    let (_, v) = json_event(&stale).unwrap();
    let renewed = timestamp(&v["lease"]["renewTime"]);
    let at = timestamp(&v["time"]);
    assert!(
        at >= renewed + LIMIT && at.duration_since(renewed + LIMIT) < SignedDuration::from_secs(2),
        "stale at {at}, renewed {renewed}"
    );
    assert!(killed.duration_since(renewed) < SignedDuration::from_secs(2), "renewed {renewed}, killed {killed}");
    let (code, seen, stderr) = w.stop();
    assert_eq!(code, 0);
    let polling: Vec<&String> = stderr.iter().filter(|l| l.starts_with("polling Lease ")).collect();
    assert_eq!(polling.len(), 1, "said once: {stderr:#?}");
    assert_eq!(
        polling[0].as_str(),
        format!(
            "polling Lease {} with get every 1s: list and watch on it are forbidden (missing RBAC: list and watch \
             leases.coordination.k8s.io {:?} in namespace {})",
            s.lease, s.lease_name, s.lease_ns
        )
    );
    assert!(until.stderr.contains("polling Lease "), "{}", until.stderr);
    let events: Vec<String> = seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).collect();
    assert_eq!(events.iter().filter(|e| *e == "takeover").count(), 1, "{events:?}");
}

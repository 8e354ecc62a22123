//! Property tests of the pure core over arbitrary times (proptest, a bounded number of cases in
//! every `cargo test`): Leases and Workloads whose times lie anywhere a timestamp can hold
//! (year -9999 to 9999, the edges most of all), with any leaseDurationSeconds or
//! requeueAfterSeconds. Judging, tracking and rendering them never panics (a panic in the
//! release build is an abort), and the verdict never improves as `now` advances: a Lease that
//! is stale at one instant is never fresh at a later one.

mod facts;

use std::collections::BTreeMap;

use facts::{CHECK, CONTROLLER, cq, now};
use k8s_openapi::jiff::Timestamp;
use kubectl_dispatch::core::fetched::Fetched;
use kubectl_dispatch::core::gate::{self, GateFacts, GateSettings};
use kubectl_dispatch::core::heartbeat::{Observation, Tracker};
use kubectl_dispatch::core::kueue::{AdmissionCheck, Condition, LocalQueue};
use kubectl_dispatch::core::lease::{self, LeaseFacts, LeaseRef};
use kubectl_dispatch::core::verdict::Verdict;
use kubectl_dispatch::core::workload::{self, CheckDetail, Position, WorkloadFacts, WorkloadInput};
use kubectl_dispatch::invocation::Format;
use kubectl_dispatch::invocation::Output;
use kubectl_dispatch::render::{self, Style};
use kubectl_dispatch::report::workload::WorkloadRun;
use proptest::prelude::*;

/// Any instant a timestamp holds: half of them within a day of either end or an hour of the
/// tests' `now`.
fn instant() -> impl Strategy<Value = Timestamp> {
    let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    let around_now = now().as_second() - 3600..now().as_second() + 3600;
    let second = prop_oneof![min..=max, min..=min + 86_400, max - 86_400..=max, around_now];
    (second, 0..1_000_000_000i32).prop_map(move |(s, ns)| {
        // The last second holds its nanoseconds; the first cannot go below its own start.
        Timestamp::new(s, if s == min { 0 } else { ns }).unwrap_or(Timestamp::MAX)
    })
}

fn any_lease_facts() -> impl Strategy<Value = LeaseFacts> {
    (
        prop::option::of(prop_oneof![Just(String::new()), Just("dispatch-admission-7d9f_1".to_string())]),
        prop::option::of(instant()),
        prop::option::of(instant()),
        prop::option::of(any::<i32>()),
        prop::option::of(any::<i32>()),
    )
        .prop_map(|(holder, renew_time, acquire_time, duration_seconds, transitions)| LeaseFacts {
            holder,
            renew_time,
            acquire_time,
            duration_seconds,
            transitions,
        })
}

/// Yes is best, then unknown, then no.
fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Yes => 2,
        Verdict::Unknown => 1,
        Verdict::No => 0,
    }
}

fn lease_ref() -> LeaseRef {
    LeaseRef { namespace: "dispatch-system".into(), name: "dispatch-admission".into() }
}

fn gate_facts(lease: LeaseFacts) -> GateFacts {
    let active = Condition { status: "True".into(), reason: None, message: None, last_transition: None };
    GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK])]),
        admission_checks: Fetched::Found(vec![AdmissionCheck {
            name: CHECK.into(),
            controller_name: Some(CONTROLLER.into()),
            active: Some(active),
        }]),
        lease: Fetched::Found(lease),
        holder: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_lease_is_judged_and_shown_at_any_time_and_never_improves(
        facts in any_lease_facts(),
        a in instant(),
        b in instant(),
    ) {
        let (earlier, later) = if a <= b { (a, b) } else { (b, a) };
        let fetched = Fetched::Found(facts.clone());
        let first = lease::assess(&lease_ref(), &fetched, earlier);
        let second = lease::assess(&lease_ref(), &fetched, later);
        prop_assert!(
            rank(second.state.verdict()) <= rank(first.state.verdict()),
            "{:?} at {earlier}, then {:?} at {later}", first.state, second.state
        );
        for (assessment, now) in [(&first, earlier), (&second, later)] {
            let _ = assessment.state.reason(&lease_ref());
            let _ = lease::future_skew(&facts, now);
            let _ = kubectl_dispatch::render::lease::row(assessment, now, true);
            let _ = kubectl_dispatch::report::lease_doc(assessment);
            let _ = kubectl_dispatch::core::skew::lease_in_future(Some(&facts), now);
            let _ = kubectl_dispatch::core::skew::server_clock(Some(later), earlier);
        }
        // The gate over that Lease: the same order.
        let settings = GateSettings { lease: lease_ref(), ..GateSettings::default() };
        let g1 = gate::evaluate(&settings, &gate_facts(facts.clone()), earlier);
        let g2 = gate::evaluate(&settings, &gate_facts(facts), later);
        prop_assert!(rank(g2.verdict) <= rank(g1.verdict), "{:?} then {:?}", g1.verdict, g2.verdict);
    }

    #[test]
    fn a_lease_followed_over_time_never_panics(
        observed in prop::collection::vec((any_lease_facts(), instant()), 1..8),
    ) {
        // Observations in time order, as a watch makes them; the deadline (when a fresh
        // heartbeat goes stale) is computed after each, as `lease --watch` does.
        let mut observed = observed;
        observed.sort_by_key(|(_, at)| *at);
        // The same facts as Kueue's manager's Lease, followed beside it as the watch does
        // (its own tracker, told by `Told`).
        let mut tracker = Tracker::new(lease_ref(), false);
        let mut manager = Tracker::new(LeaseRef::kueue_default(), false);
        let mut told = kubectl_dispatch::core::kueue_lease::Told::new(kubectl_dispatch::core::kueue_lease::First::Down);
        for (facts, at) in observed {
            manager.observe(Observation::Lease(Some(facts.clone())), at);
            if let Some(said) = manager.assess(at).and_then(|a| told.judged(a)) {
                let _ = kubectl_dispatch::render::watch::kueue_change_doc(&said, at);
            }
            let kueue = manager.assess(at);
            for change in tracker.observe(Observation::Lease(Some(facts)), at) {
                let _ = kubectl_dispatch::render::watch::detail(&change);
                let _ = kubectl_dispatch::render::watch::change_doc(&change, kueue.as_ref());
            }
            if let Some(deadline) = tracker.deadline(at) {
                prop_assert!(deadline > at, "the deadline {deadline} is not after {at}");
            }
            if let Some(deadline) = manager.deadline(at) {
                prop_assert!(deadline > at, "Kueue's deadline {deadline} is not after {at}");
            }
            let _ = tracker.observe(Observation::Tick, at);
            let _ = manager.observe(Observation::Tick, at);
        }
        let _ = kubectl_dispatch::render::watch::summary(&tracker.gaps);
    }

    #[test]
    fn a_workload_is_explained_at_any_time(
        transition in prop::option::of(instant()),
        condition_at in prop::option::of(instant()),
        requeue_after in prop::option::of(any::<i32>()),
        retry_count in prop::option::of(any::<i32>()),
        state in prop_oneof![Just("Pending"), Just("Retry"), Just("Ready"), Just("Rejected")],
        lease in any_lease_facts(),
        a in instant(),
        b in instant(),
    ) {
        let (earlier, later) = if a <= b { (a, b) } else { (b, a) };
        let condition = Condition {
            status: "False".into(),
            reason: Some("Pending".into()),
            message: Some("waiting".into()),
            last_transition: condition_at,
        };
        // Kueue's manager's Lease, judged beside dispatch's: the same times.
        let kueue_lease = Some(Fetched::Found(lease.clone()));
        let input = WorkloadInput {
            workload: WorkloadFacts {
                namespace: "team-a".into(),
                name: "job-1".into(),
                queue_name: Some("lq".into()),
                active: true,
                admitted_in: None,
                conditions: BTreeMap::from([("QuotaReserved".to_string(), condition)]),
                checks: vec![CheckDetail {
                    name: CHECK.into(),
                    state: state.into(),
                    message: "m".into(),
                    last_transition: transition,
                    retry_count,
                    requeue_after_seconds: requeue_after,
                    pod_set_updates: Vec::new(),
                }],
                admission_gated_by: None,
                cluster_name: None,
                nominated_cluster_names: Vec::new(),
            },
            local_queue: Fetched::Found(LocalQueue {
                namespace: "team-a".into(),
                name: "lq".into(),
                cluster_queue: "team-a".into(),
            }),
            gate: gate_facts(lease),
            position: Position::NotServed,
            kueue_lease,
        };
        let settings = GateSettings { lease: lease_ref(), ..GateSettings::default() };
        let first = workload::explain(&settings, &input, earlier);
        let second = workload::explain(&settings, &input, later);
        let verdict = |e: &workload::Explanation| e.lease.as_ref().map(|l| rank(l.state.verdict()));
        prop_assert!(verdict(&second) <= verdict(&first));
        for (explanation, now) in [(first, earlier), (second, later)] {
            let run = WorkloadRun { explanation, warnings: Vec::new(), now };
            for format in [Format::Table, Format::Wide, Format::Json] {
                let output = Output { format, no_headers: false };
                render::workload::render(&run, output, Style::default(), &mut Vec::new(), &mut Vec::new()).unwrap();
            }
        }
    }
}

//! `gate --watch`'s incremental state ([`LiveGate`]) against the full evaluation it replaced,
//! which is the oracle: random sequences of events (lists, relists, additions, changes and
//! deletions of ClusterQueues, AdmissionChecks, Workloads and LocalQueues, lists that turn
//! forbidden, dispatch's Lease and Kueue's renewed, deleted or forbidden, time moving on, now
//! and then back), and after every one of them the incremental state and a full evaluation
//! from scratch of every object seen (the old object stores, every Workload's rows filtered and
//! sorted again, the one-shot gate's `judge`) give the same verdicts and deciding rules, the
//! same waiting count, the same warnings, the same next stale moment, and the same run: its
//! JSON document and its table, byte for byte.

use std::collections::BTreeMap;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubectl_dispatch::commands::gate::{self as gate_cmd, Collected, GateOptions};
use kubectl_dispatch::core::fetched::{Denied, Fetched};
use kubectl_dispatch::core::gate::{self, GateFacts, GateSettings};
use kubectl_dispatch::core::kueue::{
    AdmissionCheck, CheckRule, CheckState, ClusterQueue, Condition, LocalQueue, Workload,
};
use kubectl_dispatch::core::kueue_lease;
use kubectl_dispatch::core::lease::{LeaseFacts, LeaseState};
use kubectl_dispatch::core::live_gate::{self, Fact, Key, ListChange, LiveGate};
use kubectl_dispatch::core::waiting::{self, Waiting, WaitingScope};
use kubectl_dispatch::invocation::{Format, Output};
use kubectl_dispatch::render::Style;
use kubectl_dispatch::report::GateRun;
use proptest::prelude::*;

fn start() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

const NAMESPACES: [&str; 2] = ["ml", "ops"];
const WORKLOADS: [&str; 4] = ["a", "b", "a-b", "job"];
const QUEUES: [&str; 3] = ["team-a", "team-b", "team-c"];
const CHECKS: [&str; 3] = ["dispatch", "dispatch-2", "other"];
const CONTROLLERS: [&str; 2] = ["dispatch-admission", "someone-else"];
const LOCAL_QUEUES: [&str; 2] = ["q", "r"];
const STATES: [&str; 4] = ["Pending", "Ready", "Retry", "Rejected"];

fn any_condition() -> impl Strategy<Value = Option<Condition>> {
    prop::option::of(
        (prop::sample::select(vec!["True", "False"]), prop::option::of(Just("Active".to_string()))).prop_map(
            |(status, reason)| Condition { status: status.into(), reason, message: None, last_transition: None },
        ),
    )
}

fn cluster_queue() -> impl Strategy<Value = ClusterQueue> {
    (prop::sample::select(QUEUES.to_vec()), prop::sample::subsequence(CHECKS.to_vec(), 0..=3), any_condition())
        .prop_map(|(name, checks, active)| ClusterQueue {
            name: name.into(),
            admission_checks: checks
                .into_iter()
                .map(|c| CheckRule { name: c.into(), on_flavors: Vec::new() })
                .collect(),
            active,
        })
}

fn admission_check() -> impl Strategy<Value = AdmissionCheck> {
    (
        prop::sample::select(CHECKS.to_vec()),
        prop::option::of(prop::sample::select(CONTROLLERS.to_vec())),
        any_condition(),
    )
        .prop_map(|(name, controller, active)| AdmissionCheck {
            name: name.into(),
            controller_name: controller.map(String::from),
            active,
        })
}

fn any_local_queue() -> impl Strategy<Value = LocalQueue> {
    (
        prop::sample::select(NAMESPACES.to_vec()),
        prop::sample::select(LOCAL_QUEUES.to_vec()),
        prop::sample::select(QUEUES.to_vec()),
    )
        .prop_map(|(ns, name, cq)| LocalQueue {
            namespace: ns.into(),
            name: name.into(),
            cluster_queue: cq.into(),
        })
}

fn any_workload() -> impl Strategy<Value = Workload> {
    let check = (prop::sample::select(CHECKS.to_vec()), prop::sample::select(STATES.to_vec()), 0..3u8, 0..600i64)
        .prop_map(|(name, state, message, since)| CheckState {
            name: name.into(),
            state: state.into(),
            message: ["", "waiting", "retry later"][message as usize].into(),
            last_transition: Some(start() - SignedDuration::from_secs(since)),
        });
    (
        prop::sample::select(NAMESPACES.to_vec()),
        prop::sample::select(WORKLOADS.to_vec()),
        prop::option::of(prop::sample::select(LOCAL_QUEUES.to_vec())),
        prop::option::of(prop::sample::select(QUEUES.to_vec())),
        any::<bool>(),
        prop::collection::vec(check, 0..3),
    )
        .prop_map(|(ns, name, queue, admitted, reserved, checks)| Workload {
            namespace: ns.into(),
            name: name.into(),
            queue_name: queue.map(String::from),
            admitted_in: admitted.map(String::from),
            quota_reserved: reserved,
            checks,
        })
}

/// A Lease renewed some seconds around the start (15 s or 3 s long), one never renewed, one
/// released, none, or one that may not be read.
fn lease() -> impl Strategy<Value = Fetched<LeaseFacts>> {
    let held = (-120..240i64, prop::sample::select(vec![15, 3]), 0..4u8).prop_map(|(renewed, duration, holder)| {
        Fetched::Found(LeaseFacts {
            holder: match holder {
                0 => None,
                1 => Some(String::new()),
                _ => Some("holder-0".into()),
            },
            renew_time: (holder != 3 || renewed > 0).then(|| start() + SignedDuration::from_secs(renewed)),
            acquire_time: Some(start()),
            duration_seconds: Some(duration),
            transitions: Some(1),
        })
    });
    prop_oneof![
        6 => held,
        1 => Just(Fetched::Missing),
        1 => Just(Fetched::Forbidden(Denied { rule: "get leases.coordination.k8s.io".into() })),
    ]
}

/// A change of one list, of objects made by `item`, keyed by `key`.
fn change<T: Clone + std::fmt::Debug + 'static>(
    item: BoxedStrategy<T>,
    key: fn(&T) -> Key,
) -> impl Strategy<Value = ListChange<T>> {
    let keyed = move |t: T| (key(&t), t);
    prop_oneof![
        6 => item.clone().prop_map(move |t| ListChange::Apply(key(&t), t)),
        2 => item.clone().prop_map(move |t| ListChange::Delete(key(&t))),
        1 => Just(ListChange::Init),
        1 => prop::collection::vec(item.clone().prop_map(keyed), 0..4).prop_map(ListChange::Page),
        1 => Just(ListChange::InitDone),
        1 => Just(ListChange::Forbidden("list and watch them".into())),
    ]
}

/// A cluster-scoped object's key.
fn by_name(name: &str) -> Key {
    (String::new(), name.to_string())
}

/// A Workload as the watch reduces it: its entries at every check it names.
fn reduced(w: &Workload, all_states: bool) -> Vec<Waiting> {
    let scope = WaitingScope {
        checks: w.checks.iter().map(|c| c.name.clone()).collect(),
        cluster_queues: Default::default(),
        all_states,
    };
    waiting::select(w, &scope)
}

#[derive(Debug, Clone)]
enum Event {
    Fact(Fact),
    /// Time moves on (or, now and then, back: a wall clock set back) by this many seconds.
    Time(i64),
}

fn events(all_states: bool) -> impl Strategy<Value = Vec<Event>> {
    let queue = change(cluster_queue().boxed(), |q| by_name(&q.name)).prop_map(Fact::Queue);
    let check = change(admission_check().boxed(), |c| by_name(&c.name)).prop_map(Fact::Check);
    let lq = change(any_local_queue().boxed(), |l| (l.namespace.clone(), l.name.clone())).prop_map(Fact::LocalQueue);
    let wl = change(any_workload().boxed(), |w| (w.namespace.clone(), w.name.clone()));
    let wl = wl.prop_map(move |c| {
        Fact::Workload(match c {
            ListChange::Apply(k, w) => ListChange::Apply(k, reduced(&w, all_states)),
            ListChange::Page(items) => {
                ListChange::Page(items.into_iter().map(|(k, w)| (k, reduced(&w, all_states))).collect())
            }
            ListChange::Delete(k) => ListChange::Delete(k),
            ListChange::Init => ListChange::Init,
            ListChange::InitDone => ListChange::InitDone,
            ListChange::Forbidden(r) => ListChange::Forbidden(r),
        })
    });
    let event = prop_oneof![
        2 => queue.prop_map(Event::Fact),
        2 => check.prop_map(Event::Fact),
        6 => wl.prop_map(Event::Fact),
        1 => lq.prop_map(Event::Fact),
        2 => lease().prop_map(|l| Event::Fact(Fact::Lease(l))),
        1 => lease().prop_map(|l| Event::Fact(Fact::KueueLease(l))),
        3 => prop_oneof![8 => 0..40i64, 1 => -3..0i64].prop_map(Event::Time),
    ];
    // Every list read once first, as the watches do, then anything.
    let listed = (
        prop::collection::vec(cluster_queue(), 0..3),
        prop::collection::vec(admission_check(), 0..3),
        prop::collection::vec(any_workload(), 0..5),
        prop::collection::vec(any_local_queue(), 0..3),
        lease(),
        lease(),
    )
        .prop_map(move |(cqs, acs, wls, lqs, l, k)| {
            let workloads =
                wls.iter().map(|w| ((w.namespace.clone(), w.name.clone()), reduced(w, all_states))).collect();
            let local_queues = lqs.into_iter().map(|l| ((l.namespace.clone(), l.name.clone()), l)).collect();
            let out = vec![
                Fact::Queue(ListChange::Init),
                Fact::Queue(ListChange::Page(cqs.into_iter().map(|q| (by_name(&q.name), q)).collect())),
                Fact::Queue(ListChange::InitDone),
                Fact::Check(ListChange::Init),
                Fact::Check(ListChange::Page(acs.into_iter().map(|c| (by_name(&c.name), c)).collect())),
                Fact::Check(ListChange::InitDone),
                Fact::Workload(ListChange::Init),
                Fact::Workload(ListChange::Page(workloads)),
                Fact::Workload(ListChange::InitDone),
                Fact::LocalQueue(ListChange::Init),
                Fact::LocalQueue(ListChange::Page(local_queues)),
                Fact::LocalQueue(ListChange::InitDone),
                Fact::Lease(l),
                Fact::KueueLease(k),
            ];
            out.into_iter().map(Event::Fact).collect::<Vec<_>>()
        });
    (listed, prop::collection::vec(event, 0..60)).prop_map(|(mut first, rest)| {
        first.extend(rest);
        first
    })
}

/// The object store `gate --watch` kept before, one per list: everything cloned out at every
/// evaluation.
struct Store<T> {
    items: BTreeMap<String, T>,
    building: Option<BTreeMap<String, T>>,
    ready: bool,
    forbidden: Option<String>,
}

impl<T: Clone> Store<T> {
    fn new() -> Self {
        Store { items: BTreeMap::new(), building: None, ready: false, forbidden: None }
    }

    fn apply(&mut self, change: ListChange<T>) {
        let key = |(ns, name): Key| format!("{ns}/{name}");
        match change {
            ListChange::Init => self.building = Some(BTreeMap::new()),
            ListChange::Page(items) => {
                self.building.get_or_insert_with(BTreeMap::new).extend(items.into_iter().map(|(k, v)| (key(k), v)))
            }
            ListChange::InitDone => {
                self.items = self.building.take().unwrap_or_default();
                self.ready = true;
                self.forbidden = None;
            }
            ListChange::Apply(k, v) => {
                self.items.insert(key(k), v);
            }
            ListChange::Delete(k) => {
                self.items.remove(&key(k));
            }
            ListChange::Forbidden(rule) => {
                self.forbidden = Some(rule);
                self.ready = true;
            }
        }
    }

    fn fetched(&self) -> Fetched<Vec<T>> {
        match &self.forbidden {
            Some(rule) => Fetched::Forbidden(Denied { rule: rule.clone() }),
            None => Fetched::Found(self.items.values().cloned().collect()),
        }
    }
}

/// The full evaluation: every store as it stands, judged from scratch.
struct Full {
    queues: Store<ClusterQueue>,
    checks: Store<AdmissionCheck>,
    workloads: Store<Vec<Waiting>>,
    local_queues: Store<LocalQueue>,
    lease: Option<Fetched<LeaseFacts>>,
    kueue_lease: Option<Fetched<LeaseFacts>>,
}

impl Full {
    fn new() -> Self {
        Full {
            queues: Store::new(),
            checks: Store::new(),
            workloads: Store::new(),
            local_queues: Store::new(),
            lease: None,
            kueue_lease: None,
        }
    }

    fn apply(&mut self, fact: Fact) {
        match fact {
            Fact::Queue(c) => self.queues.apply(c),
            Fact::Check(c) => self.checks.apply(c),
            Fact::Workload(c) => self.workloads.apply(c),
            Fact::LocalQueue(c) => self.local_queues.apply(c),
            Fact::Lease(l) => self.lease = Some(l),
            Fact::KueueLease(l) => self.kueue_lease = Some(l),
        }
    }

    fn ready(&self) -> bool {
        self.queues.ready
            && self.checks.ready
            && self.workloads.ready
            && self.local_queues.ready
            && self.lease.is_some()
            && self.kueue_lease.is_some()
    }

    fn run(&self, opts: &GateOptions<'_>, now: Timestamp) -> GateRun {
        let facts = GateFacts {
            cluster_queues: self.queues.fetched(),
            admission_checks: self.checks.fetched(),
            lease: self.lease.clone().unwrap_or(Fetched::Missing),
            holder: None,
        };
        let scope = WaitingScope {
            checks: gate::dispatch_checks(opts.settings, &facts.admission_checks),
            cluster_queues: opts.settings.cluster_queues.iter().cloned().collect(),
            all_states: opts.all_states,
        };
        let lqs = self.local_queues.fetched().found().cloned().unwrap_or_default();
        let waiting = self.workloads.fetched().map(|all| {
            let rows = all.into_iter().flatten().filter(|w| scope.checks.contains(&w.check)).collect();
            waiting::finish(rows, &lqs, &scope)
        });
        let collected =
            Collected { facts, waiting, server_date: None, kueue_warning: None, kueue_lease: self.kueue_lease.clone() };
        gate_cmd::judge(collected, opts, "ml", now)
    }
}

/// The run gate --watch prints from the incremental state.
fn live_run(live: &LiveGate, opts: &GateOptions<'_>, now: Timestamp) -> GateRun {
    let collected = Collected {
        facts: live.facts(),
        waiting: live.waiting(),
        server_date: None,
        kueue_warning: None,
        kueue_lease: live.kueue_lease().cloned(),
    };
    gate_cmd::judge(collected, opts, "ml", now)
}

fn table(run: &GateRun, format: Format) -> String {
    let mut out = Vec::new();
    kubectl_dispatch::render::gate::render(run, Output { format, no_headers: false }, Style::default(), &mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// The moment a full evaluation says the first Lease turns stale, from its states at `now`.
fn stale_moment(run: &GateRun, now: Timestamp) -> Option<Timestamp> {
    let until = |state: &LeaseState| match state {
        LeaseState::Fresh { stale_in, .. } => now.checked_add(*stale_in).ok(),
        _ => None,
    };
    let ours = until(&run.report.lease.state);
    let kueue = run.kueue_lease.as_ref().and_then(|a| until(&a.state));
    ours.into_iter().chain(kueue).min()
}

fn settings() -> impl Strategy<Value = (GateSettings, bool, bool)> {
    (
        prop::option::of(Just("dispatch".to_string())),
        prop::sample::subsequence(vec!["team-a", "team-c"], 0..=2),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(admission_check, queues, all_states, wide)| {
            let settings = GateSettings {
                admission_check,
                cluster_queues: queues.into_iter().map(String::from).collect(),
                ..GateSettings::default()
            };
            (settings, all_states, wide)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_incremental_state_shows_what_a_full_evaluation_shows_after_every_event(
        ((settings, all_states, wide), events) in settings().prop_flat_map(|s| {
            let all_states = s.1;
            (Just(s), events(all_states))
        }),
    ) {
        let format = if wide { Format::Wide } else { Format::Table };
        let opts = GateOptions {
        settings: &settings,
        output: Output { format, no_headers: false },
        all_states,
        all_namespaces: false,
        selector: None,
        sort_by: None,
    };
        let mut live = LiveGate::new(&settings, all_states);
        let mut full = Full::new();
        let mut now = start();
        for (i, event) in events.into_iter().enumerate() {
            match event {
                Event::Fact(fact) => {
                    live.apply(fact.clone());
                    full.apply(fact);
                }
                Event::Time(s) => now += SignedDuration::from_secs(s),
            }
            prop_assert_eq!(live.ready(), full.ready(), "event {}", i);
            if !full.ready() {
                continue;
            }
            let expected = full.run(&opts, now);
            // What decides each printing: the chains' verdicts and deciding rules, the count.
            prop_assert_eq!(live.signature(now), live_gate::signature(&expected.report), "event {}", i);
            prop_assert_eq!(live.verdict(now), expected.report.verdict, "event {}", i);
            let rows = expected.waiting.found().cloned().unwrap_or_default();
            let stalled: Vec<&Waiting> = rows.iter().filter(|w| w.is_stalled()).collect();
            prop_assert_eq!(live.stalled(), stalled.len(), "event {}", i);
            let mut by_queue: BTreeMap<Option<String>, usize> = BTreeMap::new();
            for w in stalled {
                *by_queue.entry(w.cluster_queue.clone()).or_default() += 1;
            }
            prop_assert_eq!(live.stalled_by_queue(), &by_queue, "event {}", i);
            // The warnings asked at every event, and the stale timer.
            let lease = live.lease().and_then(|f| f.found());
            prop_assert_eq!(gate_cmd::warnings((None, None), lease, live.waiting_forbidden(), now), expected.warnings.clone());
            prop_assert_eq!(live.next_change(now), stale_moment(&expected, now), "event {}", i);
            let status = |r: &GateRun| r.kueue_lease.as_ref().map(kueue_lease::status);
            // And what is printed: the run, as JSON and as a table.
            let shown = live_run(&live, &opts, now);
            prop_assert_eq!(status(&shown), status(&expected));
            prop_assert_eq!(
                serde_json::to_value(shown.document()).unwrap(),
                serde_json::to_value(expected.document()).unwrap(),
                "event {}", i
            );
            prop_assert_eq!(table(&shown, format), table(&expected, format), "event {}", i);
        }
    }
}

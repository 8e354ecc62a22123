//! `gate --watch`'s state, kept current event by event. Each event updates only what it
//! touches: a Workload's event its own rows in the waiting set and the counts by ClusterQueue;
//! a LocalQueue's or an AdmissionCheck's event the whole waiting set only when it changes which
//! ClusterQueue a LocalQueue feeds or which checks are dispatch's. The chain is judged again
//! only when one of its inputs changes (a ClusterQueue, an AdmissionCheck, the Lease, as reduced:
//! Kueue's status counters do not count) or when time turns the Lease stale; between those, its
//! verdicts and deciding rules are the ones a full evaluation would give, and the run shown is
//! built from the same facts a full evaluation reads (tests/live_gate.rs holds the two side by
//! side over random event sequences).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use super::fetched::{Denied, Fetched};
use super::gate::{self, Chain, CheckKind, GateFacts, GateReport, GateSettings};
use super::kueue::{AdmissionCheck, ClusterQueue, LocalQueue};
use super::lease::{self, LeaseFacts, LeaseRef, LeaseState};
use super::verdict::Verdict;
use super::waiting::{self, QueueMap, Waiting, WaitingScope};

/// An object's namespace (empty for a cluster-scoped one) and name.
pub type Key = (String, String);

/// What a watch says of its list of objects.
#[derive(Debug, Clone, PartialEq)]
pub enum ListChange<T> {
    /// A list starts: what follows until [`ListChange::InitDone`] replaces everything.
    Init,
    /// One page of the list, each object reduced as it arrived.
    Page(Vec<(Key, T)>),
    InitDone,
    Apply(Key, T),
    Delete(Key),
    /// The list is forbidden: the RBAC rule that would allow it.
    Forbidden(String),
}

/// One event of what `gate --watch` follows.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    Queue(ListChange<ClusterQueue>),
    Check(ListChange<AdmissionCheck>),
    /// A Workload, as its entries at any of its checks ([`waiting::select`] with every check it
    /// names): which of them are dispatch's is decided here, from the AdmissionChecks.
    Workload(ListChange<Vec<Waiting>>),
    LocalQueue(ListChange<LocalQueue>),
    Lease(Fetched<LeaseFacts>),
    KueueLease(Fetched<LeaseFacts>),
}

/// What an event changed of a list, as seen (a forbidden list shows nothing of its items).
#[derive(Debug, PartialEq)]
enum Touched {
    Nothing,
    One(Key),
    All,
}

/// One object list kept current by a watch.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    items: BTreeMap<Key, T>,
    building: Option<BTreeMap<Key, T>>,
    ready: bool,
    forbidden: Option<String>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed { items: BTreeMap::new(), building: None, ready: false, forbidden: None }
    }
}

impl<T: PartialEq + Clone> Listed<T> {
    fn apply(&mut self, change: ListChange<T>) -> Touched {
        let seen = |l: &Self, key: Key| if l.forbidden.is_none() { Touched::One(key) } else { Touched::Nothing };
        match change {
            ListChange::Init => {
                self.building = Some(BTreeMap::new());
                Touched::Nothing
            }
            ListChange::Page(items) => {
                self.building.get_or_insert_with(BTreeMap::new).extend(items);
                Touched::Nothing
            }
            ListChange::InitDone => {
                self.items = self.building.take().unwrap_or_default();
                self.ready = true;
                self.forbidden = None;
                Touched::All
            }
            ListChange::Apply(k, v) => {
                if self.items.get(&k) == Some(&v) {
                    return Touched::Nothing;
                }
                self.items.insert(k.clone(), v);
                seen(self, k)
            }
            ListChange::Delete(k) => match self.items.remove(&k) {
                Some(_) => seen(self, k),
                None => Touched::Nothing,
            },
            ListChange::Forbidden(rule) => {
                let unchanged = self.ready && self.forbidden.as_ref() == Some(&rule);
                self.forbidden = Some(rule);
                self.ready = true;
                if unchanged { Touched::Nothing } else { Touched::All }
            }
        }
    }

    /// The items as a one-shot read returns them (by namespace, then name), or forbidden.
    pub fn fetched(&self) -> Fetched<Vec<T>> {
        match &self.forbidden {
            Some(rule) => Fetched::Forbidden(Denied { rule: rule.clone() }),
            None => Fetched::Found(self.items.values().cloned().collect()),
        }
    }

    fn visible(&self) -> impl Iterator<Item = (&Key, &T)> {
        self.items.iter().filter(|_| self.forbidden.is_none())
    }
}

/// The chain as last judged, and until when that judgement holds without a new event.
#[derive(Debug, Clone)]
struct Judged {
    report: GateReport,
    at: Timestamp,
    /// The last instant at which the Lease is still fresh; `None` when time changes nothing.
    until: Option<Timestamp>,
}

/// Per chain: the ClusterQueue, its verdict, the rule that decides it (the first failing
/// check, else the first unknown one, with its outcome) and the deciding reason's code
/// (`LeaseStale`, `LeaseNotFound`...). A change of any is printed (a stale Lease then deleted
/// is a new reason); a reason whose words change while its code stays (a stale Lease's
/// growing age) is not.
pub type Signature = Vec<(Option<String>, Verdict, Option<(CheckKind, &'static str)>, Option<&'static str>)>;

pub fn signature(report: &GateReport) -> Signature {
    report.chains.iter().map(|c| (c.cluster_queue.clone(), c.verdict, deciding(c), c.reason_code)).collect()
}

fn deciding(chain: &Chain) -> Option<(CheckKind, &'static str)> {
    let first = |label: &str| chain.checks.iter().find(|c| c.outcome.label() == label);
    first("fail").or_else(|| first("unknown")).map(|c| (c.kind, c.outcome.label()))
}

/// The last instant at which a Lease is fresh, when it is fresh at `now`.
pub fn fresh_until(lease: &LeaseRef, fetched: &Fetched<LeaseFacts>, now: Timestamp) -> Option<Timestamp> {
    match lease::assess(lease, fetched, now).state {
        LeaseState::Fresh { stale_in, .. } => now.checked_add(stale_in).ok(),
        _ => None,
    }
}

/// Everything `gate --watch` follows, and what it derives from it.
#[derive(Debug, Clone)]
pub struct LiveGate {
    settings: GateSettings,
    queues: Listed<ClusterQueue>,
    checks: Listed<AdmissionCheck>,
    workloads: Listed<Vec<Waiting>>,
    local_queues: Listed<LocalQueue>,
    lease: Option<Fetched<LeaseFacts>>,
    /// Kueue's manager's Lease as its instance of the heartbeat machine last judged it:
    /// context, said under the chains ([`super::heartbeats`] follows it).
    kueue_lease: Option<Fetched<LeaseFacts>>,
    /// dispatch's checks (from the AdmissionChecks), the ClusterQueues named, `--all-states`.
    scope: WaitingScope,
    by_queue: QueueMap,
    /// Each Workload's rows in the waiting set, in the one-shot gate's order; none empty.
    rows: BTreeMap<Key, Vec<Waiting>>,
    /// Rows waiting at dispatch's Pending check (quota reserved), by ClusterQueue; none zero.
    stalled: BTreeMap<Option<String>, usize>,
    judged: Option<Judged>,
}

impl LiveGate {
    pub fn new(settings: &GateSettings, all_states: bool) -> Self {
        let scope = WaitingScope {
            checks: gate::dispatch_checks(settings, &Fetched::Found(Vec::new())),
            cluster_queues: settings.cluster_queues.iter().cloned().collect::<BTreeSet<_>>(),
            all_states,
        };
        LiveGate {
            settings: settings.clone(),
            queues: Listed::default(),
            checks: Listed::default(),
            workloads: Listed::default(),
            local_queues: Listed::default(),
            lease: None,
            kueue_lease: None,
            scope,
            by_queue: QueueMap::new(),
            rows: BTreeMap::new(),
            stalled: BTreeMap::new(),
            judged: None,
        }
    }

    pub fn apply(&mut self, fact: Fact) {
        match fact {
            Fact::Queue(c) => {
                if self.queues.apply(c) != Touched::Nothing {
                    self.judged = None;
                }
            }
            Fact::Check(c) => {
                if self.checks.apply(c) != Touched::Nothing {
                    self.judged = None;
                    let dispatch = gate::dispatch_checks(&self.settings, &self.checks.fetched());
                    if dispatch != self.scope.checks {
                        self.scope.checks = dispatch;
                        self.rebuild();
                    }
                }
            }
            Fact::Workload(c) => match self.workloads.apply(c) {
                Touched::Nothing => {}
                Touched::One(key) => self.refresh(key),
                Touched::All => self.rebuild(),
            },
            Fact::LocalQueue(c) => {
                if self.local_queues.apply(c) != Touched::Nothing {
                    let lqs: Vec<LocalQueue> = self.local_queues.visible().map(|(_, lq)| lq.clone()).collect();
                    let map = waiting::queue_map(&lqs);
                    if map != self.by_queue {
                        self.by_queue = map;
                        self.rebuild();
                    }
                }
            }
            Fact::Lease(f) => {
                if self.lease.as_ref() != Some(&f) {
                    self.judged = None;
                    self.lease = Some(f);
                }
            }
            Fact::KueueLease(f) => self.kueue_lease = Some(f),
        }
    }

    /// Every list has been read (or found forbidden) and both Leases seen once.
    pub fn ready(&self) -> bool {
        self.queues.ready
            && self.checks.ready
            && self.workloads.ready
            && self.local_queues.ready
            && self.lease.is_some()
            && self.kueue_lease.is_some()
    }

    /// A Workload's rows as the one-shot gate finds them: its entries at dispatch's checks,
    /// its ClusterQueue through its LocalQueue, in scope, by check.
    fn rows_of(&self, key: &Key) -> Vec<Waiting> {
        if self.workloads.forbidden.is_some() {
            return Vec::new();
        }
        let Some(all) = self.workloads.items.get(key) else { return Vec::new() };
        let ours = all.iter().filter(|w| self.scope.checks.contains(&w.check)).cloned().collect();
        waiting::finish_with(ours, &self.by_queue, &self.scope)
    }

    fn count(&mut self, rows: &[Waiting], add: bool) {
        for w in rows.iter().filter(|w| w.is_stalled()) {
            let n = self.stalled.entry(w.cluster_queue.clone()).or_default();
            *n = if add { *n + 1 } else { n.saturating_sub(1) };
            if *n == 0 {
                self.stalled.remove(&w.cluster_queue);
            }
        }
    }

    /// One Workload changed: its rows and counts, nothing else.
    fn refresh(&mut self, key: Key) {
        if let Some(old) = self.rows.remove(&key) {
            self.count(&old, false);
        }
        let new = self.rows_of(&key);
        if !new.is_empty() {
            self.count(&new, true);
            self.rows.insert(key, new);
        }
    }

    /// What decides every Workload's rows changed (dispatch's checks, a LocalQueue's
    /// ClusterQueue, a new list): all of them again.
    fn rebuild(&mut self) {
        self.rows.clear();
        self.stalled.clear();
        let keys: Vec<Key> = self.workloads.visible().map(|(k, _)| k.clone()).collect();
        for key in keys {
            self.refresh(key);
        }
    }

    /// The chain at `now`: the last judgement while no input changed and the Lease has not
    /// turned stale since, else a new one.
    pub fn report(&mut self, now: Timestamp) -> &GateReport {
        let holds = |j: &Judged| j.at <= now && j.until.is_none_or(|u| now <= u);
        if !self.judged.as_ref().is_some_and(holds) {
            let report = gate::evaluate(&self.settings, &self.facts(), now);
            let until = match &report.lease.state {
                LeaseState::Fresh { stale_in, .. } => now.checked_add(*stale_in).ok(),
                _ => None,
            };
            self.judged = Some(Judged { report, at: now, until });
        }
        &self.judged.as_ref().expect("judged above").report
    }

    /// The chains' verdicts and deciding rules at `now`.
    pub fn signature(&mut self, now: Timestamp) -> Signature {
        signature(self.report(now))
    }

    pub fn verdict(&mut self, now: Timestamp) -> Verdict {
        self.report(now).verdict
    }

    /// The gate's facts, as a one-shot read gives them (the holder is not looked up).
    pub fn facts(&self) -> GateFacts {
        GateFacts {
            cluster_queues: self.queues.fetched(),
            admission_checks: self.checks.fetched(),
            lease: self.lease.clone().unwrap_or(Fetched::Missing),
            holder: None,
        }
    }

    /// The waiting Workloads as the one-shot gate lists them.
    pub fn waiting(&self) -> Fetched<Vec<Waiting>> {
        match &self.workloads.forbidden {
            Some(rule) => Fetched::Forbidden(Denied { rule: rule.clone() }),
            None => Fetched::Found(self.rows.values().flatten().cloned().collect()),
        }
    }

    /// Whether the Workloads may not be listed.
    pub fn waiting_forbidden(&self) -> Option<&str> {
        self.workloads.forbidden.as_deref()
    }

    /// How many wait at dispatch's Pending check with quota reserved.
    pub fn stalled(&self) -> usize {
        self.stalled.values().sum()
    }

    /// [`LiveGate::stalled`] by ClusterQueue (`None`: not known).
    pub fn stalled_by_queue(&self) -> &BTreeMap<Option<String>, usize> {
        &self.stalled
    }

    pub fn lease(&self) -> Option<&Fetched<LeaseFacts>> {
        self.lease.as_ref()
    }

    pub fn kueue_lease(&self) -> Option<&Fetched<LeaseFacts>> {
        self.kueue_lease.as_ref()
    }

    /// The next moment after `now` at which time alone changes something: the last instant
    /// at which dispatch's Lease or Kueue's is still fresh, the earlier.
    pub fn next_change(&self, now: Timestamp) -> Option<Timestamp> {
        let ours = self.lease.as_ref().and_then(|f| fresh_until(&self.settings.lease, f, now));
        let kueue = self.kueue_lease.as_ref().and_then(|f| fresh_until(&self.settings.kueue_lease, f, now));
        ours.into_iter().chain(kueue).min()
    }
}

/// A gate's facts and times for the tests of this state and of the live loop that drives it.
#[cfg(test)]
pub(crate) mod sample {
    use k8s_openapi::jiff::{SignedDuration, Timestamp};

    use crate::core::fetched::Fetched;
    use crate::core::gate::GateFacts;
    use crate::core::kueue::{AdmissionCheck, CheckRule, ClusterQueue, Condition};
    use crate::core::lease::LeaseFacts;

    pub fn at(secs: i64) -> Timestamp {
        "2026-11-30T12:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(secs)
    }

    /// ClusterQueue team-a behind dispatch's Active check, the Lease renewed at `renewed`.
    pub fn facts(renewed: i64) -> GateFacts {
        let active = Condition { status: "True".into(), reason: None, message: None, last_transition: None };
        GateFacts {
            cluster_queues: Fetched::Found(vec![ClusterQueue {
                name: "team-a".into(),
                admission_checks: vec![CheckRule { name: "dispatch".into(), on_flavors: vec![] }],
                active: None,
            }]),
            admission_checks: Fetched::Found(vec![AdmissionCheck {
                name: "dispatch".into(),
                controller_name: Some("dispatch-admission".into()),
                active: Some(active),
            }]),
            lease: Fetched::Found(LeaseFacts {
                holder: Some("a".into()),
                renew_time: Some(at(renewed)),
                acquire_time: Some(at(0)),
                duration_seconds: Some(15),
                transitions: Some(0),
            }),
            holder: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sample::{at, facts};
    use super::*;

    #[test]
    fn a_stale_lease_growing_older_keeps_its_signature_and_a_verdict_change_changes_it() {
        let settings = GateSettings::default();
        let stale_at_40 = gate::evaluate(&settings, &facts(0), at(40));
        let stale_at_90 = gate::evaluate(&settings, &facts(0), at(90));
        assert_ne!(stale_at_40.chains[0].reason, stale_at_90.chains[0].reason, "the reason's age grows");
        assert_eq!(signature(&stale_at_40), signature(&stale_at_90), "but nothing is printed again");
        let fresh = gate::evaluate(&settings, &facts(89), at(90));
        assert_ne!(signature(&fresh), signature(&stale_at_90));
        assert_eq!(signature(&stale_at_90)[0].2, Some((CheckKind::Heartbeat, "fail")));
    }

    fn listed<T>(wrap: fn(ListChange<T>) -> Fact, items: Vec<(Key, T)>) -> [Fact; 3] {
        [wrap(ListChange::Init), wrap(ListChange::Page(items)), wrap(ListChange::InitDone)]
    }

    fn key(name: &str) -> Key {
        (String::new(), name.into())
    }

    fn ready(renewed: i64) -> LiveGate {
        let f = facts(renewed);
        let mut live = LiveGate::new(&GateSettings::default(), false);
        let queues = f.cluster_queues.found().unwrap().iter().map(|q| (key(&q.name), q.clone())).collect();
        let checks = f.admission_checks.found().unwrap().iter().map(|c| (key(&c.name), c.clone())).collect();
        let facts = [listed(Fact::Queue, queues), listed(Fact::Check, checks), listed(Fact::Workload, Vec::new())];
        for fact in facts.into_iter().flatten().chain(listed(Fact::LocalQueue, Vec::new())) {
            live.apply(fact);
        }
        live.apply(Fact::Lease(f.lease.clone()));
        assert!(!live.ready(), "Kueue's Lease is not seen yet");
        live.apply(Fact::KueueLease(Fetched::Missing));
        assert!(live.ready());
        live
    }

    #[test]
    fn the_chain_is_judged_again_when_the_lease_turns_stale_and_on_no_unrelated_event() {
        let mut live = ready(0);
        assert_eq!(live.verdict(at(10)), Verdict::Yes);
        assert_eq!(live.next_change(at(10)), Some(at(30)), "fresh for 2 x 15 s");
        // A status change of Kueue's that the gate does not read leaves the judgement as it was.
        let same = facts(0).cluster_queues.found().unwrap()[0].clone();
        live.apply(Fact::Queue(ListChange::Apply(key("team-a"), same)));
        assert_eq!(live.judged.as_ref().map(|j| j.at), Some(at(10)));
        assert_eq!(live.verdict(at(30)), Verdict::Yes, "fresh up to the limit itself");
        assert_eq!(live.verdict(at(31)), Verdict::No, "and stale after, with no event");
        assert_eq!(live.next_change(at(31)), None);
    }

    #[test]
    fn a_workload_event_moves_only_its_own_rows_and_counts() {
        let mut live = ready(0);
        let row = |name: &str, state: &str| Waiting {
            namespace: "ml".into(),
            name: name.into(),
            cluster_queue: Some("team-a".into()),
            queue_name: Some("q".into()),
            check: "dispatch".into(),
            state: state.into(),
            quota_reserved: true,
            since: None,
            message: String::new(),
        };
        let wl = |name: &str| ("ml".to_string(), name.to_string());
        live.apply(Fact::Workload(ListChange::Apply(wl("b"), vec![row("b", "Pending")])));
        live.apply(Fact::Workload(ListChange::Apply(wl("a"), vec![row("a", "Pending")])));
        assert_eq!(live.stalled(), 2);
        live.apply(Fact::Workload(ListChange::Apply(wl("a"), vec![row("a", "Ready")])));
        assert_eq!(live.stalled_by_queue().get(&Some("team-a".into())), Some(&1));
        let names: Vec<String> = live.waiting().found().unwrap().iter().map(|w| w.name.clone()).collect();
        assert_eq!(names, ["a", "b"], "every row, in the one-shot's order");
        live.apply(Fact::Workload(ListChange::Delete(wl("b"))));
        assert_eq!(live.stalled(), 0);
        assert!(live.stalled_by_queue().is_empty());
    }
}

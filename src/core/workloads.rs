//! Every Workload of a namespace (or of all), each explained by [`workload::explain`], the
//! same judgement `workload NAME` makes: the list `kubectl dispatch workloads` shows. A pure
//! function of the facts read and `now`. No queue positions: asking Kueue's visibility API
//! once per Workload is left to `workload NAME`.

use k8s_openapi::jiff::Timestamp;

use super::fetched::{Denied, Fetched};
use super::gate::{GateFacts, GateSettings};
use super::kueue::LocalQueue;
use super::lease::LeaseFacts;
use super::workload::{self, Explanation, Position, WorkloadFacts, WorkloadInput};

/// What `workloads` reads: the Workloads, in the order the API server listed them, and what
/// their explanations share.
#[derive(Debug, Clone)]
pub struct ListFacts {
    pub workloads: Vec<WorkloadFacts>,
    /// The LocalQueues of the same namespace (or of all).
    pub local_queues: Fetched<Vec<LocalQueue>>,
    /// The ClusterQueues, AdmissionChecks and the Lease, as the gate reads them.
    pub gate: GateFacts,
    /// Kueue's own manager's Lease; `None` when not read.
    pub kueue_lease: Option<Fetched<LeaseFacts>>,
}

/// Each Workload explained at `now`, in the order listed.
pub fn explain_all(settings: &GateSettings, facts: &ListFacts, now: Timestamp) -> Vec<Explanation> {
    facts
        .workloads
        .iter()
        .map(|w| {
            let input = WorkloadInput {
                workload: w.clone(),
                local_queue: local_queue_of(w, &facts.local_queues),
                gate: facts.gate.clone(),
                position: Position::NotAsked,
                kueue_lease: facts.kueue_lease.clone(),
            };
            workload::explain(settings, &input, now)
        })
        .collect()
}

/// The ClusterQueues that Kueue reports inactive (for a reason of its own) among those the
/// listed Workloads wait on, each once, by name, with the warning the list says of it: Kueue
/// admits nothing there, whatever dispatch's gate says, and where to look.
pub fn inactive_queues(explanations: &[Explanation]) -> Vec<String> {
    let mut inactive = Inactive::default();
    inactive.add(explanations);
    inactive.warnings()
}

/// The inactive ClusterQueues a list's Workloads wait on, counted batch by batch as a streamed
/// list is decoded ([`inactive_queues`] for a list held whole): one entry a ClusterQueue.
#[derive(Debug, Default)]
pub struct Inactive(std::collections::BTreeMap<String, (super::kueue::Condition, usize)>);

impl Inactive {
    /// Counts the Workloads of `explanations` that wait on an inactive ClusterQueue.
    pub fn add(&mut self, explanations: &[Explanation]) {
        let waiting = explanations.iter().filter(|e| !e.stage.is_through());
        for (cq, c) in waiting.filter_map(|e| Some((e.cluster_queue.as_ref()?, e.cluster_queue_inactive.as_ref()?))) {
            self.0.entry(cq.clone()).or_insert_with(|| (c.clone(), 0)).1 += 1;
        }
    }

    /// The warning of each, by name.
    pub fn warnings(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(cq, (c, n))| {
                let noun = if *n == 1 { "workload waits" } else { "workloads wait" };
                format!(
                    "{}: Kueue admits nothing there, whatever dispatch's gate says; {n} {noun} there (kubectl describe clusterqueue {cq})",
                    super::kueue::inactive_sentence(cq, c)
                )
            })
            .collect()
    }
}

/// The Workload's LocalQueue, as `workload NAME` would read it alone: found, missing (also
/// when it names none), or forbidden with the list's rule.
fn local_queue_of(w: &WorkloadFacts, listed: &Fetched<Vec<LocalQueue>>) -> Fetched<LocalQueue> {
    let Some(name) = &w.queue_name else { return Fetched::Missing };
    match listed {
        Fetched::Found(queues) => queues
            .iter()
            .find(|q| q.namespace == w.namespace && &q.name == name)
            .cloned()
            .map_or(Fetched::Missing, Fetched::Found),
        Fetched::Forbidden(d) => Fetched::Forbidden(Denied { rule: d.rule.clone() }),
        Fetched::Missing => Fetched::Missing,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::kueue::Condition;
    use crate::core::workload::{CheckDetail, Stage};

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn cond(reason: &str) -> Condition {
        Condition { status: "True".into(), reason: Some(reason.into()), message: None, last_transition: None }
    }

    fn at_dispatch(ns: &str, name: &str, queue: &str) -> WorkloadFacts {
        let reserved = cond("QuotaReserved");
        WorkloadFacts {
            namespace: ns.into(),
            name: name.into(),
            queue_name: Some(queue.into()),
            active: true,
            admitted_in: Some("team-a".into()),
            conditions: BTreeMap::from([("QuotaReserved".into(), reserved)]),
            checks: vec![CheckDetail { name: "dispatch".into(), state: "Pending".into(), ..Default::default() }],
            ..Default::default()
        }
    }

    /// The Workloads listed beside live_gate's sample gate (ClusterQueue team-a behind
    /// dispatch's Active check), its Lease renewed `renewed_ago` seconds before [`now`].
    fn facts(renewed_ago: i64, workloads: Vec<WorkloadFacts>) -> ListFacts {
        ListFacts {
            workloads,
            local_queues: Fetched::Found(vec![LocalQueue {
                namespace: "ml".into(),
                name: "q".into(),
                cluster_queue: "team-a".into(),
            }]),
            gate: crate::core::live_gate::sample::facts(-renewed_ago),
            kueue_lease: None,
        }
    }

    #[test]
    fn each_row_is_what_workload_name_says_of_it() {
        let listed = vec![at_dispatch("ml", "a", "q"), at_dispatch("web", "b", "gone")];
        let list = facts(222, listed.clone());
        let rows = explain_all(&GateSettings::default(), &list, now());
        assert_eq!(rows.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["a", "b"], "the order listed");
        for (row, w) in rows.iter().zip(listed) {
            let alone = WorkloadInput {
                local_queue: local_queue_of(&w, &list.local_queues),
                workload: w,
                gate: list.gate.clone(),
                position: Position::NotAsked,
                kueue_lease: None,
            };
            assert_eq!(*row, workload::explain(&GateSettings::default(), &alone, now()));
        }
        assert_eq!(rows[0].stage, Stage::WaitingAtDispatch);
        assert_eq!(
            rows[0].summary,
            "waits at dispatch's Pending check; the controller's Lease has been stale for 3m12s"
        );
    }

    #[test]
    fn a_local_queue_is_found_by_namespace_and_name() {
        let list = facts(2, Vec::new());
        assert!(matches!(local_queue_of(&at_dispatch("ml", "a", "q"), &list.local_queues), Fetched::Found(_)));
        assert_eq!(local_queue_of(&at_dispatch("web", "a", "q"), &list.local_queues), Fetched::Missing);
        let denied = Fetched::Forbidden(Denied { rule: "list localqueues".into() });
        assert_eq!(
            local_queue_of(&at_dispatch("ml", "a", "q"), &denied),
            Fetched::Forbidden(Denied { rule: "list localqueues".into() })
        );
    }
}

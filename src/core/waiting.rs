//! Inspect's view of what is stuck: Workloads that reserved quota and wait at dispatch's
//! Pending check (or, with `--all-states`, every dispatch check state that is not Ready).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use super::kueue::{LocalQueue, Workload};

/// Which Workload check entries to show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WaitingScope {
    /// Names of dispatch's AdmissionChecks.
    pub checks: BTreeSet<String>,
    /// ClusterQueues named with `--cluster-queue`; empty means all.
    pub cluster_queues: BTreeSet<String>,
    /// Also Retry, Rejected, and Pending before quota is reserved.
    pub all_states: bool,
}

/// One Workload's entry for one of dispatch's checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: Option<String>,
    /// Set when the ClusterQueue is known only through the LocalQueue.
    pub queue_name: Option<String>,
    pub check: String,
    pub state: String,
    pub quota_reserved: bool,
    pub since: Option<Timestamp>,
    pub message: String,
}

impl Waiting {
    /// Waiting at dispatch's check in the strict sense: quota reserved and Pending.
    pub fn is_stalled(&self) -> bool {
        self.quota_reserved && self.state == "Pending"
    }
}

/// The entries of one Workload that the scope selects. Pure and cheap, so it can run on each
/// page of a Workload list as it arrives.
pub fn select(workload: &Workload, scope: &WaitingScope) -> Vec<Waiting> {
    workload
        .checks
        .iter()
        .filter(|c| scope.checks.contains(&c.name))
        .filter(|c| match c.state.as_str() {
            "Pending" => workload.quota_reserved || scope.all_states,
            "Retry" | "Rejected" => scope.all_states,
            _ => false,
        })
        .map(|c| Waiting {
            namespace: workload.namespace.clone(),
            name: workload.name.clone(),
            cluster_queue: workload.admitted_in.clone(),
            queue_name: workload.queue_name.clone(),
            check: c.name.clone(),
            state: c.state.clone(),
            quota_reserved: workload.quota_reserved,
            since: c.last_transition,
            message: c.message.clone(),
        })
        .collect()
}

/// Fills in ClusterQueues through LocalQueues, keeps those in scope, and sorts by namespace
/// then name (then check).
pub fn finish(rows: Vec<Waiting>, local_queues: &[LocalQueue], scope: &WaitingScope) -> Vec<Waiting> {
    finish_with(rows, &queue_map(local_queues), scope)
}

/// Each LocalQueue's ClusterQueue, by namespace then name.
pub type QueueMap = BTreeMap<String, BTreeMap<String, String>>;

pub fn queue_map(local_queues: &[LocalQueue]) -> QueueMap {
    let mut map = QueueMap::new();
    for lq in local_queues {
        map.entry(lq.namespace.clone()).or_default().insert(lq.name.clone(), lq.cluster_queue.clone());
    }
    map
}

/// [`finish`] with the LocalQueues already mapped (`gate --watch` keeps the map).
pub fn finish_with(mut rows: Vec<Waiting>, by_queue: &QueueMap, scope: &WaitingScope) -> Vec<Waiting> {
    for row in rows.iter_mut().filter(|r| r.cluster_queue.is_none()) {
        if let Some(q) = &row.queue_name {
            row.cluster_queue = by_queue.get(&row.namespace).and_then(|m| m.get(q)).cloned();
        }
    }
    if !scope.cluster_queues.is_empty() {
        rows.retain(|r| r.cluster_queue.as_ref().is_some_and(|cq| scope.cluster_queues.contains(cq)));
    }
    rows.sort_by(|a, b| (&a.namespace, &a.name, &a.check).cmp(&(&b.namespace, &b.name, &b.check)));
    rows
}

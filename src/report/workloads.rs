//! `workloads`' run and its JSON/YAML document (`kind: WorkloadList`, schema
//! `kubectl-dispatch/v1`): add fields, never rename or remove them.

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::{SCHEMA, micro};
use crate::core::workload::{Explanation, QueueSource};

/// One `workloads` run: each Workload explained, in the order shown.
#[derive(Debug, Clone)]
pub struct WorkloadsRun {
    pub explanations: Vec<Explanation>,
    /// The namespace listed; `None` with -A.
    pub namespace: Option<String>,
    pub warnings: Vec<String>,
    pub now: Timestamp,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadListDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    /// The namespace listed; `null` for every namespace (-A).
    pub namespace: Option<String>,
    pub items: Vec<WorkloadItemDoc>,
    pub warnings: Vec<String>,
}

/// One Workload of the list: `kubectl get workloads`' columns, then the explanation
/// `workload NAME` gives of it (its `stage` and `summary`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadItemDoc {
    pub namespace: String,
    pub name: String,
    /// `spec.queueName`.
    pub local_queue: Option<String>,
    /// `status.admission.clusterQueue`: where quota is reserved.
    pub reserved_in: Option<String>,
    /// The status of Kueue's Admitted condition (`True`, `False`), `null` without one.
    pub admitted: Option<String>,
    /// The status of Kueue's Finished condition, `null` without one.
    pub finished: Option<String>,
    /// The ClusterQueue judged: where quota is reserved, else its LocalQueue's.
    pub cluster_queue: Option<String>,
    /// As in `WorkloadReport`: admitted, waitingAtDispatch, waitingForQuota, ...
    pub stage: &'static str,
    /// As in `WorkloadReport`: the closing sentence.
    pub summary: String,
    /// The verdict of its ClusterQueue's gate (`yes`, `no`, `unknown`), when one of its checks
    /// is dispatch's; else `null`.
    pub gate: Option<&'static str>,
}

/// A Workload's row: what the table and each item of `-o json` say of it.
pub fn item_doc(e: &Explanation) -> WorkloadItemDoc {
    let status = |t: &str| e.conditions.get(t).map(|c| c.status.clone());
    WorkloadItemDoc {
        namespace: e.namespace.clone(),
        name: e.name.clone(),
        local_queue: e.local_queue.clone(),
        reserved_in: e.cluster_queue.clone().filter(|_| e.cluster_queue_from == Some(QueueSource::Admission)),
        admitted: status("Admitted"),
        finished: status("Finished"),
        cluster_queue: e.cluster_queue.clone(),
        stage: e.stage.id(),
        summary: e.summary.clone(),
        gate: e.gate.as_ref().map(|c| c.verdict.as_str()),
    }
}

impl WorkloadsRun {
    pub fn document(&self) -> WorkloadListDocument {
        WorkloadListDocument {
            schema: SCHEMA,
            kind: "WorkloadList",
            evaluated_at: micro(self.now),
            namespace: self.namespace.clone(),
            items: self.explanations.iter().map(item_doc).collect(),
            warnings: self.warnings.clone(),
        }
    }
}

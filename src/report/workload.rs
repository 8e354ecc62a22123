//! `workload`'s run and its JSON/YAML document (`kind: WorkloadReport`, schema
//! `kubectl-dispatch/v1`): add fields, never rename or remove them.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::{
    ChainDoc, ConditionDoc, KueueLeaseDoc, LeaseDoc, SCHEMA, chain_doc, kueue_lease_doc, lease_doc, micro, seconds,
};
use crate::core::kueue::Condition;
use crate::core::workload::{CheckView, Explanation, Position, QueueSource};

/// One `workload` run.
#[derive(Debug, Clone)]
pub struct WorkloadRun {
    pub explanation: Explanation,
    pub warnings: Vec<String>,
    pub now: Timestamp,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    pub namespace: String,
    pub name: String,
    /// Where it is, in one word: `core::workload::Stage::id` (docs/output.md lists them).
    pub stage: &'static str,
    /// The closing sentence: where it is stuck and why.
    pub summary: String,
    /// `spec.active`.
    pub active: bool,
    pub queue: QueueDoc,
    pub quota: QuotaDoc,
    /// Every condition Kueue set on it, by type.
    pub conditions: BTreeMap<String, ConditionDoc>,
    pub admission_checks: Vec<AdmissionCheckDoc>,
    /// The gate of its ClusterQueue, when one of its checks is dispatch's; else `null`.
    pub gate: Option<ChainDoc>,
    /// The controller's Lease, with the gate; else `null`.
    pub lease: Option<LeaseDoc>,
    /// Kueue's own manager's Lease, as context (absent when not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kueue_lease: Option<KueueLeaseDoc>,
    /// The annotation `kueue.x-k8s.io/admission-gated-by`, when it holds the Workload back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_gated_by: Option<String>,
    /// MultiKueue's placement, when Kueue recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_kueue: Option<MultiKueueDoc>,
    pub position: PositionDoc,
    pub warnings: Vec<String>,
}

/// Where MultiKueue placed the Workload.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueDoc {
    /// `status.clusterName`: the worker cluster that admitted it; `null` before one did.
    pub cluster_name: Option<String>,
    /// `status.nominatedClusterNames`: the worker clusters it was nominated to.
    pub nominated_cluster_names: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueDoc {
    /// `spec.queueName`.
    pub local_queue: Option<String>,
    pub cluster_queue: Option<String>,
    /// `admission` (status.admission.clusterQueue) or `localQueue` (its spec.clusterQueue).
    pub cluster_queue_from: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaDoc {
    pub reserved: bool,
    /// Kueue's QuotaReserved condition, its reason and message.
    pub condition: Option<ConditionDoc>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckDoc {
    pub name: String,
    /// The AdmissionCheck's controllerName; `null` when unknown.
    pub controller_name: Option<String>,
    /// Whether it is dispatch's check.
    pub dispatch: bool,
    pub state: String,
    pub message: String,
    pub last_transition_time: Option<String>,
    pub since_seconds: Option<i64>,
    pub retry_count: Option<i32>,
    pub requeue_after_seconds: Option<i32>,
    /// lastTransitionTime + requeueAfterSeconds, when both are set.
    pub requeue_at: Option<String>,
    pub pod_set_updates: Vec<PodSetUpdateDoc>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdateDoc {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionDoc {
    /// notAsked (it does not wait for quota), found, notListed, notServed, forbidden, failed.
    pub status: &'static str,
    /// Counted from 0, as Kueue's visibility API does.
    pub position_in_cluster_queue: Option<i32>,
    pub position_in_local_queue: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
}

fn condition_doc(c: &Condition) -> ConditionDoc {
    ConditionDoc {
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_transition_time: c.last_transition.map(seconds),
    }
}

fn check_doc(c: &CheckView) -> AdmissionCheckDoc {
    let d = &c.detail;
    AdmissionCheckDoc {
        name: d.name.clone(),
        controller_name: c.controller.clone(),
        dispatch: c.dispatch,
        state: d.state.clone(),
        message: d.message.clone(),
        last_transition_time: d.last_transition.map(seconds),
        since_seconds: c.since.map(|s| s.as_secs()),
        retry_count: d.retry_count,
        requeue_after_seconds: d.requeue_after_seconds,
        requeue_at: match (d.last_transition, d.requeue_after_seconds) {
            (Some(t), Some(after)) => {
                t.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(after.into())).ok().map(seconds)
            }
            _ => None,
        },
        pod_set_updates: d
            .pod_set_updates
            .iter()
            .map(|u| PodSetUpdateDoc {
                name: u.name.clone(),
                labels: u.labels.clone(),
                annotations: u.annotations.clone(),
                node_selector: u.node_selector.clone(),
                tolerations: u.tolerations.clone(),
            })
            .collect(),
    }
}

/// What the output says about the position, when it says anything.
pub fn position_note(p: &Position) -> Option<String> {
    match p {
        Position::NotAsked | Position::Found { .. } => None,
        Position::NotListed { listed } => {
            Some(format!("not among the {listed} pending Workloads Kueue's visibility API lists for its LocalQueue"))
        }
        Position::NotServed => Some(
            "no queue position: the API server does not serve Kueue's visibility API (visibility.kueue.x-k8s.io)"
                .into(),
        ),
        Position::Forbidden(rule) => {
            Some(format!("no queue position: Kueue's visibility API is forbidden (missing RBAC: {rule})"))
        }
        Position::Failed(why) => Some(format!("no queue position: Kueue's visibility API failed: {why}")),
    }
}

fn position_doc(p: &Position) -> PositionDoc {
    let (status, cq, lq) = match p {
        Position::NotAsked => ("notAsked", None, None),
        Position::Found { cluster_queue, local_queue } => ("found", Some(*cluster_queue), Some(*local_queue)),
        Position::NotListed { .. } => ("notListed", None, None),
        Position::NotServed => ("notServed", None, None),
        Position::Forbidden(_) => ("forbidden", None, None),
        Position::Failed(_) => ("failed", None, None),
    };
    PositionDoc {
        status,
        position_in_cluster_queue: cq,
        position_in_local_queue: lq,
        note: position_note(p),
        missing_rbac: match p {
            Position::Forbidden(rule) => Some(rule.clone()),
            _ => None,
        },
    }
}

impl WorkloadRun {
    pub fn document(&self) -> WorkloadDocument {
        let e = &self.explanation;
        WorkloadDocument {
            schema: SCHEMA,
            kind: "WorkloadReport",
            evaluated_at: micro(self.now),
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            stage: e.stage.id(),
            summary: e.summary.clone(),
            active: e.active,
            queue: QueueDoc {
                local_queue: e.local_queue.clone(),
                cluster_queue: e.cluster_queue.clone(),
                cluster_queue_from: e.cluster_queue_from.map(|s| match s {
                    QueueSource::Admission => "admission",
                    QueueSource::LocalQueue => "localQueue",
                }),
                missing_rbac: e.local_queue_forbidden.clone(),
            },
            quota: QuotaDoc {
                reserved: e.quota_reserved,
                condition: e.conditions.get("QuotaReserved").map(condition_doc),
            },
            conditions: e.conditions.iter().map(|(t, c)| (t.clone(), condition_doc(c))).collect(),
            admission_checks: e.checks.iter().map(check_doc).collect(),
            gate: e.gate.as_ref().zip(e.lease.as_ref()).map(|(c, l)| chain_doc(c, l)),
            lease: e.lease.as_ref().map(lease_doc),
            kueue_lease: e.kueue_lease.as_ref().map(kueue_lease_doc),
            admission_gated_by: e.admission_gated_by.clone(),
            multi_kueue: (e.cluster_name.is_some() || !e.nominated_cluster_names.is_empty()).then(|| MultiKueueDoc {
                cluster_name: e.cluster_name.clone(),
                nominated_cluster_names: e.nominated_cluster_names.clone(),
            }),
            position: position_doc(&e.position),
            warnings: self.warnings.clone(),
        }
    }
}

//! What a run found, and its documented, versioned JSON/YAML form. The field names below are a
//! contract (schema `kubectl-dispatch/v1`): add fields, never rename or remove them.

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::core::duration::ceil_seconds;
use crate::core::fetched::Fetched;
use crate::core::gate::{Chain, Check, GateReport, Outcome};
use crate::core::holder::{HolderPod, PodState};
use crate::core::kueue_lease;
use crate::core::lease::{LeaseAssessment, LeaseState};
use crate::core::verdict::Verdict;
use crate::core::waiting::Waiting;

pub mod doctor;
pub mod fleet;
pub mod rbac;
pub mod watch;
pub mod workload;
pub mod workloads;

pub const SCHEMA: &str = "kubectl-dispatch/v1";

/// One `gate` run.
#[derive(Debug, Clone)]
pub struct GateRun {
    pub report: GateReport,
    pub waiting: Fetched<Vec<Waiting>>,
    /// `None` for all namespaces.
    pub namespace: Option<String>,
    pub warnings: Vec<String>,
    pub now: Timestamp,
    /// Kueue's own manager's Lease, as context; `None` when it was not read.
    pub kueue_lease: Option<LeaseAssessment>,
}

/// One `lease` run.
#[derive(Debug, Clone)]
pub struct LeaseRun {
    pub assessment: LeaseAssessment,
    pub warnings: Vec<String>,
    pub now: Timestamp,
}

impl GateRun {
    /// "3 workloads wait at dispatch's Pending check; the controller's Lease is stale", when the
    /// gate is not yes and something waits.
    pub fn stall_summary(&self) -> Option<String> {
        if self.report.verdict == Verdict::Yes {
            return None;
        }
        // Only Workloads whose ClusterQueue's gate is not yes are stuck because of it.
        let open: Vec<&str> = self
            .report
            .chains
            .iter()
            .filter(|c| c.verdict == Verdict::Yes)
            .filter_map(|c| c.cluster_queue.as_deref())
            .collect();
        let stalled: Vec<&Waiting> = self
            .waiting
            .found()?
            .iter()
            .filter(|w| w.is_stalled())
            .filter(|w| !w.cluster_queue.as_deref().is_some_and(|cq| open.contains(&cq)))
            .collect();
        let first = stalled.first()?;
        let chain = self
            .report
            .chains
            .iter()
            .find(|c| c.verdict != Verdict::Yes && c.cluster_queue.is_some() && c.cluster_queue == first.cluster_queue)
            .or_else(|| self.report.chains.iter().find(|c| c.verdict == self.report.verdict))?;
        let noun = if stalled.len() == 1 { "workload waits" } else { "workloads wait" };
        Some(format!("{} {noun} at dispatch's Pending check; {}", stalled.len(), self.cause(chain)))
    }

    fn cause(&self, chain: &Chain) -> String {
        let deciding = chain.checks.iter().find(|k| matches!(k.outcome, Outcome::Fail(_)));
        match (deciding.map(|c| c.kind), &self.report.lease.state) {
            (Some(crate::core::gate::CheckKind::Heartbeat), state) => match state {
                LeaseState::Stale { .. } => "the controller's Lease is stale".into(),
                LeaseState::NoHolder => "the controller's Lease has no holder".into(),
                LeaseState::NeverRenewed => "the controller's Lease has never been renewed".into(),
                LeaseState::Missing => "the controller's Lease does not exist".into(),
                _ => "the controller's Lease is not a live heartbeat".into(),
            },
            _ => match &chain.reason {
                Some(reason) if chain.verdict == Verdict::Unknown => format!("the gate cannot be proved: {reason}"),
                Some(reason) => format!("the gate is closed: {reason}"),
                None => "the gate is not open".into(),
            },
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    pub verdict: Verdict,
    pub mode: &'static str,
    pub chains: Vec<ChainDoc>,
    pub lease: LeaseDoc,
    /// Kueue's own manager's Lease, as context (it never decides the verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kueue_lease: Option<KueueLeaseDoc>,
    /// `null` when the Workloads could not be listed (see warnings).
    pub waiting: Option<Vec<WaitingDoc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainDoc {
    pub cluster_queue: Option<String>,
    /// The AdmissionCheck judged; with several, the one that decides (else the first by name).
    pub admission_check: Option<String>,
    /// Every AdmissionCheck checks 2 and 3 judged, by name.
    pub admission_checks: Vec<String>,
    /// How the ClusterQueue lists dispatch's checks: Kueue's admissionChecksStrategy rules.
    pub admission_check_rules: Vec<RuleDoc>,
    /// Kueue's own Active condition on the ClusterQueue; `null` when it has none or was not read.
    pub cluster_queue_active: Option<ConditionDoc>,
    pub verdict: Verdict,
    pub mode: &'static str,
    pub reason: Option<String>,
    /// A stable name for the deciding reason (`LeaseStale`, `ClusterQueueNotFound`, ...); `null`
    /// when the gate holds.
    pub reason_code: Option<&'static str>,
    pub checks: Vec<CheckDoc>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleDoc {
    pub name: String,
    /// The ResourceFlavors the check runs for; empty means every flavor.
    pub on_flavors: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionDoc {
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckDoc {
    pub id: &'static str,
    pub title: &'static str,
    pub result: &'static str,
    pub detail: String,
    /// false after the deciding failure: the adapter stops there.
    pub reached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseDoc {
    pub namespace: String,
    pub name: String,
    pub status: &'static str,
    pub verdict: Verdict,
    pub reason: Option<String>,
    /// A stable name for the reason (`LeaseStale`, `LeaseNotFound`, `LeaseForbidden`, ...).
    pub reason_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
    pub holder: Option<String>,
    pub renew_time: Option<String>,
    pub acquire_time: Option<String>,
    pub lease_duration_seconds: Option<i32>,
    pub lease_transitions: Option<i32>,
    pub limit_seconds: Option<i64>,
    pub age_seconds: Option<i64>,
    pub stale_in_seconds: Option<i64>,
    pub stale_for_seconds: Option<i64>,
    /// What became of the holder's pod; absent when it was not looked up (no holder, or a
    /// live mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder_pod: Option<HolderPodDoc>,
}

/// Kueue's own manager's leader-election Lease, judged by the heartbeat rule, shown as context.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KueueLeaseDoc {
    pub namespace: String,
    pub name: String,
    /// fresh, stale, no holder, never renewed, no lease (a manager without leader election),
    /// forbidden.
    pub status: &'static str,
    /// Whether it shows that no manager leads (stale, no holder, never renewed).
    pub down: bool,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
    pub holder: Option<String>,
    pub renew_time: Option<String>,
    pub lease_duration_seconds: Option<i32>,
    pub limit_seconds: Option<i64>,
    pub age_seconds: Option<i64>,
    pub stale_for_seconds: Option<i64>,
}

pub fn kueue_lease_doc(a: &LeaseAssessment) -> KueueLeaseDoc {
    let facts = a.facts.clone().unwrap_or_default();
    let (limit, age, stale_for) = match &a.state {
        LeaseState::Fresh { age, limit, .. } => (Some(limit.as_secs()), Some(ceil_seconds(*age)), None),
        LeaseState::Stale { age, limit, stale_for } => {
            (Some(limit.as_secs()), Some(ceil_seconds(*age)), Some(ceil_seconds(*stale_for)))
        }
        _ => (facts.duration_seconds.map(|d| 2 * i64::from(d)), None, None),
    };
    KueueLeaseDoc {
        namespace: a.lease.namespace.clone(),
        name: a.lease.name.clone(),
        status: kueue_lease::status(a),
        down: kueue_lease::is_down(a),
        detail: kueue_lease::sentence(a),
        missing_rbac: match &a.state {
            LeaseState::Forbidden { rule } => Some(rule.clone()),
            _ => None,
        },
        holder: facts.holder.clone(),
        renew_time: facts.renew_time.map(micro),
        lease_duration_seconds: facts.duration_seconds,
        limit_seconds: limit,
        age_seconds: age,
        stale_for_seconds: stale_for,
    }
}

/// The holder's pod (`<pod name>_<id>` in holderIdentity). Never decides the verdict.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HolderPodDoc {
    /// `null` when the holder does not name a pod.
    pub name: Option<String>,
    pub namespace: String,
    pub node: Option<String>,
    /// running, restarting, not ready, terminating, gone, node not ready, forbidden, not a pod.
    pub status: &'static str,
    /// Restarts over its containers, when the pod was read.
    pub restarts: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_rbac: Option<String>,
    pub detail: String,
}

pub fn holder_pod_doc(p: &HolderPod) -> HolderPodDoc {
    HolderPodDoc {
        name: (!p.pod.is_empty()).then(|| p.pod.clone()),
        namespace: p.namespace.clone(),
        node: p.node.clone(),
        status: p.state.label(),
        restarts: match &p.state {
            PodState::Ready { restarts, .. } | PodState::Restarting { restarts, .. } => Some(*restarts),
            PodState::NotReady { .. } => Some(0),
            _ => None,
        },
        missing_rbac: match &p.state {
            PodState::Forbidden { rule } => Some(rule.clone()),
            _ => None,
        },
        detail: p.sentence(),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingDoc {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: Option<String>,
    pub check: String,
    pub state: String,
    pub quota_reserved: bool,
    pub last_transition_time: Option<String>,
    pub since_seconds: Option<i64>,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    pub lease: LeaseDoc,
    pub warnings: Vec<String>,
}

pub(crate) fn micro(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub(crate) fn seconds(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn lease_doc(a: &LeaseAssessment) -> LeaseDoc {
    let facts = a.facts.clone().unwrap_or_default();
    let (limit, age, stale_in, stale_for) = match &a.state {
        LeaseState::Fresh { age, limit, stale_in } => {
            (Some(limit.as_secs()), Some(ceil_seconds(*age)), Some(stale_in.as_secs()), None)
        }
        LeaseState::Stale { age, limit, stale_for } => {
            (Some(limit.as_secs()), Some(ceil_seconds(*age)), None, Some(ceil_seconds(*stale_for)))
        }
        _ => (facts.duration_seconds.map(|d| 2 * i64::from(d)), None, None, None),
    };
    LeaseDoc {
        namespace: a.lease.namespace.clone(),
        name: a.lease.name.clone(),
        status: a.state.label(),
        verdict: a.state.verdict(),
        reason: a.state.reason(&a.lease),
        reason_code: crate::core::gate::lease_code(&a.state),
        missing_rbac: match &a.state {
            LeaseState::Forbidden { rule } => Some(rule.clone()),
            _ => None,
        },
        holder: facts.holder.clone(),
        renew_time: facts.renew_time.map(micro),
        acquire_time: facts.acquire_time.map(micro),
        lease_duration_seconds: facts.duration_seconds,
        lease_transitions: facts.transitions,
        limit_seconds: limit,
        age_seconds: age,
        stale_in_seconds: stale_in,
        stale_for_seconds: stale_for,
        holder_pod: a.holder_pod.as_ref().map(holder_pod_doc),
    }
}

fn check_doc(c: &Check, reached: bool, lease: &LeaseAssessment) -> CheckDoc {
    let (reason, missing_rbac) = match &c.outcome {
        Outcome::Pass => (None, None),
        Outcome::Fail(r) => (Some(r.clone()), None),
        Outcome::Unknown(rule) => (None, Some(rule.clone())),
    };
    CheckDoc {
        id: c.kind.id(),
        title: c.kind.title(),
        result: c.outcome.label(),
        detail: with_holder_pod(c, lease),
        reached,
        reason,
        reason_code: c.code,
        missing_rbac,
    }
}

/// A check's detail; the Lease check's names what became of the holder's pod, when it was
/// looked up (`-o wide` and JSON/YAML).
pub fn with_holder_pod(c: &Check, lease: &LeaseAssessment) -> String {
    match (&lease.holder_pod, c.kind) {
        (Some(pod), crate::core::gate::CheckKind::Heartbeat) => format!("{}; {}", c.detail, pod.sentence()),
        _ => c.detail.clone(),
    }
}

pub(crate) fn chain_doc(c: &Chain, lease: &LeaseAssessment) -> ChainDoc {
    ChainDoc {
        cluster_queue: c.cluster_queue.clone(),
        admission_check: c.admission_check.clone(),
        admission_checks: c.admission_checks.clone(),
        admission_check_rules: c
            .rules
            .iter()
            .map(|r| RuleDoc { name: r.name.clone(), on_flavors: r.on_flavors.clone() })
            .collect(),
        cluster_queue_active: c.cluster_queue_active.as_ref().map(|a| ConditionDoc {
            status: a.status.clone(),
            reason: a.reason.clone(),
            message: a.message.clone(),
            last_transition_time: a.last_transition.map(seconds),
        }),
        verdict: c.verdict,
        mode: c.verdict.mode(),
        reason: c.reason.clone(),
        reason_code: c.reason_code,
        checks: c.checks.iter().enumerate().map(|(i, k)| check_doc(k, c.reached(i), lease)).collect(),
    }
}

pub fn waiting_doc(w: &Waiting, now: Timestamp) -> WaitingDoc {
    WaitingDoc {
        namespace: w.namespace.clone(),
        name: w.name.clone(),
        cluster_queue: w.cluster_queue.clone(),
        check: w.check.clone(),
        state: w.state.clone(),
        quota_reserved: w.quota_reserved,
        last_transition_time: w.since.map(seconds),
        since_seconds: w.since.map(|t| now.duration_since(t).as_secs()),
        message: w.message.clone(),
    }
}

impl GateRun {
    pub fn document(&self) -> GateDocument {
        GateDocument {
            schema: SCHEMA,
            kind: "GateReport",
            evaluated_at: micro(self.now),
            verdict: self.report.verdict,
            mode: self.report.verdict.mode(),
            chains: self.report.chains.iter().map(|c| chain_doc(c, &self.report.lease)).collect(),
            lease: lease_doc(&self.report.lease),
            kueue_lease: self.kueue_lease.as_ref().map(kueue_lease_doc),
            waiting: self.waiting.found().map(|ws| ws.iter().map(|w| waiting_doc(w, self.now)).collect()),
            summary: self.stall_summary(),
            warnings: self.warnings.clone(),
        }
    }
}

impl LeaseRun {
    pub fn document(&self) -> LeaseDocument {
        LeaseDocument {
            schema: SCHEMA,
            kind: "LeaseReport",
            evaluated_at: micro(self.now),
            lease: lease_doc(&self.assessment),
            warnings: self.warnings.clone(),
        }
    }
}

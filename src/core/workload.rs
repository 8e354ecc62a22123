//! One Workload explained: its path from LocalQueue to ClusterQueue, its quota, each of its
//! admission checks, the readmission gate of its ClusterQueue when dispatch's check is among
//! them, its place in Kueue's pending queue, and one sentence that says where it is stuck and
//! why. A pure function of the facts read and `now`; the gate is [`gate::evaluate`]'s own.

use std::collections::BTreeMap;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::duration::{human, human_up};
use super::fetched::Fetched;
use super::gate::{self, Chain, CheckKind, GateFacts, GateSettings, Outcome};
use super::kueue::{AdmissionCheck, Condition, LocalQueue, inactive_by_kueue};
use super::kueue_lease;
use super::lease::{LeaseAssessment, LeaseFacts, LeaseState};
use super::verdict::Verdict;

/// A Workload as `workload` reads it: more of it than the gate's list keeps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadFacts {
    pub namespace: String,
    pub name: String,
    /// `spec.queueName`: the LocalQueue.
    pub queue_name: Option<String>,
    /// `spec.active`; Kueue deactivates a Workload (false) when a check rejects it.
    pub active: bool,
    /// `status.admission.clusterQueue`: set while quota is reserved.
    pub admitted_in: Option<String>,
    /// The annotation `kueue.x-k8s.io/admission-gated-by`: who holds it back before quota.
    pub admission_gated_by: Option<String>,
    /// MultiKueue's `status.clusterName`: the worker cluster that admitted it.
    pub cluster_name: Option<String>,
    /// MultiKueue's `status.nominatedClusterNames`: the worker clusters it was nominated to.
    pub nominated_cluster_names: Vec<String>,
    /// Kueue's conditions by type (QuotaReserved, Admitted, Evicted, Finished, ...).
    pub conditions: BTreeMap<String, Condition>,
    /// `status.admissionChecks`, in Kueue's order.
    pub checks: Vec<CheckDetail>,
}

impl WorkloadFacts {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.get(type_)
    }

    fn is(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(Condition::is_true)
    }
}

/// One entry of `status.admissionChecks`, whole.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckDetail {
    pub name: String,
    pub state: String,
    pub message: String,
    pub last_transition: Option<Timestamp>,
    /// Kueue counts each move to Retry (Kueue v0.15 and later).
    pub retry_count: Option<i32>,
    /// Set by the check's controller with Retry: Kueue requeues no sooner than
    /// lastTransitionTime + this.
    pub requeue_after_seconds: Option<i32>,
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// What a check asks Kueue to change on one PodSet when it admits the Workload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodSetUpdate {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    /// Each toleration as `key=value:Effect` (or `key:Effect`, `:Effect` for all keys).
    pub tolerations: Vec<String>,
}

/// The Workload's place in Kueue's pending queue, from the visibility API
/// (`visibility.kueue.x-k8s.io` pendingworkloads of its LocalQueue).
#[derive(Debug, Clone, PartialEq)]
pub enum Position {
    /// Not asked: the Workload does not wait for quota.
    NotAsked,
    /// Positions counted from 0, as Kueue does.
    Found { cluster_queue: i32, local_queue: i32 },
    /// The list was read and the Workload is not in it (of `listed` entries).
    NotListed { listed: usize },
    /// The API server does not serve the visibility API.
    NotServed,
    /// The read was forbidden; the rule that would allow it.
    Forbidden(String),
    /// The visibility API answered with an error (e.g. 503: registered, its server down).
    Failed(String),
}

/// Everything `workload` reads.
#[derive(Debug, Clone)]
pub struct WorkloadInput {
    pub workload: WorkloadFacts,
    /// The LocalQueue named by `spec.queueName`; `Missing` also when there is none to read.
    pub local_queue: Fetched<LocalQueue>,
    /// The ClusterQueues, AdmissionChecks and the Lease, as the gate reads them.
    pub gate: GateFacts,
    pub position: Position,
    /// Kueue's own manager's Lease, read beside dispatch's; `None` when not read.
    pub kueue_lease: Option<Fetched<LeaseFacts>>,
}

/// A check of the Workload, with whose it is.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckView {
    pub detail: CheckDetail,
    /// The AdmissionCheck's controllerName; `None` when it is missing or could not be read.
    pub controller: Option<String>,
    /// Whether this is dispatch's check.
    pub dispatch: bool,
    /// How long ago it last changed state.
    pub since: Option<SignedDuration>,
    /// When Kueue requeues it (lastTransitionTime + requeueAfterSeconds), relative to now:
    /// positive in the future.
    pub requeue_in: Option<SignedDuration>,
}

/// Where the ClusterQueue came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSource {
    /// `status.admission.clusterQueue`.
    Admission,
    /// The LocalQueue's `spec.clusterQueue`.
    LocalQueue,
}

/// Where the Workload is, in one word for JSON and in one sentence for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Finished,
    Deactivated,
    Admitted,
    NoQueue,
    QueueMissing,
    WaitingForQuota,
    /// Held back before quota by `kueue.x-k8s.io/admission-gated-by`.
    AdmissionGated,
    /// Kueue says it asks for more than its ClusterQueue could ever give (`ExceedsMaxQuota`).
    ExceedsMaxQuota,
    /// Kueue says something about its queues is wrong (`Misconfigured`).
    Misconfigured,
    /// Kueue says no ResourceFlavor of its ClusterQueue matches it (`NoMatchingFlavor`).
    NoMatchingFlavor,
    /// Kueue says its topology request does not fit the nodes now (`TopologyPlacementFailed`).
    TopologyPlacementFailed,
    /// Kueue waits for the Workloads it preempted to release their quota
    /// (`WaitingForPreemptedWorkloads`).
    WaitingForPreemptedWorkloads,
    /// Its LocalQueue or ClusterQueue is stopped (`Suspended`).
    Suspended,
    /// Kueue's scheduler has yet to try it (`PendingEvaluation`).
    PendingEvaluation,
    /// Kueue waits for earlier Workloads' pods to be ready (`WaitingForPodsReady`).
    WaitingForPodsReady,
    /// Its quota was released on purpose and Kueue does not requeue it (`OnHold`).
    OnHold,
    /// Kueue gives a reason this plugin does not know: quoted, not guessed at.
    QuotaNotReserved,
    Rejected,
    Retry,
    WaitingAtDispatch,
    WaitingAtCheck,
    WaitingForAdmission,
    /// Quota reserved, every check Ready, and Kueue waits for its delayed topology requests
    /// (`Admitted=False` with `PendingDelayedTopologyRequests`).
    WaitingForTopology,
}

impl Stage {
    pub fn id(self) -> &'static str {
        match self {
            Stage::Finished => "finished",
            Stage::Deactivated => "deactivated",
            Stage::Admitted => "admitted",
            Stage::NoQueue => "noQueue",
            Stage::QueueMissing => "queueMissing",
            Stage::WaitingForQuota => "waitingForQuota",
            Stage::AdmissionGated => "admissionGated",
            Stage::ExceedsMaxQuota => "exceedsMaxQuota",
            Stage::Misconfigured => "misconfigured",
            Stage::NoMatchingFlavor => "noMatchingFlavor",
            Stage::TopologyPlacementFailed => "topologyPlacementFailed",
            Stage::WaitingForPreemptedWorkloads => "waitingForPreemptedWorkloads",
            Stage::Suspended => "suspended",
            Stage::PendingEvaluation => "pendingEvaluation",
            Stage::WaitingForPodsReady => "waitingForPodsReady",
            Stage::OnHold => "onHold",
            Stage::QuotaNotReserved => "quotaNotReserved",
            Stage::Rejected => "rejected",
            Stage::Retry => "retry",
            Stage::WaitingAtDispatch => "waitingAtDispatch",
            Stage::WaitingAtCheck => "waitingAtCheck",
            Stage::WaitingForAdmission => "waitingForAdmission",
            Stage::WaitingForTopology => "waitingForTopology",
        }
    }

    /// Admitted or finished: nothing holds it.
    pub fn is_through(self) -> bool {
        matches!(self, Stage::Admitted | Stage::Finished)
    }
}

/// One Workload explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    pub namespace: String,
    pub name: String,
    pub local_queue: Option<String>,
    /// `None` when the LocalQueue is missing or unread and no quota is reserved.
    pub cluster_queue: Option<String>,
    pub cluster_queue_from: Option<QueueSource>,
    /// The LocalQueue could not be read: the missing rule.
    pub local_queue_forbidden: Option<String>,
    pub active: bool,
    pub quota_reserved: bool,
    pub conditions: BTreeMap<String, Condition>,
    pub checks: Vec<CheckView>,
    /// The gate of the ClusterQueue, when one of the Workload's checks is dispatch's (or the
    /// AdmissionChecks could not be read, so it might be).
    pub gate: Option<Chain>,
    pub lease: Option<LeaseAssessment>,
    /// Kueue's own manager's Lease (context); `None` when it was not read.
    pub kueue_lease: Option<LeaseAssessment>,
    /// Kueue's Active condition on the Workload's ClusterQueue when Kueue reports it inactive
    /// for a reason of its own ([`inactive_by_kueue`]): Kueue admits nothing there.
    pub cluster_queue_inactive: Option<Condition>,
    pub admission_gated_by: Option<String>,
    pub cluster_name: Option<String>,
    pub nominated_cluster_names: Vec<String>,
    pub position: Position,
    pub stage: Stage,
    /// The closing sentence.
    pub summary: String,
}

/// Explains the Workload at `now`.
pub fn explain(settings: &GateSettings, input: &WorkloadInput, now: Timestamp) -> Explanation {
    let w = &input.workload;
    let (cluster_queue, cluster_queue_from) = match (&w.admitted_in, &input.local_queue) {
        (Some(cq), _) => (Some(cq.clone()), Some(QueueSource::Admission)),
        (None, Fetched::Found(lq)) => (Some(lq.cluster_queue.clone()), Some(QueueSource::LocalQueue)),
        _ => (None, None),
    };
    let local_queue_forbidden = match &input.local_queue {
        Fetched::Forbidden(d) => Some(d.rule.clone()),
        _ => None,
    };
    let acs: Option<&[AdmissionCheck]> = input.gate.admission_checks.found().map(Vec::as_slice);
    let dispatch = gate::dispatch_checks(settings, &input.gate.admission_checks);
    let checks: Vec<CheckView> = w
        .checks
        .iter()
        .map(|c| {
            let controller =
                acs.and_then(|acs| acs.iter().find(|ac| ac.name == c.name)).and_then(|ac| ac.controller_name.clone());
            let since = c.last_transition.map(|t| now.duration_since(t));
            let requeue_in = match (c.last_transition, c.requeue_after_seconds) {
                (Some(t), Some(after)) => {
                    Some(t.duration_since(now).saturating_add(SignedDuration::from_secs(i64::from(after))))
                }
                _ => None,
            };
            CheckView { detail: c.clone(), controller, dispatch: dispatch.contains(&c.name), since, requeue_in }
        })
        .collect();
    // The gate matters when dispatch's check is among the Workload's, or might be (the
    // AdmissionChecks could not be read and the Workload has checks).
    let blind = acs.is_none() && !w.checks.is_empty();
    let (gate, lease) = match &cluster_queue {
        Some(cq) if checks.iter().any(|c| c.dispatch) || blind => {
            let scoped = GateSettings { cluster_queues: vec![cq.clone()], ..settings.clone() };
            let report = gate::evaluate(&scoped, &input.gate, now);
            (report.chains.into_iter().next(), Some(report.lease))
        }
        _ => (None, None),
    };
    let cluster_queue_inactive = queue_inactive(&input.gate, cluster_queue.as_deref());
    let quota_reserved = w.is("QuotaReserved");
    let position = if quota_reserved || !w.active { Position::NotAsked } else { input.position.clone() };
    let mut e = Explanation {
        namespace: w.namespace.clone(),
        name: w.name.clone(),
        local_queue: w.queue_name.clone(),
        cluster_queue,
        cluster_queue_from,
        local_queue_forbidden,
        active: w.active,
        quota_reserved,
        conditions: w.conditions.clone(),
        checks,
        gate,
        lease,
        kueue_lease: input.kueue_lease.as_ref().map(|f| kueue_lease::assess(&settings.kueue_lease, f, now)),
        cluster_queue_inactive,
        admission_gated_by: w.admission_gated_by.clone(),
        cluster_name: w.cluster_name.clone(),
        nominated_cluster_names: w.nominated_cluster_names.clone(),
        position,
        // Decided just below, from the rest.
        stage: Stage::WaitingForAdmission,
        summary: String::new(),
    };
    let (stage, summary) = conclude(&e, &input.local_queue);
    e.summary = with_kueues_clauses(&e, stage, summary);
    e.stage = stage;
    e
}

/// The commands that show what holds it, for `Next:`, where Kueue's queues hold it: its
/// ClusterQueue inactive, stopped, with no flavor that fits, or too small ever to fit it, the
/// queue to describe (and the LocalQueue, which may be the stopped one; the flavors, one of
/// which should match). Empty once it is through, or when the queues are not what holds it.
pub fn next_commands(e: &Explanation) -> Vec<String> {
    if e.stage.is_through() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if e.stage == Stage::Suspended
        && let Some(lq) = &e.local_queue
    {
        out.push(format!("kubectl describe localqueue {lq} -n {}", e.namespace));
    }
    let queue_holds = e.cluster_queue_inactive.is_some()
        || matches!(e.stage, Stage::Suspended | Stage::NoMatchingFlavor | Stage::ExceedsMaxQuota);
    if queue_holds && let Some(cq) = &e.cluster_queue {
        out.push(format!("kubectl describe clusterqueue {cq}"));
    }
    if e.stage == Stage::NoMatchingFlavor {
        out.push("kubectl get resourceflavors -o yaml".into());
    }
    out
}

/// Kueue's Active condition on ClusterQueue `cq`, when Kueue reports it inactive.
fn queue_inactive(gate: &GateFacts, cq: Option<&str>) -> Option<Condition> {
    let queue = gate.cluster_queues.found()?.iter().find(|q| Some(q.name.as_str()) == cq)?;
    inactive_by_kueue(queue.active.as_ref()).cloned()
}

/// The sentence of a Workload that waits, with what Kueue itself stops: its ClusterQueue
/// inactive, or its manager down, after which nothing it waits for from Kueue will come. (At
/// dispatch's check with the gate open, [`gate_cause`] has said the first already.)
fn with_kueues_clauses(e: &Explanation, stage: Stage, mut summary: String) -> String {
    let waits = matches!(
        stage,
        Stage::WaitingForQuota
            | Stage::TopologyPlacementFailed
            | Stage::WaitingForPreemptedWorkloads
            | Stage::Suspended
            | Stage::PendingEvaluation
            | Stage::WaitingForPodsReady
            | Stage::QuotaNotReserved
            | Stage::WaitingAtDispatch
            | Stage::WaitingAtCheck
            | Stage::WaitingForAdmission
            | Stage::WaitingForTopology
    );
    if !waits {
        return summary;
    }
    if !summary.contains("Kueue admits nothing on ClusterQueue")
        && let Some(clause) = inactive_clause(e)
    {
        summary.push_str(&format!("; {clause}"));
    }
    if let Some(clause) = e.kueue_lease.as_ref().and_then(kueue_lease::clause) {
        summary.push_str(&clause);
    }
    summary
}

/// `Kueue admits nothing on ClusterQueue team-a (FlavorNotFound)`: first, and Kueue's reason
/// only, so that the list's cut cell still says it (the message is in `kubectl describe
/// clusterqueue`, which the verbs name).
fn inactive_clause(e: &Explanation) -> Option<String> {
    let c = e.cluster_queue_inactive.as_ref()?;
    let cq = e.cluster_queue.as_deref()?;
    let why = c.reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("inactive");
    Some(format!("Kueue admits nothing on ClusterQueue {cq} ({why})"))
}

/// ` (Kueue: ...)` when Kueue said something.
fn kueue_says(c: Option<&Condition>) -> String {
    match c.map(Condition::said).filter(|s| !s.is_empty()) {
        Some(s) => format!(" (Kueue: {s})"),
        None => String::new(),
    }
}

fn conclude(e: &Explanation, local_queue: &Fetched<LocalQueue>) -> (Stage, String) {
    let cond = |t: &str| e.conditions.get(t);
    let is = |t: &str| cond(t).is_some_and(Condition::is_true);
    if is("Finished") {
        return (Stage::Finished, format!("finished{}", kueue_says(cond("Finished"))));
    }
    if !e.active {
        let why = cond("Evicted").filter(|c| c.is_true());
        return (
            Stage::Deactivated,
            format!("deactivated (spec.active is false): Kueue will not admit it{}", kueue_says(why)),
        );
    }
    if is("Admitted") {
        return (Stage::Admitted, "admitted".into());
    }
    let Some(lq) = &e.local_queue else {
        return (Stage::NoQueue, "waits for nothing: spec.queueName is empty, so no Kueue queue holds it".into());
    };
    if !e.quota_reserved
        && let Some(gates) = &e.admission_gated_by
    {
        return (
            Stage::AdmissionGated,
            format!(
                "held back by {} (annotation kueue.x-k8s.io/admission-gated-by): it has not asked for quota yet",
                gates.split(',').map(str::trim).filter(|g| !g.is_empty()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    if !e.quota_reserved {
        return without_quota(e, lq, local_queue);
    }
    at_the_checks(e)
}

/// A Workload that has not reserved quota: where it waits, or why it never will.
fn without_quota(e: &Explanation, lq: &str, local_queue: &Fetched<LocalQueue>) -> (Stage, String) {
    let cond = |t: &str| e.conditions.get(t);
    if let Fetched::Missing = local_queue
        && e.cluster_queue.is_none()
    {
        return (
            Stage::QueueMissing,
            format!("waits for LocalQueue {lq}, which does not exist in namespace {}", e.namespace),
        );
    }
    let evicted = cond("Evicted")
        .filter(|c| c.is_true())
        .map(|c| format!("; evicted before{}", kueue_says(Some(c))))
        .unwrap_or_default();
    let place = match &e.position {
        Position::Found { cluster_queue, local_queue } => {
            format!(
                ", position {} in ClusterQueue {} ({} in LocalQueue {lq})",
                cluster_queue,
                e.cluster_queue.as_deref().unwrap_or("?"),
                local_queue
            )
        }
        _ => String::new(),
    };
    let at = if e.checks.iter().any(|c| c.dispatch) { ", not yet at dispatch's check" } else { "" };
    if let Some(said) = cond("QuotaReserved").filter(|c| !c.is_true()).and_then(|c| kueues_reason(e, lq, c)) {
        return said;
    }
    (Stage::WaitingForQuota, format!("waits for quota{place}{at}{}{evicted}", kueue_says(cond("QuotaReserved"))))
}

/// Kueue's reason on `QuotaReserved=False`, each in its own sentence: Kueue v0.19's reasons
/// (its feature gate UnadmittedWorkloadsObservability; apis/kueue/v1beta2/workload_types.go)
/// and `OnHold`. A reason this plugin does not know is quoted as Kueue's, with no guess at
/// what it means. `None` for what means "waits for quota": `WaitingForQuota`, the older
/// lines' `Pending` and `Inadmissible`, and no reason.
fn kueues_reason(e: &Explanation, lq: &str, quota: &Condition) -> Option<(Stage, String)> {
    let cq = e.cluster_queue.as_deref().map(|cq| format!("ClusterQueue {cq}")).unwrap_or("its ClusterQueue".into());
    let (stage, sentence) = match quota.reason.as_deref().filter(|r| !r.is_empty())? {
        "WaitingForQuota" | "Pending" | "Inadmissible" => return None,
        "Misconfigured" => {
            let what = quota.message.as_deref().filter(|m| !m.is_empty()).unwrap_or("no message");
            return Some((Stage::Misconfigured, format!("cannot be admitted until Kueue's queues are fixed: {what}")));
        }
        "ExceedsMaxQuota" => {
            (Stage::ExceedsMaxQuota, format!("can never be admitted here: it asks for more than {cq} could ever give"))
        }
        "NoMatchingFlavor" => (
            Stage::NoMatchingFlavor,
            format!(
                "cannot be admitted until a ResourceFlavor of {cq} matches it: none fits its node selector, affinity or tolerations"
            ),
        ),
        "TopologyPlacementFailed" => (
            Stage::TopologyPlacementFailed,
            "waits for room in the topology: its topology request does not fit the nodes as they are used now".into(),
        ),
        "WaitingForPreemptedWorkloads" => (
            Stage::WaitingForPreemptedWorkloads,
            "waits for the Workloads preempted to make room for it to release their quota".into(),
        ),
        "Suspended" => (
            Stage::Suspended,
            format!(
                "held: Kueue admits nothing from LocalQueue {lq} or {cq} now: one of them is stopped (spec.stopPolicy) or inactive"
            ),
        ),
        "PendingEvaluation" => {
            (Stage::PendingEvaluation, "not yet evaluated: Kueue's scheduler has yet to try to fit it".into())
        }
        "WaitingForPodsReady" => (
            Stage::WaitingForPodsReady,
            "waits for the Workloads admitted before it to have their pods ready (Kueue's waitForPodsReady)".into(),
        ),
        "OnHold" => (Stage::OnHold, "on hold: its quota was released on purpose, and Kueue does not requeue it".into()),
        _ => (Stage::QuotaNotReserved, "has not reserved quota".into()),
    };
    Some((stage, format!("{sentence}{}", kueue_says(Some(quota)))))
}

/// Quota is reserved: the checks decide.
fn at_the_checks(e: &Explanation) -> (Stage, String) {
    let cond = |t: &str| e.conditions.get(t);
    if let Some(c) = e.checks.iter().find(|c| c.detail.state == "Rejected") {
        return (Stage::Rejected, format!("rejected by {}: {}", check_name(c), quoted(&c.detail.message)));
    }
    if let Some(c) = e.checks.iter().find(|c| c.detail.state == "Retry") {
        let when = match c.requeue_in {
            Some(d) if d.is_positive() => format!("; Kueue requeues it in {}", human(d)),
            Some(_) => "; Kueue requeues it now".into(),
            None => "; Kueue requeues it at once".into(),
        };
        return (Stage::Retry, format!("{} asks to retry: {}{when}", check_name(c), quoted(&c.detail.message)));
    }
    if e.checks.iter().any(|c| c.dispatch && c.detail.state == "Pending") {
        return (Stage::WaitingAtDispatch, format!("waits at dispatch's Pending check; {}", gate_cause(e)));
    }
    if let Some(c) = e.checks.iter().find(|c| c.detail.state == "Pending") {
        let whose = match (&c.controller, e.gate.is_some() && !e.checks.iter().any(|c| c.dispatch)) {
            (Some(ctl), _) => format!(" (controller {ctl})"),
            (None, true) => " (may be dispatch's: the AdmissionChecks could not be read)".into(),
            (None, false) => String::new(),
        };
        let message =
            if c.detail.message.is_empty() { String::new() } else { format!(": {}", quoted(&c.detail.message)) };
        return (Stage::WaitingAtCheck, format!("waits at check {}{whose}, Pending{message}", c.detail.name));
    }
    let admitted = cond("Admitted");
    if admitted.and_then(|c| c.reason.as_deref()) == Some("PendingDelayedTopologyRequests") {
        return (
            Stage::WaitingForTopology,
            format!(
                "quota reserved and every check Ready; waits for Kueue to place its delayed topology requests{}",
                kueue_says(admitted)
            ),
        );
    }
    (
        Stage::WaitingForAdmission,
        format!("quota reserved and every check Ready; waits for Kueue to admit it{}", kueue_says(admitted)),
    )
}

fn check_name(c: &CheckView) -> String {
    if c.dispatch { format!("dispatch's check {}", c.detail.name) } else { format!("check {}", c.detail.name) }
}

fn quoted(message: &str) -> String {
    if message.is_empty() { "no message".into() } else { format!("{message:?}") }
}

/// Why dispatch's check is still Pending, from the gate of the Workload's ClusterQueue.
fn gate_cause(e: &Explanation) -> String {
    let Some(chain) = &e.gate else { return "the gate of its ClusterQueue is unknown".into() };
    if chain.verdict == Verdict::Yes {
        return match inactive_clause(e) {
            Some(clause) => clause,
            None => "the gate is open, so dispatch's controller has yet to answer".into(),
        };
    }
    let deciding = chain.checks.iter().find(|c| matches!(c.outcome, Outcome::Fail(_)));
    if let (Some(CheckKind::Heartbeat), Some(lease)) = (deciding.map(|c| c.kind), &e.lease) {
        return match &lease.state {
            LeaseState::Stale { stale_for, .. } => {
                format!("the controller's Lease has been stale for {}", human_up(*stale_for))
            }
            LeaseState::NoHolder => "the controller's Lease has no holder".into(),
            LeaseState::NeverRenewed => "the controller's Lease has never been renewed".into(),
            LeaseState::Missing => format!("the controller's Lease {} does not exist", lease.lease),
            _ => "the controller's Lease is not a live heartbeat".into(),
        };
    }
    match &chain.reason {
        Some(reason) if chain.verdict == Verdict::Unknown => format!("the gate cannot be proved: {reason}"),
        Some(reason) => format!("the gate is closed: {reason}"),
        None => "the gate is not open".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;
    use crate::core::kueue::{CheckRule, ClusterQueue};
    use crate::core::lease::LeaseFacts;

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn ago(secs: i64) -> Timestamp {
        now() - SignedDuration::from_secs(secs)
    }

    fn cond(status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_transition: Some(ago(900)),
        }
    }

    fn check(name: &str, state: &str, message: &str) -> CheckDetail {
        CheckDetail {
            name: name.into(),
            state: state.into(),
            message: message.into(),
            last_transition: Some(ago(60)),
            ..Default::default()
        }
    }

    fn reserved(checks: Vec<CheckDetail>) -> WorkloadFacts {
        WorkloadFacts {
            namespace: "ml".into(),
            name: "job-a".into(),
            queue_name: Some("q".into()),
            active: true,
            admitted_in: Some("team-a".into()),
            admission_gated_by: None,
            cluster_name: None,
            nominated_cluster_names: Vec::new(),
            conditions: BTreeMap::from([
                ("QuotaReserved".into(), cond("True", "QuotaReserved", "Quota reserved in ClusterQueue team-a")),
                ("Admitted".into(), cond("False", "UnsatisfiedChecks", "The workload has not all checks ready")),
            ]),
            checks,
        }
    }

    fn pending_quota() -> WorkloadFacts {
        WorkloadFacts {
            admitted_in: None,
            conditions: BTreeMap::from([(
                "QuotaReserved".into(),
                cond("False", "Pending", "couldn't assign flavors to pod set main: insufficient unused quota for cpu"),
            )]),
            ..reserved(vec![check("dispatch", "Pending", "")])
        }
    }

    /// A Workload waiting for quota with Kueue's QuotaReserved=False `reason` and `message`.
    fn with_quota(reason: &str, message: &str) -> WorkloadFacts {
        WorkloadFacts {
            conditions: BTreeMap::from([("QuotaReserved".into(), cond("False", reason, message))]),
            ..pending_quota()
        }
    }

    fn ac(name: &str, controller: &str) -> AdmissionCheck {
        AdmissionCheck {
            name: name.into(),
            controller_name: Some(controller.into()),
            active: Some(cond("True", "Active", "ready")),
        }
    }

    fn facts(lease_renewed_ago: i64) -> GateFacts {
        GateFacts {
            cluster_queues: Fetched::Found(vec![ClusterQueue {
                name: "team-a".into(),
                admission_checks: vec![
                    CheckRule { name: "dispatch".into(), on_flavors: vec![] },
                    CheckRule { name: "prov".into(), on_flavors: vec![] },
                ],
                active: None,
            }]),
            admission_checks: Fetched::Found(vec![
                ac("dispatch", "dispatch-admission"),
                ac("prov", "kueue.x-k8s.io/provisioning-request"),
            ]),
            lease: Fetched::Found(LeaseFacts {
                holder: Some("ctl-0_1".into()),
                renew_time: Some(ago(lease_renewed_ago)),
                acquire_time: None,
                duration_seconds: Some(15),
                transitions: Some(0),
            }),
            holder: None,
        }
    }

    fn lq() -> Fetched<LocalQueue> {
        Fetched::Found(LocalQueue { namespace: "ml".into(), name: "q".into(), cluster_queue: "team-a".into() })
    }

    fn explain_at(w: WorkloadFacts, gate: GateFacts, position: Position) -> Explanation {
        let input = WorkloadInput { workload: w, local_queue: lq(), gate, position, kueue_lease: None };
        explain(&GateSettings::default(), &input, now())
    }

    fn kueue_lease(renewed_ago: i64) -> Fetched<LeaseFacts> {
        Fetched::Found(LeaseFacts {
            holder: Some("kueue-controller-manager-0_1".into()),
            renew_time: Some(ago(renewed_ago)),
            acquire_time: None,
            duration_seconds: Some(15),
            transitions: Some(0),
        })
    }

    fn explain_with_kueue(w: WorkloadFacts, kueue: Fetched<LeaseFacts>) -> Explanation {
        let input = WorkloadInput {
            workload: w,
            local_queue: lq(),
            gate: facts(2),
            position: Position::NotServed,
            kueue_lease: Some(kueue),
        };
        explain(&GateSettings::default(), &input, now())
    }

    #[test]
    fn kueues_manager_down_is_said_where_the_workload_waits_for_kueue() {
        let e = explain_with_kueue(pending_quota(), kueue_lease(100));
        assert_eq!(e.stage, Stage::WaitingForQuota);
        assert!(
            e.summary.ends_with(
                "; Kueue's manager is down (its Lease kueue-system/c1f6bfd2.kueue.x-k8s.io has been stale for 70s), so nothing is admitted until it is back"
            ),
            "{}",
            e.summary
        );
        let e = explain_with_kueue(reserved(vec![check("dispatch", "Pending", "")]), kueue_lease(100));
        assert_eq!(e.stage, Stage::WaitingAtDispatch);
        assert!(e.summary.contains("; Kueue's manager is down ("), "{}", e.summary);
        // A leading manager, no Lease (no leader election) and a forbidden read add nothing.
        for kueue in [kueue_lease(2), Fetched::Missing, Fetched::Forbidden(Denied { rule: "get leases".into() })] {
            let e = explain_with_kueue(pending_quota(), kueue);
            assert!(!e.summary.contains("Kueue's manager"), "{}", e.summary);
        }
        // Admitted: nothing waits for Kueue.
        let mut admitted = reserved(vec![check("dispatch", "Ready", "")]);
        admitted.conditions.insert("Admitted".into(), cond("True", "Admitted", "The workload is admitted"));
        assert_eq!(explain_with_kueue(admitted, kueue_lease(100)).summary, "admitted");
    }

    #[test]
    fn v0_19_reasons_read_as_kueue_means_them() {
        let e = explain_at(
            with_quota("ExceedsMaxQuota", "insufficient quota for cpu: 9 > 8"),
            facts(2),
            Position::NotServed,
        );
        assert_eq!(e.stage, Stage::ExceedsMaxQuota);
        assert_eq!(
            e.summary,
            "can never be admitted here: it asks for more than ClusterQueue team-a could ever give (Kueue: ExceedsMaxQuota: insufficient quota for cpu: 9 > 8)"
        );
        let e =
            explain_at(with_quota("Misconfigured", "ClusterQueue team-z doesn't exist"), facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::Misconfigured);
        assert_eq!(e.summary, "cannot be admitted until Kueue's queues are fixed: ClusterQueue team-z doesn't exist");
        let e = explain_at(with_quota("WaitingForQuota", "insufficient unused quota"), facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::WaitingForQuota);
        let mut gated = pending_quota();
        gated.conditions.clear();
        gated.admission_gated_by = Some("example.com/gate-a, example.com/gate-b".into());
        let e = explain_at(gated, facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::AdmissionGated);
        assert_eq!(
            e.summary,
            "held back by example.com/gate-a, example.com/gate-b (annotation kueue.x-k8s.io/admission-gated-by): it has not asked for quota yet"
        );
    }

    /// Every reason of Kueue v0.19.2's QuotaReserved=False in its own sentence, with Kueue's
    /// words after it; one this plugin does not know quoted, with no guess; the older lines'
    /// Pending still "waits for quota".
    #[test]
    fn each_of_kueues_reasons_in_its_own_words() {
        let said = |reason: &str| with_quota(reason, "Kueue's words");
        let cases = [
            (
                "NoMatchingFlavor",
                Stage::NoMatchingFlavor,
                "cannot be admitted until a ResourceFlavor of ClusterQueue team-a matches it: none fits its node selector, affinity or tolerations",
            ),
            (
                "TopologyPlacementFailed",
                Stage::TopologyPlacementFailed,
                "waits for room in the topology: its topology request does not fit the nodes as they are used now",
            ),
            (
                "WaitingForPreemptedWorkloads",
                Stage::WaitingForPreemptedWorkloads,
                "waits for the Workloads preempted to make room for it to release their quota",
            ),
            (
                "Suspended",
                Stage::Suspended,
                "held: Kueue admits nothing from LocalQueue q or ClusterQueue team-a now: one of them is stopped (spec.stopPolicy) or inactive",
            ),
            (
                "PendingEvaluation",
                Stage::PendingEvaluation,
                "not yet evaluated: Kueue's scheduler has yet to try to fit it",
            ),
            (
                "WaitingForPodsReady",
                Stage::WaitingForPodsReady,
                "waits for the Workloads admitted before it to have their pods ready (Kueue's waitForPodsReady)",
            ),
            ("OnHold", Stage::OnHold, "on hold: its quota was released on purpose, and Kueue does not requeue it"),
            ("DRAResourcesUnresolved", Stage::QuotaNotReserved, "has not reserved quota"),
        ];
        for (reason, stage, sentence) in cases {
            let e = explain_at(said(reason), facts(2), Position::NotServed);
            assert_eq!(e.stage, stage, "{reason}");
            assert_eq!(e.summary, format!("{sentence} (Kueue: {reason}: Kueue's words)"), "{reason}");
        }
        for reason in ["WaitingForQuota", "Pending", "Inadmissible"] {
            let e = explain_at(said(reason), facts(2), Position::NotServed);
            assert_eq!(e.stage, Stage::WaitingForQuota, "{reason}");
            assert_eq!(
                e.summary,
                format!("waits for quota, not yet at dispatch's check (Kueue: {reason}: Kueue's words)"),
                "{reason}"
            );
        }
        // Kueue's manager down is said where the Workload waits for Kueue, not where it never fits.
        let e = explain_with_kueue(said("PendingEvaluation"), kueue_lease(100));
        assert!(e.summary.contains("; Kueue's manager is down ("), "{}", e.summary);
        let e = explain_with_kueue(said("ExceedsMaxQuota"), kueue_lease(100));
        assert!(!e.summary.contains("Kueue's manager"), "{}", e.summary);
    }

    #[test]
    fn delayed_topology_requests_are_what_admission_waits_for() {
        let mut w = reserved(vec![check("dispatch", "Ready", "")]);
        w.conditions.insert(
            "Admitted".into(),
            cond("False", "PendingDelayedTopologyRequests", "There are pending delayed topology requests"),
        );
        let e = explain_at(w, facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::WaitingForTopology);
        assert_eq!(
            e.summary,
            "quota reserved and every check Ready; waits for Kueue to place its delayed topology requests (Kueue: PendingDelayedTopologyRequests: There are pending delayed topology requests)"
        );
    }

    /// Next: names the queue where Kueue's queues hold the Workload, and nothing elsewhere.
    #[test]
    fn next_names_the_queue_that_holds_it() {
        let next = |reason: &str| next_commands(&explain_at(with_quota(reason, ""), facts(2), Position::NotServed));
        assert_eq!(next("Suspended"), ["kubectl describe localqueue q -n ml", "kubectl describe clusterqueue team-a"]);
        assert_eq!(
            next("NoMatchingFlavor"),
            ["kubectl describe clusterqueue team-a", "kubectl get resourceflavors -o yaml"]
        );
        assert_eq!(next("ExceedsMaxQuota"), ["kubectl describe clusterqueue team-a"]);
        assert!(next("WaitingForQuota").is_empty());
        assert!(next("PendingEvaluation").is_empty());
    }

    #[test]
    fn pending_at_dispatch_with_a_stale_lease_says_for_how_long() {
        let e = explain_at(reserved(vec![check("dispatch", "Pending", "")]), facts(30 + 192), Position::NotServed);
        assert_eq!(e.stage, Stage::WaitingAtDispatch);
        assert_eq!(e.summary, "waits at dispatch's Pending check; the controller's Lease has been stale for 3m12s");
        assert_eq!(e.gate.as_ref().unwrap().verdict, Verdict::No);
        assert_eq!(e.gate.as_ref().unwrap().cluster_queue.as_deref(), Some("team-a"));
        assert_eq!(e.position, Position::NotAsked, "quota is reserved: no position");
        assert_eq!(e.cluster_queue_from, Some(QueueSource::Admission));
        assert!(e.checks[0].dispatch);
        assert_eq!(e.checks[0].since, Some(SignedDuration::from_secs(60)));
    }

    /// A ClusterQueue Kueue reports inactive for its own reason: named in the sentence, at
    /// dispatch's check (instead of "has yet to answer") and waiting for quota alike; Kueue's
    /// echo of an inactive check (AdmissionCheckInactive) is the gate's to say, not repeated.
    #[test]
    fn kueues_inactive_cluster_queue_is_named() {
        let inactive = |reason: &str| {
            let mut gate = facts(2);
            if let Fetched::Found(qs) = &mut gate.cluster_queues {
                qs[0].active = Some(cond("False", reason, "Can't admit new workloads"));
            }
            gate
        };
        let e = explain_at(
            reserved(vec![check("dispatch", "Pending", "")]),
            inactive("FlavorNotFound"),
            Position::NotServed,
        );
        assert_eq!(
            e.summary,
            "waits at dispatch's Pending check; Kueue admits nothing on ClusterQueue team-a (FlavorNotFound)"
        );
        let e = explain_at(pending_quota(), inactive("Stopped"), Position::NotServed);
        assert!(e.summary.ends_with("; Kueue admits nothing on ClusterQueue team-a (Stopped)"), "{}", e.summary);
        let e = explain_at(pending_quota(), inactive("AdmissionCheckInactive"), Position::NotServed);
        assert!(!e.summary.contains("Kueue admits nothing"), "{}", e.summary);
    }

    #[test]
    fn pending_at_dispatch_with_the_gate_open() {
        let e = explain_at(reserved(vec![check("dispatch", "Pending", "")]), facts(2), Position::NotServed);
        assert_eq!(
            e.summary,
            "waits at dispatch's Pending check; the gate is open, so dispatch's controller has yet to answer"
        );
    }

    #[test]
    fn a_closed_gate_for_another_reason_quotes_it() {
        let mut gate = facts(2);
        gate.admission_checks = Fetched::Found(vec![AdmissionCheck {
            active: Some(cond("False", "Down", "stopped")),
            ..ac("dispatch", "dispatch-admission")
        }]);
        let e = explain_at(reserved(vec![check("dispatch", "Pending", "")]), gate, Position::NotServed);
        assert_eq!(
            e.summary,
            "waits at dispatch's Pending check; the gate is closed: AdmissionCheck dispatch is not Active (Active=False, Down: stopped)"
        );
    }

    #[test]
    fn waiting_for_quota_with_its_position() {
        let e = explain_at(pending_quota(), facts(2), Position::Found { cluster_queue: 3, local_queue: 1 });
        assert_eq!(e.stage, Stage::WaitingForQuota);
        assert_eq!(
            e.summary,
            "waits for quota, position 3 in ClusterQueue team-a (1 in LocalQueue q), not yet at dispatch's check (Kueue: Pending: couldn't assign flavors to pod set main: insufficient unused quota for cpu)"
        );
        assert_eq!(e.cluster_queue_from, Some(QueueSource::LocalQueue));
        let e = explain_at(pending_quota(), facts(2), Position::NotServed);
        assert!(
            e.summary.starts_with("waits for quota, not yet at dispatch's check (Kueue: Pending: "),
            "{}",
            e.summary
        );
        assert_eq!(e.position, Position::NotServed);
    }

    #[test]
    fn admitted_finished_and_deactivated() {
        let mut w = reserved(vec![check("dispatch", "Ready", "placed on far-1")]);
        w.conditions.insert("Admitted".into(), cond("True", "Admitted", "The workload is admitted"));
        let e = explain_at(w.clone(), facts(500), Position::NotServed);
        assert_eq!((e.stage, e.summary.as_str()), (Stage::Admitted, "admitted"));
        assert!(e.stage.is_through());
        w.conditions.insert("Finished".into(), cond("True", "Succeeded", "Job finished successfully"));
        let e = explain_at(w, facts(500), Position::NotServed);
        assert_eq!(e.summary, "finished (Kueue: Succeeded: Job finished successfully)");

        let mut d = pending_quota();
        d.active = false;
        d.conditions.insert(
            "Evicted".into(),
            cond(
                "True",
                "Deactivated",
                "The workload is deactivated due to Admission check(s): dispatch, were rejected",
            ),
        );
        let e = explain_at(d, facts(2), Position::Found { cluster_queue: 0, local_queue: 0 });
        assert_eq!(e.stage, Stage::Deactivated);
        assert_eq!(
            e.summary,
            "deactivated (spec.active is false): Kueue will not admit it (Kueue: Deactivated: The workload is deactivated due to Admission check(s): dispatch, were rejected)"
        );
        assert_eq!(e.position, Position::NotAsked);
    }

    #[test]
    fn evicted_and_back_in_the_queue() {
        let mut w = pending_quota();
        w.conditions.insert("Evicted".into(), cond("True", "AdmissionCheck", "At least one admission check is false"));
        let e = explain_at(w, facts(2), Position::NotListed { listed: 4 });
        assert!(
            e.summary.ends_with("; evicted before (Kueue: AdmissionCheck: At least one admission check is false)"),
            "{}",
            e.summary
        );
    }

    #[test]
    fn retry_with_requeue_after_and_count() {
        let mut c = check("prov", "Retry", "capacity not available");
        c.retry_count = Some(2);
        c.requeue_after_seconds = Some(300);
        let e = explain_at(reserved(vec![check("dispatch", "Ready", ""), c]), facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::Retry);
        assert_eq!(e.summary, "check prov asks to retry: \"capacity not available\"; Kueue requeues it in 4m");
        assert_eq!(e.checks[1].requeue_in, Some(SignedDuration::from_secs(240)));
        assert_eq!(e.checks[1].controller.as_deref(), Some("kueue.x-k8s.io/provisioning-request"));
    }

    #[test]
    fn rejected_comes_first() {
        let e = explain_at(
            reserved(vec![check("dispatch", "Pending", ""), check("prov", "Rejected", "")]),
            facts(2),
            Position::NotServed,
        );
        assert_eq!(e.summary, "rejected by check prov: no message");
    }

    #[test]
    fn another_controllers_pending_check_and_no_gate_when_dispatch_is_not_there() {
        let e = explain_at(reserved(vec![check("prov", "Pending", "provisioning")]), facts(500), Position::NotServed);
        assert_eq!(e.stage, Stage::WaitingAtCheck);
        assert_eq!(
            e.summary,
            "waits at check prov (controller kueue.x-k8s.io/provisioning-request), Pending: \"provisioning\""
        );
        assert!(e.gate.is_none() && e.lease.is_none());
    }

    #[test]
    fn checks_ready_but_not_admitted() {
        let e = explain_at(reserved(vec![check("dispatch", "Ready", "")]), facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::WaitingForAdmission);
        assert!(e.summary.ends_with("(Kueue: UnsatisfiedChecks: The workload has not all checks ready)"));
    }

    #[test]
    fn no_queue_and_missing_queue() {
        let mut w = pending_quota();
        w.queue_name = None;
        let e = explain_at(w, facts(2), Position::NotServed);
        assert_eq!(e.stage, Stage::NoQueue);
        let input = WorkloadInput {
            workload: pending_quota(),
            local_queue: Fetched::Missing,
            gate: facts(2),
            position: Position::NotServed,
            kueue_lease: None,
        };
        let e = explain(&GateSettings::default(), &input, now());
        assert_eq!(
            (e.stage, e.summary.as_str()),
            (Stage::QueueMissing, "waits for LocalQueue q, which does not exist in namespace ml")
        );
        assert!(e.cluster_queue.is_none() && e.gate.is_none());
    }

    #[test]
    fn forbidden_admission_checks_still_show_the_gate_as_unknown() {
        let mut gate = facts(2);
        gate.admission_checks = Fetched::Forbidden(Denied { rule: "list admissionchecks".into() });
        let e = explain_at(reserved(vec![check("dispatch", "Pending", "")]), gate, Position::NotServed);
        assert!(!e.checks[0].dispatch && e.checks[0].controller.is_none());
        assert_eq!(e.gate.as_ref().unwrap().verdict, Verdict::Unknown);
        assert_eq!(
            e.summary,
            "waits at check dispatch (may be dispatch's: the AdmissionChecks could not be read), Pending"
        );
        let input = WorkloadInput {
            workload: pending_quota(),
            local_queue: Fetched::Forbidden(Denied { rule: "get localqueues".into() }),
            gate: facts(2),
            position: Position::NotServed,
            kueue_lease: None,
        };
        let e = explain(&GateSettings::default(), &input, now());
        assert_eq!(e.local_queue_forbidden.as_deref(), Some("get localqueues"));
        assert!(e.cluster_queue.is_none());
        assert_eq!(e.stage, Stage::WaitingForQuota);
    }
}

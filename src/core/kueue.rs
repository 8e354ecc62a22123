//! Kueue's objects as the gate sees them: only the fields it reads, the same for the v1beta1
//! and v1beta2 shapes. The shell converts the wire objects into these.

use k8s_openapi::jiff::Timestamp;

/// The versions of Kueue's APIs the plugin reads, most preferred first, among those a cluster
/// serves: v1beta2 (Kueue v0.15 and later), then v1beta1 (gone from Kueue v0.20). Kueue's
/// visibility API is read in the same order.
pub const API_VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];

/// A ClusterQueue, the AdmissionChecks it lists and Kueue's own `Active` condition on it, from
/// either shape: v1beta2 `spec.admissionChecksStrategy.admissionChecks[]`, or v1beta1's
/// `spec.admissionChecks` as well.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterQueue {
    pub name: String,
    /// In the ClusterQueue's order, each name once.
    pub admission_checks: Vec<CheckRule>,
    /// `status.conditions[type=Active]`, written by Kueue's manager: whether the ClusterQueue
    /// can admit Workloads, and why not (for example `AdmissionCheckInactive`).
    pub active: Option<Condition>,
}

impl ClusterQueue {
    /// The names of the AdmissionChecks it lists.
    pub fn check_names(&self) -> impl Iterator<Item = &str> {
        self.admission_checks.iter().map(|r| r.name.as_str())
    }

    pub fn lists(&self, check: &str) -> bool {
        self.check_names().any(|c| c == check)
    }
}

/// How a ClusterQueue lists one AdmissionCheck: an `admissionChecksStrategy` rule (a v1beta1
/// `spec.admissionChecks` entry is a rule without flavors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRule {
    pub name: String,
    /// `onFlavors`: the ResourceFlavors whose Workloads the check runs for; empty means all.
    pub on_flavors: Vec<String>,
}

/// An AdmissionCheck's controller and its `Active` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionCheck {
    pub name: String,
    pub controller_name: Option<String>,
    pub active: Option<Condition>,
}

/// A status condition, as far as the gate reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition: Option<Timestamp>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }

    /// What Kueue said: `Reason: message`, `Reason`, `message`, or nothing.
    pub fn said(&self) -> String {
        let reason = self.reason.as_deref().filter(|r| !r.is_empty());
        match (reason, self.message.as_deref().filter(|m| !m.is_empty())) {
            (Some(r), Some(m)) => format!("{r}: {m}"),
            (Some(r), None) => r.to_string(),
            (None, Some(m)) => m.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// Kueue's Active condition on a ClusterQueue when it says Kueue admits nothing there for a
/// reason of its own (a missing flavor, `Stopped`, ...): not `True`, and not
/// `AdmissionCheckInactive`, which is Kueue's echo of the gate's check 3 (that check says it).
pub fn inactive_by_kueue(active: Option<&Condition>) -> Option<&Condition> {
    active.filter(|c| !c.is_true() && c.reason.as_deref() != Some("AdmissionCheckInactive"))
}

/// `Kueue reports ClusterQueue team-a inactive (FlavorNotFound: Can't admit ...)`.
pub fn inactive_sentence(cluster_queue: &str, active: &Condition) -> String {
    let said = active.said();
    let why = if said.is_empty() { String::new() } else { format!(" ({said})") };
    format!("Kueue reports ClusterQueue {cluster_queue} inactive{why}")
}

/// A LocalQueue, to find the ClusterQueue of a Workload that has no admission yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalQueue {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
}

/// A Workload's queue, reservation and admission-check states.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub namespace: String,
    pub name: String,
    pub queue_name: Option<String>,
    /// `status.admission.clusterQueue`: set while quota is reserved.
    pub admitted_in: Option<String>,
    pub quota_reserved: bool,
    pub checks: Vec<CheckState>,
}

/// One entry of `status.admissionChecks`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckState {
    pub name: String,
    pub state: String,
    pub message: String,
    pub last_transition: Option<Timestamp>,
}

//! Kueue's objects as the gate sees them: only the fields it reads, the same for the v1beta1
//! and v1beta2 shapes. The shell converts the wire objects into these.

use k8s_openapi::jiff::Timestamp;

/// A ClusterQueue and the AdmissionChecks it lists, from either shape:
/// v1beta2 `spec.admissionChecksStrategy.admissionChecks[].name`, or v1beta1's
/// `spec.admissionChecks` as well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterQueue {
    pub name: String,
    pub admission_checks: Vec<String>,
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

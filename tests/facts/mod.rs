//! What the pure-core tests (gate_eval, render_golden) share: a fixed `now`, dispatch's names,
//! and builders of the facts the core judges (ClusterQueues, AdmissionChecks, Kueue conditions,
//! Workloads and their checks, the Lease). No cluster, no I/O. Each test file keeps its own
//! fixed values (holder names, messages, ages) and builds with these.

#![allow(dead_code)]

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubectl_dispatch::core::fetched::{Denied, Fetched};
use kubectl_dispatch::core::kueue::{AdmissionCheck, CheckRule, CheckState, ClusterQueue, Condition, Workload};
use kubectl_dispatch::core::lease::LeaseFacts;

pub const CONTROLLER: &str = "dispatch-admission";
pub const CHECK: &str = "dispatch";

/// The tests' clock.
pub fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

/// `d` before the tests' clock.
pub fn ago(d: SignedDuration) -> Timestamp {
    now() - d
}

pub fn secs(s: i64) -> SignedDuration {
    SignedDuration::from_secs(s)
}

pub fn micros(us: i64) -> SignedDuration {
    SignedDuration::from_micros(us)
}

/// A ClusterQueue listing `checks` (for every flavor), with no status from Kueue.
pub fn cq(name: &str, checks: &[&str]) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        admission_checks: checks.iter().map(|c| CheckRule { name: c.to_string(), on_flavors: Vec::new() }).collect(),
        active: None,
    }
}

/// A Kueue condition that last changed `since` before now.
pub fn kueue_condition(status: &str, reason: Option<&str>, message: Option<&str>, since: SignedDuration) -> Condition {
    Condition {
        status: status.into(),
        reason: reason.map(String::from),
        message: message.map(String::from),
        last_transition: Some(ago(since)),
    }
}

/// An AdmissionCheck naming `controller`, with Kueue's Active condition `active`.
pub fn ac(name: &str, controller: Option<&str>, active: Option<Condition>) -> AdmissionCheck {
    AdmissionCheck { name: name.into(), controller_name: controller.map(String::from), active }
}

/// dispatch's AdmissionCheck, naming dispatch's controller, Active=True (reason Active) with
/// `message` for a day.
pub fn dispatch_ac(message: &str) -> AdmissionCheck {
    ac(CHECK, Some(CONTROLLER), Some(kueue_condition("True", Some("Active"), Some(message), secs(86_400))))
}

/// A Workload's entry for admission check `name`, in `state` since `since` before now.
pub fn check_state(name: &str, state: &str, message: &str, since: SignedDuration) -> CheckState {
    CheckState { name: name.into(), state: state.into(), message: message.into(), last_transition: Some(ago(since)) }
}

/// A Workload on LocalQueue `user-queue`; with `reserved_in` it has reserved quota in that
/// ClusterQueue.
pub fn workload(ns: &str, name: &str, reserved_in: Option<&str>, checks: Vec<CheckState>) -> Workload {
    Workload {
        namespace: ns.into(),
        name: name.into(),
        queue_name: Some("user-queue".into()),
        admitted_in: reserved_in.map(String::from),
        quota_reserved: reserved_in.is_some(),
        checks,
    }
}

/// A Lease held by `holder`, renewed `renewed` and acquired `acquired` before now, with the
/// controller's default 15 s duration and two transitions.
pub fn lease(holder: &str, renewed: SignedDuration, acquired: SignedDuration) -> LeaseFacts {
    LeaseFacts {
        holder: Some(holder.into()),
        renew_time: Some(ago(renewed)),
        acquire_time: Some(ago(acquired)),
        duration_seconds: Some(15),
        transitions: Some(2),
    }
}

/// A read the caller may not make, with the rule that would allow it.
pub fn forbidden<T>(rule: &str) -> Fetched<T> {
    Fetched::Forbidden(Denied { rule: rule.into() })
}

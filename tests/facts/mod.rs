//! What the pure-core tests (gate_eval, render_golden) share: a fixed `now`, dispatch's names,
//! and a ClusterQueue builder. No cluster, no I/O.

use k8s_openapi::jiff::Timestamp;
use kubectl_dispatch::core::kueue::{CheckRule, ClusterQueue};

pub const CONTROLLER: &str = "dispatch-admission";
pub const CHECK: &str = "dispatch";

/// The tests' clock.
pub fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

/// A ClusterQueue listing `checks` (for every flavor), with no status from Kueue.
pub fn cq(name: &str, checks: &[&str]) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        admission_checks: checks.iter().map(|c| CheckRule { name: c.to_string(), on_flavors: Vec::new() }).collect(),
        active: None,
    }
}

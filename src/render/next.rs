//! The next step after a gate that does not hold: the commands that look further, chosen by
//! the deciding reason's code, so the default view ends with what to run rather than with a
//! diagnosis alone.

use crate::core::gate::Chain;
use crate::core::holder::{self, PodState};
use crate::core::verdict::Verdict;
use crate::report::GateRun;

/// The commands to run next, most telling first: for a gate that does not hold, by its
/// deciding reason; for a ClusterQueue Kueue reports inactive (whatever the gate says), `kubectl
/// describe clusterqueue`. Empty when the gate holds and Kueue admits everywhere.
pub fn steps(run: &GateRun) -> Vec<String> {
    let closed = run.report.chains.iter().find(|c| c.verdict == run.report.verdict && c.verdict != Verdict::Yes);
    let inactive: Vec<String> = run
        .report
        .chains
        .iter()
        .filter(|c| crate::core::kueue::inactive_by_kueue(c.cluster_queue_active.as_ref()).is_some())
        .filter_map(|c| c.cluster_queue.as_deref())
        .map(|cq| format!("kubectl describe clusterqueue {cq}"))
        .collect();
    if closed.is_none() && inactive.is_empty() {
        return Vec::new();
    }
    let mut steps = closed.map(|chain| for_code(run, chain)).unwrap_or_default();
    steps.extend(inactive);
    if let Some(w) = run.waiting.found().and_then(|w| w.iter().find(|w| w.is_stalled()).or(w.first())) {
        steps.push(format!("kubectl dispatch workload {} -n {}", w.name, w.namespace));
    }
    if closed.is_some() {
        steps.push("kubectl dispatch doctor".to_string());
    }
    steps
}

/// A check that is dispatch's under another controllerName: the gate judged with its flag.
fn lookalike_steps(run: &GateRun) -> Vec<String> {
    let all = if run.namespace.is_none() { " -A" } else { "" };
    run.report.lookalikes.iter().map(|l| format!("kubectl dispatch gate {}{all}", l.flag())).collect()
}

fn for_code(run: &GateRun, chain: &Chain) -> Vec<String> {
    let lease = &run.report.lease.lease;
    let check = chain.admission_check.as_deref().unwrap_or("");
    match chain.reason_code.unwrap_or_default() {
        "LeaseStale" | "LeaseNoHolder" | "LeaseNeverRenewed" => holder_steps(run),
        "LeaseNotFound" => vec![format!("kubectl get leases -n {}", lease.namespace)],
        "ClusterQueueNotFound" | "NoClusterQueueListsCheck" | "ClusterQueueDoesNotListCheck" => {
            let mut steps = lookalike_steps(run);
            steps.extend(["kubectl get clusterqueues".to_string(), "kubectl get admissionchecks".to_string()]);
            steps
        }
        "AdmissionCheckNotFound" | "NoAdmissionCheckIdentified" => {
            let mut steps = lookalike_steps(run);
            steps.push("kubectl get admissionchecks".to_string());
            steps
        }
        "ControllerNameMismatch" | "AdmissionCheckInactive" | "AdmissionCheckNoActiveCondition" => {
            vec![format!("kubectl get admissioncheck {check} -o yaml")]
        }
        // Forbidden reads: doctor names the RBAC to add.
        _ => Vec::new(),
    }
}

/// A Lease that is not renewed: look at the pod that held it, or for its successor.
fn holder_steps(run: &GateRun) -> Vec<String> {
    let ns = &run.report.lease.lease.namespace;
    let held = run.report.lease.facts.as_ref().and_then(|f| f.holder()).and_then(holder::pod_name).map(|(p, _)| p);
    let gone = run.report.lease.holder_pod.as_ref().is_some_and(|p| matches!(p.state, PodState::Gone { .. }));
    match held {
        Some(pod) if !gone => {
            vec![format!("kubectl get pod {pod} -n {ns}"), format!("kubectl logs {pod} -n {ns} --all-containers")]
        }
        _ => vec![format!("kubectl get pods -n {ns}")],
    }
}

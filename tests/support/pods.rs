//! Pods and Nodes for the holder's pod, as YAML. There is no kubelet or scheduler: a Pod is
//! bound by `spec.nodeName`, and its status (and a Node's) is written through /status, as
//! `Cluster::apply` does for any object with a `status:`.

use super::Cluster;
use super::fixtures::time_ago;

/// The namespace and its `default` ServiceAccount, which the ServiceAccount admission plugin
/// wants before it admits a Pod (no controller-manager creates it here).
pub fn namespace_for_pods(c: &Cluster, ns: &str) {
    c.apply(&super::fixtures::namespace(ns));
    c.apply(&format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: {ns}\n"));
}

/// A Node whose Ready condition is `ready` ("True", "False" or "Unknown") for `reason`.
pub fn node(name: &str, ready: &str, reason: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nstatus:\n  conditions:\n  - type: Ready\n    status: \"{ready}\"\n    reason: {reason}\n    lastHeartbeatTime: \"{t}\"\n    lastTransitionTime: \"{t}\"\n---\n",
        t = time_ago(30)
    )
}

/// How the pod's one container, `manager`, is doing.
pub enum Container {
    /// Running and ready, after `restarts` restarts (the last one OOMKilled).
    Ready { restarts: i32 },
    /// In CrashLoopBackOff after `restarts` restarts, the last one `Error` (exit code 1).
    CrashLooping { restarts: i32 },
}

/// A Pod bound to `node`, with its status.
pub fn pod(ns: &str, name: &str, node: &str, container: Container) -> String {
    let (ready, restarts, state, last) = match container {
        Container::Ready { restarts } => (
            true,
            restarts,
            format!("running:\n        startedAt: \"{}\"", time_ago(60)),
            (restarts > 0).then_some(("OOMKilled", 137)),
        ),
        Container::CrashLooping { restarts } => {
            (false, restarts, "waiting:\n        reason: CrashLoopBackOff".to_string(), Some(("Error", 1)))
        }
    };
    let last = match last {
        Some((reason, code)) => format!(
            "    lastState:\n      terminated:\n        reason: {reason}\n        exitCode: {code}\n        startedAt: \"{}\"\n        finishedAt: \"{}\"\n",
            time_ago(600),
            time_ago(120)
        ),
        None => String::new(),
    };
    let (status, reason) = if ready { ("True", "") } else { ("False", "\n    reason: ContainersNotReady") };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  nodeName: {node}\n  automountServiceAccountToken: false\n  containers:\n  - name: manager\n    image: registry.invalid/dispatch-admission:1\nstatus:\n  phase: Running\n  conditions:\n  - type: Ready\n    status: \"{status}\"{reason}\n  containerStatuses:\n  - name: manager\n    image: registry.invalid/dispatch-admission:1\n    imageID: \"\"\n    ready: {ready}\n    restartCount: {restarts}\n    state:\n      {state}\n{last}---\n"
    )
}

/// The pod's UID, as the API server gave it.
pub fn uid(c: &Cluster, ns: &str, name: &str) -> String {
    c.kubectl_ok(&["get", "pod", "-n", ns, name, "-o", "jsonpath={.metadata.uid}"], None)
}

/// dispatch's default Lease, `dispatch-system/dispatch-admission`, held for an hour by a running,
/// ready pod on a ready node (`doctor-node`): the healthy holder doctor and the version matrix read.
pub fn healthy_default_holder(c: &Cluster) {
    namespace_for_pods(c, "dispatch-system");
    c.apply(&node("doctor-node", "True", "KubeletReady"));
    c.apply(&pod("dispatch-system", "dispatch-admission-5c7d9-q2x4z", "doctor-node", Container::Ready { restarts: 0 }));
    let uid = uid(c, "dispatch-system", "dispatch-admission-5c7d9-q2x4z");
    let holder = format!("dispatch-admission-5c7d9-q2x4z_{uid}");
    c.apply(&super::fixtures::lease("dispatch-system", "dispatch-admission", Some(&holder), Some(1), Some(3600)));
}

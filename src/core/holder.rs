//! The holder's pod: what became of the process that holds the Lease.
//!
//! client-go's leader election takes any identity; controller-runtime (dispatch-admission's
//! manager) writes `os.Hostname() + "_" + uuid`, and a pod's hostname is its name, so
//! `holderIdentity` reads `<pod name>_<id>`. The id is new for every process (controller-runtime
//! draws a random UUID), so it is *not* the pod's UID in general: a pod is the holder's when
//! the id is its UID (an identity written from the downward API), or when it already existed
//! as the holder took the Lease (`acquireTime`, else `renewTime`). A pod of that name created
//! later is another pod (a StatefulSet's replacement): the holder's own is gone.
//!
//! The pod never decides a verdict: only the Lease's renewals do. It says why a Lease went
//! stale, or warns of a fresh one about to.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::duration::human;
use super::fetched::Fetched;

/// A Pod, as far as the holder's story needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodFacts {
    pub name: String,
    pub uid: String,
    pub created: Option<Timestamp>,
    /// `metadata.deletionTimestamp`: the pod is being deleted.
    pub deleting: Option<Timestamp>,
    pub phase: Option<String>,
    pub node: Option<String>,
    /// The pod's `Ready` condition: status and reason.
    pub ready: Option<(String, Option<String>)>,
    /// Restarts over every container.
    pub restarts: i32,
    /// The container that last terminated, and how.
    pub last_termination: Option<Termination>,
    /// A container waiting to run again, and why (`CrashLoopBackOff`).
    pub waiting: Option<String>,
}

/// A container's last termination (`lastState.terminated`).
#[derive(Debug, Clone, PartialEq)]
pub struct Termination {
    pub container: String,
    pub reason: Option<String>,
    pub exit_code: i32,
    pub finished: Option<Timestamp>,
}

/// A Node's `Ready` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    pub name: String,
    /// `None` when the node has no Ready condition.
    pub ready: Option<(String, Option<String>)>,
}

/// What was read about the holder's pod, beside the Lease.
#[derive(Debug, Clone, PartialEq)]
pub struct HolderFacts {
    pub pod: Fetched<PodFacts>,
    /// The pod's node; `None` when the pod was not read or has no node.
    pub node: Option<Fetched<NodeFacts>>,
}

/// `<pod name>_<id>`: the pod name, when the holder follows the convention (a pod name is a DNS
/// subdomain, so it never holds `_`).
pub fn pod_name(holder: &str) -> Option<(&str, &str)> {
    let (name, id) = holder.split_once('_')?;
    let valid = !name.is_empty()
        && name.len() <= 253
        && !id.is_empty()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    valid.then_some((name, id))
}

/// What became of the holder's pod.
#[derive(Debug, Clone, PartialEq)]
pub struct HolderPod {
    /// The pod's name, from holderIdentity; empty for [`PodState::Unnamed`].
    pub pod: String,
    pub namespace: String,
    pub node: Option<String>,
    pub state: PodState,
    /// Beside the state: a node that may not be read.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PodState {
    /// Running and Ready; `restarts` and the last termination are shown when there were any.
    Ready { restarts: i32, last: Option<String> },
    /// Restarted and not running well now: waiting (CrashLoopBackOff) or not Ready.
    Restarting { restarts: i32, last: Option<String>, waiting: Option<String> },
    /// Not Ready, never restarted: `phase`, and the Ready condition's reason.
    NotReady { phase: String, reason: Option<String> },
    /// Being deleted.
    Terminating { since: SignedDuration },
    /// No such pod, or the pod of that name is another one.
    Gone { why: String },
    /// On a node that is not Ready, or that does not exist.
    NodeNotReady { node: String, how: String },
    /// Pods in the Lease's namespace may not be read.
    Forbidden { rule: String },
    /// The holder does not name a pod.
    Unnamed { holder: String },
}

impl PodState {
    /// One word or two, for tables and JSON.
    pub fn label(&self) -> &'static str {
        match self {
            PodState::Ready { .. } => "running",
            PodState::Restarting { .. } => "restarting",
            PodState::NotReady { .. } => "not ready",
            PodState::Terminating { .. } => "terminating",
            PodState::Gone { .. } => "gone",
            PodState::NodeNotReady { .. } => "node not ready",
            PodState::Forbidden { .. } => "forbidden",
            PodState::Unnamed { .. } => "not a pod",
        }
    }
}

impl HolderPod {
    /// `pod dispatch-admission-7d9c-x2x is running and ready on node n1`, and the like.
    pub fn sentence(&self) -> String {
        let pod = format!("pod {}", self.pod);
        let on = self.node.as_deref().map(|n| format!(" on node {n}")).unwrap_or_default();
        let text = match &self.state {
            PodState::Ready { restarts: 0, .. } => format!("{pod} is running and ready{on}"),
            PodState::Ready { restarts, last } => {
                format!("{pod} is running and ready{on}, {}{}", restarted(*restarts), last_suffix(last))
            }
            PodState::Restarting { restarts, last, waiting } => {
                let now = waiting.as_deref().map(|w| format!(", now {w}")).unwrap_or_default();
                format!("{pod} is restarting{on}: {}{}{now}", restarted(*restarts), last_suffix(last))
            }
            PodState::NotReady { phase, reason } => {
                let why = reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
                format!("{pod} is {phase} but not ready{on}{why}")
            }
            PodState::Terminating { since } => format!("{pod} is terminating{on} (for {})", human(*since)),
            PodState::Gone { why } => format!("{pod} is gone: {why}"),
            PodState::NodeNotReady { node, how } => format!("{pod} is on node {node}, which {how}"),
            PodState::Forbidden { rule } => format!("{pod} not checked: missing RBAC: {rule}"),
            PodState::Unnamed { holder } => format!("holder {holder} does not name a pod (<pod name>_<id>)"),
        };
        match &self.note {
            Some(note) => format!("{text}; {note}"),
            None => text,
        }
    }
}

fn restarted(n: i32) -> String {
    if n == 1 { "restarted once".into() } else { format!("restarted {n} times") }
}

fn last_suffix(last: &Option<String>) -> String {
    last.as_deref().map(|l| format!(", last {l}")).unwrap_or_default()
}

/// Who holds a Lease, as far as its pod is concerned: the holder's identity (none when absent or
/// empty), and when the holder took it (its acquireTime, else its renewTime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenure<'a> {
    pub holder: Option<&'a str>,
    pub took: Option<Timestamp>,
}

/// The holder's pod at `now`, from the Lease's tenure and what was read beside it. `None` when
/// the Lease has no holder, or the pod was not looked up.
pub fn assess(namespace: &str, tenure: Tenure<'_>, read: Option<&HolderFacts>, now: Timestamp) -> Option<HolderPod> {
    let holder = tenure.holder?;
    let Some((name, id)) = pod_name(holder) else {
        return Some(HolderPod {
            pod: String::new(),
            namespace: namespace.into(),
            node: None,
            state: PodState::Unnamed { holder: holder.into() },
            note: None,
        });
    };
    let read = read?;
    let mut out = HolderPod { pod: name.into(), namespace: namespace.into(), node: None, state: gone(""), note: None };
    let pod = match &read.pod {
        Fetched::Forbidden(d) => {
            out.state = PodState::Forbidden { rule: d.rule.clone() };
            return Some(out);
        }
        Fetched::Missing => {
            out.state = gone(&format!("no pod of that name in namespace {namespace}"));
            return Some(out);
        }
        Fetched::Found(pod) => pod,
    };
    out.node = pod.node.clone();
    let took = tenure.took;
    if pod.uid != id
        && let (Some(created), Some(took)) = (pod.created, took)
        && created > took
    {
        out.node = None;
        out.state = gone(&format!(
            "the pod of that name now (uid {}) was created {} after the holder took the Lease",
            pod.uid,
            human(created.duration_since(took))
        ));
        return Some(out);
    }
    if let Some(deleting) = pod.deleting {
        out.state = PodState::Terminating { since: now.duration_since(deleting) };
        return Some(out);
    }
    match &read.node {
        Some(Fetched::Forbidden(d)) => out.note = Some(format!("node not checked: missing RBAC: {}", d.rule)),
        Some(Fetched::Missing) => {
            let node = pod.node.clone().unwrap_or_default();
            out.state = PodState::NodeNotReady { node, how: "does not exist".into() };
            return Some(out);
        }
        Some(Fetched::Found(node)) => {
            let how = match &node.ready {
                Some((status, _)) if status == "True" => None,
                Some((status, reason)) => Some(format!(
                    "is not Ready (Ready={status}{})",
                    reason.as_deref().map(|r| format!(", {r}")).unwrap_or_default()
                )),
                None => Some("has no Ready condition".into()),
            };
            if let Some(how) = how {
                out.state = PodState::NodeNotReady { node: node.name.clone(), how };
                return Some(out);
            }
        }
        None => {}
    }
    let ready = pod.ready.as_ref().is_some_and(|(s, _)| s == "True");
    let last = pod.last_termination.as_ref().map(|t| termination(t, now));
    out.state = if ready && pod.waiting.is_none() {
        PodState::Ready { restarts: pod.restarts, last }
    } else if pod.restarts > 0 {
        PodState::Restarting { restarts: pod.restarts, last, waiting: pod.waiting.clone() }
    } else {
        PodState::NotReady {
            phase: pod.phase.clone().unwrap_or_else(|| "Unknown".into()),
            reason: pod.ready.as_ref().and_then(|(_, r)| r.clone()).or_else(|| pod.waiting.clone()),
        }
    };
    Some(out)
}

fn gone(why: &str) -> PodState {
    PodState::Gone { why: why.into() }
}

/// `manager terminated: OOMKilled (exit code 137) 3m ago`.
fn termination(t: &Termination, now: Timestamp) -> String {
    let reason = t.reason.as_deref().unwrap_or("terminated");
    let ago = t.finished.map(|f| format!(" {} ago", human(now.duration_since(f)))).unwrap_or_default();
    format!("{} {reason} (exit code {}){ago}", t.container, t.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn ago(secs: i64) -> Timestamp {
        now() - SignedDuration::from_secs(secs)
    }

    /// A Lease taken 10 minutes ago.
    fn lease(holder: &str) -> Tenure<'_> {
        Tenure { holder: Some(holder), took: Some(ago(600)) }
    }

    fn pod() -> PodFacts {
        PodFacts {
            name: "ctl-0".into(),
            uid: "u-1".into(),
            created: Some(ago(3600)),
            phase: Some("Running".into()),
            node: Some("n1".into()),
            ready: Some(("True".into(), None)),
            ..Default::default()
        }
    }

    fn node(status: &str) -> Option<Fetched<NodeFacts>> {
        Some(Fetched::Found(NodeFacts { name: "n1".into(), ready: Some((status.into(), Some("KubeletReady".into()))) }))
    }

    fn judge(holder: &str, pod: Fetched<PodFacts>, node: Option<Fetched<NodeFacts>>) -> String {
        assess("ops", lease(holder), Some(&HolderFacts { pod, node }), now()).unwrap().sentence()
    }

    #[test]
    fn holder_identities_name_pods() {
        assert_eq!(pod_name("ctl-0_8c1f2e"), Some(("ctl-0", "8c1f2e")));
        assert_eq!(pod_name("a.b_c_d"), Some(("a.b", "c_d")));
        for bad in ["ctl-0", "_x", "ctl_", "Ctl_x", "-a_x", "a b_x"] {
            assert_eq!(pod_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn running_and_ready() {
        assert_eq!(judge("ctl-0_x", Fetched::Found(pod()), node("True")), "pod ctl-0 is running and ready on node n1");
        let p = PodFacts {
            restarts: 2,
            last_termination: Some(Termination {
                container: "manager".into(),
                reason: Some("OOMKilled".into()),
                exit_code: 137,
                finished: Some(ago(180)),
            }),
            ..pod()
        };
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(p), node("True")),
            "pod ctl-0 is running and ready on node n1, restarted 2 times, last manager OOMKilled (exit code 137) 3m ago"
        );
    }

    #[test]
    fn restarting_and_not_ready() {
        let p = PodFacts {
            restarts: 5,
            ready: Some(("False".into(), Some("ContainersNotReady".into()))),
            waiting: Some("CrashLoopBackOff".into()),
            last_termination: Some(Termination {
                container: "manager".into(),
                reason: Some("Error".into()),
                exit_code: 1,
                finished: None,
            }),
            ..pod()
        };
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(p), node("True")),
            "pod ctl-0 is restarting on node n1: restarted 5 times, last manager Error (exit code 1), now CrashLoopBackOff"
        );
        let p = PodFacts { ready: Some(("False".into(), Some("ContainersNotReady".into()))), ..pod() };
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(p), None),
            "pod ctl-0 is Running but not ready on node n1 (ContainersNotReady)"
        );
    }

    #[test]
    fn gone_missing_or_replaced() {
        assert_eq!(judge("ctl-0_x", Fetched::Missing, None), "pod ctl-0 is gone: no pod of that name in namespace ops");
        let later = PodFacts { created: Some(ago(60)), ..pod() };
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(later.clone()), None),
            "pod ctl-0 is gone: the pod of that name now (uid u-1) was created 9m after the holder took the Lease"
        );
        // Its UID in the identity: the same pod, however late it was created.
        assert_eq!(
            judge("ctl-0_u-1", Fetched::Found(later), node("True")),
            "pod ctl-0 is running and ready on node n1"
        );
    }

    #[test]
    fn on_a_node_that_is_not_ready() {
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(pod()), node("Unknown")),
            "pod ctl-0 is on node n1, which is not Ready (Ready=Unknown, KubeletReady)"
        );
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(pod()), Some(Fetched::Missing)),
            "pod ctl-0 is on node n1, which does not exist"
        );
        let denied = Some(Fetched::Forbidden(Denied { rule: "get nodes".into() }));
        assert_eq!(
            judge("ctl-0_x", Fetched::Found(pod()), denied),
            "pod ctl-0 is running and ready on node n1; node not checked: missing RBAC: get nodes"
        );
    }

    #[test]
    fn forbidden_terminating_and_unnamed() {
        let denied = Fetched::Forbidden(Denied { rule: "get pods in namespace ops".into() });
        assert_eq!(judge("ctl-0_x", denied, None), "pod ctl-0 not checked: missing RBAC: get pods in namespace ops");
        let p = PodFacts { deleting: Some(ago(20)), ..pod() };
        assert_eq!(judge("ctl-0_x", Fetched::Found(p), None), "pod ctl-0 is terminating on node n1 (for 20s)");
        let unnamed = assess("ops", lease("leader"), None, now()).unwrap();
        assert_eq!(unnamed.sentence(), "holder leader does not name a pod (<pod name>_<id>)");
        assert_eq!(assess("ops", lease("ctl-0_x"), None, now()), None, "not looked up");
        assert_eq!(assess("ops", Tenure { holder: None, took: None }, None, now()), None, "no holder");
    }
}

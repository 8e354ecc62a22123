//! Reads the holder's pod and its node, beside the Lease. A 403 is a note ([`Fetched::Forbidden`])
//! and a 404 a fact, as for every read; the verdict never waits on them. Any other failure (a
//! 5xx, a timeout, a dropped connection) leaves the pod or its node out, logged at `-v 1`: they
//! never fail the command that asked.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;

use super::failure::{Failure, classify};
use crate::cluster::connecting::connect::Connection;
use crate::core::fetched::{Denied, Fetched};
use crate::core::holder::{self, HolderFacts, NodeFacts, PodFacts, Termination};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::error::Error;
use crate::log::Log;

/// The holder's pod (GET in the Lease's namespace) and, when it is on a node, that node (GET).
/// `None` when there is no holder that names a pod.
pub async fn read(
    conn: &Connection,
    lease: &LeaseRef,
    fetched: &Fetched<LeaseFacts>,
    log: &Log,
) -> Result<Option<HolderFacts>, Error> {
    let Some(name) = fetched.found().and_then(|f| f.holder()).and_then(holder::pod_name).map(|(name, _)| name) else {
        return Ok(None);
    };
    let pods: Api<Pod> = Api::namespaced(conn.client.clone(), &lease.namespace);
    let rule = format!("get pods in namespace {}", lease.namespace);
    let pod = match get(conn, &pods, name, &format!("pod {}/{name}", lease.namespace), rule, log).await {
        Ok(pod) => pod.map(|p| pod_facts(&p)),
        Err(e) => {
            log.info(1, &format!("the holder's pod was not read: {e}"));
            return Ok(None);
        }
    };
    let node_name = pod.found().and_then(|p| p.node.clone());
    let node = match node_name {
        Some(n) => {
            let nodes: Api<Node> = Api::all(conn.client.clone());
            match get(conn, &nodes, &n, &format!("node {n}"), "get nodes (cluster-wide)".into(), log).await {
                Ok(node) => Some(node.map(|node| node_facts(&n, &node))),
                Err(e) => {
                    log.info(1, &format!("the holder pod's node was not read: {e}"));
                    None
                }
            }
        }
        None => None,
    };
    Ok(Some(HolderFacts { pod, node }))
}

async fn get<K>(
    conn: &Connection,
    api: &Api<K>,
    name: &str,
    what: &str,
    rule: String,
    log: &Log,
) -> Result<Fetched<K>, Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match super::fetch::get_logged(api, name, log).await {
        Ok(k) => Ok(Fetched::Found(k)),
        Err(e) => match classify(e, conn, what) {
            Failure::NotFound => Ok(Fetched::Missing),
            Failure::Forbidden(_) => Ok(Fetched::Forbidden(Denied { rule })),
            Failure::Conversion(cause) => Err(Error::Api { action: format!("return {what}"), message: cause }),
            Failure::Stop(e) => Err(e),
        },
    }
}

pub fn pod_facts(pod: &Pod) -> PodFacts {
    let status = pod.status.clone().unwrap_or_default();
    let containers = status.container_statuses.unwrap_or_default();
    let ready = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status, c.reason.filter(|r| !r.is_empty())));
    let last_termination = containers
        .iter()
        .filter_map(|c| {
            let t = c.last_state.as_ref()?.terminated.as_ref()?;
            Some(Termination {
                container: c.name.clone(),
                reason: t.reason.clone().filter(|r| !r.is_empty()),
                exit_code: t.exit_code,
                finished: t.finished_at.as_ref().map(|f| f.0),
            })
        })
        .max_by_key(|t| t.finished);
    let waiting = containers
        .iter()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
        .find(|r| !r.is_empty() && r != "ContainerCreating" && r != "PodInitializing");
    PodFacts {
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        deleting: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
        phase: status.phase,
        node: pod.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
        ready,
        // The kubelet's counts, summed without wrapping: a pod that says i32::MAX restarts in
        // two containers restarts i32::MAX times, not a negative number.
        restarts: containers.iter().fold(0i32, |sum, c| sum.saturating_add(c.restart_count)),
        last_termination,
        waiting,
    }
}

pub fn node_facts(name: &str, node: &Node) -> NodeFacts {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| (c.status.clone(), c.reason.clone().filter(|r| !r.is_empty())));
    NodeFacts { name: name.into(), ready }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_counts_at_the_extremes_saturate_rather_than_wrap() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"containerStatuses": [
                {"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": i32::MAX},
                {"name": "b", "image": "i", "imageID": "", "ready": true, "restartCount": 7},
            ]}
        }))
        .unwrap();
        assert_eq!(pod_facts(&pod).restarts, i32::MAX);
        let one: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"containerStatuses": [
                {"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 3},
                {"name": "b", "image": "i", "imageID": "", "ready": true, "restartCount": 4},
            ]}
        }))
        .unwrap();
        assert_eq!(pod_facts(&one).restarts, 7);
    }
}

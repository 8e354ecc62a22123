//! Reads what `workload` explains: the Workload itself, its LocalQueue, and its place in
//! Kueue's pending queue from the visibility API. The ClusterQueues, AdmissionChecks and the
//! Lease are read as the gate reads them ([`super::fetch`]).

use std::time::Instant;

use kube::api::Api;
use serde::Deserialize;

use super::failure::{Failure, classify};
use super::fetch::{self, KueueApi};
use super::wire;
use crate::cluster::connecting::connect::Connection;
use crate::core::fetched::{Denied, Fetched};
use crate::core::kueue::{API_VERSIONS, LocalQueue};
use crate::core::workload::{Position, WorkloadFacts};
use crate::error::{Error, first_line};
use crate::log::Log;

const VISIBILITY: &str = "visibility.kueue.x-k8s.io";

/// GETs the Workload. Not there and not allowed are errors here (there is nothing to explain),
/// each with the API server's own words, as kubectl prints them.
pub async fn workload(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: &str,
    name: &str,
    log: &Log,
) -> Result<WorkloadFacts, Error> {
    let api: Api<wire::WireWorkload> =
        Api::namespaced_with(conn.client.clone(), namespace, &kueue.resource("Workload", "workloads"));
    let rule = format!("get workloads.kueue.x-k8s.io {name:?} in namespace {namespace}");
    match fetch::get_logged(&api, name, log).await {
        Ok(w) => Ok(wire::workload_facts(&w)),
        // An object that is not there has a Status of reason NotFound; a resource that is not
        // served answers a plain 404.
        Err(kube::Error::Api(s)) if s.code == 404 && s.reason == "NotFound" => {
            Err(Error::WorkloadNotFound { message: first_line(&s.message), namespace: namespace.into() })
        }
        Err(kube::Error::Api(s)) if s.code == 403 => Err(Error::Forbidden { message: first_line(&s.message), rule }),
        Err(e) => Err(match classify(e, conn, "the Workload") {
            Failure::NotFound => Error::KueueResourceMissing {
                resource: "Workloads".into(),
                group_version: format!("kueue.x-k8s.io/{}", kueue.version),
            },
            Failure::Conversion(cause) => Error::KueueWebhook {
                what: "the Workload".into(),
                versions: format!("kueue.x-k8s.io/{}", kueue.version),
                cause,
            },
            Failure::Forbidden(_) => {
                Error::Forbidden { message: format!("may not get Workload {namespace}/{name}"), rule }
            }
            Failure::Stop(e) => e,
        }),
    }
}

/// GETs the LocalQueue `namespace/name`.
pub async fn local_queue(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: &str,
    name: &str,
    log: &Log,
) -> Result<Fetched<LocalQueue>, Error> {
    let api: Api<wire::WireLocalQueue> =
        Api::namespaced_with(conn.client.clone(), namespace, &kueue.resource("LocalQueue", "localqueues"));
    match fetch::get_logged(&api, name, log).await {
        Ok(lq) => Ok(Fetched::Found(wire::local_queue(&lq))),
        Err(e) => match classify(e, conn, &format!("LocalQueue {namespace}/{name}")) {
            Failure::NotFound => Ok(Fetched::Missing),
            Failure::Forbidden(_) => Ok(Fetched::Forbidden(Denied {
                rule: format!("get localqueues.kueue.x-k8s.io {name:?} in namespace {namespace}"),
            })),
            Failure::Conversion(cause) => Err(Error::KueueWebhook {
                what: "LocalQueues".into(),
                versions: format!("kueue.x-k8s.io/{}", kueue.version),
                cause,
            }),
            Failure::Stop(e) => Err(e),
        },
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct PendingWorkloadsSummary {
    items: Vec<PendingWorkload>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PendingWorkload {
    metadata: PendingMeta,
    position_in_cluster_queue: i32,
    position_in_local_queue: i32,
}

/// Only the name: kube's `ObjectMeta` would parse every time in the metadata strictly, and one
/// that jiff cannot hold would leave the whole summary unread.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct PendingMeta {
    name: Option<String>,
}

/// The versions of Kueue's visibility API to read, chosen from discovery as Kueue's own are
/// ([`API_VERSIONS`]: v1beta2, then v1beta1), among those the
/// aggregation layer lists for the group (every registered APIService, available or not). Empty
/// when the group is not served. When discovery itself fails (forbidden, an error), both are
/// left to try, in that order: the read says what is wrong.
pub async fn visibility_versions(conn: &Connection, log: &Log) -> Vec<&'static str> {
    const ORDER: [&str; 2] = API_VERSIONS;
    let path = format!("/apis/{VISIBILITY}");
    let started = Instant::now();
    let Ok(request) = http::Request::get(&path).body(Vec::<u8>::new()) else { return ORDER.to_vec() };
    let result = conn.client.request::<k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroup>(request).await;
    log.info(6, &format!("GET {path} {} in {}ms", fetch::outcome(&result), started.elapsed().as_millis()));
    match result {
        Ok(group) => {
            let served: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
            ORDER.into_iter().filter(|v| served.contains(v)).collect()
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        Err(_) => ORDER.to_vec(),
    }
}

/// The Workload's place among the pending Workloads of its LocalQueue, from Kueue's
/// visibility API at `versions` ([`visibility_versions`], most preferred first). Never an
/// error: a group not served, a forbidden read or a failing server become a [`Position`] the
/// output notes.
pub async fn position(
    conn: &Connection,
    versions: &[&str],
    namespace: &str,
    local_queue: &str,
    name: &str,
    log: &Log,
) -> Position {
    let mut last = Position::NotServed;
    for version in versions {
        let path =
            format!("/apis/{VISIBILITY}/{version}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads");
        let started = Instant::now();
        let request = match http::Request::get(&path).body(Vec::<u8>::new()) {
            Ok(r) => r,
            Err(e) => return Position::Failed(e.to_string()),
        };
        let result = conn.client.request::<PendingWorkloadsSummary>(request).await;
        log.info(6, &format!("GET {path} {} in {}ms", fetch::outcome(&result), started.elapsed().as_millis()));
        match result {
            Ok(summary) => {
                let listed = summary.items.len();
                return summary
                    .items
                    .into_iter()
                    .find(|w| w.metadata.name.as_deref() == Some(name))
                    .map(|w| Position::Found {
                        cluster_queue: w.position_in_cluster_queue,
                        local_queue: w.position_in_local_queue,
                    })
                    .unwrap_or(Position::NotListed { listed });
            }
            // Not served at this version (or at all): try the next. A 404 from Kueue's own
            // server ("localqueue.visibility.kueue.x-k8s.io \"q\" not found": its queues do
            // not hold that LocalQueue) is an answer, not a missing API.
            Err(kube::Error::Api(s))
                if s.code == 404 && !s.message.starts_with(&format!("localqueue.{VISIBILITY} ")) =>
            {
                last = Position::NotServed
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                return Position::Forbidden(format!(
                    "get localqueues/pendingworkloads.{VISIBILITY} {local_queue:?} in namespace {namespace}"
                ));
            }
            Err(kube::Error::Api(s)) => return Position::Failed(format!("{} ({})", first_line(&s.message), s.code)),
            Err(e) => return Position::Failed(first_line(&e.to_string())),
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_workload_with_odd_metadata_times_is_still_placed() {
        let text = r#"{"items":[{"metadata":{"name":"w","creationTimestamp":"9999-12-31T23:59:59Z",
            "managedFields":[{"time":"no time"}]},"positionInClusterQueue":3,"positionInLocalQueue":1}]}"#;
        let summary: PendingWorkloadsSummary = serde_json::from_str(text).unwrap();
        let w = &summary.items[0];
        assert_eq!(
            (w.metadata.name.as_deref(), w.position_in_cluster_queue, w.position_in_local_queue),
            (Some("w"), 3, 1)
        );
    }
}

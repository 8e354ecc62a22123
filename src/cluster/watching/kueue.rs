//! The streams `gate --watch` and `--wait` follow, merged into one: the ClusterQueues, the
//! AdmissionChecks, the Workloads and the LocalQueues at the Kueue version the first reads
//! were served at, dispatch's Lease and Kueue's manager's Lease. Each object is reduced as it
//! arrives to what the gate reads of it ([`Fact`]); what the gate makes of the facts is
//! [`crate::core::live_gate`]'s.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::Api;

use super::kueue_lease::{self, KueueLeaseUpdate};
use super::reflector::{self, LeaseUpdate, Seen, Signal, StreamOrigin, WhenForbidden};
use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::KueueApi;
use crate::cluster::reading::wire;
use crate::core::fetched::{Denied, Fetched};
use crate::core::gate::GateSettings;
use crate::core::lease::LeaseRef;
use crate::core::link::LinkEvent;
use crate::core::live_gate::{Fact, Key, ListChange};
use crate::core::waiting::{self, WaitingScope};
use crate::log::Log;

/// What one of the merged streams said, and which one said it (its index in the link).
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub stream: usize,
    pub what: What,
}

#[derive(Debug, Clone, PartialEq)]
pub enum What {
    Fact(Fact),
    /// What the connection did.
    Link(LinkEvent),
    /// List and watch on a Lease are forbidden, get is allowed: it is polled with get.
    Polling {
        lease: LeaseRef,
        every: Duration,
        rule: String,
    },
}

/// How many streams [`streams`] merges.
pub const STREAMS: usize = 6;

/// Watches one Kueue resource and reduces each object with `convert`.
fn kueue_watch<K, T>(
    api: Api<K>,
    labels: Option<String>,
    stream: usize,
    (forbidden, origin): (WhenForbidden<K>, StreamOrigin),
    convert: impl Fn(&K) -> (Key, T) + Send + Sync + 'static,
    wrap: fn(ListChange<T>) -> Fact,
) -> BoxStream<'static, Update>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    T: Send + 'static,
{
    let rule = origin.rule.clone();
    // Each object, listed or watched, is read straight into what the gate reads of it.
    let keep = move |o: K| convert(&o);
    reflector::follow(api, (None, labels), (forbidden, origin), reflector::Restarts::never(), keep)
        .map(move |signal| {
            let change = match signal {
                Signal::Seen(Seen::List) => ListChange::Init,
                Signal::Seen(Seen::Page(items)) => ListChange::Page(items),
                Signal::Seen(Seen::ListDone) => ListChange::InitDone,
                Signal::Seen(Seen::Applied((k, v))) => ListChange::Apply(k, v),
                Signal::Seen(Seen::Deleted((k, _))) => ListChange::Delete(k),
                Signal::Forbidden | Signal::Polling(_) => ListChange::Forbidden(rule.clone()),
                Signal::Link(e) => return Update { stream, what: What::Link(e) },
            };
            Update { stream, what: What::Fact(wrap(change)) }
        })
        .boxed()
}

fn key<P: Clone, U: Clone>(o: &crate::cluster::reading::wire::WireObject<P, U>) -> Key {
    (o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default())
}

/// dispatch's Lease's updates as the gate's.
fn lease_watch(
    conn: &Connection,
    lease: &LeaseRef,
    stream: usize,
    (log, restarts): (&Log, reflector::Restarts),
) -> BoxStream<'static, Update> {
    let lease_ref = lease.clone();
    reflector::lease(conn, lease, log, restarts)
        .map(move |u| {
            let what = match u {
                LeaseUpdate::Lease(Some(f)) => What::Fact(Fact::Lease(Fetched::Found(f))),
                LeaseUpdate::Lease(None) => What::Fact(Fact::Lease(Fetched::Missing)),
                LeaseUpdate::Forbidden(rule) => What::Fact(Fact::Lease(Fetched::Forbidden(Denied { rule }))),
                LeaseUpdate::Link(e) => What::Link(e),
                LeaseUpdate::Polling { every, rule } => What::Polling { lease: lease_ref.clone(), every, rule },
            };
            Update { stream, what }
        })
        .boxed()
}

/// Kueue's manager's Lease's updates as the gate's, from the stream `lease --watch` follows it
/// by ([`kueue_lease::kueue_lease`]): that it may not be read at all is said under the chains,
/// as the one-shot gate says it, and does not end the watch.
fn kueue_lease_watch(
    conn: &Connection,
    lease: &LeaseRef,
    stream: usize,
    (log, restarts): (&Log, reflector::Restarts),
) -> BoxStream<'static, Update> {
    let lease_ref = lease.clone();
    kueue_lease::kueue_lease(conn, lease, log, restarts)
        .map(move |u| {
            let what = match u {
                KueueLeaseUpdate::Lease(f) => What::Fact(Fact::KueueLease(f)),
                KueueLeaseUpdate::Link(e) => What::Link(e),
                KueueLeaseUpdate::Polling { every, rule } => What::Polling { lease: lease_ref.clone(), every, rule },
            };
            Update { stream, what }
        })
        .boxed()
}

/// `ar`'s objects in `namespace`, or in all namespaces.
fn scoped<K: kube::Resource<DynamicType = kube::api::ApiResource, Scope = kube::core::DynamicResourceScope>>(
    client: &kube::Client,
    ar: kube::api::ApiResource,
    namespace: Option<&str>,
) -> Api<K> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// The restarts of the two Leases' watches, each asked by its instance of the heartbeat
/// machine when its confirming read found the watch dead.
pub struct Restarts {
    pub dispatch: reflector::Restarts,
    pub kueue: reflector::Restarts,
}

/// Every stream the gate follows, merged by the caller: the ClusterQueues (0), AdmissionChecks
/// (1), Workloads (2) and LocalQueues (3) at `kueue`'s version, in `namespace` or all, then
/// dispatch's Lease (4) and Kueue's manager's (5). `selector` (`-l`) narrows the Workloads.
/// `restarts` start dispatch's Lease's watch and Kueue's manager's again when the live mode
/// found one dead.
pub fn streams(
    conn: &Connection,
    kueue: &KueueApi,
    settings: &GateSettings,
    all_states: bool,
    (namespace, selector): (Option<&str>, Option<&str>),
    log: &Log,
    restarts: Restarts,
) -> Vec<BoxStream<'static, Update>> {
    let client = conn.client.clone();
    let cqs: Api<wire::WireClusterQueue> =
        Api::all_with(client.clone(), &kueue.resource("ClusterQueue", "clusterqueues"));
    let acs: Api<wire::WireAdmissionCheck> =
        Api::all_with(client.clone(), &kueue.resource("AdmissionCheck", "admissionchecks"));
    let wls: Api<wire::WireWorkload> = scoped(&client, kueue.resource("Workload", "workloads"), namespace);
    let lqs: Api<wire::WireLocalQueue> = scoped(&client, kueue.resource("LocalQueue", "localqueues"), namespace);
    let scope = match namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".into(),
    };
    // A first forbidden ClusterQueue or AdmissionCheck list ends the watch (the one-shot gate
    // answers unknown); Workloads and LocalQueues forbidden are only noted, as there.
    let origin = |rule: String| StreamOrigin {
        server: conn.server.clone(),
        rule,
        server_clock: conn.server_clock.clone(),
        log: log.clone(),
    };
    vec![
        kueue_watch(
            cqs,
            None,
            0,
            (WhenForbidden::End, origin("list and watch clusterqueues.kueue.x-k8s.io (cluster-wide)".into())),
            |o| (key(o), wire::cluster_queue(o)),
            Fact::Queue,
        ),
        kueue_watch(
            acs,
            None,
            1,
            (WhenForbidden::End, origin("list and watch admissionchecks.kueue.x-k8s.io (cluster-wide)".into())),
            |o| (key(o), wire::admission_check(o)),
            Fact::Check,
        ),
        kueue_watch(
            wls,
            // `-l`: the server filters the Workloads.
            selector.map(str::to_string),
            2,
            (WhenForbidden::Retry, origin(format!("list and watch workloads.kueue.x-k8s.io {scope}"))),
            // Reduced to the entries at any check that might be dispatch's; which checks are
            // dispatch's is decided from the AdmissionChecks, as they come.
            move |o| {
                let w = wire::workload(o);
                let scope = WaitingScope {
                    checks: w.checks.iter().map(|c| c.name.clone()).collect(),
                    cluster_queues: BTreeSet::new(),
                    all_states,
                };
                (key(o), waiting::select(&w, &scope))
            },
            Fact::Workload,
        ),
        kueue_watch(
            lqs,
            None,
            3,
            (WhenForbidden::Retry, origin(format!("list and watch localqueues.kueue.x-k8s.io {scope}"))),
            |o| (key(o), wire::local_queue(o)),
            Fact::LocalQueue,
        ),
        lease_watch(conn, &settings.lease, 4, (log, restarts.dispatch)),
        kueue_lease_watch(conn, &settings.kueue_lease, 5, (log, restarts.kueue)),
    ]
}

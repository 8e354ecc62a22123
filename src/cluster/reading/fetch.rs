//! Reads the facts. Each read turns 404 and 403 into data ([`Fetched`]); anything else stops
//! the run with an [`Error`]. Lists are paged by the one pager ([`super::pager`]) and each page
//! is reduced as it arrives, so memory follows what is kept, not what is listed.

use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroup;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::de::DeserializeOwned;

use super::failure::{Failure, classify, transport};
use super::pager::{Failed, Page, Pager};
use super::wire;
use crate::cluster::connecting::connect::Connection;
use crate::core::fetched::{Denied, Fetched};
use crate::core::kueue::{API_VERSIONS, AdmissionCheck, ClusterQueue, LocalQueue};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::core::waiting::{self, Waiting, WaitingScope};
use crate::core::workload::WorkloadFacts;
use crate::error::Error;
use crate::log::Log;

const GROUP: &str = "kueue.x-k8s.io";

/// The Kueue API version to read, chosen from discovery, and the server's clock when it answered.
#[derive(Debug, Clone)]
pub struct KueueApi {
    pub version: String,
    /// The other versions served, in the order to read them when the apiserver cannot convert
    /// Kueue's objects to `version` (Kueue's conversion webhook does not answer).
    fallback: Vec<String>,
    /// The apiserver's `Date` header, and this machine's clock when that response arrived.
    pub server_date: Option<(Timestamp, Timestamp)>,
    /// Every version of the group served, as discovery lists them.
    pub served: Vec<String>,
}

impl KueueApi {
    /// Kueue's `kind` (plural `plural`) at this version: the one definition of a Kueue
    /// resource, for reads, watches and completion alike.
    pub fn resource(&self, kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, &self.version, kind), plural)
    }

    /// This Kueue read at the next version served, if there is one.
    fn fall_back(&self) -> Option<KueueApi> {
        let (next, rest) = self.fallback.split_first()?;
        Some(KueueApi {
            version: next.clone(),
            fallback: rest.to_vec(),
            server_date: self.server_date,
            served: self.served.clone(),
        })
    }
}

/// The versions the plugin reads ([`API_VERSIONS`]), most preferred first, among those served.
fn read_order(served: &[&str]) -> Vec<String> {
    API_VERSIONS.into_iter().filter(|v| served.contains(v)).map(String::from).collect()
}

/// What [`read_served`] read, at which version, and the warning when that is not the one
/// discovery chose.
pub struct Served<T> {
    pub value: T,
    pub kueue: KueueApi,
    pub warning: Option<String>,
}

/// Runs one evaluation's Kueue reads at the version discovery chose. Kueue v0.15 serves
/// v1beta2 but stores v1beta1, so every v1beta2 read goes through Kueue's conversion webhook;
/// when that webhook does not answer, the reads run again at the next version served (the
/// stored one needs no conversion), with a warning that says why. When no version served can
/// be read, the error says that Kueue's webhook is down.
pub async fn read_served<T>(
    kueue: &KueueApi,
    log: &Log,
    reads: impl AsyncFn(&KueueApi) -> Result<T, Error>,
) -> Result<Served<T>, Error> {
    let mut current = kueue.clone();
    // (what, version, cause) of each read that Kueue's conversion webhook failed.
    let mut failed: Vec<(String, String, String)> = Vec::new();
    loop {
        match reads(&current).await {
            Ok(value) => {
                let warning = failed.first().map(|(what, version, cause)| {
                    format!(
                        "Kueue's conversion webhook does not answer; reading {GROUP}/{} (the API server cannot return {what} as {version}: {cause})",
                        current.version
                    )
                });
                return Ok(Served { value, kueue: current, warning });
            }
            Err(Error::KueueWebhook { what, versions, cause }) => {
                failed.push((what, versions, cause));
                match current.fall_back() {
                    Some(next) => {
                        log.info(
                            1,
                            &format!("Kueue's conversion webhook does not answer; reading {GROUP}/{}", next.version),
                        );
                        current = next;
                    }
                    None => return Err(webhook_down(failed)),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The error once every version served failed conversion: the last failure, naming every
/// version tried when they failed on the same objects.
fn webhook_down(mut failed: Vec<(String, String, String)>) -> Error {
    let (what, version, cause) = failed.pop().expect("at least one failure");
    let mut versions: Vec<String> = failed.into_iter().filter(|(w, ..)| *w == what).map(|(_, v, _)| v).collect();
    versions.push(version);
    Error::KueueWebhook { what, versions: versions.join(" or "), cause }
}

const DESCRIBE: &str = "describe the Kueue API group";

/// Whether [`discover_kueue`] failed because discovery of Kueue's group is forbidden (403).
pub fn discovery_forbidden(e: &Error) -> bool {
    matches!(e, Error::Api { action, message } if action == DESCRIBE && message == "HTTP 403")
}

/// Discovers which Kueue versions are served and chooses v1beta2, else v1beta1 (Kueue ≤ v0.14).
/// An unserved group answers a plain-text 404, so this asks discovery rather than parsing an
/// error body.
pub async fn discover_kueue(conn: &Connection, log: &Log) -> Result<KueueApi, Error> {
    let path = format!("/apis/{GROUP}");
    let started = Instant::now();
    let request = http::Request::get(&path).body(Vec::<u8>::new()).map_err(|e| Error::Usage(e.to_string()))?;
    let response = conn.client.send(request.map(Into::into)).await.map_err(|e| stop(e, conn, "the Kueue API group"))?;
    let status = response.status();
    let arrived = Timestamp::now();
    let server_date = crate::cluster::connecting::server_clock::date(response.headers()).map(|date| (date, arrived));
    log.info(6, &format!("GET {path} {} in {}ms", status.as_u16(), started.elapsed().as_millis()));
    match status.as_u16() {
        200 => {}
        404 => return Err(Error::KueueMissing),
        401 => {
            return Err(Error::Unauthorized { server: conn.server.clone() });
        }
        code => {
            return Err(Error::Api { action: DESCRIBE.into(), message: format!("HTTP {code}") });
        }
    }
    let body = response.into_body().collect_bytes().await.map_err(|e| transport(&e, conn))?;
    let group: APIGroup = serde_json::from_slice(&body)
        .map_err(|e| Error::Malformed { what: "the Kueue API group".into(), cause: e.to_string() })?;
    let served: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
    let mut order = read_order(&served).into_iter();
    let version = order.next().ok_or(Error::KueueMissing)?;
    log.info(1, &format!("Kueue API {GROUP}/{version}"));
    let served = served.into_iter().map(String::from).collect();
    Ok(KueueApi { version, fallback: order.collect(), server_date, served })
}

/// A failed Kueue list outside the pager (completion's names): a conversion failure becomes
/// [`Error::KueueWebhook`], so [`read_served`] can fall back; anything else stops.
pub fn list_error(e: kube::Error, conn: &Connection, kueue: &KueueApi, what: &str) -> Error {
    match classify(e, conn, what) {
        Failure::Conversion(cause) => {
            Error::KueueWebhook { what: what.into(), versions: format!("{GROUP}/{}", kueue.version), cause }
        }
        other => stop_failure(other, what),
    }
}

pub(crate) fn stop(e: kube::Error, conn: &Connection, what: &str) -> Error {
    stop_failure(classify(e, conn, what), what)
}

fn stop_failure(failure: Failure, what: &str) -> Error {
    match failure {
        Failure::Stop(e) => e,
        Failure::NotFound => Error::Api { action: format!("return {what}"), message: "not found (404)".into() },
        Failure::Forbidden(_) => Error::Api { action: format!("return {what}"), message: "forbidden (403)".into() },
        Failure::Conversion(cause) => Error::Api { action: format!("return {what}"), message: cause },
    }
}

/// GETs one object by name, logged at `-v 6` as `GET URL/NAME CODE in Nms`.
pub(crate) async fn get_logged<K>(api: &Api<K>, name: &str, log: &Log) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let started = Instant::now();
    let result = api.get(name).await;
    log.info(
        6,
        &format!("GET {}/{name} {} in {}ms", api.resource_url(), outcome(&result), started.elapsed().as_millis()),
    );
    result
}

/// GETs the Lease.
pub async fn lease(conn: &Connection, lease: &LeaseRef, log: &Log) -> Result<Fetched<LeaseFacts>, Error> {
    lease_and_refusal(conn, lease, log).await.map(|(fetched, _)| fetched)
}

/// GETs the Lease; with a 403, also the server's words for it (`leases.coordination.k8s.io
/// "..." is forbidden: User "..." cannot get ...`), which `lease` prints as `lease --watch`
/// and kubectl print them.
pub async fn lease_and_refusal(
    conn: &Connection,
    lease: &LeaseRef,
    log: &Log,
) -> Result<(Fetched<LeaseFacts>, Option<String>), Error> {
    let api: Api<wire::WireLease> =
        Api::namespaced_with(conn.client.clone(), &lease.namespace, &wire::lease_resource());
    match get_logged(&api, &lease.name, log).await {
        Ok(l) => Ok((Fetched::Found(LeaseFacts::from(&l)), None)),
        Err(e) => match classify(e, conn, &format!("Lease {lease}")) {
            Failure::NotFound => Ok((Fetched::Missing, None)),
            Failure::Forbidden(said) => Ok((
                Fetched::Forbidden(Denied {
                    rule: format!("get leases.coordination.k8s.io {:?} in namespace {}", lease.name, lease.namespace),
                }),
                Some(said).filter(|s| !s.is_empty()),
            )),
            Failure::Conversion(cause) => Err(Error::Api { action: format!("return Lease {lease}"), message: cause }),
            Failure::Stop(e) => Err(e),
        },
    }
}

pub(crate) fn outcome<T>(r: &Result<T, kube::Error>) -> String {
    match r {
        Ok(_) => "200".into(),
        Err(kube::Error::Api(s)) => s.code.to_string(),
        Err(_) => "failed".into(),
    }
}

/// One list read once, through the [`Pager`]: what a page that could not be read means for a
/// one-shot read. Forbidden ends the list as data; a resource not served, a conversion that
/// failed, a bound and the rest stop the run. Objects that could not be read are said once,
/// as the page is read, and left out.
struct Reading<'a, K, T = K> {
    pager: Pager<K, T>,
    what: &'a str,
    /// The Kueue version read, for a conversion failure's error.
    version: &'a str,
    conn: &'a Connection,
    log: &'a Log,
    forbidden: bool,
}

impl<'a, K, T> Reading<'a, K, T>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
{
    fn new(pager: Pager<K, T>, what: &'a str, kueue: &'a KueueApi, conn: &'a Connection, log: &'a Log) -> Self {
        Reading { pager, what, version: &kueue.version, conn, log, forbidden: false }
    }

    /// The next page; `None` once the list is done, or forbidden (see [`Reading::end`]).
    async fn next(&mut self) -> Result<Option<Page<T>>, Error> {
        match self.pager.next(self.log).await {
            Ok(page) => Ok(page),
            Err(Failed::Bound(message)) => Err(Error::Bound(message)),
            Err(Failed::Request(e)) => self.failed(e),
        }
    }

    /// A page that could not be read: forbidden ends the list as data, the rest stop the run.
    fn failed(&mut self, e: kube::Error) -> Result<Option<Page<T>>, Error> {
        match classify(e, self.conn, self.what) {
            Failure::Forbidden(_) => {
                self.forbidden = true;
                Ok(None)
            }
            Failure::NotFound => {
                Err(Error::KueueResourceMissing { resource: self.what.into(), group_version: self.pager.path() })
            }
            Failure::Conversion(cause) => Err(Error::KueueWebhook {
                what: self.what.into(),
                versions: format!("{GROUP}/{}", self.version),
                cause,
            }),
            Failure::Stop(e) => Err(e),
        }
    }

    /// How the list ended: read whole, or forbidden (the rule is filled in by the caller).
    fn end(&self) -> Fetched<()> {
        if self.forbidden { Fetched::Forbidden(Denied { rule: String::new() }) } else { Fetched::Found(()) }
    }
}

/// Lists every page of `api`, keeping what `keep` makes of each object as it is decoded.
async fn list_pages<K, T>(
    api: Api<K>,
    what: &str,
    kueue: &KueueApi,
    conn: &Connection,
    log: &Log,
    keep: fn(&K) -> T,
) -> Result<(Fetched<()>, Vec<T>), Error>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
{
    let pager = Pager::keeping(api, what, ListParams::default(), move |k| keep(&k));
    let mut pager = Reading::new(pager, what, kueue, conn, log);
    let mut out = Vec::new();
    while let Some(page) = pager.next().await? {
        if page.restarted {
            out.clear();
        }
        out.extend(page.items);
    }
    Ok((pager.end(), out))
}

fn with_rule(fetched: Fetched<()>, rule: String) -> Fetched<()> {
    match fetched {
        Fetched::Forbidden(_) => Fetched::Forbidden(Denied { rule }),
        other => other,
    }
}

pub async fn cluster_queues(
    conn: &Connection,
    kueue: &KueueApi,
    log: &Log,
) -> Result<Fetched<Vec<ClusterQueue>>, Error> {
    let api: Api<wire::WireClusterQueue> =
        Api::all_with(conn.client.clone(), &kueue.resource("ClusterQueue", "clusterqueues"));
    let (fetched, out) = list_pages(api, "ClusterQueues", kueue, conn, log, wire::cluster_queue).await?;
    Ok(with_rule(fetched, "list clusterqueues.kueue.x-k8s.io (cluster-wide)".into()).map(|_| out))
}

pub async fn admission_checks(
    conn: &Connection,
    kueue: &KueueApi,
    log: &Log,
) -> Result<Fetched<Vec<AdmissionCheck>>, Error> {
    let api: Api<wire::WireAdmissionCheck> =
        Api::all_with(conn.client.clone(), &kueue.resource("AdmissionCheck", "admissionchecks"));
    let (fetched, out) = list_pages(api, "AdmissionChecks", kueue, conn, log, wire::admission_check).await?;
    Ok(with_rule(fetched, "list admissionchecks.kueue.x-k8s.io (cluster-wide)".into()).map(|_| out))
}

fn namespaced_or_all<K>(conn: &Connection, namespace: Option<&str>, ar: &ApiResource) -> Api<K>
where
    K: kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced_with(conn.client.clone(), ns, ar),
        None => Api::all_with(conn.client.clone(), ar),
    }
}

fn scope_text(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".into(),
    }
}

pub async fn local_queues(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: Option<&str>,
    log: &Log,
) -> Result<Fetched<Vec<LocalQueue>>, Error> {
    let api: Api<wire::WireLocalQueue> =
        namespaced_or_all(conn, namespace, &kueue.resource("LocalQueue", "localqueues"));
    let (fetched, out) = list_pages(api, "LocalQueues", kueue, conn, log, wire::local_queue).await?;
    Ok(with_rule(fetched, format!("list localqueues.kueue.x-k8s.io {}", scope_text(namespace))).map(|_| out))
}

/// Every Workload of `namespace` (of all with `None`), whole, as `workloads` explains them, in
/// the order the API server lists them (as `kubectl get workloads` shows them); `labels`
/// filters on the server.
pub async fn workloads(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: Option<&str>,
    labels: Option<&str>,
    log: &Log,
) -> Result<Fetched<Vec<WorkloadFacts>>, Error> {
    let mut out = Vec::new();
    let fetched = workloads_each(conn, kueue, namespace, labels, log, |items, restarted| {
        if restarted {
            out.clear();
        }
        out.extend(items);
        Ok(())
    })
    .await?;
    Ok(fetched.map(|_| out))
}

/// The Workloads as [`workloads`] lists them, handed to `each` a batch at a time as they are
/// decoded, with whether the list started over (its continue token expired) before them: a
/// caller that keeps nothing holds one batch at most.
pub async fn workloads_each(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: Option<&str>,
    labels: Option<&str>,
    log: &Log,
    mut each: impl FnMut(Vec<WorkloadFacts>, bool) -> Result<(), Error>,
) -> Result<Fetched<()>, Error> {
    let api: Api<wire::WireWorkload> = namespaced_or_all(conn, namespace, &kueue.resource("Workload", "workloads"));
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        // The server filters (`labelSelector=`), as `kubectl get -l` asks it to.
        params = params.labels(labels);
    }
    let pager = Pager::keeping(api, "Workloads", params, |w| wire::workload_facts(&w));
    let mut pager = Reading::new(pager, "Workloads", kueue, conn, log);
    while let Some(Page { items, restarted, .. }) = pager.next().await? {
        each(items, restarted)?;
    }
    Ok(with_rule(pager.end(), format!("list workloads.kueue.x-k8s.io {}", scope_text(namespace))))
}

/// Reads one ClusterQueue and one Workload (lists of limit 1), only to learn whether the
/// apiserver can serve Kueue's objects at this version (a watch would retry a conversion
/// failure for ever). A forbidden list proves nothing and is left to the watch to report.
pub async fn probe(conn: &Connection, kueue: &KueueApi, namespace: Option<&str>, log: &Log) -> Result<(), Error> {
    let cqs: Api<wire::WireClusterQueue> =
        Api::all_with(conn.client.clone(), &kueue.resource("ClusterQueue", "clusterqueues"));
    let wls: Api<wire::WireWorkload> = namespaced_or_all(conn, namespace, &kueue.resource("Workload", "workloads"));
    let mut cq_pager = Reading::new(Pager::first_page(cqs, "ClusterQueues", 1), "ClusterQueues", kueue, conn, log);
    let mut wl_pager = Reading::new(Pager::first_page(wls, "Workloads", 1), "Workloads", kueue, conn, log);
    futures::try_join!(cq_pager.next(), wl_pager.next())?;
    Ok(())
}

/// Streams the Workloads page by page and keeps only the entries the scope selects. The scope
/// (it comes from the AdmissionCheck list) is awaited alongside the first page, so the list
/// does not wait a round trip for it; `T` is whatever else that future yields.
pub async fn waiting<T>(
    conn: &Connection,
    kueue: &KueueApi,
    namespace: Option<&str>,
    labels: Option<&str>,
    scoped: impl Future<Output = Result<(T, WaitingScope), Error>>,
    log: &Log,
) -> Result<(T, WaitingScope, Fetched<Vec<Waiting>>), Error> {
    let api: Api<wire::WireWorkload> = namespaced_or_all(conn, namespace, &kueue.resource("Workload", "workloads"));
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        // The server filters (`labelSelector=`), as `kubectl get -l` asks it to.
        params = params.labels(labels);
    }
    let pager = Pager::keeping(api, "Workloads", params, |w| wire::workload(&w));
    let mut pager = Reading::new(pager, "Workloads", kueue, conn, log);
    let ((extra, scope), mut page) = futures::try_join!(scoped, pager.next())?;
    let mut out = Vec::new();
    while let Some(Page { items, restarted, .. }) = page {
        if restarted {
            out.clear();
        }
        out.extend(items.iter().flat_map(|w| waiting::select(w, &scope)));
        page = pager.next().await?;
    }
    let fetched = with_rule(pager.end(), format!("list workloads.kueue.x-k8s.io {}", scope_text(namespace)));
    Ok((extra, scope, fetched.map(|_| out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kueue(served: &[&str]) -> KueueApi {
        let mut order = read_order(served).into_iter();
        KueueApi { version: order.next().unwrap(), fallback: order.collect(), server_date: None, served: vec![] }
    }

    fn down(what: &str, version: &str) -> Error {
        Error::KueueWebhook {
            what: what.into(),
            versions: format!("{GROUP}/{version}"),
            cause: format!("conversion webhook for kueue.x-k8s.io/v1beta1, Kind={what} failed: connection refused"),
        }
    }

    #[test]
    fn v1beta2_first_then_v1beta1() {
        assert_eq!(read_order(&["v1beta1", "v1beta2", "v1alpha1"]), ["v1beta2", "v1beta1"]);
        assert_eq!(read_order(&["v1beta1"]), ["v1beta1"]);
        assert!(read_order(&["v1alpha1"]).is_empty());
    }

    #[tokio::test]
    async fn a_conversion_failure_reads_the_next_version_served_with_a_warning() {
        let served = read_served(&kueue(&["v1beta1", "v1beta2"]), &Log::silent(), async |k: &KueueApi| {
            if k.version == "v1beta2" { Err(down("ClusterQueues", "v1beta2")) } else { Ok(k.version.clone()) }
        })
        .await
        .unwrap();
        assert_eq!(served.value, "v1beta1");
        assert_eq!(served.kueue.version, "v1beta1");
        assert_eq!(
            served.warning.unwrap(),
            "Kueue's conversion webhook does not answer; reading kueue.x-k8s.io/v1beta1 (the API server cannot return \
             ClusterQueues as kueue.x-k8s.io/v1beta2: conversion webhook for kueue.x-k8s.io/v1beta1, Kind=ClusterQueues \
             failed: connection refused)"
        );
    }

    #[tokio::test]
    async fn no_warning_when_the_chosen_version_reads() {
        let served = read_served(&kueue(&["v1beta1", "v1beta2"]), &Log::silent(), async |k: &KueueApi| {
            Ok::<_, Error>(k.version.clone())
        })
        .await
        .unwrap();
        assert_eq!((served.value.as_str(), served.warning), ("v1beta2", None));
    }

    #[tokio::test]
    async fn when_no_version_reads_the_error_says_the_webhook_is_down() {
        let e = read_served(&kueue(&["v1beta1", "v1beta2"]), &Log::silent(), async |k: &KueueApi| {
            Err::<(), _>(down("Workloads", &k.version))
        })
        .await
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "Kueue's webhook is down: the API server cannot return Workloads as kueue.x-k8s.io/v1beta2 or \
             kueue.x-k8s.io/v1beta1: conversion webhook for kueue.x-k8s.io/v1beta1, Kind=Workloads failed: connection refused"
        );
        // Different objects failed at each version: only the last is named.
        let e = read_served(&kueue(&["v1beta1", "v1beta2"]), &Log::silent(), async |k: &KueueApi| {
            Err::<(), _>(down(if k.version == "v1beta2" { "ClusterQueues" } else { "Workloads" }, &k.version))
        })
        .await
        .err()
        .unwrap();
        assert!(e.to_string().contains("cannot return Workloads as kueue.x-k8s.io/v1beta1: "), "{e}");
        // Any other error stops at once, without falling back.
        let e = read_served(&kueue(&["v1beta1", "v1beta2"]), &Log::silent(), async |_: &KueueApi| {
            Err::<(), _>(Error::KueueMissing)
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(e, Error::KueueMissing));
    }
}

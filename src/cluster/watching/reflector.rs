//! Watches, as streams of plain signals. Each stream lists (through the one-shot reads' pager,
//! with its bounds: a list that does not end ends the stream), then watches from the list's
//! resourceVersion with bookmarks, renews the watch when the server ends it, relists after a
//! 410, and retries every failure with a capped backoff. Unlike kube's watcher, it also says
//! what the connection did ([`LinkEvent`]): answered (the moment a list or watch is accepted,
//! whether or not any object changed), failed (the cause in plain words), or expired.
//!
//! The Lease is followed by name; when list and watch on it are forbidden but get is allowed,
//! it is polled with get instead (the adapter itself is granted only get).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use futures::channel::mpsc::{UnboundedSender, unbounded};
use futures::{Stream, StreamExt};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

use super::bounded_watch;
use kube::core::Status;

use crate::cluster::connecting::connect::Connection;
use crate::cluster::connecting::server_clock::ServerClock;
use crate::cluster::reading::pager::{Failed, Pager};
use crate::cluster::reading::wire::{self, WireLease};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::core::link::{LinkEvent, OnStatus, Refusal, on_status};
use crate::log::Log;

/// The server ends each watch after this many seconds; it is renewed at once, silently.
const WATCH_SECONDS: u32 = 290;
/// A watch that lasted this long, or brought an event, was an answer: the backoff starts
/// again from its first step. One that ended sooner with nothing is retried with the backoff.
const WATCH_LIVED: Duration = Duration::from_secs(1);
/// How often a forbidden list is tried again (RBAC may be granted meanwhile).
const FORBIDDEN_RETRY: Duration = Duration::from_secs(5);

/// What a list (from its first page) and then a watch saw of the objects.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen<K> {
    /// A list starts: what follows until [`Seen::ListDone`] replaces everything.
    List,
    /// One page of the list.
    Page(Vec<K>),
    ListDone,
    Applied(K),
    Deleted(K),
}

/// One signal of a followed resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal<K> {
    Seen(Seen<K>),
    Link(LinkEvent),
    /// The server refused the list (403).
    Forbidden,
    /// List and watch are forbidden but get is allowed: the object is polled with get, at
    /// this cadence (said once).
    Polling(Duration),
}

/// What a watch of one Lease saw.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseUpdate {
    /// The Lease now (`None`: it does not exist).
    Lease(Option<LeaseFacts>),
    /// The server refused list, watch and get; the RBAC rule that would allow following it.
    Forbidden(String),
    /// What the connection did.
    Link(LinkEvent),
    /// List and watch are forbidden, get is allowed: polled with get every so often. The
    /// rule that would allow a watch.
    Polling { every: Duration, rule: String },
}

/// Doubling from 500 ms to at most 2 s between reconnects; reset by any answer. A restarted
/// API server is found again within 2 s of being ready.
pub struct CappedBackoff {
    next: Duration,
}

impl CappedBackoff {
    const FIRST: Duration = Duration::from_millis(500);
    const CAP: Duration = Duration::from_secs(2);

    pub fn new() -> Self {
        CappedBackoff { next: Self::FIRST }
    }

    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for CappedBackoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Iterator for CappedBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(Self::CAP);
        Some(now)
    }
}

/// How a stream treats a forbidden list.
#[derive(Clone)]
pub enum WhenForbidden<K> {
    /// Say so and list again every few seconds, from the start (a read that does not decide:
    /// the one-shot verb only notes it).
    Retry,
    /// A first list forbidden ends the stream ([`Refusal::Forbidden`]): the read decides, and
    /// the one-shot verb would answer unknown. Forbidden later, like [`WhenForbidden::Retry`].
    End,
    /// Get this object by name instead, every `cadence(object)`, when get is allowed.
    Poll { name: String, cadence: fn(Option<&K>) -> Duration },
}

/// Where a followed stream comes from, for the refusals that end it: the server's URL and the RBAC rule
/// that would allow the stream; the connection's record of the server's clock; and the log
/// (`-v 6`'s list requests, and the objects a list leaves out, said as the one-shot says them).
#[derive(Debug, Clone, Default)]
pub struct StreamOrigin {
    pub server: String,
    pub rule: String,
    pub server_clock: ServerClock,
    pub log: Log,
}

/// Follows `api` (optionally narrowed by a field selector, and by a label selector: `-l`, the
/// server filters) until the stream is dropped, or until the server refuses it for good
/// ([`LinkEvent::Refused`], the last signal).
pub fn follow<K>(
    api: Api<K>,
    fields: Option<String>,
    labels: Option<String>,
    forbidden: WhenForbidden<K>,
    origin: StreamOrigin,
) -> impl Stream<Item = Signal<K>> + Send + 'static
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (tx, rx) = unbounded();
    tokio::spawn(async move {
        // Ends when nobody listens any more (a send fails).
        let answered = AtomicBool::new(false);
        let refreshed = AtomicBool::new(false);
        let not_found = AtomicU32::new(0);
        let broken = AtomicBool::new(false);
        let _ = Reflector { api, fields, labels, forbidden, origin, tx, answered, refreshed, not_found, broken }
            .run()
            .await;
    });
    rx
}

struct Reflector<K> {
    api: Api<K>,
    fields: Option<String>,
    labels: Option<String>,
    forbidden: WhenForbidden<K>,
    origin: StreamOrigin,
    tx: UnboundedSender<Signal<K>>,
    /// A list, watch or get of this stream succeeded.
    answered: AtomicBool,
    /// The credential was fetched anew after a 401, and no answer has accepted it since.
    refreshed: AtomicBool,
    /// 404s in a row since the last success.
    not_found: AtomicU32,
    /// A watch's stream could not be read (a line too long, or not an event): until a watch
    /// brings a line that reads, accepting one is no answer (the outage goes on).
    broken: AtomicBool,
}

/// The receiver is gone.
struct Gone;

/// What a failed list, watch or get leaves to its caller ([`Reflector::failed`]).
enum Failure {
    /// A 401 after an answer: retry at once, with a credential fetched anew.
    Refreshed,
    /// Said as an interruption and waited out: retry.
    Retried,
    /// 403: the caller's own way.
    Forbidden,
    /// 410 Gone: list again.
    Expired,
}

/// How a list ended.
enum Listed {
    /// Read whole; the resourceVersion to watch from.
    Done(String),
    Failed(kube::Error),
}

impl<K> Reflector<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    fn send(&self, s: Signal<K>) -> Result<(), Gone> {
        self.tx.unbounded_send(s).map_err(|_| Gone)
    }

    fn link(&self, e: LinkEvent) -> Result<(), Gone> {
        self.send(Signal::Link(e))
    }

    /// A list, watch or get of this stream succeeded (a 403 is an answer too, but not this):
    /// also the moment to compare the clocks, from that response's `Date` header.
    fn succeeded(&self) -> Result<(), Gone> {
        self.answered.store(true, Ordering::Relaxed);
        self.refreshed.store(false, Ordering::Relaxed);
        self.not_found.store(0, Ordering::Relaxed);
        match self.origin.server_clock.latest() {
            Some((server, local)) => self.link(LinkEvent::Clock { server, local }),
            None => Ok(()),
        }
    }

    /// Applies [`on_status`] to an error status. `Retry`: the caller goes its usual way.
    /// `Refresh`: said as an interruption; the caller retries at once, and the transport
    /// fetches a new credential for that request (it does after any 401). `End`: the refusal
    /// is sent and the stream stops (`Err(Gone)`).
    fn on_error_status(&self, status: Option<&Status>) -> Result<OnStatus, Gone> {
        let Some(s) = status else { return Ok(OnStatus::Retry) };
        let answered = self.answered.load(Ordering::Relaxed);
        if s.code != 401 && s.code < 500 {
            // Authenticated (a 403 is decided after the credential was accepted): a later 401
            // may refresh it again.
            self.refreshed.store(false, Ordering::Relaxed);
        }
        let not_found = match s.code {
            404 => self.not_found.fetch_add(1, Ordering::Relaxed) + 1,
            _ => 0,
        };
        let history =
            crate::core::link::History { answered, refreshed: self.refreshed.load(Ordering::Relaxed), not_found };
        let decided = match on_status(s.code, history) {
            // A first forbidden list is the stream's own to handle where it has another way.
            OnStatus::End if s.code == 403 && !matches!(self.forbidden, WhenForbidden::End) => OnStatus::Retry,
            other => other,
        };
        match decided {
            OnStatus::Retry => Ok(OnStatus::Retry),
            OnStatus::Refresh => {
                self.refreshed.store(true, Ordering::Relaxed);
                self.link(LinkEvent::Down(plain_status(s)))?;
                Ok(OnStatus::Refresh)
            }
            OnStatus::End => {
                let refusal = match s.code {
                    401 => Refusal::Unauthorized { server: self.origin.server.clone() },
                    403 => Refusal::Forbidden {
                        message: crate::error::first_line(&s.message),
                        rule: self.origin.rule.clone(),
                    },
                    _ => Refusal::NotServed { resource: self.api.resource_url().to_string() },
                };
                self.link(LinkEvent::Refused(refusal))?;
                Err(Gone)
            }
        }
    }

    async fn run(self) -> Result<(), Gone> {
        let mut backoff = CappedBackoff::new();
        let mut version: Option<String> = None;
        loop {
            let from = match version.take() {
                Some(v) => v,
                None => match self.list().await? {
                    Listed::Done(v) => v,
                    Listed::Failed(e) => {
                        match self.failed(&e, &mut backoff).await? {
                            Failure::Forbidden => {
                                self.link(LinkEvent::Up)?;
                                self.on_forbidden().await?;
                            }
                            Failure::Expired => self.expired(None, &mut backoff).await?,
                            Failure::Refreshed | Failure::Retried => {}
                        }
                        continue;
                    }
                },
            };
            version = self.watch(from, &mut backoff).await?;
        }
    }

    /// One watch from `from`, until the server ends it or it fails: the version to watch from
    /// next, or `None` to list again.
    async fn watch(&self, from: String, backoff: &mut CappedBackoff) -> Result<Option<String>, Gone> {
        let params = WatchParams {
            field_selector: self.fields.clone(),
            label_selector: self.labels.clone(),
            timeout: Some(WATCH_SECONDS),
            bookmarks: true,
            ..WatchParams::default()
        };
        let stream = match bounded_watch::watch(&self.api, &params, &from).await {
            Ok(s) => s,
            Err(e) => return self.not_watched(&e, from, backoff).await,
        };
        // Accepted: the connection is live, whether or not anything changes; after a stream
        // that could not be read, only once a line reads.
        if !self.broken.load(Ordering::Relaxed) {
            self.succeeded()?;
            self.link(LinkEvent::Up)?;
        }
        let started = tokio::time::Instant::now();
        let mut stream = std::pin::pin!(stream);
        let mut at = from;
        let mut delivered = false;
        while let Some(item) = stream.next().await {
            // A watch that lived or brought an event was no failure of the connection.
            if matches!(item, Ok(ref e) if !matches!(e, WatchEvent::Error(_))) {
                delivered = true;
            }
            if delivered || started.elapsed() >= WATCH_LIVED {
                backoff.reset();
            }
            if item.is_ok() && self.broken.swap(false, Ordering::Relaxed) {
                self.succeeded()?;
                self.link(LinkEvent::Up)?;
            }
            let e = match item {
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => {
                    at = o.meta().resource_version.clone().unwrap_or(at);
                    self.send(Signal::Seen(Seen::Applied(o)))?;
                    continue;
                }
                Ok(WatchEvent::Deleted(o)) => {
                    at = o.meta().resource_version.clone().unwrap_or(at);
                    self.send(Signal::Seen(Seen::Deleted(o)))?;
                    continue;
                }
                Ok(WatchEvent::Bookmark(b)) => {
                    at = b.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Error(s)) => kube::Error::Api(s),
                Err(e) => {
                    if bounded_watch::unreadable(&e).is_some() {
                        self.broken.store(true, Ordering::Relaxed);
                    }
                    e
                }
            };
            return match self.failed(&e, backoff).await? {
                Failure::Expired => {
                    self.expired(Some(&at), backoff).await?;
                    Ok(None)
                }
                Failure::Forbidden => {
                    // RBAC taken away mid-watch: retried as a failure, the list says the rest.
                    self.link(LinkEvent::Down(plain_cause(&e)))?;
                    tokio::time::sleep(backoff.next().unwrap_or_default()).await;
                    Ok(Some(at))
                }
                Failure::Refreshed | Failure::Retried => Ok(Some(at)),
            };
        }
        // The server ended the watch (its timeout): renewed from where it was, at once; but a
        // watch that ends as soon as it starts is retried with the backoff, not in a tight loop.
        if !delivered && started.elapsed() < WATCH_LIVED {
            tokio::time::sleep(backoff.next().unwrap_or_default()).await;
        }
        Ok(Some(at))
    }

    /// A watch that was not accepted: the version to watch from next, or `None` to list again.
    async fn not_watched(
        &self,
        e: &kube::Error,
        from: String,
        backoff: &mut CappedBackoff,
    ) -> Result<Option<String>, Gone> {
        match self.failed(e, backoff).await? {
            Failure::Expired => {
                self.expired(Some(&from), backoff).await?;
                Ok(None)
            }
            Failure::Forbidden => {
                self.link(LinkEvent::Up)?;
                match &self.forbidden {
                    // The list was allowed and the watch is not: list again every few seconds,
                    // keeping what the list showed, rather than flipping to forbidden between
                    // lists.
                    WhenForbidden::Retry | WhenForbidden::End => tokio::time::sleep(FORBIDDEN_RETRY).await,
                    WhenForbidden::Poll { .. } => self.on_forbidden().await?,
                }
                Ok(None)
            }
            Failure::Refreshed | Failure::Retried => Ok(Some(from)),
        }
    }

    /// The one rule for a failed list, watch or get. An exec plugin that fails ends the
    /// stream, as `kubectl get -w` ends; a status that retrying cannot change ends it too
    /// ([`Self::on_error_status`]); a 403 or a 410 is the caller's to handle; anything else is
    /// said as an interruption and waited out with the backoff.
    async fn failed(&self, e: &kube::Error, backoff: &mut CappedBackoff) -> Result<Failure, Gone> {
        if let Some(exec) = exec_failure(e) {
            self.link(LinkEvent::Refused(Refusal::Exec { message: exec.to_string() }))?;
            return Err(Gone);
        }
        if self.on_error_status(status(e))? == OnStatus::Refresh {
            return Ok(Failure::Refreshed);
        }
        match code(e) {
            Some(403) => Ok(Failure::Forbidden),
            Some(410) => Ok(Failure::Expired),
            _ => {
                self.link(LinkEvent::Down(plain_cause(e)))?;
                tokio::time::sleep(backoff.next().unwrap_or_default()).await;
                Ok(Failure::Retried)
            }
        }
    }

    /// A 410: said (once per outage, by the link), then the list again after the backoff, so
    /// a server that keeps answering 410 is not asked in a tight loop.
    async fn expired(&self, version: Option<&str>, backoff: &mut CappedBackoff) -> Result<(), Gone> {
        self.link(LinkEvent::Expired(expired_cause(version)))?;
        tokio::time::sleep(backoff.next().unwrap_or_default()).await;
        Ok(())
    }

    /// Lists every page through the one-shot reads' pager ([`Pager`]): the next page asked
    /// for while this one is decoded, a continue token that expired starting the list again
    /// once, and a list that does not end refused as the one-shot read refuses it. The
    /// resourceVersion to watch from is the last page's.
    async fn list(&self) -> Result<Listed, Gone> {
        let params = ListParams {
            field_selector: self.fields.clone(),
            label_selector: self.labels.clone(),
            ..Default::default()
        };
        let what = objects(self.api.resource_url());
        let mut pager = Pager::new(self.api.clone(), &what, params);
        let mut first = true;
        let mut version = String::new();
        loop {
            let page = match pager.next(&self.origin.log).await {
                Ok(Some(page)) => page,
                Ok(None) => {
                    self.send(Signal::Seen(Seen::ListDone))?;
                    return Ok(Listed::Done(version));
                }
                Err(Failed::Request(e)) => return Ok(Listed::Failed(e)),
                Err(Failed::Bound(message)) => {
                    self.link(LinkEvent::Refused(Refusal::Bound { message }))?;
                    return Err(Gone);
                }
            };
            self.succeeded()?;
            if first {
                self.link(LinkEvent::Up)?;
            }
            if first || page.restarted {
                // A list starts, or starts over: what follows replaces everything.
                self.send(Signal::Seen(Seen::List))?;
                first = false;
            }
            version = page.resource_version.unwrap_or_default();
            self.send(Signal::Seen(Seen::Page(page.items)))?;
        }
    }

    /// A forbidden list: retried later, or the object polled with get when that is allowed.
    async fn on_forbidden(&self) -> Result<(), Gone> {
        let WhenForbidden::Poll { name, cadence } = &self.forbidden else {
            self.send(Signal::Forbidden)?;
            tokio::time::sleep(FORBIDDEN_RETRY).await;
            return Ok(());
        };
        let mut said = false;
        let mut backoff = CappedBackoff::new();
        loop {
            let got = match self.api.get_opt(name).await {
                Ok(o) => o,
                Err(e) if code(&e) == Some(403) && !self.answered.load(Ordering::Relaxed) => {
                    // Neither list, watch nor get: nothing to follow, as `kubectl get -w` ends.
                    let message = status(&e).map(|s| crate::error::first_line(&s.message)).unwrap_or_default();
                    let rule = self.origin.rule.clone();
                    self.link(LinkEvent::Refused(Refusal::Forbidden { message, rule }))?;
                    return Err(Gone);
                }
                Err(e) if code(&e) == Some(403) => {
                    self.send(Signal::Forbidden)?;
                    tokio::time::sleep(FORBIDDEN_RETRY).await;
                    return Ok(());
                }
                Err(e) => {
                    // Refreshed, retried, or a 410 (no get answers one): asked again.
                    self.failed(&e, &mut backoff).await?;
                    continue;
                }
            };
            backoff.reset();
            self.succeeded()?;
            self.link(LinkEvent::Up)?;
            let every = cadence(got.as_ref());
            if !std::mem::replace(&mut said, true) {
                self.send(Signal::Polling(every))?;
            }
            let page = got.into_iter().collect();
            self.send(Signal::Seen(Seen::List))?;
            self.send(Signal::Seen(Seen::Page(page)))?;
            self.send(Signal::Seen(Seen::ListDone))?;
            tokio::time::sleep(every).await;
        }
    }
}

/// How often a Lease is polled when it cannot be watched: a fifth of its
/// leaseDurationSeconds, between 1 and 5 seconds (2 s while it has no duration or does not
/// exist). Well under the duration, so a renewal or a takeover is seen within a fraction of
/// it, and the stale timer (renewTime + 2 x duration) is not delayed by more than that.
pub fn poll_cadence(duration_seconds: Option<i32>) -> Duration {
    match duration_seconds {
        Some(d) if d > 0 => Duration::from_millis(u64::from(d.unsigned_abs()) * 200)
            .clamp(Duration::from_secs(1), Duration::from_secs(5)),
        _ => Duration::from_secs(2),
    }
}

fn lease_cadence(l: Option<&WireLease>) -> Duration {
    poll_cadence(l.and_then(|l| LeaseFacts::from(l).duration_seconds))
}

/// Follows one Lease by name: a list and watch with `fieldSelector=metadata.name=...` (which
/// a Role naming the Lease by `resourceNames` allows), or, when only get is allowed, polling.
pub fn lease(conn: &Connection, lease: &LeaseRef, log: &Log) -> impl Stream<Item = LeaseUpdate> + Send + 'static {
    let api: Api<WireLease> = Api::namespaced_with(conn.client.clone(), &lease.namespace, &wire::lease_resource());
    let fields = format!("metadata.name={}", lease.name);
    let watch_rule =
        format!("list and watch leases.coordination.k8s.io {:?} in namespace {}", lease.name, lease.namespace);
    let forbidden_rule =
        format!("get, list and watch leases.coordination.k8s.io {:?} in namespace {}", lease.name, lease.namespace);
    let poll = WhenForbidden::Poll { name: lease.name.clone(), cadence: lease_cadence };
    let origin = StreamOrigin {
        server: conn.server.clone(),
        rule: forbidden_rule.clone(),
        server_clock: conn.server_clock.clone(),
        log: log.clone(),
    };
    let mut pending: Option<WireLease> = None;
    follow(api, Some(fields), None, poll, origin).filter_map(move |signal| {
        let update = match signal {
            Signal::Seen(Seen::List) => {
                pending = None;
                None
            }
            Signal::Seen(Seen::Page(items)) => {
                if let Some(l) = items.into_iter().next() {
                    pending = Some(l);
                }
                None
            }
            Signal::Seen(Seen::ListDone) => Some(LeaseUpdate::Lease(pending.take().as_ref().map(LeaseFacts::from))),
            Signal::Seen(Seen::Applied(l)) => Some(LeaseUpdate::Lease(Some(LeaseFacts::from(&l)))),
            Signal::Seen(Seen::Deleted(_)) => Some(LeaseUpdate::Lease(None)),
            Signal::Link(e) => Some(LeaseUpdate::Link(e)),
            Signal::Forbidden => Some(LeaseUpdate::Forbidden(forbidden_rule.clone())),
            Signal::Polling(every) => Some(LeaseUpdate::Polling { every, rule: watch_rule.clone() }),
        };
        futures::future::ready(update)
    })
}

/// The error a live mode ends with when a stream was refused for good: the one the one-shot
/// verb gives for the same answer (401: exit 1; 403: exit 4; a Kueue resource not served:
/// exit 1). The server's words are escaped: they reach a terminal.
pub fn refused(r: Refusal) -> crate::error::Error {
    use crate::error::Error;
    use crate::text::sanitize::escape;
    match r {
        Refusal::Unauthorized { server } => Error::Unauthorized { server },
        Refusal::Forbidden { message, rule } => Error::Forbidden { message: escape(&message), rule },
        Refusal::NotServed { resource } if resource.starts_with("/apis/kueue.x-k8s.io/") => {
            Error::KueueResourceMissing { resource: objects(&resource), group_version: resource }
        }
        Refusal::Exec { message } => Error::ExecLater { message },
        Refusal::Bound { message } => Error::Bound(message),
        Refusal::NotServed { resource } => {
            Error::Api { action: format!("serve {resource}"), message: "not found (404)".into() }
        }
    }
}

/// The objects at `resource` (a list's path), named as the one-shot reads name them.
fn objects(resource: &str) -> String {
    match resource.rsplit('/').next().unwrap_or_default() {
        "clusterqueues" => "ClusterQueues",
        "admissionchecks" => "AdmissionChecks",
        "workloads" => "Workloads",
        "localqueues" => "LocalQueues",
        "leases" => "Leases",
        other => other,
    }
    .to_string()
}

/// The exec credential plugin's failure behind a failed request, if that is what failed: the
/// transport runs the plugin again after a 401 or when the credential is due.
fn exec_failure(e: &kube::Error) -> Option<crate::error::ExecError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(exec) = c.downcast_ref::<crate::error::ExecError>() {
            return Some(exec.clone());
        }
        cause = c.source();
    }
    None
}

/// The error status the server sent, if it sent one.
fn status(e: &kube::Error) -> Option<&Status> {
    match e {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

/// The HTTP status behind a failed request, if the server sent one.
pub fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

fn expired_cause(version: Option<&str>) -> String {
    match version {
        Some(v) => format!("the API server no longer has resourceVersion {v} (410 Gone)"),
        None => "the API server no longer has the list's resourceVersion (410 Gone)".into(),
    }
}

/// One plain line saying why a request failed, for `watch interrupted: ...`.
pub fn plain_cause(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => plain_status(s),
        // Our own words, naming the limit and the path: said whole.
        other if bounded_watch::unreadable(other).is_some() => {
            bounded_watch::unreadable(other).map(ToString::to_string).unwrap_or_default()
        }
        other => plain_transport(&crate::cluster::reading::failure::chain_text(other)),
    }
}

/// An error status the server sent.
fn plain_status(s: &Status) -> String {
    // The server's words reach a terminal in `watch interrupted: ...`: escaped.
    let message = crate::text::sanitize::escape(&crate::error::first_line(&s.message));
    match s.code {
        401 => "the API server rejected the credentials (401 Unauthorized)".into(),
        429 => format!("the API server asks to retry later (429: {message})"),
        500..=599 => format!("the API server failed ({}: {message})", s.code),
        code => format!("{message} ({code})"),
    }
}

/// A failure below HTTP, from the text of its whole chain of causes, in plain words: the raw
/// rustls or hyper text ("peer closed connection without sending TLS close_notify: https://...")
/// reads as a bug to a user.
pub fn plain_transport(chain: &str) -> String {
    let lower = chain.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["connection refused"]) {
        "the API server refuses connections (connection refused)".into()
    } else if has(&[
        "close_notify",
        "unexpected eof",
        "connection reset",
        "broken pipe",
        "connection closed",
        "incomplete message",
        "channel closed",
    ]) {
        "the API server closed the connection".into()
    } else if has(&["timed out", "deadline has elapsed", "did not complete within"]) {
        "the API server did not answer in time".into()
    } else if has(&["no route to host", "network is unreachable", "host is unreachable"]) {
        "the API server cannot be reached (no route)".into()
    } else if has(&["dns error", "failed to lookup", "name or service not known"]) {
        "the API server's name does not resolve".into()
    } else {
        let last = chain.rsplit(": ").next().unwrap_or(chain);
        crate::error::first_line(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_failures_in_plain_words() {
        assert_eq!(
            plain_transport(
                "error reading a body from connection: peer closed connection without sending TLS close_notify: \
                 https://docs.rs/rustls/latest/rustls/manual/_03_howto/index.html#unexpected-eof"
            ),
            "the API server closed the connection"
        );
        assert_eq!(
            plain_transport("client error (Connect): tcp connect error: Connection refused (os error 111)"),
            "the API server refuses connections (connection refused)"
        );
        assert_eq!(
            plain_transport("request: the request did not complete within 30s"),
            "the API server did not answer in time"
        );
        assert_eq!(plain_transport("something: odd thing happened"), "odd thing happened");
    }

    #[test]
    fn a_servers_words_in_an_interruption_are_escaped() {
        let status = |code: u16, message: &str| Status { code, message: message.into(), ..Status::default() };
        assert_eq!(
            plain_status(&status(503, "down \u{1b}]0;owned\u{7}\u{1b}[2J for now\nsecond line")),
            "the API server failed (503: down \\u{1b}]0;owned\\u{7}\\u{1b}[2J for now)"
        );
        assert_eq!(
            plain_status(&status(401, "\u{1b}[31m")),
            "the API server rejected the credentials (401 Unauthorized)"
        );
    }

    #[test]
    fn a_polled_lease_is_read_at_a_fifth_of_its_duration_between_1_and_5_seconds() {
        assert_eq!(poll_cadence(Some(15)), Duration::from_secs(3));
        assert_eq!(poll_cadence(Some(4)), Duration::from_secs(1));
        assert_eq!(poll_cadence(Some(60)), Duration::from_secs(5));
        assert_eq!(poll_cadence(Some(10)), Duration::from_secs(2));
        assert_eq!(poll_cadence(None), Duration::from_secs(2));
        assert_eq!(poll_cadence(Some(0)), Duration::from_secs(2));
    }

    #[test]
    fn an_exec_plugin_that_fails_is_found_behind_the_transport_error() {
        let failed = crate::error::ExecError::Failed {
            command: "get-token".into(),
            status: "exited with status 1".into(),
            last_line: Some("token revoked".into()),
        };
        let e = kube::Error::Service(Box::new(failed));
        let found = exec_failure(&e).expect("the plugin's failure");
        assert_eq!(found.to_string(), "the exec credential plugin \"get-token\" exited with status 1: token revoked");
        let refused = refused(Refusal::Exec { message: found.to_string() });
        assert_eq!(refused.exit(), crate::exit::Exit::Failed);
        assert_eq!(refused.to_string(), found.to_string());
        let other = kube::Error::Service("connection reset".into());
        assert!(exec_failure(&other).is_none());
    }

    #[test]
    fn a_list_that_does_not_end_ends_the_live_mode_with_the_one_shot_reads_error() {
        let message = "the API server's Leases list at /apis/coordination.k8s.io/v1/namespaces/dispatch-system/leases \
                       does not end: page 2 gave the same continue token as an earlier page";
        let e = refused(Refusal::Bound { message: message.into() });
        assert_eq!((e.to_string(), e.exit()), (message.to_string(), crate::exit::Exit::Failed));
        // Each list is named as the one-shot reads name it.
        assert_eq!(objects("/apis/coordination.k8s.io/v1/namespaces/dispatch-system/leases"), "Leases");
        assert_eq!(objects("/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads"), "Workloads");
        assert_eq!(objects("/apis/kueue.x-k8s.io/v1beta2/clusterqueues"), "ClusterQueues");
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut b = CappedBackoff::new();
        let first: Vec<u64> = (0..4).map(|_| b.next().unwrap().as_millis() as u64).collect();
        assert_eq!(first, [500, 1000, 2000, 2000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(500)));
    }
}

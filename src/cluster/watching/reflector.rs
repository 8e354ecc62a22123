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
use kube::api::{Api, ListParams, WatchParams};

use super::bounded_watch::{self, Keep};
use super::event::Change;
use kube::core::Status;

use crate::cluster::connecting::connect::Connection;
use crate::cluster::connecting::deadline::RequestTimedOut;
use crate::cluster::connecting::server_clock::ServerClock;
use crate::cluster::reading::failure::{self, Cause};
use crate::cluster::reading::pager::{Failed, Pager};
use crate::cluster::reading::wire::{self, WireLease};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::core::link::{LinkEvent, OnStatus, Passed, Refusal, on_status};
use crate::log::Log;

/// The server ends each watch after this many seconds; it is renewed at once, silently.
const WATCH_SECONDS: u32 = 290;
/// A watch that lasted this long was an answer: the backoff starts again from its first step.
/// One that ended sooner (after one event or bookmark, or none, or with an `ERROR` event) is
/// retried with the backoff, so a server that ends every watch at once is not asked in a
/// tight loop.
const WATCH_LIVED: Duration = Duration::from_secs(60);
/// A second 401 within this long of the credential being fetched anew ends the stream (a
/// success in between does not reset it: a server that accepts each watch and then sends a
/// 401 in it would otherwise be asked again for ever).
const REFRESH_WINDOW: Duration = Duration::from_secs(60);
/// How often a forbidden list is tried again (RBAC may be granted meanwhile).
const FORBIDDEN_RETRY: Duration = Duration::from_secs(5);
/// A watch that brings no line (no event, no bookmark) for this long is presumed dead and
/// started again on a new connection: kube-apiserver sends a bookmark about once a minute to
/// a watch that asks for them, so a live one is never silent this long.
pub const SILENT_WATCH: Duration = Duration::from_secs(75);
/// The longest a live mode's watch waits for its response headers (without
/// `--request-timeout`, which bounds them too): kubectl's dial bound.
pub const HEADERS_BOUND: Duration = Duration::from_secs(30);

/// Asks a followed stream to start its watch again from a new list ([`restart`]): its
/// connection was found dead by a read on another.
#[derive(Clone)]
pub struct Restart(UnboundedSender<()>);

/// The stream's end of [`Restart`].
pub struct Restarts(futures::channel::mpsc::UnboundedReceiver<()>);

impl Restart {
    pub fn now(&self) {
        let _ = self.0.unbounded_send(());
    }
}

/// A [`Restart`] and the receiver a stream is given.
pub fn restart() -> (Restart, Restarts) {
    let (tx, rx) = unbounded();
    (Restart(tx), Restarts(rx))
}

impl Restarts {
    /// None that can come.
    pub fn never() -> Restarts {
        restart().1
    }

    /// Forgets the asks made before now (a watch that starts is new already).
    fn clear(&mut self) {
        while self.0.try_recv().is_ok() {}
    }

    /// Whether a restart was asked for and not yet taken (a test's look).
    pub fn asked_now(&mut self) -> bool {
        self.0.try_recv().is_ok()
    }

    /// Waits for the next ask (for ever once no [`Restart`] is left).
    async fn asked(&mut self) {
        if self.0.next().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// What a watch's wait for its next line came to.
enum Next<T> {
    Item(Option<T>),
    /// Nothing for [`SILENT_WATCH`].
    Silent,
    /// A [`Restart`] was asked for.
    Restart,
}

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

/// The one retry policy of every live stream (list, watch, get and polling alike): after
/// each failure, a wait doubling from 500 ms to at most 2 s, each stretched by a random
/// quarter at most (jitter, so that many clients cut off together do not come back in step).
/// Reset only by a watch that lasted ([`WATCH_LIVED`]) or a poll answered. A restarted API
/// server is found again within 2.5 s of being ready.
pub struct CappedBackoff {
    next: Duration,
    jitter: std::collections::hash_map::RandomState,
    tries: u64,
}

impl CappedBackoff {
    const FIRST: Duration = Duration::from_millis(500);
    const CAP: Duration = Duration::from_secs(2);

    pub fn new() -> Self {
        CappedBackoff { next: Self::FIRST, jitter: Default::default(), tries: 0 }
    }

    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    /// A fraction in [0, 1/4), random per backoff and try.
    fn stretch(&mut self) -> f64 {
        use std::hash::BuildHasher;
        self.tries = self.tries.wrapping_add(1);
        (self.jitter.hash_one(self.tries) % 1000) as f64 / 4000.0
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
        let step = self.next;
        self.next = (self.next * 2).min(Self::CAP);
        Some(step.mul_f64(1.0 + self.stretch()))
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
/// ([`LinkEvent::Refused`], the last signal). Each object, of a list page, a watch event or a
/// get, is handed on as what `keep` makes of it, read straight into that from its text.
pub fn follow<K, T>(
    api: Api<K>,
    (fields, labels): (Option<String>, Option<String>),
    (forbidden, origin): (WhenForbidden<K>, StreamOrigin),
    restarts: Restarts,
    keep: impl Fn(K) -> T + Send + Sync + 'static,
) -> impl Stream<Item = Signal<T>> + Send + 'static
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    T: Send + 'static,
{
    let keep: Keep<K, T> = std::sync::Arc::new(keep);
    let (tx, rx) = unbounded();
    tokio::spawn(async move {
        // Ends when nobody listens any more (a send fails).
        let answered = AtomicBool::new(false);
        let refreshed = std::sync::Mutex::new(None);
        let not_found = AtomicU32::new(0);
        let broken = AtomicBool::new(false);
        let (fresh, silenced) = (false, None);
        let flags = Flags { answered, refreshed, not_found, broken };
        let reflector =
            Reflector { api, keep, fields, labels, forbidden, origin, tx, flags, restarts, fresh, silenced };
        let _ = reflector.run().await;
    });
    rx
}

struct Reflector<K, T> {
    api: Api<K>,
    /// What is kept of each object.
    keep: Keep<K, T>,
    fields: Option<String>,
    labels: Option<String>,
    forbidden: WhenForbidden<K>,
    origin: StreamOrigin,
    tx: UnboundedSender<Signal<T>>,
    flags: Flags,
    restarts: Restarts,
    /// The next watch goes on a new connection (the last one went silent).
    fresh: bool,
    /// The watch that went silent, and for how long: said only if starting it again fails.
    silenced: Option<Duration>,
}

/// What the stream's requests so far came to.
struct Flags {
    /// A list, watch or get of this stream succeeded.
    answered: AtomicBool,
    /// When the credential was last fetched anew after a 401: a second 401 within
    /// [`REFRESH_WINDOW`] of it ends the stream, whatever succeeded in between.
    refreshed: std::sync::Mutex<Option<tokio::time::Instant>>,
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

impl<K, T> Reflector<K, T>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    T: Send + 'static,
{
    fn send(&self, s: Signal<T>) -> Result<(), Gone> {
        self.tx.unbounded_send(s).map_err(|_| Gone)
    }

    fn link(&self, e: LinkEvent) -> Result<(), Gone> {
        self.send(Signal::Link(e))
    }

    /// A list, watch or get of this stream succeeded (a 403 is an answer too, but not this):
    /// also the moment to compare the clocks, from that response's `Date` header.
    fn succeeded(&self) -> Result<(), Gone> {
        self.flags.answered.store(true, Ordering::Relaxed);
        self.flags.not_found.store(0, Ordering::Relaxed);
        match self.origin.server_clock.latest() {
            Some((server, local)) => self.link(LinkEvent::Clock { server, local }),
            None => Ok(()),
        }
    }

    /// Whether the credential was fetched anew after a 401 within [`REFRESH_WINDOW`].
    fn refreshed_lately(&self) -> bool {
        let at = *self.flags.refreshed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        at.is_some_and(|at| at.elapsed() < REFRESH_WINDOW)
    }

    /// Applies [`on_status`] to an error status. `Retry`: the caller goes its usual way.
    /// `Refresh`: said as an interruption; the caller retries at once, and the transport
    /// fetches a new credential for that request (it does after any 401). `End`: the refusal
    /// is sent and the stream stops (`Err(Gone)`).
    fn on_error_status(&self, status: Option<&Status>) -> Result<OnStatus, Gone> {
        let Some(s) = status else { return Ok(OnStatus::Retry) };
        let answered = self.flags.answered.load(Ordering::Relaxed);
        let refreshed = self.refreshed_lately();
        let not_found = match s.code {
            404 => self.flags.not_found.fetch_add(1, Ordering::Relaxed) + 1,
            _ => 0,
        };
        let history = crate::core::link::History { answered, refreshed, not_found };
        let decided = match on_status(s.code, history) {
            // A first forbidden list is the stream's own to handle where it has another way.
            OnStatus::End if s.code == 403 && !matches!(self.forbidden, WhenForbidden::End) => OnStatus::Retry,
            other => other,
        };
        match decided {
            OnStatus::Retry => Ok(OnStatus::Retry),
            OnStatus::Refresh => {
                *self.flags.refreshed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some(tokio::time::Instant::now());
                self.link(LinkEvent::Down(failure::plain_status(s)))?;
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

    async fn run(mut self) -> Result<(), Gone> {
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

    /// Sends the watch request, on a new connection when the last watch went silent, waiting
    /// at most [`HEADERS_BOUND`] for its answer to start.
    async fn start_watch(
        &mut self,
        from: &str,
    ) -> Result<impl Stream<Item = Result<Change<T>, kube::Error>> + Send + use<K, T>, kube::Error> {
        let params = WatchParams {
            field_selector: self.fields.clone(),
            label_selector: self.labels.clone(),
            timeout: Some(WATCH_SECONDS),
            bookmarks: true,
            ..WatchParams::default()
        };
        let fresh = std::mem::take(&mut self.fresh);
        let started = bounded_watch::watch(&self.api, &params, (from, fresh), self.keep.clone());
        match tokio::time::timeout(HEADERS_BOUND, started).await {
            Ok(answer) => answer,
            Err(_) => Err(kube::Error::Service(Box::new(RequestTimedOut(HEADERS_BOUND)))),
        }
    }

    /// One watch from `from`, until the server ends it, it fails, it goes silent or a restart
    /// is asked for: the version to watch from next, or `None` to list again.
    async fn watch(&mut self, from: String, backoff: &mut CappedBackoff) -> Result<Option<String>, Gone> {
        let stream = match self.start_watch(&from).await {
            Ok(s) => s,
            Err(e) => return self.not_watched(&e, from, backoff).await,
        };
        self.restarts.clear();
        // Accepted: the connection is live, whether or not anything changes; after a stream
        // that could not be read, only once a line reads.
        if !self.flags.broken.load(Ordering::Relaxed) {
            self.silenced = None;
            self.succeeded()?;
            self.link(LinkEvent::Up)?;
        }
        let started = tokio::time::Instant::now();
        let mut stream = std::pin::pin!(stream);
        let mut at = from;
        loop {
            let next = tokio::select! {
                item = tokio::time::timeout(SILENT_WATCH, stream.next()) => match item {
                    Ok(item) => Next::Item(item),
                    Err(_) => Next::Silent,
                },
                _ = self.restarts.asked() => Next::Restart,
            };
            let item = match next {
                Next::Item(Some(item)) => item,
                Next::Item(None) => break,
                // Dead: on a new connection, from where it was; said only if that fails.
                Next::Silent => {
                    self.fresh = true;
                    self.silenced = Some(SILENT_WATCH);
                    return Ok(Some(at));
                }
                // Found dead by a read on another connection (the live mode said so): a new
                // list, so that the rows go on from the Lease as it is now.
                Next::Restart => return Ok(None),
            };
            // Only a watch that lasted starts the backoff again from its first step.
            if started.elapsed() >= WATCH_LIVED {
                backoff.reset();
            }
            if item.is_ok() && self.flags.broken.swap(false, Ordering::Relaxed) {
                self.succeeded()?;
                self.link(LinkEvent::Up)?;
            }
            let e = match item {
                Ok(event) => match self.seen(event, &mut at)? {
                    Some(e) => e,
                    None => continue,
                },
                // One event that cannot be read is passed over (said once), as a list passes
                // over an object it cannot read: the watch goes on.
                Err(e) if bounded_watch::passed_over(&e) => {
                    let text = bounded_watch::unreadable(&e).map(ToString::to_string).unwrap_or_default();
                    self.link(LinkEvent::Passed(Passed::Unreadable, crate::text::sanitize::escape(&text)))?;
                    continue;
                }
                Err(e) => {
                    if bounded_watch::unreadable(&e).is_some() {
                        self.flags.broken.store(true, Ordering::Relaxed);
                    }
                    e
                }
            };
            return self.watch_failed(&e, at, backoff).await;
        }
        // The server ended the watch (its timeout): renewed from where it was, at once; but a
        // watch that ends sooner (after one event or bookmark, or none) is retried with the
        // backoff, not in a tight loop.
        if started.elapsed() < WATCH_LIVED {
            tokio::time::sleep(backoff.next().unwrap_or_default()).await;
        }
        Ok(Some(at))
    }

    /// An event of a watch, sent on; `at` moved to its version. An `ERROR` event is the
    /// failure it carries.
    fn seen(&self, event: Change<T>, at: &mut String) -> Result<Option<kube::Error>, Gone> {
        match event {
            Change::Applied { version, fact } => {
                *at = version.unwrap_or(std::mem::take(at));
                self.send(Signal::Seen(Seen::Applied(fact)))?;
            }
            Change::Deleted { version, fact } => {
                *at = version.unwrap_or(std::mem::take(at));
                self.send(Signal::Seen(Seen::Deleted(fact)))?;
            }
            Change::Bookmark(version) => *at = version,
            Change::Error(s) => return Ok(Some(kube::Error::Api(s))),
        }
        Ok(None)
    }

    /// A watch that failed after it was accepted: the version to watch from next, or `None`
    /// to list again.
    async fn watch_failed(
        &self,
        e: &kube::Error,
        at: String,
        backoff: &mut CappedBackoff,
    ) -> Result<Option<String>, Gone> {
        match self.failed(e, backoff).await? {
            Failure::Expired => {
                self.expired(Some(&at), backoff).await?;
                Ok(None)
            }
            Failure::Forbidden => {
                // RBAC taken away mid-watch: retried as a failure, the list says the rest.
                self.link(LinkEvent::Down(plain_cause(e)))?;
                tokio::time::sleep(backoff.next().unwrap_or_default()).await;
                Ok(Some(at))
            }
            Failure::Refreshed | Failure::Retried => Ok(Some(at)),
        }
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
        let keep = self.keep.clone();
        let mut pager = Pager::keeping(self.api.clone(), &what, params, move |k| keep(k));
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
            // A Lease's get is small: bounded like a watch's headers, as no live-mode request
            // waits for an answer without a bound.
            let answer = tokio::time::timeout(HEADERS_BOUND, self.api.get_opt(name)).await;
            let answer = answer.unwrap_or_else(|_| Err(kube::Error::Service(Box::new(RequestTimedOut(HEADERS_BOUND)))));
            let got = match answer {
                Ok(o) => o,
                Err(e) if code(&e) == Some(403) && !self.flags.answered.load(Ordering::Relaxed) => {
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
                    // Refreshed, or retried after the backoff; a 410 (which no real get answers)
                    // after the backoff too, never at once.
                    if let Failure::Expired = self.failed(&e, &mut backoff).await? {
                        self.link(LinkEvent::Down(plain_cause(&e)))?;
                        tokio::time::sleep(backoff.next().unwrap_or_default()).await;
                    }
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
            let page = got.into_iter().map(&*self.keep).collect();
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
/// Every item and event is checked to be this Lease (namespace and name): a server that does
/// not honour the field selector sends others, which are passed over (said once), and a
/// `DELETED` of another object means nothing.
pub fn lease(
    conn: &Connection,
    lease: &LeaseRef,
    log: &Log,
    restarts: Restarts,
) -> impl Stream<Item = LeaseUpdate> + Send + 'static {
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
    let mut pending: Option<NamedLease> = None;
    let this = lease.clone();
    let signals = follow(api, (Some(fields), None), (poll, origin), restarts, |l: WireLease| NamedLease::from(&l));
    signals.flat_map(move |signal| {
        let mut out = Vec::new();
        let ours = |l: &NamedLease, out: &mut Vec<LeaseUpdate>| {
            let yes = is_this(&this, l);
            if !yes {
                out.push(LeaseUpdate::Link(LinkEvent::Passed(Passed::Foreign, foreign_line(&this, l))));
            }
            yes
        };
        match signal {
            Signal::Seen(Seen::List) => pending = None,
            Signal::Seen(Seen::Page(items)) => {
                if let Some(l) = items.into_iter().find(|l| ours(l, &mut out)) {
                    pending = Some(l);
                }
            }
            Signal::Seen(Seen::ListDone) => out.push(LeaseUpdate::Lease(pending.take().map(|l| l.facts))),
            Signal::Seen(Seen::Applied(l)) if ours(&l, &mut out) => out.push(LeaseUpdate::Lease(Some(l.facts))),
            Signal::Seen(Seen::Deleted(l)) if ours(&l, &mut out) => out.push(LeaseUpdate::Lease(None)),
            Signal::Seen(Seen::Applied(_) | Seen::Deleted(_)) => {}
            Signal::Link(e) => out.push(LeaseUpdate::Link(e)),
            Signal::Forbidden => out.push(LeaseUpdate::Forbidden(forbidden_rule.clone())),
            Signal::Polling(every) => out.push(LeaseUpdate::Polling { every, rule: watch_rule.clone() }),
        }
        futures::stream::iter(out)
    })
}

/// A Lease as its follower keeps it: its name, to tell the Lease followed from others a
/// server sends, and its facts.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedLease {
    namespace: Option<String>,
    name: Option<String>,
    facts: LeaseFacts,
}

impl From<&WireLease> for NamedLease {
    fn from(l: &WireLease) -> Self {
        let meta = &l.metadata;
        NamedLease { namespace: meta.namespace.clone(), name: meta.name.clone(), facts: LeaseFacts::from(l) }
    }
}

/// Whether `l` is the Lease followed (an object with no namespace or name is not).
fn is_this(lease: &LeaseRef, l: &NamedLease) -> bool {
    l.name.as_deref() == Some(lease.name.as_str()) && l.namespace.as_deref() == Some(lease.namespace.as_str())
}

/// Said once when the server sends a Lease the field selector did not ask for.
fn foreign_line(lease: &LeaseRef, l: &NamedLease) -> String {
    let other = format!("{}/{}", l.namespace.as_deref().unwrap_or(""), l.name.as_deref().unwrap_or(""));
    format!(
        "the API server does not honour the field selector metadata.name={}: it sent Lease {}, which is passed \
         over (only {lease} is followed)",
        lease.name,
        crate::text::sanitize::escape(&other)
    )
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

/// One plain line saying why a request failed, for `watch interrupted: ...`: the one
/// wording of a failed request ([`Cause`]).
pub fn plain_cause(e: &kube::Error) -> String {
    Cause::of(e).plain()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn backoff_doubles_to_its_cap_with_jitter_and_resets() {
        let mut b = CappedBackoff::new();
        let first: Vec<Duration> = (0..5).map(|_| b.next().unwrap()).collect();
        for (got, step) in first.iter().zip([500u64, 1000, 2000, 2000, 2000]) {
            let step = Duration::from_millis(step);
            assert!(*got >= step && *got < step.mul_f64(1.25), "{got:?} for a step of {step:?}");
        }
        b.reset();
        let again = b.next().unwrap();
        assert!(again >= Duration::from_millis(500) && again < Duration::from_millis(625), "{again:?}");
    }
}

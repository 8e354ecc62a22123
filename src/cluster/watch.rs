//! Watches, as streams of plain updates. kube's watcher lists, then watches, relists after a
//! 410, and retries every failure; this module turns its events into what the live commands
//! need, and paces retries with a capped backoff.

use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};

use super::connect::Connection;
use crate::core::lease::{LeaseFacts, LeaseRef};

/// What a watch of one Lease saw.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseUpdate {
    /// The Lease now (`None`: it does not exist).
    Lease(Option<LeaseFacts>),
    /// The server refused the watch; the RBAC rule that would allow it.
    Forbidden(String),
    /// The watch broke; the cause. kube reconnects by itself.
    Interrupted(String),
}

/// Doubling from 500 ms to at most 5 s between reconnects; reset by any success.
pub struct CappedBackoff {
    next: Duration,
}

impl CappedBackoff {
    const FIRST: Duration = Duration::from_millis(500);
    const CAP: Duration = Duration::from_secs(5);

    pub fn new() -> Self {
        CappedBackoff { next: Self::FIRST }
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

impl Backoff for CappedBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// Follows one Lease by name (a list and watch with `fieldSelector=metadata.name=...`, which a
/// Role naming the Lease by `resourceNames` allows).
pub fn lease(conn: &Connection, lease: &LeaseRef) -> impl Stream<Item = LeaseUpdate> + Send + 'static {
    let api: Api<Lease> = Api::namespaced(conn.client.clone(), &lease.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", lease.name));
    let rule = format!("list and watch leases.coordination.k8s.io {:?} in namespace {}", lease.name, lease.namespace);
    let mut pending: Option<Option<Lease>> = None;
    watcher::watcher(api, config).backoff(CappedBackoff::new()).filter_map(move |event| {
        let update = match event {
            Ok(Event::Init) => {
                pending = Some(None);
                None
            }
            Ok(Event::InitApply(l)) => {
                pending = Some(Some(l));
                None
            }
            Ok(Event::InitDone) => Some(LeaseUpdate::Lease(pending.take().flatten().as_ref().map(LeaseFacts::from))),
            Ok(Event::Apply(l)) => Some(LeaseUpdate::Lease(Some(LeaseFacts::from(&l)))),
            Ok(Event::Delete(_)) => Some(LeaseUpdate::Lease(None)),
            Err(e) => Some(match status_code(&e) {
                Some(403) => LeaseUpdate::Forbidden(rule.clone()),
                _ => LeaseUpdate::Interrupted(cause(&e)),
            }),
        };
        futures::future::ready(update)
    })
}

/// The HTTP status behind a watcher error, if the server sent one.
pub fn status_code(e: &watcher::Error) -> Option<u16> {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s.code),
        watcher::Error::WatchError(s) => Some(s.code),
        _ => None,
    }
}

/// One line saying why a watch broke.
pub fn cause(e: &watcher::Error) -> String {
    match e {
        watcher::Error::WatchError(s) if s.code == 410 => {
            "the server no longer has our resourceVersion (410 Gone); relisting".into()
        }
        watcher::Error::WatchError(s) => format!("{} ({})", s.message, s.code),
        watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) | watcher::Error::WatchFailed(k) => {
            match k {
                kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
                other => super::failure::root_cause(other),
            }
        }
        watcher::Error::NoResourceVersion => "the server sent no resourceVersion".into(),
    }
}

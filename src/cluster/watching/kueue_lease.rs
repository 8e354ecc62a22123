//! Kueue's manager's leader-election Lease, followed live for the live modes' context (the one
//! stream `lease --watch` and `gate --watch` both follow it by): the same list-then-watch as
//! dispatch's Lease ([`reflector::lease`]), its reads as [`Fetched`] facts. A Lease that may not be followed at all (no get, list or watch in
//! Kueue's namespace) is a fact, `Forbidden`, never the end of the command: Kueue's heartbeat
//! is context, not a check. The stream then ends.

use futures::{Stream, StreamExt};

use super::reflector::{self, LeaseUpdate};
use crate::cluster::connecting::connect::Connection;
use crate::core::fetched::{Denied, Fetched};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::core::link::{LinkEvent, Refusal};
use crate::log::Log;

/// What a watch of Kueue's manager's Lease saw.
#[derive(Debug, Clone, PartialEq)]
pub enum KueueLeaseUpdate {
    /// The Lease now: found, missing (a manager without leader election, or another name), or
    /// not readable (the rule that would allow following it).
    Lease(Fetched<LeaseFacts>),
    /// What the connection did. A refusal here is one that ends every stream alike (a
    /// rejected credential), never a forbidden Lease.
    Link(LinkEvent),
    /// List and watch are forbidden, get is allowed: the Lease is polled with get. Whether
    /// that is said is the live mode's (`gate --watch` says it, `lease --watch` does not).
    Polling { every: std::time::Duration, rule: String },
}

/// Follows Kueue's manager's Lease by name (`--kueue-lease`, else
/// `kueue-system/c1f6bfd2.kueue.x-k8s.io`), polled with get when only get is allowed. It asks
/// at once: a live mode calls it once the reads that decide were answered, so that a rejected
/// credential is said once, by those, rather than raced by this stream. `restarts` starts its
/// watch again when the live mode's confirming read found it dead.
pub fn kueue_lease(
    conn: &Connection,
    lease: &LeaseRef,
    log: &Log,
    restarts: reflector::Restarts,
) -> impl Stream<Item = KueueLeaseUpdate> + Send + 'static {
    reflector::lease(conn, lease, log, restarts).map(from_lease)
}

/// One update of the Lease's stream as Kueue's.
pub fn from_lease(update: LeaseUpdate) -> KueueLeaseUpdate {
    match update {
        LeaseUpdate::Lease(Some(facts)) => KueueLeaseUpdate::Lease(Fetched::Found(facts)),
        LeaseUpdate::Lease(None) => KueueLeaseUpdate::Lease(Fetched::Missing),
        LeaseUpdate::Forbidden(rule) | LeaseUpdate::Link(LinkEvent::Refused(Refusal::Forbidden { rule, .. })) => {
            KueueLeaseUpdate::Lease(Fetched::Forbidden(Denied { rule }))
        }
        LeaseUpdate::Link(event) => KueueLeaseUpdate::Link(event),
        LeaseUpdate::Polling { every, rule } => KueueLeaseUpdate::Polling { every, rule },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forbidden_lease_is_a_fact_not_a_refusal() {
        let refused = LeaseUpdate::Link(LinkEvent::Refused(Refusal::Forbidden {
            message: "leases is forbidden".into(),
            rule: "get, list and watch leases".into(),
        }));
        let forbidden =
            KueueLeaseUpdate::Lease(Fetched::Forbidden(Denied { rule: "get, list and watch leases".into() }));
        assert_eq!(from_lease(refused), forbidden.clone());
        assert_eq!(from_lease(LeaseUpdate::Forbidden("get, list and watch leases".into())), forbidden);
        assert_eq!(from_lease(LeaseUpdate::Lease(None)), KueueLeaseUpdate::Lease(Fetched::Missing));
        let every = std::time::Duration::from_secs(3);
        let polling = LeaseUpdate::Polling { every, rule: "list".into() };
        assert_eq!(from_lease(polling), KueueLeaseUpdate::Polling { every, rule: "list".into() });
        let unauthorized = LinkEvent::Refused(Refusal::Unauthorized { server: "https://k".into() });
        assert_eq!(
            from_lease(LeaseUpdate::Link(unauthorized.clone())),
            KueueLeaseUpdate::Link(unauthorized),
            "a rejected credential ends the command as it would on dispatch's Lease"
        );
    }
}

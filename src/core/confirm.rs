//! `stale` only after a read confirms it. When a followed Lease's stale deadline passes with
//! no event, the watch may simply be dead (a connection that stopped carrying bytes without
//! closing sends nothing, exactly as a dead controller's Lease does). So the live modes read
//! the Lease once, on a connection of its own and within a short bound, and judge by what
//! that read found: renewed since the last event (the watch was dead: said, and started
//! again; no `stale`), not renewed (`stale`), or no answer (the outage rule: unknown, said
//! once, `--until stale` not reached).

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::fetched::Fetched;
use super::lease::LeaseFacts;

/// The longest a confirming read may take.
pub const MOST: Duration = Duration::from_secs(10);

/// What the confirming read came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirmed {
    /// The Lease as the server has it now (found, missing, or forbidden).
    Read(Fetched<LeaseFacts>),
    /// No answer within the bound, or a failure: the cause in plain words.
    NoAnswer(String),
}

/// What the live mode does with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// Not renewed (nor changed) since the last read: the stale deadline stands; the read is
    /// the observation to judge.
    Stale(Fetched<LeaseFacts>),
    /// Changed since the last read the watch brought: the watch was dead. The read is the
    /// observation to judge, and the cause to say (`watch interrupted: CAUSE; reconnecting`).
    WatchDead { read: Fetched<LeaseFacts>, cause: String },
    /// Nothing is known: the outage rule, with this cause.
    Unknown(String),
}

/// The bound of the confirming read: the smaller of the Lease's duration and
/// `--request-timeout`, at most [`MOST`], and never past `left` (the time to `--timeout`).
pub fn bound(duration_seconds: Option<i32>, request_timeout: Option<Duration>, left: Option<Duration>) -> Duration {
    let duration = duration_seconds.filter(|d| *d > 0).map(|d| Duration::from_secs(u64::from(d.unsigned_abs())));
    [Some(MOST), duration, request_timeout, left].into_iter().flatten().min().unwrap_or(MOST)
}

/// Judges the confirming read against `last`, the last Lease the watch brought, `quiet` being
/// how long the watch has said nothing. A read that is forbidden confirms nothing.
pub fn judge(last: Option<&Fetched<LeaseFacts>>, read: Confirmed, quiet: SignedDuration) -> Judged {
    let read = match read {
        Confirmed::NoAnswer(cause) => {
            return Judged::Unknown(format!("no event in {}, and a read of the Lease: {cause}", secs(quiet)));
        }
        Confirmed::Read(Fetched::Forbidden(_)) => {
            return Judged::Unknown(format!(
                "no event in {}, and a read of the Lease was forbidden (403)",
                secs(quiet)
            ));
        }
        Confirmed::Read(read) => read,
    };
    match last {
        Some(last) if *last == read || not_renewed(last, &read) => Judged::Stale(read),
        _ => {
            let cause = format!(
                "no event in {} while a read on a new connection found the Lease {}; the watch's connection is \
                 presumed dead",
                secs(quiet),
                match &read {
                    Fetched::Missing => "deleted",
                    _ => "renewed",
                }
            );
            Judged::WatchDead { read, cause }
        }
    }
}

/// `read` holds the Lease by the same holder as `last`, renewed no later: not a renewal. The
/// watch may have brought a renewTime the server no longer has (the Lease was written back to an
/// older one): the read, made against the server itself, is what stands, and it is stale too.
fn not_renewed(last: &Fetched<LeaseFacts>, read: &Fetched<LeaseFacts>) -> bool {
    match (last, read) {
        (Fetched::Found(last), Fetched::Found(read)) => {
            last.holder == read.holder && read.renew_time.zip(last.renew_time).is_some_and(|(r, l)| r <= l)
        }
        _ => false,
    }
}

fn secs(d: SignedDuration) -> String {
    format!("{}s", d.as_secs().max(0))
}

/// A resumed watch first replays what it missed: a deadline that passed unseen is judged
/// again this long after the connection is back, so a renewal made meanwhile is seen first.
pub const RESUME_GRACE: SignedDuration = SignedDuration::from_secs(1);

/// dispatch's Lease's stale deadline as both live modes hold it, the one home of the outage
/// rule: when the watch last brought the Lease (how long it was quiet, for [`judge`]); the
/// deadline passed while the connection was down (unknown, said once); and the moment to
/// judge again once it is back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    last_event: Option<Timestamp>,
    unknown_said: bool,
    recheck: Option<Timestamp>,
}

impl Held {
    /// The watch brought the Lease (or a read stood for it) at `now`.
    pub fn seen(&mut self, now: Timestamp) {
        self.last_event = Some(now);
    }

    /// How long the watch has said nothing at `now`.
    pub fn quiet(&self, now: Timestamp) -> SignedDuration {
        self.last_event.map(|s| now.duration_since(s)).unwrap_or_default()
    }

    /// The deadline passed while the connection was down: `true` the first time, when the
    /// unknown line is to be said.
    pub fn unknown(&mut self) -> bool {
        !std::mem::replace(&mut self.unknown_said, true)
    }

    /// The connection is back at `now`: a deadline that passed unseen is judged again
    /// [`RESUME_GRACE`] later.
    pub fn back(&mut self, now: Timestamp) {
        if std::mem::take(&mut self.unknown_said) {
            self.recheck = now.checked_add(RESUME_GRACE).ok();
        }
    }

    /// Whether judging the Lease waits at `now`: unknown, or before the recheck (a recheck
    /// due is cleared).
    pub fn waiting(&mut self, now: Timestamp) -> bool {
        if self.recheck.is_some_and(|at| now >= at) {
            self.recheck = None;
        }
        self.unknown_said || self.recheck.is_some()
    }

    /// When to wake for the recheck.
    pub fn recheck(&self) -> Option<Timestamp> {
        self.recheck
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;

    fn lease(renewed: i64) -> Fetched<LeaseFacts> {
        let t0: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        Fetched::Found(LeaseFacts {
            holder: Some("a".into()),
            renew_time: Some(t0 + SignedDuration::from_secs(renewed)),
            acquire_time: Some(t0),
            duration_seconds: Some(15),
            transitions: Some(0),
        })
    }

    #[test]
    fn the_read_decides_stale_dead_or_unknown() {
        let quiet = SignedDuration::from_secs(31);
        assert_eq!(judge(Some(&lease(0)), Confirmed::Read(lease(0)), quiet), Judged::Stale(lease(0)));
        let Judged::WatchDead { read, cause } = judge(Some(&lease(0)), Confirmed::Read(lease(29)), quiet) else {
            panic!("renewed meanwhile: the watch was dead")
        };
        assert_eq!(read, lease(29));
        assert_eq!(
            cause,
            "no event in 31s while a read on a new connection found the Lease renewed; the watch's connection is \
             presumed dead"
        );
        assert!(matches!(judge(Some(&lease(0)), Confirmed::Read(Fetched::Missing), quiet), Judged::WatchDead { .. }));
        // The Lease written back to an older renewTime (the watch's newer one was passed over as
        // going back in time): no renewal, so the deadline stands, judged on the read.
        assert_eq!(judge(Some(&lease(0)), Confirmed::Read(lease(-600)), quiet), Judged::Stale(lease(-600)));
        assert_eq!(
            judge(Some(&lease(0)), Confirmed::NoAnswer("the API server did not answer in time".into()), quiet),
            Judged::Unknown("no event in 31s, and a read of the Lease: the API server did not answer in time".into())
        );
        let forbidden = Confirmed::Read(Fetched::Forbidden(Denied { rule: "get leases".into() }));
        assert!(matches!(judge(Some(&lease(0)), forbidden, quiet), Judged::Unknown(_)));
    }

    #[test]
    fn held_unknown_once_then_judged_again_a_moment_after_the_connection_is_back() {
        let t0: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        let at = |s: i64| t0 + SignedDuration::from_secs(s);
        let mut h = Held::default();
        h.seen(at(0));
        assert_eq!(h.quiet(at(31)), SignedDuration::from_secs(31));
        assert!(!h.waiting(at(31)));
        assert!(h.unknown(), "said the first time");
        assert!(!h.unknown(), "once");
        assert!(h.waiting(at(35)), "nothing judged while unknown");
        h.back(at(40));
        assert_eq!(h.recheck(), Some(at(41)));
        assert!(h.waiting(at(40)), "the replay comes first");
        assert!(!h.waiting(at(41)), "judged at the recheck");
        assert_eq!(h.recheck(), None);
        h.back(at(50));
        assert_eq!(h.recheck(), None, "back without a deadline passed: nothing to judge again");
    }

    #[test]
    fn the_bound_is_the_smallest_of_the_duration_the_request_timeout_10s_and_the_time_left() {
        let s = Duration::from_secs;
        assert_eq!(bound(Some(15), None, None), s(10));
        assert_eq!(bound(Some(3), None, None), s(3));
        assert_eq!(bound(Some(15), Some(s(2)), None), s(2));
        assert_eq!(bound(None, None, Some(s(4))), s(4));
        assert_eq!(bound(Some(0), None, None), s(10), "a Lease with no duration");
        assert_eq!(bound(Some(-5), None, None), s(10));
    }
}

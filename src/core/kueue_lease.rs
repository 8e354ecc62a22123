//! Kueue's own heartbeat: its controller manager's leader-election Lease
//! (`c1f6bfd2.kueue.x-k8s.io`, Kueue's `DefaultLeaderElectionID`, in the manager's namespace),
//! read beside dispatch's and judged by the same rule, but shown as context, never as a check
//! of the gate: the adapter's chain stays the adapter's. When Kueue's manager is down no
//! Workload is admitted whatever dispatch's controller does, and that is what it says.
//!
//! A manager run without leader election holds no Lease at all, so a missing Lease is said as
//! such ("no Lease"), never as stale; a Lease that may not be read is said as forbidden.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::duration::{ceil_seconds, human, human_up};
use super::fetched::Fetched;
use super::lease::{self, LeaseAssessment, LeaseFacts, LeaseRef, LeaseState};

/// Kueue's manager's Lease at `now`: dispatch's heartbeat rule applied to Kueue's Lease.
pub fn assess(lease_ref: &LeaseRef, fetched: &Fetched<LeaseFacts>, now: Timestamp) -> LeaseAssessment {
    lease::assess(lease_ref, fetched, now)
}

/// Every status [`status`] gives, for a Prometheus state set.
pub const STATUSES: [&str; 6] = ["fresh", "stale", "no holder", "never renewed", "no lease", "forbidden"];

/// One word for tables, JSON and metrics: as dispatch's Lease's, but `no lease` where there is
/// none (a manager without leader election), which is no failure of Kueue's.
pub fn status(a: &LeaseAssessment) -> &'static str {
    match a.state {
        LeaseState::Missing => "no lease",
        ref other => other.label(),
    }
}

/// Whether the Lease shows that no manager leads (stale, released, never renewed): Kueue then
/// admits nothing. A missing or unreadable Lease proves nothing either way.
pub fn is_down(a: &LeaseAssessment) -> bool {
    matches!(a.state, LeaseState::Stale { .. } | LeaseState::NoHolder | LeaseState::NeverRenewed)
}

/// What the Lease says about Kueue's manager, in one sentence.
pub fn sentence(a: &LeaseAssessment) -> String {
    let lease = &a.lease;
    match &a.state {
        LeaseState::Fresh { age, limit, .. } => format!(
            "Lease {lease} renewed {} ago, within {}: a manager leads",
            human(SignedDuration::from_secs(ceil_seconds(*age).max(0))),
            human(*limit)
        ),
        LeaseState::Stale { age, limit, .. } => format!(
            "Lease {lease} was last renewed {} ago, beyond {}: no manager leads, so Kueue admits nothing",
            human_up(*age),
            human(*limit)
        ),
        LeaseState::NoHolder => format!("Lease {lease} has no holder: no manager leads, so Kueue admits nothing"),
        LeaseState::NeverRenewed => {
            format!("Lease {lease} has never been renewed: no manager leads, so Kueue admits nothing")
        }
        LeaseState::Missing => format!(
            "no Lease {lease}: a manager without leader election holds none (--kueue-lease names another), so its heartbeat cannot be shown"
        ),
        LeaseState::Forbidden { rule } => format!("Lease {lease} cannot be read without RBAC: {rule}"),
    }
}

/// The line under the gate's chains: nothing while a manager leads.
pub fn note(a: &LeaseAssessment) -> Option<String> {
    match a.state {
        LeaseState::Fresh { .. } => None,
        _ => Some(format!("Kueue's manager: {}", sentence(a))),
    }
}

/// The clause `workload` adds to a Workload that waits for quota or admission while Kueue's
/// manager is down: `; Kueue's manager is down: its Lease has been stale for 65s`.
pub fn clause(a: &LeaseAssessment) -> Option<String> {
    let why = match &a.state {
        LeaseState::Stale { stale_for, .. } => {
            format!("its Lease {} has been stale for {}", a.lease, human_up(*stale_for))
        }
        LeaseState::NoHolder => format!("its Lease {} has no holder", a.lease),
        LeaseState::NeverRenewed => format!("its Lease {} has never been renewed", a.lease),
        _ => return None,
    };
    Some(format!("; Kueue's manager is down ({why}), so nothing is admitted until it is back"))
}

/// Kueue's manager's Lease followed live, by both live modes: the last read, and what was
/// said of it. A live view says Kueue's manager when that says something: at the first read as
/// [`First`] says, then at every change of [`status`] (it goes stale, comes back, is deleted or
/// created). Renewals, and a takeover between two live managers, say nothing.
#[derive(Debug, Clone)]
pub struct Follower {
    lease: LeaseRef,
    last: Option<Fetched<LeaseFacts>>,
    /// The status of the last read or tick judged (`None` before the first).
    status: Option<&'static str>,
    first: First,
}

/// What the first read of Kueue's manager's Lease says, the one place where the live modes
/// differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// `lease --watch`: only that no manager leads (stale, no holder, never renewed). A Lease
    /// missing or not readable from the start says nothing (no manager without leader
    /// election holds one, and the viewer may not be granted Kueue's namespace); the one-shot
    /// verbs say it.
    Down,
    /// `gate --watch`: whatever the one-shot gate notes under its chains ([`note`]), that is
    /// everything but a leading manager.
    Noted,
}

impl Follower {
    /// A follower for `lease --watch` ([`First::Down`]).
    pub fn new(lease: LeaseRef) -> Follower {
        Follower::with(lease, First::Down)
    }

    pub fn with(lease: LeaseRef, first: First) -> Follower {
        Follower { lease, last: None, status: None, first }
    }

    /// Keeps a read without judging it: the next [`Follower::observe`] does.
    pub fn read(&mut self, read: Fetched<LeaseFacts>) {
        self.last = Some(read);
    }

    /// The last read, if any.
    pub fn last(&self) -> Option<&Fetched<LeaseFacts>> {
        self.last.as_ref()
    }

    /// The Lease at `now`, once it was read.
    pub fn assess(&self, now: Timestamp) -> Option<LeaseAssessment> {
        self.last.as_ref().map(|f| assess(&self.lease, f, now))
    }

    /// The last instant at which the Lease is still fresh (exactly at the limit still
    /// passes), as dispatch's. `None` while it is not fresh.
    pub fn fresh_until(&self, now: Timestamp) -> Option<Timestamp> {
        match self.assess(now)?.state {
            LeaseState::Fresh { stale_in, .. } => now.checked_add(stale_in).ok(),
            _ => None,
        }
    }

    /// When a fresh Lease goes stale with no event: just past [`Follower::fresh_until`].
    pub fn deadline(&self, now: Timestamp) -> Option<Timestamp> {
        self.fresh_until(now)?.checked_add(k8s_openapi::jiff::SignedDuration::from_micros(1)).ok()
    }

    /// Feeds a read (`None`: the deadline passed, or nothing new read); returns the Lease at
    /// `now` when it is to be said.
    pub fn observe(&mut self, read: Option<Fetched<LeaseFacts>>, now: Timestamp) -> Option<LeaseAssessment> {
        if let Some(read) = read {
            self.read(read);
        }
        let a = self.assess(now)?;
        let status = status(&a);
        let said = match self.status.replace(status) {
            None => match self.first {
                First::Down => is_down(&a),
                First::Noted => note(&a).is_some(),
            },
            Some(before) => before != status,
        };
        said.then_some(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;
    use k8s_openapi::jiff::SignedDuration;

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn renewed(ago: i64) -> Fetched<LeaseFacts> {
        Fetched::Found(LeaseFacts {
            holder: Some("kueue-controller-manager-0_1".into()),
            renew_time: Some(now() - SignedDuration::from_secs(ago)),
            acquire_time: None,
            duration_seconds: Some(15),
            transitions: Some(0),
        })
    }

    fn at(fetched: Fetched<LeaseFacts>) -> LeaseAssessment {
        assess(&LeaseRef::kueue_default(), &fetched, now())
    }

    #[test]
    fn a_leading_manager_adds_no_line_and_no_clause() {
        let a = at(renewed(3));
        assert_eq!(status(&a), "fresh");
        assert_eq!((note(&a), clause(&a), is_down(&a)), (None, None, false));
        assert_eq!(
            sentence(&a),
            "Lease kueue-system/c1f6bfd2.kueue.x-k8s.io renewed 3s ago, within 30s: a manager leads"
        );
    }

    #[test]
    fn a_stale_lease_says_kueue_admits_nothing() {
        let a = at(renewed(95));
        assert_eq!(status(&a), "stale");
        assert!(is_down(&a));
        assert_eq!(
            note(&a).unwrap(),
            "Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 95s ago, beyond 30s: no manager leads, so Kueue admits nothing"
        );
        assert_eq!(
            clause(&a).unwrap(),
            "; Kueue's manager is down (its Lease kueue-system/c1f6bfd2.kueue.x-k8s.io has been stale for 65s), so nothing is admitted until it is back"
        );
    }

    #[test]
    fn no_lease_and_a_forbidden_read_are_never_stale() {
        let none = at(Fetched::Missing);
        assert_eq!(status(&none), "no lease");
        assert!(!is_down(&none) && clause(&none).is_none());
        assert_eq!(
            note(&none).unwrap(),
            "Kueue's manager: no Lease kueue-system/c1f6bfd2.kueue.x-k8s.io: a manager without leader election holds none (--kueue-lease names another), so its heartbeat cannot be shown"
        );
        let rule = "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system";
        let forbidden = at(Fetched::Forbidden(Denied { rule: rule.into() }));
        assert_eq!(status(&forbidden), "forbidden");
        assert!(!is_down(&forbidden) && clause(&forbidden).is_none());
        assert_eq!(
            note(&forbidden).unwrap(),
            format!("Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io cannot be read without RBAC: {rule}")
        );
    }

    #[test]
    fn every_status_is_in_the_state_set() {
        for f in [renewed(1), renewed(100), Fetched::Missing, Fetched::Forbidden(Denied { rule: "r".into() })] {
            assert!(STATUSES.contains(&status(&at(f))));
        }
        let released = Fetched::Found(LeaseFacts { holder: Some(String::new()), ..Default::default() });
        assert_eq!(status(&at(released)), "no holder");
    }

    #[test]
    fn a_follower_says_the_manager_going_down_and_coming_back_once_each() {
        let base = now();
        let at = |secs: i64| base + SignedDuration::from_secs(secs);
        let read = |renewed: i64, holder: &str| {
            Some(Fetched::Found(LeaseFacts {
                holder: Some(holder.into()),
                renew_time: Some(at(renewed)),
                acquire_time: None,
                duration_seconds: Some(15),
                transitions: Some(0),
            }))
        };
        let mut f = Follower::new(LeaseRef::kueue_default());
        assert!(f.deadline(at(0)).is_none(), "nothing read yet");
        assert!(f.observe(None, at(0)).is_none());
        assert!(f.observe(read(0, "a"), at(0)).is_none(), "a leading manager at first says nothing");
        assert_eq!(f.deadline(at(0)), Some(at(30) + SignedDuration::from_micros(1)));
        assert!(f.observe(read(2, "a"), at(2)).is_none(), "a renewal says nothing");
        assert!(f.observe(read(4, "b"), at(4)).is_none(), "nor a takeover between live managers");
        let down = f.observe(None, at(35)).expect("stale at the deadline");
        assert_eq!(status(&down), "stale");
        assert!(f.observe(None, at(60)).is_none(), "still stale: said once");
        assert!(f.deadline(at(60)).is_none());
        let back = f.observe(read(61, "c"), at(61)).expect("a manager leads again");
        assert_eq!(
            sentence(&back),
            "Lease kueue-system/c1f6bfd2.kueue.x-k8s.io renewed 0s ago, within 30s: a manager leads"
        );
        let gone = f.observe(Some(Fetched::Missing), at(62)).expect("deleted");
        assert_eq!(status(&gone), "no lease");
    }

    #[test]
    fn a_follower_is_quiet_at_first_unless_no_manager_leads() {
        for quiet in [Fetched::Missing, Fetched::Forbidden(Denied { rule: "get leases".into() })] {
            let mut f = Follower::new(LeaseRef::kueue_default());
            assert!(f.observe(Some(quiet), now()).is_none());
            assert!(f.observe(None, now()).is_none());
        }
        let mut f = Follower::new(LeaseRef::kueue_default());
        let stale = f.observe(Some(renewed(95)), now()).expect("down from the start");
        assert!(is_down(&stale));
        let released = Fetched::Found(LeaseFacts { holder: Some(String::new()), ..Default::default() });
        assert_eq!(f.observe(Some(released), now()).map(|a| status(&a)), Some("no holder"));
    }

    #[test]
    fn gates_follower_says_at_first_whatever_the_one_shot_gate_notes() {
        for (first, said) in [
            (renewed(3), None),
            (renewed(95), Some("stale")),
            (Fetched::Missing, Some("no lease")),
            (Fetched::Forbidden(Denied { rule: "get leases".into() }), Some("forbidden")),
        ] {
            let mut f = Follower::with(LeaseRef::kueue_default(), First::Noted);
            f.read(first);
            assert!(f.last().is_some());
            assert_eq!(f.observe(None, now()).map(|a| status(&a)), said);
            assert!(f.observe(None, now()).is_none(), "said once");
        }
        let mut f = Follower::with(LeaseRef::kueue_default(), First::Noted);
        f.read(renewed(0));
        assert_eq!(f.fresh_until(now()), Some(now() + SignedDuration::from_secs(30)));
        assert_eq!(f.deadline(now()), Some(now() + SignedDuration::from_secs(30) + SignedDuration::from_micros(1)));
    }
}

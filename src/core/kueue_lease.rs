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
        // Why there may be none (a manager without leader election, another --kueue-lease) is
        // in docs/kueue.md: the line stays short.
        LeaseState::Missing => format!("no Lease {lease}: its heartbeat cannot be shown"),
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

/// What the live modes have said of Kueue's manager. The Lease itself is followed by its own
/// instance of the heartbeat machine (`core::heartbeats`): its reads, its timer, its
/// confirming read and its outage story. Each time that instance judges the Lease, this says
/// whether it is to be told: at the first judgement as [`First`] says, then at every change of
/// [`status`] (it goes stale, comes back, is deleted or created). Renewals, and a takeover
/// between two live managers, say nothing.
#[derive(Debug, Clone)]
pub struct Told {
    /// The status of the last judgement (`None` before the first).
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

impl Told {
    pub fn new(first: First) -> Told {
        Told { status: None, first }
    }

    /// The Lease as its instance judged it: returned when it is to be said.
    pub fn judged(&mut self, a: LeaseAssessment) -> Option<LeaseAssessment> {
        let said = match self.status.replace(status(&a)) {
            None => match self.first {
                First::Down => is_down(&a),
                First::Noted => note(&a).is_some(),
            },
            Some(before) => before != status(&a),
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
            "Kueue's manager: no Lease kueue-system/c1f6bfd2.kueue.x-k8s.io: its heartbeat cannot be shown"
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
    fn the_manager_going_down_and_coming_back_is_told_once_each() {
        let base = now();
        let at = |secs: i64| base + SignedDuration::from_secs(secs);
        let judged = |renewed: i64, holder: &str, secs: i64| {
            let read = Fetched::Found(LeaseFacts {
                holder: Some(holder.into()),
                renew_time: Some(at(renewed)),
                acquire_time: None,
                duration_seconds: Some(15),
                transitions: Some(0),
            });
            assess(&LeaseRef::kueue_default(), &read, at(secs))
        };
        let mut t = Told::new(First::Down);
        assert!(t.judged(judged(0, "a", 0)).is_none(), "a leading manager at first says nothing");
        assert!(t.judged(judged(2, "a", 2)).is_none(), "a renewal says nothing");
        assert!(t.judged(judged(4, "b", 4)).is_none(), "nor a takeover between live managers");
        let down = t.judged(judged(4, "b", 35)).expect("stale");
        assert_eq!(status(&down), "stale");
        assert!(t.judged(judged(4, "b", 60)).is_none(), "still stale: said once");
        let back = t.judged(judged(61, "c", 61)).expect("a manager leads again");
        assert_eq!(
            sentence(&back),
            "Lease kueue-system/c1f6bfd2.kueue.x-k8s.io renewed 0s ago, within 30s: a manager leads"
        );
        let gone = t.judged(assess(&LeaseRef::kueue_default(), &Fetched::Missing, at(62))).expect("deleted");
        assert_eq!(status(&gone), "no lease");
    }

    #[test]
    fn lease_watch_is_quiet_at_first_unless_no_manager_leads() {
        for quiet in [Fetched::Missing, Fetched::Forbidden(Denied { rule: "get leases".into() })] {
            let mut t = Told::new(First::Down);
            assert!(t.judged(at(quiet.clone())).is_none());
            assert!(t.judged(at(quiet)).is_none());
        }
        let mut t = Told::new(First::Down);
        let stale = t.judged(at(renewed(95))).expect("down from the start");
        assert!(is_down(&stale));
        let released = Fetched::Found(LeaseFacts { holder: Some(String::new()), ..Default::default() });
        assert_eq!(t.judged(at(released)).map(|a| status(&a)), Some("no holder"));
    }

    #[test]
    fn the_gate_says_at_first_whatever_the_one_shot_gate_notes() {
        for (first, said) in [
            (renewed(3), None),
            (renewed(95), Some("stale")),
            (Fetched::Missing, Some("no lease")),
            (Fetched::Forbidden(Denied { rule: "get leases".into() }), Some("forbidden")),
        ] {
            let mut t = Told::new(First::Noted);
            assert_eq!(t.judged(at(first.clone())).map(|a| status(&a)), said);
            assert!(t.judged(at(first)).is_none(), "said once");
        }
    }
}

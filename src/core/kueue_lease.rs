//! Kueue's own heartbeat: its controller manager's leader-election Lease
//! (`c1f6bfd2.kueue.x-k8s.io`, Kueue's `DefaultLeaderElectionID`, in the manager's namespace),
//! read beside dispatch's and judged by the same rule, but shown as context, never as a check
//! of the gate: the adapter's chain stays the adapter's. When Kueue's manager is down no
//! Workload is admitted whatever dispatch's controller does, and that is what it says.
//!
//! A manager run without leader election holds no Lease at all, so a missing Lease is said as
//! such ("no Lease"), never as stale; a Lease that may not be read is said as forbidden.

use k8s_openapi::jiff::Timestamp;

use super::duration::{ceil_seconds, go_seconds, human_up};
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
            go_seconds(ceil_seconds(*age).max(0)),
            go_seconds(limit.as_secs())
        ),
        LeaseState::Stale { age, limit, .. } => format!(
            "Lease {lease} was last renewed {} ago, beyond {}: no manager leads, so Kueue admits nothing",
            go_seconds(ceil_seconds(*age)),
            go_seconds(limit.as_secs())
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
            "Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 1m35s ago, beyond 30s: no manager leads, so Kueue admits nothing"
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
}

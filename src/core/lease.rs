//! The Lease heartbeat rule, as the adapter applies it at preflight
//! (`docs/design.md`). A running leader renews its Lease every few seconds;
//! a holder plus a recent renewal is a signal only a live leader can produce.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::duration::{human, human_up};
use super::fetched::Fetched;
use super::holder::{self, HolderFacts, HolderPod, Tenure};
use super::verdict::Verdict;

/// `namespace/name` of the controller's leader-election Lease (the adapter's `kueue.admissionLease`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRef {
    pub namespace: String,
    pub name: String,
}

impl Default for LeaseRef {
    fn default() -> Self {
        LeaseRef { namespace: "dispatch-system".into(), name: "dispatch-admission".into() }
    }
}

impl LeaseRef {
    /// Kueue's own manager's leader-election Lease: `DefaultLeaderElectionID` in the manager's
    /// namespace (kueue-system by default).
    pub fn kueue_default() -> Self {
        LeaseRef { namespace: "kueue-system".into(), name: "c1f6bfd2.kueue.x-k8s.io".into() }
    }
}

impl fmt::Display for LeaseRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl FromStr for LeaseRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(LeaseRef { namespace: ns.into(), name: name.into() })
            }
            _ => Err(format!("expected NAMESPACE/NAME, got {s:?}")),
        }
    }
}

/// The fields of a Lease the rule reads, and those shown beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeaseFacts {
    pub holder: Option<String>,
    pub renew_time: Option<Timestamp>,
    pub acquire_time: Option<Timestamp>,
    pub duration_seconds: Option<i32>,
    pub transitions: Option<i32>,
}

impl From<&Lease> for LeaseFacts {
    fn from(lease: &Lease) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        LeaseFacts {
            holder: spec.holder_identity,
            renew_time: spec.renew_time.map(|t| t.0),
            acquire_time: spec.acquire_time.map(|t| t.0),
            duration_seconds: spec.lease_duration_seconds,
            transitions: spec.lease_transitions,
        }
    }
}

impl LeaseFacts {
    /// A holder that is absent or empty: the two look different on the wire (a released Lease
    /// keeps the field as `""`) but both mean nobody leads.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }

    /// The holder and when it took the Lease (acquireTime, else renewTime), for its pod.
    pub fn tenure(&self) -> Tenure<'_> {
        Tenure { holder: self.holder(), took: self.acquire_time.or(self.renew_time) }
    }
}

/// The heartbeat's state at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseState {
    /// Renewed recently enough; goes stale after `stale_in`.
    Fresh {
        age: SignedDuration,
        limit: SignedDuration,
        stale_in: SignedDuration,
    },
    /// Renewed longer ago than the limit, by `stale_for`.
    Stale {
        age: SignedDuration,
        limit: SignedDuration,
        stale_for: SignedDuration,
    },
    NoHolder,
    NeverRenewed,
    Missing,
    /// The Lease may not be read; `rule` is the RBAC rule that would allow it.
    Forbidden {
        rule: String,
    },
}

/// The rule applied to a Lease (or its absence) at `now`.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseAssessment {
    pub lease: LeaseRef,
    pub facts: Option<LeaseFacts>,
    pub state: LeaseState,
    /// What became of the holder's pod, when it was looked up ([`assess_with_holder`]).
    pub holder_pod: Option<HolderPod>,
}

/// Applies the adapter's three rules in order: a non-empty holder; both a renewTime and a
/// leaseDurationSeconds; renewTime no more than 2 × leaseDurationSeconds before `now`.
///
/// Why twice the duration: on a rolling restart the old holder's last renewal stays on the Lease
/// until a standby takes over, which client-go lets it do one full duration after it last saw
/// a change; the second duration covers that gap, so a routine restart never reads as stale.
///
/// A renewTime exactly at the limit passes. A renewTime in the future (clock skew) gives a
/// negative age, which passes by the rule; callers warn about it (see [`future_skew`]).
/// A leaseDurationSeconds of 0 or less is present, so it is judged by rule 3 with its
/// (zero or negative) limit, as the rule is written; the apiserver never stores one.
pub fn assess(lease: &LeaseRef, fetched: &Fetched<LeaseFacts>, now: Timestamp) -> LeaseAssessment {
    let (facts, state) = match fetched {
        Fetched::Missing => (None, LeaseState::Missing),
        Fetched::Forbidden(denied) => (None, LeaseState::Forbidden { rule: denied.rule.clone() }),
        Fetched::Found(facts) => (Some(facts.clone()), judge(facts, now)),
    };
    LeaseAssessment { lease: lease.clone(), facts, state, holder_pod: None }
}

/// [`assess`], and the holder's pod from what was read beside the Lease, at the same `now`.
/// The pod never changes the state: it only says what became of the holder.
pub fn assess_with_holder(
    lease: &LeaseRef,
    fetched: &Fetched<LeaseFacts>,
    holder: Option<&HolderFacts>,
    now: Timestamp,
) -> LeaseAssessment {
    let mut a = assess(lease, fetched, now);
    a.holder_pod = a.facts.as_ref().and_then(|f| holder::assess(&lease.namespace, f.tenure(), holder, now));
    a
}

fn judge(facts: &LeaseFacts, now: Timestamp) -> LeaseState {
    if facts.holder().is_none() {
        return LeaseState::NoHolder;
    }
    let (Some(renewed), Some(duration)) = (facts.renew_time, facts.duration_seconds) else {
        return LeaseState::NeverRenewed;
    };
    let age = now.duration_since(renewed);
    let limit = SignedDuration::from_secs(2 * i64::from(duration));
    if age <= limit {
        LeaseState::Fresh { age, limit, stale_in: limit.saturating_sub(age) }
    } else {
        LeaseState::Stale { age, limit, stale_for: age.saturating_sub(limit) }
    }
}

/// How far in the future renewTime is, when it is: the holder's clock is ahead of ours.
pub fn future_skew(facts: &LeaseFacts, now: Timestamp) -> Option<SignedDuration> {
    let renewed = facts.renew_time?;
    let ahead = renewed.duration_since(now);
    ahead.is_positive().then_some(ahead)
}

impl LeaseState {
    /// The adapter's reason, word for word, when the rule fails; `None` when it passes or
    /// cannot be judged. Its durations are kubectl's HumanDuration, as every other duration the
    /// plugin prints (`99s`, `3m7s`, `12m`); the age is rounded up to whole seconds, so a Lease
    /// past its limit by a fraction of a second reads `31s ago, beyond 30s`.
    pub fn reason(&self, lease: &LeaseRef) -> Option<String> {
        match self {
            LeaseState::Fresh { .. } | LeaseState::Forbidden { .. } => None,
            LeaseState::NoHolder => Some("the admission controller's Lease has no holder".into()),
            LeaseState::NeverRenewed => Some("the admission controller's Lease has never been renewed".into()),
            LeaseState::Stale { age, limit, .. } => Some(format!(
                "the admission controller's Lease was last renewed {} ago, beyond {}",
                human_up(*age),
                human(*limit)
            )),
            LeaseState::Missing => Some(format!("Lease {lease} does not exist")),
        }
    }

    pub fn verdict(&self) -> Verdict {
        match self {
            LeaseState::Fresh { .. } => Verdict::Yes,
            LeaseState::Forbidden { .. } => Verdict::Unknown,
            _ => Verdict::No,
        }
    }

    /// The one-word status used in tables and JSON.
    pub fn label(&self) -> &'static str {
        match self {
            LeaseState::Fresh { .. } => "fresh",
            LeaseState::Stale { .. } => "stale",
            LeaseState::NoHolder => "no holder",
            LeaseState::NeverRenewed => "never renewed",
            LeaseState::Missing => "missing",
            LeaseState::Forbidden { .. } => "forbidden",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn lease(holder: Option<&str>, renewed_ago_us: Option<i64>, duration: Option<i32>) -> LeaseFacts {
        LeaseFacts {
            holder: holder.map(String::from),
            renew_time: renewed_ago_us.map(|us| now() - SignedDuration::from_micros(us)),
            acquire_time: None,
            duration_seconds: duration,
            transitions: Some(0),
        }
    }

    fn state(facts: LeaseFacts) -> LeaseState {
        assess(&LeaseRef::default(), &Fetched::Found(facts), now()).state
    }

    fn reason(facts: LeaseFacts) -> Option<String> {
        state(facts).reason(&LeaseRef::default())
    }

    #[test]
    fn a_recent_renewal_is_fresh() {
        let s = state(lease(Some("pod-1_a"), Some(2_000_000), Some(15)));
        assert_eq!(
            s,
            LeaseState::Fresh {
                age: SignedDuration::from_secs(2),
                limit: SignedDuration::from_secs(30),
                stale_in: SignedDuration::from_secs(28)
            }
        );
        assert_eq!(s.verdict(), Verdict::Yes);
        assert_eq!(s.reason(&LeaseRef::default()), None);
    }

    #[test]
    fn exactly_twice_the_duration_passes() {
        let s = state(lease(Some("pod-1_a"), Some(30_000_000), Some(15)));
        assert!(matches!(s, LeaseState::Fresh { stale_in, .. } if stale_in.is_zero()));
    }

    #[test]
    fn one_microsecond_past_the_limit_is_stale() {
        let s = state(lease(Some("pod-1_a"), Some(30_000_001), Some(15)));
        assert!(matches!(s, LeaseState::Stale { stale_for, .. } if stale_for == SignedDuration::from_micros(1)));
        assert_eq!(
            s.reason(&LeaseRef::default()).unwrap(),
            "the admission controller's Lease was last renewed 31s ago, beyond 30s",
            "an age past the limit reads past it"
        );
    }

    #[test]
    fn stale_reason_writes_kubectls_human_durations() {
        let r = reason(lease(Some("pod-1_a"), Some(123_400_000), Some(15))).unwrap();
        assert_eq!(r, "the admission controller's Lease was last renewed 2m4s ago, beyond 30s", "123.4s rounds up");
        let r = reason(lease(Some("pod-1_a"), Some(99_000_000), Some(15))).unwrap();
        assert_eq!(r, "the admission controller's Lease was last renewed 99s ago, beyond 30s", "not 1m39s");
        let r = reason(lease(Some("pod-1_a"), Some(3_605_000_000), Some(60))).unwrap();
        assert_eq!(r, "the admission controller's Lease was last renewed 60m ago, beyond 2m");
    }

    #[test]
    fn a_missing_holder_and_an_empty_one_alike_have_no_holder() {
        for holder in [None, Some("")] {
            let s = state(lease(holder, Some(1_000_000), Some(15)));
            assert_eq!(s, LeaseState::NoHolder);
            assert_eq!(s.reason(&LeaseRef::default()).unwrap(), "the admission controller's Lease has no holder");
        }
    }

    #[test]
    fn a_released_lease_has_no_holder() {
        // client-go's release writes holder "" and leaseDurationSeconds 1.
        assert_eq!(state(lease(Some(""), Some(0), Some(1))), LeaseState::NoHolder);
    }

    #[test]
    fn no_holder_is_checked_before_renewal() {
        assert_eq!(state(lease(None, None, None)), LeaseState::NoHolder);
    }

    #[test]
    fn a_missing_renew_time_or_duration_was_never_renewed() {
        for facts in [
            lease(Some("pod-1_a"), None, Some(15)),
            lease(Some("pod-1_a"), Some(1_000_000), None),
            lease(Some("pod-1_a"), None, None),
        ] {
            assert_eq!(state(facts.clone()), LeaseState::NeverRenewed);
            assert_eq!(reason(facts).unwrap(), "the admission controller's Lease has never been renewed");
        }
    }

    #[test]
    fn a_zero_duration_is_judged_with_a_zero_limit() {
        let s = state(lease(Some("pod-1_a"), Some(1_000_000), Some(0)));
        assert_eq!(
            s.reason(&LeaseRef::default()).unwrap(),
            "the admission controller's Lease was last renewed 1s ago, beyond 0s"
        );
        assert!(matches!(state(lease(Some("p"), Some(0), Some(0))), LeaseState::Fresh { .. }));
    }

    #[test]
    fn a_renew_time_in_the_future_passes_and_is_reported_as_skew() {
        let facts = lease(Some("pod-1_a"), Some(-5_000_000), Some(15));
        assert!(matches!(state(facts.clone()), LeaseState::Fresh { age, .. } if age == SignedDuration::from_secs(-5)));
        assert_eq!(future_skew(&facts, now()), Some(SignedDuration::from_secs(5)));
        assert_eq!(future_skew(&lease(Some("p"), Some(1), Some(15)), now()), None);
    }

    #[test]
    fn missing_and_forbidden() {
        let r = LeaseRef { namespace: "ops".into(), name: "ctl".into() };
        let missing = assess(&r, &Fetched::Missing, now()).state;
        assert_eq!(missing.reason(&r).unwrap(), "Lease ops/ctl does not exist");
        assert_eq!(missing.verdict(), Verdict::No);
        let forbidden = assess(&r, &Fetched::Forbidden(Denied { rule: "get leases".into() }), now()).state;
        assert_eq!(forbidden.verdict(), Verdict::Unknown);
        assert_eq!(forbidden.reason(&r), None);
    }

    #[test]
    fn lease_refs_parse() {
        assert_eq!("a/b".parse::<LeaseRef>().unwrap(), LeaseRef { namespace: "a".into(), name: "b".into() });
        for bad in ["a", "/b", "a/", "a/b/c"] {
            assert!(bad.parse::<LeaseRef>().is_err(), "{bad}");
        }
    }
}

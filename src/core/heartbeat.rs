//! A Lease's story over time: the rows of `lease --watch`, kept by the heartbeat machine
//! (`LiveLease`). It is fed what the watch saw (or a timer tick) with `now`, and says
//! which changes of status to report: renewals and their gaps, takeovers (across a spell with
//! no holder, no Lease or no access too), stale and fresh, and a renewTime that went back. A
//! Lease that stops being renewed sends no events, so the machine also ticks it at
//! [`Tracker::deadline`], the moment the heartbeat goes stale.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::fetched::{Denied, Fetched};
use super::lease::{self, LeaseAssessment, LeaseFacts, LeaseRef, LeaseState};

/// What the caller observed.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// The Lease as it is now; `None` when it does not exist.
    Lease(Option<LeaseFacts>),
    /// The watch was refused (403); the rule that would allow it.
    Forbidden(String),
    /// Nothing new from the server; time passed (the stale timer, or a periodic tick).
    Tick,
}

/// Why a row is printed.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeKind {
    /// The first state seen.
    Observed,
    /// The holder renewed; `gap` since its previous renewal, `slow` when that gap exceeds half
    /// the limit (the early warning before stale).
    Renewed {
        gap: Option<SignedDuration>,
        slow: bool,
    },
    /// A new holder took the Lease; `gap` from the old holder's last renewal to the new one's.
    Takeover {
        from: String,
        to: String,
        gap: Option<SignedDuration>,
        transitions: Option<i32>,
    },
    /// Went stale at the deadline, with no API event.
    Stale,
    /// A live heartbeat again after not being one; `gap` from the last renewal before the spell
    /// (a stale one) to this renewal, when the holder is the same and both times are known.
    Fresh {
        gap: Option<SignedDuration>,
    },
    Deleted,
    Created,
    /// Any other change of status (no holder, never renewed, forbidden).
    Status,
}

impl ChangeKind {
    pub fn event(&self) -> &'static str {
        match self {
            ChangeKind::Observed => "observed",
            ChangeKind::Renewed { .. } => "renewed",
            ChangeKind::Takeover { .. } => "takeover",
            ChangeKind::Stale => "stale",
            ChangeKind::Fresh { .. } => "fresh",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Created => "created",
            ChangeKind::Status => "status",
        }
    }
}

/// A change to report, with the assessment after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: ChangeKind,
    pub at: Timestamp,
    pub assessment: LeaseAssessment,
}

/// How many of the latest renewal gaps the median is taken over: a watch left open for weeks
/// keeps this many, not one per renewal for ever.
pub const GAP_WINDOW: usize = 256;

/// Renewal gaps seen so far, for the summary and the cadence column: how many and the longest
/// over the whole watch, the median over the latest [`GAP_WINDOW`]. Its memory is fixed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps {
    /// The latest gaps, oldest first, at most [`GAP_WINDOW`].
    window: std::collections::VecDeque<SignedDuration>,
    count: u64,
    max: Option<SignedDuration>,
}

impl Gaps {
    pub fn push(&mut self, gap: SignedDuration) {
        if self.window.len() == GAP_WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(gap);
        self.count = self.count.saturating_add(1);
        self.max = Some(self.max.map_or(gap, |m| m.max(gap)));
    }

    /// Every gap seen.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The median of the latest [`GAP_WINDOW`] gaps (the lower one of an even count), found in
    /// a fixed-size copy.
    pub fn median(&self) -> Option<SignedDuration> {
        let n = self.window.len();
        let mut copy = [SignedDuration::ZERO; GAP_WINDOW];
        for (slot, gap) in copy.iter_mut().zip(&self.window) {
            *slot = *gap;
        }
        let v = &mut copy[..n];
        let middle = n.checked_sub(1)? / 2;
        Some(*v.select_nth_unstable(middle).1)
    }

    /// The longest gap seen.
    pub fn max(&self) -> Option<SignedDuration> {
        self.max
    }

    /// The gaps kept (at most [`GAP_WINDOW`]).
    pub fn kept(&self) -> usize {
        self.window.len()
    }
}

/// The Lease's story so far.
#[derive(Debug, Clone)]
pub struct Tracker {
    lease: LeaseRef,
    /// The last observation of the Lease (`Some(None)`: seen to be missing).
    last: Option<Fetched<LeaseFacts>>,
    last_label: Option<&'static str>,
    changes_only: bool,
    pub gaps: Gaps,
    /// Set once a takeover was seen: a new holder after another, directly or after a spell
    /// with no holder (a release then an acquire) or no Lease.
    pub took_over: bool,
    /// The last holder seen, kept through a spell with no holder, no Lease or no access.
    last_holder: Option<String>,
    /// A renewTime older than the last one was seen (the server went back in time): `Some`
    /// until said, then `None` for good ([`Tracker::back_in_time`]).
    went_back: Option<bool>,
}

impl Tracker {
    /// `changes_only`: renewals that change nothing else are not reported.
    pub fn new(lease: LeaseRef, changes_only: bool) -> Tracker {
        Tracker {
            lease,
            last: None,
            last_label: None,
            changes_only,
            gaps: Gaps::default(),
            took_over: false,
            last_holder: None,
            went_back: Some(false),
        }
    }

    /// The warning that the server went back in time (a renewTime older than the last one
    /// seen), the first time only.
    pub fn back_in_time(&mut self) -> Option<String> {
        if self.went_back != Some(true) {
            return None;
        }
        self.went_back = None;
        Some(format!(
            "the API server sent Lease {} with a renewTime older than the last one seen (it went back in time, or \
             a stale replica answered); the older renewal is no gap and no row",
            self.lease
        ))
    }

    /// The current assessment at `now`.
    pub fn assess(&self, now: Timestamp) -> Option<LeaseAssessment> {
        self.last.as_ref().map(|f| lease::assess(&self.lease, f, now))
    }

    /// The Lease followed.
    pub fn lease(&self) -> &LeaseRef {
        &self.lease
    }

    /// The last observation of the Lease.
    pub fn last(&self) -> Option<&Fetched<LeaseFacts>> {
        self.last.as_ref()
    }

    /// Whether a tick at `now` would turn a fresh heartbeat stale (the moment a confirming
    /// read is due, [`crate::core::confirm`]).
    pub fn goes_stale(&self, now: Timestamp) -> bool {
        self.last_label == Some("fresh") && self.assess(now).is_some_and(|a| a.state.label() != "fresh")
    }

    /// When a fresh heartbeat goes stale: just past renewTime + 2 × duration (exactly at the
    /// limit still passes). `None` also when that is past the last instant a timestamp can
    /// hold (a renewTime near year 9999): it never goes stale within time as we count it.
    pub fn deadline(&self, now: Timestamp) -> Option<Timestamp> {
        match self.assess(now)?.state {
            LeaseState::Fresh { stale_in, .. } => {
                now.checked_add(stale_in.saturating_add(SignedDuration::from_micros(1))).ok()
            }
            _ => None,
        }
    }

    /// Feeds one observation; returns the changes to report (zero or one).
    pub fn observe(&mut self, obs: Observation, now: Timestamp) -> Vec<Change> {
        let previous = self.last.clone();
        let next = match obs {
            Observation::Tick => match &previous {
                Some(p) => p.clone(),
                None => return Vec::new(),
            },
            Observation::Lease(Some(f)) => Fetched::Found(f),
            Observation::Lease(None) => Fetched::Missing,
            Observation::Forbidden(rule) => Fetched::Forbidden(Denied { rule }),
        };
        // Older than the last renewal seen, same holder: no gap, no row, the newer one kept
        // (its deadline still comes, and the confirming read then decides); said once
        // ([`Tracker::back_in_time`]).
        if let (Some(Fetched::Found(old)), Fetched::Found(new)) = (&previous, &next)
            && old.holder() == new.holder()
            && old.renew_time.zip(new.renew_time).is_some_and(|(a, b)| b < a)
        {
            self.went_back = self.went_back.map(|_| true);
            return Vec::new();
        }
        let assessment = lease::assess(&self.lease, &next, now);
        let label = assessment.state.label();
        let label_changed = self.last_label != Some(label);
        let mut kinds: Vec<ChangeKind> = self.classify(previous.as_ref(), &next, label).into_iter().collect();
        if let Fetched::Found(f) = &next
            && let Some(h) = f.holder()
        {
            self.last_holder = Some(h.to_string());
        }
        // A takeover that ends a stale spell is also the moment it is fresh again.
        if matches!(kinds.first(), Some(ChangeKind::Takeover { .. })) && label_changed {
            kinds.push(if label == "fresh" { ChangeKind::Fresh { gap: None } } else { ChangeKind::Status });
        }
        self.last = Some(next);
        self.last_label = Some(label);
        kinds.into_iter().map(|kind| Change { kind, at: now, assessment: assessment.clone() }).collect()
    }

    /// The gap a renewal ends, counted with the others: from `old`'s renewal to `new`'s, when
    /// both are known and `new`'s is later (a Lease that is fresh again after a stale spell
    /// was renewed; one that was merely judged again at another `now` was not).
    fn renewal_gap(&mut self, old: &LeaseFacts, new: &LeaseFacts) -> Option<SignedDuration> {
        let gap = old.renew_time.zip(new.renew_time).map(|(a, b)| b.duration_since(a)).filter(|g| g.is_positive())?;
        self.gaps.push(gap);
        Some(gap)
    }

    /// `new` is held, by another than the last holder seen.
    fn handed_over(&self, new: &LeaseFacts) -> bool {
        matches!((self.last_holder.as_deref(), new.holder()), (Some(last), Some(now)) if last != now)
    }

    fn classify(
        &mut self,
        previous: Option<&Fetched<LeaseFacts>>,
        next: &Fetched<LeaseFacts>,
        label: &'static str,
    ) -> Option<ChangeKind> {
        let label_changed = self.last_label != Some(label);
        let Some(previous) = previous else { return Some(ChangeKind::Observed) };
        match (previous, next) {
            (Fetched::Found(_), Fetched::Missing) => Some(ChangeKind::Deleted),
            // Back from a spell without access to a new holder: the holder changed meanwhile.
            (Fetched::Forbidden(_), Fetched::Found(new)) if self.handed_over(new) => {
                self.took_over = true;
                Some(ChangeKind::Takeover {
                    from: self.last_holder.clone().unwrap_or_default(),
                    to: new.holder().unwrap_or_default().to_string(),
                    gap: None,
                    transitions: new.transitions,
                })
            }
            (Fetched::Missing, Fetched::Found(new)) => {
                // Created by another holder than the last: a holder change all the same.
                if self.handed_over(new) {
                    self.took_over = true;
                }
                Some(ChangeKind::Created)
            }
            (Fetched::Found(old), Fetched::Found(new)) => {
                // A holder after another, directly or after a release (a spell with no holder).
                if old.holder() != new.holder() && self.handed_over(new) {
                    self.took_over = true;
                    let gap = match (old.renew_time, new.renew_time.or(new.acquire_time)) {
                        (Some(a), Some(b)) => Some(b.duration_since(a)),
                        _ => None,
                    };
                    return Some(ChangeKind::Takeover {
                        from: self.last_holder.clone().unwrap_or_default(),
                        to: new.holder().unwrap_or_default().to_string(),
                        gap,
                        transitions: new.transitions,
                    });
                }
                if label_changed {
                    return Some(match label {
                        "fresh" => ChangeKind::Fresh { gap: self.renewal_gap(old, new) },
                        "stale" => ChangeKind::Stale,
                        _ => ChangeKind::Status,
                    });
                }
                if new.renew_time != old.renew_time && new.renew_time.is_some() {
                    let gap = old.renew_time.zip(new.renew_time).map(|(a, b)| b.duration_since(a));
                    if let Some(g) = gap {
                        self.gaps.push(g);
                    }
                    let half = new.duration_seconds.map(|d| SignedDuration::from_secs(i64::from(d)));
                    let slow = matches!((gap, half), (Some(g), Some(h)) if g > h);
                    return (!self.changes_only || slow).then_some(ChangeKind::Renewed { gap, slow });
                }
                None
            }
            _ if label_changed => Some(match label {
                "fresh" => ChangeKind::Fresh { gap: None },
                "stale" => ChangeKind::Stale,
                _ => ChangeKind::Status,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn at(secs: i64) -> Timestamp {
        t0() + SignedDuration::from_secs(secs)
    }

    fn lease(holder: &str, renewed: i64, transitions: i32) -> Observation {
        Observation::Lease(Some(LeaseFacts {
            holder: Some(holder.into()),
            renew_time: Some(at(renewed)),
            acquire_time: Some(at(0)),
            duration_seconds: Some(15),
            transitions: Some(transitions),
        }))
    }

    fn kinds(changes: Vec<Change>) -> Vec<String> {
        changes.into_iter().map(|c| c.kind.event().to_string()).collect()
    }

    #[test]
    fn renewals_then_stale_at_the_deadline_then_fresh() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        assert_eq!(kinds(t.observe(lease("a", 0, 0), at(0))), ["observed"]);
        assert_eq!(kinds(t.observe(lease("a", 2, 0), at(2))), ["renewed"]);
        assert_eq!(t.deadline(at(2)), Some(at(32) + SignedDuration::from_micros(1)));
        assert!(t.observe(Observation::Tick, at(32)).is_empty(), "exactly at the limit still passes");
        assert_eq!(kinds(t.observe(Observation::Tick, at(33))), ["stale"]);
        assert_eq!(t.deadline(at(33)), None);
        assert!(t.observe(Observation::Tick, at(40)).is_empty());
        let fresh = t.observe(lease("a", 41, 0), at(41));
        assert_eq!(fresh[0].kind, ChangeKind::Fresh { gap: Some(SignedDuration::from_secs(39)) }, "{fresh:?}");
        assert_eq!(t.gaps.count(), 2, "the renewal that ends the stale spell is a gap like the others");
        assert_eq!(t.gaps.max(), Some(SignedDuration::from_secs(39)));
    }

    #[test]
    fn a_slow_renewal_is_flagged_and_survives_changes_only() {
        let mut t = Tracker::new(LeaseRef::default(), true);
        t.observe(lease("a", 0, 0), at(0));
        assert!(t.observe(lease("a", 2, 0), at(2)).is_empty(), "a routine renewal is hidden");
        let c = t.observe(lease("a", 20, 0), at(20));
        assert_eq!(c[0].kind, ChangeKind::Renewed { gap: Some(SignedDuration::from_secs(18)), slow: true });
    }

    #[test]
    fn a_takeover_names_both_holders_and_the_gap() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 3), at(0));
        let c = t.observe(lease("b", 15, 4), at(15));
        assert_eq!(
            c[0].kind,
            ChangeKind::Takeover {
                from: "a".into(),
                to: "b".into(),
                gap: Some(SignedDuration::from_secs(15)),
                transitions: Some(4)
            }
        );
        assert!(t.took_over);
    }

    #[test]
    fn a_release_then_an_acquire_by_another_is_a_takeover_and_by_the_same_is_not() {
        let released = || {
            Observation::Lease(Some(LeaseFacts {
                holder: None,
                renew_time: Some(at(4)),
                acquire_time: Some(at(0)),
                duration_seconds: Some(1),
                transitions: Some(0),
            }))
        };
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 0), at(0));
        assert!(!kinds(t.observe(released(), at(4))).contains(&"takeover".to_string()));
        assert!(!t.took_over, "a release alone is no holder change");
        t.observe(lease("a", 5, 0), at(5));
        assert!(!t.took_over, "the same holder back is none either");
        t.observe(released(), at(6));
        let c = t.observe(lease("b", 7, 1), at(7));
        assert!(t.took_over, "a then nobody then b: the holder changed");
        assert!(matches!(&c[0].kind, ChangeKind::Takeover { from, to, .. } if from == "a" && to == "b"), "{c:?}");
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 0), at(0));
        t.observe(Observation::Lease(None), at(3));
        assert_eq!(kinds(t.observe(lease("b", 5, 1), at(5))), ["created"]);
        assert!(t.took_over, "deleted, then created by b");
    }

    #[test]
    fn a_late_takeover_is_stale_then_takeover_and_fresh() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 0), at(0));
        assert_eq!(kinds(t.observe(Observation::Tick, at(31))), ["stale"]);
        assert_eq!(kinds(t.observe(lease("b", 40, 1), at(40))), ["takeover", "fresh"]);
    }

    #[test]
    fn deleted_created_and_forbidden() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        assert_eq!(kinds(t.observe(Observation::Lease(None), at(0))), ["observed"]);
        assert_eq!(kinds(t.observe(lease("a", 1, 0), at(1))), ["created"]);
        assert_eq!(kinds(t.observe(Observation::Lease(None), at(2))), ["deleted"]);
        assert_eq!(kinds(t.observe(Observation::Forbidden("get leases".into()), at(3))), ["status"]);
        assert_eq!(kinds(t.observe(Observation::Forbidden("get leases".into()), at(4))), Vec::<String>::new());
    }

    #[test]
    fn a_new_holder_after_a_forbidden_spell_is_a_takeover() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 0), at(0));
        t.observe(Observation::Forbidden("get leases".into()), at(3));
        let c = t.observe(lease("b", 5, 1), at(5));
        assert!(matches!(&c[0].kind, ChangeKind::Takeover { from, to, .. } if from == "a" && to == "b"), "{c:?}");
        assert!(t.took_over);
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 0, 0), at(0));
        t.observe(Observation::Forbidden("get leases".into()), at(3));
        assert_eq!(kinds(t.observe(lease("a", 5, 0), at(5))), ["fresh"], "the same holder back");
        assert!(!t.took_over);
    }

    #[test]
    fn a_renewal_older_than_the_last_is_no_gap_and_said_once() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        t.observe(lease("a", 10, 0), at(10));
        assert!(t.observe(lease("a", 4, 0), at(11)).is_empty(), "no row");
        assert_eq!(t.gaps.count(), 0, "no negative gap");
        assert!(t.back_in_time().is_some_and(|w| w.contains("went back in time")));
        t.observe(lease("a", 2, 0), at(12));
        assert_eq!(t.back_in_time(), None, "said once");
        assert_eq!(kinds(t.observe(lease("a", 12, 0), at(12))), ["renewed"]);
        assert_eq!(t.gaps.max(), Some(SignedDuration::from_secs(2)), "from the latest renewal seen");
        // The kept renewal's deadline still comes.
        let late = at(12 + 2 * 30 + 1);
        assert!(t.goes_stale(late));
        assert_eq!(kinds(t.observe(Observation::Tick, late)), ["stale"]);
    }

    #[test]
    fn gap_statistics() {
        let mut t = Tracker::new(LeaseRef::default(), false);
        for (i, s) in [0, 2, 4, 9, 11].into_iter().enumerate() {
            t.observe(lease("a", s, 0), at(s));
            let _ = i;
        }
        assert_eq!(t.gaps.count(), 4);
        assert_eq!(t.gaps.median(), Some(SignedDuration::from_secs(2)));
        assert_eq!(t.gaps.max(), Some(SignedDuration::from_secs(5)));
    }

    #[test]
    fn the_gap_history_is_a_fixed_window() {
        let mut gaps = Gaps::default();
        assert_eq!((gaps.median(), gaps.max(), gaps.count()), (None, None, 0));
        // A week of renewals every 2 s, one of 90 s early on.
        let total = 7 * 24 * 3600 / 2;
        for i in 0..total {
            gaps.push(SignedDuration::from_secs(if i == 10 {
                90
            } else if i % 2 == 0 {
                2
            } else {
                3
            }));
            assert!(gaps.kept() <= GAP_WINDOW);
        }
        assert_eq!(gaps.kept(), GAP_WINDOW);
        assert_eq!(gaps.count(), total as u64);
        assert_eq!(gaps.max(), Some(SignedDuration::from_secs(90)), "the longest over the whole watch");
        assert_eq!(gaps.median(), Some(SignedDuration::from_secs(2)), "over the latest window: 128 of 2 s, 128 of 3 s");
        gaps.push(SignedDuration::from_secs(3));
        assert_eq!(gaps.median(), Some(SignedDuration::from_secs(3)));
        // the lower median of an even count, as before
        let mut few = Gaps::default();
        for s in [5, 1, 4, 2] {
            few.push(SignedDuration::from_secs(s));
        }
        assert_eq!(few.median(), Some(SignedDuration::from_secs(2)));
    }
}

//! The Leases a live mode follows, each a separate instance of the one heartbeat machine
//! ([`LiveLease`]), over one connection story ([`Link`]):
//! - dispatch's Lease, which decides: its rows, `--until` and the exit code;
//! - Kueue's manager's Lease, context: its own stream, its own timer, its own confirming read
//!   and its own outage story, said on stderr, never changing dispatch's rows, `--until` or
//!   the exit code.
//!
//! One restart of the API server is still one `watch interrupted` and one `watch resumed`
//! line: the link is one story, told once, and each instance asks it only about its own
//! streams ([`crate::core::link::Scope`]). No I/O, no clock: the driver
//! (`commands::live::Driver`) feeds it and makes the reads it asks for.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::confirm::Confirmed;
use super::fetched::Fetched;
use super::lease::{LeaseFacts, LeaseRef};
use super::link::{Link, LinkEvent};
use super::live_lease::{End, Ending, LiveLease, Setup, Step};

/// Which instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Dispatch,
    Kueue,
}

/// What one input came to, per instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Steps {
    /// dispatch's Lease's step; the link's own lines (interrupted, resumed, expired, the
    /// clock's warning) are said first in it.
    pub dispatch: Step,
    /// Kueue's manager's Lease's step: lines for stderr and its judgements; never an end.
    pub kueue: Step,
}

impl Steps {
    pub fn get(&self, which: Which) -> &Step {
        match which {
            Which::Dispatch => &self.dispatch,
            Which::Kueue => &self.kueue,
        }
    }

    /// The step of `which`, the other dropped.
    pub fn take(self, which: Which) -> Step {
        match which {
            Which::Dispatch => self.dispatch,
            Which::Kueue => self.kueue,
        }
    }

    /// Replaces the step of `which`.
    pub fn put(&mut self, which: Which, step: Step) {
        match which {
            Which::Dispatch => self.dispatch = step,
            Which::Kueue => self.kueue = step,
        }
    }

    fn of(which: Which, step: Step) -> Steps {
        let mut steps = Steps::default();
        steps.put(which, step);
        steps
    }
}

/// dispatch's Lease and, when the mode follows it, Kueue's manager's, over one link.
#[derive(Debug, Clone)]
pub struct Heartbeats {
    link: Link,
    dispatch: LiveLease,
    kueue: Option<LiveLease>,
    /// Each instance's wake as [`Heartbeats::wake`] last gave it: the timer wakes those due.
    wakes: [Option<Timestamp>; 2],
}

impl Heartbeats {
    /// `streams` share the link; dispatch's Lease decides, Kueue's (its stream context) does
    /// not.
    pub fn new(streams: usize, dispatch: Setup, kueue: Option<Setup>) -> Heartbeats {
        let link = match &kueue {
            Some(k) => Link::new(streams).with_context(k.stream),
            None => Link::new(streams),
        };
        let (dispatch, kueue) = (LiveLease::new(dispatch), kueue.map(LiveLease::new));
        Heartbeats { link, dispatch, kueue, wakes: [None; 2] }
    }

    /// The connection's story.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// dispatch's Lease.
    pub fn dispatch(&self) -> &LiveLease {
        &self.dispatch
    }

    /// Kueue's manager's Lease, when followed.
    pub fn kueue(&self) -> Option<&LiveLease> {
        self.kueue.as_ref()
    }

    /// The instance `which`, when followed.
    pub fn get(&self, which: Which) -> Option<&LiveLease> {
        match which {
            Which::Dispatch => Some(&self.dispatch),
            Which::Kueue => self.kueue.as_ref(),
        }
    }

    /// What stream `stream`'s connection did. A refusal ends the run, whichever stream it
    /// came from (a rejected credential ends every stream alike).
    pub fn link_event(&mut self, stream: usize, event: LinkEvent, now: Timestamp) -> Steps {
        if let LinkEvent::Refused(refusal) = event {
            return Steps {
                dispatch: Step { end: Some(End::Refused(refusal)), ..Step::default() },
                ..Steps::default()
            };
        }
        let said: Vec<String> = self.link.observe(stream, event.clone(), now).iter().map(|l| l.line()).collect();
        let mut dispatch = self.dispatch.linked(&self.link, stream, &event, now);
        dispatch.said.splice(0..0, said);
        let kueue = self.kueue.as_mut().map(|k| k.linked(&self.link, stream, &event, now)).unwrap_or_default();
        Steps { dispatch, kueue }
    }

    /// A Lease as a read or an event brought it (already checked for namespace and name).
    pub fn lease(&mut self, which: Which, read: Fetched<LeaseFacts>, now: Timestamp) -> Steps {
        let step = match self.split(which) {
            (link, Some(m)) => m.lease(link, read, now),
            (_, None) => Step::default(),
        };
        Steps::of(which, step)
    }

    /// `lease` is polled with get every `every` (said once per Lease, by dispatch's step).
    pub fn polled(&mut self, lease: &LeaseRef, every: Duration, rule: &str) -> Steps {
        let dispatch = self.dispatch.polled(lease, every, rule);
        if let Some(k) = self.kueue.as_mut().filter(|k| k.tracker().lease() == lease) {
            k.polled(lease, every, rule);
        }
        Steps { dispatch, ..Steps::default() }
    }

    /// The next moment to call [`Heartbeats::timer`]: the earliest instance's. Each
    /// instance's is kept, so that the timer wakes only the instances it was set for.
    pub fn wake(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.wakes = [self.dispatch.wake(now), self.kueue.as_ref().and_then(|k| k.wake(now))];
        self.wakes.into_iter().flatten().min()
    }

    /// Time passed to `now`: each instance whose wake came is judged, as it would be alone
    /// (the earliest always, should this machine's clock read a hair before it; dispatch's
    /// when no wake was set, a timer of the shell's).
    pub fn timer(&mut self, now: Timestamp) -> Steps {
        let [d, k] = self.wakes;
        let earliest = [d, k].into_iter().flatten().min().map_or(now, |e| e.max(now));
        let due = |w: Option<Timestamp>| w.is_some_and(|w| w <= earliest);
        let kueue = due(k) && self.kueue.is_some();
        let dispatch = due(d) || !kueue;
        let mut steps = Steps::default();
        if dispatch {
            steps.dispatch = self.dispatch.timer(&self.link, now);
        }
        if let Some(k) = self.kueue.as_mut().filter(|_| kueue) {
            steps.kueue = k.timer(&self.link, now);
        }
        steps
    }

    /// What the confirming read `which` asked for found at `now`.
    pub fn confirmed(&mut self, which: Which, read: Confirmed, now: Timestamp) -> Steps {
        let link = &mut self.link;
        let step = match which {
            Which::Dispatch => self.dispatch.confirmed(link, read, now),
            Which::Kueue => self.kueue.as_mut().map(|k| k.confirmed(link, read, now)).unwrap_or_default(),
        };
        Steps::of(which, step)
    }

    /// Whether judging dispatch's Lease at `now` would say more than was seen.
    pub fn holding(&mut self, now: Timestamp) -> bool {
        self.dispatch.holding(now)
    }

    /// The end the run has if it ends at `now` (dispatch's: Kueue's never decides it).
    pub fn ending(&self, now: Timestamp, closed: bool) -> Ending {
        self.dispatch.ending(&self.link, now, closed)
    }

    /// The link, and the instance `which` to feed.
    fn split(&mut self, which: Which) -> (&Link, Option<&mut LiveLease>) {
        match which {
            Which::Dispatch => (&self.link, Some(&mut self.dispatch)),
            Which::Kueue => (&self.link, self.kueue.as_mut()),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::core::heartbeat::ChangeKind;
    use crate::core::lease::LeaseFacts;
    use crate::core::link::Refusal;
    use crate::core::live_lease::{Role, Until};
    use crate::core::verdict::Verdict;

    fn at(secs: i64) -> Timestamp {
        "2026-11-30T12:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(secs)
    }

    /// Held by `holder`, renewed at second `renewed`, for 15 s (stale 30 s after).
    fn lease(holder: &str, renewed: i64) -> Fetched<LeaseFacts> {
        Fetched::Found(LeaseFacts {
            holder: Some(holder.into()),
            renew_time: Some(at(renewed)),
            acquire_time: Some(at(0)),
            duration_seconds: Some(15),
            transitions: Some(0),
        })
    }

    /// dispatch's Lease on stream 0, Kueue's on 1 (context), answered at 0 and renewed at 0.
    fn machine(until: Option<Until>) -> Heartbeats {
        let setup = Setup { lease: LeaseRef::default(), changes_only: false, until, stream: 0, role: Role::Deciding };
        let kueue =
            Setup { lease: LeaseRef::kueue_default(), changes_only: false, until, stream: 1, role: Role::Context };
        let mut m = Heartbeats::new(2, setup, Some(kueue));
        assert!(
            m.link_event(0, LinkEvent::Up, at(0)).dispatch.opened,
            "the Lease's stream answered: Kueue's may start"
        );
        assert!(!m.link_event(0, LinkEvent::Up, at(0)).dispatch.opened, "once");
        assert_eq!(kinds(&m.lease(Which::Dispatch, lease("a", 0), at(0)).dispatch), ["observed"]);
        m
    }

    fn kinds(step: &Step) -> Vec<&'static str> {
        step.rows.iter().map(|c| c.kind.event()).collect()
    }

    /// The timer at `now`, set a microsecond before (as the shell sets it when it sleeps).
    fn fire(m: &mut Heartbeats, now: Timestamp) -> Steps {
        m.wake(now - SignedDuration::from_micros(1));
        m.timer(now)
    }

    fn deadline() -> Timestamp {
        at(30) + SignedDuration::from_micros(1)
    }

    /// The Lease written back to an older renewTime: the event is passed over (said once), the
    /// kept renewal's deadline still comes, and the read that finds no later renewal makes it
    /// stale (it read "renewed" and restarted the watch for ever).
    #[test]
    fn a_lease_written_back_goes_stale_at_the_kept_deadline() {
        let mut m = machine(Some(Until::Stale));
        let step = m.lease(Which::Dispatch, lease("a", -600), at(5)).dispatch;
        assert!(step.rows.is_empty() && step.warning.is_some(), "{step:?}");
        assert!(fire(&mut m, deadline()).dispatch.confirm, "the read is asked");
        let step = m.confirmed(Which::Dispatch, Confirmed::Read(lease("a", -600)), deadline()).dispatch;
        assert_eq!(kinds(&step), ["stale"]);
        assert!(!step.restart && step.said.is_empty(), "{step:?}");
    }

    #[test]
    fn the_deadline_asks_for_a_read_and_stale_comes_only_from_it() {
        let mut m = machine(Some(Until::Stale));
        assert_eq!(m.wake(at(1)), Some(deadline()));
        assert!(!m.holding(at(30)), "fresh up to the limit itself");
        assert!(m.holding(deadline()), "past it, nothing is judged before the timer");
        let step = fire(&mut m, deadline()).dispatch;
        assert!(step.confirm && step.rows.is_empty() && step.end.is_none(), "{step:?}");
        let step = m.confirmed(Which::Dispatch, Confirmed::Read(lease("a", 0)), deadline()).dispatch;
        assert_eq!(kinds(&step), ["stale"]);
        assert_eq!(step.end, Some(End::Reached));
        assert!(!step.restart);
        assert_eq!(m.wake(deadline()), None);
    }

    #[test]
    fn a_read_that_finds_the_lease_renewed_says_the_watch_was_dead_and_never_stale() {
        let mut m = machine(Some(Until::Stale));
        assert!(fire(&mut m, deadline()).dispatch.confirm);
        let step = m.confirmed(Which::Dispatch, Confirmed::Read(lease("a", 29)), deadline()).dispatch;
        assert!(step.restart);
        assert_eq!(
            step.said,
            ["watch interrupted: no event in 30s while a read on a new connection found the Lease renewed; the \
              watch's connection is presumed dead; reconnecting"]
        );
        assert_eq!(kinds(&step), ["renewed"]);
        assert_eq!(step.end, None);
        assert_eq!(m.link_event(0, LinkEvent::Up, at(31)).dispatch.said, ["watch resumed"]);
    }

    #[test]
    fn no_answer_is_unknown_said_once_and_until_stale_is_not_reached() {
        let mut m = machine(Some(Until::Stale));
        assert!(fire(&mut m, deadline()).dispatch.confirm);
        let step =
            m.confirmed(Which::Dispatch, Confirmed::NoAnswer("no answer within 10s".into()), deadline()).dispatch;
        assert!(step.restart && step.rows.is_empty() && step.end.is_none(), "{step:?}");
        assert_eq!(step.said.len(), 2, "interrupted, then unknown: {step:?}");
        assert!(step.said[1].contains("heartbeat unknown"), "{step:?}");
        assert_eq!(fire(&mut m, at(40)).dispatch, Step::default(), "said once");
        let down = m.ending(at(40), false);
        assert!(matches!(&down, Ending::Down(Some(c)) if c.ends_with("no answer within 10s")), "{down:?}");
    }

    #[test]
    fn a_deadline_passed_in_an_outage_is_judged_again_a_moment_after_it_ends() {
        let mut m = machine(Some(Until::Stale));
        let cut = LinkEvent::Down("the API server closed the connection".into());
        assert_eq!(
            m.link_event(0, cut, at(2)).dispatch.said,
            ["watch interrupted: the API server closed the connection; reconnecting"]
        );
        let step = fire(&mut m, deadline()).dispatch;
        assert!(!step.confirm, "no read while cut off");
        assert_eq!(
            step.said,
            ["Lease dispatch-system/dispatch-admission: heartbeat unknown: its stale deadline passed while the \
              connection was down (the API server closed the connection); judged again when it is back"]
        );
        assert_eq!(m.ending(at(35), false), Ending::Down(Some("the API server closed the connection".into())));
        assert_eq!(m.link_event(0, LinkEvent::Up, at(40)).dispatch.said, ["watch resumed"]);
        assert_eq!(m.wake(at(40)), Some(at(41)));
        // The resumed watch replays what it missed: held until the moment after.
        assert_eq!(m.lease(Which::Dispatch, lease("a", 5), at(40)).dispatch, Step::default());
        assert!(m.holding(at(40)));
        let step = fire(&mut m, at(41)).dispatch;
        assert_eq!(kinds(&step), ["stale"], "the latest replayed, judged then");
        assert_eq!(step.end, Some(End::Reached));
    }

    #[test]
    fn kueues_stream_is_context_its_outage_never_makes_the_heartbeat_unknown() {
        let mut m = machine(Some(Until::Stale));
        m.link_event(1, LinkEvent::Up, at(0));
        assert_eq!(
            m.link_event(1, LinkEvent::Down("the API server failed (503: down)".into()), at(3)).dispatch.said.len(),
            1
        );
        assert!(fire(&mut m, deadline()).dispatch.confirm, "dispatch's deadline is judged as ever");
        let step = m.confirmed(Which::Dispatch, Confirmed::Read(lease("a", 0)), deadline()).dispatch;
        assert_eq!(step.end, Some(End::Reached));
        assert_eq!(m.ending(at(40), false), Ending::NotReached, "--timeout now: the code the rows give");
    }

    #[test]
    fn a_refusal_ends_and_a_polled_lease_is_said_once() {
        let mut m = machine(None);
        let refused = Refusal::Unauthorized { server: "https://k".into() };
        assert_eq!(
            m.link_event(0, LinkEvent::Refused(refused.clone()), at(1)).dispatch.end,
            Some(End::Refused(refused))
        );
        let every = Duration::from_secs(3);
        assert_eq!(m.polled(&LeaseRef::default(), every, "list leases").dispatch.said.len(), 1);
        assert!(m.polled(&LeaseRef::default(), every, "list leases").dispatch.said.is_empty());
        assert_eq!(m.dispatch().polling(), Some(every));
        assert_eq!(
            m.polled(&LeaseRef::kueue_default(), every, "list leases").dispatch.said.len(),
            1,
            "another Lease's own line"
        );
        assert_eq!(m.dispatch().polling(), Some(every));
    }

    #[test]
    fn the_end_at_a_timeout_or_a_closed_stdout() {
        let m = machine(Some(Until::Fresh));
        assert_eq!(m.ending(at(10), false), Ending::Verdict(Some(Verdict::Yes)));
        assert_eq!(m.ending(at(10), true), Ending::Reached, "a closed stdout counts --until reached");
        assert_eq!(machine(None).ending(at(10), false), Ending::Plain);
        assert_eq!(machine(Some(Until::HolderChange)).ending(at(10), false), Ending::NotReached);
        let mut m = machine(Some(Until::HolderChange));
        let step = m.lease(Which::Dispatch, lease("b", 5), at(5)).dispatch;
        assert!(matches!(step.rows[0].kind, ChangeKind::Takeover { .. }));
        assert_eq!(step.end, Some(End::Reached));
    }

    #[test]
    fn a_renewal_older_than_the_last_is_no_row_and_said_once() {
        let mut m = machine(None);
        m.lease(Which::Dispatch, lease("a", 10), at(10));
        let step = m.lease(Which::Dispatch, lease("a", 4), at(11)).dispatch;
        assert!(step.rows.is_empty() && step.judged);
        assert!(step.warning.is_some_and(|w| w.starts_with("Warning: the API server sent Lease")));
        assert_eq!(m.lease(Which::Dispatch, lease("a", 2), at(12)).dispatch.warning, None);
    }

    /// Kueue's manager's Lease renewed at 0 on its stream, dispatch's renewed at 20.
    fn with_kueue() -> Heartbeats {
        let mut m = machine(Some(Until::Stale));
        m.link_event(1, LinkEvent::Up, at(0));
        let step = m.lease(Which::Kueue, kueue(0), at(0));
        assert!(step.kueue.judged && step.dispatch == Step::default(), "{step:?}");
        m.lease(Which::Dispatch, lease("a", 20), at(20));
        m
    }

    fn kueue(renewed: i64) -> Fetched<LeaseFacts> {
        lease("kueue-controller-manager-0_1", renewed)
    }

    #[test]
    fn kueues_lease_goes_stale_by_its_own_timer_and_read_and_never_ends_the_run() {
        let mut m = with_kueue();
        assert_eq!(m.wake(at(21)), Some(deadline()), "Kueue's deadline comes first");
        let steps = fire(&mut m, deadline());
        assert!(steps.kueue.confirm && steps.dispatch == Step::default(), "only Kueue's is due: {steps:?}");
        let steps = m.confirmed(Which::Kueue, Confirmed::Read(kueue(0)), deadline());
        assert_eq!(kinds(&steps.kueue), ["stale"]);
        assert_eq!(steps.kueue.end, None, "Kueue's Lease never ends the run");
        assert_eq!(steps.dispatch, Step::default());
        let label = m.kueue().and_then(|k| k.tracker().assess(deadline())).map(|a| a.state.label());
        assert_eq!(label, Some("stale"));
        assert_eq!(m.wake(deadline()), Some(at(50) + SignedDuration::from_micros(1)), "dispatch's deadline next");
    }

    #[test]
    fn kueues_watch_found_dead_is_said_and_started_again_without_a_stale() {
        let mut m = with_kueue();
        assert!(fire(&mut m, deadline()).kueue.confirm);
        let steps = m.confirmed(Which::Kueue, Confirmed::Read(kueue(29)), deadline());
        assert!(steps.kueue.restart && !steps.dispatch.restart, "{steps:?}");
        assert_eq!(kinds(&steps.kueue), ["renewed"]);
        assert!(steps.kueue.said[0].starts_with("watch interrupted: no event in 30s"), "{steps:?}");
        assert_eq!(m.link_event(1, LinkEvent::Up, at(31)).dispatch.said, ["watch resumed"]);
    }

    #[test]
    fn one_restart_is_said_once_for_both_streams() {
        let mut m = with_kueue();
        let cut = || LinkEvent::Down("the API server closed the connection".into());
        assert_eq!(m.link_event(0, cut(), at(21)).dispatch.said.len(), 1);
        let steps = m.link_event(1, cut(), at(21));
        assert!(steps.dispatch.said.is_empty() && steps.kueue.said.is_empty(), "{steps:?}");
        assert!(m.link_event(0, LinkEvent::Up, at(24)).dispatch.said.is_empty(), "Kueue's is still down");
        assert_eq!(m.link_event(1, LinkEvent::Up, at(25)).dispatch.said, ["watch resumed"]);
    }

    #[test]
    fn kueues_outage_is_its_own_and_never_changes_dispatchs() {
        let mut m = with_kueue();
        let down = LinkEvent::Down("the API server failed (503: down)".into());
        assert_eq!(m.link_event(1, down, at(21)).dispatch.said.len(), 1, "told on stderr");
        let steps = fire(&mut m, deadline());
        assert!(!steps.kueue.confirm && steps.kueue.rows.is_empty(), "no read, no stale while cut off: {steps:?}");
        assert!(steps.kueue.said[0].starts_with("Lease kueue-system/c1f6bfd2.kueue.x-k8s.io: heartbeat unknown"));
        assert_eq!(m.ending(at(40), false), Ending::NotReached, "dispatch's end is dispatch's");
        assert!(!m.holding(at(40)));
        // dispatch's own deadline is judged as ever, and --until stale reached.
        let at50 = at(50) + SignedDuration::from_micros(1);
        assert!(fire(&mut m, at50).dispatch.confirm);
        let steps = m.confirmed(Which::Dispatch, Confirmed::Read(lease("a", 20)), at50);
        assert_eq!(steps.dispatch.end, Some(End::Reached));
        // Kueue's stream back: judged again a moment after, not before.
        m.link_event(1, LinkEvent::Up, at(51));
        assert_eq!(m.wake(at(51)), Some(at(52)));
        assert_eq!(m.lease(Which::Kueue, kueue(50), at(51)).kueue, Step::default(), "held until then");
        assert_eq!(kinds(&fire(&mut m, at(52)).kueue), ["renewed"]);
    }
}

//! dispatch's Lease followed live: the one pure heartbeat machine every live mode runs on
//! (`lease --watch`, `gate --watch`, `gate --wait`). It owns every rule of a heartbeat seen
//! through a connection:
//! - the connection's story ([`Link`]: interrupted, resumed, expired, a refusal that ends);
//! - the stale deadline as a timer, and `stale` only once a read confirms it
//!   ([`super::confirm`]): the machine asks for the read, the shell makes it and hands back
//!   what it found;
//! - the outage rule ([`Held`]): a deadline that passes while the connection is down is
//!   unknown, said once, and judged again a moment after the connection is back, the renewals
//!   the resumed watch replays being held until then;
//! - the Lease's own story ([`Tracker`]): renewals, takeovers (across an outage or a
//!   forbidden spell too), a renewTime that goes back in time, and `--until`.
//!
//! Its inputs are what the shell reads, each with `now`: a Lease observation (already checked
//! for namespace and name), a link event of any stream, the timer, and the confirming read.
//! Each gives a [`Step`]: the rows, the lines for stderr, whether to read the Lease now or
//! start its watch again, and the end. [`LiveLease::wake`] is the next moment to call
//! [`LiveLease::timer`]. No I/O, no clock: time is passed in.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::confirm::{self, Confirmed, Held, Judged};
use super::fetched::{Denied, Fetched};
use super::heartbeat::{Change, Observation, Tracker};
use super::lease::{LeaseFacts, LeaseRef, LeaseState};
use super::link::{Link, LinkEvent, Refusal, Scope};
use super::verdict::Verdict;

/// What `lease --watch --until` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The Lease is a live heartbeat.
    Fresh,
    /// The Lease is not a live heartbeat (stale, no holder, never renewed, or missing).
    Stale,
    /// Another holder takes the Lease.
    HolderChange,
}

/// What one input came to, in the order the shell acts on it: the lines for stderr, then the
/// rows, then the warning under them; then the read, the restart, the end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Lines for stderr (`watch interrupted: ...`, the unknown line, a polling line).
    pub said: Vec<String>,
    /// The Lease was judged at this moment (its rows may be none).
    pub judged: bool,
    /// The changes of the Lease's status: `lease --watch`'s rows.
    pub rows: Vec<Change>,
    /// Said on stderr after the rows (`Warning: ...`: the server went back in time).
    pub warning: Option<String>,
    /// Read the Lease now, on a connection of its own, and give what it found to
    /// [`LiveLease::confirmed`].
    pub confirm: bool,
    /// The Lease's watch was found dead: start it again.
    pub restart: bool,
    /// dispatch's Lease's stream was answered for the first time (what waits for it may start:
    /// Kueue's manager's Lease).
    pub opened: bool,
    pub end: Option<End>,
}

/// How the run ends, when an input ends it.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// `--until` was reached (exit 0).
    Reached,
    /// A stream was refused in a way retrying cannot change: the command's error.
    Refused(Refusal),
}

/// The end the run has at a moment the shell ends it (`--timeout`, a closed stdout).
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The connection is down: no state seen is current (the cause, `None` when never
    /// answered). An error.
    Down(Option<String>),
    /// `--until` is reached (exit 0).
    Reached,
    /// `--until fresh` not reached: the last state's one-shot verdict (`None`: nothing seen).
    Verdict(Option<Verdict>),
    /// `--until stale` or `holder-change` not reached (exit 5).
    NotReached,
    /// A plain watch ends well (exit 0).
    Plain,
}

/// A Lease as the live modes follow it: dispatch's, or Kueue's manager's (a separate
/// instance, `core::heartbeats`).
#[derive(Debug, Clone)]
pub struct LiveLease {
    tracker: Tracker,
    held: Held,
    /// The streams whose outage makes this Lease's heartbeat unknown.
    scope: Scope,
    /// The Lease's stream among the link's.
    stream: usize,
    until: Option<Until>,
    opened: bool,
    /// The cadence when the Lease is polled with get.
    polling: Option<Duration>,
    /// The Leases whose polling was said.
    polled: BTreeSet<String>,
    /// The latest read of a resumed watch, held until the moment to judge again.
    replayed: Option<Observation>,
}

/// How a [`LiveLease`] is set up: the Lease, its stream in the link and its role.
#[derive(Debug, Clone)]
pub struct Setup {
    pub lease: LeaseRef,
    /// Renewals that change nothing else make no row.
    pub changes_only: bool,
    pub until: Option<Until>,
    /// The Lease's stream.
    pub stream: usize,
    pub role: Role,
}

/// What a Lease is to the live mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// dispatch's Lease: its heartbeat stands on every stream that decides (an outage of any
    /// makes it unknown), and it makes the rows, `--until` and the exit code.
    Deciding,
    /// Kueue's manager's Lease: its own stream and its own outage story; it never ends the
    /// run, and its stream's outages never make dispatch's heartbeat unknown.
    Context,
}

impl LiveLease {
    pub fn new(setup: Setup) -> LiveLease {
        LiveLease {
            tracker: Tracker::new(setup.lease, setup.changes_only),
            held: Held::default(),
            scope: match setup.role {
                Role::Deciding => Scope::Deciding,
                Role::Context => Scope::Stream(setup.stream),
            },
            stream: setup.stream,
            until: setup.until.filter(|_| setup.role == Role::Deciding),
            opened: false,
            polling: None,
            polled: BTreeSet::new(),
            replayed: None,
        }
    }

    /// The Lease's story (rows, gaps, the last read).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// The Lease's stream among the link's.
    pub fn stream(&self) -> usize {
        self.stream
    }

    /// The cadence when the Lease is polled with get.
    pub fn polling(&self) -> Option<Duration> {
        self.polling
    }

    /// The last read of the Lease judged.
    pub fn last(&self) -> Option<&Fetched<LeaseFacts>> {
        self.tracker.last()
    }

    /// The next moment to call [`LiveLease::timer`]: the stale deadline, or the moment to judge
    /// again after an outage.
    pub fn wake(&self, now: Timestamp) -> Option<Timestamp> {
        [self.tracker.deadline(now), self.held.recheck()].into_iter().flatten().min()
    }

    /// Whether a judgement made from the Lease at `now` would say more than was seen: its
    /// deadline passed and [`LiveLease::timer`] has not judged that yet (a read to confirm it,
    /// or an outage), or the moment after an outage has not come.
    pub fn holding(&mut self, now: Timestamp) -> bool {
        self.tracker.goes_stale(now) || self.held.waiting(now)
    }

    /// Stream `stream`'s connection did `event`, which `link` has taken (and said).
    pub fn linked(&mut self, link: &Link, stream: usize, event: &LinkEvent, now: Timestamp) -> Step {
        let mut step = Step::default();
        if stream == self.stream && *event == LinkEvent::Up && !std::mem::replace(&mut self.opened, true) {
            step.opened = true;
        }
        // Back after the deadline passed unseen: judged again in a moment.
        if link.down(self.scope).is_none() {
            self.held.back(now);
        }
        step
    }

    /// `lease` is polled with get every `every`, list and watch on it being forbidden (`rule`
    /// would allow them): said once per Lease.
    pub fn polled(&mut self, lease: &LeaseRef, every: Duration, rule: &str) -> Step {
        if *lease == *self.tracker.lease() {
            self.polling = Some(every);
        }
        let said = self.polled.insert(lease.to_string()).then(|| polling_line(lease, every, rule));
        Step { said: said.into_iter().collect(), ..Step::default() }
    }

    /// The Lease as a read or an event brought it. Right after an outage in which its deadline
    /// passed, the resumed watch replays what it missed, each renewal older than the last:
    /// judged at `now` they would read stale, so only the latest is judged, at the moment
    /// after ([`LiveLease::timer`]).
    pub fn lease(&mut self, link: &Link, read: Fetched<LeaseFacts>, now: Timestamp) -> Step {
        if let Fetched::Forbidden(Denied { rule }) = read {
            return self.judge(link, Observation::Forbidden(rule), now);
        }
        let waiting = self.held.waiting(now);
        self.held.seen(now);
        let kept = self.replayed.take();
        match waiting {
            true => {
                self.replayed = Some(newest(kept, observation(read)));
                Step::default()
            }
            false => self.judge(link, observation(read), now),
        }
    }

    /// Time passed to `now` (the deadline, the moment after an outage, or another timer of the
    /// shell's). Cut off, a renewal could not be seen: the heartbeat is unknown, not stale, and
    /// judged again when the connection is back. Live, a fresh Lease turns stale only once a
    /// read confirms it: the step asks for the read.
    pub fn timer(&mut self, link: &Link, now: Timestamp) -> Step {
        if let Some(cause) = link.down(self.scope) {
            return self.unknown(cause.as_deref(), now);
        }
        match (self.held.waiting(now), self.replayed.take()) {
            (true, replayed) => {
                self.replayed = replayed;
                Step::default()
            }
            (false, Some(replayed)) => self.judge(link, replayed, now),
            (false, None) if self.tracker.goes_stale(now) => Step { confirm: true, ..Step::default() },
            (false, None) => self.judge(link, Observation::Tick, now),
        }
    }

    /// What the confirming read found at `now`. Not renewed: judged (stale). Renewed: the watch
    /// was dead: said, started again, and the read judged (no stale). No answer: the outage
    /// rule (unknown).
    pub fn confirmed(&mut self, link: &mut Link, read: Confirmed, now: Timestamp) -> Step {
        let (read, cause) = match confirm::judge(self.tracker.last(), read, self.held.quiet(now)) {
            // Not renewed: the Lease kept is judged now, stale (the read may hold an older
            // renewTime than the one kept, which the tracker passes over as going back).
            Judged::Stale(_) => return self.judge(link, Observation::Tick, now),
            Judged::WatchDead { read, cause } => (Some(read), cause),
            Judged::Unknown(cause) => (None, cause),
        };
        let down = LinkEvent::Down(cause.clone());
        let said = link.observe(self.stream, down.clone(), now).iter().map(|l| l.line()).collect();
        let mut step = Step { said, restart: true, ..self.linked(link, self.stream, &down, now) };
        self.held.seen(now);
        let then = match read {
            Some(read) => self.judge(link, observation(read), now),
            None => self.unknown(Some(&cause), now),
        };
        step.said.extend(then.said);
        Step { rows: then.rows, judged: then.judged, warning: then.warning, end: then.end, ..step }
    }

    /// The end the run has if it ends at `now`: at `--timeout` (`closed` false), or because
    /// nobody reads its stdout any more (`closed`: `--until` reached then counts as reached).
    pub fn ending(&self, link: &Link, now: Timestamp, closed: bool) -> Ending {
        if let Some(cause) = link.down(self.scope) {
            return Ending::Down(cause);
        }
        match self.until {
            Some(until) if closed && self.reached(link, until, now) => Ending::Reached,
            None => Ending::Plain,
            Some(Until::Fresh) => Ending::Verdict(self.tracker.assess(now).map(|a| a.state.verdict())),
            Some(_) => Ending::NotReached,
        }
    }

    /// The stale deadline passed while the connection was down: said once.
    fn unknown(&mut self, cause: Option<&str>, now: Timestamp) -> Step {
        let said = (self.tracker.deadline(now).is_none() && self.held.unknown())
            .then(|| unknown_line(self.tracker.lease(), cause));
        Step { said: said.into_iter().collect(), ..Step::default() }
    }

    /// Judges an observation: its rows, the warning, and whether `--until` is reached.
    fn judge(&mut self, link: &Link, observation: Observation, now: Timestamp) -> Step {
        let rows = self.tracker.observe(observation, now);
        let warning = self.tracker.back_in_time().map(|w| format!("Warning: {w}"));
        let end = self.until.filter(|u| self.reached(link, *u, now)).map(|_| End::Reached);
        Step { judged: true, rows, warning, end, ..Step::default() }
    }

    /// Whether `--until` is reached. Stale is a fact only the connection backs: while it is
    /// down a renewal could have been missed, so the heartbeat is unknown and stale is not
    /// reached.
    fn reached(&self, link: &Link, until: Until, now: Timestamp) -> bool {
        let state = self.tracker.assess(now).map(|a| a.state);
        match until {
            Until::Fresh => matches!(state, Some(LeaseState::Fresh { .. })),
            Until::Stale if link.down(self.scope).is_some() => false,
            Until::Stale => {
                matches!(state, Some(s) if !matches!(s, LeaseState::Fresh { .. } | LeaseState::Forbidden { .. }))
            }
            Until::HolderChange => self.tracker.took_over,
        }
    }
}

/// Of two reads a resumed watch replayed, the one to judge: the later, unless it renews the
/// same holder's Lease at an older time than the one kept (a server that went back in time
/// must not turn the replay stale).
fn newest(kept: Option<Observation>, read: Observation) -> Observation {
    match (kept, &read) {
        (Some(Observation::Lease(Some(old))), Observation::Lease(Some(new)))
            if old.holder() == new.holder() && old.renew_time.zip(new.renew_time).is_some_and(|(a, b)| b < a) =>
        {
            Observation::Lease(Some(old))
        }
        _ => read,
    }
}

/// A read of the Lease as the tracker takes it.
fn observation(read: Fetched<LeaseFacts>) -> Observation {
    match read {
        Fetched::Found(f) => Observation::Lease(Some(f)),
        Fetched::Missing => Observation::Lease(None),
        Fetched::Forbidden(d) => Observation::Forbidden(d.rule),
    }
}

/// Said once on stderr when the Lease's stale deadline passes while the connection is down.
pub fn unknown_line(lease: &LeaseRef, cause: Option<&str>) -> String {
    let cause = cause.unwrap_or("the API server has not answered yet");
    format!(
        "Lease {lease}: heartbeat unknown: its stale deadline passed while the connection was down ({cause}); \
         judged again when it is back"
    )
}

/// Said once on stderr when a Lease is polled rather than watched.
pub fn polling_line(lease: &LeaseRef, every: Duration, rule: &str) -> String {
    format!(
        "polling Lease {lease} with get every {}: list and watch on it are forbidden (missing RBAC: {rule})",
        super::duration::go_duration(every)
    )
}

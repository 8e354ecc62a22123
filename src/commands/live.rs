//! The live loop both live commands run on, `lease --watch` and `gate --watch`/`--wait`: one
//! `select!` over the shutdown signal, the give-up time (`--timeout`), the command's own timer
//! (the moment the Lease goes stale), the watches' updates and the status line's second; and a
//! closed stdout ending the command quietly, with the code its `--timeout` would give at that
//! moment. Each command keeps only what it makes of an update.
//!
//! [`Driver`] runs the one heartbeat machine ([`LiveLease`]) for both: it feeds the machine
//! what the streams bring and the timer, makes the confirming read the machine asks for (on a
//! connection of its own) and starts the watch it finds dead. The shell only reads and
//! writes: the rules are the machine's.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Interval};

use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;

use super::sleep_opt;
use crate::clock::Clock;
use crate::cluster::connecting::connect::Connection;
use crate::cluster::watching::reflector::Restart;
use crate::core::confirm::Confirmed;
use crate::core::fetched::Fetched;
use crate::core::heartbeats::{Heartbeats, Steps, Which};
use crate::core::lease::{LeaseFacts, LeaseRef};
use crate::core::link::LinkEvent;
use crate::core::live_lease::Ending;
use crate::error::Error;
use crate::exit::Exit;

/// What woke the loop.
pub enum Woke<U> {
    /// Ctrl-C or SIGTERM (in tests, any future).
    Shutdown,
    /// `--timeout` ran out.
    TimedOut,
    /// The command's timer fired.
    Timer,
    /// A second passed, for the status line.
    Tick,
    Update(U),
    /// Every watch ended.
    Ended,
}

/// The updates, the shutdown signal and the time limit of one live run.
pub struct LiveLoop<S, F> {
    updates: Pin<Box<S>>,
    shutdown: Pin<Box<F>>,
    give_up: Option<Instant>,
    /// `--timeout 0`: check once, as `kubectl wait --timeout=0`: the time is up once the first
    /// state was judged ([`LiveLoop::judged`]), not before anything was read.
    once: bool,
    tick: Option<Interval>,
}

impl<S: Stream, F: Future<Output = ()>> LiveLoop<S, F> {
    /// `timeout` counts from now; `ticking` adds a tick each second (a terminal's status line).
    pub fn new(updates: S, shutdown: F, timeout: Option<Duration>, ticking: bool) -> Self {
        let tick = ticking.then(|| {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            tick
        });
        let once = timeout.is_some_and(|t| t.is_zero());
        LiveLoop {
            updates: Box::pin(updates),
            shutdown: Box::pin(shutdown),
            give_up: timeout.filter(|_| !once).and_then(|t| Instant::now().checked_add(t)),
            once,
            tick,
        }
    }

    /// The time left to `--timeout`, if one was given.
    pub fn left(&self) -> Option<Duration> {
        self.give_up.map(|g| g.saturating_duration_since(Instant::now()))
    }

    /// Says a state was judged: with `--timeout 0`, the time is up now.
    pub fn judged(&mut self) {
        if std::mem::take(&mut self.once) {
            self.give_up = Some(Instant::now());
        }
    }

    /// Waits for the next thing to act on, `timer` being the command's own deadline, if any.
    /// The shutdown comes first, then the give-up time, the timer, an update, a tick.
    pub async fn next(&mut self, timer: Option<Instant>) -> Woke<S::Item> {
        let ticking = self.tick.is_some();
        let tick = async {
            match self.tick.as_mut() {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = self.shutdown.as_mut() => Woke::Shutdown,
            _ = sleep_opt(self.give_up) => Woke::TimedOut,
            _ = sleep_opt(timer) => Woke::Timer,
            update = self.updates.next() => match update {
                Some(u) => Woke::Update(u),
                None => Woke::Ended,
            },
            _ = tick, if ticking => Woke::Tick,
        }
    }
}

/// The read that confirms dispatch's Lease stale ([`crate::core::confirm`]), and the restart
/// of its watch when the read finds the watch dead. The product reads the Lease on a new
/// connection ([`confirmer`]); a test answers as it scripts.
pub struct Confirmer {
    /// Reads the Lease, given the last read the watch brought (which a test may echo) and the
    /// time left to `--timeout`.
    pub read: Box<ReadLease>,
    pub restart: Restart,
}

/// A confirming read: given the last read the watch brought and the time left to `--timeout`.
pub type ReadLease = dyn FnMut(Option<&Fetched<LeaseFacts>>, Option<Duration>) -> BoxFuture<'static, Confirmed>;

/// The product's [`Confirmer`] of `lease`, whose watch `restart` starts again.
pub fn confirmer(conn: &Connection, lease: &LeaseRef, restart: Restart) -> Confirmer {
    let (conn, lease) = (conn.clone(), lease.clone());
    let read = move |last: Option<&Fetched<LeaseFacts>>, left: Option<Duration>| -> BoxFuture<'static, Confirmed> {
        let duration = last.and_then(|l| l.found()).and_then(|f| f.duration_seconds);
        let (conn, lease) = (conn.clone(), lease.clone());
        Box::pin(async move { crate::cluster::watching::confirm::read(&conn, &lease, duration, left).await })
    };
    Confirmer { read: Box::new(read), restart }
}

impl Confirmer {
    /// A confirmer whose read finds the Lease as the watch last brought it (not renewed), or
    /// answers `answer` when given: for a loop fed scripted updates (tests, golden files).
    pub fn scripted(answer: Option<Confirmed>) -> (Confirmer, crate::cluster::watching::reflector::Restarts) {
        let (restart, restarts) = crate::cluster::watching::reflector::restart();
        let read = move |last: Option<&Fetched<LeaseFacts>>, _: Option<Duration>| -> BoxFuture<'static, Confirmed> {
            let got = answer.clone().unwrap_or_else(|| Confirmed::Read(last.cloned().unwrap_or(Fetched::Missing)));
            Box::pin(std::future::ready(got))
        };
        (Confirmer { read: Box::new(read), restart }, restarts)
    }
}

/// An update of a live mode's streams, as the machine takes it.
pub enum Feed<U> {
    /// dispatch's Lease, read or brought by an event (already checked for namespace and name).
    Lease(Fetched<LeaseFacts>),
    /// Kueue's manager's Lease, as its own stream brought it.
    Kueue(Fetched<LeaseFacts>),
    /// What a stream's connection did (by its index in the link).
    Link(usize, LinkEvent),
    /// A Lease is polled with get, list and watch being forbidden (`rule`).
    Polling { lease: LeaseRef, every: Duration, rule: String },
    /// What only the command takes (the gate's other facts).
    Own(U),
    /// Nothing to act on.
    Nothing,
}

/// What woke a live mode, the machine's part done.
pub enum Woken<U> {
    /// What the Leases' instances made of an update of theirs, or of the timer.
    Steps(Box<Steps>),
    /// An update the command takes itself.
    Own(U),
    /// A second passed, for the status line.
    Tick,
    /// `--timeout` ran out: the end the machine has now.
    TimedOut(Ending),
    /// Ctrl-C or SIGTERM.
    Shutdown,
    /// Every stream ended.
    Ended,
}

/// The confirming reads of the Leases a live mode follows: dispatch's and Kueue's manager's.
pub struct Confirmers {
    pub dispatch: Confirmer,
    pub kueue: Confirmer,
}

impl Confirmers {
    /// dispatch's confirmer scripted as [`Confirmer::scripted`] says (the restarts of its
    /// watch returned), and Kueue's finding the Lease as its watch last brought it.
    pub fn scripted(answer: Option<Confirmed>) -> (Confirmers, crate::cluster::watching::reflector::Restarts) {
        let (dispatch, restarts) = Confirmer::scripted(answer);
        (Confirmers { dispatch, kueue: Confirmer::scripted(None).0 }, restarts)
    }
}

/// The one driver of the heartbeat machine: the loop over the streams and timers, the
/// Leases' instances ([`Heartbeats`]), and the confirming reads each asks for.
pub struct Driver<S, F> {
    pub live: LiveLoop<S, F>,
    pub beats: Heartbeats,
    confirm: Confirmers,
}

impl<S: Stream, F: Future<Output = ()>> Driver<S, F> {
    pub fn new(live: LiveLoop<S, F>, beats: Heartbeats, confirm: Confirmers) -> Self {
        Driver { live, beats, confirm }
    }

    /// Waits for the next thing to act on: an update (made into a [`Feed`] by `feed`), the
    /// machine's timer, a tick, the timeout or the end.
    pub async fn next<U>(&mut self, clock: &dyn Clock, feed: impl FnOnce(S::Item) -> Feed<U>) -> Woken<U> {
        let now = clock.now();
        let at = self.beats.wake(now).and_then(|w| Instant::now().checked_add(until(now, w)));
        let steps = match self.live.next(at).await {
            Woke::Shutdown => return Woken::Shutdown,
            Woke::Ended => return Woken::Ended,
            Woke::TimedOut => return Woken::TimedOut(self.beats.ending(clock.now(), false)),
            Woke::Tick => return Woken::Tick,
            Woke::Timer => self.beats.timer(clock.now()),
            Woke::Update(u) => {
                let now = clock.now();
                match feed(u) {
                    Feed::Lease(read) => self.beats.lease(Which::Dispatch, read, now),
                    Feed::Kueue(read) => self.beats.lease(Which::Kueue, read, now),
                    Feed::Link(stream, event) => self.beats.link_event(stream, event, now),
                    Feed::Polling { lease, every, rule } => self.beats.polled(&lease, every, &rule),
                    Feed::Own(u) => return Woken::Own(u),
                    Feed::Nothing => Steps::default(),
                }
            }
        };
        Woken::Steps(Box::new(self.settle(steps, clock).await))
    }

    /// Makes the confirming reads the steps ask for and hands what each found to its
    /// instance; starts a watch again when its instance finds it dead.
    async fn settle(&mut self, mut steps: Steps, clock: &dyn Clock) -> Steps {
        for which in [Which::Dispatch, Which::Kueue] {
            let confirm = match which {
                Which::Dispatch => &mut self.confirm.dispatch,
                Which::Kueue => &mut self.confirm.kueue,
            };
            let Some(machine) = self.beats.get(which) else { continue };
            if steps.get(which).confirm {
                let read = (confirm.read)(machine.last(), self.live.left()).await;
                let confirmed = self.beats.confirmed(which, read, clock.now());
                steps.put(which, confirmed.take(which));
            }
            if steps.get(which).restart {
                confirm.restart.now();
            }
        }
        steps
    }
}

/// The non-negative time from `now` to `deadline`.
fn until(now: Timestamp, deadline: Timestamp) -> Duration {
    Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO)
}

/// The error a refused stream ends a live mode with.
pub fn refused(refusal: crate::core::link::Refusal) -> Error {
    crate::cluster::watching::reflector::refused(refusal)
}

/// The YAML documents a live mode has written, for the `---` between them.
#[derive(Debug, Default)]
pub struct Documents(usize);

impl Documents {
    /// The index of the document about to be written (counted as written).
    pub fn count_one(&mut self) -> usize {
        self.0 += 1;
        self.0 - 1
    }
}

/// Where a live mode's lines that are no table rows go: stderr with `--no-headers` (stdout
/// then holds rows only), else stdout; as the one-shot gate's [`crate::render::gate::Lines`].
pub fn notes<'a>(deps: &'a mut super::Deps<'_>, no_headers: bool) -> crate::render::gate::Lines<'a> {
    crate::render::gate::Lines {
        out: &mut *deps.out,
        notes: no_headers.then_some(&mut *deps.err as &mut dyn std::io::Write),
    }
}

/// `--wait`'s one print into a closed stdout (`| head -1`): nothing more to do, and the
/// verdict's code stands, as in the one-shot verbs.
pub fn unless_closed(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `gate --watch`'s end: nobody reading any more (`| head`) ends it, quietly, with 0, the
/// code its `--timeout` gives (`lease --watch` and `gate --wait` keep their verdict's code).
pub fn ended(result: Result<Exit, Error>) -> Result<Exit, Error> {
    match result {
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Success),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use futures::stream;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn shutdown_comes_first_then_the_time_limit_then_the_timer() {
        let mut live = LiveLoop::new(stream::pending::<u8>(), std::future::ready(()), Some(Duration::ZERO), true);
        assert!(matches!(live.next(Some(Instant::now())).await, Woke::Shutdown));
        let mut live =
            LiveLoop::new(stream::pending::<u8>(), std::future::pending(), Some(Duration::from_secs(5)), false);
        let started = Instant::now();
        assert!(matches!(live.next(Some(started + Duration::from_secs(2))).await, Woke::Timer));
        assert!(matches!(live.next(None).await, Woke::TimedOut));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn updates_then_their_end_and_ticks_only_when_asked() {
        let mut live = LiveLoop::new(stream::iter([7u8]), std::future::pending(), None, false);
        assert!(matches!(live.next(None).await, Woke::Update(7)));
        assert!(matches!(live.next(None).await, Woke::Ended));
        let mut live = LiveLoop::new(stream::pending::<u8>(), std::future::pending(), None, true);
        assert!(matches!(live.next(None).await, Woke::Tick), "the first tick is at once");
        let started = Instant::now();
        assert!(matches!(live.next(None).await, Woke::Tick));
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn a_closed_pipe_ends_quietly() {
        let closed = Error::Output(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(ended(Err(closed)).unwrap(), Exit::Success);
        let full = Error::Output(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(ended(Err(full)).is_err());
    }
}

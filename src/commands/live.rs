//! The live loop both live commands run on, `lease --watch` and `gate --watch`/`--wait`: one
//! `select!` over the shutdown signal, the give-up time (`--timeout`), the command's own timer
//! (the moment the Lease goes stale), the watches' updates and the status line's second; the
//! connection's interrupted/resumed lines; and a closed stdout ending the command quietly,
//! with the code its `--timeout` would give at that moment.
//! Each command keeps only what it makes of an update.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Interval};

use super::sleep_opt;
use crate::core::lease::LeaseRef;
use crate::core::link::{Link, LinkEvent};
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
        LiveLoop {
            updates: Box::pin(updates),
            shutdown: Box::pin(shutdown),
            give_up: timeout.and_then(|t| Instant::now().checked_add(t)),
            tick,
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

/// What both live modes do with their streams' connection: the one story of the link
/// ([`Link`]), a refusal ending the command, each polled Lease said once, and `--timeout`
/// in an outage being an error.
pub struct ConnectionStory {
    pub link: Link,
    polled: std::collections::BTreeSet<String>,
}

impl ConnectionStory {
    pub fn new(streams: usize) -> ConnectionStory {
        ConnectionStory { link: Link::new(streams), polled: Default::default() }
    }

    /// What stream `stream`'s connection did: the lines to say on stderr (`None`: nothing), or
    /// the error a refusal ends the command with.
    pub fn event(
        &mut self,
        stream: usize,
        event: LinkEvent,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<Option<String>, Error> {
        match event {
            LinkEvent::Refused(refusal) => Err(crate::cluster::watching::reflector::refused(refusal)),
            event => Ok(connection_lines(&mut self.link, stream, event, now)),
        }
    }

    /// A Lease polled with get rather than watched: its line, the first time only.
    pub fn polling(&mut self, lease: &crate::core::lease::LeaseRef, every: Duration, rule: &str) -> Option<String> {
        self.polled.insert(lease.to_string()).then(|| polling_line(lease, every, rule))
    }

    /// `--timeout` came: an error when the connection is down then (no state seen is
    /// current), else `Ok` for the command's own end.
    pub fn timed_out(&self, timeout: Option<Duration>) -> Result<(), Error> {
        match (self.link.down_at_timeout(), timeout) {
            (Some(cause), Some(timeout)) => Err(Error::DownAtTimeout { timeout, cause }),
            _ => Ok(()),
        }
    }
}

/// Said once on stderr when the Lease is polled rather than watched.
pub fn polling_line(lease: &LeaseRef, every: Duration, rule: &str) -> String {
    format!(
        "polling Lease {lease} with get every {}: list and watch on it are forbidden (missing RBAC: {rule})",
        crate::core::duration::go_duration(every)
    )
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

/// What the connection did, as the lines to say on stderr (`watch interrupted: ...`, `watch
/// resumed`), one text; `None` when there is nothing to say.
pub fn connection_lines(
    link: &mut Link,
    stream: usize,
    event: LinkEvent,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<String> {
    let said: Vec<String> = link.observe(stream, event, now).iter().map(|l| l.line()).collect();
    (!said.is_empty()).then(|| said.join("\n"))
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

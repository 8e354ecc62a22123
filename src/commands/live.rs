//! The live loop both live commands run on, `lease --watch` and `gate --watch`/`--wait`: one
//! `select!` over the shutdown signal, the give-up time (`--timeout`), the command's own timer
//! (the moment the Lease goes stale), the watches' updates and the status line's second; the
//! connection's interrupted/resumed lines; and a closed stdout ending the command quietly.
//! Each command keeps only what it makes of an update.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Interval};

use super::sleep_opt;
use crate::core::link::{Link, LinkEvent};
use crate::error::Error;
use crate::exit::Exit;

/// What woke the loop.
pub enum Woke<U> {
    /// Ctrl-C or SIGTERM (in tests, any future).
    Shutdown,
    /// `--timeout` ran out.
    GaveUp,
    /// The command's timer fired.
    Timer,
    /// A second passed, for the status line.
    Tick,
    Update(U),
    /// Every watch ended.
    Ended,
}

/// The updates, the shutdown signal and the time limit of one live run.
pub struct Live<S, F> {
    updates: Pin<Box<S>>,
    shutdown: Pin<Box<F>>,
    give_up: Option<Instant>,
    tick: Option<Interval>,
}

impl<S: Stream, F: Future<Output = ()>> Live<S, F> {
    /// `timeout` counts from now; `ticking` adds a tick each second (a terminal's status line).
    pub fn new(updates: S, shutdown: F, timeout: Option<Duration>, ticking: bool) -> Self {
        let tick = ticking.then(|| {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            tick
        });
        Live {
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
            _ = sleep_opt(self.give_up) => Woke::GaveUp,
            _ = sleep_opt(timer) => Woke::Timer,
            update = self.updates.next() => match update {
                Some(u) => Woke::Update(u),
                None => Woke::Ended,
            },
            _ = tick, if ticking => Woke::Tick,
        }
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

/// A live command's end: nobody reading any more (`| head`) ends it, quietly and successfully.
pub fn ended(result: Result<Exit, Error>) -> Result<Exit, Error> {
    match result {
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Yes),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use futures::stream;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn shutdown_comes_first_then_the_time_limit_then_the_timer() {
        let mut live = Live::new(stream::pending::<u8>(), std::future::ready(()), Some(Duration::ZERO), true);
        assert!(matches!(live.next(Some(Instant::now())).await, Woke::Shutdown));
        let mut live = Live::new(stream::pending::<u8>(), std::future::pending(), Some(Duration::from_secs(5)), false);
        let started = Instant::now();
        assert!(matches!(live.next(Some(started + Duration::from_secs(2))).await, Woke::Timer));
        assert!(matches!(live.next(None).await, Woke::GaveUp));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn updates_then_their_end_and_ticks_only_when_asked() {
        let mut live = Live::new(stream::iter([7u8]), std::future::pending(), None, false);
        assert!(matches!(live.next(None).await, Woke::Update(7)));
        assert!(matches!(live.next(None).await, Woke::Ended));
        let mut live = Live::new(stream::pending::<u8>(), std::future::pending(), None, true);
        assert!(matches!(live.next(None).await, Woke::Tick), "the first tick is at once");
        let started = Instant::now();
        assert!(matches!(live.next(None).await, Woke::Tick));
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn a_closed_pipe_ends_quietly() {
        let closed = Error::Output(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(ended(Err(closed)).unwrap(), Exit::Yes);
        let full = Error::Output(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(ended(Err(full)).is_err());
    }
}

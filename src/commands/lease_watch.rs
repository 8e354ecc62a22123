//! `kubectl dispatch lease --watch`: one watch on the one Lease, plus a timer set for the
//! moment it goes stale. A Lease nobody renews sends no events, so the timer, not the server,
//! reports "stale". Faults (a closed watch, 410, an apiserver restart, a lost connection, a
//! forbidden watch) are survived: kube's watcher reconnects, with a capped backoff.

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::{Deps, sleep_opt};
use crate::cli::{Format, Until};
use crate::cluster::connect::Connection;
use crate::cluster::watch::{self, LeaseUpdate};
use crate::core::heartbeat::{Change, Observation, Tracker};
use crate::core::lease::{LeaseRef, LeaseState};
use crate::error::Error;
use crate::exit::Exit;
use crate::render::watch::{Columns, change_doc, status_line, summary};
use crate::settings::{LeaseWatch, Output};

pub async fn run(
    conn: &Connection,
    lease: &LeaseRef,
    output: Output,
    opts: LeaseWatch,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let updates = watch::lease(conn, lease);
    let live_line = deps.style.live;
    match follow(updates, lease, output, opts, live_line, super::shutdown(), deps).await {
        // Nobody reads any more (`| head`): that ends a watch, quietly and successfully.
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Yes),
        other => other,
    }
}

/// The watch loop, over any stream of updates (kube's watcher in the product, a script in
/// tests) and any shutdown signal. Ends on shutdown, on `--until`, on `--timeout`, or when
/// stdout is closed.
pub async fn follow(
    updates: impl Stream<Item = LeaseUpdate>,
    lease: &LeaseRef,
    output: Output,
    opts: LeaseWatch,
    live_line: bool,
    shutdown: impl Future<Output = ()>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let mut updates = std::pin::pin!(updates);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut tracker = Tracker::new(lease.clone(), opts.changes_only);
    let mut view = View { columns: Columns::default(), output, live_line, line_shown: false };
    let mut outage = false;
    let give_up = opts.timeout.map(|t| Instant::now() + t);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let end = loop {
        let now = deps.clock.now();
        let stale_at = tracker.deadline(now).map(|d| Instant::now() + until(now, d));
        let observation = tokio::select! {
            biased;
            _ = &mut shutdown => break Ok(Exit::Yes),
            _ = sleep_opt(give_up) => break Ok(timed_out(&tracker, opts.until, deps.clock.now())),
            _ = sleep_opt(stale_at) => Observation::Tick,
            update = updates.next() => match update {
                None => break Ok(Exit::Yes),
                Some(LeaseUpdate::Interrupted(cause)) => {
                    if !outage {
                        outage = true;
                        view.clear(deps.out)?;
                        let _ = writeln!(deps.err, "watch interrupted: {cause}; reconnecting");
                    }
                    continue;
                }
                Some(LeaseUpdate::Lease(facts)) => {
                    if std::mem::take(&mut outage) {
                        view.clear(deps.out)?;
                        let _ = writeln!(deps.err, "watch resumed");
                    }
                    Observation::Lease(facts)
                }
                Some(LeaseUpdate::Forbidden(rule)) => Observation::Forbidden(rule),
            },
            _ = tick.tick(), if live_line => {
                view.status(&tracker, deps.clock.now(), deps.out)?;
                continue;
            }
        };
        let now = deps.clock.now();
        for change in tracker.observe(observation, now) {
            view.change(&change, &tracker, deps.out)?;
        }
        if opts.until.is_some_and(|u| reached(u, &tracker, now)) {
            break Ok(Exit::Yes);
        }
        view.status(&tracker, now, deps.out)?;
    };
    view.finish(&tracker, deps.out)?;
    end
}

/// The non-negative time from `now` to `deadline`.
fn until(now: Timestamp, deadline: Timestamp) -> Duration {
    Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO)
}

fn reached(until: Until, tracker: &Tracker, now: Timestamp) -> bool {
    let state = tracker.assess(now).map(|a| a.state);
    match until {
        Until::Fresh => matches!(state, Some(LeaseState::Fresh { .. })),
        Until::Stale => {
            matches!(state, Some(s) if !matches!(s, LeaseState::Fresh { .. } | LeaseState::Forbidden { .. }))
        }
        Until::HolderChange => tracker.took_over,
    }
}

/// `--timeout` ran out. Waiting for a fresh Lease ends with the last state's one-shot code
/// (3 not fresh, 4 unknown); waiting for stale or a holder change ends with 5, since the last
/// state's code (0, fresh) would read as success. A plain watch just ends.
fn timed_out(tracker: &Tracker, until: Option<Until>, now: Timestamp) -> Exit {
    match until {
        None => Exit::Yes,
        Some(Until::Fresh) => tracker.assess(now).map(|a| Exit::from(a.state.verdict())).unwrap_or(Exit::Unknown),
        Some(_) => Exit::TimedOut,
    }
}

/// What is on the screen: the rows, and on a terminal one live status line under them.
struct View {
    columns: Columns,
    output: Output,
    live_line: bool,
    line_shown: bool,
}

impl View {
    fn change(&mut self, change: &Change, tracker: &Tracker, out: &mut dyn Write) -> std::io::Result<()> {
        self.clear(out)?;
        match self.output.format {
            Format::Json | Format::Yaml => crate::render::structured::json_line(out, &change_doc(change))?,
            Format::Table | Format::Wide | Format::Prometheus => {
                if matches!(change.kind, crate::core::heartbeat::ChangeKind::Observed) && !self.output.no_headers {
                    self.columns.header(out, change)?;
                }
                let wide = (self.output.format == Format::Wide).then_some(&tracker.gaps);
                self.columns.row(out, change, wide)?;
            }
        }
        out.flush()
    }

    fn status(&mut self, tracker: &Tracker, now: Timestamp, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.live_line || !matches!(self.output.format, Format::Table | Format::Wide) {
            return Ok(());
        }
        let Some(a) = tracker.assess(now) else { return Ok(()) };
        let facts = a.facts.clone().unwrap_or_default();
        let line = status_line(&a.state, facts.holder(), facts.renew_time, now);
        write!(out, "\r\u{1b}[2K{line}")?;
        self.line_shown = true;
        out.flush()
    }

    fn clear(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if std::mem::take(&mut self.line_shown) {
            write!(out, "\r\u{1b}[2K")?;
        }
        Ok(())
    }

    fn finish(&mut self, tracker: &Tracker, out: &mut dyn Write) -> std::io::Result<()> {
        self.clear(out)?;
        if matches!(self.output.format, Format::Table | Format::Wide) {
            writeln!(out, "{}", summary(&tracker.gaps))?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::stream;
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::clock::Clock;
    use crate::core::lease::LeaseFacts;
    use crate::log::Log;

    /// A wall clock that moves with tokio's (paused) time.
    struct TokioClock {
        base: Timestamp,
        start: Instant,
    }

    impl Clock for TokioClock {
        fn now(&self) -> Timestamp {
            self.base + SignedDuration::try_from(self.start.elapsed()).unwrap()
        }
    }

    fn base() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn renewed(holder: &str, secs: i64) -> LeaseUpdate {
        LeaseUpdate::Lease(Some(LeaseFacts {
            holder: Some(holder.into()),
            renew_time: Some(base() + SignedDuration::from_secs(secs)),
            acquire_time: Some(base()),
            duration_seconds: Some(15),
            transitions: Some(0),
        }))
    }

    /// Each update arrives at its second, then the stream stays open and silent.
    fn script(items: Vec<(u64, LeaseUpdate)>) -> impl Stream<Item = LeaseUpdate> {
        let start = Instant::now();
        stream::iter(items)
            .then(move |(at, u)| async move {
                tokio::time::sleep_until(start + Duration::from_secs(at)).await;
                u
            })
            .chain(stream::pending())
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    async fn run(
        items: Vec<(u64, LeaseUpdate)>,
        opts: LeaseWatch,
        stop_after: u64,
    ) -> (Exit, String, String, Duration) {
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps = Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default() };
        let output = Output { format: Format::Table, no_headers: false };
        let started = Instant::now();
        let stop = tokio::time::sleep(Duration::from_secs(stop_after));
        let exit = follow(script(items), &LeaseRef::default(), output, opts, false, stop, &mut deps).await.unwrap();
        let elapsed = started.elapsed();
        let text = |s: &Shared| String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        (exit, text(&out), text(&err), elapsed)
    }

    fn watch() -> LeaseWatch {
        LeaseWatch { changes_only: false, until: None, timeout: None }
    }

    #[tokio::test(start_paused = true)]
    async fn stale_is_reported_at_the_deadline_without_any_event() {
        let (exit, out, _, _) = run(vec![(0, renewed("a", 0)), (2, renewed("a", 2))], watch(), 60).await;
        assert_eq!(exit, Exit::Yes);
        let stale = out.lines().find(|l| l.contains(" stale ")).expect("a stale row");
        assert!(stale.starts_with("12:00:32Z"), "the row comes at renewTime + 30s: {stale}");
        assert!(stale.ends_with("the admission controller's Lease was last renewed 31s ago, beyond 30s"), "{stale}");
        assert!(stale.contains("stale (for 1s)"), "past the limit by a microsecond reads past it: {stale}");
        assert!(out.ends_with("renewal gaps: 1, median 2s, max 2s\n"), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn until_stale_exits_zero_at_the_deadline_and_times_out_with_5() {
        let opts = LeaseWatch { until: Some(Until::Stale), ..watch() };
        let (exit, _, _, elapsed) = run(vec![(0, renewed("a", 0))], opts, 600).await;
        assert_eq!(exit, Exit::Yes);
        assert!(elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(31), "{elapsed:?}");
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(10)), ..watch() };
        let (exit, ..) = run(vec![(0, renewed("a", 0))], opts, 600).await;
        assert_eq!(exit, Exit::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn until_fresh_times_out_with_the_last_states_code() {
        let opts = LeaseWatch { until: Some(Until::Fresh), timeout: Some(Duration::from_secs(5)), ..watch() };
        let (exit, ..) = run(vec![(0, LeaseUpdate::Lease(None))], opts, 600).await;
        assert_eq!(exit, Exit::No);
        let (exit, ..) = run(vec![(0, LeaseUpdate::Forbidden("get leases".into()))], opts, 600).await;
        assert_eq!(exit, Exit::Unknown);
        let (exit, _, _, elapsed) = run(vec![(0, LeaseUpdate::Lease(None)), (3, renewed("a", 3))], opts, 600).await;
        assert_eq!((exit, elapsed.as_secs()), (Exit::Yes, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn until_holder_change() {
        let opts = LeaseWatch { until: Some(Until::HolderChange), ..watch() };
        let (exit, out, _, elapsed) = run(vec![(0, renewed("a", 0)), (15, renewed("b", 15))], opts, 600).await;
        assert_eq!((exit, elapsed.as_secs()), (Exit::Yes, 15));
        assert!(out.contains("a -> b after 15s"), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_is_reported_once_and_its_end_once() {
        let items = vec![
            (0, renewed("a", 0)),
            (1, LeaseUpdate::Interrupted("connection refused".into())),
            (2, LeaseUpdate::Interrupted("connection refused".into())),
            (4, renewed("a", 4)),
        ];
        let (_, out, err, _) = run(items, watch(), 10).await;
        assert_eq!(err, "watch interrupted: connection refused; reconnecting\nwatch resumed\n");
        assert!(out.lines().any(|l| l.starts_with("12:00:04Z   renewed")), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_takeover_inside_the_window_never_says_stale() {
        let items = vec![(0, renewed("a", 0)), (15, renewed("b", 15)), (17, renewed("b", 17))];
        let (_, out, _, _) = run(items, watch(), 40).await;
        let events: Vec<&str> = out.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1)).collect();
        assert_eq!(events, ["observed", "takeover", "renewed", "gaps:"], "{out}");
    }
}

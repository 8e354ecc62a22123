//! `kubectl dispatch lease --watch`: one watch on the one Lease, plus a timer set for the
//! moment it goes stale. A Lease nobody renews sends no events, so the timer, not the server,
//! reports "stale". Faults (a closed watch, 410, an apiserver restart, a lost connection, a
//! forbidden watch) are survived: `cluster::watching::reflector` reconnects with a capped backoff, relists
//! after a 410, or polls with get; `core::link` turns what the connection did into the lines
//! on stderr and the status line.
//!
//! Kueue's manager's Lease is followed beside it in the same loop, as context: a watch of its
//! own ([`crate::cluster::watching::kueue_lease`]) and a timer of its own, folded by
//! [`crate::core::kueue_lease::Follower`] into a line when no manager leads any more, when one
//! leads again, or when the Lease is deleted or created. It never changes a row, `--until` or
//! the exit code.

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::Deps;
use super::live::{self, Live, Woke};
use crate::cluster::connecting::connect::Connection;
use crate::cluster::watching::kueue_lease::{self, KueueLeaseUpdate};
use crate::cluster::watching::reflector::{self as watch, LeaseUpdate};
use crate::core::heartbeat::{Change, Observation, Tracker};
use crate::core::kueue_lease::Follower;
use crate::core::lease::{LeaseAssessment, LeaseRef, LeaseState};
use crate::core::link::{Link, LinkEvent};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::{Format, Until};
use crate::invocation::{LeaseWatch, Output};
use crate::render::watch::{Columns, change_doc, kueue_change_doc, kueue_line, status_line, summary};
use crate::text::terminal::CLEAR_LINE;

/// The Leases a watch follows: dispatch's, and Kueue's manager's as context.
pub struct Leases<'a> {
    pub lease: &'a LeaseRef,
    pub kueue: &'a LeaseRef,
}

pub async fn run(
    conn: &Connection,
    leases: Leases<'_>,
    output: Output,
    opts: LeaseWatch,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let updates = watch::lease(conn, leases.lease);
    let kueue_ref = leases.kueue;
    let kueue = || kueue_lease::kueue_lease(conn, kueue_ref);
    let live_line = deps.style.live;
    live::ended(follow(updates, kueue, leases, output, opts, live_line, super::shutdown(), deps).await)
}

/// One update of either Lease.
enum Update {
    Dispatch(LeaseUpdate),
    Kueue(KueueLeaseUpdate),
}

/// The watch loop, over any streams of updates (`cluster::watching::reflector::lease` and
/// `cluster::watching::kueue_lease::kueue_lease` in the product, scripts in tests) and any
/// shutdown signal. Ends on shutdown, on `--until`, on `--timeout`, or when stdout is closed.
/// `kueue` starts Kueue's manager's Lease's stream: called once dispatch's was answered.
#[allow(clippy::too_many_arguments)]
pub async fn follow<K: Stream<Item = KueueLeaseUpdate>>(
    updates: impl Stream<Item = LeaseUpdate>,
    kueue: impl FnOnce() -> K,
    leases: Leases<'_>,
    output: Output,
    opts: LeaseWatch,
    live_line: bool,
    shutdown: impl Future<Output = ()>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    // Kueue's Lease is followed once dispatch's was answered: before that, a refusal (a bad
    // credential) is dispatch's to say, once, and a second stream would only race it.
    let (open, opened) = futures::channel::oneshot::channel::<()>();
    let mut open = Some(open);
    let mut kueue = Some(kueue);
    let kueue = futures::stream::once(opened)
        .filter_map(move |_| futures::future::ready(kueue.take().map(|start| start())))
        .flatten();
    let merged = futures::stream::select(updates.map(Update::Dispatch), kueue.map(Update::Kueue));
    let mut live = Live::new(merged, shutdown, opts.timeout, live_line);
    let lease = leases.lease;
    let mut tracker = Tracker::new(lease.clone(), opts.changes_only);
    let mut manager = Follower::new(leases.kueue.clone());
    let mut view = View { columns: Columns::default(), output, live_line, line_shown: false, docs: 0, held: None };
    // Stream 0 is dispatch's Lease, 1 Kueue's: one connection story for both.
    let mut link = Link::new(2);
    let mut polling: Option<Duration> = None;
    let end = loop {
        let now = deps.clock.now();
        let deadline = [tracker.deadline(now), manager.deadline(now)].into_iter().flatten().min();
        let stale_at = deadline.and_then(|d| Instant::now().checked_add(until(now, d)));
        let observation = match live.next(stale_at).await {
            Woke::Shutdown | Woke::Ended => break Ok(Exit::Yes),
            Woke::GaveUp => {
                break match (link.down_at_timeout(), opts.timeout) {
                    (Some(cause), Some(timeout)) => Err(Error::DownAtTimeout { timeout, cause }),
                    _ => Ok(timed_out(&tracker, opts.until, deps.clock.now())),
                };
            }
            Woke::Timer => {
                let now = deps.clock.now();
                if let Some(a) = manager.observe(None, now) {
                    view.kueue(&a, now, tracker.assess(now).is_some(), deps)?;
                }
                Observation::Tick
            }
            Woke::Update(Update::Kueue(KueueLeaseUpdate::Lease(read))) => {
                let now = deps.clock.now();
                if let Some(a) = manager.observe(Some(read), now) {
                    view.kueue(&a, now, tracker.assess(now).is_some(), deps)?;
                }
                continue;
            }
            Woke::Update(
                Update::Dispatch(LeaseUpdate::Link(LinkEvent::Refused(refusal)))
                | Update::Kueue(KueueLeaseUpdate::Link(LinkEvent::Refused(refusal))),
            ) => break Err(watch::refused(refusal)),
            Woke::Update(Update::Dispatch(LeaseUpdate::Link(event))) => {
                if event == LinkEvent::Up
                    && let Some(open) = open.take()
                {
                    let _ = open.send(());
                }
                if let Some(said) = live::connection_lines(&mut link, 0, event, deps.clock.now()) {
                    view.clear(deps.out)?;
                    let _ = writeln!(deps.err, "{said}");
                }
                continue;
            }
            // Polling Kueue's Lease is no news here: its reads are.
            Woke::Update(Update::Kueue(KueueLeaseUpdate::Polling { .. })) => continue,
            Woke::Update(Update::Kueue(KueueLeaseUpdate::Link(event))) => {
                if let Some(said) = live::connection_lines(&mut link, 1, event, deps.clock.now()) {
                    view.clear(deps.out)?;
                    let _ = writeln!(deps.err, "{said}");
                }
                continue;
            }
            Woke::Update(Update::Dispatch(LeaseUpdate::Polling { every, rule })) => {
                if polling.replace(every).is_none() {
                    view.clear(deps.out)?;
                    let _ = writeln!(deps.err, "{}", polling_line(lease, every, &rule));
                }
                continue;
            }
            Woke::Update(Update::Dispatch(LeaseUpdate::Lease(facts))) => Observation::Lease(facts),
            Woke::Update(Update::Dispatch(LeaseUpdate::Forbidden(rule))) => Observation::Forbidden(rule),
            Woke::Tick => {
                view.status(&tracker, &link, polling, deps.clock.now(), deps.out)?;
                continue;
            }
        };
        let now = deps.clock.now();
        for change in tracker.observe(observation, now) {
            match deps.printer {
                // `-o jsonpath=...` and the like: each change's `-o json` document.
                Some(printer) => {
                    view.clear(deps.out)?;
                    printer.print(&change_doc(&change, manager.assess(now).as_ref()), deps.out)?;
                    deps.out.flush()?;
                }
                None => view.change(&change, &tracker, manager.assess(now).as_ref(), deps.out)?,
            }
        }
        // Kueue's line said before dispatch's first row, under it.
        if let Some((a, at)) = view.held.take() {
            view.kueue(&a, at, true, deps)?;
        }
        if opts.until.is_some_and(|u| reached(u, &tracker, now)) {
            break Ok(Exit::Yes);
        }
        view.status(&tracker, &link, polling, now, deps.out)?;
    };
    match end {
        Ok(_) => view.finish(&tracker, deps.out)?,
        // The error line is all that is said (the summary is the end of a watch that ended well).
        Err(_) => view.clear(deps.out)?,
    }
    end
}

/// Said once on stderr when the Lease is polled rather than watched.
pub fn polling_line(lease: &LeaseRef, every: Duration, rule: &str) -> String {
    format!(
        "polling Lease {lease} with get every {}: list and watch on it are forbidden (missing RBAC: {rule})",
        crate::core::duration::go_duration(every)
    )
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

/// The connection as the status line says it: `live`, `reconnecting since 12s`, or
/// `polling every 3s`.
fn connection(link: &Link, polling: Option<Duration>, now: Timestamp) -> String {
    match (link.status(now), polling) {
        (crate::core::link::LinkStatus::Live, Some(every)) => {
            format!("polling every {}", crate::core::duration::go_duration(every))
        }
        (status, _) => status.text(),
    }
}

/// What is on the screen: the rows, and on a terminal one live status line under them.
struct View {
    columns: Columns,
    output: Output,
    live_line: bool,
    line_shown: bool,
    /// Documents written so far (YAML separates them with `---`).
    docs: usize,
    /// Kueue's manager's line when it came before dispatch's Lease was first seen: said under
    /// the first row rather than above the header.
    held: Option<(LeaseAssessment, Timestamp)>,
}

impl View {
    fn change(
        &mut self,
        change: &Change,
        tracker: &Tracker,
        kueue: Option<&LeaseAssessment>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.clear(out)?;
        match self.output.format {
            Format::Json => crate::render::structured::json_line(out, &change_doc(change, kueue))?,
            Format::Yaml => {
                crate::render::structured::yaml_document(out, &change_doc(change, kueue), self.docs)?;
                self.docs += 1;
            }
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

    /// What Kueue's manager's Lease says now: a line in the table (on stderr with
    /// `--no-headers`, so that stdout holds only rows, as the gate's notes), a document in
    /// JSON and YAML. Held until dispatch's Lease was first seen (`shown`).
    fn kueue(&mut self, a: &LeaseAssessment, at: Timestamp, shown: bool, deps: &mut Deps<'_>) -> std::io::Result<()> {
        if !shown {
            self.held = Some((a.clone(), at));
            return Ok(());
        }
        self.clear(deps.out)?;
        match self.output.format {
            Format::Json => crate::render::structured::json_line(deps.out, &kueue_change_doc(a, at))?,
            Format::Yaml => {
                crate::render::structured::yaml_document(deps.out, &kueue_change_doc(a, at), self.docs)?;
                self.docs += 1;
            }
            Format::Table | Format::Wide | Format::Prometheus if self.output.no_headers => {
                let _ = writeln!(deps.err, "{}", kueue_line(a));
            }
            Format::Table | Format::Wide | Format::Prometheus => self.columns.line(deps.out, at, &kueue_line(a))?,
        }
        deps.out.flush()
    }

    fn status(
        &mut self,
        tracker: &Tracker,
        link: &Link,
        polling: Option<Duration>,
        now: Timestamp,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.live_line || !matches!(self.output.format, Format::Table | Format::Wide) {
            return Ok(());
        }
        let Some(a) = tracker.assess(now) else { return Ok(()) };
        let facts = a.facts.clone().unwrap_or_default();
        let line = status_line(&a.state, facts.holder(), facts.renew_time, now, &connection(link, polling, now));
        write!(out, "{CLEAR_LINE}{line}")?;
        self.line_shown = true;
        out.flush()
    }

    fn clear(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if std::mem::take(&mut self.line_shown) {
            write!(out, "{CLEAR_LINE}")?;
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

    use futures::{StreamExt, stream};
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::clock::Clock;
    use crate::core::fetched::Fetched;
    use crate::core::lease::LeaseFacts;
    use crate::core::link::Refusal;
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
    fn script<T>(items: Vec<(u64, T)>) -> impl Stream<Item = T> {
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
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let output = Output { format: Format::Table, no_headers: false };
        let started = Instant::now();
        let stop = tokio::time::sleep(Duration::from_secs(stop_after));
        // The product's stream says the list was answered before the Lease it read.
        let items = std::iter::once((0, up())).chain(items).collect();
        let exit =
            follow(script(items), stream::pending, leases(), output, opts, false, stop, &mut deps).await.unwrap();
        let elapsed = started.elapsed();
        let text = |s: &Shared| String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        (exit, text(&out), text(&err), elapsed)
    }

    fn leases() -> Leases<'static> {
        static DISPATCH: std::sync::LazyLock<LeaseRef> = std::sync::LazyLock::new(LeaseRef::default);
        static KUEUE: std::sync::LazyLock<LeaseRef> = std::sync::LazyLock::new(LeaseRef::kueue_default);
        Leases { lease: &DISPATCH, kueue: &KUEUE }
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

    fn down(cause: &str) -> LeaseUpdate {
        LeaseUpdate::Link(LinkEvent::Down(cause.into()))
    }

    fn up() -> LeaseUpdate {
        LeaseUpdate::Link(LinkEvent::Up)
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_is_reported_once_and_its_end_once() {
        let items = vec![
            (0, up()),
            (0, renewed("a", 0)),
            (1, down("the API server closed the connection")),
            (2, down("the API server refuses connections (connection refused)")),
            (4, up()),
            (4, renewed("a", 4)),
        ];
        let (_, out, err, _) = run(items, watch(), 10).await;
        assert_eq!(err, "watch interrupted: the API server closed the connection; reconnecting\nwatch resumed\n");
        assert!(out.lines().any(|l| l.starts_with("12:00:04Z   renewed")), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_lease_resumes_when_the_watch_is_back_and_every_outage_is_said() {
        // Nobody renews: no object event after the first, yet each outage is said and ended.
        let mut items = vec![(0, up()), (0, renewed("a", 0))];
        for round in 0..3 {
            let t = 2 + round * 4;
            items.push((t, down("the API server closed the connection")));
            items.push((t + 1, down("the API server refuses connections (connection refused)")));
            items.push((t + 3, up()));
        }
        let (_, out, err, _) = run(items, watch(), 40).await;
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 6, "{err}");
        for pair in lines.chunks(2) {
            assert_eq!(
                pair,
                ["watch interrupted: the API server closed the connection; reconnecting", "watch resumed"]
            );
        }
        let stale = out.lines().find(|l| l.contains(" stale ")).expect("the stale row, on time");
        assert!(stale.starts_with("12:00:30Z"), "{stale}");
    }

    async fn run_err(items: Vec<(u64, LeaseUpdate)>, opts: LeaseWatch) -> (Error, String) {
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let output = Output { format: Format::Table, no_headers: false };
        let stop = tokio::time::sleep(Duration::from_secs(600));
        let e =
            follow(script(items), stream::pending, leases(), output, opts, false, stop, &mut deps).await.unwrap_err();
        (e, String::from_utf8(out.0.lock().unwrap().clone()).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_stream_ends_the_watch_with_the_one_shot_error() {
        let refused = |r: Refusal| LeaseUpdate::Link(LinkEvent::Refused(r));
        let unauthorized = refused(Refusal::Unauthorized { server: "https://k".into() });
        let (e, out) = run_err(vec![(0, unauthorized)], watch()).await;
        assert_eq!(
            (e.to_string().as_str(), e.exit()),
            ("the API server at https://k rejected the credentials (401 Unauthorized)", Exit::Failed)
        );
        assert_eq!(out, "", "nothing on stdout, as kubectl");
        let forbidden = refused(Refusal::Forbidden { message: "no \u{1b}[2J".into(), rule: "get leases".into() });
        let opts = LeaseWatch { until: Some(Until::Fresh), timeout: Some(Duration::from_secs(30)), ..watch() };
        let (e, _) = run_err(vec![(0, forbidden)], opts).await;
        assert_eq!(e.exit(), Exit::Unknown, "a forbidden Lease is unknown (4), as in the one-shot");
        assert_eq!(e.hint().as_deref(), Some("missing RBAC: get leases"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_while_the_connection_is_down_is_an_error_not_a_result() {
        let items =
            vec![(0, up()), (0, renewed("a", 0)), (2, down("the API server refuses connections (connection refused)"))];
        let missing = vec![(0, up()), (0, LeaseUpdate::Lease(None)), items[2].clone()];
        for (until, items) in [
            (None, &items),
            (Some(Until::Stale), &items),
            (Some(Until::HolderChange), &items),
            (Some(Until::Fresh), &missing),
        ] {
            let opts = LeaseWatch { until, timeout: Some(Duration::from_secs(5)), ..watch() };
            let (e, _) = run_err(items.clone(), opts).await;
            assert_eq!(
                e.to_string(),
                "--timeout 5s came while the connection was down: the API server refuses connections (connection refused)"
            );
            assert_eq!(e.exit(), Exit::Failed, "{until:?}");
        }
        let opts = LeaseWatch { timeout: Some(Duration::from_secs(5)), ..watch() };
        let (e, _) = run_err(vec![], opts).await;
        assert_eq!(e.to_string(), "--timeout 5s came before the API server answered");
        // Back before the timeout: the watch ends as it always did.
        let items = vec![(0, up()), (0, renewed("a", 0)), (2, down("the API server closed the connection")), (3, up())];
        let (exit, ..) = run(items, opts, 600).await;
        assert_eq!(exit, Exit::Yes);
    }

    #[tokio::test(start_paused = true)]
    async fn a_polled_lease_says_so_once() {
        let polling = || LeaseUpdate::Polling { every: Duration::from_secs(3), rule: "list and watch leases".into() };
        let items =
            vec![(0, up()), (0, polling()), (0, renewed("a", 0)), (3, up()), (3, polling()), (3, renewed("a", 3))];
        let (_, out, err, _) = run(items, watch(), 10).await;
        assert_eq!(
            err,
            "polling Lease dispatch-system/dispatch-admission with get every 3s: list and watch on it are forbidden \
             (missing RBAC: list and watch leases)\n"
        );
        assert!(out.lines().any(|l| l.starts_with("12:00:03Z   renewed")), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn yaml_changes_are_documents_separated_by_dashes() {
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let output = Output { format: Format::Yaml, no_headers: false };
        let stop = tokio::time::sleep(Duration::from_secs(5));
        let items = script(vec![(0, renewed("a", 0)), (2, renewed("a", 2))]);
        follow(items, stream::pending, leases(), output, watch(), false, stop, &mut deps).await.unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let docs: Vec<&str> = text.split("---\n").collect();
        assert_eq!(docs.len(), 2, "{text}");
        assert!(docs[0].starts_with("schema: ") && docs[0].contains("event: observed"), "{text}");
        assert!(docs[1].contains("event: renewed"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_takeover_inside_the_window_never_says_stale() {
        let items = vec![(0, renewed("a", 0)), (15, renewed("b", 15)), (17, renewed("b", 17))];
        let (_, out, _, _) = run(items, watch(), 40).await;
        let events: Vec<&str> = out.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1)).collect();
        assert_eq!(events, ["observed", "takeover", "renewed", "gaps:"], "{out}");
    }

    fn kueue_renewed(holder: &str, secs: i64) -> KueueLeaseUpdate {
        let LeaseUpdate::Lease(Some(facts)) = renewed(holder, secs) else { unreachable!() };
        KueueLeaseUpdate::Lease(Fetched::Found(facts))
    }

    /// dispatch's Lease renewed every 2 s from 0 to `until`, and Kueue's as scripted.
    async fn with_kueue(
        kueue: Vec<(u64, KueueLeaseUpdate)>,
        until: u64,
        output: Output,
        stop_after: u64,
    ) -> (Exit, String, String) {
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let stop = tokio::time::sleep(Duration::from_secs(stop_after));
        let dispatch: Vec<(u64, LeaseUpdate)> =
            std::iter::once((0, up())).chain((0..=until).step_by(2).map(|t| (t, renewed("a", t as i64)))).collect();
        let kueue = std::iter::once((0, KueueLeaseUpdate::Link(LinkEvent::Up))).chain(kueue).collect();
        let exit = follow(script(dispatch), || script(kueue), leases(), output, watch(), false, stop, &mut deps)
            .await
            .unwrap();
        let text = |s: &Shared| String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        (exit, text(&out), text(&err))
    }

    fn table() -> Output {
        Output { format: Format::Table, no_headers: false }
    }

    #[tokio::test(start_paused = true)]
    async fn kueues_manager_going_stale_and_coming_back_is_a_line_each_in_the_rows() {
        let kueue = vec![(0, kueue_renewed("kueue-0_1", 0)), (40, kueue_renewed("kueue-1_2", 40))];
        let (exit, out, err) = with_kueue(kueue, 50, table(), 51).await;
        assert_eq!((exit, err.as_str()), (Exit::Yes, ""));
        let said: Vec<&str> = out.lines().filter(|l| l.contains("Kueue's manager")).collect();
        assert_eq!(
            said,
            [
                "12:00:30Z   Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 31s ago, \
                 beyond 30s: no manager leads, so Kueue admits nothing",
                "12:00:40Z   Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io renewed 0s ago, within 30s: \
                 a manager leads",
            ],
            "{out}"
        );
        // dispatch's rows go on as before: Kueue's Lease is context, not a row or a check.
        assert!(out.lines().any(|l| l.starts_with("12:00:50Z   renewed")), "{out}");
        assert!(!out.contains(" stale "), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_kueue_lease_from_the_start_is_said_under_the_first_row_or_on_stderr_without_headers() {
        // Kueue's Lease is read before dispatch's: its line waits for the header and the first row.
        let kueue = vec![(0, kueue_renewed("kueue-0_1", -100))];
        let (_, out, err) = with_kueue(kueue.clone(), 0, table(), 3).await;
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("TIME") && lines[1].starts_with("12:00:00Z   observed"), "{out}");
        assert!(
            lines[2].starts_with(
                "12:00:00Z   Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 1m40s ago"
            ),
            "{out}"
        );
        assert_eq!(err, "");
        let (_, out, err) = with_kueue(kueue, 0, Output { format: Format::Table, no_headers: true }, 3).await;
        assert!(!out.contains("Kueue"), "stdout holds only rows: {out}");
        assert!(
            err.starts_with("Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 1m40s ago"),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn json_changes_carry_kueues_lease_and_its_changes_are_documents_of_their_own() {
        let kueue = vec![(0, kueue_renewed("kueue-0_1", 0))];
        let (_, out, _) = with_kueue(kueue, 34, Output { format: Format::Json, no_headers: false }, 35).await;
        let docs: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        let at = kinds.iter().position(|k| *k == "KueueLeaseChange").expect("a KueueLeaseChange");
        assert_eq!(kinds.iter().filter(|k| **k == "KueueLeaseChange").count(), 1, "{out}");
        let change = &docs[at];
        assert!(change["time"].as_str().unwrap().starts_with("2026-11-30T12:00:30."), "at the deadline: {change}");
        assert_eq!(change["kueueLease"]["status"], "stale");
        assert_eq!(change["kueueLease"]["down"], true);
        assert_eq!(change["kueueLease"]["holder"], "kueue-0_1");
        assert!(change.get("event").is_none(), "{change}");
        assert!(change["detail"].as_str().unwrap().starts_with("Kueue's manager: Lease "), "{change}");
        assert_eq!(docs[at - 1]["kueueLease"]["status"], "fresh", "{out}");
        assert_eq!(docs[at + 1]["kind"], "LeaseChange");
        assert_eq!(docs[at + 1]["kueueLease"]["status"], "stale", "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_kueue_lease_nobody_may_read_is_no_line_and_no_end() {
        let refused = KueueLeaseUpdate::Lease(Fetched::Forbidden(crate::core::fetched::Denied {
            rule: "get, list and watch leases.coordination.k8s.io".into(),
        }));
        let (exit, out, err) = with_kueue(vec![(0, refused)], 10, table(), 11).await;
        assert_eq!((exit, err.as_str()), (Exit::Yes, ""));
        assert!(!out.contains("Kueue"), "{out}");
        assert!(out.lines().any(|l| l.starts_with("12:00:10Z   renewed")), "the watch goes on: {out}");
        let (_, out, _) = with_kueue(vec![(0, refused_missing())], 10, table(), 11).await;
        assert!(!out.contains("Kueue"), "{out}");
    }

    fn refused_missing() -> KueueLeaseUpdate {
        KueueLeaseUpdate::Lease(Fetched::Missing)
    }

    #[tokio::test(start_paused = true)]
    async fn kueues_lease_is_followed_only_once_dispatchs_was_answered() {
        // A bad credential is dispatch's stream's to say: Kueue's is not started to race it.
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let refused = LeaseUpdate::Link(LinkEvent::Refused(Refusal::Unauthorized { server: "https://k".into() }));
        let down = down("the API server refuses connections (connection refused)");
        let never =
            || -> stream::Pending<KueueLeaseUpdate> { panic!("Kueue's Lease followed before dispatch's answered") };
        let stop = tokio::time::sleep(Duration::from_secs(600));
        let e =
            follow(script(vec![(0, down), (1, refused)]), never, leases(), table(), watch(), false, stop, &mut deps)
                .await
                .unwrap_err();
        assert_eq!(e.exit(), Exit::Failed);
        assert_eq!(
            String::from_utf8(err.0.lock().unwrap().clone()).unwrap(),
            "watch interrupted: the API server refuses connections (connection refused); reconnecting\n"
        );
    }
}

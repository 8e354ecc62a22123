//! `kubectl dispatch lease --watch`: one watch on the one Lease, plus a timer set for the
//! moment it goes stale. A Lease nobody renews sends no events, so the timer, not the server,
//! reports "stale". Faults (a closed watch, 410, an apiserver restart, a lost connection, a
//! forbidden watch) are survived: `cluster::watching::reflector` reconnects with a capped
//! backoff, relists after a 410, or polls with get. Every rule of the heartbeat (the link's
//! story, the confirming read, the outage rule, `--until`) is the machine's
//! ([`crate::core::live_lease`]), run by [`super::live::Driver`]; this file keeps what a row
//! looks like.
//!
//! Kueue's manager's Lease is followed beside it in the same loop, as context: a watch of its
//! own ([`crate::cluster::watching::kueue_lease`]) and an instance of the machine of its own
//! ([`crate::core::heartbeats`]: its timer, its confirming read, its outage story), told by
//! [`crate::core::kueue_lease::Told`] as a line when no manager leads any more, when one leads
//! again, or when the Lease is deleted or created. It never changes a row, `--until` or the
//! exit code.

use std::future::Future;

use futures::{Stream, StreamExt};

use super::Deps;
use super::live::{Confirmers, Driver, Feed, LiveLoop, Woken, confirmer};
use crate::cluster::connecting::connect::Connection;
use crate::cluster::watching::kueue_lease::{self, KueueLeaseUpdate};
use crate::cluster::watching::reflector::{self, LeaseUpdate};
use crate::core::fetched::{Denied, Fetched};
use crate::core::heartbeats::Heartbeats;
use crate::core::kueue_lease::{First, Told};
use crate::core::lease::LeaseRef;
use crate::core::live_lease::{End, Ending, Role, Setup, Step};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Until;
use crate::invocation::{LeaseWatch, Output};
use crate::render::watch::change_doc;
use crate::render::watch_view::View;

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
    let (restart, restarts) = reflector::restart();
    let updates = reflector::lease(conn, leases.lease, deps.log, restarts);
    let (kueue_restart, kueue_restarts) = reflector::restart();
    let kueue_ref = leases.kueue;
    let log = deps.log;
    let kueue = move || kueue_lease::kueue_lease(conn, kueue_ref, log, kueue_restarts);
    let live_line = deps.style.live;
    let confirm = Confirmers {
        dispatch: confirmer(conn, leases.lease, restart),
        kueue: confirmer(conn, leases.kueue, kueue_restart),
    };
    follow(updates, kueue, Shown { leases, output, opts, live_line, confirm }, super::shutdown(), deps).await
}

/// What a watch follows, when it ends, and how it is shown.
pub struct Shown<'a> {
    pub leases: Leases<'a>,
    pub output: Output,
    pub opts: LeaseWatch,
    /// A status line under the rows (a terminal).
    pub live_line: bool,
    /// The reads that confirm each Lease stale, and the restart of a watch found dead.
    pub confirm: Confirmers,
}

/// One update of either Lease.
enum Update {
    Dispatch(LeaseUpdate),
    Kueue(KueueLeaseUpdate),
}

/// Stream 0 is dispatch's Lease, 1 Kueue's: one connection story for both; Kueue's is
/// context, never what decides.
const DISPATCH: usize = 0;
const KUEUE: usize = 1;

/// The watch loop, over any streams of updates (`cluster::watching::reflector::lease` and
/// `cluster::watching::kueue_lease::kueue_lease` in the product, scripts in tests) and any
/// shutdown signal. Ends on shutdown, on `--until`, on `--timeout`, or when stdout is closed.
/// `kueue` starts Kueue's manager's Lease's stream: called once dispatch's was answered.
pub async fn follow<K: Stream<Item = KueueLeaseUpdate>>(
    updates: impl Stream<Item = LeaseUpdate>,
    kueue: impl FnOnce() -> K,
    shown: Shown<'_>,
    shutdown: impl Future<Output = ()>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let Shown { leases, output, opts, live_line, confirm } = shown;
    // Kueue's Lease is followed once dispatch's was answered: before that, a refusal (a bad
    // credential) is dispatch's to say, once, and a second stream would only race it.
    let (open, opened) = futures::channel::oneshot::channel::<()>();
    let mut kueue = Some(kueue);
    let kueue = futures::stream::once(opened)
        .filter_map(move |_| futures::future::ready(kueue.take().map(|start| start())))
        .flatten();
    let merged = futures::stream::select(updates.map(Update::Dispatch), kueue.map(Update::Kueue));
    let setup = Setup {
        lease: leases.lease.clone(),
        changes_only: opts.changes_only,
        until: opts.until,
        stream: DISPATCH,
        role: Role::Deciding,
    };
    let kueue =
        Setup { lease: leases.kueue.clone(), changes_only: false, until: None, stream: KUEUE, role: Role::Context };
    let live = LiveLoop::new(merged, shutdown, opts.timeout, live_line);
    let mut w = Watching {
        driver: Driver::new(live, Heartbeats::new(2, setup, Some(kueue)), confirm),
        lease: leases.lease,
        opts,
        manager: Told::new(First::Down),
        view: View::new(output, live_line, deps.style),
        open: Some(open),
    };
    let end = w.watch(deps).await;
    // Nobody reads any more (`| head -1`): the end is the one `--timeout` would give now, so a
    // closed stdout keeps the verdict's code (an outage's 1, without its line).
    if let Err(Error::Output(e)) = &end
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        return Ok(match w.driver.beats.ending(deps.clock.now(), true) {
            Ending::Down(_) => Exit::Failed,
            ending => exit(ending),
        });
    }
    match end {
        Ok(_) => w.view.finish(w.driver.beats.dispatch().tracker(), deps.out)?,
        // The error line is all that is said (the summary is the end of a watch that ended well).
        Err(_) => w.view.clear(deps.out)?,
    }
    end
}

/// One watch: the driver of the machine, Kueue's manager's story, the screen.
struct Watching<'a, S, F> {
    driver: Driver<S, F>,
    lease: &'a LeaseRef,
    opts: LeaseWatch,
    /// What was said of Kueue's manager.
    manager: Told,
    view: View,
    /// Starts Kueue's stream once dispatch's was answered.
    open: Option<futures::channel::oneshot::Sender<()>>,
}

impl<S: Stream<Item = Update>, F: Future<Output = ()>> Watching<'_, S, F> {
    /// Acts on what wakes the loop until the end.
    async fn watch(&mut self, deps: &mut Deps<'_>) -> Result<Exit, Error> {
        let lease = self.lease.clone();
        loop {
            let steps = match self.driver.next(deps.clock, |u| feed(&lease, u)).await {
                Woken::Shutdown | Woken::Ended => return Ok(Exit::Success),
                Woken::TimedOut(ending) => return self.timed_out(ending, deps),
                Woken::Tick => {
                    self.status(deps.clock.now(), deps)?;
                    continue;
                }
                Woken::Own(never) => match never {},
                Woken::Steps(steps) => *steps,
            };
            self.kueue(steps.kueue, deps)?;
            if let Some(exit) = self.show(steps.dispatch, deps)? {
                return Ok(exit);
            }
        }
    }

    /// What Kueue's manager's Lease's instance made of an input: its lines on stderr, and its
    /// line when its judgement says something.
    fn kueue(&mut self, step: Step, deps: &mut Deps<'_>) -> Result<(), Error> {
        if !step.said.is_empty() || step.warning.is_some() {
            self.view.clear(deps.out)?;
            let _ =
                writeln!(deps.err, "{}", step.said.iter().chain(&step.warning).cloned().collect::<Vec<_>>().join("\n"));
        }
        let now = deps.clock.now();
        let judged = self.driver.beats.kueue().and_then(|k| k.tracker().assess(now)).filter(|_| step.judged);
        if let Some(a) = judged.and_then(|a| self.manager.judged(a)) {
            let shown = self.driver.beats.dispatch().tracker().assess(now).is_some();
            self.view.kueue(&a, now, shown, deps.out, deps.err)?;
        }
        Ok(())
    }

    /// The status line (a terminal's).
    fn status(&mut self, now: k8s_openapi::jiff::Timestamp, deps: &mut Deps<'_>) -> Result<(), Error> {
        let (m, link) = (self.driver.beats.dispatch(), self.driver.beats.link());
        Ok(self.view.status(m.tracker(), link, m.polling(), now, deps.out)?)
    }

    /// `--timeout` ran out: an error when the connection is down, else the error line of an
    /// `--until` not reached and the code.
    fn timed_out(&mut self, ending: Ending, deps: &mut Deps<'_>) -> Result<Exit, Error> {
        if let (Ending::Down(cause), Some(timeout)) = (&ending, self.opts.timeout) {
            return Err(Error::DownAtTimeout { timeout, cause: cause.clone() });
        }
        if let (Some(until), Some(timeout)) = (self.opts.until, self.opts.timeout) {
            let awaited = format!("Lease {} {}", self.lease, until_words(until));
            let last = self.driver.beats.dispatch().tracker().assess(deps.clock.now()).map(|a| a.state.label());
            let _ = writeln!(deps.err, "error: {}", crate::exit::timed_out(&awaited, timeout, last));
        }
        Ok(exit(ending))
    }

    /// Shows what the machine made of an input: its lines, its rows, the warning; `Some` at
    /// the end.
    fn show(&mut self, step: Step, deps: &mut Deps<'_>) -> Result<Option<Exit>, Error> {
        if let Some(End::Refused(refusal)) = step.end {
            return Err(super::live::refused(refusal));
        }
        if step.opened
            && let Some(open) = self.open.take()
        {
            let _ = open.send(());
        }
        if !step.said.is_empty() {
            self.view.clear(deps.out)?;
            let _ = writeln!(deps.err, "{}", step.said.join("\n"));
        }
        if !step.judged {
            return Ok(None);
        }
        let now = deps.clock.now();
        let kueue = self.driver.beats.kueue().and_then(|k| k.tracker().assess(now));
        for change in &step.rows {
            match deps.printer {
                // `-o jsonpath=...` and the like: each change's `-o json` document.
                Some(printer) => {
                    self.view.clear(deps.out)?;
                    printer.print(&change_doc(change, kueue.as_ref()), deps.out)?;
                    deps.out.flush()?;
                }
                None => self.view.change(change, self.driver.beats.dispatch().tracker(), kueue.as_ref(), deps.out)?,
            }
        }
        if let Some(warning) = step.warning {
            self.view.clear(deps.out)?;
            let _ = writeln!(deps.err, "{warning}");
        }
        // Kueue's line said before dispatch's first row, under it.
        if let Some((a, at)) = self.view.held.take() {
            self.view.kueue(&a, at, true, deps.out, deps.err)?;
        }
        self.driver.live.judged();
        if step.end == Some(End::Reached) {
            return Ok(Some(Exit::Success));
        }
        self.status(now, deps)?;
        Ok(None)
    }
}

/// An update as the machine takes it: both Leases' and every stream's are the machine's.
fn feed(lease: &LeaseRef, update: Update) -> Feed<std::convert::Infallible> {
    match update {
        Update::Dispatch(LeaseUpdate::Lease(Some(facts))) => Feed::Lease(Fetched::Found(facts)),
        Update::Dispatch(LeaseUpdate::Lease(None)) => Feed::Lease(Fetched::Missing),
        Update::Dispatch(LeaseUpdate::Forbidden(rule)) => Feed::Lease(Fetched::Forbidden(Denied { rule })),
        Update::Dispatch(LeaseUpdate::Link(event)) => Feed::Link(DISPATCH, event),
        Update::Dispatch(LeaseUpdate::Polling { every, rule }) => Feed::Polling { lease: lease.clone(), every, rule },
        Update::Kueue(KueueLeaseUpdate::Link(event)) => Feed::Link(KUEUE, event),
        Update::Kueue(KueueLeaseUpdate::Lease(read)) => Feed::Kueue(read),
        // Polling Kueue's Lease is no news here: its reads are.
        Update::Kueue(KueueLeaseUpdate::Polling { .. }) => Feed::Nothing,
    }
}

/// What `--until` waited for, after the Lease's name.
fn until_words(until: Until) -> &'static str {
    match until {
        Until::Fresh => "to be fresh",
        Until::Stale => "to be stale",
        Until::HolderChange => "to change holder",
    }
}

/// The code of an end that is no error. Waiting for a fresh Lease ends with the last state's
/// one-shot code (3 not fresh, 4 unknown); waiting for stale or a holder change ends with 5,
/// since the last state's code (0, fresh) would read as success. A plain watch just ends.
fn exit(ending: Ending) -> Exit {
    match ending {
        Ending::Reached | Ending::Plain => Exit::Success,
        Ending::Verdict(verdict) => verdict.map(Exit::from).unwrap_or(Exit::Unknown),
        Ending::NotReached => Exit::TimedOut,
        Ending::Down(_) => Exit::Failed,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use k8s_openapi::jiff::Timestamp;
    use tokio::time::Instant;

    use futures::{StreamExt, stream};
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::clock::Clock;
    use crate::core::confirm::Confirmed;
    use crate::core::fetched::Fetched;
    use crate::core::lease::LeaseFacts;
    use crate::core::link::{LinkEvent, Refusal};
    use crate::invocation::Format;
    use crate::log::Log;
    use std::io::Write;

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
        run_with(items, opts, stop_after, Confirmers::scripted(None).0).await
    }

    /// As [`run`], with the confirming read answered by `confirm`.
    async fn run_with(
        items: Vec<(u64, LeaseUpdate)>,
        opts: LeaseWatch,
        stop_after: u64,
        confirm: Confirmers,
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
        let exit = follow(
            script(items),
            stream::pending,
            Shown { leases: leases(), output, opts, live_line: false, confirm },
            stop,
            &mut deps,
        )
        .await
        .unwrap();
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
        assert_eq!(exit, Exit::Success);
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
        assert_eq!(exit, Exit::Success);
        assert!(elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(31), "{elapsed:?}");
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(10)), ..watch() };
        let (exit, ..) = run(vec![(0, renewed("a", 0))], opts, 600).await;
        assert_eq!(exit, Exit::TimedOut);
    }

    fn facts_of(update: LeaseUpdate) -> Fetched<LeaseFacts> {
        let LeaseUpdate::Lease(Some(f)) = update else { unreachable!() };
        Fetched::Found(f)
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_with_no_event_is_stale_only_when_a_read_confirms_it() {
        // The read finds the Lease renewed at 29: the watch was dead. Said, restarted, no stale.
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(40)), ..watch() };
        let (confirm, mut restarts) = Confirmers::scripted(Some(Confirmed::Read(facts_of(renewed("a", 29)))));
        let items = vec![(0, renewed("a", 0)), (31, up()), (31, renewed("a", 31))];
        let (exit, out, err, _) = run_with(items, opts, 600, confirm).await;
        assert_eq!(exit, Exit::TimedOut, "--until stale never reached");
        assert!(!out.contains(" stale "), "{out}");
        assert!(out.lines().any(|l| l.starts_with("12:00:30Z   renewed")), "the read's renewal is a row: {out}");
        assert_eq!(
            err,
            "watch interrupted: no event in 30s while a read on a new connection found the Lease renewed; the \
             watch's connection is presumed dead; reconnecting\nwatch resumed\nerror: timed out waiting for Lease \
             dispatch-system/dispatch-admission to be stale (--timeout 40s; last: fresh)\n"
        );
        assert!(restarts.asked_now(), "the watch is started again");
        // No answer: the outage rule (unknown, said once; --until stale not reached).
        let cause = "no answer within 10s (the API server did not answer in time)";
        let (confirm, _restarts) = Confirmers::scripted(Some(Confirmed::NoAnswer(cause.into())));
        let opts = LeaseWatch { until: Some(Until::Stale), ..watch() };
        let (exit, out, err, _) = run_with(vec![(0, renewed("a", 0))], opts, 45, confirm).await;
        assert_eq!(exit, Exit::Success, "ended by the shutdown, not --until");
        assert!(!out.contains(" stale "), "{out}");
        let unknown = "heartbeat unknown: its stale deadline passed while the connection was down (no event in 30s, \
                       and a read of the Lease: no answer within 10s";
        assert_eq!(err.matches(unknown).count(), 1, "{err}");
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(40)), ..watch() };
        // Not renewed: stale, --until stale reached.
        let (exit, out, err, _) = run(vec![(0, renewed("a", 0))], opts, 600).await;
        assert_eq!((exit, err.as_str()), (Exit::Success, ""));
        assert!(out.lines().any(|l| l.starts_with("12:00:30Z   stale")), "{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn kueues_lease_failing_never_hides_dispatchs_stale() {
        // Kueue's manager's Lease answers 503 from the start; dispatch's goes stale at 30 s.
        let clock = TokioClock { base: base(), start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let failing = KueueLeaseUpdate::Link(LinkEvent::Down("the API server failed (503: down)".into()));
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(60)), ..watch() };
        let confirm = Confirmers::scripted(None).0;
        let exit = follow(
            script(vec![(0, up()), (0, renewed("a", 0))]),
            || script(vec![(0, failing)]),
            Shown { leases: leases(), output: table(), opts, live_line: false, confirm },
            tokio::time::sleep(Duration::from_secs(600)),
            &mut deps,
        )
        .await
        .unwrap();
        assert_eq!(exit, Exit::Success, "--until stale reached");
        let out = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(out.lines().any(|l| l.starts_with("12:00:30Z   stale")), "{out}");
        let err = String::from_utf8(err.0.lock().unwrap().clone()).unwrap();
        assert_eq!(err, "watch interrupted: the API server failed (503: down); reconnecting\n", "said, nothing more");
    }

    #[tokio::test(start_paused = true)]
    async fn until_fresh_times_out_with_the_last_states_code() {
        let opts = LeaseWatch { until: Some(Until::Fresh), timeout: Some(Duration::from_secs(5)), ..watch() };
        let (exit, ..) = run(vec![(0, LeaseUpdate::Lease(None))], opts, 600).await;
        assert_eq!(exit, Exit::No);
        let (exit, ..) = run(vec![(0, LeaseUpdate::Forbidden("get leases".into()))], opts, 600).await;
        assert_eq!(exit, Exit::Unknown);
        let (exit, _, _, elapsed) = run(vec![(0, LeaseUpdate::Lease(None)), (3, renewed("a", 3))], opts, 600).await;
        assert_eq!((exit, elapsed.as_secs()), (Exit::Success, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn until_holder_change() {
        let opts = LeaseWatch { until: Some(Until::HolderChange), ..watch() };
        let (exit, out, _, elapsed) = run(vec![(0, renewed("a", 0)), (15, renewed("b", 15))], opts, 600).await;
        assert_eq!((exit, elapsed.as_secs()), (Exit::Success, 15));
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
        let e = follow(
            script(items),
            stream::pending,
            Shown { leases: leases(), output, opts, live_line: false, confirm: Confirmers::scripted(None).0 },
            stop,
            &mut deps,
        )
        .await
        .unwrap_err();
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
        assert_eq!(exit, Exit::Success);
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_passed_in_an_outage_is_unknown_and_until_stale_is_not_reached() {
        // Renewed at 0 (stale past 30 s), cut off at 2 and never back: no stale row, no exit 0.
        let cut = down("the API server refuses connections (connection refused)");
        let opts = LeaseWatch { until: Some(Until::Stale), timeout: Some(Duration::from_secs(60)), ..watch() };
        let (e, out) = run_err(vec![(0, up()), (0, renewed("a", 0)), (2, cut.clone())], opts).await;
        assert_eq!(e.exit(), Exit::Failed, "{e}");
        assert!(!out.contains(" stale "), "{out}");
        // Back at 40 with nothing renewed: stale then, and only then.
        let items = vec![(0, renewed("a", 0)), (2, cut), (40, up())];
        let (exit, out, err, elapsed) = run(items, opts, 600).await;
        assert_eq!(exit, Exit::Success);
        assert_eq!(elapsed, Duration::from_secs(41), "judged a moment after the connection is back");
        let stale = out.lines().find(|l| l.contains(" stale ")).expect("the stale row once back");
        assert!(stale.starts_with("12:00:41Z"), "{stale}");
        assert!(
            err.contains(
                "Lease dispatch-system/dispatch-admission: heartbeat unknown: its stale deadline passed while the \
                 connection was down (the API server refuses connections (connection refused)); judged again when it \
                 is back"
            ),
            "{err}"
        );
        // Back at 40 and renewed meanwhile: never stale.
        // The resumed watch replays the renewals it missed, the first 35 s old: never stale.
        let items =
            vec![(0, renewed("a", 0)), (2, down("x")), (40, up()), (40, renewed("a", 5)), (40, renewed("a", 38))];
        let opts = LeaseWatch { timeout: Some(Duration::from_secs(60)), ..opts };
        let (exit, out, _, _) = run(items, opts, 600).await;
        assert_eq!(exit, Exit::TimedOut);
        assert!(!out.contains(" stale "), "{out}");
    }

    /// A stdout whose reader went away after the first write (`| head -1`).
    struct Closing(bool);

    impl Write for Closing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_stdout_keeps_the_code_the_timeout_would_give() {
        for (until, exit) in
            [(Some(Until::Fresh), Exit::No), (Some(Until::Stale), Exit::Success), (None, Exit::Success)]
        {
            let clock = TokioClock { base: base(), start: Instant::now() };
            let (mut out, mut err) = (Closing(false), Shared::default());
            let log = Log::silent();
            let mut deps = Deps {
                clock: &clock,
                out: &mut out,
                err: &mut err,
                log: &log,
                style: Default::default(),
                printer: None,
            };
            let opts = LeaseWatch { until, timeout: Some(Duration::from_secs(8)), ..watch() };
            let stop = tokio::time::sleep(Duration::from_secs(600));
            let items = script(vec![(0, up()), (0, renewed("a", -100)), (2, renewed("a", -100))]);
            let got = follow(
                items,
                stream::pending,
                Shown {
                    leases: leases(),
                    output: table(),
                    opts,
                    live_line: false,
                    confirm: Confirmers::scripted(None).0,
                },
                stop,
                &mut deps,
            )
            .await
            .unwrap();
            assert_eq!(got, exit, "{until:?}");
        }
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
        follow(
            items,
            stream::pending,
            Shown { leases: leases(), output, opts: watch(), live_line: false, confirm: Confirmers::scripted(None).0 },
            stop,
            &mut deps,
        )
        .await
        .unwrap();
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
        let exit = follow(
            script(dispatch),
            || script(kueue),
            Shown { leases: leases(), output, opts: watch(), live_line: false, confirm: Confirmers::scripted(None).0 },
            stop,
            &mut deps,
        )
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
        assert_eq!((exit, err.as_str()), (Exit::Success, ""));
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
                "12:00:00Z   Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 100s ago"
            ),
            "{out}"
        );
        assert_eq!(err, "");
        let (_, out, err) = with_kueue(kueue, 0, Output { format: Format::Table, no_headers: true }, 3).await;
        assert!(!out.contains("Kueue"), "stdout holds only rows: {out}");
        assert!(
            err.starts_with("Kueue's manager: Lease kueue-system/c1f6bfd2.kueue.x-k8s.io was last renewed 100s ago"),
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
        assert_eq!((exit, err.as_str()), (Exit::Success, ""));
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
        let e = follow(
            script(vec![(0, down), (1, refused)]),
            never,
            Shown {
                leases: leases(),
                output: table(),
                opts: watch(),
                live_line: false,
                confirm: Confirmers::scripted(None).0,
            },
            stop,
            &mut deps,
        )
        .await
        .unwrap_err();
        assert_eq!(e.exit(), Exit::Failed);
        assert_eq!(
            String::from_utf8(err.0.lock().unwrap().clone()).unwrap(),
            "watch interrupted: the API server refuses connections (connection refused); reconnecting\n"
        );
    }
}

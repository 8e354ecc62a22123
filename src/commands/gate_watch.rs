//! `gate --watch` and `gate --wait`: the gate followed live, through the merged watches of
//! [`crate::cluster::watching::kueue`] (the ClusterQueues, AdmissionChecks, Workloads and
//! LocalQueues, dispatch's Lease and Kueue's manager's), kept current event by event in
//! [`LiveGate`], and judged again when the Lease's stale timer fires. `--watch` prints the
//! chain again each time a verdict or deciding reason changes, the number of waiting Workloads
//! each time it changes, and a line when Kueue's manager's Lease changes state; `--wait`
//! prints once, when the gate is yes or the timeout comes.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::stream::{self, BoxStream};
use k8s_openapi::jiff::Timestamp;

use super::Deps;
use super::gate::{Collected, GateOptions};
use super::live::{Confirmers, Documents, Driver, Feed, LiveLoop, Woken};
use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::cluster::watching::kueue::{self as streams, STREAMS, Update, What};
use crate::core::heartbeats::{Heartbeats, Steps};
use crate::core::kueue_lease::{First, Told};
use crate::core::lease::LeaseAssessment;
use crate::core::live_gate::{Fact, LiveGate, Signature};
use crate::core::live_lease::{End, Ending, Role, Setup};
use crate::core::verdict::Verdict;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Format;
use crate::invocation::GateLive;
use crate::render::watch::kueue_line;
use crate::report::GateRun;

pub async fn run(
    conn: &Connection,
    opts: &GateOptions<'_>,
    live: GateLive,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let log = deps.log;
    let discovered = fetch::discover_kueue(conn, log).await?;
    let namespace = (!opts.all_namespaces).then(|| conn.namespace.clone());
    // The version the watches use is the one these first reads could be served at.
    // The LocalQueues are read here too (then watched), so that a version Kueue's conversion
    // webhook cannot serve them at is found before any watch starts.
    let served = fetch::read_served(&discovered, log, async |k: &KueueApi| {
        futures::try_join!(
            fetch::local_queues(conn, k, namespace.as_deref(), log),
            fetch::probe(conn, k, namespace.as_deref(), log)
        )?;
        Ok(())
    })
    .await?;
    if let Some(w) = &served.warning {
        deps.warn(w);
    }
    let (restart, dispatch) = crate::cluster::watching::reflector::restart();
    let (kueue_restart, kueue) = crate::cluster::watching::reflector::restart();
    let scope = (namespace.as_deref(), opts.selector);
    let restarts = streams::Restarts { dispatch, kueue };
    let streams = streams::streams(conn, &served.kueue, opts.settings, opts.all_states, scope, log, restarts);
    let confirm = Confirmers {
        dispatch: super::live::confirmer(conn, &opts.settings.lease, restart),
        kueue: super::live::confirmer(conn, &opts.settings.kueue_lease, kueue_restart),
    };
    super::live::ended(follow(streams, opts, (live, confirm), namespace, super::shutdown(), deps).await)
}

/// The run a full evaluation at `now` gives: the one-shot gate's [`judge`](super::gate::judge)
/// of the facts as they stand. Built only to be printed.
fn run_at(state: &LiveGate, opts: &GateOptions<'_>, namespace: Option<&str>, now: Timestamp) -> GateRun {
    // Kueue's version warning was printed once, before the watches started; the server's clock
    // is said by the link.
    let collected = Collected {
        facts: state.facts(),
        waiting: state.waiting(),
        server_date: None,
        kueue_warning: None,
        kueue_lease: state.kueue_lease().cloned(),
    };
    super::gate::judge(collected, opts, namespace.unwrap_or_default(), now)
}

/// Follows the watches' updates until `shutdown` resolves, the timeout, or (with `--wait`) a
/// yes. This machine's clock is compared with the server's `Date` at every answer by the link
/// ([`crate::core::link::Link`]), which says it once; so the judge is given no date of its own
/// to warn from. Each event is judged as the one-shot gate judges ([`super::gate::warnings`]
/// at every event, each warning printed when it first appears; [`judge`](super::gate::judge)
/// for what is printed), but only what the event touched is computed again ([`LiveGate`]).
/// dispatch's Lease is the heartbeat machine's ([`crate::core::live_lease`], run by
/// [`super::live::Driver`] as for `lease --watch`): the gate judges it as the machine last
/// judged it, and never while the machine holds it (a deadline passed that a read has not
/// confirmed yet, an outage, the moment after one). Kueue's manager's Lease is a separate
/// instance of the machine ([`crate::core::heartbeats`]), context under the chains.
async fn follow(
    streams: Vec<BoxStream<'static, Update>>,
    opts: &GateOptions<'_>,
    (live, confirm): (GateLive, Confirmers),
    namespace: Option<String>,
    shutdown: impl std::future::Future<Output = ()>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let lease = |lease: &crate::core::lease::LeaseRef, stream, role| Setup {
        lease: lease.clone(),
        changes_only: false,
        until: None,
        stream,
        role,
    };
    let setup = lease(&opts.settings.lease, LEASE, Role::Deciding);
    // Kueue's manager's Lease (5) is context.
    let kueue = lease(&opts.settings.kueue_lease, KUEUE_LEASE, Role::Context);
    let updates = LiveLoop::new(stream::select_all(streams), shutdown, live.timeout, false);
    let mut gate = Following {
        driver: Driver::new(updates, Heartbeats::new(STREAMS, setup, Some(kueue)), confirm),
        told: Told::new(First::Noted),
        kueue_line: None,
        state: LiveGate::new(opts.settings, opts.all_states),
        warned: BTreeSet::new(),
        last: None,
        opts,
        namespace,
        timeout: live.timeout,
    };
    match live.wait {
        true => wait(&mut gate, deps).await,
        false => watch(&mut gate, deps).await,
    }
}

/// The gate as the watches keep it, the machine's driver, and the last judgement.
struct Following<'a, 'o, S, F> {
    driver: Driver<S, F>,
    state: LiveGate,
    /// What was said of Kueue's manager.
    told: Told,
    /// Kueue's manager's Lease as its instance judged it, to be said at the next judgement.
    kueue_line: Option<LeaseAssessment>,
    /// The warnings of the last judgement, each printed when it first appeared.
    warned: BTreeSet<String>,
    /// When the last judgement was, and its verdict.
    last: Option<(Timestamp, Verdict)>,
    opts: &'a GateOptions<'o>,
    namespace: Option<String>,
    timeout: Option<Duration>,
}

/// dispatch's Lease's stream, and Kueue's manager's, among [`streams::streams`].
const LEASE: usize = 4;
const KUEUE_LEASE: usize = 5;

/// What the loop stopped for.
enum Step {
    /// The facts changed (or a Lease turned stale) and were judged at this moment.
    Judged(Timestamp, Verdict),
    Shutdown,
    /// `--timeout`, with the connection live.
    TimedOut,
    /// Every stream ended.
    Ended,
}

impl<S: futures::Stream<Item = Update>, F: std::future::Future<Output = ()>> Following<'_, '_, S, F> {
    /// Waits for the next judgement, saying on stderr what the machine says (the connection,
    /// a polled Lease, the unknown heartbeat) and each new warning.
    async fn next(&mut self, deps: &mut Deps<'_>) -> Result<Step, Error> {
        loop {
            match self.driver.next(deps.clock, feed).await {
                Woken::Shutdown => return Ok(Step::Shutdown),
                Woken::Ended => return Ok(Step::Ended),
                Woken::TimedOut(Ending::Down(cause)) if self.timeout.is_some() => {
                    let timeout = self.timeout.unwrap_or_default();
                    return Err(Error::DownAtTimeout { timeout, cause });
                }
                Woken::TimedOut(_) => return Ok(Step::TimedOut),
                Woken::Tick => {}
                Woken::Own(fact) => self.state.apply(fact),
                Woken::Steps(steps) => self.said(*steps, deps)?,
            }
            if !self.state.ready() || self.driver.beats.holding(deps.clock.now()) {
                continue;
            }
            return Ok(self.judge(deps));
        }
    }

    /// What the machine made of an input: its lines said, its refusal the end, and each
    /// Lease it judged kept (Kueue's manager's also told, when its status changed).
    fn said(&mut self, steps: Steps, deps: &mut Deps<'_>) -> Result<(), Error> {
        if let Some(End::Refused(refusal)) = steps.dispatch.end {
            return Err(super::live::refused(refusal));
        }
        for step in [&steps.dispatch, &steps.kueue] {
            for line in step.said.iter().chain(&step.warning) {
                let _ = writeln!(deps.err, "{line}");
            }
        }
        let beats = &self.driver.beats;
        if steps.dispatch.judged
            && let Some(lease) = beats.dispatch().last()
        {
            self.state.apply(Fact::Lease(lease.clone()));
        }
        if let Some(kueue) = beats.kueue().filter(|_| steps.kueue.judged) {
            if let Some(lease) = kueue.last() {
                self.state.apply(Fact::KueueLease(lease.clone()));
            }
            if let Some(a) = kueue.tracker().assess(deps.clock.now()).and_then(|a| self.told.judged(a)) {
                self.kueue_line = Some(a);
            }
        }
        Ok(())
    }

    /// Judges the facts at this moment, printing each new warning.
    fn judge(&mut self, deps: &mut Deps<'_>) -> Step {
        let now = deps.clock.now();
        let lease = self.state.lease().and_then(|f| f.found());
        let warnings = super::gate::warnings((None, None), lease, self.state.waiting_forbidden(), now);
        for w in warnings.iter().filter(|w| !self.warned.contains(*w)) {
            deps.warn(w);
        }
        self.warned = warnings.into_iter().collect();
        let verdict = self.state.verdict(now);
        self.last = Some((now, verdict));
        self.driver.live.judged();
        Step::Judged(now, verdict)
    }

    fn run_at(&self, now: Timestamp) -> GateRun {
        run_at(&self.state, self.opts, self.namespace.as_deref(), now)
    }
}

/// An update as the machine takes it: dispatch's Lease and every stream's connection are the
/// machine's, the other facts the gate's.
fn feed(Update { stream, what }: Update) -> Feed<Fact> {
    match what {
        What::Link(event) => Feed::Link(stream, event),
        What::Polling { lease, every, rule } => Feed::Polling { lease, every, rule },
        What::Fact(Fact::Lease(read)) => Feed::Lease(read),
        What::Fact(Fact::KueueLease(read)) => Feed::Kueue(read),
        What::Fact(fact) => Feed::Own(fact),
    }
}

/// `gate --wait`: prints once, when the gate is yes (exit 0) or at `--timeout` (the last
/// verdict's code); Ctrl-C ends it like a timeout, without the print.
async fn wait<S, F>(gate: &mut Following<'_, '_, S, F>, deps: &mut Deps<'_>) -> Result<Exit, Error>
where
    S: futures::Stream<Item = Update>,
    F: std::future::Future<Output = ()>,
{
    loop {
        match gate.next(deps).await? {
            Step::Judged(now, Verdict::Yes) => {
                super::live::unless_closed(render_once(&gate.run_at(now), gate.opts, deps))?;
                return Ok(Exit::Success);
            }
            Step::Judged(..) => {}
            Step::Shutdown => return Ok(gate.last.map(|(_, v)| Exit::from(v)).unwrap_or(Exit::Unknown)),
            // The last chain, then the error line: with --no-headers the chain's checks go to
            // stderr too, and the error ends what is said there.
            Step::TimedOut => {
                let last = gate.last.map(|(_, v)| v.as_str());
                let text = gate.timeout.map(|timeout| crate::exit::timed_out("the gate to be yes", timeout, last));
                let exit = match gate.last {
                    Some((at, verdict)) => {
                        super::live::unless_closed(render_once(&gate.run_at(at), gate.opts, deps))?;
                        Exit::from(verdict)
                    }
                    None => Exit::Unknown,
                };
                deps.out.flush()?;
                if let Some(text) = text {
                    let _ = std::io::Write::write_fmt(deps.err, format_args!("error: {text}\n"));
                }
                return Ok(exit);
            }
            Step::Ended => return Ok(Exit::Success),
        }
    }
}

/// `gate --watch`: the chains again each time a verdict or deciding reason changes, the number
/// of waiting Workloads each time it changes, and a line when Kueue's manager's Lease changes
/// state. Ends with 0 (Ctrl-C, `--timeout`).
async fn watch<S, F>(gate: &mut Following<'_, '_, S, F>, deps: &mut Deps<'_>) -> Result<Exit, Error>
where
    S: futures::Stream<Item = Update>,
    F: std::future::Future<Output = ()>,
{
    let opts = gate.opts;
    let structured = matches!(opts.output.format, Format::Json | Format::Yaml);
    let mut docs = Documents::default();
    let mut shown: Option<Signature> = None;
    let mut shown_waiting: Option<usize> = None;
    loop {
        let now = match gate.next(deps).await? {
            Step::Judged(now, _) => now,
            Step::Shutdown | Step::TimedOut | Step::Ended => return Ok(Exit::Success),
        };
        let signature = gate.state.signature(now);
        // Kueue's manager, as context: said when its Lease changes state, and at the start
        // whatever the one-shot gate notes under its chains (nothing while a manager leads).
        let kueue = gate.kueue_line.take();
        if shown.as_ref() != Some(&signature) || (structured && kueue.is_some()) {
            print_chains(&gate.run_at(now), opts, docs.count_one(), deps)?;
            shown = Some(signature);
        }
        if let Some(a) = kueue.as_ref().filter(|_| !structured) {
            writeln!(super::live::notes(deps, opts.output.no_headers).note(), "{} {}", stamp(now), kueue_line(a))?;
            deps.out.flush()?;
        }
        let stalled = gate.state.stalled();
        if shown_waiting != Some(stalled) && !structured {
            let noun = if stalled == 1 { "workload waits" } else { "workloads wait" };
            let line = format!("{} {stalled} {noun} at dispatch's Pending check", stamp(now));
            writeln!(super::live::notes(deps, opts.output.no_headers).note(), "{line}")?;
            deps.out.flush()?;
            shown_waiting = Some(stalled);
        }
    }
}

fn stamp(now: Timestamp) -> String {
    now.strftime("%H:%M:%SZ").to_string()
}

/// `--wait`'s one print: the printer of `-o jsonpath=...` and the like, else the format's.
fn render_once(run: &GateRun, opts: &GateOptions<'_>, deps: &mut Deps<'_>) -> Result<(), Error> {
    match deps.printer {
        Some(printer) => printer.print(&run.document(), deps.out),
        None => Ok(crate::render::gate::render_to(run, opts.output, deps.style, deps.out, deps.err)?),
    }
}

fn print_chains(run: &GateRun, opts: &GateOptions<'_>, docs: usize, deps: &mut Deps<'_>) -> Result<(), Error> {
    if let Some(printer) = deps.printer {
        printer.print(&run.document(), deps.out)?;
        deps.out.flush()?;
        return Ok(());
    }
    match opts.output.format {
        Format::Json => crate::render::structured::json_line(deps.out, &run.document())?,
        Format::Yaml => crate::render::structured::yaml_document(deps.out, &run.document(), docs)?,
        Format::Table | Format::Wide | Format::Prometheus => {
            writeln!(
                super::live::notes(deps, opts.output.no_headers).note(),
                "{} ReadmissionGate re-evaluated",
                stamp(run.now)
            )?;
            for chain in &run.report.chains {
                crate::render::gate::chain_block(
                    chain,
                    &run.report.lease.lease.to_string(),
                    opts.output.no_headers,
                    deps.style,
                    deps.out,
                    deps.err,
                )?;
            }
        }
    }
    deps.out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use k8s_openapi::jiff::SignedDuration;
    use tokio::time::Instant;

    use super::*;
    use crate::core::fetched::{Denied, Fetched};
    use crate::core::gate::{GateFacts, GateSettings};
    use crate::core::lease::LeaseFacts;
    use crate::core::link::LinkEvent;
    use crate::core::live_gate::sample::{at, facts};
    use crate::core::live_gate::{Fact, ListChange};
    use crate::core::waiting::Waiting;

    /// A wall clock that moves with tokio's (paused) time.
    struct TokioClock {
        start: tokio::time::Instant,
    }

    impl crate::clock::Clock for TokioClock {
        fn now(&self) -> Timestamp {
            at(0) + SignedDuration::try_from(self.start.elapsed()).unwrap()
        }
    }

    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn fact(stream: usize, fact: Fact) -> Update {
        Update { stream, what: What::Fact(fact) }
    }

    /// Kueue's manager's Lease, held and renewed at second `renewed` for 15 s.
    fn kueue_renewed(renewed: i64) -> Fact {
        Fact::KueueLease(Fetched::Found(LeaseFacts {
            holder: Some("kueue-controller-manager-0_1".into()),
            renew_time: Some(at(renewed)),
            acquire_time: Some(at(0)),
            duration_seconds: Some(15),
            transitions: Some(0),
        }))
    }

    /// One list read whole at second 0.
    fn listed<T>(
        stream: usize,
        wrap: fn(ListChange<T>) -> Fact,
        page: Vec<((String, String), T)>,
    ) -> [(u64, Update); 3] {
        [ListChange::Init, ListChange::Page(page), ListChange::InitDone].map(|c| (0, fact(stream, wrap(c))))
    }

    /// `items` at their seconds, then silence; the stream stays open.
    fn timed(items: Vec<(u64, Update)>) -> BoxStream<'static, Update> {
        let start = Instant::now();
        stream::iter(items)
            .then(move |(second, u)| async move {
                tokio::time::sleep_until(start + Duration::from_secs(second)).await;
                u
            })
            .chain(stream::pending())
            .boxed()
    }

    /// Every store listed at second 0 from `facts`, the Workloads' list as `workloads` says
    /// (`None`: forbidden), Kueue's manager's Lease as `kueue` says at second 0 and as each of
    /// `kueue_later` says at its second, then dispatch's Lease as renewed at each of `renewals`.
    fn updates_with(
        facts: GateFacts,
        workloads: Option<Vec<Waiting>>,
        renewals: &[(u64, i64)],
        kueue: Fact,
        kueue_later: Vec<(u64, Fact)>,
    ) -> BoxStream<'static, Update> {
        // Each stream's first list answered: the connection is up, as the reflector says it.
        let mut items: Vec<(u64, Update)> =
            (0..STREAMS).map(|stream| (0, Update { stream, what: What::Link(LinkEvent::Up) })).collect();
        let key = |name: &str| (String::new(), name.to_string());
        let queues = facts.cluster_queues.found().cloned().unwrap_or_default();
        let checks = facts.admission_checks.found().cloned().unwrap_or_default();
        items.extend(listed(0, Fact::Queue, queues.into_iter().map(|q| (key(&q.name), q)).collect()));
        items.extend(listed(1, Fact::Check, checks.into_iter().map(|c| (key(&c.name), c)).collect()));
        match workloads {
            Some(rows) => items.extend(listed(2, Fact::Workload, vec![(("ml".into(), "job".into()), rows)])),
            None => items.push((
                0,
                fact(2, Fact::Workload(ListChange::Forbidden("list workloads.kueue.x-k8s.io in namespace ml".into()))),
            )),
        }
        items.extend(listed(3, Fact::LocalQueue, Vec::new()));
        items.push((0, fact(5, kueue)));
        let lease = match &facts.lease {
            Fetched::Found(l) => l.clone(),
            _ => LeaseFacts::default(),
        };
        let mut later: Vec<(u64, Update)> = renewals
            .iter()
            .map(|(second, renewed)| {
                let l = LeaseFacts { renew_time: Some(at(*renewed)), ..lease.clone() };
                (*second, fact(4, Fact::Lease(Fetched::Found(l))))
            })
            .chain(kueue_later.into_iter().map(|(second, f)| (second, fact(5, f))))
            .collect();
        later.sort_by_key(|(second, _)| *second);
        items.extend(later);
        timed(items)
    }

    /// [`updates_with`] where Kueue's manager holds no Lease.
    fn updates(
        facts: GateFacts,
        workloads: Option<Vec<Waiting>>,
        renewals: &[(u64, i64)],
    ) -> BoxStream<'static, Update> {
        updates_with(facts, workloads, renewals, Fact::KueueLease(Fetched::Missing), Vec::new())
    }

    /// Follows `updates` as `gate --watch` (or `--wait`) in `format` until a shutdown at
    /// `stop_after`.
    async fn follow_as(
        updates: BoxStream<'static, Update>,
        live: GateLive,
        format: Format,
        stop_after: u64,
    ) -> (Exit, String, String, Duration) {
        follow_confirmed(updates, (live, Confirmers::scripted(None).0), format, stop_after).await
    }

    /// As [`follow_as`], with the confirming read answered by the given [`Confirmers`].
    async fn follow_confirmed(
        updates: BoxStream<'static, Update>,
        (live, confirm): (GateLive, Confirmers),
        format: Format,
        stop_after: u64,
    ) -> (Exit, String, String, Duration) {
        let clock = TokioClock { start: Instant::now() };
        let (mut out, mut err) = (Shared::default(), Shared::default());
        let log = crate::log::Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let settings = GateSettings::default();
        let opts = GateOptions {
            settings: &settings,
            output: crate::invocation::Output { format, no_headers: false },
            all_states: false,
            all_namespaces: false,
            selector: None,
            sort_by: None,
        };
        let started = Instant::now();
        let stop = tokio::time::sleep(Duration::from_secs(stop_after));
        let exit = follow(vec![updates], &opts, (live, confirm), Some("ml".into()), stop, &mut deps).await.unwrap();
        let text = |s: &Shared| String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        (exit, text(&out), text(&err), started.elapsed())
    }

    async fn follow_for(
        updates: BoxStream<'static, Update>,
        live: GateLive,
        stop_after: u64,
    ) -> (Exit, String, String, Duration) {
        follow_as(updates, live, Format::Table, stop_after).await
    }

    const WATCH: GateLive = GateLive { wait: false, timeout: None };

    #[tokio::test(start_paused = true)]
    async fn the_stale_timer_re_evaluates_without_any_event_and_shutdown_ends_the_watch() {
        let (exit, out, err, elapsed) = follow_for(updates(facts(0), Some(Vec::new()), &[(0, 0)]), WATCH, 120).await;
        assert_eq!(exit, Exit::Success, "Ctrl-C ends a watch successfully");
        assert_eq!(elapsed, Duration::from_secs(120), "it ran until the shutdown");
        let evaluated: Vec<&str> = out.lines().filter(|l| l.ends_with("ReadmissionGate re-evaluated")).collect();
        assert_eq!(
            evaluated,
            ["12:00:00Z ReadmissionGate re-evaluated", "12:00:30Z ReadmissionGate re-evaluated"],
            "{out}"
        );
        assert!(out.contains("12:00:00Z 0 workloads wait at dispatch's Pending check"), "{out}");
        assert_eq!(err, "", "no warning: {err}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_lease_is_stale_in_a_verdict_only_when_a_read_confirms_it() {
        use crate::core::confirm::Confirmed;
        // Renewed at 0, then nothing from the watch: at 30 s the read finds it renewed at 29.
        let renewed = LeaseFacts { renew_time: Some(at(29)), ..facts(0).lease.found().unwrap().clone() };
        let confirm = Confirmers::scripted(Some(Confirmed::Read(Fetched::Found(renewed)))).0;
        let story = updates(facts(0), Some(Vec::new()), &[(0, 0)]);
        let (_, out, err, _) = follow_confirmed(story, (WATCH, confirm), Format::Table, 40).await;
        assert!(!out.contains("ReadmissionGate: no"), "{out}");
        assert!(
            err.starts_with(
                "watch interrupted: no event in 30s while a read on a new connection found the Lease renewed"
            ),
            "{err}"
        );
        // No answer: unknown, said once, and no stale verdict either.
        let cause = "no answer within 10s (the API server did not answer in time)";
        let confirm = Confirmers::scripted(Some(Confirmed::NoAnswer(cause.into()))).0;
        let story = updates(facts(0), Some(Vec::new()), &[(0, 0)]);
        let (_, out, err, _) = follow_confirmed(story, (WATCH, confirm), Format::Table, 40).await;
        assert!(!out.contains("ReadmissionGate: no"), "{out}");
        assert_eq!(err.matches("heartbeat unknown: its stale deadline passed").count(), 1, "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_passed_while_the_lease_stream_is_down_is_no_verdict_until_it_is_back() {
        // Renewed at 0, dispatch's Lease's stream cut at 2 and back at 40, never renewed again.
        let cut = LinkEvent::Down("the API server closed the connection".into());
        let link = |second: u64, event: LinkEvent| (second, Update { stream: LEASE, what: What::Link(event) });
        let story = stream::select(
            updates(facts(0), Some(Vec::new()), &[(0, 0)]),
            timed(vec![link(2, cut), link(40, LinkEvent::Up)]),
        )
        .boxed();
        let (_, out, err, _) = follow_for(story, WATCH, 45).await;
        assert_eq!(
            err,
            "watch interrupted: the API server closed the connection; reconnecting\n\
             Lease dispatch-system/dispatch-admission: heartbeat unknown: its stale deadline passed while the \
             connection was down (the API server closed the connection); judged again when it is back\n\
             watch resumed\n"
        );
        let verdicts: Vec<&str> = out.lines().filter(|l| l.starts_with("ReadmissionGate: ")).collect();
        assert_eq!(verdicts.len(), 2, "yes, then no once back: {out}");
        assert!(verdicts[1].starts_with("ReadmissionGate: no"), "{out}");
        let judged: Vec<&str> = out.lines().filter(|l| l.ends_with("ReadmissionGate re-evaluated")).collect();
        assert!(judged[1].starts_with("12:00:41Z"), "judged a moment after the connection is back: {out}");
    }

    #[tokio::test(start_paused = true)]
    async fn watch_prints_the_one_shot_gates_warnings_once_each() {
        // The Workloads may not be listed; our clock is 10 s ahead of the API server's; the
        // Lease is renewed 5 s in the future, at second 0 and again at second 2.
        let clock = Update { stream: 4, what: What::Link(LinkEvent::Clock { server: at(-10), local: at(0) }) };
        let stream = stream::iter([clock]).chain(updates(facts(5), None, &[(0, 5), (2, 7)])).boxed();
        let (_, _, err, _) = follow_for(stream, WATCH, 20).await;
        let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("Warning: ")).collect();
        assert_eq!(
            warnings,
            [
                "Warning: this machine's clock is about 9s ahead of the API server's; Lease ages are measured with this machine's clock",
                "Warning: the Lease's renewTime is 5s in the future: the holder's clock is ahead of this machine's",
                "Warning: cannot show waiting Workloads: missing RBAC: list workloads.kueue.x-k8s.io in namespace ml",
            ],
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn wait_gives_up_at_its_timeout_with_the_last_verdict() {
        let live = GateLive { wait: true, timeout: Some(Duration::from_secs(45)) };
        // Stale from the start (renewed a minute before): a yes would end the wait at once.
        let (exit, out, _, elapsed) = follow_for(updates(facts(-60), Some(Vec::new()), &[(0, -60)]), live, 600).await;
        assert_eq!(elapsed, Duration::from_secs(45), "it gave up at --timeout");
        assert_eq!(exit, Exit::from(Verdict::No), "{out}");
        assert!(out.contains("ReadmissionGate"), "the last verdict is printed: {out}");
        let live = GateLive { wait: true, timeout: Some(Duration::from_secs(45)) };
        let (exit, _, _, elapsed) =
            follow_for(updates(facts(-60), Some(Vec::new()), &[(0, -60), (10, 10)]), live, 600).await;
        assert_eq!((exit, elapsed), (Exit::Success, Duration::from_secs(10)), "a yes ends the wait");
    }

    /// Kueue's manager's Lease renewed at 0 (fresh, no line), stale from 30 s with no event
    /// (its own timer), renewed at 40, deleted at 50 (a manager without leader election),
    /// forbidden at 60; dispatch's Lease renewed every 10 s, so the chain never changes.
    fn kueue_story() -> BoxStream<'static, Update> {
        let renewals: Vec<(u64, i64)> = (0..8).map(|i| (i * 10, i as i64 * 10)).collect();
        let rule =
            "get, list and watch leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system";
        let later = vec![
            (40, kueue_renewed(40)),
            (45, kueue_renewed(45)),
            (50, Fact::KueueLease(Fetched::Missing)),
            (60, Fact::KueueLease(Fetched::Forbidden(Denied { rule: rule.into() }))),
        ];
        updates_with(facts(0), Some(Vec::new()), &renewals, kueue_renewed(0), later)
    }

    #[tokio::test(start_paused = true)]
    async fn kueues_manager_lease_is_followed_live_with_a_stale_timer_of_its_own() {
        let (exit, out, err, _) = follow_for(kueue_story(), WATCH, 70).await;
        assert_eq!(exit, Exit::Success);
        assert_eq!(err, "", "{err}");
        let lease = "kueue-system/c1f6bfd2.kueue.x-k8s.io";
        let kueue: Vec<&str> = out.lines().filter(|l| l.contains("Kueue's manager: ")).collect();
        assert_eq!(
            kueue,
            [
                format!(
                    "12:00:30Z Kueue's manager: Lease {lease} was last renewed 31s ago, beyond 30s: no manager leads, so Kueue admits nothing"
                ),
                format!("12:00:40Z Kueue's manager: Lease {lease} renewed 0s ago, within 30s: a manager leads"),
                format!("12:00:50Z Kueue's manager: no Lease {lease}: its heartbeat cannot be shown"),
                format!(
                    "12:01:00Z Kueue's manager: Lease {lease} cannot be read without RBAC: get, list and watch leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system"
                ),
            ],
            "a line each time its state changes, none for a renewal of a fresh Lease:\n{out}"
        );
        let evaluated = out.lines().filter(|l| l.ends_with("ReadmissionGate re-evaluated")).count();
        assert_eq!(evaluated, 1, "Kueue's Lease is context: the chain is not printed again:\n{out}");
    }

    #[tokio::test(start_paused = true)]
    async fn kueues_manager_lease_in_json_a_document_at_each_change_of_its_state() {
        let (_, out, _, _) = follow_as(kueue_story(), WATCH, Format::Json, 70).await;
        let docs: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let states: Vec<(&str, &str)> = docs
            .iter()
            .map(|d| (d["evaluatedAt"].as_str().unwrap(), d["kueueLease"]["status"].as_str().unwrap()))
            .collect();
        assert_eq!(
            states,
            [
                ("2026-11-30T12:00:00.000000Z", "fresh"),
                // The timer is set a microsecond after the last fresh instant; tokio's timers
                // fire on the millisecond.
                ("2026-11-30T12:00:30.001000Z", "stale"),
                ("2026-11-30T12:00:40.000000Z", "fresh"),
                ("2026-11-30T12:00:50.000000Z", "no lease"),
                ("2026-11-30T12:01:00.000000Z", "forbidden"),
            ],
            "{out}"
        );
        assert!(docs.iter().all(|d| d["verdict"] == "yes"), "{out}");
    }
}

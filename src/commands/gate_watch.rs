//! `gate --watch` and `gate --wait`: the gate re-evaluated whenever a ClusterQueue, an
//! AdmissionCheck, the Lease or a Workload changes, and when the Lease's stale timer fires.
//! `--watch` prints the chain again each time a verdict or deciding reason changes, and the
//! number of waiting Workloads each time it changes; `--wait` prints once, when the gate is yes
//! or the timeout comes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{self, BoxStream};
use kube::api::Api;
use tokio::time::Instant;

use super::Deps;
use super::gate::{Collected, GateOptions};
use super::live::{Live, Woke};
use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, Kueue};
use crate::cluster::reading::wire;
use crate::cluster::watching::reflector::{self as cwatch, Followed, LeaseUpdate, Seen, Signal, WhenForbidden};
use crate::core::fetched::{Denied, Fetched};
use crate::core::gate::{self, Chain, CheckKind, GateFacts, GateReport};
use crate::core::kueue::{AdmissionCheck, ClusterQueue, LocalQueue};
use crate::core::lease::LeaseState;
use crate::core::link::{Link, LinkEvent};
use crate::core::verdict::Verdict;
use crate::core::waiting::{self, Waiting, WaitingScope};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Format;
use crate::invocation::GateLive;
use crate::report::GateRun;

/// One object list kept current by a watch.
struct Store<T> {
    items: BTreeMap<String, T>,
    building: Option<BTreeMap<String, T>>,
    ready: bool,
    forbidden: Option<String>,
}

impl<T> Store<T> {
    fn new() -> Self {
        Store { items: BTreeMap::new(), building: None, ready: false, forbidden: None }
    }

    fn apply(&mut self, change: StoreChange<T>) {
        match change {
            StoreChange::Init => self.building = Some(BTreeMap::new()),
            StoreChange::Page(items) => self.building.get_or_insert_with(BTreeMap::new).extend(items),
            StoreChange::InitDone => {
                self.items = self.building.take().unwrap_or_default();
                self.ready = true;
                self.forbidden = None;
            }
            StoreChange::Apply(k, v) => {
                self.items.insert(k, v);
            }
            StoreChange::Delete(k) => {
                self.items.remove(&k);
            }
            StoreChange::Forbidden(rule) => {
                self.forbidden = Some(rule);
                self.ready = true;
            }
        }
    }

    fn fetched(&self) -> Fetched<Vec<T>>
    where
        T: Clone,
    {
        match &self.forbidden {
            Some(rule) => Fetched::Forbidden(Denied { rule: rule.clone() }),
            None => Fetched::Found(self.items.values().cloned().collect()),
        }
    }
}

enum StoreChange<T> {
    Init,
    /// One page of a list, each object reduced as it arrives.
    Page(Vec<(String, T)>),
    InitDone,
    Apply(String, T),
    Delete(String),
    Forbidden(String),
}

/// Everything the merged watches can say, and which stream said it.
struct Update {
    stream: usize,
    what: What,
}

enum What {
    Queue(StoreChange<ClusterQueue>),
    Check(StoreChange<AdmissionCheck>),
    Workload(StoreChange<Vec<Waiting>>),
    LocalQueue(StoreChange<LocalQueue>),
    Lease(LeaseUpdate),
    Link(LinkEvent),
}

/// The streams, by index in [`Link`].
const STREAMS: usize = 5;

/// Watches one Kueue resource and converts each object with `convert`.
fn kueue_watch<K, T>(
    api: Api<K>,
    labels: Option<String>,
    stream: usize,
    (forbidden, who): (WhenForbidden<K>, Followed),
    convert: impl Fn(&K) -> (String, T) + Send + 'static,
    wrap: fn(StoreChange<T>) -> What,
) -> BoxStream<'static, Update>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    T: Send + 'static,
{
    let rule = who.rule.clone();
    cwatch::follow(api, None, labels, forbidden, who)
        .map(move |signal| {
            let what = match signal {
                Signal::Seen(Seen::List) => wrap(StoreChange::Init),
                Signal::Seen(Seen::Page(items)) => wrap(StoreChange::Page(items.iter().map(&convert).collect())),
                Signal::Seen(Seen::ListDone) => wrap(StoreChange::InitDone),
                Signal::Seen(Seen::Applied(o)) => {
                    let (k, v) = convert(&o);
                    wrap(StoreChange::Apply(k, v))
                }
                Signal::Seen(Seen::Deleted(o)) => wrap(StoreChange::Delete(convert(&o).0)),
                Signal::Forbidden | Signal::Polling(_) => wrap(StoreChange::Forbidden(rule.clone())),
                Signal::Link(e) => What::Link(e),
            };
            Update { stream, what }
        })
        .boxed()
}

fn key<P: Clone, U: Clone>(o: &kube::core::object::Object<P, U>) -> String {
    format!("{}/{}", o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default())
}

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
    let served = fetch::read_served(&discovered, log, async |k: &Kueue| {
        futures::try_join!(
            fetch::local_queues(conn, k, namespace.as_deref(), log),
            fetch::probe(conn, k, namespace.as_deref(), log)
        )?;
        Ok(())
    })
    .await?;
    if let Some(w) = &served.warning {
        let _ = writeln!(deps.err, "Warning: {w}");
    }
    let streams = watches(conn, &served.kueue, opts, namespace.as_deref());
    super::live::ended(follow(streams, opts, live, namespace, super::shutdown(), deps).await)
}

fn watches(
    conn: &Connection,
    kueue: &Kueue,
    opts: &GateOptions<'_>,
    namespace: Option<&str>,
) -> Vec<BoxStream<'static, Update>> {
    let ar = |kind: &str, plural: &str| kueue.resource(kind, plural);
    let client = conn.client.clone();
    let cqs: Api<wire::WireClusterQueue> = Api::all_with(client.clone(), &ar("ClusterQueue", "clusterqueues"));
    let acs: Api<wire::WireAdmissionCheck> = Api::all_with(client.clone(), &ar("AdmissionCheck", "admissionchecks"));
    let scoped = |kind: &str, plural: &str| match namespace {
        Some(ns) => (Some(ns.to_string()), ar(kind, plural)),
        None => (None, ar(kind, plural)),
    };
    let (wl_ns, wl_ar) = scoped("Workload", "workloads");
    let wls: Api<wire::WireWorkload> = match &wl_ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &wl_ar),
        None => Api::all_with(client.clone(), &wl_ar),
    };
    let (lq_ns, lq_ar) = scoped("LocalQueue", "localqueues");
    let lqs: Api<wire::WireLocalQueue> = match &lq_ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &lq_ar),
        None => Api::all_with(client.clone(), &lq_ar),
    };
    let scope = match namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".into(),
    };
    // A first forbidden ClusterQueue or AdmissionCheck list ends the watch (the one-shot gate
    // answers unknown); Workloads and LocalQueues forbidden are only noted, as there.
    let who = |rule: String| Followed { server: conn.server.clone(), rule, server_clock: conn.server_clock.clone() };
    // Workloads are reduced to the entries at any check that might be dispatch's; which checks
    // are dispatch's is decided at evaluation, from the AdmissionCheck store.
    let all_states = opts.all_states;
    vec![
        kueue_watch(
            cqs,
            None,
            0,
            (WhenForbidden::End, who("list and watch clusterqueues.kueue.x-k8s.io (cluster-wide)".into())),
            |o| (key(o), wire::cluster_queue(o)),
            What::Queue,
        ),
        kueue_watch(
            acs,
            None,
            1,
            (WhenForbidden::End, who("list and watch admissionchecks.kueue.x-k8s.io (cluster-wide)".into())),
            |o| (key(o), wire::admission_check(o)),
            What::Check,
        ),
        kueue_watch(
            wls,
            opts.selector.map(str::to_string),
            2,
            (WhenForbidden::Retry, who(format!("list and watch workloads.kueue.x-k8s.io {scope}"))),
            move |o| {
                let w = wire::workload(o);
                let scope = WaitingScope {
                    checks: w.checks.iter().map(|c| c.name.clone()).collect(),
                    cluster_queues: BTreeSet::new(),
                    all_states,
                };
                (key(o), waiting::select(&w, &scope))
            },
            What::Workload,
        ),
        kueue_watch(
            lqs,
            None,
            3,
            (WhenForbidden::Retry, who(format!("list and watch localqueues.kueue.x-k8s.io {scope}"))),
            |o| (key(o), wire::local_queue(o)),
            What::LocalQueue,
        ),
        cwatch::lease(conn, &opts.settings.lease)
            .map(|u| Update {
                stream: 4,
                what: match u {
                    LeaseUpdate::Link(e) => What::Link(e),
                    other => What::Lease(other),
                },
            })
            .boxed(),
    ]
}

/// Follows the watches' updates until `shutdown` resolves, the timeout, or (with `--wait`) a
/// yes. This machine's clock is compared with the server's `Date` at every answer by the link
/// ([`Link`]), which says it once; so the judge is given no date of its own to warn from.
/// Each evaluation is judged by the one-shot gate's [`judge`](super::gate::judge), so its
/// warnings are the one-shot's; each is printed when it first appears.
async fn follow(
    streams: Vec<BoxStream<'static, Update>>,
    opts: &GateOptions<'_>,
    live: GateLive,
    namespace: Option<String>,
    shutdown: impl std::future::Future<Output = ()>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let mut updates = Live::new(stream::select_all(streams), shutdown, live.timeout, false);
    let mut warned: BTreeSet<String> = BTreeSet::new();
    let mut queues = Store::new();
    let mut checks = Store::new();
    let mut workloads: Store<Vec<Waiting>> = Store::new();
    let mut local_queues: Store<LocalQueue> = Store::new();
    let mut lease: Option<LeaseUpdate> = None;
    let mut link = Link::new(STREAMS);
    let mut polling = false;
    let mut docs = 0;
    let mut shown: Option<Signature> = None;
    let mut shown_waiting: Option<usize> = None;
    let mut last: Option<GateRun> = None;

    loop {
        let stale_at = last.as_ref().and_then(|run| match &run.report.lease.state {
            LeaseState::Fresh { stale_in, .. } => {
                let d = Duration::try_from(*stale_in).unwrap_or_default().saturating_add(Duration::from_micros(1));
                let elapsed = Duration::try_from(deps.clock.now().duration_since(run.now)).unwrap_or_default();
                Instant::now().checked_add(d.saturating_sub(elapsed))
            }
            _ => None,
        });
        match updates.next(stale_at).await {
            // Ctrl-C ends a watch successfully; a wait it ends like a timeout, with the last verdict.
            Woke::Shutdown => {
                return Ok(match (&last, live.wait) {
                    (Some(run), true) => Exit::from(run.report.verdict),
                    (None, true) => Exit::Unknown,
                    (_, false) => Exit::Yes,
                });
            }
            Woke::GaveUp => {
                if let (Some(cause), Some(timeout)) = (link.down_at_timeout(), live.timeout) {
                    return Err(Error::DownAtTimeout { timeout, cause });
                }
                let exit = last.as_ref().map(|r| Exit::from(r.report.verdict)).unwrap_or(Exit::Unknown);
                if live.wait
                    && let Some(run) = &last
                {
                    render_once(run, opts, deps)?;
                }
                return Ok(if live.wait { exit } else { Exit::Yes });
            }
            Woke::Timer | Woke::Tick => {}
            Woke::Ended => return Ok(Exit::Yes),
            Woke::Update(Update { stream, what }) => match what {
                What::Link(LinkEvent::Refused(refusal)) => return Err(cwatch::refused(refusal)),
                What::Link(event) => {
                    if let Some(said) = super::live::connection_lines(&mut link, stream, event, deps.clock.now()) {
                        let _ = writeln!(deps.err, "{said}");
                    }
                    continue;
                }
                What::Lease(LeaseUpdate::Polling { every, rule }) => {
                    if !std::mem::replace(&mut polling, true) {
                        let line = super::lease_watch::polling_line(&opts.settings.lease, every, &rule);
                        let _ = writeln!(deps.err, "{line}");
                    }
                    continue;
                }
                What::Queue(c) => queues.apply(c),
                What::Check(c) => checks.apply(c),
                What::Workload(c) => workloads.apply(c),
                What::LocalQueue(c) => local_queues.apply(c),
                What::Lease(l) => lease = Some(l),
            },
        }
        if !(queues.ready && checks.ready && workloads.ready && local_queues.ready && lease.is_some()) {
            continue;
        }
        let now = deps.clock.now();
        let facts = GateFacts {
            cluster_queues: queues.fetched(),
            admission_checks: checks.fetched(),
            lease: match &lease {
                Some(LeaseUpdate::Lease(Some(f))) => Fetched::Found(f.clone()),
                Some(LeaseUpdate::Forbidden(rule)) => Fetched::Forbidden(Denied { rule: rule.clone() }),
                _ => Fetched::Missing,
            },
            holder: None,
        };
        let lqs = local_queues.fetched().found().cloned().unwrap_or_default();
        let waiting = waiting_rows(&workloads, &facts, opts, &lqs);
        // Kueue's version warning was printed once, before the watches started; Kueue's own
        // Lease is not followed live.
        let collected = Collected { facts, waiting, server_date: None, kueue_warning: None, kueue_lease: None };
        let run = super::gate::judge(collected, opts, namespace.as_deref().unwrap_or_default(), now);
        for w in run.warnings.iter().filter(|w| !warned.contains(*w)) {
            let _ = writeln!(deps.err, "Warning: {w}");
        }
        warned = run.warnings.iter().cloned().collect();
        if live.wait {
            if run.report.verdict == Verdict::Yes {
                render_once(&run, opts, deps)?;
                return Ok(Exit::Yes);
            }
            last = Some(run);
            continue;
        }
        let signature = signature(&run.report);
        let stalled = run.waiting.found().map(|w| w.iter().filter(|w| w.is_stalled()).count()).unwrap_or(0);
        if shown.as_ref() != Some(&signature) {
            print_chains(&run, opts, docs, deps)?;
            docs += 1;
            shown = Some(signature);
        }
        if shown_waiting != Some(stalled) && opts.output.format != Format::Json && opts.output.format != Format::Yaml {
            let noun = if stalled == 1 { "workload waits" } else { "workloads wait" };
            // With --no-headers stdout has table rows only.
            let to: &mut dyn std::io::Write = if opts.output.no_headers { deps.err } else { deps.out };
            writeln!(to, "{} {stalled} {noun} at dispatch's Pending check", stamp(now))?;
            deps.out.flush()?;
            shown_waiting = Some(stalled);
        }
        last = Some(run);
    }
}

/// The waiting Workloads as the one-shot gate reads them: those at dispatch's checks
/// ([`gate::dispatch_checks`]), finished with their LocalQueues.
fn waiting_rows(
    workloads: &Store<Vec<Waiting>>,
    facts: &GateFacts,
    opts: &GateOptions<'_>,
    local_queues: &[LocalQueue],
) -> Fetched<Vec<Waiting>> {
    let scope = WaitingScope {
        checks: gate::dispatch_checks(opts.settings, &facts.admission_checks),
        cluster_queues: opts.settings.cluster_queues.iter().cloned().collect(),
        all_states: opts.all_states,
    };
    workloads.fetched().map(|all| {
        let rows = all.into_iter().flatten().filter(|w| scope.checks.contains(&w.check)).collect();
        waiting::finish(rows, local_queues, &scope)
    })
}

/// Per chain: the ClusterQueue, its verdict, and the rule that decides it (the first failing
/// check, else the first unknown one, with its outcome). A change of any is printed; a reason
/// whose words change while the rule stays (a stale Lease's growing age) is not.
type Signature = Vec<(Option<String>, Verdict, Option<(CheckKind, &'static str)>)>;

fn signature(report: &GateReport) -> Signature {
    report.chains.iter().map(|c| (c.cluster_queue.clone(), c.verdict, deciding(c))).collect()
}

fn deciding(chain: &Chain) -> Option<(CheckKind, &'static str)> {
    let first = |label: &str| chain.checks.iter().find(|c| c.outcome.label() == label);
    first("fail").or_else(|| first("unknown")).map(|c| (c.kind, c.outcome.label()))
}

fn stamp(now: k8s_openapi::jiff::Timestamp) -> String {
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
            let notes: &mut dyn std::io::Write = if opts.output.no_headers { deps.err } else { deps.out };
            writeln!(notes, "{} ReadmissionGate re-evaluated", stamp(run.now))?;
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
    use k8s_openapi::jiff::{SignedDuration, Timestamp};

    use super::*;
    use crate::core::gate::GateSettings;
    use crate::core::kueue::{CheckRule, Condition};
    use crate::core::lease::LeaseFacts;
    use futures::stream;

    fn at(secs: i64) -> Timestamp {
        "2026-11-30T12:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(secs)
    }

    fn facts(renewed: i64) -> GateFacts {
        let active = Condition { status: "True".into(), reason: None, message: None, last_transition: None };
        GateFacts {
            cluster_queues: Fetched::Found(vec![ClusterQueue {
                name: "team-a".into(),
                admission_checks: vec![CheckRule { name: "dispatch".into(), on_flavors: vec![] }],
                active: None,
            }]),
            admission_checks: Fetched::Found(vec![AdmissionCheck {
                name: "dispatch".into(),
                controller_name: Some("dispatch-admission".into()),
                active: Some(active),
            }]),
            lease: Fetched::Found(LeaseFacts {
                holder: Some("a".into()),
                renew_time: Some(at(renewed)),
                acquire_time: Some(at(0)),
                duration_seconds: Some(15),
                transitions: Some(0),
            }),
            holder: None,
        }
    }

    #[test]
    fn a_stale_lease_growing_older_keeps_its_signature_and_a_verdict_change_changes_it() {
        let settings = GateSettings::default();
        let stale_at_40 = gate::evaluate(&settings, &facts(0), at(40));
        let stale_at_90 = gate::evaluate(&settings, &facts(0), at(90));
        assert_ne!(stale_at_40.chains[0].reason, stale_at_90.chains[0].reason, "the reason's age grows");
        assert_eq!(signature(&stale_at_40), signature(&stale_at_90), "but nothing is printed again");
        let fresh = gate::evaluate(&settings, &facts(89), at(90));
        assert_ne!(signature(&fresh), signature(&stale_at_90));
        assert_eq!(signature(&stale_at_90)[0].2, Some((CheckKind::Heartbeat, "fail")));
    }

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

    /// Every store listed at second 0 from `facts`, the Workloads' list as `workloads` says
    /// (`None`: forbidden), then the Lease as renewed at each of `renewals`; the stream stays
    /// open and silent after.
    fn updates(
        facts: GateFacts,
        workloads: Option<Vec<Waiting>>,
        renewals: &[(u64, i64)],
    ) -> BoxStream<'static, Update> {
        let start = Instant::now();
        // Each stream's first list answered: the connection is up, as the reflector says it.
        let mut items: Vec<(u64, Update)> =
            (0..STREAMS).map(|stream| (0, Update { stream, what: What::Link(LinkEvent::Up) })).collect();
        let listed = |stream: usize, page: What, wrap: fn() -> (What, What)| {
            let (init, done) = wrap();
            vec![
                (0, Update { stream, what: init }),
                (0, Update { stream, what: page }),
                (0, Update { stream, what: done }),
            ]
        };
        let queues = facts.cluster_queues.found().cloned().unwrap_or_default();
        let checks = facts.admission_checks.found().cloned().unwrap_or_default();
        items.extend(listed(
            0,
            What::Queue(StoreChange::Page(queues.into_iter().map(|q| (format!("/{}", q.name), q)).collect())),
            || (What::Queue(StoreChange::Init), What::Queue(StoreChange::InitDone)),
        ));
        items.extend(listed(
            1,
            What::Check(StoreChange::Page(checks.into_iter().map(|c| (format!("/{}", c.name), c)).collect())),
            || (What::Check(StoreChange::Init), What::Check(StoreChange::InitDone)),
        ));
        match workloads {
            Some(rows) => {
                items.extend(listed(2, What::Workload(StoreChange::Page(vec![("ml/job".into(), rows)])), || {
                    (What::Workload(StoreChange::Init), What::Workload(StoreChange::InitDone))
                }))
            }
            None => items.push((
                0,
                Update {
                    stream: 2,
                    what: What::Workload(StoreChange::Forbidden(
                        "list workloads.kueue.x-k8s.io in namespace ml".into(),
                    )),
                },
            )),
        }
        items.extend(listed(3, What::LocalQueue(StoreChange::Page(Vec::new())), || {
            (What::LocalQueue(StoreChange::Init), What::LocalQueue(StoreChange::InitDone))
        }));
        let lease = match &facts.lease {
            Fetched::Found(l) => l.clone(),
            _ => LeaseFacts::default(),
        };
        for (second, renewed) in renewals {
            let l = LeaseFacts { renew_time: Some(at(*renewed)), ..lease.clone() };
            items.push((*second, Update { stream: 4, what: What::Lease(LeaseUpdate::Lease(Some(l))) }));
        }
        stream::iter(items)
            .then(move |(second, u)| async move {
                tokio::time::sleep_until(start + Duration::from_secs(second)).await;
                u
            })
            .chain(stream::pending())
            .boxed()
    }

    /// Follows `updates` as `gate --watch` (or `--wait`) until a shutdown at `stop_after`.
    async fn follow_for(
        updates: BoxStream<'static, Update>,
        live: GateLive,
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
            output: crate::invocation::Output { format: Format::Table, no_headers: false },
            all_states: false,
            all_namespaces: false,
            selector: None,
            sort_by: None,
        };
        let started = Instant::now();
        let stop = tokio::time::sleep(Duration::from_secs(stop_after));
        let exit = follow(vec![updates], &opts, live, Some("ml".into()), stop, &mut deps).await.unwrap();
        let text = |s: &Shared| String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        (exit, text(&out), text(&err), started.elapsed())
    }

    const WATCH: GateLive = GateLive { wait: false, timeout: None };

    #[tokio::test(start_paused = true)]
    async fn the_stale_timer_re_evaluates_without_any_event_and_shutdown_ends_the_watch() {
        let (exit, out, err, elapsed) = follow_for(updates(facts(0), Some(Vec::new()), &[(0, 0)]), WATCH, 120).await;
        assert_eq!(exit, Exit::Yes, "Ctrl-C ends a watch successfully");
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
        assert_eq!((exit, elapsed), (Exit::Yes, Duration::from_secs(10)), "a yes ends the wait");
    }
}

//! `gate --watch` and `gate --wait`: the gate re-evaluated whenever a ClusterQueue, an
//! AdmissionCheck, the Lease or a Workload changes, and when the Lease's stale timer fires.
//! `--watch` prints the chain again each time a verdict or deciding reason changes, and the
//! number of waiting Workloads each time it changes; `--wait` prints once, when the gate is yes
//! or the timeout comes.

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::time::Duration;

use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::time::Instant;

use super::gate::GateOptions;
use super::{Deps, sleep_opt};
use crate::cli::Format;
use crate::cluster::connect::Connection;
use crate::cluster::fetch::{self, Kueue};
use crate::cluster::watch::{self as cwatch, CappedBackoff, LeaseUpdate};
use crate::cluster::wire;
use crate::core::fetched::{Denied, Fetched};
use crate::core::gate::{self, GateFacts, GateReport};
use crate::core::kueue::{AdmissionCheck, ClusterQueue};
use crate::core::lease::LeaseState;
use crate::core::verdict::Verdict;
use crate::core::waiting::{self, Waiting, WaitingScope};
use crate::error::Error;
use crate::exit::Exit;
use crate::report::GateRun;
use crate::settings::GateLive;

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
            StoreChange::InitApply(k, v) => {
                self.building.get_or_insert_with(BTreeMap::new).insert(k, v);
            }
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
    InitApply(String, T),
    InitDone,
    Apply(String, T),
    Delete(String),
    Forbidden(String),
}

/// Everything the merged watches can say.
enum Update {
    Queue(StoreChange<ClusterQueue>),
    Check(StoreChange<AdmissionCheck>),
    Workload(StoreChange<Vec<Waiting>>),
    Lease(LeaseUpdate),
    Interrupted(String),
}

/// Watches one Kueue resource and converts each object with `convert`.
fn kueue_watch<K, T>(
    api: Api<K>,
    rule: String,
    convert: impl Fn(&K) -> (String, T) + Send + 'static,
    wrap: fn(StoreChange<T>) -> Update,
) -> BoxStream<'static, Update>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
{
    watcher::watcher(api, watcher::Config::default())
        .backoff(CappedBackoff::new())
        .map(move |event| match event {
            Ok(Event::Init) => wrap(StoreChange::Init),
            Ok(Event::InitApply(o)) => {
                let (k, v) = convert(&o);
                wrap(StoreChange::InitApply(k, v))
            }
            Ok(Event::InitDone) => wrap(StoreChange::InitDone),
            Ok(Event::Apply(o)) => {
                let (k, v) = convert(&o);
                wrap(StoreChange::Apply(k, v))
            }
            Ok(Event::Delete(o)) => wrap(StoreChange::Delete(convert(&o).0)),
            Err(e) if cwatch::status_code(&e) == Some(403) => wrap(StoreChange::Forbidden(rule.clone())),
            Err(e) => Update::Interrupted(cwatch::cause(&e)),
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
    let served = fetch::read_served(&discovered, log, async |k: &Kueue| {
        let (lqs, ()) = futures::try_join!(
            fetch::local_queues(conn, k, namespace.as_deref(), log),
            fetch::probe(conn, k, namespace.as_deref(), log)
        )?;
        Ok(lqs)
    })
    .await?;
    if let Some(w) = &served.warning {
        let _ = writeln!(deps.err, "Warning: {w}");
    }
    let (kueue, local_queues) = (served.kueue, served.value.found().cloned().unwrap_or_default());
    let streams = watches(conn, &kueue, opts, namespace.as_deref());
    let result = follow(streams, opts, live, namespace, &local_queues, deps).await;
    match result {
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Yes),
        other => other,
    }
}

fn watches(
    conn: &Connection,
    kueue: &Kueue,
    opts: &GateOptions<'_>,
    namespace: Option<&str>,
) -> Vec<BoxStream<'static, Update>> {
    let ar = |kind: &str, plural: &str| -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("kueue.x-k8s.io", &kueue.version, kind),
            plural,
        )
    };
    let client = conn.client.clone();
    let cqs: Api<wire::WireClusterQueue> = Api::all_with(client.clone(), &ar("ClusterQueue", "clusterqueues"));
    let acs: Api<wire::WireAdmissionCheck> = Api::all_with(client.clone(), &ar("AdmissionCheck", "admissionchecks"));
    let wl_ar = ar("Workload", "workloads");
    let wls: Api<wire::WireWorkload> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &wl_ar),
        None => Api::all_with(client.clone(), &wl_ar),
    };
    // Workloads are reduced to the entries at any check that might be dispatch's; which checks
    // are dispatch's is decided at evaluation, from the AdmissionCheck store.
    let all_states = opts.all_states;
    vec![
        kueue_watch(
            cqs,
            "list and watch clusterqueues.kueue.x-k8s.io (cluster-wide)".into(),
            |o| (key(o), wire::cluster_queue(o)),
            Update::Queue,
        ),
        kueue_watch(
            acs,
            "list and watch admissionchecks.kueue.x-k8s.io (cluster-wide)".into(),
            |o| (key(o), wire::admission_check(o)),
            Update::Check,
        ),
        kueue_watch(
            wls,
            "list and watch workloads.kueue.x-k8s.io".into(),
            move |o| {
                let w = wire::workload(o);
                let scope = WaitingScope {
                    checks: w.checks.iter().map(|c| c.name.clone()).collect(),
                    cluster_queues: BTreeSet::new(),
                    all_states,
                };
                (key(o), waiting::select(&w, &scope))
            },
            Update::Workload,
        ),
        cwatch::lease(conn, &opts.settings.lease).map(Update::Lease).boxed(),
    ]
}

async fn follow(
    streams: Vec<BoxStream<'static, Update>>,
    opts: &GateOptions<'_>,
    live: GateLive,
    namespace: Option<String>,
    local_queues: &[crate::core::kueue::LocalQueue],
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let mut merged: Pin<Box<dyn Stream<Item = Update> + Send>> = Box::pin(stream::select_all(streams));
    let mut shutdown = std::pin::pin!(super::shutdown());
    let mut queues = Store::new();
    let mut checks = Store::new();
    let mut workloads: Store<Vec<Waiting>> = Store::new();
    let mut lease: Option<LeaseUpdate> = None;
    let give_up = live.timeout.map(|t| Instant::now() + t);
    let mut outage = false;
    let mut shown: Option<Signature> = None;
    let mut shown_waiting: Option<usize> = None;
    let mut last: Option<GateRun> = None;

    loop {
        let stale_at = last.as_ref().and_then(|run| match &run.report.lease.state {
            LeaseState::Fresh { stale_in, .. } => {
                let d = Duration::try_from(*stale_in).unwrap_or_default() + Duration::from_micros(1);
                let elapsed = Duration::try_from(deps.clock.now().duration_since(run.now)).unwrap_or_default();
                Some(Instant::now() + d.saturating_sub(elapsed))
            }
            _ => None,
        });
        tokio::select! {
            biased;
            // Ctrl-C ends a watch successfully; a wait it ends like a timeout, with the last verdict.
            _ = &mut shutdown => {
                return Ok(match (&last, live.wait) {
                    (Some(run), true) => Exit::from(run.report.verdict),
                    (None, true) => Exit::Unknown,
                    (_, false) => Exit::Yes,
                });
            }
            _ = sleep_opt(give_up) => {
                let exit = last.as_ref().map(|r| Exit::from(r.report.verdict)).unwrap_or(Exit::Unknown);
                if live.wait && let Some(run) = &last {
                    crate::render::gate::render_to(run, opts.output, deps.style, deps.out, deps.err)?;
                }
                return Ok(if live.wait { exit } else { Exit::Yes });
            }
            _ = sleep_opt(stale_at) => {}
            update = merged.next() => {
                let interrupted = match update {
                    None => return Ok(Exit::Yes),
                    Some(Update::Interrupted(cause) | Update::Lease(LeaseUpdate::Interrupted(cause))) => Some(cause),
                    Some(Update::Queue(c)) => { queues.apply(c); None }
                    Some(Update::Check(c)) => { checks.apply(c); None }
                    Some(Update::Workload(c)) => { workloads.apply(c); None }
                    Some(Update::Lease(l)) => { lease = Some(l); None }
                };
                match interrupted {
                    Some(cause) => {
                        if !std::mem::replace(&mut outage, true) {
                            let _ = writeln!(deps.err, "watch interrupted: {cause}; reconnecting");
                        }
                        continue;
                    }
                    None if std::mem::take(&mut outage) => {
                        let _ = writeln!(deps.err, "watch resumed");
                    }
                    None => {}
                }
            }
        }
        if !(queues.ready && checks.ready && workloads.ready && lease.is_some()) {
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
        let report = gate::evaluate(opts.settings, &facts, now);
        let waiting = waiting_rows(&workloads, &report, opts, local_queues);
        let run = GateRun { report, waiting, namespace: namespace.clone(), warnings: Vec::new(), now };
        if live.wait {
            if run.report.verdict == Verdict::Yes {
                crate::render::gate::render_to(&run, opts.output, deps.style, deps.out, deps.err)?;
                return Ok(Exit::Yes);
            }
            last = Some(run);
            continue;
        }
        let signature = signature(&run.report);
        let stalled = run.waiting.found().map(|w| w.iter().filter(|w| w.is_stalled()).count()).unwrap_or(0);
        if shown.as_ref() != Some(&signature) {
            print_chains(&run, opts, deps)?;
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

fn waiting_rows(
    workloads: &Store<Vec<Waiting>>,
    report: &GateReport,
    opts: &GateOptions<'_>,
    local_queues: &[crate::core::kueue::LocalQueue],
) -> Fetched<Vec<Waiting>> {
    let scope = WaitingScope {
        checks: report.dispatch_checks.clone(),
        cluster_queues: opts.settings.cluster_queues.iter().cloned().collect(),
        all_states: opts.all_states,
    };
    workloads.fetched().map(|all| {
        let rows = all.into_iter().flatten().filter(|w| scope.checks.contains(&w.check)).collect();
        waiting::finish(rows, local_queues, &scope)
    })
}

/// Per chain: the ClusterQueue, its verdict and deciding reason; a change of any is printed.
type Signature = Vec<(Option<String>, Verdict, Option<String>)>;

fn signature(report: &GateReport) -> Signature {
    report.chains.iter().map(|c| (c.cluster_queue.clone(), c.verdict, c.reason.clone())).collect()
}

fn stamp(now: k8s_openapi::jiff::Timestamp) -> String {
    now.strftime("%H:%M:%SZ").to_string()
}

fn print_chains(run: &GateRun, opts: &GateOptions<'_>, deps: &mut Deps<'_>) -> Result<(), Error> {
    match opts.output.format {
        Format::Json | Format::Yaml => crate::render::structured::json_line(deps.out, &run.document())?,
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

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
use tokio::time::Instant;

use super::gate::GateOptions;
use super::{Deps, sleep_opt};
use crate::cli::Format;
use crate::cluster::connect::Connection;
use crate::cluster::fetch::{self, Kueue};
use crate::cluster::watch::{self as cwatch, LeaseUpdate, Seen, Signal, WhenForbidden};
use crate::cluster::wire;
use crate::core::fetched::{Denied, Fetched};
use crate::core::gate::{self, Chain, CheckKind, GateFacts, GateReport};
use crate::core::kueue::{AdmissionCheck, ClusterQueue, LocalQueue};
use crate::core::lease::LeaseState;
use crate::core::link::{Link, LinkEvent};
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
    rule: String,
    convert: impl Fn(&K) -> (String, T) + Send + 'static,
    wrap: fn(StoreChange<T>) -> What,
) -> BoxStream<'static, Update>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    T: Send + 'static,
{
    cwatch::follow_labelled(api, None, labels, WhenForbidden::Retry)
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
    let result = follow(streams, opts, live, namespace, deps).await;
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
    // Workloads are reduced to the entries at any check that might be dispatch's; which checks
    // are dispatch's is decided at evaluation, from the AdmissionCheck store.
    let all_states = opts.all_states;
    vec![
        kueue_watch(
            cqs,
            None,
            0,
            "list and watch clusterqueues.kueue.x-k8s.io (cluster-wide)".into(),
            |o| (key(o), wire::cluster_queue(o)),
            What::Queue,
        ),
        kueue_watch(
            acs,
            None,
            1,
            "list and watch admissionchecks.kueue.x-k8s.io (cluster-wide)".into(),
            |o| (key(o), wire::admission_check(o)),
            What::Check,
        ),
        kueue_watch(
            wls,
            opts.view.selector.clone(),
            2,
            format!("list and watch workloads.kueue.x-k8s.io {scope}"),
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
            format!("list and watch localqueues.kueue.x-k8s.io {scope}"),
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

async fn follow(
    streams: Vec<BoxStream<'static, Update>>,
    opts: &GateOptions<'_>,
    live: GateLive,
    namespace: Option<String>,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let mut merged: Pin<Box<dyn Stream<Item = Update> + Send>> = Box::pin(stream::select_all(streams));
    let mut shutdown = std::pin::pin!(super::shutdown());
    let mut queues = Store::new();
    let mut checks = Store::new();
    let mut workloads: Store<Vec<Waiting>> = Store::new();
    let mut local_queues: Store<LocalQueue> = Store::new();
    let mut lease: Option<LeaseUpdate> = None;
    let give_up = live.timeout.map(|t| Instant::now() + t);
    let mut link = Link::new(STREAMS);
    let mut polling = false;
    let mut docs = 0;
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
                    render_once(run, opts, deps)?;
                }
                return Ok(if live.wait { exit } else { Exit::Yes });
            }
            _ = sleep_opt(stale_at) => {}
            update = merged.next() => {
                let Some(Update { stream, what }) = update else { return Ok(Exit::Yes) };
                match what {
                    What::Link(event) => {
                        for line in link.observe(stream, event, deps.clock.now()) {
                            let _ = writeln!(deps.err, "{}", line.line());
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
                }
            }
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
        let report = gate::evaluate(opts.settings, &facts, now);
        let lqs = local_queues.fetched().found().cloned().unwrap_or_default();
        let waiting = waiting_rows(&workloads, &report, opts, &lqs, now);
        let run = GateRun { report, waiting, namespace: namespace.clone(), warnings: Vec::new(), now };
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

fn waiting_rows(
    workloads: &Store<Vec<Waiting>>,
    report: &GateReport,
    opts: &GateOptions<'_>,
    local_queues: &[LocalQueue],
    now: k8s_openapi::jiff::Timestamp,
) -> Fetched<Vec<Waiting>> {
    let scope = WaitingScope {
        checks: report.dispatch_checks.clone(),
        cluster_queues: opts.settings.cluster_queues.iter().cloned().collect(),
        all_states: opts.all_states,
    };
    workloads.fetched().map(|all| {
        let rows = all.into_iter().flatten().filter(|w| scope.checks.contains(&w.check)).collect();
        super::gate::sort_waiting(waiting::finish(rows, local_queues, &scope), opts.view, now)
    })
}

/// `--wait`'s one print: the printer of `-o jsonpath=...` and the like, else the format's.
fn render_once(run: &GateRun, opts: &GateOptions<'_>, deps: &mut Deps<'_>) -> Result<(), Error> {
    match deps.printer {
        Some(printer) => printer.print(&run.document(), deps.out),
        None => Ok(crate::render::gate::render_to(run, opts.output, deps.style, deps.out, deps.err)?),
    }
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
}

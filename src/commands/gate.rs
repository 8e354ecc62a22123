//! `kubectl dispatch gate`.

use std::collections::BTreeSet;

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::core::fetched::Fetched;
use crate::core::gate::{self, GateFacts, GateSettings};
use crate::core::kueue::{AdmissionCheck, ClusterQueue};
use crate::core::kueue_lease;
use crate::core::lookalike;
use crate::core::skew;
use crate::core::waiting::{self, WaitingScope};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Format;
use crate::invocation::Output;
use crate::log::Log;
use crate::render::jsonpath::Template;
use crate::render::prometheus::Context;
use crate::report::GateRun;

use super::Deps;

pub struct GateOptions<'a> {
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_states: bool,
    pub all_namespaces: bool,
    /// `-l`: a label selector on the Workloads, passed to the server.
    pub selector: Option<&'a str>,
    /// `--sort-by` on the waiting Workloads.
    pub sort_by: Option<&'a Template>,
}

/// The facts of one run, as read.
pub struct Collected {
    pub facts: GateFacts,
    pub waiting: Fetched<Vec<waiting::Waiting>>,
    pub server_date: Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>,
    /// Why Kueue's objects were read at another version than discovery chose.
    pub kueue_warning: Option<String>,
    /// Kueue's own manager's Lease (context, never a check); `None` where it is not read.
    pub kueue_lease: Option<Fetched<crate::core::lease::LeaseFacts>>,
}

/// Reads everything the gate needs in two round trips: discovery alone (it also opens the
/// connection, HTTP/2 where offered, that the rest share), then the Lease and every Kueue
/// read concurrently (the holder's pod and its node after the Lease, for the outputs that show
/// them), Kueue's own manager's Lease beside dispatch's. The Kueue reads run once more, at the next version served, only when
/// Kueue's conversion webhook does not answer ([`fetch::read_served`]).
pub async fn collect(conn: &Connection, opts: &GateOptions<'_>, log: &Log) -> Result<Collected, Error> {
    let kueue = fetch::discover_kueue(conn, log).await?;
    collect_discovered(conn, kueue, opts, log).await
}

/// [`collect`] after its first round trip: what discovery found is `kueue`.
pub async fn collect_discovered(
    conn: &Connection,
    kueue: KueueApi,
    opts: &GateOptions<'_>,
    log: &Log,
) -> Result<Collected, Error> {
    let lease_and_holder = async {
        let lease = &opts.settings.lease;
        let fetched = fetch::lease(conn, lease, log).await?;
        // An exposition does not show the holder's pod; every view does (the table when the
        // Lease decides), read after the Lease while the Kueue reads go on.
        let holder = match opts.output.format {
            crate::invocation::Format::Prometheus => None,
            _ => crate::cluster::reading::holder::read(conn, lease, &fetched, log).await?,
        };
        Ok::<_, Error>((fetched, holder))
    };
    let ((lease, holder), kueue_lease, served) = futures::try_join!(
        lease_and_holder,
        fetch::lease(conn, &opts.settings.kueue_lease, log),
        fetch::read_served(&kueue, log, async |k: &KueueApi| kueue_reads(conn, k, opts, log).await),
    )?;
    let (cluster_queues, admission_checks, waiting) = served.value;
    Ok(Collected {
        facts: GateFacts { cluster_queues, admission_checks, lease, holder },
        waiting,
        server_date: kueue.server_date,
        kueue_warning: served.warning,
        kueue_lease: Some(kueue_lease),
    })
}

type KueueReads = (Fetched<Vec<ClusterQueue>>, Fetched<Vec<AdmissionCheck>>, Fetched<Vec<waiting::Waiting>>);

/// The ClusterQueues, AdmissionChecks, LocalQueues and the Workload pages, concurrently; the
/// first Workload page is read while the AdmissionChecks (which choose what to keep) arrive.
async fn kueue_reads(
    conn: &Connection,
    kueue: &KueueApi,
    opts: &GateOptions<'_>,
    log: &Log,
) -> Result<KueueReads, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let scoped = async {
        let acs = fetch::admission_checks(conn, kueue, log).await?;
        // Beside dispatch's checks, those that plainly are dispatch's under another
        // controllerName, when none names dispatch's: their Workloads are counted, not listed.
        let mut checks = gate::dispatch_checks(opts.settings, &acs);
        checks.extend(lookalike::names(opts.settings.wanted(), &acs));
        let scope = WaitingScope {
            checks,
            cluster_queues: opts.settings.cluster_queues.iter().cloned().collect::<BTreeSet<_>>(),
            all_states: opts.all_states,
        };
        Ok::<_, Error>((acs, scope))
    };
    let (cqs, (acs, scope, waiting), lqs) = futures::try_join!(
        fetch::cluster_queues(conn, kueue, log),
        fetch::waiting(conn, kueue, namespace, opts.selector, scoped, log),
        fetch::local_queues(conn, kueue, namespace, log),
    )?;
    let local_queues = lqs.found().cloned().unwrap_or_default();
    Ok((cqs, acs, waiting.map(|rows| waiting::finish(rows, &local_queues, &scope))))
}

/// Judges collected facts at `now`.
pub fn judge(
    collected: Collected,
    opts: &GateOptions<'_>,
    namespace: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> GateRun {
    let mut report = gate::evaluate(opts.settings, &collected.facts, now);
    let (waiting, near) = split_lookalikes(collected.waiting, &report.dispatch_checks);
    report.lookalikes = lookalike::find(opts.settings.wanted(), &collected.facts.admission_checks, &near);
    let forbidden = match &waiting {
        Fetched::Forbidden(d) => Some(d.rule.as_str()),
        _ => None,
    };
    let read_with = (collected.kueue_warning.as_deref(), collected.server_date);
    let warnings = warnings(read_with, report.lease.facts.as_ref(), forbidden, now);
    let namespace = (!opts.all_namespaces).then(|| namespace.to_string());
    let kueue_lease = collected.kueue_lease.map(|f| kueue_lease::assess(&opts.settings.kueue_lease, &f, now));
    let waiting = waiting.map(|w| sort_waiting(w, opts.sort_by, now));
    GateRun { report, waiting, namespace, warnings, now, kueue_lease }
}

/// The rows at dispatch's own checks, and apart from them those at its lookalikes (empty when
/// the list was not read).
fn split_lookalikes(
    waiting: Fetched<Vec<waiting::Waiting>>,
    dispatch: &BTreeSet<String>,
) -> (Fetched<Vec<waiting::Waiting>>, Vec<waiting::Waiting>) {
    match waiting {
        Fetched::Found(rows) => {
            let (ours, near) = lookalike::split(rows, dispatch);
            (Fetched::Found(ours), near)
        }
        other => (other, Vec::new()),
    }
}

/// `--sort-by`: the waiting Workloads ordered by what the JSONPath finds in each one's `-o
/// json` entry, as `kubectl get --sort-by` orders objects (numbers by value, text byte by byte,
/// an entry where it finds nothing first); stable, so equal keys keep their order.
pub fn sort_waiting(
    rows: Vec<waiting::Waiting>,
    sort_by: Option<&Template>,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<waiting::Waiting> {
    let Some(template) = sort_by else { return rows };
    crate::render::jsonpath::sort_by(rows, template, |w| {
        serde_json::to_value(crate::report::waiting_doc(w, now)).unwrap_or_default()
    })
}

/// The gate's warnings at `now`, from what was read beside the facts (why Kueue was read at
/// another version, the server's `Date` and this machine's clock then), the Lease as read, and
/// the rule a forbidden Workload list lacks. `gate --watch` asks this at every event, with no
/// version warning or date of its own (it says them once, before and beside the watches), so
/// as not to list the Workloads each time.
pub fn warnings(
    (kueue_warning, server_date): (Option<&str>, Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>),
    lease: Option<&crate::core::lease::LeaseFacts>,
    waiting_forbidden: Option<&str>,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<String> {
    let mut warnings: Vec<String> = kueue_warning.map(str::to_string).into_iter().collect();
    warnings.extend(server_date.and_then(|(server, local)| skew::server_clock(Some(server), local)));
    warnings.extend(skew::lease_in_future(lease, now));
    if let Some(rule) = waiting_forbidden {
        warnings.push(format!("cannot show waiting Workloads: missing RBAC: {rule}"));
    }
    warnings
}

/// How many wait at dispatch's check in every namespace, when none wait in the one shown:
/// one more list, on that path only; `None` when it fails or finds none.
async fn elsewhere(
    conn: &Connection,
    kueue: &KueueApi,
    opts: &GateOptions<'_>,
    run: &GateRun,
    log: &Log,
) -> Option<usize> {
    let scope = WaitingScope {
        checks: run.report.dispatch_checks.clone(),
        cluster_queues: opts.settings.cluster_queues.iter().cloned().collect::<BTreeSet<_>>(),
        all_states: opts.all_states,
    };
    let scoped = async { Ok::<_, Error>(((), scope)) };
    let (_, _, waiting) = fetch::waiting(conn, kueue, None, opts.selector, scoped, log).await.ok()?;
    waiting.found().map(Vec::len).filter(|n| *n > 0)
}

pub async fn run(conn: &Connection, opts: &GateOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let kueue = fetch::discover_kueue(conn, deps.log).await?;
    let collected = collect_discovered(conn, kueue.clone(), opts, deps.log).await?;
    // `now` is read once, when every read has answered (the Lease's among them): a yes must
    // hold when it is said, so the time the reads took (a slow answer, a `Retry-After` wait)
    // counts in the Lease's age, as `lease` counts it (docs/gate.md, "When `now` is read").
    let now = deps.clock.now();
    let typos = crate::core::hint::gate_names(opts.settings, &collected.facts);
    let lease_missing = matches!(collected.facts.lease, Fetched::Missing);
    let mut run = judge(collected, opts, &conn.namespace, now);
    // The one-shot gate says dispatch's check under another controllerName (in -o json too).
    run.warnings.extend(run.report.lookalikes.iter().map(|l| l.warning(&opts.settings.controller_name)));
    for w in &run.warnings {
        deps.warn(w);
    }
    for typo in &typos {
        deps.warn(typo);
    }
    if lease_missing && let Some(hint) = super::hints::missing_lease(conn, &opts.settings.lease).await {
        deps.warn(&hint);
    }
    if let Some(printer) = deps.printer {
        printer.print(&run.document(), deps.out)?;
    } else if opts.output.format == Format::Prometheus {
        let name = conn.context.as_deref().unwrap_or_default();
        crate::render::prometheus::render(&[Context { name, outcome: Ok(&run) }], deps.out)?;
    } else {
        crate::render::gate::render_to(&run, opts.output, deps.style, deps.out, deps.err)?;
    }
    deps.out.flush()?;
    if matches!(opts.output.format, Format::Table | Format::Wide) {
        let notes = crate::render::gate::waiting_notes(&run, opts.selector);
        for line in &notes {
            let _ = writeln!(deps.err, "{line}");
        }
        let none = notes.first().is_some_and(|l| l.starts_with("No workloads wait"));
        if none
            && run.namespace.is_some()
            && let Some(n) = elsewhere(conn, &kueue, opts, &run, deps.log).await
        {
            let noun = if n == 1 { "workload waits" } else { "workloads wait" };
            let _ = writeln!(deps.err, "{n} {noun} in other namespaces: use -A to see them.");
        }
    }
    Ok(Exit::from(run.report.verdict))
}

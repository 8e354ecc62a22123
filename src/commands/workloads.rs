//! `kubectl dispatch workloads` (`workload` without NAME): every Workload of the namespace, or
//! of all with -A, each explained by the same core as `workload NAME`, one row each.

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::core::fetched::Fetched;
use crate::core::gate::{GateFacts, GateSettings};
use crate::core::skew;
use crate::core::workloads::{self, ListFacts};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::{Format, Output};
use crate::log::Log;
use crate::render::jsonpath::Template;
use crate::render::workloads::{Rows, table_rows};
use crate::report::workloads::{WorkloadsRun, item_doc};

use super::Deps;

pub struct WorkloadsOptions<'a> {
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_namespaces: bool,
    /// `-l`: a label selector on the Workloads, passed to the server.
    pub selector: Option<&'a str>,
    /// `--sort-by` over each row's `-o json` item.
    pub sort_by: Option<&'a Template>,
}

/// What the rows share (every fact but the Workloads), the Kueue version read, and what was
/// read beside it for the warnings.
struct Shared {
    facts: ListFacts,
    kueue: KueueApi,
    warning: Option<String>,
    server_date: Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>,
}

/// Reads what every row shares in two round trips: discovery; then the LocalQueues, the
/// ClusterQueues and the AdmissionChecks, dispatch's Lease and Kueue's manager's Lease,
/// concurrently. The Workloads are read after, at the version those reads settled on.
async fn shared(conn: &Connection, opts: &WorkloadsOptions<'_>, log: &Log) -> Result<Shared, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let kueue = fetch::discover_kueue(conn, log).await?;
    let reads = async |k: &KueueApi| {
        futures::try_join!(
            fetch::local_queues(conn, k, namespace, log),
            fetch::cluster_queues(conn, k, log),
            fetch::admission_checks(conn, k, log),
        )
    };
    let (lease, kueue_lease, served) = futures::try_join!(
        fetch::lease(conn, &opts.settings.lease, log),
        fetch::lease(conn, &opts.settings.kueue_lease, log),
        fetch::read_served(&kueue, log, reads),
    )?;
    let (local_queues, cluster_queues, admission_checks) = served.value;
    let gate = GateFacts { cluster_queues, admission_checks, lease, holder: None };
    let facts = ListFacts { workloads: Vec::new(), local_queues, gate, kueue_lease: Some(kueue_lease) };
    Ok(Shared { facts, kueue: served.kueue, warning: served.warning, server_date: kueue.server_date })
}

/// A Workload list that is forbidden is an error (exit 4), as for `workload NAME`: there is
/// nothing to list.
fn listed<T>(listed: Fetched<T>, namespace: Option<&str>) -> Result<Option<T>, Error> {
    match listed {
        Fetched::Found(w) => Ok(Some(w)),
        Fetched::Missing => Ok(None),
        Fetched::Forbidden(denied) => {
            let scope = namespace.map(|ns| format!("in namespace {ns}")).unwrap_or("in any namespace".into());
            let message = format!("may not list Workloads {scope} (forbidden)");
            Err(Error::Forbidden { message, rule: denied.rule })
        }
    }
}

/// The warnings of a run: Kueue's version fallen back to, the server's clock, and a Lease
/// renewed in the future when a row judged the gate.
fn warnings(shared: &Shared, gated: bool, now: k8s_openapi::jiff::Timestamp) -> Vec<String> {
    let mut warnings: Vec<String> = shared.warning.iter().cloned().collect();
    warnings.extend(shared.server_date.and_then(|(server, local)| skew::server_clock(Some(server), local)));
    if gated {
        warnings.extend(skew::lease_in_future(shared.facts.gate.lease.found(), now));
    }
    warnings
}

/// `workloads` in a table without `--sort-by`: each batch of rows written as it is decoded,
/// as kubectl writes a list chunk by chunk; only a batch is held.
async fn streamed(conn: &Connection, opts: &WorkloadsOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let log = deps.log;
    let mut shared = shared(conn, opts, log).await?;
    // After every read but the Workloads' (the Leases among them), as `workload NAME` reads.
    let now = deps.clock.now();
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let (mut count, mut gated, mut inactive) = (0usize, false, workloads::Inactive::default());
    let (out, style, kueue) = (&mut *deps.out, deps.style, shared.kueue.clone());
    let facts = &mut shared.facts;
    let each = |batch, restarted| {
        // The list started over: what it counts is counted again.
        if restarted {
            inactive = workloads::Inactive::default();
        }
        facts.workloads = batch;
        let explanations = workloads::explain_all(opts.settings, facts, now);
        gated |= explanations.iter().any(|e| e.gate.is_some());
        inactive.add(&explanations);
        let rows = Rows { every: namespace.is_none(), headers: count == 0, no_headers: opts.output.no_headers };
        count += explanations.len();
        table_rows(&explanations, rows, opts.output, style, out)?;
        out.flush()?;
        Ok(())
    };
    let fetched = fetch::workloads_each(conn, &kueue, namespace, opts.selector, log, each).await;
    for w in warnings(&shared, gated, now).into_iter().chain(inactive.warnings()) {
        deps.warn(&w);
    }
    listed(fetched?, namespace)?;
    if count == 0 {
        no_resources(namespace, deps);
    }
    Ok(Exit::Success)
}

/// kubectl's words when nothing is listed, on stderr.
fn no_resources(namespace: Option<&str>, deps: &mut Deps<'_>) {
    let _ = match namespace {
        Some(ns) => writeln!(deps.err, "No resources found in {ns} namespace."),
        None => writeln!(deps.err, "No resources found"),
    };
}

pub async fn run(conn: &Connection, opts: &WorkloadsOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let table = matches!(opts.output.format, Format::Table | Format::Wide);
    if table && opts.sort_by.is_none() && deps.printer.is_none() {
        return streamed(conn, opts, deps).await;
    }
    let mut shared = shared(conn, opts, deps.log).await?;
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let read = fetch::workloads(conn, &shared.kueue, namespace, opts.selector, deps.log).await?;
    shared.facts.workloads = listed(read, namespace)?.unwrap_or_default();
    // After every read, the Lease's among them, as `workload NAME` reads it.
    let now = deps.clock.now();
    let mut explanations = workloads::explain_all(opts.settings, &shared.facts, now);
    if let Some(template) = opts.sort_by {
        explanations = crate::render::jsonpath::sort_by(explanations, template, |e| {
            serde_json::to_value(item_doc(e)).unwrap_or_default()
        });
    }
    let mut warnings = warnings(&shared, explanations.iter().any(|e| e.gate.is_some()), now);
    warnings.extend(workloads::inactive_queues(&explanations));
    for w in &warnings {
        deps.warn(w);
    }
    let run = WorkloadsRun { explanations, namespace: namespace.map(String::from), warnings, now };
    match deps.printer {
        // kubectl's custom columns print a row per object of a list, aligned together;
        // jsonpath and name read the list whole.
        Some(printer) if printer.row_per_object() => {
            let items: Vec<_> = run.explanations.iter().map(item_doc).collect();
            printer.print_list(&items, deps.out)?;
        }
        Some(printer) => printer.print(&run.document(), deps.out)?,
        None => crate::render::workloads::render(&run, opts.output, deps.style, deps.out)?,
    }
    deps.out.flush()?;
    if run.explanations.is_empty() && table {
        no_resources(namespace, deps);
    }
    Ok(Exit::Success)
}

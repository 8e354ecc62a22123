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

/// What was read, and what was read beside it for the warnings.
type Collected = (ListFacts, Option<String>, Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>);

/// Reads everything in two round trips: discovery; then the Workloads, the LocalQueues, the
/// ClusterQueues and the AdmissionChecks, dispatch's Lease and Kueue's manager's Lease,
/// concurrently. A Workload list that is forbidden is an error (exit 4), as for `workload
/// NAME`: there is nothing to list.
async fn collect(conn: &Connection, opts: &WorkloadsOptions<'_>, log: &Log) -> Result<Collected, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let kueue = fetch::discover_kueue(conn, log).await?;
    let reads = async |k: &KueueApi| {
        futures::try_join!(
            fetch::workloads(conn, k, namespace, opts.selector, log),
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
    let (listed, local_queues, cluster_queues, admission_checks) = served.value;
    let workloads = match listed {
        Fetched::Found(w) => w,
        Fetched::Missing => Vec::new(),
        Fetched::Forbidden(denied) => {
            let scope = namespace.map(|ns| format!("in namespace {ns}")).unwrap_or("in any namespace".into());
            let message = format!("may not list Workloads {scope} (forbidden)");
            return Err(Error::Forbidden { message, rule: denied.rule });
        }
    };
    let gate = GateFacts { cluster_queues, admission_checks, lease, holder: None };
    let facts = ListFacts { workloads, local_queues, gate, kueue_lease: Some(kueue_lease) };
    Ok((facts, served.warning, kueue.server_date))
}

pub async fn run(conn: &Connection, opts: &WorkloadsOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let (facts, kueue_warning, server_date) = collect(conn, opts, deps.log).await?;
    // After every read, the Lease's among them, as `workload NAME` reads it.
    let now = deps.clock.now();
    let mut explanations = workloads::explain_all(opts.settings, &facts, now);
    if let Some(template) = opts.sort_by {
        explanations = crate::render::jsonpath::sort_by(explanations, template, |e| {
            serde_json::to_value(item_doc(e)).unwrap_or_default()
        });
    }
    let mut warnings: Vec<String> = kueue_warning.into_iter().collect();
    warnings.extend(server_date.and_then(|(server, local)| skew::server_clock(Some(server), local)));
    if explanations.iter().any(|e| e.gate.is_some()) {
        warnings.extend(skew::lease_in_future(facts.gate.lease.found(), now));
    }
    for w in &warnings {
        deps.warn(w);
    }
    let namespace = (!opts.all_namespaces).then(|| conn.namespace.clone());
    let run = WorkloadsRun { explanations, namespace, warnings, now };
    match deps.printer {
        // kubectl's custom columns print a row per object of a list; jsonpath and name read
        // the list whole.
        Some(printer) if printer.row_per_object() => {
            for item in run.explanations.iter().map(item_doc) {
                printer.print(&item, deps.out)?;
            }
        }
        Some(printer) => printer.print(&run.document(), deps.out)?,
        None => crate::render::workloads::render(&run, opts.output, deps.style, deps.out)?,
    }
    deps.out.flush()?;
    if run.explanations.is_empty() && matches!(opts.output.format, Format::Table | Format::Wide) {
        // kubectl's words, on stderr.
        let _ = match &run.namespace {
            Some(ns) => writeln!(deps.err, "No resources found in {ns} namespace."),
            None => writeln!(deps.err, "No resources found"),
        };
    }
    Ok(Exit::Success)
}

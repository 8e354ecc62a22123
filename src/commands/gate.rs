//! `kubectl dispatch gate`.

use std::collections::BTreeSet;

use crate::cluster::connect::Connection;
use crate::cluster::fetch;
use crate::core::fetched::Fetched;
use crate::core::gate::{self, GateFacts, GateSettings};
use crate::core::skew;
use crate::core::waiting::{self, WaitingScope};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::Log;
use crate::report::GateRun;
use crate::settings::Output;

use super::{Deps, bounded};

pub struct GateOptions<'a> {
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_states: bool,
    pub all_namespaces: bool,
    pub timeout: Option<std::time::Duration>,
}

/// The facts of one run, as read.
pub struct Collected {
    pub facts: GateFacts,
    pub waiting: Fetched<Vec<waiting::Waiting>>,
    pub server_date: Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>,
}

/// Reads everything the gate needs, concurrently: discovery and the Lease first, then the
/// ClusterQueues, AdmissionChecks, LocalQueues and the Workload pages.
pub async fn collect(conn: &Connection, opts: &GateOptions<'_>, log: &Log) -> Result<Collected, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let (kueue, lease) =
        futures::try_join!(fetch::discover_kueue(conn, log), fetch::lease(conn, &opts.settings.lease, log))?;
    let checks_and_waiting = async {
        let acs = fetch::admission_checks(conn, &kueue, log).await?;
        let scope = WaitingScope {
            checks: gate::dispatch_checks(opts.settings, &acs),
            cluster_queues: opts.settings.cluster_queues.iter().cloned().collect::<BTreeSet<_>>(),
            all_states: opts.all_states,
        };
        let waiting = fetch::waiting(conn, &kueue, namespace, &scope, log).await?;
        Ok::<_, Error>((acs, waiting, scope))
    };
    let (cqs, (acs, waiting, scope), lqs) = futures::try_join!(
        fetch::cluster_queues(conn, &kueue, log),
        checks_and_waiting,
        fetch::local_queues(conn, &kueue, namespace, log),
    )?;
    let local_queues = lqs.found().cloned().unwrap_or_default();
    Ok(Collected {
        facts: GateFacts { cluster_queues: cqs, admission_checks: acs, lease },
        waiting: waiting.map(|rows| waiting::finish(rows, &local_queues, &scope)),
        server_date: kueue.server_date,
    })
}

/// Judges collected facts at `now`.
pub fn judge(
    collected: Collected,
    opts: &GateOptions<'_>,
    namespace: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> GateRun {
    let report = gate::evaluate(opts.settings, &collected.facts, now);
    let mut warnings: Vec<String> =
        collected.server_date.and_then(|(server, local)| skew::server_clock(Some(server), local)).into_iter().collect();
    warnings.extend(skew::lease_in_future(report.lease.facts.as_ref(), now));
    if let Fetched::Forbidden(d) = &collected.waiting {
        warnings.push(format!("cannot show waiting Workloads: missing RBAC: {}", d.rule));
    }
    let namespace = (!opts.all_namespaces).then(|| namespace.to_string());
    GateRun { report, waiting: collected.waiting, namespace, warnings, now }
}

pub async fn run(conn: &Connection, opts: &GateOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    // `now` is read once, as the reads start: a long Workload list must not age the Lease.
    let now = deps.clock.now();
    let collected = bounded(opts.timeout, &conn.server, collect(conn, opts, deps.log)).await?;
    let run = judge(collected, opts, &conn.namespace, now);
    for w in &run.warnings {
        let _ = writeln!(deps.err, "Warning: {w}");
    }
    crate::render::gate::render(&run, opts.output, deps.style, deps.out)?;
    deps.out.flush()?;
    if run.waiting.found().is_some_and(|w| w.is_empty())
        && !matches!(opts.output.format, crate::cli::Format::Json | crate::cli::Format::Yaml)
    {
        let scope = match &run.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "in any namespace".into(),
        };
        let _ = writeln!(deps.err, "No workloads wait at dispatch's check {scope}.");
    }
    Ok(Exit::from(run.report.verdict))
}

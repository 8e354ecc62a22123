//! `kubectl dispatch workload NAME`: reads the Workload, its LocalQueue, the gate's facts and
//! its place in Kueue's queue; explains them at one `now`; renders.

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::cluster::reading::workload as read;
use crate::core::fetched::Fetched;
use crate::core::gate::{GateFacts, GateSettings};
use crate::core::skew;
use crate::core::workload::{self, Position, WorkloadInput};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Output;
use crate::log::Log;
use crate::report::workload::WorkloadRun;

use super::Deps;

/// Reads everything in three round trips: discovery; the Workload, the ClusterQueues, the
/// AdmissionChecks, the visibility API's discovery, the Lease and Kueue's manager's Lease
/// concurrently; then its LocalQueue and, when it waits for
/// quota, its place in the queue (and, with `holder_pod`, the Lease holder's pod and node, as
/// `gate -o wide|json|yaml` shows them).
pub async fn collect(
    conn: &Connection,
    name: &str,
    settings: &GateSettings,
    holder_pod: bool,
    log: &Log,
) -> Result<(WorkloadInput, Option<String>, Option<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>), Error>
{
    let namespace = conn.namespace.as_str();
    let kueue = fetch::discover_kueue(conn, log).await?;
    let reads = async |k: &KueueApi| {
        let visibility = async { Ok::<_, Error>(read::visibility_versions(conn, log).await) };
        let (w, cqs, acs, visibility) = futures::try_join!(
            read::workload(conn, k, namespace, name, log),
            fetch::cluster_queues(conn, k, log),
            fetch::admission_checks(conn, k, log),
            visibility,
        )?;
        let waits = w.active && !w.conditions.get("QuotaReserved").is_some_and(|c| c.is_true());
        let (local_queue, position) = match &w.queue_name {
            Some(q) => {
                let asked = async {
                    if waits {
                        read::position(conn, &visibility, namespace, q, name, log).await
                    } else {
                        Position::NotAsked
                    }
                };
                let (lq, position) = futures::join!(read::local_queue(conn, k, namespace, q, log), asked);
                (lq?, position)
            }
            None => (Fetched::Missing, Position::NotAsked),
        };
        Ok::<_, Error>((w, local_queue, cqs, acs, position))
    };
    let lease_and_holder = async {
        let fetched = fetch::lease(conn, &settings.lease, log).await?;
        let holder = match holder_pod {
            true => crate::cluster::reading::holder::read(conn, &settings.lease, &fetched, log).await?,
            false => None,
        };
        Ok::<_, Error>((fetched, holder))
    };
    let ((lease, holder), kueue_lease, served) = futures::try_join!(
        lease_and_holder,
        fetch::lease(conn, &settings.kueue_lease, log),
        fetch::read_served(&kueue, log, reads)
    )?;
    let (w, local_queue, cluster_queues, admission_checks, position) = served.value;
    let input = WorkloadInput {
        workload: w,
        local_queue,
        gate: GateFacts { cluster_queues, admission_checks, lease, holder },
        position,
        kueue_lease: Some(kueue_lease),
    };
    Ok((input, served.warning, kueue.server_date))
}

pub async fn run(
    conn: &Connection,
    name: &str,
    settings: &GateSettings,
    output: Output,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let holder_pod = output.format != crate::invocation::Format::Table;
    let (input, kueue_warning, server_date) = collect(conn, name, settings, holder_pod, deps.log).await?;
    // After every read, the Lease's among them, as the gate reads it (docs/gate.md).
    let now = deps.clock.now();
    let explanation = workload::explain(settings, &input, now);
    let mut warnings: Vec<String> = kueue_warning.into_iter().collect();
    warnings.extend(server_date.and_then(|(server, local)| skew::server_clock(Some(server), local)));
    if explanation.gate.is_some() {
        warnings.extend(skew::lease_in_future(input.gate.lease.found(), now));
    }
    for w in &warnings {
        deps.warn(w);
    }
    let through = explanation.stage.is_through();
    let run = WorkloadRun { explanation, warnings, now };
    match deps.printer {
        Some(printer) => printer.print(&run.document(), deps.out)?,
        None => crate::render::workload::render(&run, output, deps.style, deps.out, deps.err)?,
    }
    Ok(if through { Exit::Success } else { Exit::No })
}

//! Runs one invocation: connect, then the verb. Returns the exit to use; errors are printed by
//! `main`, once.

use crate::cluster::connecting::connect;
use crate::commands::doctor::{self, DoctorOptions};
use crate::commands::fleet::{self, FleetOptions};
use crate::commands::gate::{self, GateOptions};
use crate::commands::workloads::{self, WorkloadsOptions};
use crate::commands::{Deps, gate_watch, lease, lease_watch, workload};
use crate::core::lease::LeaseRef;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::{Invocation, Verb, WorkloadView};
use crate::render::jsonpath::Template;

pub async fn run(inv: &Invocation, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    // Live modes never hand an exec credential plugin the terminal: it would fight the status
    // line, and a refresh hours later finds nobody there.
    let live = matches!(inv.verb, Verb::Gate { live: Some(_), .. } | Verb::Lease { watch: Some(_), .. });
    let connect_options =
        connect::ConnectOptions { request_timeout: inv.timeout, interactive: !live, pass_stderr: true };
    let connect = || connect::connect(&inv.connection, connect_options, deps.log);
    match &inv.verb {
        // Each context connects on its own.
        Verb::Fleet { contexts, settings, output, all_states, all_namespaces, max_concurrency, view } => {
            let sort_by = sort_by(view)?;
            let opts = FleetOptions {
                connection: &inv.connection,
                contexts,
                settings,
                output: *output,
                all_states: *all_states,
                all_namespaces: *all_namespaces,
                timeout: inv.timeout,
                max_concurrency: *max_concurrency,
                selector: view.selector.as_deref(),
                sort_by: sort_by.as_ref(),
            };
            fleet::run(&opts, deps)
        }
        Verb::Gate { settings, output, all_states, all_namespaces, live, view } => {
            let sort_by = sort_by(view)?;
            let conn = connect().await?;
            let opts = GateOptions {
                settings,
                output: *output,
                all_states: *all_states,
                all_namespaces: *all_namespaces,
                selector: view.selector.as_deref(),
                sort_by: sort_by.as_ref(),
            };
            match live {
                None => gate::run(&conn, &opts, deps).await,
                Some(live) => gate_watch::run(&conn, &opts, *live, deps).await,
            }
        }
        Verb::Doctor { lease, controller_name, kueue_lease, output, all_namespaces, rbac } => {
            let conn = connect().await?;
            let (output, all_namespaces, rbac) = (*output, *all_namespaces, *rbac);
            let opts = DoctorOptions { lease, controller_name, kueue_lease, output, all_namespaces, rbac };
            doctor::run(&conn, &opts, deps).await
        }
        Verb::Lease { lease, in_context_namespace, dispatch_namespace, kueue_lease, output, watch } => {
            let conn = connect().await?;
            let in_context = LeaseRef { namespace: conn.namespace.clone(), name: lease.name.clone() };
            let lease = if *in_context_namespace { &in_context } else { lease };
            match watch {
                None => lease::run(&conn, lease, dispatch_namespace, *output, deps).await,
                Some(watch) => {
                    let leases = lease_watch::Leases { lease, kueue: kueue_lease };
                    lease_watch::run(&conn, leases, *output, *watch, deps).await
                }
            }
        }
        Verb::Workload { name, settings, output } => {
            let conn = connect().await?;
            workload::run(&conn, name, settings, *output, deps).await
        }
        Verb::Workloads { settings, output, all_namespaces, view } => {
            let sort_by = sort_by(view)?;
            let conn = connect().await?;
            let opts = WorkloadsOptions {
                settings,
                output: *output,
                all_namespaces: *all_namespaces,
                selector: view.selector.as_deref(),
                sort_by: sort_by.as_ref(),
            };
            workloads::run(&conn, &opts, deps).await
        }
    }
}

/// `--sort-by`'s JSONPath, parsed (checked already when the command line was resolved).
fn sort_by(view: &WorkloadView) -> Result<Option<Template>, Error> {
    view.sort_by.as_deref().map(Template::parse).transpose().map_err(Error::Usage)
}

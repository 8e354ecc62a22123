//! `kubectl dispatch doctor`: fetch what the plugin and the adapter need (access reviews,
//! Kueue's discovery and one read, the Lease's namespace, the Lease and its holder's pod),
//! judge it at one `now`, render the checklist (or only the RBAC to add, with `--rbac`).

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::cluster::reading::{holder, review};
use crate::core::doctor::{self, DoctorFacts, KueueServed, Level};
use crate::core::lease::LeaseRef;
use crate::core::waiting::WaitingScope;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Output;
use crate::log::Log;
use crate::report::doctor::DoctorRun;

use super::Deps;

pub struct DoctorOptions<'a> {
    pub lease: &'a LeaseRef,
    /// Kueue's own manager's Lease, a finding of its own (context, never a failure).
    pub kueue_lease: &'a LeaseRef,
    pub output: Output,
    pub all_namespaces: bool,
    /// Print only the RBAC objects that grant what is missing.
    pub rbac: bool,
}

pub async fn collect(conn: &Connection, opts: &DoctorOptions<'_>, log: &Log) -> Result<DoctorFacts, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let reads = doctor::reads(opts.lease, namespace);
    let reviews = futures::future::try_join_all(reads.iter().map(|a| review::access(conn, a, log)));
    let lease_and_holder = async {
        let fetched = fetch::lease(conn, opts.lease, log).await?;
        let holder = holder::read(conn, opts.lease, &fetched, log).await?;
        Ok::<_, Error>((fetched, holder))
    };
    let (identity, answers, kueue, ns, (lease, holder), kueue_lease) = futures::try_join!(
        review::identity(conn, log),
        reviews,
        kueue_served(conn, namespace, log),
        review::namespace(conn, &opts.lease.namespace, log),
        lease_and_holder,
        fetch::lease(conn, opts.kueue_lease, log),
    )?;
    Ok(DoctorFacts {
        identity,
        access: reads.into_iter().zip(answers).collect(),
        kueue,
        namespace: ns,
        lease,
        holder,
        kueue_lease: Some((opts.kueue_lease.clone(), kueue_lease)),
    })
}

/// Discovery, then the gate's Kueue reads at the version the plugin would read, falling back as
/// the gate does when Kueue's conversion webhook does not answer.
async fn kueue_served(conn: &Connection, namespace: Option<&str>, log: &Log) -> Result<KueueServed, Error> {
    let kueue = match fetch::discover_kueue(conn, log).await {
        Ok(k) => k,
        Err(Error::KueueMissing) => return Ok(KueueServed::NotServed),
        Err(e) if fetch::discovery_forbidden(&e) => return Ok(KueueServed::Forbidden),
        Err(e) => return Err(e),
    };
    let versions = kueue.served.clone();
    let read = fetch::read_served(&kueue, log, async |k: &KueueApi| kueue_reads(conn, k, namespace, log).await).await;
    Ok(match read {
        Ok(served) => {
            KueueServed::Served { versions, reads: Some(served.kueue.version), fallback: served.warning, error: None }
        }
        Err(e @ Error::KueueWebhook { .. }) => {
            KueueServed::Served { versions, reads: Some(kueue.version), fallback: None, error: Some(e.to_string()) }
        }
        Err(Error::KueueResourceMissing { resource, group_version }) => KueueServed::Served {
            versions,
            reads: Some(kueue.version),
            fallback: None,
            error: Some(format!("{resource} are not served at {group_version}")),
        },
        Err(e) => return Err(e),
    })
}

pub async fn run(conn: &Connection, opts: &DoctorOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let facts = collect(conn, opts, deps.log).await?;
    // After every read, the Lease's among them, as the gate reads it (docs/gate.md).
    let now = deps.clock.now();
    let report = doctor::evaluate(opts.lease, &facts, now);
    let run = DoctorRun { report, context: conn.context.clone(), now };
    if opts.rbac {
        if let Some(plan) = &run.report.rbac {
            deps.out.write_all(crate::report::rbac::manifest(plan).as_bytes())?;
        } else {
            let _ = writeln!(deps.err, "Nothing to grant: every read is allowed.");
        }
    } else if let Some(printer) = deps.printer {
        printer.print(&run.document(), deps.out)?;
    } else {
        crate::render::doctor::render(&run, opts.output, deps.style, deps.out, deps.err)?;
    }
    Ok(match run.report.overall {
        Level::Ok | Level::Warning => Exit::Success,
        Level::Fail => Exit::No,
        Level::Unknown => Exit::Unknown,
    })
}

/// Every Kueue list the gate reads (ClusterQueues, AdmissionChecks, LocalQueues, Workloads), kept
/// nowhere: a conversion failure on any object (one stored at another version than the rest)
/// shows only when every object is read. Forbidden lists are the access findings' business.
async fn kueue_reads(conn: &Connection, kueue: &KueueApi, namespace: Option<&str>, log: &Log) -> Result<(), Error> {
    let nothing = async {
        Ok::<_, Error>((
            (),
            WaitingScope { checks: Default::default(), cluster_queues: Default::default(), all_states: false },
        ))
    };
    futures::try_join!(
        fetch::cluster_queues(conn, kueue, log),
        fetch::admission_checks(conn, kueue, log),
        fetch::local_queues(conn, kueue, namespace, log),
        fetch::waiting(conn, kueue, namespace, None, nothing, log),
    )?;
    Ok(())
}

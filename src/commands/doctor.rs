//! `kubectl dispatch doctor`: fetch what the plugin and the adapter need (access reviews,
//! Kueue's discovery and one read, the Lease's namespace, the Lease and its holder's pod),
//! judge it at one `now`, render the checklist (or only the RBAC to add, with `--rbac`).

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::cluster::reading::{holder, review};
use crate::core::doctor::{self, DoctorFacts, KueueServed, Level, QueueFacts, RbacOutcome};
use crate::core::fetched::Fetched;
use crate::core::gate::{self, GateSettings};
use crate::core::lease::LeaseRef;
use crate::core::lookalike;
use crate::core::waiting::{self, WaitingScope};
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Output;
use crate::log::Log;
use crate::report::doctor::DoctorRun;

use super::Deps;

pub struct DoctorOptions<'a> {
    pub lease: &'a LeaseRef,
    /// dispatch's controllerName: the AdmissionChecks that look like dispatch's are found
    /// beside it.
    pub controller_name: &'a str,
    /// Kueue's own manager's Lease, a finding of its own (context, never a failure).
    pub kueue_lease: &'a LeaseRef,
    pub output: Output,
    pub all_namespaces: bool,
    /// Print only the RBAC objects that grant what is missing.
    pub rbac: bool,
}

pub async fn collect(conn: &Connection, opts: &DoctorOptions<'_>, log: &Log) -> Result<DoctorFacts, Error> {
    let namespace = (!opts.all_namespaces).then_some(conn.namespace.as_str());
    let mut reads = doctor::reads(opts.lease, namespace);
    let kueue_read = doctor::kueue_lease_read(opts.kueue_lease);
    reads.push(kueue_read.clone());
    let reviews = futures::future::try_join_all(reads.iter().map(|a| review::access(conn, a, log)));
    let lease_and_holder = async {
        let fetched = fetch::lease(conn, opts.lease, log).await?;
        let holder = holder::read(conn, opts.lease, &fetched, log).await?;
        Ok::<_, Error>((fetched, holder))
    };
    let (identity, answers, (kueue, queues), (ns, kueue_ns), (lease, holder), kueue_lease) = futures::try_join!(
        review::identity(conn, log),
        reviews,
        kueue_served(conn, opts.controller_name, namespace, log),
        futures::future::try_join(
            review::namespace(conn, &opts.lease.namespace, log),
            review::namespace(conn, &opts.kueue_lease.namespace, log),
        ),
        lease_and_holder,
        fetch::lease(conn, opts.kueue_lease, log),
    )?;
    let mut access: Vec<_> = reads.into_iter().zip(answers).collect();
    // No namespace, no Kueue manager there: a Role in it could not be applied, nor granted use.
    if kueue_ns == Fetched::Missing {
        access.retain(|(a, _)| *a != kueue_read);
    }
    Ok(DoctorFacts {
        identity,
        access,
        kueue,
        namespace: ns,
        lease,
        holder,
        kueue_lease: Some((opts.kueue_lease.clone(), kueue_lease)),
        queues,
    })
}

/// Discovery, then the gate's Kueue reads at the version the plugin would read, falling back as
/// the gate does when Kueue's conversion webhook does not answer; with what they read.
async fn kueue_served(
    conn: &Connection,
    controller_name: &str,
    namespace: Option<&str>,
    log: &Log,
) -> Result<(KueueServed, Option<QueueFacts>), Error> {
    let kueue = match fetch::discover_kueue(conn, log).await {
        Ok(k) => k,
        Err(Error::KueueMissing) => return Ok((KueueServed::NotServed, None)),
        Err(e) if fetch::discovery_forbidden(&e) => return Ok((KueueServed::Forbidden, None)),
        Err(e) => return Err(e),
    };
    let versions = kueue.served.clone();
    let reads = async |k: &KueueApi| kueue_reads(conn, k, controller_name, namespace, log).await;
    let read = fetch::read_served(&kueue, log, reads).await;
    let unread = |error: String| KueueServed::Served {
        versions: versions.clone(),
        reads: Some(kueue.version.clone()),
        fallback: None,
        error: Some(error),
    };
    Ok(match read {
        Ok(served) => (
            KueueServed::Served {
                versions: versions.clone(),
                reads: Some(served.kueue.version),
                fallback: served.warning,
                error: None,
            },
            Some(served.value),
        ),
        Err(e @ Error::KueueWebhook { .. }) => (unread(e.to_string()), None),
        Err(Error::KueueResourceMissing { resource, group_version }) => {
            (unread(format!("{resource} are not served at {group_version}")), None)
        }
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
        return rbac(&run, deps);
    }
    if let Some(printer) = deps.printer {
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

/// `--rbac`: the YAML that grants what is missing. Its exit code says whether that could be
/// computed (0: here it is, or nothing is missing; 4: some reads could not be reviewed, or the
/// user could not be named), so `doctor --rbac > grant.yaml && kubectl apply -f grant.yaml`
/// applies a grant whatever else is wrong (a stale Lease is the checklist's business).
fn rbac(run: &DoctorRun, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let outcome = run.report.rbac_outcome();
    match &run.report.rbac {
        Some(plan) => deps.out.write_all(crate::report::rbac::manifest(plan).as_bytes())?,
        None if outcome == RbacOutcome::Complete => {
            let _ = writeln!(deps.err, "Nothing to grant: every read is allowed.");
        }
        None => {}
    }
    Ok(match outcome {
        RbacOutcome::Complete => Exit::Success,
        RbacOutcome::Incomplete(gaps) => {
            for gap in gaps {
                deps.warn(&gap);
            }
            Exit::Unknown
        }
    })
}

/// Every Kueue list the gate reads (ClusterQueues, AdmissionChecks, LocalQueues, Workloads): a
/// conversion failure on any object (one stored at another version than the rest) shows only
/// when every object is read. The Workloads kept are those waiting at dispatch's checks or at
/// their lookalikes. Forbidden lists are the access findings' business.
async fn kueue_reads(
    conn: &Connection,
    kueue: &KueueApi,
    controller_name: &str,
    namespace: Option<&str>,
    log: &Log,
) -> Result<QueueFacts, Error> {
    let settings = GateSettings { controller_name: controller_name.to_string(), ..GateSettings::default() };
    let scoped = async {
        let acs = fetch::admission_checks(conn, kueue, log).await?;
        let mut checks = gate::dispatch_checks(&settings, &acs);
        checks.extend(lookalike::names(settings.wanted(), &acs));
        Ok::<_, Error>((acs, WaitingScope { checks, cluster_queues: Default::default(), all_states: false }))
    };
    let (cluster_queues, (admission_checks, scope, waiting), local_queues) = futures::try_join!(
        fetch::cluster_queues(conn, kueue, log),
        fetch::waiting(conn, kueue, namespace, None, scoped, log),
        fetch::local_queues(conn, kueue, namespace, log),
    )?;
    let lqs = local_queues.found().cloned().unwrap_or_default();
    let waiting = waiting.found().cloned().map(|rows| waiting::finish(rows, &lqs, &scope)).unwrap_or_default();
    Ok(QueueFacts { controller_name: controller_name.to_string(), cluster_queues, admission_checks, waiting })
}

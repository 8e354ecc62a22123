//! `kubectl dispatch lease`.

use crate::cluster::connecting::connect::Connection;
use crate::cluster::reading::fetch;
use crate::core::lease::{self, LeaseRef, LeaseState};
use crate::core::skew;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Output;
use crate::report::LeaseRun;
use crate::text::sanitize::escape;

use super::Deps;

/// `dispatch_namespace`: where dispatch's Lease is, looked in when the one named is missing.
pub async fn run(
    conn: &Connection,
    lease_ref: &LeaseRef,
    dispatch_namespace: &str,
    output: Output,
    deps: &mut Deps<'_>,
) -> Result<Exit, Error> {
    let (fetched, refusal) = fetch::lease_and_refusal(conn, lease_ref, deps.log).await?;
    let now = deps.clock.now();
    // Only wide, JSON and YAML show the holder's pod: the table costs no extra round trip.
    let holder = match output.format {
        crate::invocation::Format::Table => None,
        _ => crate::cluster::reading::holder::read(conn, lease_ref, &fetched, deps.log).await?,
    };
    let assessment = lease::assess_with_holder(lease_ref, &fetched, holder.as_ref(), now);
    // The clocks, from the Lease read's own `Date` header, as the gate does from discovery's.
    let mut warnings: Vec<String> = conn
        .server_clock
        .latest()
        .and_then(|(server, local)| skew::server_clock(Some(server), local))
        .into_iter()
        .collect();
    warnings.extend(skew::lease_in_future(assessment.facts.as_ref(), now));
    let run = LeaseRun { assessment, warnings, now };
    for w in &run.warnings {
        deps.warn(w);
    }
    match deps.printer {
        Some(printer) => printer.print(&run.document(), deps.out)?,
        None => crate::render::lease::render(&run, output, deps.style, deps.out).map_err(crate::error::Error::from)?,
    }
    // Forbidden: said on stderr as the live mode says it (the server's words, as kubectl prints
    // them), beside the row. Missing is a verdict (no, exit 3), not an error: its reason, with
    // where the Lease may be instead.
    if let LeaseState::Forbidden { rule } = &run.assessment.state {
        let text = refusal.unwrap_or_else(|| format!("Lease {lease_ref} may not be read (forbidden)"));
        let _ = writeln!(deps.err, "error: {}\nmissing RBAC: {}", escape(&text), escape(rule));
    } else if run.assessment.state == LeaseState::Missing {
        let text = match super::hints::in_namespace(conn, lease_ref, dispatch_namespace).await {
            Some(ns) => format!("Lease {lease_ref} does not exist; did you mean -n {ns}?"),
            None => super::hints::missing_lease(conn, lease_ref)
                .await
                .unwrap_or_else(|| format!("Lease {lease_ref} does not exist")),
        };
        let _ = writeln!(deps.err, "{}", escape(&text));
    }
    Ok(Exit::from(run.assessment.state.verdict()))
}

//! `kubectl dispatch lease`: the Lease as a heartbeat, one row.

use std::io::{self, Write};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::Style;
use super::table;
use crate::core::duration::{human, human_up};
use crate::core::lease::{LeaseAssessment, LeaseState};
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::LeaseRun;
use crate::text::sanitize::cell;

pub const HEADERS: &[&str] = &["lease", "holder", "renewed", "duration", "limit", "status", "transitions", "acquired"];
pub const WIDE_HEADERS: &[&str] = &["renew time", "acquire time", "reason", "holder pod"];

pub fn render(run: &LeaseRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        // `lease` has no -o prometheus (cli::ReportFormat); `gate -o prometheus` has the Lease.
        Format::Table | Format::Wide | Format::Prometheus => {
            let wide = output.format == Format::Wide;
            let mut headers = HEADERS.to_vec();
            if wide {
                headers.extend_from_slice(WIDE_HEADERS);
            }
            let mut row = row(&run.assessment, run.now, wide);
            row[5] = painted_status(&run.assessment.state, style);
            table::write(out, &headers, &[row], output.no_headers)
        }
    }
}

/// STATUS: `fresh (stale in 28s)`, `stale (for 3m)`, `no holder`, `never renewed`, `missing`,
/// `forbidden`.
pub fn status(state: &LeaseState) -> String {
    match state {
        LeaseState::Fresh { stale_in, .. } => format!("fresh (stale in {})", human(*stale_in)),
        LeaseState::Stale { stale_for, .. } => format!("stale (for {})", human_up(*stale_for)),
        other => other.label().to_string(),
    }
}

/// [`status`] with its first word coloured (`--color`): green when fresh, yellow when it
/// cannot be told (forbidden), red otherwise.
pub fn painted_status(state: &LeaseState, style: Style) -> String {
    let (text, label) = (status(state), state.label());
    match text.strip_prefix(label) {
        Some(rest) => format!("{}{rest}", style.paint(label, state.verdict())),
        None => style.paint(&text, state.verdict()),
    }
}

pub fn row(a: &LeaseAssessment, now: Timestamp, wide: bool) -> Vec<String> {
    let facts = a.facts.clone().unwrap_or_default();
    let mut row = vec![
        cell(&a.lease.to_string(), None),
        cell(facts.holder().unwrap_or(""), None),
        facts.renew_time.map(|t| human_up(now.duration_since(t))).unwrap_or_default(),
        facts.duration_seconds.map(|d| human(SignedDuration::from_secs(d.into()))).unwrap_or_default(),
        facts.duration_seconds.map(|d| human(SignedDuration::from_secs(2 * i64::from(d)))).unwrap_or_default(),
        status(&a.state),
        facts.transitions.map(|t| t.to_string()).unwrap_or_default(),
        facts.acquire_time.map(|t| human(now.duration_since(t))).unwrap_or_default(),
    ];
    if wide {
        row.push(facts.renew_time.map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()).unwrap_or_default());
        row.push(facts.acquire_time.map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()).unwrap_or_default());
        row.push(reason_cell(a));
        row.push(a.holder_pod.as_ref().map(|p| cell(&p.sentence(), None)).unwrap_or_default());
    }
    row
}

fn reason_cell(a: &LeaseAssessment) -> String {
    match &a.state {
        LeaseState::Forbidden { rule } => format!("missing RBAC: {rule}"),
        other => other.reason(&a.lease).unwrap_or_default(),
    }
}

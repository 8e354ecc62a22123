//! `kubectl dispatch gate`: per ClusterQueue the chain of checks and the verdict, then the
//! Workloads waiting at dispatch's check.

use std::io::{self, Write};

use super::Style;
use super::table;
use crate::core::duration::human;
use crate::core::gate::{Chain, CheckKind, Outcome};
use crate::core::verdict::Verdict;
use crate::core::waiting::Waiting;
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::GateRun;
use crate::text::sanitize::{cell, escape};

pub const CHAIN_HEADERS: &[&str] = &["#", "check", "result", "detail"];
pub const WAITING_HEADERS: &[&str] = &["namespace", "name", "clusterqueue", "check", "state", "since", "message"];
const MESSAGE_WIDTH: usize = 60;

/// Why Active=True passes but proves nothing on its own.
pub const ACTIVE_NOTE: &str = "note: Active alone proves nothing: nothing clears it when the controller stops, so only the Lease shows it is alive";

/// Renders a gate run; with `--no-headers` only table rows are written, and the titles, notes
/// and verdict lines are dropped ([`render_to`] sends them elsewhere).
pub fn render(run: &GateRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    render_to(run, output, style, out, &mut io::sink())
}

/// Renders a gate run to `out`; with `--no-headers`, `out` gets nothing but table rows (so it
/// pipes like `kubectl get --no-headers`) and the titles, notes and verdict lines go to `notes`.
pub fn render_to(
    run: &GateRun,
    output: Output,
    style: Style,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        Format::Table | Format::Wide => {
            let mut lines = Lines { out, notes: output.no_headers.then_some(notes) };
            text(run, output, style, &mut lines)
        }
        // It needs the context's name: commands call super::prometheus::render.
        Format::Prometheus => Err(io::Error::new(io::ErrorKind::InvalidInput, "-o prometheus is written per context")),
    }
}

/// Where the lines of a text render go: table rows to `out`; the rest (titles, notes, verdict
/// lines, blank separators) to `out` too, or to `notes` when there is one (`--no-headers`).
pub struct Lines<'a> {
    pub out: &'a mut dyn Write,
    pub notes: Option<&'a mut dyn Write>,
}

impl Lines<'_> {
    /// Where a line that is not a table row goes: stderr under --no-headers, else stdout.
    pub fn note(&mut self) -> &mut dyn Write {
        match &mut self.notes {
            Some(notes) => &mut **notes,
            None => &mut *self.out,
        }
    }
}

fn text(run: &GateRun, output: Output, style: Style, lines: &mut Lines<'_>) -> io::Result<()> {
    let wide = output.format == Format::Wide;
    for (i, chain) in run.report.chains.iter().enumerate() {
        if i > 0 {
            writeln!(lines.note())?;
        }
        // Wide: the Lease check also says what became of the holder's pod.
        let mut shown = chain.clone();
        if wide {
            for check in &mut shown.checks {
                check.detail = crate::report::with_holder_pod(check, &run.report.lease);
            }
        }
        chain_lines(&shown, &run.report.lease.lease.to_string(), output.no_headers, style, lines)?;
    }
    // Kueue's own heartbeat, as context under the chains: only when no manager is shown to lead.
    if let Some(note) = run.kueue_lease.as_ref().and_then(crate::core::kueue_lease::note) {
        writeln!(lines.note(), "{}", escape(&note))?;
    }
    if let Some(waiting) = run.waiting.found()
        && !waiting.is_empty()
    {
        writeln!(lines.note())?;
        let rows: Vec<Vec<String>> = waiting.iter().map(|w| waiting_row(w, run, wide)).collect();
        table::write(lines.out, WAITING_HEADERS, &rows, output.no_headers)?;
    }
    if let Some(summary) = run.stall_summary() {
        writeln!(lines.note(), "{}", escape(&summary))?;
    }
    Ok(())
}

/// One ClusterQueue's chain: its title, the checks, the note on Active, the verdict line. With
/// `no_headers` only the check rows go to `out`, the rest to `notes`.
pub fn chain_block(
    chain: &Chain,
    lease: &str,
    no_headers: bool,
    style: Style,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> io::Result<()> {
    chain_lines(chain, lease, no_headers, style, &mut Lines { out, notes: no_headers.then_some(notes) })
}

pub fn chain_lines(
    chain: &Chain,
    lease: &str,
    no_headers: bool,
    style: Style,
    lines: &mut Lines<'_>,
) -> io::Result<()> {
    let checks = match &chain.admission_checks[..] {
        several @ [_, _, ..] => {
            format!("AdmissionChecks {}", several.iter().map(|c| escape(c)).collect::<Vec<_>>().join(", "))
        }
        _ => format!(
            "AdmissionCheck {}",
            chain.admission_check.as_deref().map(escape).unwrap_or_else(|| "<none>".into())
        ),
    };
    writeln!(
        lines.note(),
        "ClusterQueue {}, {checks}, Lease {}",
        chain.cluster_queue.as_deref().map(escape).unwrap_or_else(|| "<none>".into()),
        escape(lease)
    )?;
    let rows: Vec<Vec<String>> = chain
        .checks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let detail = match &c.outcome {
                Outcome::Unknown(rule) => format!("{}; missing RBAC: {rule}", c.detail),
                _ => c.detail.clone(),
            };
            vec![(i + 1).to_string(), c.kind.title().to_string(), c.outcome.label().to_string(), cell(&detail, None)]
        })
        .collect();
    table::write(lines.out, CHAIN_HEADERS, &rows, no_headers)?;
    if chain.checks.iter().any(|c| c.kind == CheckKind::Active && c.outcome == Outcome::Pass) {
        writeln!(lines.note(), "{ACTIVE_NOTE}")?;
    }
    writeln!(lines.note(), "{}", verdict_line(chain, style))
}

/// `ReadmissionGate: no (observe-only): <the deciding reason>`.
pub fn verdict_line(chain: &Chain, style: Style) -> String {
    let word = style.paint(chain.verdict.as_str(), chain.verdict);
    match (&chain.reason, chain.verdict) {
        (_, Verdict::Yes) => format!("ReadmissionGate: {word} (the adapter writes)"),
        (Some(reason), _) => format!("ReadmissionGate: {word} (observe-only): {}", escape(reason)),
        (None, _) => format!("ReadmissionGate: {word} (observe-only)"),
    }
}

fn waiting_row(w: &Waiting, run: &GateRun, wide: bool) -> Vec<String> {
    vec![
        cell(&w.namespace, None),
        cell(&w.name, None),
        cell(w.cluster_queue.as_deref().unwrap_or(""), None),
        cell(&w.check, None),
        if w.quota_reserved || w.state != "Pending" { w.state.clone() } else { format!("{} (no quota)", w.state) },
        w.since.map(|t| human(run.now.duration_since(t))).unwrap_or_default(),
        if wide { escape(&w.message) } else { cell(&w.message, Some(MESSAGE_WIDTH)) },
    ]
}

//! `kubectl dispatch gate`: per ClusterQueue the chain of checks and the verdict, then the
//! Workloads waiting at dispatch's check.

use std::io::{self, Write};

use super::Style;
use super::table;
use crate::core::duration::human;
use crate::core::gate::{Chain, CheckKind, Outcome};
use crate::core::lease::LeaseState;
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

/// Renders a gate run; with `--no-headers` only the waiting Workloads' rows are written, and
/// the chains, notes and verdict lines are dropped ([`render_to`] sends them elsewhere).
pub fn render(run: &GateRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    render_to(run, output, style, out, &mut io::sink())
}

/// Renders a gate run to `out`; with `--no-headers`, `out` gets one table's rows and nothing
/// else, the waiting Workloads' (so it pipes like `kubectl get --no-headers`), and each chain
/// (its title, check rows, notes and verdict line) goes to `notes`.
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
        // One table on stdout under --no-headers: the waiting Workloads', so the check rows go
        // with the chain's other lines (docs/output.md).
        chain_lines(&shown, &run.report.lease.lease.to_string(), output, style, ChainRows::WithNotes, lines)?;
    }
    let waits = run.waiting.found().is_some_and(|w| !w.is_empty());
    // Kueue's own heartbeat, as context under the chains, when it matters: no manager leads, or
    // none is shown while Workloads wait (wide: whenever none is shown to lead).
    if let Some(kueue) = run.kueue_lease.as_ref()
        && (wide || crate::core::kueue_lease::is_down(kueue) || (waits && kueue.state == LeaseState::Missing))
        && let Some(note) = crate::core::kueue_lease::note(kueue)
    {
        writeln!(lines.note(), "{}", escape(&note))?;
    }
    // Default view: the holder's pod, when the Lease decides (wide has it in check 4's detail).
    if !wide && let Some(pod) = stalled_holder(run) {
        writeln!(lines.note(), "{}", escape(&pod.sentence()))?;
    }
    if let Some(waiting) = run.waiting.found()
        && !waiting.is_empty()
    {
        writeln!(lines.note())?;
        let rows: Vec<Vec<String>> = waiting.iter().map(|w| waiting_row(w, run, wide, style)).collect();
        table::write(lines.out, WAITING_HEADERS, &rows, output.no_headers)?;
    }
    if let Some(summary) = run.stall_summary() {
        writeln!(lines.note(), "{}", escape(&summary))?;
    }
    for line in inactive_waits(run) {
        writeln!(lines.note(), "{}", escape(&line))?;
    }
    let next = super::next::steps(run);
    if !next.is_empty() {
        writeln!(lines.note(), "Next:")?;
        for step in next {
            writeln!(lines.note(), "  {}", escape(&step))?;
        }
    }
    Ok(())
}

/// The lines the one-shot gate closes with on stderr when no Workload waits at dispatch's
/// check: `No workloads wait at dispatch's check in namespace ml.`, or, when some wait at a
/// check that is plainly dispatch's under another controllerName, how many wait there (never
/// "no workloads wait" then); with `-l`, the selector is named. Empty when some wait, or the
/// list was not read.
pub fn waiting_notes(run: &GateRun, selector: Option<&str>) -> Vec<String> {
    if !run.waiting.found().is_some_and(|w| w.is_empty()) {
        return Vec::new();
    }
    let near: Vec<String> =
        run.report.lookalikes.iter().filter(|l| l.waiting > 0).map(|l| escape(&l.waiting_sentence())).collect();
    if !near.is_empty() {
        return near;
    }
    let scope = match &run.namespace {
        Some(ns) => format!("in namespace {}", escape(ns)),
        None => "in any namespace".into(),
    };
    // A selector narrows what was looked at: said, so "none" is not read as none at all.
    let selector = selector.map(|l| format!(" (-l {})", escape(l))).unwrap_or_default();
    vec![format!("No workloads wait at dispatch's check {scope}{selector}.")]
}

/// The holder's pod, when the Lease check fails on a Lease that has a holder.
fn stalled_holder(run: &GateRun) -> Option<&crate::core::holder::HolderPod> {
    let fails = run
        .report
        .chains
        .iter()
        .any(|c| c.checks.iter().any(|k| k.kind == CheckKind::Heartbeat && matches!(k.outcome, Outcome::Fail(_))));
    fails.then_some(run.report.lease.holder_pod.as_ref()).flatten()
}

/// Where a chain's check rows go under `--no-headers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainRows {
    /// To `out`: the table of `gate --watch`, which shows no Workload rows.
    Table,
    /// With the chain's title and verdict (stderr): the one-shot gate, whose stdout keeps one
    /// table, the waiting Workloads.
    WithNotes,
}

/// One ClusterQueue's chain, as `gate --watch` prints it: its title, the checks, the note on
/// Active, the verdict line. With `no_headers` only the check rows go to `out`, the rest to
/// `notes`.
pub fn chain_block(
    chain: &Chain,
    lease: &str,
    no_headers: bool,
    style: Style,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> io::Result<()> {
    let output = Output { format: Format::Table, no_headers };
    let lines = &mut Lines { out, notes: no_headers.then_some(notes) };
    chain_lines(chain, lease, output, style, ChainRows::Table, lines)
}

pub fn chain_lines(
    chain: &Chain,
    lease: &str,
    output: Output,
    style: Style,
    rows_to: ChainRows,
    lines: &mut Lines<'_>,
) -> io::Result<()> {
    let no_headers = output.no_headers;
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
            vec![(i + 1).to_string(), c.kind.title().to_string(), result_word(chain, i, style), cell(&detail, None)]
        })
        .collect();
    let table_out: &mut dyn Write = match rows_to {
        ChainRows::Table => &mut *lines.out,
        ChainRows::WithNotes => lines.note(),
    };
    table::write(table_out, CHAIN_HEADERS, &rows, no_headers)?;
    // Always true, so said where detail is asked for (and in docs/design.md).
    if output.format == Format::Wide
        && chain.checks.iter().any(|c| c.kind == CheckKind::Active && c.outcome == Outcome::Pass)
    {
        writeln!(lines.note(), "{ACTIVE_NOTE}")?;
    }
    if let Some(warning) = queue_inactive(chain) {
        writeln!(lines.note(), "{}", escape(&warning))?;
    }
    writeln!(lines.note(), "{}", verdict_line(chain, style))
}

/// A check's RESULT: its outcome, coloured (`pass` green, `fail` red, `unknown` yellow);
/// `not reached`, yellow, for every check after the deciding failure, whatever it saw (the
/// adapter stops there, and it may be about an object that is not there): one failure decides,
/// and reads as the one. Its DETAIL still says what was seen, and JSON its result.
fn result_word(chain: &Chain, i: usize, style: Style) -> String {
    let check = &chain.checks[i];
    match &check.outcome {
        _ if !chain.reached(i) => style.paint("not reached", Verdict::Unknown),
        Outcome::Pass => style.paint("pass", Verdict::Yes),
        Outcome::Fail(_) => style.paint("fail", Verdict::No),
        Outcome::Unknown(_) => style.paint("unknown", Verdict::Unknown),
    }
}

/// The waiting Workloads of a ClusterQueue Kueue reports inactive, counted per queue.
fn inactive_waits(run: &GateRun) -> Vec<String> {
    let Some(waiting) = run.waiting.found() else { return Vec::new() };
    run.report
        .chains
        .iter()
        .filter(|c| queue_inactive(c).is_some())
        .filter_map(|c| {
            let cq = c.cluster_queue.as_deref()?;
            let n = waiting.iter().filter(|w| w.cluster_queue.as_deref() == Some(cq)).count();
            let noun = if n == 1 { "workload waits" } else { "workloads wait" };
            (n > 0).then(|| format!("{n} {noun} on ClusterQueue {cq}, which Kueue reports inactive"))
        })
        .collect()
}

/// Kueue's own blocker, said apart from check 3: a ClusterQueue Kueue reports inactive admits
/// nothing, whatever dispatch's gate says.
fn queue_inactive(chain: &Chain) -> Option<String> {
    let active = crate::core::kueue::inactive_by_kueue(chain.cluster_queue_active.as_ref())?;
    let cq = chain.cluster_queue.as_deref().unwrap_or("<none>");
    Some(format!(
        "Warning: {}: Kueue admits nothing there, whatever dispatch's gate says",
        crate::core::kueue::inactive_sentence(cq, active)
    ))
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

fn waiting_row(w: &Waiting, run: &GateRun, wide: bool, style: Style) -> Vec<String> {
    vec![
        cell(&w.namespace, None),
        cell(&w.name, None),
        cell(w.cluster_queue.as_deref().unwrap_or(""), None),
        cell(&w.check, None),
        style.check_state(
            &w.state,
            &if w.quota_reserved || w.state != "Pending" {
                cell(&w.state, None)
            } else {
                format!("{} (no quota)", w.state)
            },
        ),
        w.since.map(|t| human(run.now.duration_since(t))).unwrap_or_default(),
        if wide { escape(&w.message) } else { cell(&w.message, Some(MESSAGE_WIDTH)) },
    ]
}

//! `kubectl dispatch workload`: one Workload's path, conditions, checks, the gate of its
//! ClusterQueue when dispatch's check is among them, its place in the queue, and where it is
//! stuck.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::Style;
use super::table;
use k8s_openapi::jiff::SignedDuration;

use crate::core::duration::human;
use crate::core::kueue::Condition;
use crate::core::workload::{CheckView, Explanation, PodSetUpdate, Position, QueueSource};
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::workload::{WorkloadRun, position_note};
use crate::text::sanitize::{cell, escape};

use super::gate::Lines;

pub const CONDITION_HEADERS: &[&str] = &["type", "status", "reason", "since", "message"];
pub const CHECK_HEADERS: &[&str] = &["check", "controller", "state", "since", "message"];
pub const CHECK_WIDE_HEADERS: &[&str] =
    &["check", "controller", "state", "since", "retries", "requeue after", "message"];
const MESSAGE_WIDTH: usize = 60;

/// Renders to `out`; with `--no-headers` only one table's rows go there, the Workload's
/// admission checks, and every other line (the titles, the queue path, the conditions, the
/// gate's chain, the closing sentence) goes to `err`.
pub fn render<'a>(
    run: &WorkloadRun,
    output: Output,
    style: Style,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        // `workload` has no -o prometheus (cli::ReportFormat).
        Format::Table | Format::Wide | Format::Prometheus => {
            let notes = output.no_headers.then_some(err);
            text(run, output, style, &mut Lines { out, notes })
        }
    }
}

fn text(run: &WorkloadRun, output: Output, style: Style, lines: &mut Lines<'_>) -> io::Result<()> {
    let e = &run.explanation;
    let wide = output.format == Format::Wide;
    writeln!(
        lines.note(),
        "Workload {}/{}{}",
        escape(&e.namespace),
        escape(&e.name),
        if e.active { "" } else { " (spec.active: false)" }
    )?;
    writeln!(lines.note(), "{}", path(e))?;
    if let Some(placement) = multi_kueue(e) {
        writeln!(lines.note(), "{placement}")?;
    }

    let conditions = ordered(&e.conditions);
    if !conditions.is_empty() {
        writeln!(lines.note())?;
        let rows: Vec<Vec<String>> = conditions.iter().map(|(t, c)| condition_row(t, c, run, wide)).collect();
        // With --no-headers stdout keeps one table, the admission checks; the conditions go
        // with the notes.
        table::write(lines.note(), CONDITION_HEADERS, &rows, output.no_headers)?;
    }

    if e.checks.is_empty() {
        writeln!(lines.note())?;
        writeln!(lines.note(), "No admission checks.")?;
    } else {
        writeln!(lines.note())?;
        let headers = if wide { CHECK_WIDE_HEADERS } else { CHECK_HEADERS };
        let rows: Vec<Vec<String>> = e.checks.iter().map(|c| check_row(c, wide, style)).collect();
        table::write(lines.out, headers, &rows, output.no_headers)?;
        for c in &e.checks {
            for line in extras(c, wide) {
                writeln!(lines.note(), "{line}")?;
            }
        }
    }

    if let Some(chain) = &e.gate {
        writeln!(lines.note())?;
        let lease = e.lease.as_ref().map(|l| l.lease.to_string()).unwrap_or_default();
        // Wide: the Lease check also says what became of the holder's pod, as gate's does.
        let mut shown = chain.clone();
        if wide && let Some(assessed) = &e.lease {
            for check in &mut shown.checks {
                check.detail = crate::report::with_holder_pod(check, assessed);
            }
        }
        super::gate::chain_lines(&shown, &lease, output, style, super::gate::ChainRows::WithNotes, lines)?;
    }

    match &e.position {
        Position::Found { cluster_queue, local_queue } => {
            writeln!(lines.note())?;
            writeln!(
                lines.note(),
                "Position: {cluster_queue} in ClusterQueue {}, {local_queue} in LocalQueue {} (Kueue's visibility API, counted from 0)",
                e.cluster_queue.as_deref().map(escape).unwrap_or_default(),
                e.local_queue.as_deref().map(escape).unwrap_or_default()
            )?;
        }
        other => {
            if let Some(note) = position_note(other) {
                writeln!(lines.note())?;
                writeln!(lines.note(), "note: {}", escape(&note))?;
            }
        }
    }
    closing(e, wide, lines)
}

/// The end of the view: Kueue's own heartbeat as context (when no manager is shown to lead:
/// said while the Workload waits, whenever a manager is down, or in -o wide), the sentence,
/// and where to look when Kueue's queues hold it (`core::workload::next_commands`).
fn closing(e: &crate::core::workload::Explanation, wide: bool, lines: &mut Lines<'_>) -> io::Result<()> {
    let said = e.kueue_lease.as_ref().filter(|k| wide || crate::core::kueue_lease::is_down(k) || !e.stage.is_through());
    if let Some(note) = said.and_then(crate::core::kueue_lease::note) {
        writeln!(lines.note())?;
        writeln!(lines.note(), "{}", escape(&note))?;
    }
    writeln!(lines.note())?;
    writeln!(lines.note(), "Workload {}/{}: {}", escape(&e.namespace), escape(&e.name), escape(&e.summary))?;
    // Kueue's queues hold it: where to look.
    let next = crate::core::workload::next_commands(e);
    if !next.is_empty() {
        writeln!(lines.note(), "Next:")?;
        for command in next {
            writeln!(lines.note(), "  {}", escape(&command))?;
        }
    }
    Ok(())
}

/// `MultiKueue: nominated to worker-a, worker-b; admitted on worker-a`, when Kueue placed it.
fn multi_kueue(e: &Explanation) -> Option<String> {
    let nominated = (!e.nominated_cluster_names.is_empty()).then(|| {
        format!("nominated to {}", e.nominated_cluster_names.iter().map(|c| escape(c)).collect::<Vec<_>>().join(", "))
    });
    let admitted = e.cluster_name.as_deref().map(|c| format!("admitted on {}", escape(c)));
    let parts: Vec<String> = nominated.into_iter().chain(admitted).collect();
    (!parts.is_empty()).then(|| format!("MultiKueue: {}", parts.join("; ")))
}

/// `LocalQueue q -> ClusterQueue team-a`, and where the ClusterQueue came from.
fn path(e: &Explanation) -> String {
    let lq = match &e.local_queue {
        Some(lq) => format!("LocalQueue {}", escape(lq)),
        None => "no LocalQueue (spec.queueName is empty)".into(),
    };
    let cq = match (&e.cluster_queue, e.cluster_queue_from, &e.local_queue_forbidden) {
        (Some(cq), Some(QueueSource::Admission), _) => format!("ClusterQueue {} (its admission)", escape(cq)),
        (Some(cq), _, _) => format!("ClusterQueue {}", escape(cq)),
        (None, _, Some(rule)) => format!("ClusterQueue unknown (missing RBAC: {rule})"),
        (None, _, None) if e.local_queue.is_some() => "ClusterQueue unknown (the LocalQueue does not exist)".into(),
        (None, _, None) => return lq,
    };
    format!("{lq} -> {cq}")
}

/// QuotaReserved and Admitted first, as Kueue's path goes, then the rest by type.
fn ordered(conditions: &BTreeMap<String, Condition>) -> Vec<(&str, &Condition)> {
    let first = ["QuotaReserved", "Admitted"];
    let mut out: Vec<(&str, &Condition)> =
        first.iter().filter_map(|t| conditions.get_key_value(*t)).map(|(t, c)| (t.as_str(), c)).collect();
    out.extend(conditions.iter().filter(|(t, _)| !first.contains(&t.as_str())).map(|(t, c)| (t.as_str(), c)));
    out
}

fn message_cell(message: &str, wide: bool) -> String {
    if wide { escape(message) } else { cell(message, Some(MESSAGE_WIDTH)) }
}

fn condition_row(type_: &str, c: &Condition, run: &WorkloadRun, wide: bool) -> Vec<String> {
    vec![
        cell(type_, None),
        cell(&c.status, None),
        cell(c.reason.as_deref().unwrap_or(""), None),
        c.last_transition.map(|t| human(run.now.duration_since(t))).unwrap_or_default(),
        message_cell(c.message.as_deref().unwrap_or(""), wide),
    ]
}

fn check_row(c: &CheckView, wide: bool, style: Style) -> Vec<String> {
    let d = &c.detail;
    let controller = match (&c.controller, c.dispatch) {
        (Some(ctl), true) => format!("{} (dispatch)", cell(ctl, None)),
        (Some(ctl), false) => cell(ctl, None),
        (None, true) => "(dispatch)".into(),
        (None, false) => String::new(),
    };
    let state = style.check_state(&d.state, &cell(&d.state, None));
    let mut row = vec![cell(&d.name, None), controller, state, c.since.map(human).unwrap_or_default()];
    if wide {
        row.push(d.retry_count.map(|n| n.to_string()).unwrap_or_default());
        row.push(requeue(c).unwrap_or_default());
    }
    row.push(message_cell(&d.message, wide));
    row
}

/// `5m (in 4m)`: requeueAfterSeconds, as kubectl writes a duration, and when that falls.
fn requeue(c: &CheckView) -> Option<String> {
    let after = human(SignedDuration::from_secs(c.detail.requeue_after_seconds?.into()));
    Some(match c.requeue_in {
        Some(d) if d.is_positive() => format!("{after} (in {})", human(d)),
        Some(d) => format!("{after} ({} ago)", human(-d)),
        None => after,
    })
}

/// Lines under the checks table: Kueue's retryCount and requeueAfterSeconds (in the table when
/// wide), and each podSetUpdate.
fn extras(c: &CheckView, wide: bool) -> Vec<String> {
    let name = escape(&c.detail.name);
    let mut lines = Vec::new();
    if !wide {
        let mut parts = Vec::new();
        if let Some(n) = c.detail.retry_count {
            parts.push(format!("retryCount {n}"));
        }
        if let Some(r) = requeue(c) {
            parts.push(format!("requeueAfterSeconds {r}"));
        }
        if !parts.is_empty() {
            lines.push(format!("{name}: {}", parts.join(", ")));
        }
    }
    for u in &c.detail.pod_set_updates {
        lines.push(format!("{name}: podSetUpdate {}", update(u)));
    }
    lines
}

fn update(u: &PodSetUpdate) -> String {
    let map = |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
    let mut parts = Vec::new();
    for (what, m) in [("labels", &u.labels), ("annotations", &u.annotations), ("nodeSelector", &u.node_selector)] {
        if !m.is_empty() {
            parts.push(format!("{what} {}", map(m)));
        }
    }
    if !u.tolerations.is_empty() {
        parts.push(format!("tolerations {}", u.tolerations.join(",")));
    }
    if parts.is_empty() {
        parts.push("(no changes)".into());
    }
    escape(&format!("{}: {}", u.name, parts.join("; ")))
}

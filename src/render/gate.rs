//! `kubectl dispatch gate`: per ClusterQueue the chain of checks and the verdict, then the
//! Workloads waiting at dispatch's check.

use std::io::{self, Write};

use super::Style;
use super::sanitize::{cell, escape};
use super::table;
use crate::cli::Format;
use crate::core::duration::human;
use crate::core::gate::{Chain, CheckKind, Outcome};
use crate::core::verdict::Verdict;
use crate::core::waiting::Waiting;
use crate::report::GateRun;
use crate::settings::Output;

pub const CHAIN_HEADERS: &[&str] = &["#", "check", "result", "detail"];
pub const WAITING_HEADERS: &[&str] = &["namespace", "name", "clusterqueue", "check", "state", "since", "message"];
const MESSAGE_WIDTH: usize = 60;

/// Why Active=True passes but proves nothing on its own.
pub const ACTIVE_NOTE: &str = "note: Active alone proves nothing: nothing clears it when the controller stops, so only the Lease shows it is alive";

pub fn render(run: &GateRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        Format::Table | Format::Wide => text(run, output, style, out),
    }
}

fn text(run: &GateRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    let wide = output.format == Format::Wide;
    for (i, chain) in run.report.chains.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        // Wide: the Lease check also says what became of the holder's pod.
        let mut shown = chain.clone();
        if wide {
            for check in &mut shown.checks {
                check.detail = crate::report::with_holder_pod(check, &run.report.lease);
            }
        }
        chain_block(&shown, &run.report.lease.lease.to_string(), output.no_headers, style, out)?;
    }
    if let Some(waiting) = run.waiting.found()
        && !waiting.is_empty()
    {
        writeln!(out)?;
        let rows: Vec<Vec<String>> = waiting.iter().map(|w| waiting_row(w, run, wide)).collect();
        table::write(out, WAITING_HEADERS, &rows, output.no_headers)?;
    }
    if let Some(summary) = run.stall_summary() {
        writeln!(out, "{summary}")?;
    }
    Ok(())
}

pub fn chain_block(chain: &Chain, lease: &str, no_headers: bool, style: Style, out: &mut dyn Write) -> io::Result<()> {
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
        out,
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
    table::write(out, CHAIN_HEADERS, &rows, no_headers)?;
    if chain.checks.iter().any(|c| c.kind == CheckKind::Active && c.outcome == Outcome::Pass) {
        writeln!(out, "{ACTIVE_NOTE}")?;
    }
    writeln!(out, "{}", verdict_line(chain, style))
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

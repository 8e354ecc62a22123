//! `kubectl dispatch workloads`: one row per Workload, as `kubectl get workloads` lists them
//! (NAMESPACE with -A, NAME, QUEUE, RESERVED IN, ADMITTED), then EXPLANATION: the closing
//! sentence `workload NAME` ends with, cut in the table and whole in wide.

use std::io::{self, Write};

use super::Style;
use super::table;
use crate::core::verdict::Verdict;
use crate::core::workload::Explanation;
use crate::invocation::{Format, Output};
use crate::report::workloads::{WorkloadItemDoc, WorkloadsRun, item_doc};
use crate::text::sanitize::{cell, escape};

const HEADERS: &[&str] = &["name", "queue", "reserved in", "admitted", "explanation"];
const WIDE_HEADERS: &[&str] =
    &["name", "queue", "reserved in", "admitted", "finished", "clusterqueue", "gate", "stage", "explanation"];
/// The table's explanation, cut with `...` past this many characters (wide shows it whole).
const EXPLANATION_WIDTH: usize = 100;

/// Renders to `out`: the document, or the table (nothing at all when no Workload is listed:
/// the command says so on stderr, as kubectl says `No resources found`).
/// `style` colours wide's GATE (`--color`: `yes` green, `no` red, `unknown` yellow).
pub fn render(run: &WorkloadsRun, output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        // `workloads` has no -o prometheus (cli::ReportFormat).
        Format::Table | Format::Wide | Format::Prometheus => {
            let every = run.namespace.is_none();
            let rows = Rows { every, headers: true, no_headers: output.no_headers };
            table_rows(&run.explanations, rows, output, style, out)
        }
    }
}

/// Which rows [`table_rows`] writes: with NAMESPACE (-A); with the header line (the first
/// batch of a list streamed) or not (a later batch, still aligned with it); `--no-headers`.
#[derive(Clone, Copy)]
pub struct Rows {
    pub every: bool,
    pub headers: bool,
    pub no_headers: bool,
}

/// The table's rows of `explanations` (nothing when there are none), aligned among
/// themselves: a list streamed as it is read writes one such block per batch, as kubectl
/// writes one per chunk.
pub fn table_rows(
    explanations: &[Explanation],
    rows: Rows,
    output: Output,
    style: Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    if explanations.is_empty() {
        return Ok(());
    }
    let wide = output.format == Format::Wide;
    let mut headers: Vec<&str> = if wide { WIDE_HEADERS.to_vec() } else { HEADERS.to_vec() };
    if rows.every {
        headers.insert(0, "namespace");
    }
    let lines: Vec<Vec<String>> = explanations.iter().map(|e| row(&item_doc(e), wide, rows.every, style)).collect();
    if rows.headers || rows.no_headers {
        return table::write(out, &headers, &lines, rows.no_headers);
    }
    // A later batch: aligned with the header, as the first was, and written without it.
    let mut block = Vec::new();
    table::write(&mut block, &headers, &lines, false)?;
    let start = block.iter().position(|&b| b == b'\n').map_or(block.len(), |i| i + 1);
    out.write_all(&block[start..])
}

fn row(item: &WorkloadItemDoc, wide: bool, every: bool, style: Style) -> Vec<String> {
    let text = |v: &Option<String>| v.as_deref().map(|s| cell(s, None)).unwrap_or_default();
    let mut row = Vec::with_capacity(10);
    if every {
        row.push(cell(&item.namespace, None));
    }
    row.extend([cell(&item.name, None), text(&item.local_queue), text(&item.reserved_in), text(&item.admitted)]);
    if wide {
        row.extend([
            text(&item.finished),
            text(&item.cluster_queue),
            item.gate.map(|g| style.paint(g, gate_verdict(g))).unwrap_or_default(),
            item.stage.to_string(),
            escape(&item.summary),
        ]);
    } else {
        row.push(cell(&item.summary, Some(EXPLANATION_WIDTH)));
    }
    row
}

/// GATE's word as the verdict it names.
fn gate_verdict(word: &str) -> Verdict {
    match word {
        "yes" => Verdict::Yes,
        "no" => Verdict::No,
        _ => Verdict::Unknown,
    }
}

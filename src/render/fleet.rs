//! The fleet view: one row per context and ClusterQueue; `-o json|yaml` gives every report.

use std::io::{self, Write};

use super::Style;
use super::table;
use crate::core::verdict::Verdict;
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::fleet::{ContextResult, FleetDocument};
use crate::text::sanitize::{cell, escape};

pub const HEADERS: &[&str] = &["context", "clusterqueue", "verdict", "reason", "waiting"];

pub fn render(results: &[ContextResult], output: Output, style: Style, out: &mut dyn Write) -> io::Result<()> {
    match output.format {
        Format::Json | Format::Yaml => {
            let doc = FleetDocument::of(results);
            if output.format == Format::Json {
                super::structured::json(out, &doc)
            } else {
                super::structured::yaml(out, &doc)
            }
        }
        Format::Prometheus => {
            let contexts: Vec<super::prometheus::Context> = results
                .iter()
                .map(|r| super::prometheus::Context {
                    name: &r.context,
                    outcome: r.outcome.as_ref().map_err(String::as_str),
                })
                .collect();
            super::prometheus::render(&contexts, out)
        }
        Format::Table | Format::Wide => {
            let max = (output.format == Format::Table).then_some(80);
            let rows: Vec<Vec<String>> = results.iter().flat_map(|r| rows(r, max, style)).collect();
            table::write(out, HEADERS, &rows, output.no_headers)
        }
    }
}

/// What goes to stderr beside the output: each context's warnings (clock skew, a Lease renewed
/// in the future, Workloads that may not be listed, Kueue's version fallback), as `gate` prints
/// its own, prefixed by the context (`Warning: context prod: ...`); and with `-o prometheus`,
/// which has no row to carry it, why a context could not be judged (`error: context edge: ...`).
pub fn notes(results: &[ContextResult], output: Output, err: &mut dyn Write) -> io::Result<()> {
    for r in results {
        let context = cell(&r.context, None);
        match &r.outcome {
            Ok(run) => {
                for w in &run.warnings {
                    writeln!(err, "Warning: context {context}: {}", escape(w))?;
                }
            }
            Err(e) if output.format == Format::Prometheus => {
                writeln!(err, "error: context {context}: {}", escape(&e.to_string()))?
            }
            Err(_) => {}
        }
    }
    // A count for one namespace must not read as the cluster's.
    let scoped: Vec<&str> =
        results.iter().filter_map(|r| r.outcome.as_ref().ok().and_then(|run| run.namespace.as_deref())).collect();
    if matches!(output.format, Format::Table | Format::Wide) && !scoped.is_empty() {
        let mut namespaces = scoped.clone();
        namespaces.sort_unstable();
        namespaces.dedup();
        let ns = namespaces.iter().map(|n| cell(n, None)).collect::<Vec<_>>().join(", ");
        writeln!(err, "WAITING counts namespace {ns} only; use -A to count every namespace")?;
    }
    Ok(())
}

/// VERDICT is coloured (`--color`): `yes` green, `no` and `error` red, `unknown` yellow.
fn rows(r: &ContextResult, max: Option<usize>, style: Style) -> Vec<Vec<String>> {
    let context = cell(&r.context, None);
    match &r.outcome {
        Err(e) => vec![vec![context, String::new(), style.paint("error", Verdict::No), cell(e, max), String::new()]],
        Ok(run) => run
            .report
            .chains
            .iter()
            .map(|chain| {
                let waiting = run
                    .waiting
                    .found()
                    .map(|ws| {
                        ws.iter()
                            .filter(|w| w.is_stalled() && w.cluster_queue == chain.cluster_queue)
                            .count()
                            .to_string()
                    })
                    .unwrap_or_else(|| "?".into());
                vec![
                    context.clone(),
                    cell(chain.cluster_queue.as_deref().unwrap_or(""), None),
                    style.paint(chain.verdict.as_str(), chain.verdict),
                    cell(chain.reason.as_deref().unwrap_or(""), max),
                    waiting,
                ]
            })
            .collect(),
    }
}

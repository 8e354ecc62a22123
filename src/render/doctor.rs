//! `kubectl dispatch doctor`: the checklist as a table, and its documented JSON/YAML schema
//! (`kind: DoctorReport`, schema `kubectl-dispatch/v1`: add fields, never rename or remove).

use std::io::{self, Write};

use super::Style;
use super::table;
use crate::core::doctor::{DoctorReport, Finding, Level};
use crate::core::verdict::Verdict;
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::doctor::DoctorRun;
use crate::text::sanitize::cell;

pub const HEADERS: &[&str] = &["area", "check", "result", "detail"];

/// Renders the checklist to `out`. The closing lines (the summary, and the RBAC to apply) go
/// to `out` too, except with `--no-headers`, where only table rows are printed to `out` and
/// they go to `err`.
pub fn render(
    run: &DoctorRun,
    output: Output,
    style: Style,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    match output.format {
        Format::Json => super::structured::json(out, &run.document()),
        Format::Yaml => super::structured::yaml(out, &run.document()),
        // `doctor` has no -o prometheus (cli::ReportFormat).
        Format::Table | Format::Wide | Format::Prometheus => {
            let rows: Vec<Vec<String>> = run.report.findings.iter().map(|f| row(f, style)).collect();
            table::write(out, HEADERS, &rows, output.no_headers)?;
            let closing: &mut dyn Write = if output.no_headers { err } else { out };
            writeln!(closing, "{}", summary(&run.report, style))?;
            if let Some(plan) = &run.report.rbac {
                let what = match run.report.overall {
                    Level::Ok | Level::Warning => "the reads the warnings name (optional)",
                    _ => "what is missing",
                };
                writeln!(
                    closing,
                    "\nTo grant {what}, an admin applies this (kubectl dispatch doctor --rbac | kubectl apply -f -):\n"
                )?;
                closing.write_all(crate::report::rbac::manifest(plan).as_bytes())?;
            }
            Ok(())
        }
    }
}

fn row(f: &Finding, style: Style) -> Vec<String> {
    let verdict = match f.level {
        Level::Ok => Verdict::Yes,
        Level::Fail => Verdict::No,
        Level::Warning | Level::Unknown => Verdict::Unknown,
    };
    vec![f.area.to_string(), cell(&f.check, None), style.paint(f.level.label(), verdict), cell(&f.detail, None)]
}

/// `Doctor: all well ...`, or how many findings would stop the gate or the plugin, or cannot
/// be told.
pub fn summary(report: &DoctorReport, style: Style) -> String {
    let count = |level: Level| report.findings.iter().filter(|f| f.level == level).count();
    let plural = |n: usize, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
    let warnings = match count(Level::Warning) {
        0 => String::new(),
        n => format!(" ({})", plural(n, "warning", "warnings")),
    };
    let overall = match report.overall {
        Level::Ok if count(Level::Warning) > 0 => Level::Warning,
        other => other,
    };
    match overall {
        Level::Ok => {
            format!("Doctor: {}: the plugin and the adapter have what they need", style.paint("all well", Verdict::Yes))
        }
        Level::Warning => format!(
            "Doctor: {}: nothing stops the gate or the plugin{warnings}",
            style.paint("ok with warnings", Verdict::Unknown)
        ),
        Level::Fail => format!(
            "Doctor: {}: {} the gate or the plugin{warnings}",
            style.paint("fail", Verdict::No),
            plural(count(Level::Fail), "finding would stop", "findings would stop")
        ),
        Level::Unknown => format!(
            "Doctor: {}: {} not be made{warnings}",
            style.paint("cannot tell", Verdict::Unknown),
            plural(count(Level::Unknown), "check could", "checks could")
        ),
    }
}

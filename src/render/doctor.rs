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
use crate::text::width::{columns, cut};

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
            let wide = output.format == Format::Wide;
            let mut rows: Vec<Vec<String>> = run.report.findings.iter().map(|f| row(f, style, wide)).collect();
            let whole: Vec<(String, String)> = rows.iter().map(|r| (r[1].clone(), r[3].clone())).collect();
            if !wide {
                fit(&mut rows);
            }
            table::write(out, HEADERS, &rows, output.no_headers)?;
            let closing: &mut dyn Write = if output.no_headers { err } else { out };
            write_cut_findings(closing, &run.report, &rows, &whole)?;
            writeln!(closing, "{}", summary(&run.report, style))?;
            if let Some(plan) = &run.report.rbac {
                let what = match run.report.overall {
                    Level::Ok | Level::Warning => "the reads the warnings name (optional)",
                    _ => "what is missing",
                };
                let command =
                    run.report.grant.as_deref().unwrap_or("kubectl dispatch doctor --rbac | kubectl apply -f -");
                writeln!(
                    closing,
                    "\nTo grant {what}, an admin applies this\n({}):\n",
                    crate::text::sanitize::escape(command)
                )?;
                closing.write_all(crate::report::rbac::manifest(plan).as_bytes())?;
            }
            Ok(())
        }
    }
}

/// The widest line of the default table: a 120-column terminal holds it (`-o wide` does not
/// cut).
pub const FIT: usize = 120;

/// The fewest columns DETAIL keeps in the default table before CHECK is cut for it.
const MIN_DETAIL: usize = 30;

/// One finding's row. The default table says the check in fewer words when it has them
/// (a read as `kubectl get` names it); `-o wide` (and JSON) say it whole.
fn row(f: &Finding, style: Style, wide: bool) -> Vec<String> {
    let verdict = match f.level {
        Level::Ok => Verdict::Yes,
        Level::Fail => Verdict::No,
        Level::Warning | Level::Unknown => Verdict::Unknown,
    };
    let check = f.short.as_deref().filter(|_| !wide).unwrap_or(&f.check);
    vec![f.area.to_string(), cell(check, None), style.paint(f.level.label(), verdict), cell(&f.detail, None)]
}

/// Cuts the default table to [`FIT`] columns, as the tab writer will lay it out: CHECK to what
/// leaves DETAIL [`MIN_DETAIL`], then DETAIL to what is left (`...` where cut; `-o wide` shows
/// both whole).
fn fit(rows: &mut [Vec<String>]) {
    let width = |rows: &[Vec<String>], i: usize| {
        let widest = rows.iter().map(|r| columns(&r[i])).chain([HEADERS[i].len()]).max().unwrap_or(0);
        (widest + 3).max(6)
    };
    let (area, result) = (width(rows, 0), width(rows, 2));
    let check_room = FIT.saturating_sub(area + result + MIN_DETAIL + 3);
    for r in rows.iter_mut() {
        r[1] = cut(&r[1], check_room);
    }
    let detail_room = FIT.saturating_sub(area + width(rows, 1) + result);
    for r in rows.iter_mut() {
        r[3] = cut(&r[3], detail_room);
    }
}

/// Under the default table, each finding that is not ok and whose detail the table cut, whole
/// and after its check:
/// the finding is what the operator acts on (wrapped to [`FIT`] columns; `-o wide` cuts none).
fn write_cut_findings(
    out: &mut dyn Write,
    report: &DoctorReport,
    rows: &[Vec<String>],
    whole: &[(String, String)],
) -> io::Result<()> {
    let cut: Vec<String> = report
        .findings
        .iter()
        .zip(rows.iter().zip(whole))
        .filter(|(f, (row, (_, detail)))| f.level != Level::Ok && &row[3] != detail)
        .map(|(_, (_, (check, detail)))| format!("{check}: {detail}"))
        .collect();
    if cut.is_empty() {
        return Ok(());
    }
    writeln!(out, "Findings in full:")?;
    for finding in cut {
        for line in wrap(&finding, FIT, "  ", "    ") {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// `text` in lines of at most `width` columns, broken at spaces (a word longer than a line
/// keeps a line of its own), the first line after `first`, the others after `rest`.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = vec![first.to_string()];
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let line = lines.last_mut().expect("one line at least");
        if !empty && columns(line) + 1 + columns(word) > width {
            lines.push(format!("{rest}{word}"));
        } else {
            if !empty {
                line.push(' ');
            }
            line.push_str(word);
        }
        empty = false;
    }
    lines
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
            "Doctor: {}: nothing stops the gate or the plugin{}{warnings}",
            style.paint("ok with warnings", Verdict::Unknown),
            kueue_stopped(report)
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

/// `, but Kueue admits nothing on ClusterQueue team-a`: Kueue's own blocker, which the gate's
/// verdict does not count, said where the summary says nothing stops the gate.
fn kueue_stopped(report: &DoctorReport) -> String {
    let queues: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.level != Level::Ok)
        .filter_map(|f| f.check.strip_prefix("Kueue admits on ClusterQueue "))
        .collect();
    match queues.as_slice() {
        [] => String::new(),
        [one] => format!(", but Kueue admits nothing on ClusterQueue {one}"),
        many => format!(", but Kueue admits nothing on ClusterQueues {}", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_wrapped_at_spaces_within_the_width() {
        let lines =
            wrap("lease: the admission controller's Lease was last renewed 110s ago, beyond 30s", 30, "  ", "    ");
        assert_eq!(
            lines,
            ["  lease: the admission", "    controller's Lease was", "    last renewed 110s ago,", "    beyond 30s"]
        );
        assert!(lines.iter().all(|l| columns(l) <= 30));
        assert_eq!(wrap("a-very-long-word-alone", 5, "  ", "    "), ["  a-very-long-word-alone"]);
    }
}

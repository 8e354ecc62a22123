//! `kubectl dispatch doctor`: the checklist as a table, and its documented JSON/YAML schema
//! (`kind: DoctorReport`, schema `kubectl-dispatch/v1`: add fields, never rename or remove).

use std::io::{self, Write};

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::Style;
use super::table;
use crate::core::doctor::{Answer, DoctorReport, Finding, Level};
use crate::core::verdict::Verdict;
use crate::invocation::Format;
use crate::invocation::Output;
use crate::report::SCHEMA;
use crate::text::sanitize::cell;

pub const HEADERS: &[&str] = &["area", "check", "result", "detail"];

/// One `doctor` run.
#[derive(Debug, Clone)]
pub struct DoctorRun {
    pub report: DoctorReport,
    pub context: Option<String>,
    pub now: Timestamp,
}

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
            if let Some(yaml) = &run.report.rbac {
                writeln!(
                    closing,
                    "\nTo grant what is missing, an admin applies this (kubectl dispatch doctor --rbac | kubectl apply -f -):\n"
                )?;
                closing.write_all(yaml.as_bytes())?;
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
    match report.overall {
        Level::Ok | Level::Warning => format!(
            "Doctor: {}: the plugin and the adapter have what they need{warnings}",
            style.paint("all well", Verdict::Yes)
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

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    pub context: Option<String>,
    /// ok, fail (something would stop the gate or the plugin) or unknown (cannot tell).
    pub result: &'static str,
    /// From a SelfSubjectReview; `null` when the caller may not make one.
    pub identity: Option<IdentityDoc>,
    pub findings: Vec<FindingDoc>,
    /// The reads denied, as rules.
    pub missing_rbac: Vec<String>,
    /// RBAC objects granting what is missing, as YAML for `kubectl apply -f -`; `null` when
    /// nothing is.
    pub rbac: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct IdentityDoc {
    pub username: String,
    pub groups: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingDoc {
    /// identity, access, kueue, namespace, lease, holder pod.
    pub area: &'static str,
    pub check: String,
    /// ok, warning, fail or unknown.
    pub result: &'static str,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessDoc>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessDoc {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub needed_by: &'static str,
    /// Without it the gate or the plugin stops (else only a note is lost).
    pub required: bool,
    /// allowed, denied, or unanswered (the review itself could not be made).
    pub answer: &'static str,
    pub reason: Option<String>,
}

fn finding_doc(f: &Finding) -> FindingDoc {
    FindingDoc {
        area: f.area,
        check: f.check.clone(),
        result: f.level.label(),
        detail: f.detail.clone(),
        access: f.access.as_ref().map(|(a, answer)| {
            let (word, reason) = match answer {
                Answer::Allowed => ("allowed", None),
                Answer::Denied(r) => ("denied", r.clone()),
                Answer::Unanswered(r) => ("unanswered", Some(r.clone())),
            };
            AccessDoc {
                verb: a.verb,
                group: a.group,
                resource: a.resource,
                namespace: a.namespace.clone(),
                name: a.name.clone(),
                needed_by: a.needed_by,
                required: a.required,
                answer: word,
                reason,
            }
        }),
    }
}

impl DoctorRun {
    pub fn document(&self) -> DoctorDocument {
        let r = &self.report;
        DoctorDocument {
            schema: SCHEMA,
            kind: "DoctorReport",
            evaluated_at: self.now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            context: self.context.clone(),
            result: match r.overall {
                Level::Ok | Level::Warning => "ok",
                Level::Fail => "fail",
                Level::Unknown => "unknown",
            },
            identity: r
                .identity
                .as_ref()
                .map(|i| IdentityDoc { username: i.username.clone(), groups: i.groups.clone() }),
            findings: r.findings.iter().map(finding_doc).collect(),
            missing_rbac: r.missing.iter().map(|a| a.rule()).collect(),
            rbac: r.rbac.clone(),
        }
    }
}

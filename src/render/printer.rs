//! kubectl's template printers over the `-o json` documents: `-o name`, `-o jsonpath=` and
//! `-o jsonpath-file=`, `-o custom-columns=` and `-o custom-columns-file=`. The value of `-o`
//! is split here (for clap), the template is parsed when the settings are resolved (so a bad
//! one is a usage error before anything connects), and each document is printed whole or not
//! at all.

use std::cell::RefCell;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::columns::{Columns, align};
use super::jsonpath::Template;
use crate::cli::Format;

/// The value of `-o`: one of the plain formats, or a printer and its argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChoice {
    pub format: Format,
    pub printer: Option<(PrinterKind, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrinterKind {
    Name,
    JsonPath,
    JsonPathFile,
    CustomColumns,
    CustomColumnsFile,
}

const PRINTERS: &str = "name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE";

fn choice(s: &str, formats: &[(&str, Format)]) -> Result<OutputChoice, String> {
    if let Some((_, f)) = formats.iter().find(|(n, _)| *n == s) {
        return Ok(OutputChoice { format: *f, printer: None });
    }
    let (name, arg) = s.split_once('=').unwrap_or((s, ""));
    let kind = match name {
        "name" if !s.contains('=') => PrinterKind::Name,
        "jsonpath" => PrinterKind::JsonPath,
        "jsonpath-file" => PrinterKind::JsonPathFile,
        "custom-columns" => PrinterKind::CustomColumns,
        "custom-columns-file" => PrinterKind::CustomColumnsFile,
        "go-template" | "go-template-file" | "template" | "templatefile" => {
            return Err("go-template is not supported: use jsonpath=TEMPLATE, or -o json and jq".into());
        }
        _ => {
            let plain: Vec<&str> = formats.iter().map(|(n, _)| *n).collect();
            return Err(format!("possible values: {}, {PRINTERS}", plain.join(", ")));
        }
    };
    if kind != PrinterKind::Name && !s.contains('=') {
        return Err(format!("{name} needs a value: -o {name}=..."));
    }
    Ok(OutputChoice { format: Format::Json, printer: Some((kind, arg.to_string())) })
}

const GATE_FORMATS: &[(&str, Format)] = &[
    ("table", Format::Table),
    ("wide", Format::Wide),
    ("json", Format::Json),
    ("yaml", Format::Yaml),
    ("prometheus", Format::Prometheus),
];

const REPORT_FORMATS: &[(&str, Format)] =
    &[("table", Format::Table), ("wide", Format::Wide), ("json", Format::Json), ("yaml", Format::Yaml)];

/// clap's parser of `-o`: gate's formats (with prometheus), or those of lease, workload and
/// doctor. Its possible values (for completion) are the formats and the printers' prefixes.
#[derive(Debug, Clone, Copy)]
pub struct OutputParser {
    pub gate: bool,
}

impl OutputParser {
    fn formats(self) -> &'static [(&'static str, Format)] {
        if self.gate { GATE_FORMATS } else { REPORT_FORMATS }
    }
}

impl clap::builder::TypedValueParser for OutputParser {
    type Value = OutputChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<OutputChoice, clap::Error> {
        let text = value.to_str().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))?;
        choice(text, self.formats()).map_err(|why| {
            let name = arg.map(|a| a.to_string()).unwrap_or_else(|| "--output".into());
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value '{text}' for '{name}': {why}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let printers = ["name", "jsonpath=", "jsonpath-file=", "custom-columns=", "custom-columns-file="];
        let all: Vec<&'static str> = self.formats().iter().map(|(n, _)| *n).chain(printers).collect();
        Some(Box::new(all.into_iter().map(clap::builder::PossibleValue::new)))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Name,
    JsonPath(Template),
    Columns(Columns),
}

/// A resolved printer. It keeps what a stream of documents shares: whether the header is out,
/// and the column widths so far.
#[derive(Debug, Clone)]
pub struct Printer {
    kind: Kind,
    allow_missing: bool,
    no_headers: bool,
    state: RefCell<(bool, Vec<usize>)>,
}

impl Printer {
    /// Parses the template (reading its file); the error is the one line kubectl prints.
    pub fn new(kind: PrinterKind, arg: &str, allow_missing: bool, no_headers: bool) -> Result<Printer, String> {
        let read =
            |path: &str| std::fs::read_to_string(path).map_err(|e| format!("error reading template {path}, {e}"));
        let kind = match kind {
            PrinterKind::Name => Kind::Name,
            PrinterKind::JsonPath | PrinterKind::JsonPathFile => {
                let text = if kind == PrinterKind::JsonPath { arg.to_string() } else { read(arg)? };
                let t = Template::parse(&text).map_err(|e| format!("error parsing jsonpath {text}, {e}"))?;
                Kind::JsonPath(t)
            }
            PrinterKind::CustomColumns => Kind::Columns(Columns::from_spec(arg)?),
            PrinterKind::CustomColumnsFile => Kind::Columns(Columns::from_template(&read(arg)?)?),
        };
        Ok(Printer { kind, allow_missing, no_headers, state: RefCell::new((false, Vec::new())) })
    }

    /// Prints one document; on an error nothing is written.
    pub fn print<T: Serialize>(&self, doc: &T, out: &mut dyn Write) -> Result<(), crate::error::Error> {
        let doc = serde_json::to_value(doc).map_err(io::Error::other)?;
        let text = self.text(&doc).map_err(crate::error::Error::Usage)?;
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    fn text(&self, doc: &Value) -> Result<String, String> {
        match &self.kind {
            Kind::Name => Ok(names(doc).into_iter().map(|n| n + "\n").collect()),
            Kind::JsonPath(t) => {
                t.execute(doc, self.allow_missing).map_err(|e| format!("error executing jsonpath {:?}: {e}", t.raw))
            }
            Kind::Columns(c) => {
                let row = c.row(doc)?;
                let mut state = self.state.borrow_mut();
                let mut lines = Vec::new();
                if !self.no_headers && !state.0 {
                    lines.push(c.headers());
                    state.0 = true;
                }
                lines.push(row);
                Ok(align(&lines, &mut state.1))
            }
        }
    }
}

/// `-o name`: the Kubernetes objects a document shows, as `kubectl get -o name` names them:
/// gate its waiting Workloads, lease its Lease, workload its Workload.
fn names(doc: &Value) -> Vec<String> {
    let s = |v: &Value| v.as_str().map(str::to_string);
    match doc.get("kind").and_then(Value::as_str) {
        Some("GateReport") => doc
            .get("waiting")
            .and_then(Value::as_array)
            .map(|ws| {
                ws.iter()
                    .filter_map(|w| w.get("name").and_then(s))
                    .map(|n| format!("workload.kueue.x-k8s.io/{n}"))
                    .collect()
            })
            .unwrap_or_default(),
        // `lease --watch`: the Lease once a change, as `kubectl get -w -o name` names each event's.
        Some("LeaseReport" | "LeaseChange") => doc
            .pointer("/lease/name")
            .and_then(s)
            .map(|n| format!("lease.coordination.k8s.io/{n}"))
            .into_iter()
            .collect(),
        Some("WorkloadReport") => {
            doc.get("name").and_then(s).map(|n| format!("workload.kueue.x-k8s.io/{n}")).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kubectls_resource_slash_name() {
        let gate = serde_json::json!({"kind": "GateReport", "waiting": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(names(&gate), ["workload.kueue.x-k8s.io/a", "workload.kueue.x-k8s.io/b"]);
        let change = serde_json::json!({"kind": "LeaseChange", "lease": {"name": "l"}});
        assert_eq!(names(&change), ["lease.coordination.k8s.io/l"]);
        let wl = serde_json::json!({"kind": "WorkloadReport", "name": "w"});
        assert_eq!(names(&wl), ["workload.kueue.x-k8s.io/w"]);
    }

    #[test]
    fn output_values() {
        let gate = |s: &str| choice(s, GATE_FORMATS);
        assert_eq!(gate("json").unwrap(), OutputChoice { format: Format::Json, printer: None });
        let jp = gate("jsonpath={.a=b}").unwrap();
        assert_eq!(jp.printer, Some((PrinterKind::JsonPath, "{.a=b}".to_string())));
        assert!(choice("prometheus", REPORT_FORMATS).is_err());
        assert!(gate("jsonpath").is_err());
        assert!(gate("name=x").is_err());
        assert!(gate("go-template={{.}}").unwrap_err().contains("not supported"));
    }
}

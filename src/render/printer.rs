//! kubectl's template printers over the `-o json` documents: `-o name`, `-o jsonpath=` and
//! `-o jsonpath-file=`, `-o custom-columns=` and `-o custom-columns-file=`. `cli/` splits the
//! value of `-o` and reads a template's file into a [`PrinterSpec`]; the template is parsed
//! here when the settings are resolved (so a bad one is a usage error before anything
//! connects), and each document is printed whole or not at all.
//!
//! What reaches the terminal: `-o name` and every custom-columns cell go through the one
//! sanitizer ([`crate::text::sanitize::escape`]), as the tables do; `-o jsonpath` prints the
//! document's values byte for byte, as kubectl's JSONPath printer does (it is the scripts'
//! format: a value is data, not a line for a person).

use std::cell::RefCell;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::columns::CustomColumns;
use super::jsonpath::Template;
use super::tabwriter::align;
use crate::invocation::{PrinterKind, PrinterSpec};
use crate::text::sanitize::escape;

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Name,
    JsonPath(Template),
    Columns(CustomColumns),
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
    /// Parses the template (a `-file=` form's text, read by `cli/`); the error is the one line
    /// kubectl prints.
    pub fn new(spec: &PrinterSpec) -> Result<Printer, String> {
        let text = spec.template.as_str();
        let kind = match spec.kind {
            PrinterKind::Name => Kind::Name,
            PrinterKind::JsonPath | PrinterKind::JsonPathFile => {
                let t = Template::parse(text).map_err(|e| format!("error parsing jsonpath {text}, {e}"))?;
                Kind::JsonPath(t)
            }
            PrinterKind::CustomColumns => Kind::Columns(CustomColumns::from_spec(text)?),
            PrinterKind::CustomColumnsFile => Kind::Columns(CustomColumns::from_template(text)?),
        };
        Ok(Printer {
            kind,
            allow_missing: spec.allow_missing_keys,
            no_headers: spec.no_headers,
            state: RefCell::new((false, Vec::new())),
        })
    }

    /// Whether kubectl prints a row per object of a list (custom columns), where `-o name` and
    /// jsonpath read the list whole.
    pub fn row_per_object(&self) -> bool {
        matches!(self.kind, Kind::Columns(_))
    }

    /// Prints one document; on an error nothing is written.
    pub fn print<T: Serialize>(&self, doc: &T, out: &mut dyn Write) -> Result<(), crate::error::Error> {
        self.print_list(std::slice::from_ref(doc), out)
    }

    /// Prints the objects of a list as kubectl prints a list it read: custom columns a row
    /// each, every row (and the header) through one tab writer, so the rows align with each
    /// other whatever their widths; name and jsonpath each object in turn. On an error nothing
    /// is written.
    pub fn print_list<T: Serialize>(&self, docs: &[T], out: &mut dyn Write) -> Result<(), crate::error::Error> {
        let docs = docs.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>().map_err(io::Error::other)?;
        let text = self.text(&docs).map_err(crate::error::Error::Print)?;
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    fn text(&self, docs: &[Value]) -> Result<String, String> {
        match &self.kind {
            // A real API server names objects in DNS words; a hostile one is escaped.
            Kind::Name => Ok(docs.iter().flat_map(names).map(|n| escape(&n) + "\n").collect()),
            // kubectl's first line, without the dump of the template and the object after it.
            Kind::JsonPath(t) => docs
                .iter()
                .map(|doc| {
                    t.execute(doc, self.allow_missing)
                        .map_err(|e| format!("error executing jsonpath {:?}: Error executing template: {e}", t.raw))
                })
                .collect(),
            Kind::Columns(c) => {
                let rows = docs.iter().map(|doc| c.row(doc)).collect::<Result<Vec<_>, _>>()?;
                let mut state = self.state.borrow_mut();
                let mut lines = Vec::new();
                if !self.no_headers && !state.0 {
                    lines.push(c.headers());
                    state.0 = true;
                }
                lines.extend(rows);
                // A watch's later documents keep the widths its first ones set, as kubectl's.
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
        Some("WorkloadList") => doc
            .get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|w| w.get("name").and_then(s))
                    .map(|n| format!("workload.kueue.x-k8s.io/{n}"))
                    .collect()
            })
            .unwrap_or_default(),
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
        let list = serde_json::json!({"kind": "WorkloadList", "items": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(names(&list), ["workload.kueue.x-k8s.io/a", "workload.kueue.x-k8s.io/b"]);
    }

    #[test]
    fn a_name_reaches_the_terminal_escaped() {
        let spec = PrinterSpec {
            kind: PrinterKind::Name,
            template: String::new(),
            allow_missing_keys: true,
            no_headers: false,
        };
        let doc = serde_json::json!({"kind": "WorkloadReport", "name": "w\u{1b}[2J"});
        assert_eq!(Printer::new(&spec).unwrap().text(&[doc]).unwrap(), "workload.kueue.x-k8s.io/w\\u{1b}[2J\n");
    }
}

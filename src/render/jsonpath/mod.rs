//! kubectl's JSONPath template language, as client-go's `k8s.io/client-go/util/jsonpath`
//! parses and evaluates it (`-o jsonpath=`, and the expressions of `-o custom-columns=` and
//! `--sort-by`): `{}` actions between plain text, fields, `[*]`, slices, unions, filters
//! `?()`, `..`, `range`/`end`, quoted text. A port of that package, error messages word for
//! word, over a `serde_json::Value` read as kubectl reads an object from the server (integers
//! are int64, other numbers float64).
//!
//! Where client-go depends on Go's map order (`*` and `..` over an object), the keys are taken
//! in sorted order here: kubectl's order there is random from one run to the next.
//!
//! In parts: `parse.rs` (the template's syntax), `evaluate.rs` (what a template finds in a
//! document), `go_format.rs` (values printed as Go prints them) and `kubectl.rs` (what kubectl
//! adds around the package: relaxed paths and `--sort-by`'s order).

mod evaluate;
mod go_format;
mod kubectl;
mod parse;

use serde_json::Value;

use evaluate::{Exec, V, go_v, text};
use go_format::go_json;
use parse::Node;

pub use go_format::go_float_v;
pub use kubectl::{relaxed, sort_by, sort_order};

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub raw: String,
    nodes: Vec<Node>,
}

impl Template {
    /// Parses `text`; the error is client-go's message (`unterminated array`, ...).
    pub fn parse(text: &str) -> Result<Template, String> {
        Ok(Template { raw: text.to_string(), nodes: parse::parse(text)? })
    }

    /// The values each top-level node finds: what custom-columns and `--sort-by` read.
    pub fn find<'a>(&'a self, doc: &'a Value, allow_missing: bool) -> Result<Vec<Vec<Found<'a>>>, String> {
        Exec::new(&self.nodes, allow_missing)
            .find_results(V::Doc(doc), 0)
            .map(|lists| lists.into_iter().map(|l| l.into_iter().map(Found).collect()).collect())
    }

    /// Evaluates the template on `doc` as `kubectl get -o jsonpath=` prints it (no newline added).
    pub fn execute(&self, doc: &Value, allow_missing: bool) -> Result<String, String> {
        let lists = Exec::new(&self.nodes, allow_missing).find_results(V::Doc(doc), 0)?;
        let mut out = String::new();
        for list in &lists {
            for (i, v) in list.iter().enumerate() {
                match v {
                    V::Doc(d @ (Value::Object(_) | Value::Array(_))) => go_json(d, &mut out),
                    other => out.push_str(&text(other)),
                }
                if i != list.len() - 1 {
                    out.push(' ');
                }
            }
        }
        Ok(out)
    }
}

/// One value a template found, printed as Go's `%v` prints it (custom-columns' cells).
#[derive(Debug, Clone)]
pub struct Found<'a>(V<'a>);

impl Found<'_> {
    pub fn go_v(&self) -> String {
        let mut s = String::new();
        go_v(&self.0, &mut s);
        s
    }

    /// The JSON value found, if it is one of the document's (not a template's literal).
    pub fn value(&self) -> Option<Value> {
        match &self.0 {
            V::Doc(d) => Some((*d).clone()),
            V::Str(s) => Some(Value::String(s.clone())),
            V::Int(i) => Some(Value::from(*i)),
            V::Uint(u) => Some(Value::from(*u)),
            V::Float(f) => Some(Value::from(*f)),
            V::Bool(b) => Some(Value::Bool(*b)),
            V::Invalid => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &str, doc: &str) -> Result<String, String> {
        let doc: Value = serde_json::from_str(doc).unwrap();
        Template::parse(t)?.execute(&doc, false)
    }

    #[test]
    fn fields_ranges_filters_and_text() {
        let doc = r#"{"a":{"b":"x"},"items":[{"n":"p","v":1},{"n":"q","v":2}],"f":1.5}"#;
        assert_eq!(run("{.a.b}", doc).unwrap(), "x");
        assert_eq!(run("{.items[*].n}", doc).unwrap(), "p q");
        assert_eq!(run(r#"{range .items[*]}{.n}{"\n"}{end}"#, doc).unwrap(), "p\nq\n");
        assert_eq!(run("{.items[?(@.v>1)].n}", doc).unwrap(), "q");
        assert_eq!(run("{.items[-1:].n}", doc).unwrap(), "q");
        assert_eq!(run("{.a}", doc).unwrap(), r#"{"b":"x"}"#);
        assert_eq!(run("{.f}", doc).unwrap(), "1.5");
        assert_eq!(run("{.nope}", doc).unwrap_err(), "nope is not found");
        assert_eq!(Template::parse("{.a[").unwrap_err(), "unterminated array");
        assert_eq!(run("{end}", doc).unwrap_err(), "not in range, nothing to end");
    }

    /// Indexes at the ends of int64 (and a step past usize on any target) give kubectl's
    /// errors and slices, never an overflow: `[n]` once added 1 to n unchecked.
    #[test]
    fn indexes_at_the_ends_of_the_integers() {
        let doc = r#"{"a":[1,2,3]}"#;
        let max = i64::MAX;
        let min = i64::MIN;
        let out_of_bounds = |i: i64| format!("array index out of bounds: index {i}, length 3");
        assert_eq!(run(&format!("{{.a[{max}]}}"), doc).unwrap_err(), out_of_bounds(max));
        assert_eq!(run(&format!("{{.a[{min}]}}"), doc).unwrap_err(), out_of_bounds(min + 3));
        assert_eq!(run(&format!("{{.a[{min}:]}}"), doc).unwrap_err(), out_of_bounds(min + 3));
        assert_eq!(run(&format!("{{.a[0:{max}]}}"), doc).unwrap_err(), out_of_bounds(max - 1));
        assert_eq!(run(&format!("{{.a[{max}:{max}]}}"), doc).unwrap(), "");
        assert_eq!(run(&format!("{{.a[::{max}]}}"), doc).unwrap(), "1");
        assert_eq!(
            run(&format!("{{.a[::{}]}}", usize::MAX), doc).unwrap_err(),
            format!("array index {} is not a number", usize::MAX)
        );
        assert_eq!(
            run("{.a[9223372036854775808]}", doc).unwrap_err(),
            "array index 9223372036854775808 is not a number"
        );
    }
}

//! `-o custom-columns=SPEC` and `-o custom-columns-file=FILE`, as kubectl's
//! `CustomColumnsPrinter` prints them: a header row, then one row per document; each cell is
//! what the column's JSONPath finds (every value, comma-separated, `<none>` when nothing), the
//! columns aligned by kubectl's tab writer ([`super::tabwriter`], widths remembered from one
//! row to the next in a watch). A cell is terminal text: each value
//! goes through the one sanitizer ([`crate::text::sanitize::escape`]), as the tables' cells do,
//! where kubectl's `EscapeTerminal` rewrites only ESC and CR (so a newline or a tab inside a
//! value is `\n` or `\t` here, and does not break the table as it does in kubectl).

use serde_json::Value;

use super::jsonpath::{Template, relaxed};

#[derive(Debug, Clone, PartialEq)]
pub struct CustomColumns {
    pub columns: Vec<(String, Template)>,
}

impl CustomColumns {
    /// `NAME:.path,OTHER:.path` (kubectl's NewCustomColumnsPrinterFromSpec).
    pub fn from_spec(spec: &str) -> Result<CustomColumns, String> {
        if spec.is_empty() {
            return Err("custom-columns format specified but no custom columns given".into());
        }
        let mut columns = Vec::new();
        for part in spec.split(',') {
            let Some((header, path)) = part.split_once(':') else {
                return Err(format!("unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"));
            };
            columns.push((header.to_string(), column(path)?));
        }
        Ok(CustomColumns { columns })
    }

    /// A file of two lines: the headers, then the paths, each separated by white space.
    pub fn from_template(text: &str) -> Result<CustomColumns, String> {
        let mut lines = text.lines();
        let headers: Vec<&str> = lines
            .next()
            .ok_or("invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs.")?
            .split_whitespace()
            .collect();
        let specs: Vec<&str> = lines
            .next()
            .ok_or("invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs.")?
            .split_whitespace()
            .collect();
        if headers.len() != specs.len() {
            return Err(format!(
                "number of headers ({}) and field specifications ({}) don't match",
                headers.len(),
                specs.len()
            ));
        }
        let mut columns = Vec::new();
        for (h, s) in headers.into_iter().zip(specs) {
            columns.push((h.to_string(), column(s)?));
        }
        Ok(CustomColumns { columns })
    }

    pub fn headers(&self) -> Vec<String> {
        self.columns.iter().map(|(h, _)| h.clone()).collect()
    }

    /// One document's cells.
    pub fn row(&self, doc: &Value) -> Result<Vec<String>, String> {
        let mut cells = Vec::new();
        for (_, template) in &self.columns {
            let found = template.find(doc, true)?;
            let mut values: Vec<String> = Vec::new();
            if found.first().is_none_or(|f| f.is_empty()) {
                values.push("<none>".into());
            }
            for list in &found {
                for v in list {
                    values.push(crate::text::sanitize::escape(&v.go_v()));
                }
            }
            cells.push(values.join(","));
        }
        Ok(cells)
    }
}

fn column(path: &str) -> Result<Template, String> {
    let expr = relaxed(path)?;
    Template::parse(&expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_and_rows() {
        let c = CustomColumns::from_spec("NAME:.name,N:.items[*].n,MISS:.nope").unwrap();
        let doc: Value = serde_json::from_str(r#"{"name":"a","items":[{"n":1},{"n":2}]}"#).unwrap();
        let row = c.row(&doc).unwrap();
        assert_eq!(row, vec!["a", "1,2", "<none>"]);
        let mut widths = Vec::new();
        assert_eq!(
            super::super::tabwriter::align(&[c.headers(), row], &mut widths),
            "NAME   N     MISS\na      1,2   <none>\n"
        );
        assert!(CustomColumns::from_spec("NAME").unwrap_err().starts_with("unexpected custom-columns spec: NAME"));
    }
}

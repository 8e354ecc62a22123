//! Tables as kubectl prints them: no borders, upper-case headers, columns left-aligned and
//! padded to max(6, widest cell + 3), the last column unpadded, no trailing blanks.

use std::io::{self, Write};

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};

/// Writes a table. Cells must already be escaped ([`crate::text::sanitize`]).
pub fn write(out: &mut dyn Write, headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> io::Result<()> {
    if rows.is_empty() && no_headers {
        return Ok(());
    }
    let mut table = Table::new();
    table.load_preset(presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled);
    if !no_headers {
        table.set_header(headers.iter().map(|h| h.to_uppercase()));
    }
    for row in rows {
        table.add_row(row.iter().map(|c| if c.is_empty() { "<none>".to_string() } else { c.clone() }));
    }
    let last = headers.len().saturating_sub(1);
    for (i, column) in table.column_iter_mut().enumerate() {
        if i == last {
            column.set_padding((0, 0));
        } else {
            column.set_padding((0, 3));
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(6)));
        }
    }
    for line in table.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(headers: &[&str], rows: &[&[&str]], no_headers: bool) -> String {
        let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect();
        let mut out = Vec::new();
        write(&mut out, headers, &rows, no_headers).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pads_like_kubectl_tabwriter() {
        assert_eq!(
            render(&["name", "data", "age"], &[&["kube-root-ca.crt", "1", "5d"]], false),
            "NAME               DATA   AGE\nkube-root-ca.crt   1      5d\n"
        );
    }

    #[test]
    fn short_columns_get_the_minimum_width() {
        assert_eq!(render(&["a", "b"], &[&["x", "y"]], false), "A     B\nx     y\n");
    }

    #[test]
    fn no_headers_and_empty_cells() {
        assert_eq!(render(&["a", "b"], &[&["", "y"]], true), "<none>   y\n");
    }
}

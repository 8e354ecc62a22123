//! Tables as kubectl prints them: no borders, upper-case headers, columns left-aligned and
//! padded to max(6, widest cell + 3), the last column unpadded, no trailing blanks.

use std::io::{self, Write};

use super::tabwriter;

/// Writes a table, aligned by the same tab writer as kubectl's (and `-o custom-columns`'s,
/// [`tabwriter::align`]). Cells must already be escaped ([`crate::text::sanitize`]).
pub fn write(out: &mut dyn Write, headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> io::Result<()> {
    if rows.is_empty() && no_headers {
        return Ok(());
    }
    let mut lines: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
    if !no_headers {
        lines.push(headers.iter().map(|h| h.to_uppercase()).collect());
    }
    for row in rows {
        lines.push(row.iter().map(|c| if c.is_empty() { "<none>".to_string() } else { c.clone() }).collect());
    }
    for line in tabwriter::align(&lines, &mut Vec::new()).lines() {
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
    fn a_coloured_table_aligns_as_the_plain_one_with_its_escapes_removed() {
        use crate::text::terminal::{SGR_GREEN, SGR_RED, SGR_RESET, SGR_YELLOW};
        let paint = |colour: &str, word: &str| format!("{colour}{word}{SGR_RESET}");
        let headers = ["check", "result", "detail"];
        let plain_rows = [["lease", "pass", "fresh"], ["active check", "not reached", "x"], ["日本", "fail", "stale"]];
        let colours = [SGR_GREEN, SGR_YELLOW, SGR_RED];
        let coloured: Vec<Vec<String>> = plain_rows
            .iter()
            .zip(colours)
            .map(|(r, c)| vec![r[0].to_string(), paint(c, r[1]), paint(c, r[2])])
            .collect();
        let plain: Vec<&[&str]> = plain_rows.iter().map(|r| &r[..]).collect();
        let want = render(&headers, &plain, false);
        let mut out = Vec::new();
        write(&mut out, &headers, &coloured, false).unwrap();
        let got = String::from_utf8(out).unwrap();
        assert_ne!(got, want, "the colour is there");
        assert_eq!(crate::text::width::plain(&got), want);
        // A wide character takes two columns: the next column starts where it does below it.
        assert_eq!(want.lines().nth(3).unwrap(), "日本           fail          stale");
    }

    #[test]
    fn no_headers_and_empty_cells() {
        assert_eq!(render(&["a", "b"], &[&["", "y"]], true), "<none>   y\n");
    }
}

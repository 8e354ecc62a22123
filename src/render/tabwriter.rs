//! The one column aligner: Go's text/tabwriter as kubectl sets it up for every table it prints
//! (`printers.GetNewTabWriter`: at least 6 wide, 3 spaces of padding), for the plugin's tables
//! (table.rs) and `-o custom-columns` (columns.rs) alike. One difference: a cell's width is
//! the columns it takes on the terminal ([`crate::text::width::columns`]), where Go's tab
//! writer counts runes. The two agree on every cell but one holding the plugin's colour (which
//! takes no column, so a coloured table aligns as the plain one) or a wide East Asian
//! character (two columns, which kubectl's tables misalign).

use crate::text::width::columns;

const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

/// Go's text/tabwriter as kubectl sets it up (liggitt/tabwriter with RememberWidths), over
/// lines of tab-separated cells: a column is aligned over each block of consecutive lines that
/// have a tab-terminated cell in it (so a newline inside a cell splits a block, as in kubectl);
/// `remembered` keeps each column's width across calls (a watch's later rows).
pub fn align(lines: &[Vec<String>], remembered: &mut Vec<usize>) -> String {
    let text: String = lines.iter().map(|l| l.join("\t") + "\n").collect();
    let rows: Vec<Vec<&str>> =
        text.strip_suffix('\n').unwrap_or(&text).split('\n').map(|l| l.split('\t').collect()).collect();
    let mut out = String::new();
    let mut tw = Tab { rows: &rows, widths: Vec::new(), remembered, out: &mut out };
    tw.format(0, rows.len());
    out
}

struct Tab<'a, 'b> {
    rows: &'a [Vec<&'a str>],
    widths: Vec<usize>,
    remembered: &'b mut Vec<usize>,
    out: &'b mut String,
}

impl Tab<'_, '_> {
    fn format(&mut self, mut line0: usize, line1: usize) {
        let column = self.widths.len();
        let mut this = line0;
        while this < line1 {
            if column + 1 >= self.rows[this].len() {
                this += 1;
                continue;
            }
            self.write_lines(line0, this);
            line0 = this;
            let mut width = MIN_WIDTH;
            while this < line1 && column + 1 < self.rows[this].len() {
                width = width.max(columns(self.rows[this][column]) + PADDING);
                this += 1;
            }
            if let Some(r) = self.remembered.get_mut(column) {
                width = width.max(*r);
                *r = width;
            } else {
                self.remembered.push(width);
            }
            self.widths.push(width);
            self.format(line0, this);
            self.widths.pop();
            line0 = this;
        }
        self.write_lines(line0, line1);
    }

    fn write_lines(&mut self, line0: usize, line1: usize) {
        for row in &self.rows[line0..line1] {
            for (j, cell) in row.iter().enumerate() {
                self.out.push_str(cell);
                if let Some(w) = self.widths.get(j) {
                    self.out.push_str(&" ".repeat(w.saturating_sub(columns(cell))));
                }
            }
            self.out.push('\n');
        }
    }
}

//! Rows for `lease --watch`: a header once, then one row per change, in widths fixed by the
//! first row (as `kubectl get -w` does). `-o json` gives one object per line instead.

use std::io::{self, Write};

use super::Style;
use crate::core::duration::{human, human_up};
use crate::core::heartbeat::{Change, ChangeKind, Gaps};
use crate::core::lease::{LeaseAssessment, LeaseState};
use crate::report::watch::{ChangeDoc, KueueChangeDoc};
use crate::text::sanitize::escape;
use crate::text::width::columns;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

const HEADERS: [&str; 7] = ["TIME", "EVENT", "HOLDER", "RENEWED", "GAP", "STATUS", "DETAIL"];

/// The advice of the design when a controller was replaced.
pub const TAKEOVER_HINT: &str = "the controller was replaced: reopen adapters opened before the takeover";

/// The most columns a live row's cell takes in the table (but DETAIL's, which ends the line):
/// a longer one (a holder identity of megabytes) is elided with `…`, so it neither pads every
/// later row nor floods the terminal; `-o wide`, JSON and YAML show it whole.
pub const CELL_WIDTH: usize = 40;

/// Column widths, fixed by the header and the first row, counted in terminal columns (a
/// coloured STATUS takes as many as a plain one).
#[derive(Debug, Default)]
pub struct Columns {
    widths: Option<Vec<usize>>,
    pub style: Style,
    /// Cells past [`CELL_WIDTH`] are elided (the table; not `-o wide`).
    elide: bool,
}

impl Columns {
    pub fn new(style: Style) -> Columns {
        Columns { widths: None, style, elide: false }
    }

    /// Whether cells past [`CELL_WIDTH`] are elided.
    pub fn elided(self, elide: bool) -> Columns {
        Columns { elide, ..self }
    }

    /// The cells of a row as written: each but the last elided past [`CELL_WIDTH`].
    fn shown(&self, mut cells: Vec<String>) -> Vec<String> {
        let last = cells.len().saturating_sub(1);
        if self.elide {
            for cell in cells.iter_mut().take(last) {
                *cell = elide(cell, CELL_WIDTH);
            }
        }
        cells
    }

    pub fn header(&mut self, out: &mut dyn Write, first: &Change) -> io::Result<()> {
        let cells = self.shown(cells(first, None, self.style));
        let widths: Vec<usize> =
            HEADERS.iter().zip(&cells).map(|(h, c)| (h.len().max(columns(c)) + 3).max(6)).collect();
        self.widths = Some(widths);
        self.write_cells(out, &HEADERS.map(String::from))
    }

    pub fn row(&mut self, out: &mut dyn Write, change: &Change, gaps: Option<&Gaps>) -> io::Result<()> {
        self.write_cells(out, &self.shown(cells(change, gaps, self.style)))
    }

    /// A line that is no row: its time in the TIME column, then `text` from EVENT on (Kueue's
    /// manager's lines). Before any header, the time column is as wide as the header makes it.
    pub fn line(&self, out: &mut dyn Write, at: Timestamp, text: &str) -> io::Result<()> {
        let t = time(at);
        let w = self.widths.as_ref().and_then(|w| w.first().copied()).unwrap_or(t.len() + 3);
        writeln!(out, "{t:<w$}{text}")
    }

    fn write_cells(&self, out: &mut dyn Write, cells: &[String]) -> io::Result<()> {
        let widths = self.widths.clone().unwrap_or_default();
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                line.push_str(cell);
            } else {
                let w = widths.get(i).copied().unwrap_or(6);
                let used = columns(cell);
                line.push_str(cell);
                line.push_str(&" ".repeat(w.saturating_sub(used)));
                if used >= w {
                    line.push(' ');
                }
            }
        }
        writeln!(out, "{}", line.trim_end())
    }
}

/// `s` in at most `max` columns, ending in `…` when cut. For text without colour sequences
/// (a long cell is never a coloured word).
fn elide(s: &str, max: usize) -> String {
    if columns(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out + "…"
}

fn time(t: Timestamp) -> String {
    t.strftime("%H:%M:%SZ").to_string()
}

/// TIME, EVENT, HOLDER, RENEWED, GAP, STATUS, DETAIL (and, in wide, the gap statistics).
fn cells(change: &Change, gaps: Option<&Gaps>, style: Style) -> Vec<String> {
    let a = &change.assessment;
    let facts = a.facts.clone().unwrap_or_default();
    let gap = match &change.kind {
        ChangeKind::Renewed { gap, .. } | ChangeKind::Takeover { gap, .. } | ChangeKind::Fresh { gap } => {
            gap.map(short).unwrap_or_default()
        }
        _ => String::new(),
    };
    let mut detail = detail(change);
    if let Some(g) = gaps.filter(|g| g.count() > 0) {
        let stats = summary(g);
        detail = if detail.is_empty() { stats } else { format!("{detail}; {stats}") };
    }
    vec![
        time(change.at),
        change.kind.event().to_string(),
        escape(facts.holder().unwrap_or("<none>")),
        facts.renew_time.map(|t| human_up(change.at.duration_since(t))).unwrap_or_else(|| "<none>".into()),
        if gap.is_empty() { "-".into() } else { gap },
        super::lease::painted_status(&a.state, style),
        detail,
    ]
}

/// A gap as every duration in a table is written: kubectl's HumanDuration.
fn short(d: SignedDuration) -> String {
    human(d)
}

pub fn detail(change: &Change) -> String {
    let a = &change.assessment;
    match &change.kind {
        ChangeKind::Renewed { gap: Some(g), slow: true } => {
            let half = a.facts.as_ref().and_then(|f| f.duration_seconds).unwrap_or_default();
            format!(
                "slow renewal: {} since the last one, more than half the limit ({})",
                short(*g),
                short(SignedDuration::from_secs(half.into()))
            )
        }
        ChangeKind::Takeover { from, to, gap, transitions } => format!(
            "{} -> {}{}{}; {TAKEOVER_HINT}",
            escape(from),
            escape(to),
            gap.map(|g| format!(" after {}", short(g))).unwrap_or_default(),
            transitions.map(|t| format!(", leaseTransitions {t}")).unwrap_or_default(),
        ),
        _ => match &a.state {
            LeaseState::Forbidden { rule } => format!("missing RBAC: {rule}"),
            state => state.reason(&a.lease).unwrap_or_default(),
        },
    }
}

/// `renewal gaps: 12, median 2s, max 5s`, or `renewal gaps: none seen`.
pub fn summary(gaps: &Gaps) -> String {
    match (gaps.median(), gaps.max()) {
        (Some(m), Some(x)) => format!("renewal gaps: {}, median {}, max {}", gaps.count(), short(m), short(x)),
        _ => "renewal gaps: none seen".into(),
    }
}

/// The live status line shown on a terminal under the rows.
/// `connection` is the watch's state (`live`, `reconnecting since 12s`, `polling every 3s`).
pub fn status_line(
    state: &LeaseState,
    holder: Option<&str>,
    renewed: Option<Timestamp>,
    now: Timestamp,
    connection: &str,
    style: Style,
) -> String {
    let renewed = renewed.map(|t| format!(", renewed {} ago", human_up(now.duration_since(t)))).unwrap_or_default();
    let status = super::lease::painted_status(state, style);
    format!("{} {status}: holder {}{renewed} [{connection}]", time(now), escape(holder.unwrap_or("<none>")))
}

/// One change as one JSON line, its detail as the table row words it; Kueue's manager's
/// Lease at the same moment, when it was read.
pub fn change_doc(change: &Change, kueue: Option<&LeaseAssessment>) -> ChangeDoc {
    crate::report::watch::change_doc(change, detail(change), kueue)
}

/// What Kueue's manager's Lease says, as the watch says it: `Kueue's manager: Lease ... was
/// last renewed 31s ago, beyond 30s: no manager leads, so Kueue admits nothing`.
pub fn kueue_line(a: &LeaseAssessment) -> String {
    escape(&format!("Kueue's manager: {}", crate::core::kueue_lease::sentence(a)))
}

/// Kueue's manager's change as one document.
pub fn kueue_change_doc(a: &LeaseAssessment, at: Timestamp) -> KueueChangeDoc {
    crate::report::watch::kueue_change_doc(a, at, kueue_line(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_cell_is_elided_in_the_table_and_whole_in_wide() {
        let cells: Vec<String> = vec!["t".into(), "h".repeat(100), "d".repeat(100)];
        let table = Columns::new(Style::default()).elided(true).shown(cells.clone());
        assert_eq!(table[1], format!("{}…", "h".repeat(CELL_WIDTH - 1)));
        assert_eq!(columns(&table[1]), CELL_WIDTH);
        assert_eq!(table[2], "d".repeat(100), "the last cell ends the line, whole");
        assert_eq!(Columns::new(Style::default()).shown(cells.clone()), cells, "wide: whole");
        assert_eq!(elide("日本語", 4), "日…", "counted in columns");
        assert_eq!(elide("short", 40), "short");
        // The widths follow the elided first row: a later long cell pads nothing.
        let mut out = Vec::new();
        let mut c = Columns::new(Style::default()).elided(true);
        c.widths = Some(vec![6, CELL_WIDTH + 3]);
        c.write_cells(&mut out, &c.shown(vec!["t".into(), "x".repeat(1 << 20), "end".into()])).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(columns(&line), 6 + CELL_WIDTH + 3 + 3 + 1, "{line}");
    }

    #[test]
    fn summary_without_renewals_says_so() {
        assert_eq!(summary(&Gaps::default()), "renewal gaps: none seen");
    }
}

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

/// Column widths, fixed by the header and the first row, counted in terminal columns (a
/// coloured STATUS takes as many as a plain one).
#[derive(Debug, Default)]
pub struct Columns {
    widths: Option<Vec<usize>>,
    pub style: Style,
}

impl Columns {
    pub fn new(style: Style) -> Columns {
        Columns { widths: None, style }
    }

    pub fn header(&mut self, out: &mut dyn Write, first: &Change) -> io::Result<()> {
        let cells = cells(first, None, self.style);
        let widths: Vec<usize> =
            HEADERS.iter().zip(&cells).map(|(h, c)| (h.len().max(columns(c)) + 3).max(6)).collect();
        self.widths = Some(widths);
        self.write_cells(out, &HEADERS.map(String::from))
    }

    pub fn row(&mut self, out: &mut dyn Write, change: &Change, gaps: Option<&Gaps>) -> io::Result<()> {
        self.write_cells(out, &cells(change, gaps, self.style))
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
    fn summary_without_renewals_says_so() {
        assert_eq!(summary(&Gaps::default()), "renewal gaps: none seen");
    }
}

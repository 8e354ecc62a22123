//! What `lease --watch` has on the screen: its rows (or documents), Kueue's manager's lines,
//! and on a terminal one live status line under them, cleared before anything else is written.

use std::io::{self, Write};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::watch::{Columns, change_doc, kueue_change_doc, kueue_line, status_line, summary};
use crate::core::heartbeat::{Change, Tracker};
use crate::core::lease::LeaseAssessment;
use crate::core::link::Link;
use crate::invocation::{Format, Output};
use crate::text::terminal::CLEAR_LINE;

/// The connection as the status line says it: `live`, `reconnecting since 12s`, or
/// `polling every 3s`.
pub fn connection(link: &Link, polling: Option<Duration>, now: Timestamp) -> String {
    match (link.status(now), polling) {
        (crate::core::link::LinkStatus::Live, Some(every)) => {
            format!("polling every {}", crate::core::duration::go_duration(every))
        }
        (status, _) => status.text(),
    }
}

/// What is on the screen: the rows, and on a terminal one live status line under them.
pub struct View {
    pub columns: Columns,
    pub output: Output,
    pub live_line: bool,
    pub line_shown: bool,
    /// Documents written so far (YAML separates them with `---`).
    pub docs: usize,
    /// Kueue's manager's line when it came before dispatch's Lease was first seen: said under
    /// the first row rather than above the header.
    pub held: Option<(LeaseAssessment, Timestamp)>,
}

impl View {
    /// `style` colours the rows' STATUS and the status line (`--color`).
    pub fn new(output: Output, live_line: bool, style: super::Style) -> View {
        View {
            columns: Columns::new(style).elided(output.format != Format::Wide),
            output,
            live_line,
            line_shown: false,
            docs: 0,
            held: None,
        }
    }

    pub fn change(
        &mut self,
        change: &Change,
        tracker: &Tracker,
        kueue: Option<&LeaseAssessment>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.clear(out)?;
        match self.output.format {
            Format::Json => super::structured::json_line(out, &change_doc(change, kueue))?,
            Format::Yaml => {
                super::structured::yaml_document(out, &change_doc(change, kueue), self.docs)?;
                self.docs += 1;
            }
            Format::Table | Format::Wide | Format::Prometheus => {
                if matches!(change.kind, crate::core::heartbeat::ChangeKind::Observed) && !self.output.no_headers {
                    self.columns.header(out, change)?;
                }
                let wide = (self.output.format == Format::Wide).then_some(&tracker.gaps);
                self.columns.row(out, change, wide)?;
            }
        }
        out.flush()
    }

    /// What Kueue's manager's Lease says now: a line in the table (on stderr with
    /// `--no-headers`, so that stdout holds only rows, as the gate's notes), a document in
    /// JSON and YAML. Held until dispatch's Lease was first seen (`shown`).
    pub fn kueue(
        &mut self,
        a: &LeaseAssessment,
        at: Timestamp,
        shown: bool,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<()> {
        if !shown {
            self.held = Some((a.clone(), at));
            return Ok(());
        }
        self.clear(out)?;
        match self.output.format {
            Format::Json => super::structured::json_line(out, &kueue_change_doc(a, at))?,
            Format::Yaml => {
                super::structured::yaml_document(out, &kueue_change_doc(a, at), self.docs)?;
                self.docs += 1;
            }
            Format::Table | Format::Wide | Format::Prometheus if self.output.no_headers => {
                let _ = writeln!(err, "{}", kueue_line(a));
            }
            Format::Table | Format::Wide | Format::Prometheus => self.columns.line(out, at, &kueue_line(a))?,
        }
        out.flush()
    }

    pub fn status(
        &mut self,
        tracker: &Tracker,
        link: &Link,
        polling: Option<Duration>,
        now: Timestamp,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if !self.live_line || !matches!(self.output.format, Format::Table | Format::Wide) {
            return Ok(());
        }
        let Some(a) = tracker.assess(now) else { return Ok(()) };
        let facts = a.facts.clone().unwrap_or_default();
        let connection = connection(link, polling, now);
        let line = status_line(&a.state, facts.holder(), facts.renew_time, now, &connection, self.columns.style);
        write!(out, "{CLEAR_LINE}{line}")?;
        self.line_shown = true;
        out.flush()
    }

    pub fn clear(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if std::mem::take(&mut self.line_shown) {
            write!(out, "{CLEAR_LINE}")?;
        }
        Ok(())
    }

    pub fn finish(&mut self, tracker: &Tracker, out: &mut dyn Write) -> io::Result<()> {
        self.clear(out)?;
        if matches!(self.output.format, Format::Table | Format::Wide) {
            writeln!(out, "{}", summary(&tracker.gaps))?;
        }
        out.flush()
    }
}

//! Renderers: a finished report and any writer in, text out. No fetching, no clock.

pub mod columns;
pub mod doctor;
pub mod fleet;
pub mod gate;
pub mod jsonpath;
pub mod lease;
pub mod next;
pub mod printer;
pub mod prometheus;
pub mod structured;
pub mod table;
pub mod tabwriter;
pub mod watch;
pub mod watch_view;
pub mod workload;
pub mod workloads;

use crate::invocation::ColorWhen;

/// Whether to colour the status words (`--color`), and whether stdout is a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub color: bool,
    /// stdout is a terminal: live modes keep a ticking status line.
    pub live: bool,
}

impl Style {
    /// `--color`: always, never, or (auto) on a terminal, without NO_COLOR, with a TERM that is
    /// not `dumb`.
    pub fn for_color(when: ColorWhen) -> Style {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal();
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Style { color: color(when, tty, env("NO_COLOR").is_some(), env("TERM").as_deref()), live: tty }
    }

    /// Paints a verdict or status word: green when good, red when bad, yellow when unknown.
    pub fn paint(self, word: &str, verdict: crate::core::verdict::Verdict) -> String {
        use crate::core::verdict::Verdict;
        // An empty cell stays empty (the table writes `<none>` for it).
        if !self.color || word.is_empty() {
            return word.to_string();
        }
        use crate::text::terminal::{SGR_GREEN, SGR_RED, SGR_RESET, SGR_YELLOW};
        let colour = match verdict {
            Verdict::Yes => SGR_GREEN,
            Verdict::No => SGR_RED,
            Verdict::Unknown => SGR_YELLOW,
        };
        format!("{colour}{word}{SGR_RESET}")
    }

    /// An AdmissionCheck's state as Kueue words it (`cell`, already escaped), coloured by its
    /// `state`: `Ready` green, `Retry` and `Rejected` red, `Pending` (or any other) yellow.
    pub fn check_state(self, state: &str, cell: &str) -> String {
        use crate::core::verdict::Verdict;
        let verdict = match state {
            "Ready" => Verdict::Yes,
            "Retry" | "Rejected" => Verdict::No,
            _ => Verdict::Unknown,
        };
        self.paint(cell, verdict)
    }
}

/// Whether `--color=WHEN` colours, on a terminal or not, with `NO_COLOR` set or not, and `TERM`.
pub fn color(when: ColorWhen, tty: bool, no_color: bool, term: Option<&std::ffi::OsStr>) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => tty && !no_color && term.is_none_or(|t| t != "dumb"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_auto_needs_a_terminal_no_no_color_and_a_term_that_is_not_dumb() {
        let dumb = std::ffi::OsStr::new("dumb");
        let xterm = std::ffi::OsStr::new("xterm");
        assert!(color(ColorWhen::Auto, true, false, Some(xterm)));
        assert!(color(ColorWhen::Auto, true, false, None));
        assert!(!color(ColorWhen::Auto, false, false, Some(xterm)));
        assert!(!color(ColorWhen::Auto, true, true, Some(xterm)));
        assert!(!color(ColorWhen::Auto, true, false, Some(dumb)));
        assert!(color(ColorWhen::Always, false, true, Some(dumb)));
        assert!(!color(ColorWhen::Never, true, false, Some(xterm)));
    }
}

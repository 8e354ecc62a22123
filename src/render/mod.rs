//! Renderers: a finished report and any writer in, text out. No fetching, no clock.

pub mod doctor;
pub mod fleet;
pub mod gate;
pub mod lease;
pub mod prometheus;
pub mod structured;
pub mod table;
pub mod watch;
pub mod workload;

/// Whether to colour the verdict: only on a terminal, and never with NO_COLOR set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub color: bool,
    /// stdout is a terminal: live modes keep a ticking status line.
    pub live: bool,
}

impl Style {
    pub fn detect() -> Style {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let tty = std::io::stdout().is_terminal();
        Style { color: !no_color && tty, live: tty }
    }

    /// Paints a verdict or status word: green when good, red when bad, yellow when unknown.
    pub fn paint(self, word: &str, verdict: crate::core::verdict::Verdict) -> String {
        use crate::core::verdict::Verdict;
        if !self.color {
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
}

//! One module per verb: fetch the facts, evaluate them with the pure core at one `now`, render.

pub mod doctor;
pub mod fleet;
pub mod gate;
pub mod gate_watch;
pub mod hints;
pub mod lease;
pub mod lease_watch;
pub mod live;
pub mod workload;
pub mod workloads;

use std::io::Write;

use crate::clock::Clock;
use crate::log::Log;

/// What a command needs from the outside world.
pub struct Deps<'a> {
    pub clock: &'a dyn Clock,
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    pub log: &'a Log,
    pub style: crate::render::Style,
    /// `-o name|jsonpath=...|custom-columns=...`, in place of the format's renderer.
    pub printer: Option<&'a crate::render::printer::Printer>,
}

impl Deps<'_> {
    /// `Warning: ...` on stderr, the text escaped whole (it often carries a server's or a
    /// Lease's words), as every verb prints its warnings. A failed write is not worth a word.
    pub fn warn(&mut self, text: &str) {
        let _ = writeln!(self.err, "Warning: {}", crate::text::sanitize::escape(text));
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Sleeps until `at`, or for ever when there is no such moment (a `select!` arm that never fires).
pub async fn sleep_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

//! `-v LEVEL` logging to stderr. What is logged is chosen here, by us: the context, the server,
//! each request's method, path and status. Never a header, a token or a key.

use crate::text::terminal::LineSink;

/// Cheap to clone: every clone writes to the same sink (the live modes' streams log from
/// their own tasks).
#[derive(Clone)]
pub struct Log {
    level: u8,
    sink: LineSink,
}

impl Default for Log {
    fn default() -> Self {
        Log::silent()
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").field("level", &self.level).finish_non_exhaustive()
    }
}

impl Log {
    pub fn new(level: u8, sink: LineSink) -> Self {
        Log { level, sink }
    }

    pub fn silent() -> Self {
        Log::new(0, LineSink::discard())
    }

    /// The stderr this log writes to, for what must reach it whatever the level (an exec
    /// plugin's passed-on stderr).
    pub fn stderr(&self) -> LineSink {
        self.sink.clone()
    }

    pub fn enabled(&self, level: u8) -> bool {
        self.level >= level
    }

    pub fn info(&self, level: u8, line: &str) {
        if self.enabled(level) {
            self.sink.ours(&format!("I {}", crate::text::sanitize::escape(line)));
        }
    }
}

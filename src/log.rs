//! `-v LEVEL` logging to stderr. What is logged is chosen here, by us: the context, the server,
//! each request's method, path and status. Never a header, a token or a key.

use std::io::Write;
use std::sync::Mutex;

pub struct Log {
    level: u8,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Log {
    pub fn new(level: u8, sink: Box<dyn Write + Send>) -> Self {
        Log { level, sink: Mutex::new(sink) }
    }

    pub fn silent() -> Self {
        Log::new(0, Box::new(std::io::sink()))
    }

    pub fn enabled(&self, level: u8) -> bool {
        self.level >= level
    }

    pub fn info(&self, level: u8, line: &str) {
        if self.enabled(level)
            && let Ok(mut sink) = self.sink.lock()
        {
            let _ = writeln!(sink, "I {}", crate::text::sanitize::escape(line));
        }
    }
}

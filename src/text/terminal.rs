//! The stderr writer at the output boundary, shared: the log and an exec credential plugin's
//! passed-on stderr (read on a task of its own, for as long as the plugin runs) write lines
//! through one handle, injected by `main`, so none of them writes to the process's stderr
//! behind the others' back, and tests can read what they wrote.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// One line-writer, cheap to clone; every clone writes to the same sink.
#[derive(Clone)]
pub struct Lines(Arc<Mutex<Box<dyn Write + Send>>>);

impl Lines {
    pub fn new(sink: Box<dyn Write + Send>) -> Lines {
        Lines(Arc::new(Mutex::new(sink)))
    }

    /// Writes nowhere.
    pub fn discard() -> Lines {
        Lines::new(Box::new(std::io::sink()))
    }

    /// Writes one line of someone else's text (a plugin's, a server's), escaped
    /// ([`super::sanitize::escape`]) so it cannot act on the terminal.
    pub fn foreign(&self, line: &str) {
        self.ours(&super::sanitize::escape(line));
    }

    /// Writes one line of the plugin's own words as they are. A failed write is not worth a
    /// word: this is stderr.
    pub fn ours(&self, line: &str) {
        let mut sink = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(sink, "{line}");
        let _ = sink.flush();
    }
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lines")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink tests can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn clones_write_to_one_sink_and_foreign_text_is_escaped() {
        let seen = Shared::default();
        let lines = Lines::new(Box::new(seen.clone()));
        lines.clone().foreign("open \u{1b}[2J this");
        lines.ours("I context admin");
        let text = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "open \\u{1b}[2J this\nI context admin\n");
    }
}

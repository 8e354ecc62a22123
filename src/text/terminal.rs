//! The output boundary. Everything the plugin writes to a terminal-bound stream passes a
//! [`Screen`], which lets through text, line breaks and tabs, and the few control sequences
//! the plugin writes itself ([`SGR_RED`] and its kin when colour is on, [`CLEAR_LINE`] when a
//! live status line is), and escapes every other control, bidi and zero-width character
//! ([`super::sanitize`]'s rules), whoever wrote it. Renderers escape foreign text field by
//! field as well (a table cell is cut at its first line break, as kubectl cuts it); the
//! screen is the floor under them: a renderer that forgot cannot put a raw escape sequence on
//! the terminal. JSON, YAML and Prometheus text are not screened: they keep the data exact,
//! escaped as each format requires.
//!
//! The stderr writer is shared: the log, an exec credential plugin's passed-on stderr (read
//! on a task of its own, for as long as the plugin runs) and the error printer write lines
//! through one [`LineSink`], injected by `main`, so none of them writes to the process's stderr
//! behind the others' back, and tests can read what they wrote.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// One sink of whole lines, cheap to clone; every clone writes to the same writer.
#[derive(Clone)]
pub struct LineSink(Arc<Mutex<Box<dyn Write + Send>>>);

impl LineSink {
    /// Lines to `sink`, through a [`Screen`] without colour.
    pub fn new(sink: Box<dyn Write + Send>) -> LineSink {
        LineSink(Arc::new(Mutex::new(Box::new(Screen::new(sink, Allow::default())))))
    }

    /// Lines to the process's stderr.
    pub fn stderr() -> LineSink {
        LineSink::new(Box::new(io::stderr()))
    }

    /// Writes nowhere.
    pub fn discard() -> LineSink {
        LineSink::new(Box::new(std::io::sink()))
    }

    /// Writes one line of someone else's text (a plugin's, a server's), escaped
    /// ([`super::sanitize::escape`]) so it cannot act on the terminal.
    pub fn foreign(&self, line: &str) {
        self.ours(&super::sanitize::escape(line));
    }

    /// `error: ...`, the one line a failed run ends with: the message often carries a
    /// server's or a kubeconfig's words, so it is escaped whole (a line break in it cannot
    /// start a line of its own).
    pub fn error(&self, message: &str) {
        self.foreign(&format!("error: {message}"));
    }

    /// Writes one line of the plugin's own words as they are (through the screen all the
    /// same). A failed write is not worth a word: this is stderr.
    pub fn ours(&self, line: &str) {
        let mut sink = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(sink, "{line}");
        let _ = sink.flush();
    }
}

impl std::fmt::Debug for LineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineSink")
    }
}

/// Clears the line the cursor is on and returns to its start: how a live status line is
/// rewritten in place.
pub const CLEAR_LINE: &str = "\r\u{1b}[2K";
pub const SGR_RED: &str = "\u{1b}[31m";
pub const SGR_GREEN: &str = "\u{1b}[32m";
pub const SGR_YELLOW: &str = "\u{1b}[33m";
pub const SGR_RESET: &str = "\u{1b}[0m";

/// Which of the plugin's own control sequences a [`Screen`] lets through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// The four colour sequences (`--color`, a terminal, no NO_COLOR).
    pub colour: bool,
    /// [`CLEAR_LINE`] (a live mode's status line on a terminal).
    pub clear_line: bool,
}

impl Allow {
    fn sequences(self) -> impl Iterator<Item = &'static str> {
        let colour = [SGR_RED, SGR_GREEN, SGR_YELLOW, SGR_RESET].into_iter().filter(move |_| self.colour);
        colour.chain(std::iter::once(CLEAR_LINE).filter(move |_| self.clear_line))
    }
}

/// The writer at the output boundary (see the module's words). It holds back at most a few
/// bytes between writes: the start of a UTF-8 character or of an allowed sequence that the
/// next write completes.
pub struct Screen<W: Write> {
    inner: W,
    allow: Allow,
    held: Vec<u8>,
}

impl<W: Write> Screen<W> {
    pub fn new(inner: W, allow: Allow) -> Screen<W> {
        Screen { inner, allow, held: Vec::new() }
    }

    /// Screens `held`; keeps back a tail that may yet complete (unless `end`).
    fn drain(&mut self, end: bool) -> io::Result<()> {
        let mut out = Vec::with_capacity(self.held.len() + 16);
        let mut i = 0;
        let bytes = std::mem::take(&mut self.held);
        while i < bytes.len() {
            let rest = &bytes[i..];
            let b = rest[0];
            if b == b'\r' || b == 0x1b {
                if let Some(seq) = self.allow.sequences().find(|s| rest.starts_with(s.as_bytes())) {
                    out.extend_from_slice(seq.as_bytes());
                    i += seq.len();
                    continue;
                }
                if !end && self.allow.sequences().any(|s| s.as_bytes().starts_with(rest)) {
                    break;
                }
            }
            if b < 0x80 {
                match b {
                    b'\n' | b'\t' => out.push(b),
                    _ if b < 0x20 || b == 0x7f => {
                        out.extend_from_slice(super::sanitize::escape(&(b as char).to_string()).as_bytes())
                    }
                    _ => out.push(b),
                }
                i += 1;
                continue;
            }
            let width = match b {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => 1,
            };
            if rest.len() < width && !end {
                break;
            }
            match std::str::from_utf8(&rest[..width.min(rest.len())]) {
                Ok(c) => out.extend_from_slice(super::sanitize::escape(c).as_bytes()),
                // Not UTF-8: say the byte, never pass it.
                Err(_) => {
                    out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                    i += 1;
                    continue;
                }
            }
            i += width;
        }
        self.held = bytes[i..].to_vec();
        self.inner.write_all(&out)
    }
}

impl<W: Write> Write for Screen<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.held.extend_from_slice(buf);
        self.drain(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Screen<W> {
    fn drop(&mut self) {
        let _ = self.drain(true);
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
        let lines = LineSink::new(Box::new(seen.clone()));
        lines.clone().foreign("open \u{1b}[2J this");
        lines.ours("I context admin");
        let text = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "open \\u{1b}[2J this\nI context admin\n");
    }

    fn screened(allow: Allow, writes: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut screen = Screen::new(&mut out, allow);
            for w in writes {
                screen.write_all(w).unwrap();
            }
            screen.flush().unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_screen_escapes_every_control_but_line_breaks_and_tabs() {
        let hostile = "a\u{1b}]0;title\u{7}b\u{1b}[2Jc\rd\u{9b}e\u{202e}f\u{7f}\tg\nh";
        assert_eq!(
            screened(Allow::default(), &[hostile.as_bytes()]),
            "a\\u{1b}]0;title\\u{7}b\\u{1b}[2Jc\\rd\\u{9b}e\\u{202e}f\\u{7f}\tg\nh"
        );
        assert_eq!(screened(Allow::default(), &[b"caf\xc3", b"\xa9 \xff!"]), "caf\u{e9} \\xff!");
    }

    #[test]
    fn the_screen_passes_the_plugins_own_sequences_only_when_allowed() {
        let painted = format!("{SGR_GREEN}yes{SGR_RESET}");
        assert_eq!(screened(Allow::default(), &[painted.as_bytes()]), "\\u{1b}[32myes\\u{1b}[0m");
        let colour = Allow { colour: true, clear_line: false };
        assert_eq!(screened(colour, &[painted.as_bytes()]), painted);
        // Split across writes, an allowed sequence still passes whole.
        assert_eq!(screened(colour, &[b"\x1b", b"[3", b"1mno"]), format!("{SGR_RED}no"));
        // A colour the plugin never writes is escaped.
        assert_eq!(screened(colour, &[b"\x1b[5mblink"]), "\\u{1b}[5mblink");
        let live = Allow { colour: false, clear_line: true };
        assert_eq!(screened(live, &[format!("{CLEAR_LINE}status").as_bytes()]), format!("{CLEAR_LINE}status"));
        assert_eq!(screened(live, &[b"\r"]), "\\r");
    }
}

//! How wide text is on a terminal: the columns a line takes, counted by Unicode's East Asian
//! width (`unicode-width`, the crate serde-saphyr's diagnostics already build on), with the
//! plugin's own colour sequences ([`super::terminal::SGR_RED`] and its kin) taking none. Other
//! text never holds an escape here: the sanitizer has made every control character from
//! elsewhere visible text (`\u{1b}`) before it reaches a cell, and that is counted as printed.

use unicode_width::UnicodeWidthStr;

use super::terminal::{SGR_GREEN, SGR_RED, SGR_RESET, SGR_YELLOW};

/// The colour sequences the plugin writes itself.
const SGR: [&str; 4] = [SGR_RED, SGR_GREEN, SGR_YELLOW, SGR_RESET];

/// The columns `s` takes on a terminal: the plugin's colour sequences count nothing, a wide
/// (East Asian) character two, a combining mark none.
pub fn columns(s: &str) -> usize {
    plain(s).width()
}

/// `s` without the plugin's colour sequences: what a terminal shows, as text.
pub fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\u{1b}') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match SGR.iter().find(|seq| rest.starts_with(*seq)) {
            Some(seq) => rest = &rest[seq.len()..],
            None => {
                out.push('\u{1b}');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// `s` cut to at most `max` columns, ending in `...` when cut (as kubectl cuts a long cell).
/// For text without colour sequences (a cell that is cut is never a coloured word).
pub fn cut(s: &str, max: usize) -> String {
    if columns(s) <= max {
        return s.to_string();
    }
    let room = max.saturating_sub(3);
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out + &"..."[..3.min(max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_takes_no_columns_and_wide_characters_two() {
        assert_eq!(columns("fresh"), 5);
        assert_eq!(columns(&format!("{SGR_GREEN}fresh{SGR_RESET}")), 5);
        assert_eq!(columns("日本"), 4);
        assert_eq!(columns("e\u{301}"), 1);
        // An escaped control from a server is printed text: counted as such.
        assert_eq!(columns("\\u{1b}[31m"), 10);
        // A bare ESC (never in a cell) is not taken for a colour.
        assert_eq!(plain("\u{1b}[5mx"), "\u{1b}[5mx");
        assert_eq!(plain(&format!("a{SGR_RED}b{SGR_RESET}c")), "abc");
    }

    #[test]
    fn cut_counts_columns() {
        assert_eq!(cut("abcdefghij", 8), "abcde...");
        assert_eq!(cut("abc", 8), "abc");
        assert_eq!(cut("日本語の文", 7), "日本...");
        assert_eq!(cut("abcdef", 2), "..");
    }
}

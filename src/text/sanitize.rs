//! Strings from the cluster are someone else's text: escape control, bidi and zero-width
//! characters before they reach a terminal, so a Workload message cannot move the cursor,
//! recolour the screen or reorder a line; and the line and paragraph separators (U+2028,
//! U+2029), which YAML reads as line breaks.

/// Escapes characters that would act on a terminal rather than print.
pub fn escape(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A table cell as kubectl prints one: cut at the first line break with `...`, then escaped,
/// and cut to `max` characters with `...` when longer.
pub fn cell(s: &str, max: Option<usize>) -> String {
    let (first, cut) = match s.find(['\n', '\r', '\x0c']) {
        Some(i) => (&s[..i], true),
        None => (s, false),
    };
    let mut text = escape(first);
    if let Some(max) = max
        && text.chars().count() > max
    {
        text = text.chars().take(max.saturating_sub(3)).collect();
        return text + "...";
    }
    if cut {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape("a\u{1b}[31mred"), "a\\u{1b}[31mred");
        assert_eq!(escape("tab\there"), "tab\\there");
        assert_eq!(escape("rtl\u{202E}x"), "rtl\\u{202e}x");
        assert_eq!(escape("c1\u{9b}"), "c1\\u{9b}");
    }

    #[test]
    fn cells_cut_like_kubectl() {
        assert_eq!(cell("one\ntwo", None), "one...");
        assert_eq!(cell("abcdefghij", Some(8)), "abcde...");
        assert_eq!(cell("abc", Some(8)), "abc");
        assert_eq!(cell("\u{1b}]0;x", None), "\\u{1b}]0;x");
    }
}

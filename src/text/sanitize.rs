//! Strings from the cluster are someone else's text: escape control, bidi and invisible
//! characters before they reach a terminal, so a Workload message cannot move the cursor,
//! recolour the screen, reorder a line or hide text in a holder's name; and the line and
//! paragraph separators (U+2028, U+2029), which YAML reads as line breaks. [`HIDDEN`] is the
//! whole set beside the control characters (docs/output.md shows it as a table); shell
//! completion keeps out the same set through [`needs_escape`].

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

/// Characters that print nothing a reader can see, or change the direction of the text around
/// them, beside the control characters (Unicode's Cc): every Default_Ignorable_Code_Point and
/// every Bidi_Control of Unicode 16, the line and paragraph separators, and the interlinear
/// annotation characters. Variation selectors and the zero-width joiner are here too, though
/// emoji use them: a run of variation selectors can carry any bytes unseen after one visible
/// character, and an operator judging a gate needs the text, not its look.
pub const HIDDEN: &[(char, char, &str)] = &[
    ('\u{00AD}', '\u{00AD}', "soft hyphen"),
    ('\u{034F}', '\u{034F}', "combining grapheme joiner"),
    ('\u{061C}', '\u{061C}', "Arabic letter mark (bidi)"),
    ('\u{115F}', '\u{1160}', "Hangul fillers"),
    ('\u{17B4}', '\u{17B5}', "Khmer inherent vowels"),
    ('\u{180B}', '\u{180F}', "Mongolian variation selectors and vowel separator"),
    ('\u{200B}', '\u{200F}', "zero-width space, non-joiner, joiner; left-to-right and right-to-left marks"),
    ('\u{2028}', '\u{202E}', "line and paragraph separators; bidi embeddings and overrides"),
    ('\u{2060}', '\u{206F}', "word joiner, invisible operators, bidi isolates, deprecated format characters"),
    ('\u{3164}', '\u{3164}', "Hangul filler"),
    ('\u{FE00}', '\u{FE0F}', "variation selectors"),
    ('\u{FEFF}', '\u{FEFF}', "zero-width no-break space (byte order mark)"),
    ('\u{FFA0}', '\u{FFA0}', "halfwidth Hangul filler"),
    ('\u{FFF0}', '\u{FFFB}', "unassigned specials; interlinear annotation anchor, separator, terminator"),
    ('\u{1BCA0}', '\u{1BCA3}', "shorthand format controls"),
    ('\u{1D173}', '\u{1D17A}', "musical symbol format controls"),
    ('\u{E0000}', '\u{E0FFF}', "tag characters, variation selectors supplement, unassigned"),
];

/// Whether `c` is escaped: a control character (C0, DEL, C1) or one of [`HIDDEN`].
pub fn needs_escape(c: char) -> bool {
    c.is_control() || (c > '\u{7F}' && HIDDEN.iter().any(|&(from, to, _)| (from..=to).contains(&c)))
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
    fn escapes_every_invisible_and_direction_changing_character() {
        for c in [
            '\u{00AD}',
            '\u{061C}',
            '\u{200D}',
            '\u{2060}',
            '\u{2064}',
            '\u{206A}',
            '\u{206F}',
            '\u{FE0F}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{E0100}',
        ] {
            assert!(needs_escape(c), "{:?}", c);
            assert_eq!(escape(&format!("a{c}b")), format!("a\\u{{{:x}}}b", c as u32));
        }
        // Text hidden in tag characters after a visible name shows in full.
        let hidden: String = "pwn".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
        assert_eq!(escape(&format!("holder{hidden}")), "holder\\u{e0070}\\u{e0077}\\u{e006e}");
        // Printing characters next to the set stay as they are.
        for c in ['\u{00AC}', '\u{00AE}', '\u{2027}', '\u{205F}', '\u{FFFC}', '\u{FFFD}', 'é', '日', '😀'] {
            assert!(!needs_escape(c), "{:?}", c);
        }
    }

    #[test]
    fn docs_output_md_shows_the_same_table() {
        let doc = include_str!("../../docs/output.md");
        let rows: Vec<String> =
            doc.lines().filter(|l| l.starts_with("| U+")).map(|l| l.split('|').nth(1).unwrap().trim().into()).collect();
        let want: Vec<String> = HIDDEN
            .iter()
            .map(|&(from, to, _)| match from == to {
                true => format!("U+{:04X}", from as u32),
                false => format!("U+{:04X}\u{2013}U+{:04X}", from as u32, to as u32),
            })
            .collect();
        assert_eq!(rows, want);
    }

    #[test]
    fn the_table_is_sorted_and_disjoint() {
        for pair in HIDDEN.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:?}");
        }
    }

    #[test]
    fn cells_cut_like_kubectl() {
        assert_eq!(cell("one\ntwo", None), "one...");
        assert_eq!(cell("abcdefghij", Some(8)), "abcde...");
        assert_eq!(cell("abc", Some(8)), "abc");
        assert_eq!(cell("\u{1b}]0;x", None), "\\u{1b}]0;x");
    }
}

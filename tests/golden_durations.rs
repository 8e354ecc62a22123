//! One duration style, checked where it shows: every golden file (the plugin's tables, lines,
//! messages, JSON and YAML as the tests render them) is read, and each duration in it must be
//! what kubectl's HumanDuration writes for that many seconds (`core::duration::human`, itself
//! held against the Go function by tests/duration_oracle.rs). So `renewed 1m39s ago` (Go's
//! `time.Duration` for 99 s, where HumanDuration writes `99s`), `2m0s`, `1h0m5s` or `12m5s`
//! fail, wherever they come from: a check row, the adapter's reason strings (whose `<age>` and
//! `<limit>` are filled in this style), a `Next:` line, a warning.
//!
//! The one exception is a bound the user gave or the plugin keeps (`--timeout 1.5s`,
//! `--request-timeout`, `polling every 3s`, `within 5s`), written as the flags take it, Go's
//! `time.Duration`: a token right after those words, or with a fraction or milliseconds, is
//! not an age.

use k8s_openapi::jiff::SignedDuration;
use kubectl_dispatch::core::duration::human;

/// The words a bound follows.
const BOUNDS: &[&str] = &["--timeout ", "--request-timeout ", "polling every ", "within "];

/// Each duration-shaped token of `text` (`99s`, `3m8s`, `2d3h`), with what precedes it.
fn durations(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            && (i == 0 || !is_word(bytes[i - 1]) && !matches!(bytes[i - 1], b'.' | b'[' | b';'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut parts = 0;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            let digits_end = j + bytes[j..].iter().take_while(|b| b.is_ascii_digit()).count();
            let unit_end = digits_end + bytes[digits_end..].iter().take_while(|b| b.is_ascii_alphabetic()).count();
            if !matches!(&text[digits_end..unit_end], "y" | "d" | "h" | "m" | "s") {
                parts = 0;
                j = unit_end.max(j + 1);
                break;
            }
            parts += 1;
            j = unit_end;
        }
        let ends = j >= bytes.len() || !is_word(bytes[j]) && bytes[j] != b'.';
        if parts > 0 && ends {
            found.push((i, &text[i..j]));
        }
        i = j.max(i + 1);
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
    }
    found
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn seconds(token: &str) -> i64 {
    let (mut total, mut n) = (0i64, 0i64);
    for c in token.chars() {
        match c {
            '0'..='9' => n = n * 10 + i64::from(c as u8 - b'0'),
            unit => {
                total += n * match unit {
                    'y' => 365 * 86_400,
                    'd' => 86_400,
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                n = 0;
            }
        }
    }
    total
}

/// The durations of `text` that HumanDuration would not write, with their line.
fn other_style(text: &str) -> Vec<String> {
    durations(text)
        .into_iter()
        .filter(|(at, _)| !BOUNDS.iter().any(|b| text[..*at].ends_with(b)))
        .filter(|(_, token)| human(SignedDuration::from_secs(seconds(token))) != *token)
        .map(|(at, token)| {
            let line = text[..at].lines().count().max(1);
            let want = human(SignedDuration::from_secs(seconds(token)));
            format!("line {line}: {token} (HumanDuration writes {want})")
        })
        .collect()
}

#[test]
fn the_scanner_finds_each_style() {
    let text = "renewed 1m39s ago, beyond 30s; stale for 2m38s; 99s; 12m5s; 2m0s; 1h0m5s; 179m; 2d3h\n\
                pod-7d9f8c6b5-x2kqp_6f1e0c4a v0.17.0 1.5s 500ms 12:00:30Z --timeout 1m30s within 2m0s";
    assert_eq!(
        other_style(text),
        [
            "line 1: 1m39s (HumanDuration writes 99s)",
            "line 1: 12m5s (HumanDuration writes 12m)",
            "line 1: 2m0s (HumanDuration writes 2m)",
            "line 1: 1h0m5s (HumanDuration writes 60m)",
        ]
    );
    let tokens: Vec<&str> = durations(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(tokens, ["1m39s", "30s", "2m38s", "99s", "12m5s", "2m0s", "1h0m5s", "179m", "2d3h", "1m30s", "2m0s"]);
}

#[test]
fn every_golden_file_writes_durations_as_kubectl_does() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > 100, "the golden files are in {}", dir.display());
    let mut wrong = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for what in other_style(&text) {
            wrong.push(format!("{}: {what}", path.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(wrong.is_empty(), "durations not in kubectl's HumanDuration style:\n{}", wrong.join("\n"));
}

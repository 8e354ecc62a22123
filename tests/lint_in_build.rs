//! `scripts/test` runs clippy inside the test build: every `cargo test` there builds with
//! clippy-driver as the workspace's compiler and clippy's `-D warnings` (the `linted` array),
//! so each dependency is compiled once, by rustc, and each workspace crate once, linted as it
//! is built. A `cargo clippy` beside it would compile every dependency a second time (checked),
//! and a `cargo test` without the array would build the workspace's crates again, since cargo
//! rebuilds a crate whose wrapper changed; both cost minutes of a cold run and nothing fails.
//! This holds the script to it.

use std::path::Path;

fn script() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What comes before each `cargo SUBCOMMAND` the script runs as a command (at a line's start, or
/// after `&&`, `||`, `|`, `;`, `(` or the linted array), comments and messages aside.
fn cargo_runs<'a>(text: &'a str, subcommand: &str) -> Vec<&'a str> {
    let run = format!("cargo {subcommand} ");
    let starts_command = |before: &str| {
        let before = before.trim_end();
        before.is_empty() || ["&&", "||", "|", ";", "(", "$(", LINTED].iter().any(|end| before.ends_with(end))
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.match_indices(&run).map(move |(at, _)| &l[..at]))
        .filter(|before| starts_command(before))
        .collect()
}

const LINTED: &str = "\"${linted[@]}\"";

#[test]
fn every_cargo_test_of_the_script_builds_linted() {
    let text = script();
    let runs = cargo_runs(&text, "test");
    assert!(runs.len() >= 3, "scripts/test runs cargo test {} times: update this test: {runs:#?}", runs.len());
    let bare: Vec<&&str> = runs.iter().filter(|before| !before.trim_end().ends_with(LINTED)).collect();
    assert!(bare.is_empty(), "scripts/test runs cargo test without {LINTED} first after: {bare:#?}");
    assert!(
        text.lines().any(|l| l.contains(&format!("{LINTED} cargo test --locked --workspace --all-targets --no-run"))),
        "no linted build of every target of the workspace: clippy would miss some"
    );
    let clippy = cargo_runs(&text, "clippy");
    assert!(clippy.is_empty(), "scripts/test runs cargo clippy, which compiles every dependency again: {clippy:#?}");
}

#[test]
fn the_linted_build_is_clippy_with_warnings_denied() {
    let text = script();
    let line = text
        .lines()
        .find(|l| l.starts_with("linted=("))
        .expect("scripts/test no longer defines linted=(...) on one line: update this test");
    assert!(line.contains("RUSTC_WORKSPACE_WRAPPER=\"$clippy_driver\""), "{line}");
    assert!(line.contains("CLIPPY_ARGS=\"-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__\""), "{line}");
    assert!(text.contains("clippy_driver=$(rustc --print sysroot)/bin/clippy-driver"), "clippy-driver's path");
}

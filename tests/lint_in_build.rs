//! `scripts/test` runs clippy inside the test build: it exports clippy-driver as the workspace's
//! compiler and clippy's `-D warnings` (RUSTC_WORKSPACE_WRAPPER, CLIPPY_ARGS) for the whole run,
//! so each dependency is compiled once, by rustc, and each workspace crate once, linted as it
//! is built. A `cargo clippy` beside it would compile every dependency a second time (checked),
//! and a build that did not see the two (a test's own cargo build, tests/e2e_krew.rs) would
//! compile the workspace's crates again; both cost minutes and nothing fails. The release and
//! fuzz builds must not see the wrapper: the release is rustc's alone, the fuzz build has flags
//! of its own (for the repository's own crates, reusing the test build's dependencies, which
//! needs fuzz/Cargo.toml's dev profile to be the plugin's). This holds the scripts to it.

use std::path::Path;

fn repo_text(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The lines of a script that are not comments.
fn script_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.starts_with('#'))
}

#[test]
fn the_test_run_builds_linted_and_runs_no_cargo_clippy() {
    let text = repo_text("scripts/test");
    let lines: Vec<&str> = script_lines(&text).collect();
    let export = lines
        .iter()
        .position(|l| l.starts_with("export RUSTC_WORKSPACE_WRAPPER="))
        .expect("scripts/test no longer exports RUSTC_WORKSPACE_WRAPPER: update this test");
    assert_eq!(
        lines[export],
        "export RUSTC_WORKSPACE_WRAPPER=$clippy_driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    );
    assert_eq!(lines[export - 1], "if ! $coverage; then", "the export is for every run but --coverage's");
    assert!(lines.contains(&"clippy_driver=$(rustc --print sysroot)/bin/clippy-driver"), "clippy-driver's path");
    let first_cargo = lines.iter().position(|l| l.contains("cargo test ") && !l.contains("echo"));
    assert!(first_cargo.is_some_and(|at| at > export), "a cargo test before the export");
    assert!(
        lines.contains(&"cargo test --locked --workspace --all-targets --no-run"),
        "no linted build of every target of the workspace: clippy would miss some"
    );
    let clippy: Vec<&&str> = lines.iter().filter(|l| l.contains("cargo clippy")).collect();
    assert!(clippy.is_empty(), "scripts/test runs cargo clippy, which compiles every dependency again: {clippy:#?}");
}

#[test]
fn the_release_and_fuzz_builds_drop_the_wrapper() {
    for (script, build) in [("scripts/release", "\"${build[@]}\""), ("scripts/fuzz", "cargo build ")] {
        let text = repo_text(script);
        let runs: Vec<&str> = script_lines(&text).filter(|l| l.contains(build)).collect();
        assert!(!runs.is_empty(), "{script} has no line with {build}: update this test");
        for line in runs {
            assert!(line.contains("-u RUSTC_WORKSPACE_WRAPPER"), "{script} builds with the caller's wrapper: {line}");
        }
    }
}

/// The `[profile.dev...]` sections of a Cargo.toml, each as its header and its settings, comments
/// and blank lines left out.
fn dev_profile(text: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if line.starts_with('[') {
            inside = line.starts_with("[profile.dev]") || line.starts_with("[profile.dev.");
            if inside {
                sections.push((line.to_string(), Vec::new()));
            }
        } else if inside {
            sections.last_mut().expect("a section").1.push(line.to_string());
        }
    }
    sections
}

/// scripts/fuzz reuses the test build's compiled dependencies, which are the same files only
/// when the fuzz crate compiles them with the same profile: a drift would not fail, it would
/// compile every dependency again in the fuzz build (minutes of a cold run).
#[test]
fn the_fuzz_build_compiles_dependencies_with_the_test_builds_profile() {
    let ours = dev_profile(&repo_text("Cargo.toml"));
    assert!(ours.iter().any(|(h, _)| h == "[profile.dev]"), "no [profile.dev] in Cargo.toml: update this test");
    assert_eq!(
        dev_profile(&repo_text("fuzz/Cargo.toml")),
        ours,
        "fuzz/Cargo.toml's dev profile differs from Cargo.toml's"
    );
}

//! The Rust the project needs, said truly: `rust-version` in Cargo.toml is at least the highest
//! `rust-version` a package of Cargo.lock declares (with less, `cargo install` fails on a
//! dependency that the older toolchain refuses), and the README's prerequisites name it.

mod support;

use std::process::Command;

use support::repo;

/// A version as numbers, "1.89" and "1.89.0" alike.
fn numbers(v: &str) -> Vec<u64> {
    let mut n: Vec<u64> = v.split('.').map(|p| p.parse().unwrap_or_else(|_| panic!("not a version: {v:?}"))).collect();
    n.resize(3, 0);
    n
}

/// Cargo.toml's own `rust-version`.
fn ours() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let line = toml.lines().find(|l| l.starts_with("rust-version")).expect("Cargo.toml has no rust-version");
    line.split('"').nth(1).expect("rust-version = \"X.Y\"").to_string()
}

/// The highest `rust-version` among Cargo.lock's packages, with the packages that declare it.
///
/// Not `--offline`: cargo metadata reads the manifest of every package of Cargo.lock, those
/// only other platforms build too (windows-*, jni, core-foundation...), which a build on this
/// machine never downloads; on a fresh machine `--offline` failed on the first of them
/// (`failed to download combine v4.6.9`). `--locked` still refuses any change to Cargo.lock.
fn highest_locked() -> (String, Vec<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let mut best: Option<(Vec<u64>, String, Vec<String>)> = None;
    for p in meta["packages"].as_array().expect("packages") {
        if p["name"] == "kubectl-dispatch" {
            continue;
        }
        let Some(rv) = p["rust_version"].as_str() else { continue };
        let who = format!("{} {}", p["name"].as_str().unwrap_or("?"), p["version"].as_str().unwrap_or("?"));
        let n = numbers(rv);
        match &mut best {
            Some((b, _, names)) if *b == n => names.push(who),
            Some((b, _, _)) if *b > n => {}
            _ => best = Some((n, rv.to_string(), vec![who])),
        }
    }
    let (_, rv, names) = best.expect("some package of Cargo.lock declares a rust-version");
    (rv, names)
}

#[test]
fn rust_version_is_at_least_every_locked_packages() {
    let (needed, by) = highest_locked();
    let ours = ours();
    assert!(
        numbers(&ours) >= numbers(&needed),
        "Cargo.toml says rust-version = {ours:?}, but {} need Rust {needed}: raise it (and the README's prerequisites)",
        by.join(", ")
    );
}

#[test]
fn readme_names_the_rust_version() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let want = format!("Rust (cargo, {} or newer)", ours());
    assert!(readme.contains(&want), "README.md's prerequisites should say {want:?}");
}

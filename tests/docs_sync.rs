//! The README must not drift from the code: its usage blocks are the real `--help`, and its
//! examples are the golden files, and its RBAC is deploy/rbac.yaml. `UPDATE_README=1 cargo test --test docs_sync` rewrites them.

use std::process::Command;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

fn readme() -> String {
    std::fs::read_to_string(README).expect("README.md")
}

/// The byte range of the fenced block right after `<!-- marker -->`.
fn block_after(readme: &str, marker: &str) -> std::ops::Range<usize> {
    let start = readme.find(&format!("<!-- {marker} -->")).unwrap_or_else(|| panic!("README has no <!-- {marker} -->"));
    let fence = start + readme[start..].find("```").expect("a fenced block");
    let open = fence + readme[fence..].find('\n').expect("the fence's line") + 1;
    let close = open + readme[open..].find("```\n").expect("the block's end");
    open..close
}

/// Compares the block after `marker` with `want`, or rewrites it with UPDATE_README=1.
fn check(marker: &str, want: &str) {
    let mut text = readme();
    let range = block_after(&text, marker);
    if text[range.clone()] == *want {
        return;
    }
    if std::env::var_os("UPDATE_README").is_some() {
        text.replace_range(range, want);
        std::fs::write(README, text).expect("write README.md");
        return;
    }
    panic!(
        "README block {marker} differs; run UPDATE_README=1 cargo test --test docs_sync\n--- README\n{}\n--- want\n{want}",
        &text[range]
    );
}

#[test]
fn readme_usage_is_the_help() {
    for args in [
        vec!["--help"],
        vec!["gate", "--help"],
        vec!["lease", "--help"],
        vec!["workload", "--help"],
        vec!["doctor", "--help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-dispatch")).args(&args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        check(&format!("help:kubectl dispatch {}", args.join(" ")), &help);
    }
}

#[test]
fn readme_example_is_the_golden_file() {
    for file in ["gate-stale.txt", "workload-stale.txt", "doctor-all-well.txt"] {
        let golden = std::fs::read_to_string(format!("{}/tests/golden/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        check(&format!("golden:{file}"), &golden);
    }
}

#[test]
fn readme_rbac_is_deploy_rbac() {
    let rbac = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/rbac.yaml")).unwrap();
    check("file:deploy/rbac.yaml", &rbac);
}

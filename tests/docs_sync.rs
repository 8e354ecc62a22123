//! The README must not drift from the code: its usage blocks are the real `--help`, and its
//! example is the golden file.

use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md")
}

/// The fenced block right after `<!-- marker -->`.
fn block_after(readme: &str, marker: &str) -> String {
    let start = readme.find(&format!("<!-- {marker} -->")).unwrap_or_else(|| panic!("README has no <!-- {marker} -->"));
    let rest = &readme[start..];
    let open = rest.find("```text\n").expect("a ```text block") + "```text\n".len();
    let close = rest[open..].find("```\n").expect("the block's end");
    rest[open..open + close].to_string()
}

#[test]
fn readme_usage_is_the_help() {
    let readme = readme();
    for args in [vec!["--help"], vec!["gate", "--help"], vec!["lease", "--help"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-dispatch")).args(&args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        let marker = format!("help:kubectl dispatch {}", args.join(" "));
        assert_eq!(block_after(&readme, &marker), help, "README block {marker} differs from --help");
    }
}

#[test]
fn readme_example_is_the_golden_file() {
    let golden = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/gate-stale.txt")).unwrap();
    assert_eq!(block_after(&readme(), "golden:gate-stale.txt"), golden);
}

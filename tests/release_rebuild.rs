//! The committed krew/dispatch.yaml carries real hashes: its first line names the commit its
//! archives were built from (`# built from <commit>`); this checks that commit out in a
//! temporary folder, rebuilds the linux/amd64 archive with that commit's `scripts/release` and
//! compares its sha256 with the manifest's. The other platforms' archives are built by the
//! release workflow on their own runners (.github/workflows/release.yml); this machine cannot
//! rebuild them.
//!
//! The release tier: not part of `cargo test --all-targets` (Cargo.toml: `test = false`), run
//! by name, `cargo test --test release_rebuild`, on a machine with the toolchain the manifest's
//! second line names (docs/release.md): another rustc, C compiler or linker gives other bytes,
//! and the test fails, naming both. It needs the named commit in the repository (a full clone).

#[path = "support/release.rs"]
mod release;

use release::{build, checkout, git, host_platform, repo, temp_dir, toolchain};

#[test]
fn the_committed_manifest_is_rebuilt_from_the_commit_it_names() {
    assert_eq!(host_platform(), "linux-amd64", "this rebuilds the linux/amd64 archive: run it on linux/amd64");
    let text = std::fs::read_to_string(repo().join("krew/dispatch.yaml")).expect("read krew/dispatch.yaml");
    let first = text.lines().next().unwrap_or_default();
    let commit = first
        .strip_prefix("# built from ")
        .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| panic!("krew/dispatch.yaml does not start with `# built from <commit>`: {first:?}"));
    let built_with = text
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("# linux/amd64: "))
        .unwrap_or_else(|| panic!("krew/dispatch.yaml's second line does not name linux/amd64's toolchain"));
    let exists = std::process::Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .status()
        .expect("git");
    assert!(exists.success(), "krew/dispatch.yaml names {commit}, which this clone does not have (fetch all history)");
    let manifest: serde_json::Value = serde_saphyr::from_str(&text).expect("krew/dispatch.yaml is YAML");
    let wanted = manifest["spec"]["platforms"]
        .as_array()
        .expect("platforms")
        .iter()
        .find(|p| p["selector"]["matchLabels"]["os"] == "linux" && p["selector"]["matchLabels"]["arch"] == "amd64")
        .and_then(|p| p["sha256"].as_str())
        .expect("krew/dispatch.yaml has a linux/amd64 archive")
        .to_string();

    let work = temp_dir("rebuild");
    let dir = work.join("kubectl-dispatch");
    checkout(commit, &dir);
    let built = build(&dir, &work.join("dist"));
    eprintln!("{commit}: krew/dispatch.yaml says {wanted}, the rebuild gives {}", built.sha256);
    assert_eq!(
        built.sha256,
        wanted,
        "the linux/amd64 archive rebuilt from {commit} is not krew/dispatch.yaml's.\n  \
         manifest built with: {built_with}\n  rebuilt with:        {}",
        toolchain()
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), commit);
    let _ = std::fs::remove_dir_all(&work);
}

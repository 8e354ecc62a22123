//! The release build is reproducible: `scripts/release` run in two checkouts of HEAD, at two
//! different folders and at two different times (one build after the other), gives the same
//! binary and the same archive, byte for byte, and neither names a folder of this machine.
//! The first build is `release::head_build()`, the one `tests/e2e_krew.rs` installs through
//! Krew (made by `tests/release_head.rs`, which also holds the sizes docs/install.md states to
//! it, or by whichever test asks first; kept for this commit); the second is made here, always,
//! in another checkout at another folder.
//!
//! What it shares, and so does not prove: both builds run on this machine with one toolchain,
//! one CARGO_HOME and one cargo target dir (`~/.cache/kubectl-dispatch/release-rebuild`), so the dependencies are
//! compiled once and linked into both; what each checkout compiles again is the plugin's own
//! crates, and each build links and optimizes the whole program again (fat LTO). It proves that
//! the checkout's folder and the time of the build do not reach the binary or the archive.
//! That another CARGO_HOME, target dir or rustup home give the same bytes rests on the
//! --remap-path-prefix flags, checked here only by looking for the paths in the binary;
//! `tests/release_rebuild.rs` compares a rebuild with the archive krew/dispatch.yaml names,
//! built elsewhere at another time. HEAD is the commit built, not the working tree.

#[path = "support/release.rs"]
mod release;

use release::{build, checkout, git, head_build, host_platform, repo, target_dir, temp_dir};

#[test]
fn two_checkouts_of_head_in_two_folders_build_the_same_archive() {
    let head = git(&repo(), &["rev-parse", "HEAD"]);
    let work = temp_dir("reproducible");
    let head_build = head_build();
    let (first, one, dist_one) = (head_build.built, head_build.checkout, head_build.dist);
    let two = work.join("two/somewhere/deeper/kd");
    assert_ne!(one, two);
    // The second checkout is made after the first build: other files, other times.
    checkout(&head, &two);
    let second = build(&two, &work.join("dist-two"));

    let platform = host_platform();
    eprintln!("{head}: {platform} archive sha256 {} and {}", first.sha256, second.sha256);
    assert!(first.binary == second.binary, "the binaries differ between {} and {}", one.display(), two.display());
    assert_eq!(first.sha256, second.sha256, "the archives differ");
    assert!(first.archive == second.archive);
    assert_eq!(first.manifest, second.manifest);
    assert!(first.manifest.starts_with(&format!("# built from {head}\n")), "{}", first.manifest);

    // No folder of this machine in the binary: the checkouts, the target dir, CARGO_HOME, the
    // toolchain's.
    let home = std::env::var("HOME").expect("HOME");
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    let sysroot = release::ok(std::process::Command::new("rustc").args(["--print", "sysroot"])).trim().to_string();
    for path in [
        one.display().to_string(),
        two.display().to_string(),
        target_dir().display().to_string(),
        cargo_home,
        sysroot,
        work.display().to_string(),
    ] {
        let found = first.binary.windows(path.len()).any(|w| w == path.as_bytes());
        assert!(!found, "the binary names {path}");
    }

    // The archive's entries carry the commit's time, not the build's.
    let epoch = git(&two, &["log", "-1", "--format=%ct", "--", ".", ":(exclude)krew"]);
    let listing = release::ok(
        std::process::Command::new("tar")
            .args(["--list", "--verbose", "--full-time", "--gzip", "--file"])
            .arg(dist_one.join(format!("kubectl-dispatch-{platform}.tar.gz")))
            .env("TZ", "UTC"),
    );
    let when = release::ok(std::process::Command::new("date").args(["-u", "-d", &format!("@{epoch}"), "+%F %T"]));
    assert!(!when.trim().is_empty(), "date -d @{epoch}");
    assert_eq!(listing.lines().count(), 2, "{listing}");
    for line in listing.lines() {
        assert!(line.contains(when.trim()) && line.contains(" 0/0 "), "{line}: want mtime {when} and 0/0");
    }
    let _ = std::fs::remove_dir_all(&work);
}

//! Release builds of a commit in a checkout of its own, for `tests/release_reproducible.rs` and
//! `tests/release_rebuild.rs`: a clone of this repository at a temporary folder, the commit
//! checked out, and `scripts/release` run there, as anyone rebuilding an archive would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target dir the release tests build in, shared by their builds and kept between runs
/// beside the harness's other cached builds (`~/.cache/kubectl-dispatch/release-rebuild`, or
/// `DISPATCH_RELEASE_TARGET`), so a clean clone does not build every dependency in release
/// again: its compiled dependencies are built once a machine; the workspace's own crates are
/// compiled again in each checkout (`build` cleans them first). Not the repository's own target
/// dir, whose `release/kubectl-dispatch` other tests pack (`tests/e2e_krew.rs`).
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DISPATCH_RELEASE_TARGET") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME for the release builds' cache");
    cache.join("kubectl-dispatch").join("release-rebuild")
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dispatch-release-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs the command, returns its stdout; panics with its stderr if it fails.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    ok(Command::new("git").arg("-C").arg(dir).args(args)).trim().to_string()
}

/// COMMIT checked out at DIR, in a clone that borrows this repository's objects (`--shared`):
/// a checkout of its own, leaving this repository's worktrees and refs alone.
pub fn checkout(commit: &str, dir: &Path) {
    std::fs::create_dir_all(dir.parent().expect("parent")).expect("mkdir");
    ok(Command::new("git").args(["clone", "--quiet", "--shared", "--no-checkout"]).arg(repo()).arg(dir));
    git(dir, &["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit]);
}

pub struct Built {
    pub archive: Vec<u8>,
    pub sha256: String,
    pub binary: Vec<u8>,
    /// krew/dispatch.yaml as scripts/release rendered it.
    pub manifest: String,
    pub stderr: String,
}

/// The sizes docs/install.md states ("The release binary is about 7.5 MB ...; a Krew archive is
/// about 3.3 MB"), held against a release build: each within a tenth of what was built (MB =
/// 10^6 bytes), so a figure typed by hand cannot drift from the binary. The failure names the
/// figure to write.
pub fn readme_sizes_hold(built: &Built) {
    let readme = std::fs::read_to_string(repo().join("docs/install.md")).expect("read docs/install.md");
    let stated = |before: &str| -> f64 {
        let at = readme
            .find(before)
            .unwrap_or_else(|| panic!("docs/install.md no longer says {before:?}...: update this check"));
        let rest = &readme[at + before.len()..];
        let number = rest.split_once(" MB").map(|(n, _)| n).unwrap_or_default();
        number
            .parse()
            .unwrap_or_else(|_| panic!("docs/install.md: {before:?} is followed by {number:?}, not a number of MB"))
    };
    for (what, before, bytes) in [
        ("release binary", "The release binary is about ", built.binary.len()),
        ("Krew archive", "a Krew archive is about ", built.archive.len()),
    ] {
        let (figure, mb) = (stated(before), bytes as f64 / 1e6);
        assert!(
            (mb - figure).abs() <= figure / 10.0,
            "docs/install.md says the {what} is about {figure} MB; this release build's is {bytes} bytes: write about {mb:.1} MB"
        );
    }
}

/// `scripts/release --out OUT` in the checkout, in `target_dir()`, after `cargo clean` of the
/// workspace's own crates there, so that they are compiled from this checkout's folder (the
/// build would otherwise be free to reuse the last checkout's); this machine's archive.
pub fn build(checkout: &Path, out: &Path) -> Built {
    let target = target_dir();
    ok(Command::new("cargo")
        .args(["clean", "--quiet", "--release", "--package", "kubectl-dispatch", "--target-dir"])
        .arg(&target)
        .current_dir(checkout));
    let run = Command::new("nice")
        .args(["-n", "10"])
        .arg(checkout.join("scripts/release"))
        .arg("--out")
        .arg(out)
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(checkout)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/release");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "scripts/release in {} failed:\n{stderr}", checkout.display());
    assert!(
        stderr.contains("Compiling kubectl-dispatch v"),
        "the build in {} did not compile the plugin's own crates:\n{stderr}",
        checkout.display()
    );
    let name = format!("kubectl-dispatch-{}.tar.gz", host_platform());
    let archive = std::fs::read(out.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let sha256 = sha256(&out.join(&name));
    let binary = std::fs::read(target.join("release/kubectl-dispatch")).expect("the binary");
    let manifest = std::fs::read_to_string(out.join("krew/dispatch.yaml")).expect("the manifest");
    Built { archive, sha256, binary, manifest, stderr }
}

/// sha256sum's (or `shasum -a 256`'s) lower-case hex of the file.
pub fn sha256(file: &Path) -> String {
    let out = match Command::new("sha256sum").arg(file).output() {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).expect("utf-8"),
        _ => ok(Command::new("shasum").args(["-a", "256"]).arg(file)),
    };
    out.split_whitespace().next().expect("sha256sum's answer").to_string()
}

/// This machine's platform, as scripts/release names it (os-arch): the archive it builds here.
pub fn host_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{arch}")
}

/// What built it, for a message: rustc's version and the C compiler that links.
pub fn toolchain() -> String {
    let rustc = ok(Command::new("rustc").arg("-V")).trim().to_string();
    let cc = Command::new("cc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "no cc".into());
    format!("{rustc}, linked by {cc}")
}

/// The release build of HEAD that `tests/e2e_krew.rs` packs and installs and
/// `tests/release_reproducible.rs` takes as its first build: made once per commit and
/// toolchain, in a checkout of its own (`checkout`, removed afterwards), and kept beside the
/// release target dir (`release-head/`; older commits' are removed), so a test run builds the
/// release twice (this one, and the reproducibility test's second checkout), not three times.
/// `tests/release_head.rs` makes it, and `scripts/test` runs that target in the background as
/// soon as the test build is done, so the build fills the cores the end-to-end tests leave idle.
pub struct HeadBuild {
    pub built: Built,
    /// Where HEAD was checked out for the build (gone now; its path must not be in the binary).
    pub checkout: PathBuf,
    /// scripts/release's --out: the archive and krew/dispatch.yaml.
    pub dist: PathBuf,
    /// Whether this call built it (false: an earlier test of this commit did).
    pub fresh: bool,
}

/// HEAD's release build, made by the first caller under a lock on `release-head/lock` (a file
/// lock, so it holds between processes and goes with a process that dies): a second caller,
/// in this process or another, waits for that build and reads it.
pub fn head_build() -> HeadBuild {
    let head = git(&repo(), &["rev-parse", "HEAD"]);
    let key = {
        let rustc = ok(Command::new("rustc").arg("-V"));
        let digest = ok(Command::new("sh").args(["-c", "printf %s \"$1\" | sha256sum", "sh", &rustc]));
        format!("{head}-{}", &digest[..12])
    };
    let memos = target_dir().with_file_name("release-head");
    std::fs::create_dir_all(&memos).expect("mkdir release-head");
    let lock = std::fs::File::create(memos.join("lock")).expect("create release-head/lock");
    lock.lock().expect("lock release-head/lock");
    let memo = memos.join(&key);
    let mut fresh = false;
    if !memo.join("done").is_file() {
        let tmp = memos.join(format!("{key}.tmp"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("mkdir release-head");
        let work = temp_dir("head");
        let checkout_dir = work.join("one/kubectl-dispatch");
        checkout(&head, &checkout_dir);
        let built = build(&checkout_dir, &tmp.join("dist"));
        std::fs::write(tmp.join("kubectl-dispatch"), &built.binary).expect("keep the binary");
        std::fs::write(tmp.join("stderr"), &built.stderr).expect("keep the build's stderr");
        std::fs::write(tmp.join("checkout"), checkout_dir.display().to_string()).expect("keep the checkout's path");
        std::fs::write(tmp.join("done"), "").expect("mark it done");
        let _ = std::fs::remove_dir_all(&work);
        // Another commit's builds are of no more use.
        for old in std::fs::read_dir(&memos).expect("read release-head").flatten() {
            if old.path() != tmp && old.file_name() != "lock" {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
        std::fs::rename(&tmp, &memo).expect("keep the build");
        fresh = true;
    }
    let dist = memo.join("dist");
    let name = format!("kubectl-dispatch-{}.tar.gz", host_platform());
    let built = Built {
        archive: std::fs::read(dist.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}")),
        sha256: sha256(&dist.join(&name)),
        binary: std::fs::read(memo.join("kubectl-dispatch")).expect("the kept binary"),
        manifest: std::fs::read_to_string(dist.join("krew/dispatch.yaml")).expect("the kept manifest"),
        stderr: std::fs::read_to_string(memo.join("stderr")).expect("the kept stderr"),
    };
    let checkout = PathBuf::from(std::fs::read_to_string(memo.join("checkout")).expect("the checkout's path"));
    HeadBuild { built, checkout, dist, fresh }
}

//! The Krew plugin manifest template (`plugin-manifest/dispatch.yaml`), the release command
//! (`scripts/release`, rendering through `scripts/krew-manifest`) and the committed manifest
//! (`krew/dispatch.yaml`): the template agrees with Cargo.toml, archives, sums and the rendered
//! manifest are reproducible, and the committed manifest is the template rendered for Cargo.toml's
//! version. No cluster: the real Krew client and its validator run on a freshly rendered manifest
//! and freshly built archives in `tests/e2e_krew.rs`.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{repo, temp_dir};

const PLATFORMS: [(&str, &str); 5] =
    [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"), ("windows", "amd64")];

fn template() -> String {
    std::fs::read_to_string(repo().join("plugin-manifest/dispatch.yaml")).expect("read the template")
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

fn ok(program: &Path, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(out.status.success(), "{} {args:?} failed:\n{}", program.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A stand-in binary: packing and rendering do not care what the bytes are.
fn fake_binary(dir: &Path) -> String {
    let path = dir.join("fake-kubectl-dispatch");
    std::fs::write(&path, b"#!/bin/sh\necho fake\n").expect("write");
    path.display().to_string()
}

/// `scripts/release --out OUT --binary os/arch=BIN...` for the given platforms.
fn release(out: &Path, binary: &str, platforms: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut args = vec!["--out".to_string(), out.display().to_string()];
    for (os, arch) in platforms {
        args.push("--binary".into());
        args.push(format!("{os}/{arch}={binary}"));
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&repo().join("scripts/release"), &args)
}

fn yaml(text: &str) -> serde_json::Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("not YAML ({e}):\n{text}"))
}

fn version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

#[test]
fn the_template_agrees_with_cargo_toml() {
    let text = template();
    assert!(text.contains("\n  version: {{ .TagName }}\n"), "the version is the release tag");
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    assert!(cargo.contains("[[bin]]\nname = \"kubectl-dispatch\"\n"), "Cargo.toml's binary is kubectl-dispatch");

    // Render it for all five platforms with stand-in archives, then read it as YAML.
    let manifest = yaml(&render_all("template"));

    assert_eq!(manifest["apiVersion"], "krew.googlecontainertools.github.com/v1alpha2");
    assert_eq!(manifest["kind"], "Plugin");
    // kubectl runs `kubectl dispatch` as the binary kubectl-<metadata.name>.
    assert_eq!(manifest["metadata"]["name"], "dispatch");
    let spec = &manifest["spec"];
    assert_eq!(spec["version"], version().as_str());
    assert_eq!(spec["homepage"], env!("CARGO_PKG_REPOSITORY"));
    let short = spec["shortDescription"].as_str().expect("shortDescription");
    assert!(!short.is_empty() && short.chars().count() <= 50 && !short.contains('\n'), "{short:?}");
    assert!(short.contains("Kueue"), "the name alone is generic: say what it is for: {short:?}");
    assert!(spec["description"].as_str().is_some_and(|d| d.lines().all(|l| l.len() <= 80)));
    let caveats = spec["caveats"].as_str().expect("caveats");
    for needed in ["Kueue must be installed", "clusterqueues", "admissionchecks", "localqueues", "workloads", "leases"]
    {
        assert!(caveats.contains(needed) || caveats.contains(&needed.replace("leases", "Lease")), "{needed}");
    }

    let platforms = spec["platforms"].as_array().expect("platforms");
    let mut seen = Vec::new();
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (labels["os"].as_str().expect("os"), labels["arch"].as_str().expect("arch"));
        seen.push((os, arch));
        let exe = if os == "windows" { "kubectl-dispatch.exe" } else { "kubectl-dispatch" };
        assert_eq!(p["bin"], exe, "{os}/{arch}");
        assert!(p.get("files").is_none(), "the archive is flat: no files: section");
        let name = format!("kubectl-dispatch-{os}-{arch}.tar.gz");
        let uri = format!("{}/releases/download/{}/{name}", env!("CARGO_PKG_REPOSITORY"), version());
        assert_eq!(p["uri"], uri.as_str());
        let sha = p["sha256"].as_str().expect("sha256");
        assert!(is_sha256(sha), "{sha}");
    }
    assert_eq!(seen, PLATFORMS);
}

/// The template rendered by `scripts/krew-manifest` for Cargo.toml's version and all five
/// platforms, with stand-in archives.
fn render_all(tag: &str) -> String {
    render(tag, &PLATFORMS)
}

/// The template rendered for Cargo.toml's version and these platforms, with stand-in archives.
fn render(tag: &str, platforms: &[(&str, &str)]) -> String {
    let dir = temp_dir(tag);
    let mut archives = Vec::new();
    for &(os, arch) in platforms {
        let path = dir.join(format!("kubectl-dispatch-{os}-{arch}.tar.gz"));
        std::fs::write(&path, format!("{os}-{arch}")).expect("write");
        archives.push(path.display().to_string());
    }
    let mut args = vec!["--version".to_string(), version()];
    args.extend(archives);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = ok(&repo().join("scripts/krew-manifest"), &args);
    let _ = std::fs::remove_dir_all(dir);
    text
}

/// A lower-case hex sha256.
fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The text with each `sha256:` value replaced by `<sha256>`, and the values taken out.
fn without_hashes(text: &str) -> (String, Vec<String>) {
    let mut hashes = Vec::new();
    let mut out = String::new();
    for line in text.lines() {
        match line.split_once("sha256: ") {
            Some((indent, hash)) if indent.trim().is_empty() => {
                hashes.push(hash.to_string());
                out += &format!("{indent}sha256: <sha256>\n");
            }
            _ => out += &format!("{line}\n"),
        }
    }
    (out, hashes)
}

/// `krew/dispatch.yaml` is what krew-index receives, with real hashes only: `# built from
/// <commit>` (a commit of this repository, with Cargo.toml's version), then the toolchain that
/// built linux/amd64, then the template rendered for the platforms whose archives were built:
/// linux/amd64 by `scripts/release` on a linux/amd64 machine (`tests/release_rebuild.rs`
/// rebuilds it from the commit and compares the sha256), the others only by the release
/// workflow on their own runners. Everything but the hashes is compared with the template
/// rendered here for those platforms; no two archives share a hash (stand-ins would). krew's
/// validator runs on a fresh rendering against fresh archives (`tests/e2e_krew.rs`).
#[test]
fn the_committed_krew_manifest_is_the_template_rendered_for_this_version() {
    let committed = std::fs::read_to_string(repo().join("krew/dispatch.yaml")).expect("read krew/dispatch.yaml");
    let mut lines = committed.lines();
    let first = lines.next().unwrap_or_default();
    let commit = first.strip_prefix("# built from ").unwrap_or_else(|| {
        panic!("krew/dispatch.yaml must start with `# built from <commit>` (scripts/release writes it): {first:?}")
    });
    assert!(
        commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "krew/dispatch.yaml must be built from a commit, not {commit:?} (commit first, then run          `scripts/release --krew-dir krew`)"
    );
    let second = lines.next().unwrap_or_default();
    assert!(
        second.starts_with("# linux/amd64: rustc ") && second.contains(" linked by "),
        "the second line names the toolchain that built linux/amd64: {second:?}"
    );
    let named = Command::new("git").arg("-C").arg(repo()).args(["show", &format!("{commit}:Cargo.toml")]).output();
    let named = named.expect("git");
    assert!(named.status.success(), "krew/dispatch.yaml names {commit}, not a commit here (a full clone has it)");
    let cargo_toml = String::from_utf8_lossy(&named.stdout);
    assert!(
        cargo_toml.contains(&format!("\nversion = \"{}\"\n", env!("CARGO_PKG_VERSION"))),
        "{commit} is not version {}",
        env!("CARGO_PKG_VERSION")
    );
    let body: String = committed.lines().skip(2).map(|l| format!("{l}\n")).collect();

    // The same, read as Krew reads it.
    let manifest = yaml(&committed);
    assert_eq!(manifest["spec"]["version"], version().as_str());
    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    let seen: Vec<(&str, &str)> = platforms
        .iter()
        .map(|p| {
            let labels = &p["selector"]["matchLabels"];
            (labels["os"].as_str().expect("os"), labels["arch"].as_str().expect("arch"))
        })
        .collect();
    assert!(seen.contains(&("linux", "amd64")), "linux/amd64, the archive anyone can rebuild here: {seen:?}");
    let in_order: Vec<(&str, &str)> = PLATFORMS.iter().copied().filter(|p| seen.contains(p)).collect();
    assert_eq!(seen, in_order, "the template's platforms, in its order");

    let (committed_text, committed_hashes) = without_hashes(&body);
    let (fresh_text, _) = without_hashes(&render("committed", &seen));
    assert_eq!(
        committed_text,
        fresh_text,
        "krew/dispatch.yaml is not the template rendered for {} and {seen:?}: render it with \
         `scripts/release --krew-dir krew`",
        version()
    );
    assert_eq!(committed_hashes.len(), seen.len(), "one sha256 per platform");
    for (i, hash) in committed_hashes.iter().enumerate() {
        assert!(is_sha256(hash), "krew/dispatch.yaml: {hash:?} is not a lower-case sha256");
        assert!(!committed_hashes[..i].contains(hash), "two archives with one sha256 {hash}: a stand-in");
    }
    for (p, (os, arch)) in platforms.iter().zip(&seen) {
        let uri = format!(
            "{}/releases/download/{}/kubectl-dispatch-{os}-{arch}.tar.gz",
            env!("CARGO_PKG_REPOSITORY"),
            version()
        );
        assert_eq!(p["uri"], uri.as_str());
        assert_eq!(p["bin"], if *os == "windows" { "kubectl-dispatch.exe" } else { "kubectl-dispatch" });
    }
}

#[test]
fn the_release_is_reproducible_and_lists_only_what_it_packed() {
    let dir = temp_dir("release");
    let binary = fake_binary(&dir);
    let (a, b) = (dir.join("a"), dir.join("b"));
    // The same inputs, in another order, give the same bytes.
    let first = release(&a, &binary, &PLATFORMS, &[]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let reversed: Vec<_> = PLATFORMS.iter().rev().copied().collect();
    let second = release(&b, &binary, &reversed, &[]);
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let mut files = Vec::new();
    for (os, arch) in PLATFORMS {
        files.push(format!("kubectl-dispatch-{os}-{arch}.tar.gz"));
        files.push(format!("kubectl-dispatch-{os}-{arch}.tar.gz.sha256"));
    }
    files.extend(["SHA256SUMS".to_string(), "krew/dispatch.yaml".to_string()]);
    for f in &files {
        let (x, y) = (std::fs::read(a.join(f)), std::fs::read(b.join(f)));
        assert!(x.is_ok() && x.ok() == y.ok(), "{f} differs between two releases of the same binary");
    }

    // Flat archives: the executable and LICENSE at the root, owned by 0:0.
    let listing =
        ok(Path::new("tar"), &["-tvzf", &a.join("kubectl-dispatch-linux-amd64.tar.gz").display().to_string()]);
    let entries: Vec<Vec<&str>> = listing.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(entries.len(), 2, "{listing}");
    assert_eq!((entries[0][0], entries[0][1], entries[0][5]), ("-rw-r--r--", "0/0", "LICENSE"), "{listing}");
    assert_eq!((entries[1][0], entries[1][1], entries[1][5]), ("-rwxr-xr-x", "0/0", "kubectl-dispatch"), "{listing}");
    let windows =
        ok(Path::new("tar"), &["-tzf", &a.join("kubectl-dispatch-windows-amd64.tar.gz").display().to_string()]);
    assert_eq!(windows, "LICENSE\nkubectl-dispatch.exe\n");

    // Lower-case sums, and the manifest's sha256 is the archive's.
    let sums = std::fs::read_to_string(a.join("SHA256SUMS")).expect("SHA256SUMS");
    assert_eq!(sums.lines().count(), 5, "{sums}");
    let manifest = yaml(&std::fs::read_to_string(a.join("krew/dispatch.yaml")).expect("manifest"));
    assert_eq!(manifest["spec"]["version"], version().as_str());
    for p in manifest["spec"]["platforms"].as_array().expect("platforms") {
        let name = p["uri"].as_str().expect("uri").rsplit('/').next().expect("file name").to_string();
        let sha = p["sha256"].as_str().expect("sha256");
        assert!(sums.contains(&format!("{sha}  {name}\n")), "{name}: {sha} not in\n{sums}");
        assert_eq!(std::fs::read_to_string(a.join(format!("{name}.sha256"))).expect("sum"), format!("{sha}  {name}\n"));
        assert_eq!(sha, sha.to_lowercase());
    }

    // Only the platforms packed, and URIs from --uri-base.
    let c = dir.join("c");
    let some =
        release(&c, &binary, &[("darwin", "arm64"), ("linux", "amd64")], &["--uri-base", "http://127.0.0.1:9/x/"]);
    assert!(some.status.success(), "{}", String::from_utf8_lossy(&some.stderr));
    let manifest = yaml(&std::fs::read_to_string(c.join("krew/dispatch.yaml")).expect("manifest"));
    let uris: Vec<&str> = manifest["spec"]["platforms"]
        .as_array()
        .expect("platforms")
        .iter()
        .map(|p| p["uri"].as_str().expect("uri"))
        .collect();
    assert_eq!(
        uris,
        [
            "http://127.0.0.1:9/x/kubectl-dispatch-linux-amd64.tar.gz",
            "http://127.0.0.1:9/x/kubectl-dispatch-darwin-arm64.tar.gz"
        ]
    );

    // --krew-dir: the same manifest, for the platforms packed, written only with the release's URIs.
    let krew = dir.join("krew");
    let full = release(&dir.join("d"), &binary, &PLATFORMS[..1], &["--krew-dir", &krew.display().to_string()]);
    assert!(full.status.success(), "{}", String::from_utf8_lossy(&full.stderr));
    assert_eq!(
        std::fs::read(krew.join("dispatch.yaml")).ok(),
        std::fs::read(dir.join("d/krew/dispatch.yaml")).ok(),
        "--krew-dir gets the manifest the release rendered"
    );
    // It names the commit: HEAD of the checkout, and whether tracked files differ from it.
    let head = ok(Path::new("git"), &["-C", &repo().display().to_string(), "rev-parse", "HEAD"]);
    let rendered = std::fs::read_to_string(krew.join("dispatch.yaml")).expect("manifest");
    assert!(rendered.starts_with(&format!("# built from {}", head.trim())), "{rendered}");
    assert!(!rendered.contains("rustc"), "a binary built elsewhere: no toolchain named:\n{rendered}");
    let other = dir.join("other-krew");
    let krew_arg = other.display().to_string();
    let out =
        release(&dir.join("e"), &binary, &PLATFORMS, &["--krew-dir", &krew_arg, "--uri-base", "http://127.0.0.1:9/x"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--krew-dir wants"));
    assert!(!other.exists(), "a refused --krew-dir writes nothing");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_release_refuses_a_version_other_than_cargo_tomls() {
    let dir = temp_dir("version");
    let binary = fake_binary(&dir);
    let out = release(&dir.join("out"), &binary, &[("linux", "amd64")], &["--version", "v99.0.0"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("differs from Cargo.toml's version {}", env!("CARGO_PKG_VERSION"))), "{stderr}");
    let out = run(&repo().join("scripts/krew-manifest"), &["--version", "1.0", "x.tar.gz"]);
    assert_eq!(out.status.code(), Some(2), "krew wants a v-prefixed semver version");
    let _ = std::fs::remove_dir_all(dir);
}

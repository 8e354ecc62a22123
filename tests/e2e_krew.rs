//! Installing through Krew for real, and kubectl's plugin completion, end to end: the release
//! command's archives and manifest, krew's own validator (with its install step), `kubectl krew
//! install --manifest --archive` into a temporary KREW_ROOT, the installed plugin run through
//! kubectl against the test cluster, `kubectl krew uninstall`; Krew as a user meets it, from a
//! custom index (`index add`, `install INDEX/dispatch`, `upgrade` to a second version published
//! there, `uninstall`); and `kubectl __complete dispatch ...` answered by this binary as
//! `kubectl_complete-dispatch`.
//!
//! Krew and validate-krew-manifest are built from the pinned Go module in tools/krew into the
//! cache (tools/ensure). Nothing here reaches beyond 127.0.0.1.

mod support;

#[path = "support/release.rs"]
mod release;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use support::fixtures::{self, Scenario};
use support::kubectls::each_kubectl;
use support::{Cluster, Run, repo, temp_dir, unique};

const PLATFORMS: [(&str, &str); 5] =
    [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"), ("windows", "amd64")];

fn output(mut cmd: Command) -> Run {
    let out: Output = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    Run::from(out)
}

fn must(what: &str, run: Run) -> Run {
    assert_eq!(run.code, 0, "{what} failed\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    run
}

/// The caller's PATH without any folder that holds a kubectl-dispatch (the cargo target dir, a
/// `cargo install`), so the only plugin kubectl can find is the one a test puts first.
fn clean_path() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| {
            ["kubectl-dispatch", "kubectl_complete-dispatch", "kubectl-krew"]
                .iter()
                .all(|f| std::fs::symlink_metadata(d.join(f)).is_err())
        })
        .collect();
    std::env::join_paths(kept).expect("PATH").into_string().expect("PATH is UTF-8")
}

fn with_path(first: &[&Path]) -> String {
    let mut dirs: Vec<String> = first.iter().map(|d| d.display().to_string()).collect();
    dirs.push(clean_path());
    dirs.join(":")
}

/// Builds (once, into the cache) and returns the pinned krew tools.
fn krew_tools() -> (PathBuf, PathBuf) {
    let run = must(
        "tools/ensure",
        output({
            let mut c = Command::new(repo().join("tools/ensure"));
            c.args(["krew", "validate-krew-manifest"]);
            c
        }),
    );
    let paths: Vec<PathBuf> = run.stdout.lines().map(PathBuf::from).collect();
    assert_eq!(paths.len(), 2, "{}", run.stdout);
    (paths[0].clone(), paths[1].clone())
}

/// This machine's Krew platform, as the release command names it.
fn host_platform() -> (&'static str, &'static str) {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    (os, arch)
}

/// Serves the files of `dir` on 127.0.0.1 over plain HTTP/1.1, one request per connection,
/// from a thread that lives as long as the test binary. Returns the base URL and a count of
/// the files served.
fn serve(dir: PathBuf) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" || header == "\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let name = path.trim_start_matches('/');
            let body = (!name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.'))
                .then(|| std::fs::read(dir.join(name)).ok())
                .flatten();
            let _ = match body {
                Some(body) => {
                    count.fetch_add(1, Ordering::SeqCst);
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .and_then(|()| stream.write_all(&body))
                }
                None => write!(stream, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            };
        }
    });
    (base, served)
}

#[test]
fn krew_validates_installs_runs_and_uninstalls_the_release() {
    let c = Cluster::shared();
    let (krew, validate) = krew_tools();
    let work = temp_dir("krew");
    // kubectl finds krew only as kubectl-krew on PATH.
    let krew_bin = work.join("krew-bin");
    std::fs::create_dir_all(&krew_bin).expect("mkdir");
    std::os::unix::fs::symlink(&krew, krew_bin.join("kubectl-krew")).expect("symlink kubectl-krew");

    // The release command, as a release is made: build this machine's binary, pack it, render.
    // It is HEAD's release build in a checkout of its own, the one tests/release_reproducible.rs
    // compares with a second (release::head_build: made once per commit, by tests/release_head.rs
    // in scripts/test's background, or by whichever test asks first; the others wait for it on
    // its lock), so the suite builds the release twice rather than three times.
    let head = release::head_build();
    eprintln!("the release build of HEAD: {}", if head.fresh { "built now" } else { "kept from an earlier test" });
    let dist = head.dist.clone();
    let (os, arch) = host_platform();
    let archive = dist.join(format!("kubectl-dispatch-{os}-{arch}.tar.gz"));
    let manifest = dist.join("krew/dispatch.yaml");
    assert!(archive.is_file() && manifest.is_file(), "{}", head.built.stderr);
    let rendered = std::fs::read_to_string(&manifest).expect("manifest");
    assert_eq!(rendered.matches("- selector:").count(), 1, "only the platform built:\n{rendered}");

    // krew's own validation downloads and installs every platform of the manifest (KREW_OS,
    // KREW_ARCH), so every platform needs an archive it can fetch. This machine builds only its
    // own binary: the other four archives pack that same binary under the other platforms'
    // names, purely so the validator can download, check and extract them (it never runs
    // them). The release workflow (.github/workflows/release.yml) builds the real ones. The
    // validator gets this fresh rendering, never the committed krew/dispatch.yaml, whose hashes
    // are the last release run's archives (tests/krew_manifest.rs checks the rest of it).
    let binary = work.join("release-binary/kubectl-dispatch");
    std::fs::create_dir_all(binary.parent().expect("folder")).expect("mkdir");
    std::fs::write(&binary, &head.built.binary).expect("the release binary");
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let served_dir = work.join("served");
    std::fs::create_dir_all(&served_dir).expect("mkdir");
    let (base, served) = serve(served_dir.clone());
    let mut cmd = Command::new(repo().join("scripts/release"));
    cmd.arg("--out").arg(&served_dir).args(["--uri-base", &base]);
    for (os, arch) in PLATFORMS {
        cmd.arg("--binary").arg(format!("{os}/{arch}={}", binary.display()));
    }
    must("scripts/release --binary ...", output(cmd));
    let host_archive = format!("kubectl-dispatch-{os}-{arch}.tar.gz");
    assert_eq!(
        std::fs::read(served_dir.join(&host_archive)).ok(),
        std::fs::read(&archive).ok(),
        "packing the same binary again gives the same archive"
    );
    let served_manifest = served_dir.join("krew/dispatch.yaml");
    let text = std::fs::read_to_string(&served_manifest).expect("manifest");
    assert_eq!(text.matches(&format!("uri: {base}/")).count(), 5, "{text}");
    let mut cmd = Command::new(&validate);
    cmd.arg("-manifest").arg(&served_manifest).env("PATH", with_path(&[&krew_bin]));
    let validated = must("validate-krew-manifest", output(cmd));
    assert!(validated.stderr.contains("all 5 spec.platforms installed fine"), "{}", validated.stderr);
    assert!(served.load(Ordering::SeqCst) >= 5, "the validator downloaded every archive from {base}");

    // `kubectl krew install --manifest --archive` into a temporary KREW_ROOT. krew list and
    // uninstall need an index folder that is a git repository.
    let root = work.join("krew-root");
    let index = root.join("index/default");
    std::fs::create_dir_all(&index).expect("mkdir");
    must(
        "git init",
        output({
            let mut g = Command::new("git");
            g.args(["init", "-q"]).arg(&index);
            g
        }),
    );
    let root_bin = root.join("bin");
    let path = with_path(&[&root_bin, &krew_bin]);
    let kubectl = |args: &[&str]| {
        let mut cmd = c.command("kubectl", args);
        cmd.env("PATH", &path).env("KREW_ROOT", &root).env("KREW_NO_UPGRADE_CHECK", "1");
        output(cmd)
    };
    let manifest_arg = format!("--manifest={}", manifest.display());
    let archive_arg = format!("--archive={}", archive.display());
    let install = must("kubectl krew install", kubectl(&["krew", "install", &manifest_arg, &archive_arg]));
    assert!(install.stderr.contains("Installed plugin: dispatch"), "{}", install.stderr);
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let store = root.join("store/dispatch").join(&version);
    assert!(store.join("kubectl-dispatch").is_file() && store.join("LICENSE").is_file());
    assert_eq!(std::fs::read_link(root_bin.join("kubectl-dispatch")).ok(), Some(store.join("kubectl-dispatch")));

    // kubectl sees it, from KREW_ROOT/bin and nowhere else.
    let list = kubectl(&["plugin", "list"]);
    let plugins: Vec<&str> = list.stdout.lines().filter(|l| l.ends_with("/kubectl-dispatch")).collect();
    assert_eq!(plugins, [root_bin.join("kubectl-dispatch").display().to_string()], "{}{}", list.stdout, list.stderr);
    let krew_list = must("kubectl krew list", kubectl(&["krew", "list"]));
    assert!(krew_list.has_line("detached/dispatch") || krew_list.has_line("dispatch"), "{}", krew_list.stdout);

    // The Krew-installed binary answers through kubectl, against the test cluster.
    let s = Scenario::new("krew");
    c.apply(&s.healthy_yaml());
    let mut args = vec!["dispatch"];
    args.extend(s.args("gate", &[]));
    let gate = kubectl(&args);
    gate.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(gate.stdout.contains(&format!("ClusterQueue {}", s.cq)), "{}", gate.stdout);

    // docs/install.md's one command for completion: the completer beside the installed plugin.
    let link = r#"ln -sf kubectl-dispatch "$(dirname "$(command -v kubectl-dispatch)")/kubectl_complete-dispatch""#;
    let mut sh = c.command("bash", &["-c", link]);
    sh.env("PATH", &path);
    must("the completion symlink", output(sh));
    let complete = must("kubectl __complete", kubectl(&["__complete", "dispatch", "gate", "--cluster-queue", &s.cq]));
    assert_eq!(complete.lines(), [s.cq.as_str(), ":4"], "{}", complete.stderr);
    std::fs::remove_file(root_bin.join("kubectl_complete-dispatch")).expect("remove the completer link");

    // Uninstall leaves nothing of the plugin behind.
    let uninstall = must("kubectl krew uninstall", kubectl(&["krew", "uninstall", "dispatch"]));
    assert!(uninstall.stderr.contains("Uninstalled plugin: dispatch"), "{}", uninstall.stderr);
    for gone in [root.join("store/dispatch"), root.join("receipts/dispatch.yaml"), root_bin.join("kubectl-dispatch")] {
        assert!(std::fs::symlink_metadata(&gone).is_err(), "{} is left behind", gone.display());
    }
    for dir in ["bin", "store", "receipts"] {
        let left: Vec<_> = std::fs::read_dir(root.join(dir)).expect("read dir").collect();
        assert!(left.is_empty(), "{dir}/ still holds {left:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn kubectl_completes_the_plugin_through_kubectl_complete_dispatch() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let t = unique("complete");
        let (cq_a, cq_b, check, ns) =
            (format!("cq-a-{t}"), format!("cq-b-{t}"), format!("check-{t}"), format!("ns-{t}"));
        c.apply(
            &[
                fixtures::admission_check(&check, "dispatch-admission", Some(true)),
                fixtures::cluster_queue(&cq_a, &[&check]),
                fixtures::cluster_queue(&cq_b, &[]),
                fixtures::namespace(&ns),
            ]
            .concat(),
        );
        // kubectl runs kubectl_complete-dispatch from PATH: here a symlink to the fresh binary.
        let dir = temp_dir("completer");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-dispatch"), dir.join("kubectl_complete-dispatch"))
            .expect("symlink");
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-dispatch"));
        let path = with_path(&[&dir, bin.parent().expect("folder")]);
        let complete = |words: &[&str]| {
            let mut args = vec!["__complete", "dispatch"];
            args.extend_from_slice(words);
            let mut cmd = c.command("kubectl", &args);
            cmd.env("PATH", &path);
            let run = must("kubectl __complete", output(cmd));
            assert_eq!(run.lines().last(), Some(&":4"), "the directive line ends it:\n{}", run.stdout);
            run
        };

        let cqs = complete(&["gate", "--cluster-queue", ""]);
        assert!(cqs.has_line(&cq_a) && cqs.has_line(&cq_b), "{}", cqs.stdout);
        let some = complete(&["gate", "-A", "--cluster-queue", &format!("cq-a-{t}")[..6]]);
        assert!(some.has_line(&cq_a) && !some.has_line(&cq_b), "filtered by the prefix typed:\n{}", some.stdout);
        let checks = complete(&["gate", "--admission-check", "check-"]);
        assert!(checks.has_line(&check), "{}", checks.stdout);
        let namespaces = complete(&["gate", "-n", ""]);
        assert!(namespaces.has_line(&ns) && namespaces.has_line("default"), "{}", namespaces.stdout);
        let contexts = complete(&["--context", ""]);
        for context in ["admin", "viewer"] {
            assert!(contexts.has_line(context), "{}", contexts.stdout);
        }
        // Another context's lookups go through that context: viewer may list ClusterQueues too.
        let viewer = complete(&["gate", "--context", "viewer", "--cluster-queue", ""]);
        assert!(viewer.has_line(&cq_a), "{}", viewer.stdout);

        let verbs = complete(&[""]);
        assert!(verbs.stdout.starts_with("gate\t") && verbs.stdout.contains("\nlease\t"), "{}", verbs.stdout);
        let flags = complete(&["gate", "--all"]);
        assert!(
            ["--all-namespaces", "--all-states", "--all-contexts"]
                .iter()
                .all(|f| flags.lines().iter().any(|l| l.starts_with(&format!("{f}\t")))),
            "{}",
            flags.stdout
        );

        // With no cluster to ask, the names are left out and the directive still ends it.
        let mut cmd = c.command("kubectl", &["__complete", "dispatch", "gate", "--cluster-queue", ""]);
        cmd.env("PATH", &path).env("KUBECONFIG", dir.join("missing"));
        let offline = must("kubectl __complete without a cluster", output(cmd));
        assert_eq!(offline.lines(), [":4"], "{}", offline.stderr);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

fn git(dir: &Path, args: &[&str]) -> Run {
    let mut g = Command::new("git");
    g.arg("-C").arg(dir).args(args);
    g.env("GIT_AUTHOR_NAME", "test").env("GIT_AUTHOR_EMAIL", "test@127.0.0.1");
    g.env("GIT_COMMITTER_NAME", "test").env("GIT_COMMITTER_EMAIL", "test@127.0.0.1");
    must(&format!("git {args:?}"), output(g))
}

/// A second version of the plugin, `version`, built in seconds rather than minutes: the binary
/// crate alone is compiled again, with `KUBECTL_DISPATCH_VERSION` set (main.rs reads it with
/// option_env! for `--version`), in a copy of this build's target folder, so the library and
/// every dependency are reused as cargo built them for this test. The compiled files are hard
/// links (cargo reads them, and finds them fresh); cargo's fingerprints and the build scripts'
/// outputs, which are rewritten in place, are copied; the binary's own outputs are left out, so
/// that the new ones are new files and this build's binary stays as it is. cargo must compile
/// the binary crate and nothing else.
fn second_version(version: &str, work: &Path) -> PathBuf {
    let ours = Path::new(env!("CARGO_BIN_EXE_kubectl-dispatch"));
    let profile = ours.parent().expect("the profile folder");
    let target = work.join("target");
    let copy = target.join(profile.file_name().expect("the profile's name"));
    std::fs::create_dir_all(&copy).expect("mkdir");
    // Build scripts' outputs (build/) are copied too: a build script run again would rewrite
    // them in place.
    for (dir, link) in [("deps", true), ("build", false), (".fingerprint", false)] {
        let mut cp = Command::new("cp");
        cp.arg(if link { "-al" } else { "-a" }).arg(profile.join(dir)).arg(copy.join(dir));
        must(&format!("cp {dir}"), output(cp));
    }
    for entry in std::fs::read_dir(copy.join("deps")).expect("read deps") {
        let entry = entry.expect("entry");
        if entry.file_name().to_string_lossy().starts_with("kubectl_dispatch-") {
            std::fs::remove_file(entry.path()).expect("unlink the binary's own output");
        }
    }
    // The targets this test binary was built with (integration tests build the binary too), so
    // that cargo resolves the features as the outer build did.
    let mut build = Command::new(env!("CARGO"));
    build.args(["test", "--no-run", "--locked", "--verbose", "--test", "e2e_krew"]);
    // Without what cargo set for this test (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...): ring's build
    // script would run again for a CARGO_MANIFEST_DIR it did not see, and everything after it.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("CARGO_") && n != "CARGO_HOME") {
            build.env_remove(name);
        }
    }
    build.current_dir(repo()).env("CARGO_TARGET_DIR", &target).env("KUBECTL_DISPATCH_VERSION", version);
    let built = must("cargo build of the next version", output(build));
    // What cargo ran: the binary crate, and this test's crate only when its source changed
    // after this run's build; never the library, a dependency or a build script.
    let ran: Vec<&str> = built.stderr.lines().filter(|l| l.trim_start().starts_with("Running `")).collect();
    let binary_crate = |l: &&str| l.contains("--crate-name kubectl_dispatch ") && l.contains("--crate-type bin");
    assert!(
        ran.iter().any(binary_crate) && ran.iter().all(|l| binary_crate(l) || l.contains("--crate-name e2e_krew ")),
        "only the binary crate is compiled again:\n{}",
        built.stderr
    );
    let binary = copy.join("kubectl-dispatch");
    let mut v = Command::new(&binary);
    v.arg("--version");
    assert_eq!(must("the next version's --version", output(v)).stdout.trim(), format!("kubectl-dispatch {version}"));
    let mut v = Command::new(ours);
    v.arg("--version");
    assert_eq!(
        must("this build's --version", output(v)).stdout.trim(),
        format!("kubectl-dispatch {}", env!("CARGO_PKG_VERSION")),
        "this build's binary is untouched"
    );
    binary
}

/// A copy of a debug build without its debug info (about a fifth of its size), as a release is
/// stripped: what the archives pack, so that packing and installing them is quick.
fn stripped(binary: &Path, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let out = dir.join("kubectl-dispatch");
    let mut strip = Command::new("strip");
    strip.arg("--strip-debug").arg("-o").arg(&out).arg(binary);
    must("strip --strip-debug (binutils)", output(strip));
    out
}

/// The next patch version of `v`: 0.1.0 -> 0.1.1.
fn next_version(v: &str) -> String {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().expect("a numeric version")).collect();
    *parts.last_mut().expect("a version") += 1;
    parts.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// Krew as a user meets it: a custom index (a git repository with plugins/dispatch.yaml, its
/// archive served on 127.0.0.1), `kubectl krew index add`, `kubectl krew install INDEX/dispatch`,
/// the plugin run through kubectl, a second version published to the index and `kubectl krew
/// upgrade` to it (the new binary answers --version with it), `kubectl krew uninstall` leaving
/// only the completion link docs/install.md has users make (and remove).
#[test]
fn krew_v0_4_3_installs_from_a_custom_index_upgrades_and_uninstalls() {
    let (krew, _) = krew_tools();
    index_install_upgrade_uninstall(&krew, "v0.4.3");
}

/// The same with Krew v0.5.0 (tools/krew/v0.5.0), the newest release: users upgrade Krew on
/// their own schedule, so the index path is run with both (docs/release.md says what changed).
#[test]
fn krew_v0_5_0_installs_from_a_custom_index_upgrades_and_uninstalls() {
    let run = must(
        "tools/ensure krew@v0.5.0",
        output({
            let mut c = Command::new(repo().join("tools/ensure"));
            c.arg("krew@v0.5.0");
            c
        }),
    );
    index_install_upgrade_uninstall(Path::new(run.stdout.trim()), "v0.5.0");
}

fn index_install_upgrade_uninstall(krew: &Path, krew_version: &str) {
    let c = Cluster::shared();
    let work = temp_dir(&format!("krew-index-{krew_version}"));
    let krew_bin = work.join("krew-bin");
    std::fs::create_dir_all(&krew_bin).expect("mkdir");
    std::os::unix::fs::symlink(krew, krew_bin.join("kubectl-krew")).expect("symlink kubectl-krew");
    let (os, arch) = host_platform();
    let platform = format!("{os}/{arch}");

    // The version of this checkout, packed from the binary cargo built for the tests.
    let v1 = env!("CARGO_PKG_VERSION").to_string();
    let d1 = work.join("v1");
    std::fs::create_dir_all(&d1).expect("mkdir");
    let (base1, served1) = serve(d1.clone());
    let mut cmd = Command::new(repo().join("scripts/release"));
    cmd.arg("--out").arg(&d1).args(["--uri-base", &base1]);
    let binary1 = stripped(Path::new(env!("CARGO_BIN_EXE_kubectl-dispatch")), &work.join("bin-v1"));
    cmd.arg("--binary").arg(format!("{platform}={}", binary1.display()));
    must("scripts/release v1", output(cmd));

    // The next version: this build's binary crate compiled again with another version (see
    // second_version), packed as v1 was, its manifest rendered for that version.
    let v2 = next_version(&v1);
    let binary2 = stripped(&second_version(&v2, &work), &work.join("bin-v2"));
    let d2 = work.join("v2");
    std::fs::create_dir_all(&d2).expect("mkdir");
    let (base2, served2) = serve(d2.clone());
    let mut cmd = Command::new(repo().join("scripts/release"));
    cmd.arg("--out").arg(&d2).args(["--uri-base", &base2]);
    cmd.arg("--binary").arg(format!("{platform}={}", binary2.display()));
    must("scripts/release v2", output(cmd));
    let archive2 = d2.join(format!("kubectl-dispatch-{os}-{arch}.tar.gz"));
    let mut cmd = Command::new(repo().join("scripts/krew-manifest"));
    cmd.args(["--version", &format!("v{v2}"), "--uri-base", &base2]).arg(&archive2);
    let manifest2 = must("scripts/krew-manifest v2", output(cmd));
    assert!(manifest2.stdout.contains(&format!("version: v{v2}\n")), "{}", manifest2.stdout);

    // The index: a git repository whose plugins/ holds the manifest.
    let index = work.join("index");
    std::fs::create_dir_all(index.join("plugins")).expect("mkdir");
    git(&index, &["init", "-q", "-b", "master"]);
    std::fs::copy(d1.join("krew/dispatch.yaml"), index.join("plugins/dispatch.yaml")).expect("publish v1");
    git(&index, &["add", "plugins/dispatch.yaml"]);
    git(&index, &["commit", "-q", "-m", &format!("dispatch v{v1}")]);

    let root = work.join("krew-root");
    let root_bin = root.join("bin");
    let path = with_path(&[&root_bin, &krew_bin]);
    let kubectl = |args: &[&str]| {
        let mut cmd = c.command("kubectl", args);
        cmd.env("PATH", &path).env("KREW_ROOT", &root).env("KREW_NO_UPGRADE_CHECK", "1");
        output(cmd)
    };
    // krew's own default index is not reachable from here: only the local one is added, and
    // krew is told the default index is this one too (KREW_DEFAULT_INDEX_URI), so that
    // `index add` does not try to fetch it.
    let index_url = index.display().to_string();
    let kubectl_idx = |args: &[&str]| {
        let mut cmd = c.command("kubectl", args);
        cmd.env("PATH", &path).env("KREW_ROOT", &root).env("KREW_NO_UPGRADE_CHECK", "1");
        cmd.env("KREW_DEFAULT_INDEX_URI", &index_url);
        output(cmd)
    };
    must("kubectl krew index add", kubectl_idx(&["krew", "index", "add", "local", &index_url]));
    let indexes = must("kubectl krew index list", kubectl_idx(&["krew", "index", "list"]));
    assert!(
        indexes.stdout.lines().any(|l| l.split_whitespace().eq(["local", index_url.as_str()])),
        "{}",
        indexes.stdout
    );
    let install = must("kubectl krew install local/dispatch", kubectl_idx(&["krew", "install", "local/dispatch"]));
    assert!(install.stderr.contains("Installed plugin: dispatch"), "{}", install.stderr);
    assert!(served1.load(Ordering::SeqCst) >= 1, "the archive came from {base1}");
    let list = must("kubectl krew list", kubectl_idx(&["krew", "list"]));
    assert!(list.has_line("local/dispatch"), "{}", list.stdout);

    // Through kubectl, against the test cluster.
    let s = Scenario::new("krewidx");
    c.apply(&s.healthy_yaml());
    let mut args = vec!["dispatch"];
    args.extend(s.args("gate", &[]));
    kubectl(&args).expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    let version = must("kubectl dispatch --version", kubectl(&["dispatch", "--version"]));
    assert_eq!(version.stdout.trim(), format!("kubectl-dispatch {v1}"));

    // The completion link, as docs/install.md has users make it.
    let link = r#"ln -sf kubectl-dispatch "$(dirname "$(command -v kubectl-dispatch)")/kubectl_complete-dispatch""#;
    let mut sh = c.command("bash", &["-c", link]);
    sh.env("PATH", &path);
    must("the completion symlink", output(sh));

    // The next version is published to the index; krew upgrade fetches the index and takes it.
    std::fs::write(index.join("plugins/dispatch.yaml"), &manifest2.stdout).expect("publish v2");
    git(&index, &["commit", "-q", "-am", &format!("dispatch v{v2}")]);
    let upgrade = must("kubectl krew upgrade", kubectl_idx(&["krew", "upgrade", "dispatch"]));
    assert!(upgrade.stderr.contains("Upgraded plugin: local/dispatch"), "{}", upgrade.stderr);
    assert!(served2.load(Ordering::SeqCst) >= 1, "the new archive came from {base2}");
    let version = must("kubectl dispatch --version", kubectl(&["dispatch", "--version"]));
    assert_eq!(version.stdout.trim(), format!("kubectl-dispatch {v2}"), "the new binary answers");
    assert!(root.join(format!("store/dispatch/v{v2}/kubectl-dispatch")).is_file());
    assert!(!root.join(format!("store/dispatch/v{v1}")).exists(), "the old version is removed");
    kubectl(&args).expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    // The completer link follows the plugin's link, so it runs the new version too.
    let complete = must("kubectl __complete", kubectl(&["__complete", "dispatch", "gate", "--cluster-queue", &s.cq]));
    assert_eq!(complete.lines(), [s.cq.as_str(), ":4"], "{}", complete.stderr);

    // Uninstall: only the completion link is left, dangling, as docs/install.md says to remove it.
    let uninstall = must("kubectl krew uninstall", kubectl_idx(&["krew", "uninstall", "dispatch"]));
    assert!(
        uninstall.stderr.lines().any(|l| l.starts_with("Uninstalled plugin: ") && l.ends_with("dispatch")),
        "{}",
        uninstall.stderr
    );
    let left: Vec<String> = std::fs::read_dir(&root_bin)
        .expect("read bin")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["kubectl_complete-dispatch"], "bin/ holds only the completion link");
    assert!(std::fs::metadata(root_bin.join("kubectl_complete-dispatch")).is_err(), "and it dangles");
    for gone in [root.join("store/dispatch"), root.join("receipts/dispatch.yaml")] {
        assert!(std::fs::symlink_metadata(&gone).is_err(), "{} is left behind", gone.display());
    }
    std::fs::remove_file(root_bin.join("kubectl_complete-dispatch")).expect("remove the completion link");
    let _ = std::fs::remove_dir_all(&work);
}

//! Kueue's managers and the older kube-apiservers are built from Go modules of their own
//! (tests/cluster/kueue/VERSION/go.mod, tests/cluster/apiserver/VERSION/go.mod) into one Go
//! build cache (scripts/test), and most of what they compile is the same code: client-go,
//! apiserver, their dependencies. Kueue's own code is about 2 MB of the 60 MB of Go source a
//! manager compiles. The Go build cache reuses a compiled package only when both builds pin its
//! module alike, by required version and by source, so the modules here pin alike everything
//! they share: Kueue v0.14.0 and v0.15.0 with each other (the two lines pinned Kubernetes' own
//! modules and controller-runtime patch releases apart, and some of client-go's dependencies
//! minor releases apart, gRPC v1.72 against v1.75 for one), each Kueue line with the
//! kube-apiserver of its Kubernetes minor, and Kueue v0.17.0, whose minor no tested apiserver is,
//! with v0.19.2 in everything but Kueue itself. A `go mod tidy` or a new Kueue version that moves
//! one of them apart fails here, with the modules to change.

use std::collections::BTreeMap;
use std::path::Path;

/// Kept as each Kueue line pins them: Kueue itself, the APIs of the jobs it integrates with
/// and the certificate controller it calls, which change between minor releases. Kueue
/// v0.14.0 does not build against v0.15.0's trainer (tried: v2.1.0 has no `PodSpecOverrides`);
/// the others are kept for the same reason. Their packages are a small part of the builds.
const KEPT_APART: [&str; 6] = [
    "sigs.k8s.io/kueue",
    "github.com/kubeflow/mpi-operator",
    "github.com/kubeflow/trainer/v2",
    "github.com/ray-project/kuberay/ray-operator",
    "sigs.k8s.io/scheduler-plugins",
    "github.com/open-policy-agent/cert-controller",
];

/// What a go.mod says of one module it names: the version it requires, and the version whose
/// source is compiled (the one a `replace` puts in its place, or the required one). The Go
/// build cache keys a compiled package on both, so two builds share a package only when both
/// agree (logr required at v1.4.3 and replaced with v1.4.2 in one module, and required at
/// v1.4.2 in the other: two cache entries for the same source).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pin {
    required: String,
    source: String,
}

impl std::fmt::Display for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.required == self.source {
            write!(f, "{}", self.required)
        } else {
            write!(f, "{} => {}", self.required, self.source)
        }
    }
}

/// The pins of a go.mod: each `require`d module with its version, and the version a `replace`
/// puts in its place (one-line and block directives alike): its version where the replacement is
/// the same module, else the whole replacement (a local folder, or another module path with its
/// version), which no version of the module itself equals.
fn pins(go_mod: &Path) -> BTreeMap<String, Pin> {
    let text = std::fs::read_to_string(go_mod).unwrap_or_else(|e| panic!("{}: {e}", go_mod.display()));
    let (mut required, mut replaced) = (BTreeMap::new(), BTreeMap::new());
    let mut block: Option<&str> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        let (directive, spec) = match block {
            Some(_) if line == ")" => {
                block = None;
                continue;
            }
            Some(directive) => (directive, line),
            None => match line.split_once(' ') {
                Some((directive @ ("require" | "replace"), "(")) => {
                    block = Some(directive);
                    continue;
                }
                Some((directive @ ("require" | "replace"), rest)) => (directive, rest.trim()),
                _ => continue,
            },
        };
        if directive == "require" {
            let mut words = spec.split_whitespace();
            if let (Some(path), Some(version)) = (words.next(), words.next()) {
                required.insert(path.to_string(), version.to_string());
            }
        } else if let Some((old, new)) = spec.split_once("=>") {
            let path = old.split_whitespace().next().unwrap_or_default();
            let source = match new.split_whitespace().collect::<Vec<_>>()[..] {
                [new_path, version] if new_path == path => version.to_string(),
                _ => new.trim().to_string(),
            };
            replaced.insert(path.to_string(), source);
        }
    }
    assert!(!required.is_empty(), "{} requires nothing: not a go.mod this test can read", go_mod.display());
    required
        .into_iter()
        .map(|(path, version)| {
            let source = replaced.get(&path).cloned().unwrap_or_else(|| version.clone());
            (path, Pin { required: version, source })
        })
        .collect()
}

fn go_mod(folder: &str) -> BTreeMap<String, Pin> {
    pins(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster").join(folder).join("go.mod"))
}

fn module(version: &str) -> BTreeMap<String, Pin> {
    go_mod(&format!("kueue/{version}"))
}

/// Each module both go.mod files name, but for those `kept` apart, that they pin apart:
/// `PATH: PIN in A, PIN in B`.
fn pinned_apart(
    (a, a_name): (&BTreeMap<String, Pin>, &str),
    (b, b_name): (&BTreeMap<String, Pin>, &str),
    kept: &[&str],
) -> Vec<String> {
    a.iter()
        .filter(|(path, _)| !kept.contains(&path.as_str()))
        .filter_map(|(path, ours)| {
            b.get(path)
                .filter(|theirs| *theirs != ours)
                .map(|theirs| format!("{path}: {ours} in {a_name}, {theirs} in {b_name}"))
        })
        .collect()
}

#[test]
fn kueue_v0_14_and_v0_15_pin_the_modules_they_share_alike() {
    let (old, new) = (module("v0.14.0"), module("v0.15.0"));
    let apart = pinned_apart((&old, "v0.14.0"), (&new, "v0.15.0"), &KEPT_APART);
    assert!(
        apart.is_empty(),
        "tests/cluster/kueue/v0.14.0 and v0.15.0 pin these modules apart, so the second manager build compiles them again; raise the lower (go get PATH@VERSION in its folder, then go mod tidy):\n  {}",
        apart.join("\n  ")
    );
    for path in KEPT_APART {
        assert!(
            old.contains_key(path) && new.contains_key(path),
            "{path} is kept apart here but is not in both go.mod files: drop it from KEPT_APART"
        );
    }
    let shared = old.keys().filter(|path| new.contains_key(*path)).count();
    assert!(
        shared > 100,
        "only {shared} modules in both go.mod files: the kueue modules are not what this test expects"
    );
}

/// Each Kueue line on the Kubernetes minor of a kube-apiserver the tests build, with that
/// apiserver's version.
const ON_AN_APISERVERS_MINOR: [(&str, &str); 3] =
    [("v0.14.0", "v1.34.4"), ("v0.15.0", "v1.34.4"), ("v0.19.2", "v1.36.3")];

/// A Kueue line on a tested kube-apiserver's Kubernetes minor and that apiserver's module pin
/// every module both name alike: the higher of their two required versions, and the source the
/// apiserver's build compiles (a `replace` where the two differ, in both). So the packages both
/// builds compile (client-go, apiserver, their dependencies: about 48 of the 59 MB of Go source
/// Kueue v0.14.0's manager compiles, 53 of v0.19.2's 70) are the same, and the second build, in
/// the Go build cache scripts/test gives all of them, finds them compiled.
#[test]
fn kueue_lines_pin_what_they_share_with_their_kube_apiserver_alike() {
    for (version, apiserver_version) in ON_AN_APISERVERS_MINOR {
        let apiserver = go_mod(&format!("apiserver/{apiserver_version}"));
        let kueue = module(version);
        let (kueue_name, apiserver_name) = (format!("kueue/{version}"), format!("apiserver/{apiserver_version}"));
        let apart = pinned_apart((&kueue, &kueue_name), (&apiserver, &apiserver_name), &[]);
        assert!(
            apart.is_empty(),
            "tests/cluster/kueue/{version} and apiserver/{apiserver_version} pin these modules apart (required version => compiled source), so neither build finds them compiled by the other; require the higher version in both and replace it with the apiserver's source where they differ (go mod edit -require=PATH@HIGHER -replace=PATH=PATH@SOURCE in each folder, then go mod tidy):\n  {}",
            apart.join("\n  ")
        );
        let shared = kueue.keys().filter(|path| apiserver.contains_key(*path)).count();
        assert!(
            shared > 80,
            "only {shared} modules in kueue/{version} and apiserver/{apiserver_version}: not what this test expects"
        );
    }
}

/// Kept apart between Kueue v0.17.0's module and v0.19.2's: Kueue itself, and
/// cluster-inventory-api, whose `pkg/credentials` v0.17.0's multikueue imports and v0.19.2's
/// v0.1.3 no longer has.
const KEPT_AT_V0_17: [&str; 2] = ["sigs.k8s.io/cluster-inventory-api", "sigs.k8s.io/kueue"];

/// Kueue v0.17.0 is on Kubernetes v0.35, which no tested kube-apiserver is, so built on its own
/// minor its manager shared no Kubernetes package with another build (343 CPU-s after v0.19.2's).
/// It is built against what v0.19.2's is instead, Kubernetes' v0.36 modules and controller-runtime
/// v0.24.1 among them, so its build, after v0.19.2's in the same Go build cache, compiles little
/// but Kueue's own packages.
#[test]
fn kueue_v0_17_pins_what_it_shares_with_v0_19_alike() {
    let (old, new) = (module("v0.17.0"), module("v0.19.2"));
    let apart = pinned_apart((&old, "v0.17.0"), (&new, "v0.19.2"), &KEPT_AT_V0_17);
    assert!(
        apart.is_empty(),
        "tests/cluster/kueue/v0.17.0 and v0.19.2 pin these modules apart (required version => compiled source), so v0.17.0's build compiles them again; in v0.17.0 require and replace them as v0.19.2 does (go mod edit -require=PATH@VERSION -replace=PATH=PATH@SOURCE, then go mod tidy), or where v0.17.0 needs its own version, say why in KEPT_AT_V0_17:\n  {}",
        apart.join("\n  ")
    );
    let stale: Vec<&str> = KEPT_AT_V0_17
        .into_iter()
        .filter(|path| old.get(*path).is_none_or(|v17| new.get(*path).is_none_or(|v19| v19 == v17)))
        .collect();
    assert!(
        stale.is_empty(),
        "kept apart here but pinned alike, or not in both go.mod files: drop them from KEPT_AT_V0_17: {stale:?}"
    );
    let shared = old.keys().filter(|path| new.contains_key(*path)).count();
    assert!(shared > 100, "only {shared} modules in kueue/v0.17.0 and v0.19.2: not what this test expects");
}

#[test]
fn pins_reads_blocks_single_lines_and_replacements() {
    let dir = std::env::temp_dir().join(format!("kueue-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("go.mod");
    std::fs::write(
        &file,
        "module m\n\ngo 1.26.0\n\ntool sigs.k8s.io/kueue/cmd/kueue\n\nrequire sigs.k8s.io/kueue v0.14.0\n\nrequire (\n\tk8s.io/api v0.34.4 // indirect\n\t// a comment\n\tgolang.org/x/text v0.31.0\n\tgolang.org/x/net v0.47.0\n\tk8s.io/kms v0.0.0\n\tgithub.com/x/y v1.0.0\n)\n\nreplace golang.org/x/text => golang.org/x/text v0.23.0\n\nreplace (\n\tgolang.org/x/net v0.47.0 => golang.org/x/net v0.38.0\n\tk8s.io/kms => ./kms\n\tgithub.com/x/y => github.com/z/y v1.1.0\n)\n",
    )
    .unwrap();
    let got = pins(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    let want: BTreeMap<String, Pin> = [
        ("sigs.k8s.io/kueue", "v0.14.0", "v0.14.0"),
        ("k8s.io/api", "v0.34.4", "v0.34.4"),
        ("golang.org/x/text", "v0.31.0", "v0.23.0"),
        ("golang.org/x/net", "v0.47.0", "v0.38.0"),
        ("k8s.io/kms", "v0.0.0", "./kms"),
        ("github.com/x/y", "v1.0.0", "github.com/z/y v1.1.0"),
    ]
    .into_iter()
    .map(|(p, required, source)| (p.to_string(), Pin { required: required.to_string(), source: source.to_string() }))
    .collect();
    assert_eq!(got, want);
}

/// The flags of every Go build and check that compiles into the machine's Go build cache: the
/// Go lints' `go vet` and `go test` (scripts/test), the test clusters' builds (tests/cluster/lib.sh)
/// and the tools' (tools/ensure). The cache keys a compiled package on `-trimpath` as well as
/// on the compiler's flags, so a check without it compiled the standard library, client-go (for
/// the elector) and Prometheus' modules (for the metrics checker) into entries no build reused:
/// after the elector's vet and test with `-trimpath`, 726 of kube-apiserver's 2,083 packages
/// were compiled already, and 0 without it. (The older kube-apiservers and Kueue's managers,
/// unoptimized, build into a cache of their own with flags of their own, apiserver.go.)
const GO_FLAGS: [&str; 2] = ["-trimpath", "-gcflags=all=-dwarf=false"];

fn repo_file(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The words of the bash array NAME's one-line definition, `NAME=(A B)`, in TEXT.
fn bash_array(text: &str, name: &str, file: &str) -> Vec<String> {
    let prefix = format!("{name}=(");
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{file} no longer defines {name}=(...) on one line: update this test"));
    line[prefix.len()..].trim_end_matches(')').split_whitespace().map(String::from).collect()
}

/// The lines of TEXT, comments aside, that contain NEEDLE as words of their own (`go test`, not
/// `cargo test`), at least one.
fn lines_with<'a>(text: &'a str, needle: &str, file: &str) -> Vec<&'a str> {
    let whole =
        |l: &str| l.match_indices(needle).any(|(at, _)| !l[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
    let found: Vec<&str> = text.lines().filter(|l| whole(l) && !l.trim_start().starts_with('#')).collect();
    assert!(!found.is_empty(), "{file} has no line with {needle:?}: update this test");
    found
}

#[test]
fn go_checks_and_builds_compile_with_the_same_flags() {
    let test = repo_file("scripts/test");
    assert_eq!(bash_array(&test, "go_flags", "scripts/test"), GO_FLAGS, "scripts/test's go_flags");
    let checks: Vec<&str> =
        ["go vet ", "go test "].iter().flat_map(|cmd| lines_with(&test, cmd, "scripts/test")).collect();
    let bare: Vec<&&str> = checks.iter().filter(|l| !l.contains("\"${go_flags[@]}\"")).collect();
    assert!(bare.is_empty(), "scripts/test runs these without \"${{go_flags[@]}}\": {bare:#?}");

    let lib = repo_file("tests/cluster/lib.sh");
    assert_eq!(bash_array(&lib, "tc_go_flags", "tests/cluster/lib.sh"), GO_FLAGS, "tests/cluster/lib.sh's tc_go_flags");
    for line in lines_with(&lib, "\"$TESTCLUSTER_GO\" build", "tests/cluster/lib.sh") {
        assert!(line.contains("\"${tc_go_flags[@]}\""), "tests/cluster/lib.sh builds without its tc_go_flags: {line}");
    }

    let ensure = repo_file("tools/ensure");
    for line in lines_with(&ensure, "run_go build", "tools/ensure") {
        for flag in GO_FLAGS {
            assert!(line.contains(flag), "tools/ensure builds without {flag}: {line}");
        }
    }
}

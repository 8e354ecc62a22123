//! Kueue's managers of v0.14.0 and v0.15.0 are built from Go modules that pin every module
//! they both need at one version (tests/cluster/kueue/VERSION/go.mod). Kueue's own code is
//! about 2 MB of the 60 MB of Go source a manager compiles; the rest is its dependencies
//! (k8s.io/api, client-go, apiserver, controller-runtime...), which the two lines pinned at
//! different versions: patch releases apart for Kubernetes' own modules and
//! controller-runtime, minor releases apart for some of client-go's dependencies (gRPC
//! v1.72 against v1.75, for one). Aligned, they are the same packages, and the second build takes
//! them from the Go build cache that scripts/test gives both: on a cold run it compiles
//! about 3 MB of source where it compiled 57 MB. A `go mod tidy` or a new Kueue version that
//! moves one of them apart fails here, with the modules to raise.

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

/// The modules a go.mod requires, with their versions (one-line and block `require`s alike).
fn requires(go_mod: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(go_mod).unwrap_or_else(|e| panic!("{}: {e}", go_mod.display()));
    let mut out = BTreeMap::new();
    let mut in_block = false;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        let spec = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line
        } else if line == "require (" {
            in_block = true;
            continue;
        } else if let Some(rest) = line.strip_prefix("require ") {
            rest.trim()
        } else {
            continue;
        };
        let mut words = spec.split_whitespace();
        if let (Some(path), Some(version)) = (words.next(), words.next()) {
            out.insert(path.to_string(), version.to_string());
        }
    }
    assert!(!out.is_empty(), "{} requires nothing: not a go.mod this test can read", go_mod.display());
    out
}

fn module(version: &str) -> BTreeMap<String, String> {
    requires(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/kueue").join(version).join("go.mod"))
}

#[test]
fn kueue_v0_14_and_v0_15_pin_the_modules_they_share_alike() {
    let (old, new) = (module("v0.14.0"), module("v0.15.0"));
    let apart: Vec<String> = old
        .iter()
        .filter(|(path, _)| !KEPT_APART.contains(&path.as_str()))
        .filter_map(|(path, v14)| {
            new.get(path).filter(|v15| *v15 != v14).map(|v15| format!("{path}: {v14} in v0.14.0, {v15} in v0.15.0"))
        })
        .collect();
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

#[test]
fn requires_reads_blocks_and_single_lines() {
    let dir = std::env::temp_dir().join(format!("kueue-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("go.mod");
    std::fs::write(
        &file,
        "module m\n\ngo 1.26.0\n\ntool sigs.k8s.io/kueue/cmd/kueue\n\nrequire sigs.k8s.io/kueue v0.14.0\n\nrequire (\n\tk8s.io/api v0.34.4 // indirect\n\t// a comment\n\tgolang.org/x/text v0.31.0\n)\n",
    )
    .unwrap();
    let got = requires(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    let want: BTreeMap<String, String> =
        [("sigs.k8s.io/kueue", "v0.14.0"), ("k8s.io/api", "v0.34.4"), ("golang.org/x/text", "v0.31.0")]
            .into_iter()
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .collect();
    assert_eq!(got, want);
}

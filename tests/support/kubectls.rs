//! The kubectl the parity tests run: the machine's (`kubectl` on PATH, v1.32.4 on the project's
//! machines) and the newest, built by the harness from the default cluster's Go module
//! (`tests/cluster/testcluster kubectl-path`, k8s.io/kubernetes/cmd/kubectl, into the cache).
//! A test wrapped in [`each_kubectl`] runs its body once per kubectl, this thread's `kubectl`
//! ([`program`]) being that one; `DISPATCH_TEST_KUBECTL=PATH` changes the default for a whole
//! run. Where the two kubectls differ, the test says which one the plugin follows.

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

thread_local! {
    static CURRENT: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// One kubectl: its path and the gitVersion it reports (`kubectl version --client`).
#[derive(Clone, Debug)]
pub struct Kubectl {
    pub path: PathBuf,
    pub version: String,
}

impl Kubectl {
    /// The minor version (32 for v1.32.4).
    pub fn minor(&self) -> u32 {
        self.version.trim_start_matches('v').split('.').nth(1).and_then(|m| m.parse().ok()).unwrap_or(0)
    }
}

/// The kubectl this thread runs as `kubectl`.
pub fn program() -> OsString {
    CURRENT.with(|c| c.borrow().clone()).map(PathBuf::into_os_string).unwrap_or_else(default_program)
}

fn default_program() -> OsString {
    std::env::var_os("DISPATCH_TEST_KUBECTL").unwrap_or_else(|| "kubectl".into())
}

fn client_version(path: &PathBuf) -> String {
    let out = Command::new(path)
        .args(["version", "--client", "-o", "json"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} version --client -o json is not JSON ({e}): {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["clientVersion"]["gitVersion"].as_str().unwrap_or_else(|| panic!("no gitVersion in {v}")).to_string()
}

/// The machine's kubectl (or DISPATCH_TEST_KUBECTL's).
pub fn machine() -> &'static Kubectl {
    static K: OnceLock<Kubectl> = OnceLock::new();
    K.get_or_init(|| {
        let name = default_program();
        let path = which(&name).unwrap_or_else(|| panic!("no {} on PATH", name.to_string_lossy()));
        Kubectl { version: client_version(&path), path }
    })
}

/// kubectl at the default test cluster's Kubernetes version, built once into the cache.
pub fn newest() -> &'static Kubectl {
    static K: OnceLock<Kubectl> = OnceLock::new();
    K.get_or_init(|| {
        let out = Command::new(super::repo().join("tests/cluster/testcluster"))
            .arg("kubectl-path")
            .output()
            .unwrap_or_else(|e| panic!("cannot run tests/cluster/testcluster kubectl-path: {e}"));
        assert!(
            out.status.success(),
            "tests/cluster/testcluster kubectl-path could not build kubectl:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Kubectl { version: client_version(&path), path }
    })
}

fn which(name: &OsString) -> Option<PathBuf> {
    let p = PathBuf::from(name);
    if p.components().count() > 1 {
        return Some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(&p)).find(|f| f.is_file())
}

/// Runs `body` once with the machine's kubectl and once with the newest, this thread's
/// `kubectl` being each in turn; a failure names the kubectl it happened with.
pub fn each_kubectl(mut body: impl FnMut(&Kubectl)) {
    let both = [machine(), newest()];
    assert_ne!(
        both[0].version, both[1].version,
        "the machine's kubectl is the harness's {}: nothing to compare",
        both[1].version
    );
    for k in both {
        let _restore = Use::new(&k.path);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(k)));
        if let Err(e) = result {
            eprintln!("the failure above is with kubectl {} ({})", k.version, k.path.display());
            std::panic::resume_unwind(e);
        }
    }
}

/// This thread runs `path` as `kubectl` until the guard drops.
pub struct Use(Option<PathBuf>);

impl Use {
    pub fn new(path: &std::path::Path) -> Use {
        Use(CURRENT.with(|c| c.replace(Some(path.to_path_buf()))))
    }
}

impl Drop for Use {
    fn drop(&mut self) {
        let old = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = old);
    }
}

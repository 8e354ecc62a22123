//! The test cluster itself, end to end: the plugin reaches it through the real kubectl, the
//! `tests/cluster/run` entry point, RBAC users, Kueue CRDs per version, the sample Kueue
//! objects in `tests/fixtures/`, teardown (normal exit, failure, Ctrl-C) and the audit log.

mod support;

use std::io::{BufRead, BufReader};
use std::ops::Deref;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::{Cluster, is_plugin_agent, repo, try_eventually, unique};

const KUEUE_CRDS: [&str; 4] = [
    "admissionchecks.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
];

/// `tests/cluster/run ARGS` from the repository root, stdin closed, output captured.
fn run_script(args: &[&str]) -> Output {
    Command::new(repo().join("tests/cluster/run"))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run tests/cluster/run: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(out: &Output) -> String {
    format!("status {}\nstdout:\n{}\nstderr:\n{}", out.status, text(&out.stdout), text(&out.stderr))
}

/// Whether `arg` names `dir` itself or something inside it (not `/tmp/x-1` for `/tmp/x-12`).
fn names_dir(arg: &[u8], dir: &[u8]) -> bool {
    arg.windows(dir.len())
        .enumerate()
        .filter(|(_, w)| *w == dir)
        .any(|(i, _)| matches!(arg.get(i + dir.len()), None | Some(b'/')))
}

/// Live processes with `dir` in their command line, as (pid, command line). Zombies have an
/// empty command line, so they never count.
fn processes_naming(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.as_os_str().as_bytes();
    let mut found = Vec::new();
    let entries = std::fs::read_dir("/proc").unwrap_or_else(|e| panic!("cannot list /proc: {e}"));
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // A process may exit between read_dir and read: then it references nothing.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|arg| names_dir(arg, needle)) {
            let shown = text(&cmdline).replace('\0', " ").trim_end().to_string();
            found.push((pid, shown));
        }
    }
    found
}

/// Live processes whose environment sets DISPATCH_TEST_STATE_DIR to exactly `dir`.
fn processes_with_state_dir_env(dir: &Path) -> Vec<u32> {
    let mut want = b"DISPATCH_TEST_STATE_DIR=".to_vec();
    want.extend_from_slice(dir.as_os_str().as_bytes());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|kv| kv == want.as_slice()) {
            found.push(pid);
        }
    }
    found
}

/// Polls until `dir` is gone and no process names it, or `limit` passes.
fn wait_torn_down(dir: &Path, limit: Duration) -> (bool, Vec<(u32, String)>) {
    let polled = try_eventually(limit, || {
        let state = (dir.exists(), processes_naming(dir));
        if !state.0 && state.1.is_empty() { Ok(state) } else { Err(state) }
    });
    let (Ok(state) | Err(state)) = polled;
    state
}

fn assert_torn_down(dir: &Path, (exists, procs): (bool, Vec<(u32, String)>)) {
    assert!(!exists, "the state dir {} still exists", dir.display());
    assert!(procs.is_empty(), "processes still reference {}: {procs:#?}", dir.display());
}

fn wait_with_deadline(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    match try_eventually(limit, || child.try_wait().expect("try_wait").ok_or(())) {
        Ok(status) => status,
        Err(()) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}; killed it");
        }
    }
}

/// A cluster of this test's own, stopped when dropped (also when the test panics).
struct OwnCluster(Option<Cluster>);

impl OwnCluster {
    fn start(kueue: &str) -> OwnCluster {
        OwnCluster(Some(Cluster::start(kueue)))
    }

    /// `testcluster stop`, asserting that it removed the state dir and every process.
    fn stop(mut self) {
        let c = self.0.take().expect("cluster");
        c.stop();
        assert_torn_down(&c.state_dir, wait_torn_down(&c.state_dir, Duration::ZERO));
    }
}

impl Deref for OwnCluster {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        self.0.as_ref().expect("cluster")
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let _ = Command::new(repo().join("tests/cluster/testcluster"))
                .args(["stop", "--state-dir"])
                .arg(&c.state_dir)
                .stdin(Stdio::null())
                .output();
        }
    }
}

fn established(c: &Cluster, crd: &str) -> String {
    c.kubectl_ok(&["get", "crd", crd, "-o", r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#], None)
}

/// The `version`s `/apis/kueue.x-k8s.io` lists, and its preferred version.
fn kueue_versions(c: &Cluster) -> (Vec<String>, String) {
    let raw = c.kubectl_ok(&["get", "--raw", "/apis/kueue.x-k8s.io"], None);
    let group: serde_json::Value =
        serde_json::from_str(&raw).unwrap_or_else(|e| panic!("/apis/kueue.x-k8s.io is not JSON ({e}):\n{raw}"));
    assert_eq!(group["kind"], "APIGroup", "{raw}");
    assert_eq!(group["name"], "kueue.x-k8s.io", "{raw}");
    let versions = group["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no versions in {raw}"))
        .iter()
        .map(|v| v["version"].as_str().expect("version").to_string())
        .collect();
    let preferred = group["preferredVersion"]["version"]
        .as_str()
        .unwrap_or_else(|| panic!("no preferredVersion in {raw}"))
        .to_string();
    (versions, preferred)
}

// 1. The plugin through the real kubectl.

#[test]
fn kubectl_finds_the_fresh_plugin() {
    let c = Cluster::shared();
    let run = c.dispatch(&["--version"]);
    run.expect_code(0);
    assert_eq!(run.stdout, format!("kubectl-dispatch {}\n", env!("CARGO_PKG_VERSION")), "stderr:\n{}", run.stderr);
}

// 2. The one entry point.

#[test]
fn run_script_serves_readyz() {
    let out = run_script(&["kubectl", "get", "--raw", "/readyz"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "ok", "{}", describe(&out));
}

// 3. RBAC users.

fn auth_can_i(c: &Cluster, args: &[&str]) -> (Option<i32>, String) {
    let mut full = vec!["auth", "can-i"];
    full.extend_from_slice(args);
    let out = c.kubectl(&full, None);
    (out.status.code(), text(&out.stdout))
}

#[test]
fn viewer_reads_the_lease_and_no_lease_gets_a_real_403() {
    let c = Cluster::shared();
    let lease = ["get", "leases/dispatch-admission", "-n", "dispatch-system"];

    let viewer: Vec<&str> = ["--context", "viewer"].iter().chain(&lease).copied().collect();
    assert_eq!(auth_can_i(c, &viewer), (Some(0), "yes\n".into()));

    let no_lease: Vec<&str> = ["--context", "no-lease"].iter().chain(&lease).copied().collect();
    assert_eq!(auth_can_i(c, &no_lease), (Some(1), "no\n".into()));

    assert_eq!(
        auth_can_i(c, &["--context", "viewer", "list", "workloads.kueue.x-k8s.io", "-A"]),
        (Some(0), "yes\n".into())
    );
    assert_eq!(
        auth_can_i(c, &["--context", "viewer", "create", "leases", "-n", "dispatch-system"]),
        (Some(1), "no\n".into())
    );

    // The server itself refuses, not just the review API.
    let out =
        c.kubectl(&["--context", "no-lease", "get", "lease", "-n", "dispatch-system", "dispatch-admission"], None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "", "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Error from server (Forbidden)"), "{}", describe(&out));
    assert!(stderr.contains(r#"User "no-lease" cannot get resource "leases""#), "{}", describe(&out));
    assert_eq!(
        stderr,
        "Error from server (Forbidden): leases.coordination.k8s.io \"dispatch-admission\" is forbidden: \
         User \"no-lease\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" \
         in the namespace \"dispatch-system\"\n"
    );

    // The viewer's Role names one Lease only.
    let out = c.kubectl(&["--context", "viewer", "get", "lease", "-n", "dispatch-system", "other-name"], None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(
        text(&out.stderr),
        "Error from server (Forbidden): leases.coordination.k8s.io \"other-name\" is forbidden: \
         User \"viewer\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" \
         in the namespace \"dispatch-system\"\n"
    );
}

// 4. Kueue CRDs on the shared cluster (v0.17.0).

#[test]
fn kueue_crds_are_established_and_v1beta2_is_served() {
    let c = Cluster::shared();
    for crd in KUEUE_CRDS {
        assert_eq!(established(c, crd), "True", "CRD {crd} Established");
    }
    let (versions, preferred) = kueue_versions(c);
    assert!(versions.iter().any(|v| v == "v1beta2"), "v1beta2 not served: {versions:?}");
    assert_eq!(versions, ["v1beta2", "v1beta1"]);
    assert_eq!(preferred, "v1beta2");
}

// 5. The sample Kueue objects (tests/fixtures/), on a cluster of their own (their names are fixed).

#[test]
fn the_sample_objects_apply_with_their_status() {
    let path = repo().join("tests/fixtures/kueue-test-objects.yaml");
    assert!(path.is_file(), "{} is missing: the sample Kueue objects are part of the repository", path.display());
    let path: PathBuf = path.canonicalize().expect("canonical path");
    let file = path.to_str().expect("UTF-8 path");

    let c = OwnCluster::start("v0.17.0");
    // Exactly as the file's header says: objects, then their status through /status.
    let want = "namespace/team-a serverside-applied\n\
                admissioncheck.kueue.x-k8s.io/dispatch serverside-applied\n\
                clusterqueue.kueue.x-k8s.io/cluster-queue serverside-applied\n\
                localqueue.kueue.x-k8s.io/user-queue serverside-applied\n\
                workload.kueue.x-k8s.io/job-sample-pending serverside-applied\n";
    assert_eq!(c.kubectl_ok(&["apply", "--server-side", "-f", file], None), want);
    assert_eq!(c.kubectl_ok(&["apply", "--server-side", "--subresource=status", "-f", file], None), want);

    assert_eq!(
        c.kubectl_ok(
            &[
                "get",
                "workload",
                "-n",
                "team-a",
                "job-sample-pending",
                "-o",
                "jsonpath={.status.admissionChecks[0].state}",
            ],
            None
        ),
        "Pending"
    );
    assert_eq!(
        c.kubectl_ok(
            &[
                "get",
                "admissioncheck",
                "dispatch",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Active")].status}"#,
            ],
            None
        ),
        "True"
    );
    c.stop();
}

// 6. An older Kueue.

#[test]
fn kueue_v0_14_serves_only_v1beta1() {
    let c = OwnCluster::start("v0.14.0");
    for crd in KUEUE_CRDS {
        assert_eq!(established(&c, crd), "True", "CRD {crd} Established");
    }
    let (versions, preferred) = kueue_versions(&c);
    assert!(!versions.iter().any(|v| v == "v1beta2"), "v0.14.0 serves v1beta2: {versions:?}");
    assert_eq!(versions, ["v1beta1"]);
    assert_eq!(preferred, "v1beta1");
    c.stop();
}

// 7. Teardown.

#[test]
fn run_script_passes_a_failure_through() {
    let out = run_script(&["false"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "", "{}", describe(&out));
}

#[test]
fn run_script_exits_with_the_command_and_leaves_nothing() {
    let out = run_script(&["sh", "-c", "echo $DISPATCH_TEST_STATE_DIR; exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", describe(&out));
    let stdout = text(&out.stdout);
    let dir = stdout
        .strip_suffix('\n')
        .filter(|d| d.starts_with('/') && !d.contains('\n'))
        .unwrap_or_else(|| panic!("want one absolute path, got {}", describe(&out)));
    let dir = Path::new(dir);
    // run tears down before it exits: no grace period.
    assert_torn_down(dir, wait_torn_down(dir, Duration::ZERO));
}

#[test]
fn ctrl_c_on_the_run_script_tears_down() {
    let stderr_file = std::env::temp_dir().join(unique("ctrl-c-stderr"));
    // stderr to a file, not a pipe, so that a leftover child could not hold the test up.
    let mut child = Command::new(repo().join("tests/cluster/run"))
        .args(["sh", "-c", "echo $DISPATCH_TEST_STATE_DIR; sleep 100"])
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_file).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run tests/cluster/run: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(read.map(|_| line));
    });
    let line = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(Ok(line)) => line,
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no state dir from run ({other:?}); stderr:\n{}",
                std::fs::read_to_string(&stderr_file).unwrap_or_default()
            );
        }
    };
    let dir = PathBuf::from(line.trim_end());
    assert!(
        dir.is_absolute() && dir.exists(),
        "run printed {line:?}, not a live state dir; stderr:\n{}",
        std::fs::read_to_string(&stderr_file).unwrap_or_default()
    );

    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("run kill");
    assert!(kill.success(), "kill -INT {} failed", child.id());
    let status = wait_with_deadline(&mut child, Duration::from_secs(30), "run after SIGINT");
    let torn_down = wait_torn_down(&dir, Duration::from_secs(5));

    // Without a terminal, CMD runs in its own process group and run signals all of it: the
    // `sleep` that sh started is gone too.
    let polled = try_eventually(Duration::from_secs(5), || {
        let left = processes_with_state_dir_env(&dir);
        if left.is_empty() { Ok(left) } else { Err(left) }
    });
    let (Ok(left) | Err(left)) = polled;
    for pid in &left {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    assert!(left.is_empty(), "CMD's children outlived run: {left:?}");
    let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_file);

    assert_eq!(status.code(), Some(130), "stderr:\n{stderr}");
    assert!(stderr.ends_with("testcluster: interrupt: cluster torn down\n"), "stderr:\n{stderr}");
    assert_torn_down(&dir, torn_down);
}

// 8. The audit log.

#[test]
fn the_audit_log_records_the_plugins_requests() {
    assert!(!is_plugin_agent("kubectl-dispatcher/v1.0 (linux/amd64)"));
    let c = Cluster::shared();
    let log = c.audit_log();
    assert!(log.is_file(), "no audit log at {}", log.display());

    let run = c.dispatch(&["lease"]);
    let polled = try_eventually(Duration::from_secs(5), || {
        let seen: Vec<(String, String, String)> = c
            .audit_events()
            .into_iter()
            .filter_map(|e| {
                let agent = e["userAgent"].as_str()?;
                is_plugin_agent(agent).then(|| {
                    (
                        agent.to_string(),
                        e["verb"].as_str().unwrap_or_default().to_string(),
                        e["requestURI"].as_str().unwrap_or_default().to_string(),
                    )
                })
            })
            .collect();
        let lease_read = seen.iter().any(|(_, _, uri)| uri.contains("/namespaces/dispatch-system/leases"));
        if lease_read { Ok(seen) } else { Err(seen) }
    });
    let (Ok(seen) | Err(seen)) = polled;
    assert!(
        seen.iter().any(|(_, verb, uri)| !verb.is_empty() && uri.contains("/namespaces/dispatch-system/leases")),
        "no audit line with userAgent kubectl-dispatch/... reading a Lease in dispatch-system; \
         plugin lines: {seen:#?}\nthe plugin run: {run:?}"
    );
}

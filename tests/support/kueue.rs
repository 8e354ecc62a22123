//! Real Kueue: a test cluster running Kueue's own controller manager (`testcluster start
//! --kueue-manager`), the objects a user creates (ResourceFlavor, ClusterQueue, LocalQueue,
//! suspended `batch/v1` Jobs), and a small stand-in for dispatch-admission that sets its
//! check's state on a Workload through the status subresource, as the real controller does.
//!
//! A test that panics prints the tail of Kueue's manager log (when [`Kueue`] drops), so a
//! failure says what Kueue did.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::fixtures::{self, time_ago};
use super::{Cluster, eventually};

/// dispatch's controllerName, and the field manager of its status writes.
pub const CONTROLLER: &str = "dispatch-admission";

/// A cluster with Kueue `version` and its manager running.
pub struct Kueue {
    pub cluster: Cluster,
    pub version: &'static str,
    /// The API version objects are written at: v1beta2 where served (v0.15 and later), else v1beta1.
    pub api: &'static str,
}

impl Kueue {
    pub fn start(version: &'static str) -> Kueue {
        Kueue::start_and(version, &[])
    }

    /// [`Kueue::start`] with more of the harness's Kueue flags (`--kueue-leader-elect`,
    /// `--kueue-v1beta2-only`).
    pub fn start_and(version: &'static str, flags: &[&str]) -> Kueue {
        let cluster = Cluster::start_with_kueue_manager_and(version, flags);
        let api = if version == "v0.14.0" { "kueue.x-k8s.io/v1beta1" } else { "kueue.x-k8s.io/v1beta2" };
        Kueue { cluster, version, api }
    }

    /// Whether this Kueue line's manager serves its visibility API on the test cluster (the
    /// harness can choose its address from v0.17).
    pub fn serves_visibility(&self) -> bool {
        !matches!(self.version, "v0.14.0" | "v0.15.0")
    }

    pub fn apply(&self, yaml: &str) {
        self.cluster.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(yaml));
    }

    /// Applies `status` to an object as dispatch-admission does: through /status, its own
    /// field manager, forcing ownership of the fields it sets (Kueue's own check controllers
    /// do the same).
    pub fn apply_status(&self, yaml: &str) {
        self.cluster.kubectl_ok(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--subresource=status",
                &format!("--field-manager={CONTROLLER}"),
                "-f",
                "-",
            ],
            Some(yaml),
        );
    }

    /// `kubectl get ARGS -o json` as admin.
    pub fn get(&self, args: &[&str]) -> Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.cluster.kubectl_ok(&full, None);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {full:?} is not JSON ({e}):\n{out}"))
    }

    pub fn resource_flavor(&self, name: &str) -> String {
        format!("apiVersion: {}\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n---\n", self.api)
    }

    pub fn admission_check(&self, name: &str) -> String {
        format!(
            "apiVersion: {}\nkind: AdmissionCheck\nmetadata:\n  name: {name}\nspec:\n  controllerName: {CONTROLLER}\n---\n",
            self.api
        )
    }

    /// The Active condition dispatch-admission sets on its AdmissionCheck.
    pub fn admission_check_active(&self, name: &str) -> String {
        format!(
            "apiVersion: {}\nkind: AdmissionCheck\nmetadata:\n  name: {name}\nstatus:\n  conditions:\n  - type: Active\n    status: \"True\"\n    reason: Active\n    message: the dispatch admission controller is ready\n    lastTransitionTime: \"{}\"\n",
            self.api,
            time_ago(0)
        )
    }

    /// A ClusterQueue with 8 cpu of `flavor`, listing `checks` (v1beta1's
    /// `spec.admissionChecks` on Kueue v0.14, else `admissionChecksStrategy`).
    pub fn cluster_queue(&self, name: &str, flavor: &str, checks: &[&str]) -> String {
        let listed = match (checks.is_empty(), self.api.ends_with("v1beta1")) {
            (true, _) => String::new(),
            (false, true) => format!("  admissionChecks: [{}]\n", checks.join(", ")),
            (false, false) => {
                let rules: String = checks.iter().map(|c| format!("    - name: {c}\n")).collect();
                format!("  admissionChecksStrategy:\n    admissionChecks:\n{rules}")
            }
        };
        format!(
            "apiVersion: {}\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n  namespaceSelector: {{}}\n  resourceGroups:\n  - coveredResources: [\"cpu\"]\n    flavors:\n    - name: {flavor}\n      resources:\n      - name: cpu\n        nominalQuota: \"8\"\n{listed}---\n",
            self.api
        )
    }

    pub fn local_queue(&self, ns: &str, name: &str, cq: &str) -> String {
        format!(
            "{}apiVersion: {}\nkind: LocalQueue\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  clusterQueue: {cq}\n---\n",
            fixtures::namespace(ns),
            self.api
        )
    }

    /// A suspended Job of one pod (1 cpu) queued on LocalQueue `queue`.
    pub fn job(&self, ns: &str, name: &str, queue: &str) -> String {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels:\n    kueue.x-k8s.io/queue-name: {queue}\nspec:\n  suspend: true\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [\"true\"]\n        resources:\n          requests:\n            cpu: \"1\"\n---\n"
        )
    }

    /// The Workload Kueue created for Job `ns/job` (its owner), once there is one.
    pub fn workload_of(&self, ns: &str, job: &str) -> String {
        eventually(&format!("Kueue creates a Workload for Job {ns}/{job}"), Duration::from_secs(60), || {
            let list = self.get(&["workloads.kueue.x-k8s.io", "-n", ns]);
            let items = list["items"].as_array().cloned().unwrap_or_default();
            items
                .iter()
                .find(|w| w["metadata"]["ownerReferences"][0]["name"] == job)
                .and_then(|w| w["metadata"]["name"].as_str().map(String::from))
                .ok_or_else(|| format!("{} Workloads in {ns}: {list}", items.len()))
        })
    }

    pub fn workload(&self, ns: &str, name: &str) -> Value {
        self.get(&["workloads.kueue.x-k8s.io", "-n", ns, name])
    }

    /// dispatch-admission's stand-in: sets `check`'s state on Workload `ns/name` as the real
    /// controller does (PATCH to /status, its field manager).
    pub fn set_check(&self, ns: &str, name: &str, check: &str, state: &str, message: &str) {
        self.apply_status(&format!(
            "apiVersion: {}\nkind: Workload\nmetadata:\n  name: {name}\n  namespace: {ns}\nstatus:\n  admissionChecks:\n  - name: {check}\n    state: {state}\n    message: {message:?}\n    lastTransitionTime: \"{}\"\n",
            self.api,
            time_ago(0)
        ));
    }

    pub fn manager_log(&self) -> PathBuf {
        self.cluster.kueue_manager_log()
    }
}

impl Drop for Kueue {
    /// A failing test shows what Kueue did: the tail of its manager's log.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let path = self.manager_log();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(cannot read it: {e})"));
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(80)..];
        eprintln!(
            "--- Kueue {} manager log, last {} of {} lines ({}):\n{}\n--- end of Kueue's log",
            self.version,
            tail.len(),
            lines.len(),
            path.display(),
            tail.join("\n")
        );
    }
}

/// A condition of `obj` by type, or Null.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_)).unwrap_or(&Value::Null)
}

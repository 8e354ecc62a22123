//! Kueue and Lease objects as YAML, written relative to now. Schema-checked shapes from
//! `tests/fixtures/kueue-test-objects.yaml` (v1beta2).

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{Cluster, Run};

/// A MicroTime `secs` seconds ago (negative: in the future), with the six fractional digits
/// the apiserver's parser demands.
pub fn micro_ago(secs: i64) -> String {
    (Timestamp::now() - SignedDuration::from_secs(secs)).strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A metav1.Time `secs` seconds ago.
pub fn time_ago(secs: i64) -> String {
    (Timestamp::now() - SignedDuration::from_secs(secs)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n---\n")
}

/// A Lease. `holder` None leaves the field out; `renewed_ago` None leaves renewTime out.
pub fn lease(ns: &str, name: &str, holder: Option<&str>, renewed_ago: Option<i64>, duration: Option<i32>) -> String {
    let mut spec = String::new();
    if let Some(h) = holder {
        spec += &format!("  holderIdentity: {h:?}\n");
    }
    if let Some(d) = duration {
        spec += &format!("  leaseDurationSeconds: {d}\n");
    }
    if let Some(ago) = renewed_ago {
        spec += &format!("  renewTime: \"{}\"\n  acquireTime: \"{}\"\n", micro_ago(ago), micro_ago(ago + 300));
    }
    spec += "  leaseTransitions: 2\n";
    format!(
        "{}apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec}---\n",
        namespace(ns)
    )
}

/// An AdmissionCheck; `active` None writes no Active condition.
pub fn admission_check(name: &str, controller: &str, active: Option<bool>) -> String {
    admission_check_of("v1beta2", name, controller, active)
}

/// An AdmissionCheck of `version` (v1beta2 or v1beta1).
pub fn admission_check_of(version: &str, name: &str, controller: &str, active: Option<bool>) -> String {
    let status = match active {
        None => String::new(),
        Some(a) => format!(
            "status:\n  conditions:\n  - type: Active\n    status: \"{}\"\n    reason: {}\n    message: {}\n    lastTransitionTime: \"{}\"\n",
            if a { "True" } else { "False" },
            if a { "Active" } else { "ControllerDown" },
            if a { "The admission check is active" } else { "The controller stopped" },
            time_ago(600)
        ),
    };
    format!(
        "apiVersion: kueue.x-k8s.io/{version}\nkind: AdmissionCheck\nmetadata:\n  name: {name}\nspec:\n  controllerName: {controller}\n{status}---\n"
    )
}

/// A ClusterQueue listing `checks` through v1beta2's admissionChecksStrategy.
pub fn cluster_queue(name: &str, checks: &[&str]) -> String {
    let rules: Vec<(&str, &[&str])> = checks.iter().map(|c| (*c, &[][..])).collect();
    cluster_queue_with("v1beta2", name, &rules, None)
}

/// Kueue's `Active` condition on a ClusterQueue, as its manager writes it: status, reason,
/// message.
pub type KueueActive<'a> = (&'a str, &'a str, &'a str);

/// A ClusterQueue of `version` (v1beta2 or v1beta1) listing `rules` (check, onFlavors) through
/// admissionChecksStrategy, with Kueue's Active condition in its status when `active` is given.
pub fn cluster_queue_with(version: &str, name: &str, rules: &[(&str, &[&str])], active: Option<KueueActive>) -> String {
    let strategy = if rules.is_empty() {
        String::new()
    } else {
        let rules: String = rules
            .iter()
            .map(|(c, flavors)| {
                let on = if flavors.is_empty() { String::new() } else { format!("      onFlavors: {flavors:?}\n") };
                format!("    - name: {c}\n{on}")
            })
            .collect();
        format!("  admissionChecksStrategy:\n    admissionChecks:\n{rules}")
    };
    cluster_queue_doc(version, name, &strategy, active)
}

/// A v1beta1 ClusterQueue listing `checks` in `spec.admissionChecks`, the older shape.
pub fn cluster_queue_v1beta1(name: &str, checks: &[&str], active: Option<KueueActive>) -> String {
    cluster_queue_doc("v1beta1", name, &format!("  admissionChecks: {checks:?}\n"), active)
}

fn cluster_queue_doc(version: &str, name: &str, checks: &str, active: Option<KueueActive>) -> String {
    let status = match active {
        None => String::new(),
        Some((status, reason, message)) => format!(
            "status:\n  conditions:\n  - type: Active\n    status: \"{status}\"\n    reason: {reason}\n    message: {message:?}\n    lastTransitionTime: \"{}\"\n",
            time_ago(300)
        ),
    };
    format!(
        "apiVersion: kueue.x-k8s.io/{version}\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n  namespaceSelector: {{}}\n  resourceGroups:\n  - coveredResources: [\"cpu\"]\n    flavors:\n    - name: default-flavor\n      resources:\n      - name: cpu\n        nominalQuota: \"8\"\n{checks}{status}---\n"
    )
}

pub fn local_queue(ns: &str, name: &str, cq: &str) -> String {
    format!(
        "{}apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  clusterQueue: {cq}\n---\n",
        namespace(ns)
    )
}

/// A Workload in `ns` queued on LocalQueue `lq`. With `reserved_in` Some, quota is reserved in
/// that ClusterQueue. `checks` are (name, state, message, seconds since the transition).
pub fn workload(
    ns: &str,
    name: &str,
    lq: &str,
    reserved_in: Option<&str>,
    checks: &[(&str, &str, &str, i64)],
) -> String {
    let mut status = String::from("status:\n  conditions:\n");
    match reserved_in {
        Some(cq) => {
            status += &format!(
                "  - type: QuotaReserved\n    status: \"True\"\n    reason: QuotaReserved\n    message: Quota reserved in ClusterQueue {cq}\n    lastTransitionTime: \"{}\"\n",
                time_ago(900)
            );
            status += &format!(
                "  - type: Admitted\n    status: \"False\"\n    reason: UnsatisfiedChecks\n    message: The workload has not all checks ready\n    lastTransitionTime: \"{}\"\n",
                time_ago(900)
            );
            status += &format!(
                "  admission:\n    clusterQueue: {cq}\n    podSetAssignments:\n    - name: main\n      count: 1\n      flavors:\n        cpu: default-flavor\n      resourceUsage:\n        cpu: \"1\"\n"
            );
        }
        None => {
            status += &format!(
                "  - type: QuotaReserved\n    status: \"False\"\n    reason: Pending\n    message: waiting for quota\n    lastTransitionTime: \"{}\"\n",
                time_ago(900)
            );
        }
    }
    if !checks.is_empty() {
        status += "  admissionChecks:\n";
        for (check, state, message, since) in checks {
            status += &format!(
                "  - name: {check}\n    state: {state}\n    message: {message:?}\n    lastTransitionTime: \"{}\"\n",
                time_ago(*since)
            );
        }
    }
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  queueName: {lq}\n  podSets:\n  - name: main\n    count: 1\n    template:\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: main\n          image: registry.k8s.io/pause:3.10\n          resources:\n            requests:\n              cpu: \"1\"\n{status}---\n"
    )
}

/// `kubectl dispatch gate` on the scenario's queue, Lease and namespace, with `extra` flags.
pub fn gate(c: &Cluster, s: &Scenario, extra: &[&str]) -> Run {
    c.dispatch(&s.args("gate", extra))
}

/// A whole healthy scenario: dispatch's check (controller `controller`), a ClusterQueue that
/// lists it, a LocalQueue in `ns`, and a fresh Lease `lease_ns/lease_name`.
pub struct Scenario {
    pub controller: String,
    pub check: String,
    pub cq: String,
    pub ns: String,
    pub lq: String,
    pub lease_ns: String,
    pub lease_name: String,
    /// `lease_ns/lease_name`.
    pub lease: String,
}

impl Scenario {
    pub fn new(tag: &str) -> Scenario {
        let t = super::unique(tag);
        Scenario {
            controller: format!("dispatch-admission-{t}"),
            check: format!("dispatch-{t}"),
            cq: format!("cq-{t}"),
            ns: format!("ns-{t}"),
            lq: format!("lq-{t}"),
            lease_ns: "dispatch-system".into(),
            lease_name: format!("lease-{t}"),
            lease: format!("dispatch-system/lease-{t}"),
        }
    }

    /// The objects of a healthy gate (the Lease renewed 2 s ago, duration 15 s).
    pub fn healthy_yaml(&self) -> String {
        [
            admission_check(&self.check, &self.controller, Some(true)),
            cluster_queue(&self.cq, &[&self.check]),
            local_queue(&self.ns, &self.lq, &self.cq),
            lease(&self.lease_ns, &self.lease_name, Some("dispatch-admission-7d9f_1"), Some(2), Some(15)),
        ]
        .concat()
    }

    /// The Kueue side of a healthy gate (the Active check, the ClusterQueue listing it, the
    /// LocalQueue) and the Lease's namespace, but no Lease: a leader election creates it.
    pub fn queue_yaml(&self) -> String {
        [
            admission_check(&self.check, &self.controller, Some(true)),
            cluster_queue(&self.cq, &[&self.check]),
            local_queue(&self.ns, &self.lq, &self.cq),
            namespace(&self.lease_ns),
        ]
        .concat()
    }

    /// `--controller-name` (gate only: lease takes none), `--lease` and extra args, for a gate
    /// or lease call on this scenario.
    pub fn args<'a>(&'a self, verb: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec![verb];
        if verb != "lease" {
            v.extend(["--controller-name", self.controller.as_str()]);
        }
        v.extend(["--lease", self.lease.as_str()]);
        v.extend_from_slice(extra);
        v
    }
}

//! The supported kube-apiserver range (README, "Supported Kubernetes versions"): the same small
//! matrix on the oldest minor the plugin promises, the one before the default, and the default
//! test cluster's — gate (yes and no), lease --watch through a renewal and a stale deadline,
//! doctor (whose identity comes from SelfSubjectReview, and whose access answers come from
//! SelfSubjectAccessReview) and workload. Each version but the default is its own kube-apiserver
//! binary, built from its own Go module (tests/cluster/apiserver/VERSION) into the harness's
//! cache; etcd is the default cluster's for all of them. Every other test runs on the default.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use support::controller::Controller;
use support::fixtures::{self, Scenario};
use support::pods;
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);

/// The oldest Kubernetes minor the plugin supports, the previous default, and the default.
const OLDEST: &str = "v1.34.4";
const PREVIOUS: &str = "v1.36.3";
const DEFAULT: &str = "v1.37.2";

/// One cluster per version for this binary, started on first use, with the default Lease held
/// by a running pod (for doctor).
fn cluster_on(version: &str) -> &'static Cluster {
    static CLUSTERS: OnceLock<Mutex<HashMap<String, &'static Cluster>>> = OnceLock::new();
    let lock = CLUSTERS.get_or_init(Default::default);
    // A cluster starts under the lock: one version's start at a time on the shared machine.
    let mut map = lock.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = map.get(version) {
        return c;
    }
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start_on_apiserver(version)));
    let server = c.kubectl_ok(&["version", "-o", "json"], None);
    let v: serde_json::Value = serde_json::from_str(&server).expect("kubectl version -o json");
    assert_eq!(v["serverVersion"]["gitVersion"], version, "the cluster runs another kube-apiserver: {v}");
    pods::healthy_default_holder(c);
    map.insert(version.to_string(), c);
    c
}

fn gate_yes_and_no(version: &str) {
    let c = cluster_on(version);
    let s = Scenario::new("v-gate");
    c.apply(&s.healthy_yaml());
    let yes = c.dispatch(&s.args("gate", &[]));
    yes.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    let json = c.dispatch(&s.args("gate", &["-o", "json"])).json();
    assert_eq!((json["verdict"].as_str(), json["lease"]["status"].as_str()), (Some("yes"), Some("fresh")));

    c.apply(&fixtures::admission_check(&s.check, &s.controller, Some(false)));
    let no = c.dispatch(&s.args("gate", &[]));
    no.expect_code(3);
    assert!(
        no.stdout.contains(&format!("ReadmissionGate: no (observe-only): AdmissionCheck {} is not Active", s.check)),
        "{}",
        no.stdout
    );
}

fn lease_watch_renewal_then_stale(version: &str) {
    let c = cluster_on(version);
    let s = Scenario::new("v-watch");
    c.apply(&s.healthy_yaml());
    let mut ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 5);
    let mut w = support::watch::Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    let event = |name: &'static str| {
        move |l: &str| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["event"] == name)
    };
    w.wait_for("a renewal", 20 * S, event("renewed"));
    ctl.stop();
    let stale = w.wait_for("the stale row", 30 * S, event("stale"));
    let v: serde_json::Value = serde_json::from_str(&stale).unwrap();
    assert_eq!(v["lease"]["status"], "stale", "{v}");
    assert!(v["detail"].as_str().unwrap().starts_with("the admission controller's Lease was last renewed "), "{v}");
    let (code, _, stderr) = w.stop();
    assert_eq!(code, 0, "SIGTERM ends a watch with 0; stderr: {stderr:?}");
}

fn doctor_on(version: &str) {
    let c = cluster_on(version);
    let table = c.dispatch(&["doctor", "--context", "viewer"]);
    table.expect_code(0);
    // Three warnings, as on the default cluster (e2e_doctor): -n's completion, and Kueue's
    // manager's Lease, not granted (its access row and the manager's row).
    table.expect_line("Doctor: ok with warnings: nothing stops the gate or the plugin (3 warnings)");
    let v = c.dispatch(&["doctor", "--context", "viewer", "-o", "json"]).json();
    assert_eq!(v["result"], "ok", "{v:#}");
    // From SelfSubjectReview (authentication.k8s.io/v1, GA since 1.28).
    assert_eq!(v["identity"]["username"], "viewer", "{v:#}");
    let missing: Vec<&str> = v["missingRbac"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(
        missing,
        [
            "list namespaces (cluster-wide)",
            "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system"
        ]
    );
    // An identity that may not ask (no SelfSubjectReview, no SelfSubjectAccessReview): doctor
    // says it cannot tell and goes on, as for a read forbidden on any version.
    let anonymous = c.dispatch(&["doctor", "--as", "system:anonymous", "-o", "json"]);
    anonymous.expect_code(4);
    let v = anonymous.json();
    assert_eq!(v["result"], "unknown", "{v:#}");
    assert!(v["identity"].is_null(), "{v:#}");
}

fn workload_on(version: &str) {
    let c = cluster_on(version);
    let s = Scenario::new("v-wl");
    let stale_lease =
        fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(222), Some(30));
    c.apply(
        &[
            fixtures::admission_check(&s.check, &s.controller, Some(true)),
            fixtures::cluster_queue(&s.cq, &[&s.check]),
            fixtures::local_queue(&s.ns, &s.lq, &s.cq),
            stale_lease,
            fixtures::workload(&s.ns, "train", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 840)]),
        ]
        .concat(),
    );
    let run: Run = c.dispatch(&s.args("workload", &["train", "-n", &s.ns, "-o", "json"]));
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingAtDispatch", "{}", run.stdout);
    assert!(
        doc["summary"]
            .as_str()
            .unwrap()
            .starts_with("waits at dispatch's Pending check; the controller's Lease has been stale for "),
        "{}",
        run.stdout
    );
}

macro_rules! matrix {
    ($($module:ident => $version:expr),* $(,)?) => {$(
        mod $module {
            #[test]
            fn gate_yes_and_no() {
                super::gate_yes_and_no($version);
            }
            #[test]
            fn lease_watch_renewal_then_stale() {
                super::lease_watch_renewal_then_stale($version);
            }
            #[test]
            fn doctor() {
                super::doctor_on($version);
            }
            #[test]
            fn workload() {
                super::workload_on($version);
            }
        }
    )*};
}

matrix! {
    v1_34 => super::OLDEST,
    v1_36 => super::PREVIOUS,
    v1_37 => super::DEFAULT,
}

/// kubectl 1.33+ reads `kuberc` (KUBERC names the file): default flags and aliases for its own
/// commands, and a policy for the exec credential plugins client-go may run. None of it reaches
/// `kubectl dispatch`: kubectl v1.37.2 hands over to the plugin, with the words as typed, before
/// it applies the file (a default for "dispatch" only earns a warning on kubectl's own
/// commands), and refuses an alias naming the plugin. The plugin does not read kuberc either, so
/// a `credentialPluginPolicy: DenyAll` that stops kubectl's exec plugins does not stop the
/// plugin's (docs/versions.md).
#[test]
fn kuberc_reaches_kubectls_own_commands_and_not_the_plugin() {
    // A default cluster of its own: the kubeconfig shapes below write the default Lease, which
    // the matrix's doctor reads with its own holder.
    let c = Cluster::shared();
    let newest = support::kubectls::newest();
    let _kubectl = support::kubectls::Use::new(&newest.path);
    let s = Scenario::new("v-kuberc");
    c.apply(&s.healthy_yaml());
    let dir = std::env::temp_dir().join(support::unique("dispatch-kuberc"));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n{text}")).unwrap();
        path
    };
    let defaults = write(
        "defaults",
        "defaults:\n- command: get\n  options:\n  - name: output\n    default: name\n- command: dispatch\n  options:\n  - name: output\n    default: json\n",
    );
    let run = |kuberc: &std::path::Path, args: &[&str]| -> Run {
        Run::from(c.command("kubectl", args).env("KUBERC", kuberc).output().expect("kubectl"))
    };
    // The oracle that kubectl read the file: its own get takes the default -o name.
    let get = run(&defaults, &["get", "namespace", "default"]);
    assert_eq!((get.code, get.stdout.trim()), (0, "namespace/default"), "{}", get.stderr);
    let warning = "Warning: command \"dispatch\" not found to set kuberc override";
    assert!(get.stderr.contains(warning), "{}", get.stderr);
    // The plugin runs with the words as typed: a table, not the JSON the file asks for.
    let mut words = vec!["dispatch"];
    words.extend(s.args("gate", &[]));
    let gate = run(&defaults, &words);
    gate.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    // kubectl hands over to the plugin before it applies kuberc: not even its warning.
    assert!(!gate.stderr.contains(warning), "{}", gate.stderr);

    // An alias whose command is the plugin: kubectl refuses to make it.
    let alias = write("alias", "aliases:\n- name: dg\n  command: dispatch\n  appendArgs: [gate]\n");
    let dg = run(&alias, &["dg"]);
    assert!(dg.stderr.contains("command \"dispatch\" not found to set alias \"dg\""), "{}", dg.stderr);
    assert!(!dg.stdout.contains("ReadmissionGate"), "{}", dg.stdout);

    // credentialPluginPolicy: DenyAll stops kubectl's exec plugins; the plugin runs its own.
    let shapes = support::shapes::Shapes::new(c);
    let kc = shapes.kubeconfig(
        "exec-cert",
        &shapes.cluster(),
        &shapes.exec_user("exec-cert", "client.authentication.k8s.io/v1", "      interactiveMode: Never\n", &[]),
    );
    let deny = write("deny", "credentialPluginPolicy: DenyAll\n");
    let kuberc = deny.to_str().unwrap();
    let (theirs, ours) = shapes.side_by_side(&kc, &[], &[("KUBERC", kuberc)]);
    assert_ne!(theirs.code, 0, "kubectl ran the exec plugin despite DenyAll: {}", theirs.stdout);
    // The plugin authenticated through the exec plugin and read the Lease (fresh, held).
    ours.expect_code(0);
    assert!(ours.stdout.contains(support::shapes::HOLDER), "{ours:?}");
    eprintln!("kubectl with DenyAll: {}", theirs.stderr.trim());
    let _ = std::fs::remove_dir_all(&dir);
}

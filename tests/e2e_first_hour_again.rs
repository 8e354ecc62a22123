//! An operator's first hour, second pass, on the real test cluster through `kubectl dispatch`:
//! dispatch's AdmissionCheck under a domain-qualified controllerName is found (gate and
//! doctor) with the flag that selects it and the Workloads that wait at it; the command doctor
//! prints for an admin, run by the admin, grants what the user lacked (real RBAC); Kueue's
//! no-Lease note is said once, briefly, and doctor's warning on Kueue's Lease agrees with
//! `--rbac` before and after the grant; `lease NAMESPACE/NAME` and where `lease NAME` looks, side
//! by side with kubectl.

mod support;

use std::process::Stdio;

use support::fixtures::{self, Scenario};
use support::{Cluster, Run, unique};

fn doctor_finding<'a>(v: &'a serde_json::Value, area: &str) -> Vec<&'a serde_json::Value> {
    v["findings"].as_array().unwrap().iter().filter(|f| f["area"] == area).collect()
}

/// Item 1: the check names `example.com/<controller>`. The adapter's verdict stays (no,
/// nothing lists a check of `<controller>`), and stderr names the check, the flag and the two
/// Workloads waiting at it, never "No workloads wait"; the flag then judges it; doctor says
/// the same.
#[test]
fn a_different_controller_name_is_found_with_its_flag_and_its_waiting_workloads() {
    let c = Cluster::shared();
    let s = Scenario::new("lookalike");
    let qualified = format!("example.com/{}", s.controller);
    c.apply(
        &[
            fixtures::admission_check(&s.check, &qualified, Some(true)),
            fixtures::cluster_queue(&s.cq, &[&s.check]),
            fixtures::local_queue(&s.ns, &s.lq, &s.cq),
            fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(2), Some(60)),
            fixtures::workload(&s.ns, "job-a", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]),
            fixtures::workload(&s.ns, "job-b", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 30)]),
        ]
        .concat(),
    );
    let run = c.dispatch(&s.args("gate", &["-A"]));
    run.expect_code(3);
    run.expect_line(&format!(
        "ReadmissionGate: no (observe-only): no ClusterQueue lists an AdmissionCheck whose controllerName is {}",
        s.controller
    ));
    let warning = format!(
        "Warning: AdmissionCheck {} names controller \"{qualified}\", not {}: to judge it, add --controller-name {qualified}",
        s.check, s.controller
    );
    let count = format!("2 workloads wait at AdmissionCheck {} (controller {qualified})", s.check);
    let stderr: Vec<&str> = run.stderr.lines().collect();
    assert!(stderr.contains(&warning.as_str()) && stderr.contains(&count.as_str()), "{}", run.stderr);
    assert!(!run.stderr.contains("No workloads wait"), "{}", run.stderr);
    run.expect_line(&format!("  kubectl dispatch gate --controller-name {qualified} -A"));
    // JSON carries the same warning; the verdict and reason are the adapter's.
    let json = c.dispatch(&s.args("gate", &["-A", "-o", "json"])).json();
    assert_eq!(json["chains"][0]["reasonCode"], "NoClusterQueueListsCheck", "{json}");
    assert!(json["warnings"].as_array().unwrap().iter().any(|w| w.as_str() == Some(&warning[9..])), "{json}");

    // The flag it gave judges the check: yes, and the two Workloads are listed.
    let run = c.dispatch(&["gate", "-A", "--controller-name", &qualified, "--lease", &s.lease, "-o", "json"]);
    run.expect_code(0);
    let v = run.json();
    let names: Vec<&str> = v["waiting"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["job-a", "job-b"], "{v}");

    // doctor says the same.
    let v = c.dispatch(&["doctor", "-A", "--controller-name", &s.controller, "--lease", &s.lease, "-o", "json"]).json();
    let found = doctor_finding(&v, "admission check");
    assert_eq!(found.len(), 1, "{v:#}");
    assert_eq!(found[0]["result"], "warning");
    assert_eq!(found[0]["detail"], format!("{}; {count}", &warning[9..]));
}

/// A ServiceAccount's kubeconfig: its token, from `kubectl create token`.
fn service_account_kubeconfig(c: &Cluster, ns: &str, sa: &str) -> std::path::PathBuf {
    c.kubectl_ok(&["create", "serviceaccount", sa, "-n", ns], None);
    let token = c.kubectl_ok(&["create", "token", sa, "-n", ns, "--duration", "1h"], None);
    let server = c.apiserver_url();
    let ca = c.kubectl_ok(
        &["config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"],
        None,
    );
    let dir = std::env::temp_dir().join(unique("dispatch-sa"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: sa\ncontexts:\n- name: sa\n  context: {{cluster: c, user: sa, namespace: {ns}}}\nclusters:\n- name: c\n  cluster: {{server: \"{server}\", certificate-authority-data: {ca}}}\nusers:\n- name: sa\n  user: {{token: {}}}\n",
            token.trim()
        ),
    )
    .unwrap();
    path
}

fn as_user(c: &Cluster, kubeconfig: &std::path::Path, args: &[&str]) -> Run {
    let mut cmd = c.command("kubectl", &["dispatch"]);
    cmd.args(args).env("KUBECONFIG", kubeconfig).stdin(Stdio::null());
    Run::from(cmd.output().unwrap())
}

/// Item 2 and item 9's agreement: a user with no rights runs doctor; the command it prints
/// names the user (`--as`, its groups, its namespace); the admin runs exactly that command,
/// through a shell, and the user's doctor then passes, `--rbac` has nothing to grant, and the
/// row on Kueue's manager no longer says that its Lease cannot be read.
#[test]
fn the_admin_command_doctor_prints_grants_what_the_user_lacked() {
    let c = Cluster::shared();
    // Kueue's install creates its namespace; the shared cluster runs no Kueue manager.
    let _ = c.kubectl(&["create", "namespace", "kueue-system"], None);
    let ns = unique("grant");
    c.kubectl_ok(&["create", "namespace", &ns], None);
    let sa = unique("operator");
    let kubeconfig = service_account_kubeconfig(c, &ns, &sa);
    let who = format!("system:serviceaccount:{ns}:{sa}");

    let before = as_user(c, &kubeconfig, &["doctor"]);
    before.expect_code(3);
    let intro = "To grant what is missing, an admin applies this";
    let at = before.stdout.find(intro).unwrap_or_else(|| panic!("{}", before.stdout));
    let line = before.stdout[at..].lines().nth(1).unwrap();
    let command = line.strip_prefix('(').and_then(|l| l.strip_suffix("):")).unwrap_or_else(|| panic!("{line}"));
    assert_eq!(
        command,
        format!(
            "kubectl dispatch doctor --as {who} --as-group system:serviceaccounts --as-group system:serviceaccounts:{ns} -n {ns} --rbac | kubectl apply -f -"
        )
    );
    // Before: the manager's row says its Lease cannot be read, and --rbac grants that read.
    let v = as_user(c, &kubeconfig, &["doctor", "-o", "json"]).json();
    let kueue = doctor_finding(&v, "kueue manager");
    assert!(kueue[0]["detail"].as_str().unwrap().contains("cannot be read without RBAC"), "{v:#}");
    assert!(v["rbac"].as_str().unwrap().contains("c1f6bfd2.kueue.x-k8s.io"), "{}", v["rbac"]);
    assert_eq!(v["grantCommand"], command);

    // The admin runs it as printed.
    let out = c.command("sh", &["-c", command]).output().unwrap();
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));

    let after = as_user(c, &kubeconfig, &["doctor", "-o", "json"]);
    let v = after.json();
    assert!(v["missingRbac"].as_array().unwrap().is_empty(), "{v:#}");
    for f in doctor_finding(&v, "access") {
        assert_eq!(f["result"], "ok", "{f:#}");
    }
    // What is left is the cluster's, not the user's rights: the default Lease does not exist here.
    let lease = doctor_finding(&v, "lease");
    assert_eq!(lease[0]["detail"], "Lease dispatch-system/dispatch-admission does not exist", "{v:#}");
    let kueue = doctor_finding(&v, "kueue manager");
    assert!(!kueue[0]["detail"].as_str().unwrap().contains("RBAC"), "{v:#}");
    let quiet = as_user(c, &kubeconfig, &["doctor", "--rbac"]);
    assert_eq!(quiet.stderr, "Nothing to grant: every read is allowed.\n");
    // And the user's gate now reads what it needs.
    let gate = as_user(c, &kubeconfig, &["gate", "-o", "json"]);
    assert!(gate.json()["waiting"].is_array(), "{}", gate.stderr);
}

/// Item 9: Kueue's manager holds no Lease on this cluster (none runs). The note is under 100
/// characters, said while Workloads wait or in -o wide, and not when none waits.
#[test]
fn kueues_no_lease_note_is_said_once_briefly() {
    let c = Cluster::shared();
    let s = Scenario::new("kueue-note");
    c.apply(&s.healthy_yaml());
    let note = "Kueue's manager: no Lease kueue-system/c1f6bfd2.kueue.x-k8s.io: its heartbeat cannot be shown";
    assert!(note.len() < 100);
    let quiet = c.dispatch(&s.args("gate", &["-n", &s.ns]));
    quiet.expect_code(0);
    assert!(!quiet.stdout.contains("Kueue's manager"), "{}", quiet.stdout);
    c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "wide"])).expect_line(note);
    c.apply(&fixtures::workload(&s.ns, "job-a", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]));
    let waits = c.dispatch(&s.args("gate", &["-n", &s.ns]));
    waits.expect_line(note);
    assert_eq!(waits.stdout.matches("Kueue's manager").count(), 1, "{}", waits.stdout);
}

/// Item 3 on the shared cluster, with the status Kueue's manager writes on a ClusterQueue that
/// references a missing flavor written by hand (tests/e2e_kueue.rs has Kueue's own manager
/// write it): gate keeps yes and gives `kubectl describe clusterqueue`; workloads and workload
/// name Kueue's stop; doctor's summary says it.
#[test]
fn an_inactive_cluster_queue_is_one_story_across_the_verbs() {
    let c = Cluster::shared();
    let s = Scenario::new("inactive");
    let active = ("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): gpu.");
    c.apply(
        &[
            fixtures::admission_check(&s.check, &s.controller, Some(true)),
            fixtures::cluster_queue_with("v1beta2", &s.cq, &[(&s.check, &[])], Some(active)),
            fixtures::local_queue(&s.ns, &s.lq, &s.cq),
            fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(2), Some(60)),
            fixtures::workload(&s.ns, "job-a", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]),
        ]
        .concat(),
    );
    let gate = c.dispatch(&s.args("gate", &["-n", &s.ns]));
    gate.expect_code(0);
    gate.expect_line(&format!("Warning: Kueue reports ClusterQueue {} inactive (FlavorNotFound: {}): Kueue admits nothing there, whatever dispatch's gate says", s.cq, active.2));
    gate.expect_line(&format!("  kubectl describe clusterqueue {}", s.cq));
    let clause = format!("Kueue admits nothing on ClusterQueue {} (FlavorNotFound)", s.cq);
    let list = c.dispatch(&s.args("workload", &["-n", &s.ns, "-o", "json"]));
    list.expect_code(0);
    assert_eq!(list.json()["items"][0]["summary"], format!("waits at dispatch's Pending check; {clause}"));
    let one = c.dispatch(&s.args("workload", &["job-a", "-n", &s.ns]));
    one.expect_line(&format!("  kubectl describe clusterqueue {}", s.cq));
    let doctor = c.dispatch(&["doctor", "-n", &s.ns, "--controller-name", &s.controller, "--lease", &s.lease]);
    assert!(doctor.stdout.contains(&format!("but Kueue admits nothing on ClusterQueue {}", s.cq)), "{}", doctor.stdout);
}

/// `lease NAMESPACE/NAME`, as `--lease` takes it; a `-n` that contradicts it is refused with
/// the words `kubectl get -f` gives an object of one namespace read with `-n` another; `lease
/// NAME` reads the context's namespace, as kubectl does, and a Lease missing there but present
/// in dispatch's namespace is a verdict (exit 3, no `error:`) that says "did you mean -n".
#[test]
fn lease_namespace_slash_name_and_where_a_name_alone_looks() {
    let c = Cluster::shared();
    let s = Scenario::new("leasens");
    c.apply(&s.healthy_yaml());
    let named = c.dispatch(&["lease", &s.lease, "--no-headers"]);
    named.expect_code(0);
    assert!(named.stdout.starts_with(&format!("{}   ", s.lease)), "{}", named.stdout);
    c.dispatch(&["lease", &s.lease, "-n", &s.lease_ns]).expect_code(0);
    // -o jsonpath reads the LeaseReport: the Lease's judged fields are under .lease (docs/lease.md).
    let status = c.dispatch(&["lease", &s.lease, "-o", "jsonpath={.lease.status}"]);
    assert_eq!(status.expect_code(0).stdout, "fresh");
    assert_eq!(c.dispatch(&["lease", &s.lease, "-o", "jsonpath={.status}"]).expect_code(0).stdout, "");
    c.dispatch(&["-n", &s.lease_ns, "lease", &s.lease]).expect_code(0);

    // kubectl's words for a namespace given twice, side by side.
    let yaml = c.kubectl_ok(&["get", "lease", &s.lease_name, "-n", &s.lease_ns, "-o", "yaml"], None);
    let theirs = c.kubectl(&["get", "-f", "-", "-n", "default"], Some(&yaml));
    assert_eq!(theirs.status.code(), Some(1));
    let theirs = String::from_utf8_lossy(&theirs.stderr).to_string();
    let want = format!(
        "error: the namespace from the provided object \"{ns}\" does not match the namespace \"default\". You must pass '--namespace={ns}' to perform this operation.",
        ns = s.lease_ns
    );
    assert_eq!(theirs.lines().next(), Some(want.as_str()), "{theirs}");
    for words in [&["lease", &s.lease, "-n", "default"][..], &["-n", "default", "lease", &s.lease]] {
        let ours = c.dispatch(words);
        ours.expect_code(2);
        assert_eq!(ours.stderr.lines().next(), Some(want.as_str()), "{words:?}: {}", ours.stderr);
        assert!(ours.stdout.is_empty());
    }

    // NAME alone: the context's namespace (here none, so default, as `kubectl get lease NAME`).
    let theirs = c.kubectl(&["get", "lease", &s.lease_name], None);
    assert_eq!(theirs.status.code(), Some(1), "kubectl looks in default too");
    let missing = c.dispatch(&["lease", &s.lease_name]);
    missing.expect_code(3);
    assert_eq!(
        missing.stderr,
        format!("Lease default/{} does not exist; did you mean -n {}?\n", s.lease_name, s.lease_ns),
        "a verdict, not an error"
    );
    assert!(missing.stdout.contains(&format!("default/{}   ", s.lease_name)) && missing.stdout.contains(" missing "));
    // No Lease of that name in dispatch's namespace either: the namespace's Leases instead.
    let nowhere = c.dispatch(&["lease", "no-such-lease", "-n", &s.ns]);
    nowhere.expect_code(3);
    assert!(!nowhere.stderr.contains("error:") && !nowhere.stderr.contains("did you mean -n"), "{}", nowhere.stderr);
    assert!(nowhere.stderr.starts_with(&format!("Lease {}/no-such-lease does not exist", s.ns)), "{}", nowhere.stderr);

    // A context whose namespace is dispatch's: NAME alone is found there, as kubectl finds it.
    let kubeconfig = std::fs::read_to_string(c.kubeconfig()).unwrap();
    let dir = support::temp_dir("leasens");
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig).unwrap();
    let path = path.to_str().unwrap();
    c.kubectl_ok(&["config", "set-context", "admin", "--namespace", &s.lease_ns, "--kubeconfig", path], None);
    let scoped = std::fs::read_to_string(path).unwrap();
    let found = support::with_kubeconfig(&scoped, &["lease", &s.lease_name, "--no-headers"]);
    found.expect_code(0);
    assert!(found.stdout.starts_with(&format!("{}   ", s.lease)), "{}", found.stdout);
}

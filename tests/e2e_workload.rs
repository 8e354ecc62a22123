//! `kubectl dispatch workload NAME` end to end: Workloads created with the real kubectl on the
//! shared test cluster (Kueue v0.17.0's CRDs), their statuses written through the status
//! subresource as Kueue and the check controllers write them; then one run through Kueue's own
//! manager, where Kueue itself reserves quota, refuses it, and puts the Workload at dispatch's
//! check. kubectl is the oracle for the errors and for the namespace a context defaults to.
//!
//! Kueue's visibility API (`visibility.kueue.x-k8s.io`) is served only where Kueue's own manager
//! runs (v0.17.0: the harness registers Kueue's APIServices with the apiserver's aggregation
//! layer). There the positions are read against `kubectl get --raw` of the same API; on the
//! shared cluster, without a manager, the "not served" and "forbidden" notes are proved.

mod support;

use std::time::Duration;

use support::fixtures::{self, Scenario, time_ago};
use support::kubectls::each_kubectl;
use support::kueue::{Kueue, condition};
use support::{Cluster, Run, eventually, try_eventually, unique};

/// A v1beta2 Workload of one PodSet `main` queued on `lq`, with `spec_extra` lines in its spec
/// and `status` (YAML under `status:`) applied through /status.
fn workload(ns: &str, name: &str, lq: &str, spec_extra: &str, status: &str) -> String {
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  queueName: {lq}\n{spec_extra}  podSets:\n  - name: main\n    count: 1\n    template:\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: main\n          image: registry.k8s.io/pause:3.10\n          resources:\n            requests:\n              cpu: \"1\"\nstatus:\n{status}---\n"
    )
}

fn cond(type_: &str, status: &str, reason: &str, message: &str, ago: i64) -> String {
    format!(
        "  - type: {type_}\n    status: \"{status}\"\n    reason: {reason}\n    message: {message:?}\n    lastTransitionTime: \"{}\"\n",
        time_ago(ago)
    )
}

fn admission(cq: &str) -> String {
    format!(
        "  admission:\n    clusterQueue: {cq}\n    podSetAssignments:\n    - name: main\n      count: 1\n      flavors:\n        cpu: default-flavor\n      resourceUsage:\n        cpu: \"1\"\n"
    )
}

fn reserved(cq: &str, admitted: bool) -> String {
    reserved_and(cq, admitted, "")
}

/// Quota reserved in `cq`, Admitted or not, and `more` conditions.
fn reserved_and(cq: &str, admitted: bool, more: &str) -> String {
    let mut s = String::from("  conditions:\n");
    s += more;
    s += &cond("QuotaReserved", "True", "QuotaReserved", &format!("Quota reserved in ClusterQueue {cq}"), 900);
    if admitted {
        s += &cond("Admitted", "True", "Admitted", "The workload is admitted", 600);
    } else {
        s += &cond("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", 900);
    }
    s + &admission(cq)
}

/// A check entry; `extra` are more lines of it (retryCount, podSetUpdates, ...).
fn check_entry(name: &str, state: &str, message: &str, ago: i64, extra: &str) -> String {
    format!(
        "  - name: {name}\n    state: {state}\n    message: {message:?}\n    lastTransitionTime: \"{}\"\n{extra}",
        time_ago(ago)
    )
}

/// The scenario's objects plus a second AdmissionCheck `prov-...` of another controller, both
/// listed by the ClusterQueue; the Lease renewed `renewed_ago` seconds ago (duration 15 s).
fn world(s: &Scenario, renewed_ago: i64) -> String {
    [
        fixtures::admission_check(&s.check, &s.controller, Some(true)),
        fixtures::admission_check(&prov(s), "kueue.x-k8s.io/provisioning-request", Some(true)),
        fixtures::cluster_queue(&s.cq, &[&s.check, &prov(s)]),
        fixtures::local_queue(&s.ns, &s.lq, &s.cq),
        fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(renewed_ago), Some(15)),
    ]
    .concat()
}

fn prov(s: &Scenario) -> String {
    format!("prov-{}", s.check)
}

fn explain(c: &Cluster, s: &Scenario, name: &str, extra: &[&str]) -> Run {
    let mut args = vec![name, "-n", s.ns.as_str()];
    args.extend_from_slice(extra);
    c.dispatch(&s.args("workload", &args))
}

/// The one-line summary of the table's last line.
fn last_line(run: &Run) -> &str {
    run.stdout.lines().last().unwrap_or_default()
}

#[test]
fn pending_at_dispatch_with_a_stale_lease() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-stale");
    let name = "train-7b";
    // Stale for 192 s: renewed 222 s ago, limit 30 s.
    let status = format!(
        "{}  admissionChecks:\n{}{}",
        reserved(&s.cq, false),
        check_entry(&s.check, "Pending", "", 840, ""),
        check_entry(
            &prov(&s),
            "Ready",
            "capacity provisioned",
            700,
            "    retryCount: 1\n    podSetUpdates:\n    - name: main\n      nodeSelector:\n        cloud: far-1\n      tolerations:\n      - key: gpu\n        operator: Exists\n        effect: NoSchedule\n"
        ),
    );
    c.apply(&(world(&s, 222) + &workload(&s.ns, name, &s.lq, "", &status)));

    let run = explain(c, &s, name, &["-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["kind"], "WorkloadReport");
    assert_eq!(doc["stage"], "waitingAtDispatch", "{}", run.stdout);
    let summary = doc["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("waits at dispatch's Pending check; the controller's Lease has been stale for 3m"),
        "{summary}"
    );
    assert_eq!(doc["queue"]["localQueue"], s.lq.as_str());
    assert_eq!(doc["queue"]["clusterQueue"], s.cq.as_str());
    assert_eq!(doc["queue"]["clusterQueueFrom"], "admission");
    assert_eq!(doc["quota"]["reserved"], true);
    assert_eq!(doc["quota"]["condition"]["message"], format!("Quota reserved in ClusterQueue {}", s.cq));
    assert_eq!(doc["conditions"]["Admitted"]["reason"], "UnsatisfiedChecks");
    let checks = doc["admissionChecks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0]["name"], s.check.as_str());
    assert_eq!(checks[0]["dispatch"], true);
    assert_eq!(checks[0]["controllerName"], s.controller.as_str());
    assert!((840..850).contains(&checks[0]["sinceSeconds"].as_i64().unwrap()), "{}", checks[0]);
    assert_eq!(checks[1]["dispatch"], false);
    assert_eq!(checks[1]["retryCount"], 1);
    assert_eq!(checks[1]["podSetUpdates"][0]["nodeSelector"]["cloud"], "far-1");
    assert_eq!(checks[1]["podSetUpdates"][0]["tolerations"][0], "gpu:NoSchedule");
    // The gate of this ClusterQueue, as `gate --cluster-queue` judges it.
    assert_eq!(doc["gate"]["clusterQueue"], s.cq.as_str());
    assert_eq!(doc["gate"]["verdict"], "no");
    assert_eq!(doc["lease"]["status"], "stale");
    let gate = c.dispatch(&s.args("gate", &["--cluster-queue", &s.cq, "-n", &s.ns, "-o", "json"]));
    gate.expect_code(3);
    // The same chain (the Lease's age ticks between the two runs).
    let results = |chain: &serde_json::Value| -> Vec<(String, String)> {
        chain["checks"].as_array().unwrap().iter().map(|c| (c["id"].to_string(), c["result"].to_string())).collect()
    };
    let chain = &gate.json()["chains"][0];
    assert_eq!(results(chain), results(&doc["gate"]));
    assert_eq!(chain["admissionChecks"], doc["gate"]["admissionChecks"]);
    for reason in [&chain["reason"], &doc["gate"]["reason"]] {
        assert!(
            reason.as_str().unwrap().starts_with("the admission controller's Lease was last renewed 3m"),
            "{reason}"
        );
    }
    assert_eq!(doc["position"]["status"], "notAsked", "quota is reserved");

    let table = explain(c, &s, name, &[]);
    table.expect_code(3);
    table.expect_line(&format!("Workload {}/{name}", s.ns));
    table.expect_line(&format!("LocalQueue {} -> ClusterQueue {} (its admission)", s.lq, s.cq));
    let want = [s.check.as_str(), s.controller.as_str(), "(dispatch)", "Pending", "14m", "<none>"];
    let row = table.lines().into_iter().any(|l| l.split_whitespace().eq(want.iter().copied()));
    assert!(row, "no row {want:?} in:\n{}", table.stdout);
    table.expect_line(&format!("{}: retryCount 1", prov(&s)));
    table
        .expect_line(&format!("{}: podSetUpdate main: nodeSelector cloud=far-1; tolerations gpu:NoSchedule", prov(&s)));
    assert!(
        table.stdout.contains("ReadmissionGate: no (observe-only): the admission controller's Lease was last renewed")
    );
    assert!(
        last_line(&table).starts_with(&format!(
            "Workload {}/{name}: waits at dispatch's Pending check; the controller's Lease has been stale for 3m",
            s.ns
        )),
        "{}",
        table.stdout
    );
    // Wide: retries in the table; YAML: the same document.
    let wide = explain(c, &s, name, &["-o", "wide"]);
    assert!(wide.stdout.contains("RETRIES   REQUEUE AFTER"), "{}", wide.stdout);
    let yaml = explain(c, &s, name, &["-o", "yaml"]);
    yaml.expect_code(3);
    assert!(yaml.stdout.contains("kind: WorkloadReport\n") && yaml.stdout.contains("stage: waitingAtDispatch\n"));

    // The Lease renewed: the gate is open, dispatch has yet to answer.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(1), Some(15)));
    let fresh = explain(c, &s, name, &["-o", "json"]);
    assert_eq!(
        fresh.json()["summary"],
        "waits at dispatch's Pending check; the gate is open, so dispatch's controller has yet to answer"
    );
}

#[test]
fn admitted_finished_deactivated_and_retry() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-states");
    let ready = check_entry(&s.check, "Ready", "placed on far-1", 600, "");
    let admitted = format!("{}  admissionChecks:\n{ready}", reserved(&s.cq, true));
    let finished = format!(
        "{}  admissionChecks:\n{ready}",
        reserved_and(&s.cq, true, &cond("Finished", "True", "Succeeded", "Job finished successfully", 30)),
    );
    // Kueue after dispatch rejected it: deactivated, quota released, check reset.
    let deactivated = format!(
        "  conditions:\n{}{}  admissionChecks:\n{}",
        cond("QuotaReserved", "False", "Pending", "The workload is deactivated", 60),
        cond(
            "Evicted",
            "True",
            "Deactivated",
            "The workload is deactivated due to Admission check(s): dispatch, were rejected",
            60
        ),
        check_entry(&s.check, "Pending", "Reset to Pending after eviction. Previously: Rejected", 60, "")
    );
    let retry = format!(
        "{}  admissionChecks:\n{}",
        reserved(&s.cq, false),
        check_entry(
            &prov(&s),
            "Retry",
            "capacity not available",
            10,
            "    retryCount: 2\n    requeueAfterSeconds: 600\n"
        )
    );
    c.apply(
        &[
            world(&s, 1),
            workload(&s.ns, "admitted", &s.lq, "", &admitted),
            workload(&s.ns, "finished", &s.lq, "", &finished),
            workload(&s.ns, "deactivated", &s.lq, "  active: false\n", &deactivated),
            workload(&s.ns, "retry", &s.lq, "", &retry),
        ]
        .concat(),
    );
    let a = explain(c, &s, "admitted", &[]);
    a.expect_code(0);
    assert_eq!(last_line(&a), format!("Workload {}/admitted: admitted", s.ns));
    let f = explain(c, &s, "finished", &["-o", "json"]);
    f.expect_code(0);
    assert_eq!(f.json()["summary"], "finished (Kueue: Succeeded: Job finished successfully)");
    let d = explain(c, &s, "deactivated", &["-o", "json"]);
    d.expect_code(3);
    let doc = d.json();
    assert_eq!(doc["stage"], "deactivated");
    assert_eq!(doc["active"], false);
    assert_eq!(
        doc["summary"],
        "deactivated (spec.active is false): Kueue will not admit it (Kueue: Deactivated: The workload is deactivated due to Admission check(s): dispatch, were rejected)"
    );
    assert_eq!(doc["position"]["status"], "notAsked", "a deactivated Workload is in no queue");
    let r = explain(c, &s, "retry", &["-o", "json"]);
    r.expect_code(3);
    let doc = r.json();
    assert_eq!(doc["stage"], "retry");
    let summary = doc["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!(
            "check {} asks to retry: \"capacity not available\"; Kueue requeues it in 9m",
            prov(&s)
        )),
        "{summary}"
    );
    assert_eq!(doc["admissionChecks"][0]["retryCount"], 2);
    assert_eq!(doc["admissionChecks"][0]["requeueAfterSeconds"], 600);
    assert!(doc["admissionChecks"][0]["requeueAt"].is_string());
    assert!(doc["gate"].is_null(), "no check of dispatch's: no gate");
    let wide = explain(c, &s, "retry", &["-o", "wide"]);
    let row = wide.lines().into_iter().find(|l| l.starts_with(&prov(&s))).unwrap_or_default().to_string();
    assert!(row.contains(" Retry ") && row.contains(" 2 ") && row.contains("10m (in 9m"), "{}", wide.stdout);
}

#[test]
fn waiting_for_quota_and_the_visibility_api_notes() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-quota");
    let status = format!(
        "  conditions:\n{}",
        cond(
            "QuotaReserved",
            "False",
            "Pending",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more needed",
            120
        )
    );
    let reader = unique("wl-reader");
    // A user who may read this namespace's Workloads and LocalQueues, and nothing else.
    let rbac = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: wl-reader\n  namespace: {ns}\nrules:\n- apiGroups: [\"kueue.x-k8s.io\"]\n  resources: [\"workloads\", \"localqueues\"]\n  verbs: [\"get\", \"list\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: wl-reader\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: wl-reader\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {reader}\n---\n",
        ns = s.ns
    );
    c.apply(&(world(&s, 1) + &workload(&s.ns, "big", &s.lq, "", &status) + &rbac));

    // kubectl, the oracle: the visibility API is not served here.
    let raw = c.kubectl(
        &[
            "get",
            "--raw",
            &format!(
                "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{}/localqueues/{}/pendingworkloads",
                s.ns, s.lq
            ),
        ],
        None,
    );
    assert!(!raw.status.success() && String::from_utf8_lossy(&raw.stderr).contains("NotFound"), "{raw:?}");

    let run = explain(c, &s, "big", &["-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingForQuota");
    assert_eq!(
        doc["summary"],
        "waits for quota (Kueue: Pending: couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more needed)"
    );
    assert_eq!(doc["queue"]["clusterQueueFrom"], "localQueue");
    assert_eq!(doc["queue"]["clusterQueue"], s.cq.as_str());
    assert_eq!(doc["position"]["status"], "notServed");
    let table = explain(c, &s, "big", &[]);
    table.expect_line(
        "note: no queue position: the API server does not serve Kueue's visibility API (visibility.kueue.x-k8s.io)",
    );
    table.expect_line(&format!("LocalQueue {} -> ClusterQueue {}", s.lq, s.cq));
    // The viewer holds deploy/rbac.yaml's rule for it: the same note.
    let viewer = c.dispatch(&s.args("workload", &["big", "-n", &s.ns, "--context", "viewer", "-o", "json"]));
    viewer.expect_code(3);
    assert_eq!(viewer.json()["position"]["status"], "notServed", "{}", viewer.stdout);

    // A user without it: on a cluster that does not serve the visibility API, discovery says
    // so, and the note is the same (never an error); the forbidden read is proved where Kueue's
    // manager serves it (queue_positions_from_kueues_visibility_api_*).
    let limited = c.dispatch(&s.args("workload", &["big", "-n", &s.ns, "--as", &reader, "-o", "json"]));
    limited.expect_code(3);
    let doc = limited.json();
    assert_eq!(doc["position"]["status"], "notServed", "{}", limited.stdout);
    let table = c.dispatch(&s.args("workload", &["big", "-n", &s.ns, "--as", &reader]));
    table.expect_line(
        "note: no queue position: the API server does not serve Kueue's visibility API (visibility.kueue.x-k8s.io)",
    );
    assert_eq!(table.stderr, "", "a position not served is a note, not a warning or error");

    // A Workload in a queue that does not exist.
    c.apply(&workload(&s.ns, "lost", "no-such-queue", "", &status));
    let lost = explain(c, &s, "lost", &["-o", "json"]);
    lost.expect_code(3);
    assert_eq!(
        lost.json()["summary"],
        format!("waits for LocalQueue no-such-queue, which does not exist in namespace {}", s.ns)
    );
}

#[test]
fn errors_as_kubectl_words_them() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-err");
    c.apply(&(world(&s, 1) + &workload(&s.ns, "mine", &s.lq, "", &reserved(&s.cq, false))));

    // Not found: the API server's words, as kubectl prints them after its prefix.
    let kubectl = c.kubectl(&["get", "workloads.kueue.x-k8s.io", "nope", "-n", &s.ns], None);
    assert_eq!(kubectl.status.code(), Some(1));
    let kubectl_line = String::from_utf8_lossy(&kubectl.stderr).lines().next().unwrap_or_default().to_string();
    let words = kubectl_line.strip_prefix("Error from server (NotFound): ").unwrap_or_else(|| panic!("{kubectl_line}"));
    let run = explain(c, &s, "nope", &[]);
    run.expect_one_error(words);
    assert_eq!(run.stderr.lines().next().unwrap(), format!("error: {words}"));
    assert_eq!(
        run.stderr.lines().nth(1),
        Some(&*format!(
            "no such Workload in namespace {ns}; list them with 'kubectl dispatch workloads -n {ns}'",
            ns = s.ns
        ))
    );

    // Forbidden: exit 4, the server's words again, then the rule to grant, as every verb's
    // forbidden read ends.
    let kubectl = c.kubectl(&["get", "workloads.kueue.x-k8s.io", "mine", "-n", &s.ns, "--as", "nobody"], None);
    let kubectl_line = String::from_utf8_lossy(&kubectl.stderr).lines().next().unwrap_or_default().to_string();
    let words =
        kubectl_line.strip_prefix("Error from server (Forbidden): ").unwrap_or_else(|| panic!("{kubectl_line}"));
    let run = explain(c, &s, "mine", &["--as", "nobody"]);
    run.expect_code(4);
    assert_eq!(
        run.stderr,
        format!("error: {words}\nmissing RBAC: get workloads.kueue.x-k8s.io \"mine\" in namespace {}\n", s.ns)
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn the_namespace_defaults_to_the_contexts_as_kubectl_does() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-ctx");
    c.apply(&(world(&s, 1) + &workload(&s.ns, "here", &s.lq, "", &reserved(&s.cq, false))));
    let dir = std::env::temp_dir().join(unique("wl-kubeconfig"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config");
    std::fs::copy(c.kubeconfig(), &config).unwrap();
    let with = |args: &[&str]| {
        let mut cmd = c.command("kubectl", args);
        cmd.env("KUBECONFIG", &config);
        Run::from(cmd.output().expect("kubectl"))
    };
    with(&["config", "set-context", "--current", &format!("--namespace={}", s.ns)]).expect_code(0);
    with(&["get", "workloads.kueue.x-k8s.io", "here"]).expect_code(0);
    let run =
        with(&["dispatch", "workload", "here", "--controller-name", &s.controller, "--lease", &s.lease, "-o", "json"]);
    run.expect_code(3);
    assert_eq!(run.json()["namespace"], s.ns.as_str());
    // -n wins over the context, for both.
    assert_eq!(with(&["get", "workloads.kueue.x-k8s.io", "here", "-n", "default"]).code, 1);
    with(&["dispatch", "workload", "here", "-n", "default"]).expect_one_error("\"here\" not found");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn without_kueue_it_says_kueue_is_not_installed() {
    let c = Cluster::start("none");
    let run = c.dispatch(&["workload", "x"]);
    run.expect_one_error("Kueue is not installed: the API server does not serve the API group kueue.x-k8s.io");
    c.stop();
}

#[test]
fn kubectl_completes_workload_names() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let s = Scenario::new("wl-complete");
        c.apply(
            &(world(&s, 1)
                + &workload(&s.ns, "alpha-1", &s.lq, "", &reserved(&s.cq, false))
                + &workload(&s.ns, "alpha-2", &s.lq, "", &reserved(&s.cq, false))
                + &workload(&s.ns, "beta", &s.lq, "", &reserved(&s.cq, false))),
        );
        let dir = std::env::temp_dir().join(unique("wl-completer"));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-dispatch"), dir.join("kubectl_complete-dispatch"))
            .unwrap();
        let path = format!("{}:{}", dir.display(), support::plugin_path());
        let complete = |words: &[&str]| {
            let mut args = vec!["__complete", "dispatch"];
            args.extend_from_slice(words);
            let mut cmd = c.command("kubectl", &args);
            cmd.env("PATH", &path);
            let run = Run::from(cmd.output().expect("kubectl __complete"));
            run.expect_code(0);
            run.lines().into_iter().map(String::from).collect::<Vec<_>>()
        };
        assert_eq!(complete(&["workload", "-n", &s.ns, "al"]), ["alpha-1", "alpha-2", ":4"]);
        assert_eq!(complete(&["-n", &s.ns, "kwl", ""]), ["alpha-1", "alpha-2", "beta", ":4"]);
        assert_eq!(complete(&["workload", "-n", &s.ns, "beta", ""]), [":4"]);
        std::fs::remove_dir_all(dir).unwrap();
    });
}

/// A ResourceFlavor, dispatch's AdmissionCheck (Active), ClusterQueue team-a (8 cpu) listing
/// it, a LocalQueue on it for each (namespace, name) of `queues`, and the controller's Lease
/// last renewed 5 minutes ago (stale); returns once Kueue makes team-a Active.
fn team_a_behind_a_stale_lease(k: &Kueue, queues: &[(&str, &str)]) {
    let mut objects = k.resource_flavor("default-flavor")
        + &k.admission_check("dispatch")
        + &k.cluster_queue("team-a", "default-flavor", &["dispatch"]);
    for (ns, name) in queues {
        objects += &k.local_queue(ns, name, "team-a");
    }
    k.apply(&objects);
    k.apply_status(&k.admission_check_active("dispatch"));
    k.cluster.apply(&fixtures::lease(
        "dispatch-system",
        "dispatch-admission",
        Some("dispatch-admission-0_1"),
        Some(300),
        Some(15),
    ));
    eventually("Kueue makes ClusterQueue team-a Active", Duration::from_secs(60), || {
        let cq = k.get(&["clusterqueues.kueue.x-k8s.io", "team-a"]);
        if condition(&cq, "Active")["status"] == "True" { Ok(()) } else { Err(cq["status"].to_string()) }
    });
}

/// Through Kueue v0.17.0's own manager (v1beta2 stored).
#[test]
fn through_kueues_manager_v0_17_0() {
    through_kueues_manager("v0.17.0");
}

/// Through Kueue v0.19.2's own manager (v1beta2 stored, v0.19's reasons on a waiting Workload).
#[test]
fn through_kueues_manager_v0_19_2() {
    through_kueues_manager("v0.19.2");
}

/// Through Kueue v0.14.0's own manager: v1beta1 only, no retryCount or requeueAfterSeconds.
#[test]
fn through_kueues_manager_v0_14_0_v1beta1() {
    through_kueues_manager("v0.14.0");
}

/// Kueue reserves quota and puts the Workload at dispatch's check, refuses quota to one that
/// does not fit, in its own words, counts a Retry (from v0.15), and admits after Ready.
fn through_kueues_manager(version: &'static str) {
    let k = Kueue::start(version);
    // retryCount and requeueAfterSeconds came with Kueue v0.15.
    let counts = version != "v0.14.0";
    let c = &k.cluster;
    let ns = "ml";
    team_a_behind_a_stale_lease(&k, &[(ns, "q")]);
    // job-a takes 1 cpu of 8.
    k.apply(&k.job(ns, "job-a", "q"));
    let a = k.workload_of(ns, "job-a");
    eventually(&format!("Kueue puts {a} at dispatch's check"), Duration::from_secs(60), || {
        let w = k.workload(ns, &a);
        let pending = w["status"]["admissionChecks"][0]["state"] == "Pending";
        if condition(&w, "QuotaReserved")["status"] == "True" && pending {
            Ok(())
        } else {
            Err(w["status"].to_string())
        }
    });

    let run = c.dispatch(&["workload", &a, "-n", ns, "-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingAtDispatch", "{}", run.stdout);
    assert!(
        doc["summary"]
            .as_str()
            .unwrap()
            .starts_with("waits at dispatch's Pending check; the controller's Lease has been stale for "),
        "{}",
        doc["summary"]
    );
    let w = k.workload(ns, &a);
    assert_eq!(doc["quota"]["condition"]["reason"], condition(&w, "QuotaReserved")["reason"]);
    assert_eq!(doc["quota"]["condition"]["message"], condition(&w, "QuotaReserved")["message"]);
    assert_eq!(doc["admissionChecks"][0]["name"], "dispatch");
    assert_eq!(doc["admissionChecks"][0]["dispatch"], true);
    assert_eq!(doc["gate"]["verdict"], "no");

    // dispatch answers Retry with a delay: Kueue counts the retry and requeues the Workload,
    // and the plugin shows Kueue's count.
    let delay = if counts { "    requeueAfterSeconds: 1\n" } else { "" };
    k.apply_status(&format!(
        "apiVersion: {}\nkind: Workload\nmetadata:\n  name: {a}\n  namespace: {ns}\nstatus:\n  admissionChecks:\n  - name: dispatch\n    state: Retry\n    message: \"far-1 is full\"\n{delay}    lastTransitionTime: \"{}\"\n",
        k.api,
        time_ago(0)
    ));
    let reset = eventually(&format!("Kueue resets {a}'s check after Retry"), Duration::from_secs(60), || {
        let w = k.workload(ns, &a);
        let check = w["status"]["admissionChecks"][0].clone();
        let done = check["message"] == "Reset to Pending after eviction. Previously: Retry";
        if done && (!counts || check["retryCount"] == 1) { Ok(check) } else { Err(w["status"].to_string()) }
    });
    let run = c.dispatch(&["workload", &a, "-n", ns, "-o", "json"]);
    let doc = run.json();
    // What Kueue wrote, no more: a count and a delay where this Kueue has them, null where not.
    assert_eq!(doc["admissionChecks"][0]["retryCount"], reset["retryCount"], "{}", run.stdout);
    assert_eq!(doc["admissionChecks"][0]["requeueAfterSeconds"], reset["requeueAfterSeconds"]);
    if counts {
        assert_eq!(doc["admissionChecks"][0]["retryCount"], 1);
        assert_eq!(doc["admissionChecks"][0]["requeueAfterSeconds"], 1);
    } else {
        assert!(doc["admissionChecks"][0]["retryCount"].is_null());
    }

    // dispatch answers Ready (once Kueue reserved quota again): Kueue admits it.
    eventually(&format!("Kueue reserves quota for {a} again"), Duration::from_secs(60), || {
        let w = k.workload(ns, &a);
        let pending = w["status"]["admissionChecks"][0]["state"] == "Pending";
        if condition(&w, "QuotaReserved")["status"] == "True" && pending {
            Ok(())
        } else {
            Err(w["status"].to_string())
        }
    });
    k.set_check(ns, &a, "dispatch", "Ready", "placed on far-1");
    eventually(&format!("Kueue admits {a}"), Duration::from_secs(60), || {
        let w = k.workload(ns, &a);
        if condition(&w, "Admitted")["status"] == "True" { Ok(()) } else { Err(w["status"].to_string()) }
    });
    let run = c.dispatch(&["workload", &a, "-n", ns]);
    run.expect_code(0);
    assert_eq!(last_line(&run), format!("Workload {ns}/{a}: admitted"));

    // job-big asks for all 8 cpu while job-a holds 1: Kueue refuses it quota, in its words.
    k.apply(&k.job(ns, "job-big", "q").replace("cpu: \"1\"", "cpu: \"8\""));
    let b = k.workload_of(ns, "job-big");
    // Kueue v0.14's scheduler writes that condition once, and a write that races the job
    // controller's status update is not retried (the Workload then waits with no QuotaReserved
    // condition at all); later lines always write it.
    let limit = Duration::from_secs(if counts { 60 } else { 30 });
    let refused = match try_eventually(limit, || {
        let w = k.workload(ns, &b);
        let q = condition(&w, "QuotaReserved").clone();
        if q["status"] == "False" && q["message"].as_str().is_some_and(|m| !m.is_empty()) { Ok(q) } else { Err((q, w)) }
    }) {
        Ok(q) => q,
        Err((q, w)) => {
            assert!(!counts, "Kueue {version} did not refuse quota to {b} within {limit:?}: {}", w["status"]);
            q
        }
    };
    if refused.is_null() {
        // What the plugin says when Kueue has said nothing yet: no reason is invented.
        let run = c.dispatch(&["workload", &b, "-n", ns, "-o", "json"]);
        run.expect_code(3);
        let doc = run.json();
        assert_eq!(doc["stage"], "waitingForQuota", "{}", run.stdout);
        assert!(doc["quota"]["condition"].is_null(), "{}", run.stdout);
        assert_eq!(doc["summary"], "waits for quota, not yet at dispatch's check", "{}", run.stdout);
        return;
    }
    // Kueue's visibility API, through the aggregation layer, where the manager serves it: the
    // position Kueue gives (the oracle, read first). The harness cannot choose the address of
    // an older manager's visibility server, so that one runs without it.
    let position = k.serves_visibility().then(|| {
        eventually(&format!("Kueue's visibility API lists {b}"), Duration::from_secs(30), || {
            let listed = pending(c, ns, "q");
            listed.iter().find(|p| p.0 == b).map(|p| (p.1, p.2)).ok_or_else(|| format!("{listed:?}"))
        })
    });
    // Waiting for quota: Kueue's own reason and message, word for word.
    let run = c.dispatch(&["workload", &b, "-n", ns, "-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingForQuota", "{}", run.stdout);
    assert_eq!(doc["quota"]["condition"]["reason"], refused["reason"]);
    assert_eq!(doc["quota"]["condition"]["message"], refused["message"]);
    let want = format!(
        "waits for quota{}{} (Kueue: {}: {})",
        position
            .map(|(cq, lq)| format!(", position {cq} in ClusterQueue team-a ({lq} in LocalQueue q)"))
            .unwrap_or_default(),
        if doc["admissionChecks"].as_array().is_some_and(|c| !c.is_empty()) {
            ", not yet at dispatch's check"
        } else {
            ""
        },
        refused["reason"].as_str().unwrap(),
        refused["message"].as_str().unwrap()
    );
    assert_eq!(doc["summary"], want.as_str());
    match position {
        Some((in_cq, in_lq)) => {
            assert_eq!(doc["position"]["status"], "found", "{}", run.stdout);
            assert_eq!(doc["position"]["positionInClusterQueue"], in_cq);
            assert_eq!(doc["position"]["positionInLocalQueue"], in_lq);
        }
        None => assert_eq!(doc["position"]["status"], "notServed"),
    }
}

/// How many reads of the visibility API the plugin sent so far (the audit log's completed
/// requests, by the plugin's user agent).
fn position_reads(c: &Cluster) -> usize {
    c.plugin_events()
        .iter()
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["requestURI"].as_str().is_some_and(|u| u.contains("/pendingworkloads"))
        })
        .count()
}

/// `kubectl get --raw` of Kueue's pendingworkloads of LocalQueue `ns/lq` (v1beta2): each
/// pending Workload's name and its positions in the ClusterQueue and the LocalQueue. The
/// oracle for the plugin's position.
fn pending(c: &Cluster, ns: &str, lq: &str) -> Vec<(String, i64, i64)> {
    let path = format!("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads");
    let out = c.kubectl_ok(&["get", "--raw", &path], None);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {out}"));
    doc["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: no items: {out}"))
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                i["positionInClusterQueue"].as_i64().unwrap_or(-1),
                i["positionInLocalQueue"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

/// Kueue's visibility API as Kueue v0.17.0's and v0.19.2's managers serve it through the
/// aggregation layer.
/// Three Workloads wait for quota behind one that holds it all, in two LocalQueues of one
/// ClusterQueue: each position, in JSON and in the table, is the one `kubectl get --raw`
/// reads, for admin and for the viewer (deploy/rbac.yaml's rule). Kueue's own 404 for a
/// LocalQueue it does not hold is not "not served"; with the manager stopped the apiserver
/// answers 503: a note each time, never an error.
#[test]
fn queue_positions_from_kueues_visibility_api_v0_17_0() {
    queue_positions_from_kueues_visibility_api("v0.17.0");
}

#[test]
fn queue_positions_from_kueues_visibility_api_v0_19_2() {
    queue_positions_from_kueues_visibility_api("v0.19.2");
}

fn queue_positions_from_kueues_visibility_api(version: &'static str) {
    let k = Kueue::start(version);
    let c = &k.cluster;
    team_a_behind_a_stale_lease(&k, &[("ml", "q"), ("ml2", "q2")]);
    let all_cpu = |ns: &str, job: &str, q: &str| k.job(ns, job, q).replace("cpu: \"1\"", "cpu: \"8\"");
    // job-hold takes all 8 cpu and stays at dispatch's Pending check (the Lease is stale).
    k.apply(&all_cpu("ml", "job-hold", "q"));
    let hold = k.workload_of("ml", "job-hold");
    eventually(&format!("Kueue reserves quota for {hold}"), Duration::from_secs(60), || {
        let w = k.workload("ml", &hold);
        if condition(&w, "QuotaReserved")["status"] == "True" { Ok(()) } else { Err(w["status"].to_string()) }
    });
    let mut waiting = Vec::new();
    for (ns, job, q) in [("ml", "job-b", "q"), ("ml", "job-c", "q"), ("ml2", "job-d", "q2")] {
        k.apply(&all_cpu(ns, job, q));
        waiting.push((ns, k.workload_of(ns, job), q));
    }
    eventually("Kueue's visibility API lists the three waiting Workloads", Duration::from_secs(60), || {
        let (a, b) = (pending(c, "ml", "q"), pending(c, "ml2", "q2"));
        if a.len() == 2 && b.len() == 1 { Ok(()) } else { Err(format!("ml/q {a:?}, ml2/q2 {b:?}")) }
    });

    let mut in_cluster_queue = Vec::new();
    for (ns, name, q) in &waiting {
        let listed = pending(c, ns, q);
        let (_, in_cq, in_lq) =
            listed.iter().find(|p| &p.0 == name).unwrap_or_else(|| panic!("{name} not in {listed:?}"));
        in_cluster_queue.push(*in_cq);
        for context in ["admin", "viewer"] {
            let run = c.dispatch(&["workload", name, "-n", ns, "--context", context, "-o", "json"]);
            run.expect_code(3);
            let doc = run.json();
            assert_eq!(doc["stage"], "waitingForQuota", "{}", run.stdout);
            assert_eq!(doc["position"]["status"], "found", "{context}: {}", run.stdout);
            assert_eq!(doc["position"]["positionInClusterQueue"], *in_cq, "{context}: {}", run.stdout);
            assert_eq!(doc["position"]["positionInLocalQueue"], *in_lq, "{context}: {}", run.stdout);
        }
        let table = c.dispatch(&["workload", name, "-n", ns]);
        table.expect_code(3);
        table.expect_line(&format!(
            "Position: {in_cq} in ClusterQueue team-a, {in_lq} in LocalQueue {q} (Kueue's visibility API, counted from 0)"
        ));
        assert_eq!(table.stderr, "");
    }
    in_cluster_queue.sort();
    assert_eq!(in_cluster_queue, [0, 1, 2], "one ClusterQueue, three waiting Workloads");

    // A user who may read Workloads and LocalQueues but not the visibility API: forbidden,
    // by the apiserver, before the request reaches Kueue.
    let (ns, name, q) = &waiting[0];
    let reader = unique("wl-reader");
    c.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: wl-reader\nrules:\n- apiGroups: [\"kueue.x-k8s.io\"]\n  resources: [\"workloads\", \"localqueues\", \"clusterqueues\", \"admissionchecks\"]\n  verbs: [\"get\", \"list\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: wl-reader\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: wl-reader\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {reader}\n---\n"
    ));
    let run = c.dispatch(&["workload", name, "-n", ns, "--as", &reader, "-o", "json"]);
    run.expect_code(3);
    assert_eq!(run.json()["position"]["status"], "forbidden", "{}", run.stdout);
    assert_eq!(
        run.json()["position"]["missingRbac"],
        format!("get localqueues/pendingworkloads.visibility.kueue.x-k8s.io \"{q}\" in namespace {ns}")
    );

    // A Job queued on a LocalQueue that does not exist: Kueue's visibility server answers 404
    // for it, which is not "not served".
    k.apply(&all_cpu("ml", "job-lost", "no-such-queue"));
    let lost = k.workload_of("ml", "job-lost");
    let raw = c.kubectl(
        &[
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ml/localqueues/no-such-queue/pendingworkloads",
        ],
        None,
    );
    let raw_err = String::from_utf8_lossy(&raw.stderr).to_string();
    assert!(!raw.status.success() && raw_err.contains("NotFound"), "{raw:?}");
    let run = c.dispatch(&["workload", &lost, "-n", "ml", "-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(
        doc["summary"], "waits for LocalQueue no-such-queue, which does not exist in namespace ml",
        "{}",
        run.stdout
    );
    assert_eq!(doc["position"]["status"], "failed", "{}", run.stdout);
    assert_eq!(
        doc["position"]["note"],
        "no queue position: Kueue's visibility API failed: localqueue.visibility.kueue.x-k8s.io \"no-such-queue\" not found (404)"
    );

    // Kueue's manager stopped: the APIService stays registered and the apiserver answers 503,
    // as it does to kubectl. The Workload is still explained; the position is a note.
    c.stop_kueue_manager();
    let raw = c.kubectl(
        &["get", "--raw", "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ml/localqueues/q/pendingworkloads"],
        None,
    );
    let raw_err = String::from_utf8_lossy(&raw.stderr).to_string();
    assert!(!raw.status.success() && raw_err.contains("ServiceUnavailable"), "{raw:?}");
    let asked_before = position_reads(c);
    let run = c.dispatch(&["workload", name, "-n", ns, "-o", "json"]);
    run.expect_code(3);
    // Asked once, as kubectl does: a 503 without Retry-After is not sent again (kube's own
    // retry policy sent it 15 times, over about five minutes).
    let asked = eventually("the audit log records the position's read", Duration::from_secs(10), || {
        let n = position_reads(c) - asked_before;
        if n >= 1 { Ok(n) } else { Err(format!("{n} reads")) }
    });
    assert_eq!(asked, 1, "the 503 was asked again");
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingForQuota", "{}", run.stdout);
    assert_eq!(doc["position"]["status"], "failed", "{}", run.stdout);
    let failed_503 =
        |note: &str| note.starts_with("no queue position: Kueue's visibility API failed: ") && note.ends_with("(503)");
    let note = doc["position"]["note"].as_str().unwrap_or_default();
    assert!(failed_503(note), "{note}");
    // The table is a second run, and the apiserver's words for the same 503 change between
    // runs: "error trying to reach service: dial tcp ...: connection refused" while it still
    // proxies, "service unavailable" once its availability controller marks the APIService
    // unavailable (both seen, the second in CI). So the table's note is one 503 note of
    // either wording, not the JSON's text.
    let table = c.dispatch(&["workload", name, "-n", ns]);
    table.expect_code(3);
    let notes: Vec<&str> = table.lines().into_iter().filter_map(|l| l.strip_prefix("note: ")).collect();
    assert!(notes.len() == 1 && failed_503(notes[0]), "one 503 note, got {notes:?} in:\n{}", table.stdout);
    assert_eq!(table.stderr, "", "a failed position is a note, not a warning or error");
}

/// Everything `workload` sends is a read, the visibility API's discovery included (the
/// apiserver's audit log, by the plugin's user agent).
#[test]
fn the_workload_verb_only_reads() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-audit");
    let status = format!("  conditions:\n{}", cond("QuotaReserved", "False", "Pending", "waiting for quota", 60));
    c.apply(&(world(&s, 1) + &workload(&s.ns, "audited", &s.lq, "", &status)));
    explain(c, &s, "audited", &[]).expect_code(3);
    let wanted = [
        format!("/namespaces/{}/workloads/audited", s.ns),
        format!("/namespaces/{}/localqueues/{}", s.ns, s.lq),
        // Not served on this cluster: discovery says so, and the position is not asked.
        "/apis/visibility.kueue.x-k8s.io".to_string(),
    ];
    let seen = eventually("the audit log records the workload verb's requests", Duration::from_secs(10), || {
        let seen: Vec<(String, String)> = c
            .plugin_events()
            .iter()
            .map(|e| {
                (
                    e["verb"].as_str().unwrap_or_default().to_string(),
                    e["requestURI"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let all = wanted
            .iter()
            .all(|w| seen.iter().any(|(_, uri)| uri.split('?').next().unwrap_or_default().ends_with(w.as_str())));
        if all { Ok(seen) } else { Err(format!("{seen:#?}")) }
    });
    let writes: Vec<_> = seen.iter().filter(|(verb, _)| !matches!(verb.as_str(), "get" | "list" | "watch")).collect();
    assert!(writes.is_empty(), "the plugin sent more than reads: {writes:#?}");
}

/// MultiKueue's placement, as Kueue's MultiKueue controller writes it: first the worker
/// clusters a Workload is nominated to, then (the two are mutually exclusive) the one that
/// admitted it, each as `kubectl get` reads it.
#[test]
fn multikueue_placement_in_the_table_and_json() {
    let c = Cluster::shared();
    let s = Scenario::new("wl-mk");
    let pending = check_entry(&s.check, "Pending", "", 30, "");
    let nominated = format!(
        "{}  admissionChecks:\n{pending}  nominatedClusterNames:\n  - worker-eu-1\n  - worker-us-2\n",
        reserved(&s.cq, false)
    );
    c.apply(&(world(&s, 1) + &workload(&s.ns, "placed", &s.lq, "", &nominated)));
    let oracle = |field: &str| {
        c.kubectl_ok(
            &["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "placed", "-o", &format!("jsonpath={{.status.{field}}}")],
            None,
        )
    };
    assert_eq!(oracle("nominatedClusterNames"), r#"["worker-eu-1","worker-us-2"]"#);
    let run = explain(c, &s, "placed", &["-o", "json"]);
    let mk = run.json()["multiKueue"].clone();
    assert_eq!(mk["nominatedClusterNames"], serde_json::json!(["worker-eu-1", "worker-us-2"]), "{}", run.stdout);
    assert!(mk["clusterName"].is_null(), "{mk}");
    explain(c, &s, "placed", &[]).expect_line("MultiKueue: nominated to worker-eu-1, worker-us-2");

    // Admitted on one worker: clusterName set, the nominations cleared.
    let admitted = format!(
        "{}  admissionChecks:\n{}  nominatedClusterNames: []\n  clusterName: worker-eu-1\n",
        reserved(&s.cq, true),
        check_entry(&s.check, "Ready", "placed on worker-eu-1", 5, "")
    );
    c.apply(&workload(&s.ns, "placed", &s.lq, "", &admitted));
    assert_eq!(oracle("clusterName"), "worker-eu-1");
    let run = explain(c, &s, "placed", &["-o", "yaml"]);
    run.expect_code(0);
    let doc: serde_json::Value = serde_saphyr::from_str(&run.stdout).unwrap();
    assert_eq!(doc["multiKueue"]["clusterName"], "worker-eu-1", "{}", run.stdout);
    assert_eq!(doc["multiKueue"]["nominatedClusterNames"], serde_json::json!([]));
    explain(c, &s, "placed", &[]).expect_line("MultiKueue: admitted on worker-eu-1");
    // Without MultiKueue nothing is shown.
    let plain = format!("{}  admissionChecks:\n{pending}", reserved(&s.cq, false));
    c.apply(&workload(&s.ns, "local", &s.lq, "", &plain));
    let run = explain(c, &s, "local", &["-o", "json"]);
    assert!(run.json().get("multiKueue").is_none(), "{}", run.stdout);
    assert!(!explain(c, &s, "local", &[]).stdout.contains("MultiKueue"));
}

/// Kueue v0.19's reasons on a waiting Workload, from its real manager with
/// UnadmittedWorkloadsObservability on (Beta, off by default in v0.19): a Job that asks for
/// more than the ClusterQueue could ever give (ExceedsMaxQuota), one on a ClusterQueue whose
/// namespaceSelector leaves its namespace out (Misconfigured), one held back by
/// `kueue.x-k8s.io/admission-gated-by`, one on a LocalQueue on hold (Suspended), and one whose
/// node selector no ResourceFlavor matches (NoMatchingFlavor). Each sentence is built from what
/// Kueue wrote, and Next: names the queue to describe.
#[test]
fn v0_19_reasons_through_kueues_manager_v0_19_2() {
    let k = Kueue::start_and("v0.19.2", &["--kueue-feature-gates", "UnadmittedWorkloadsObservability=true"]);
    let c = &k.cluster;
    let ns = "ml";
    team_a_behind_a_stale_lease(&k, &[(ns, "q")]);
    // team-sel admits only namespaces labelled only=elsewhere; LocalQueue q-sel in ml uses it.
    k.apply(
        &(k.cluster_queue("team-sel", "default-flavor", &[])
            .replace("namespaceSelector: {}", "namespaceSelector:\n    matchLabels:\n      only: elsewhere")
            + &k.local_queue(ns, "q-sel", "team-sel")),
    );
    let quota_said = |name: &str, reason: &str| {
        eventually(&format!("Kueue writes QuotaReserved=False {reason} on {name}"), Duration::from_secs(60), || {
            let w = k.workload(ns, name);
            let q = condition(&w, "QuotaReserved").clone();
            if q["status"] == "False" && q["reason"] == reason { Ok(q) } else { Err(w["status"].to_string()) }
        })
    };
    let message = |q: &serde_json::Value| q["message"].as_str().unwrap().to_string();
    // `workload NAME -o json`: the stage and the closing sentence, exit 3.
    let explained = |name: &str, stage: &str, summary: String| {
        let run = c.dispatch(&["workload", name, "-n", ns, "-o", "json"]);
        run.expect_code(3);
        assert_eq!(run.json()["stage"], stage, "{}", run.stdout);
        assert_eq!(run.json()["summary"], summary.as_str(), "{}", run.stdout);
    };
    // `workload NAME`'s table ends with these Next: lines.
    let next_is = |name: &str, next: &[&str]| {
        let run = c.dispatch(&["workload", name, "-n", ns]);
        run.expect_code(3);
        let want: String = std::iter::once("Next:".to_string())
            .chain(next.iter().map(|n| format!("  {n}")))
            .map(|l| l + "\n")
            .collect();
        assert!(run.stdout.ends_with(&want), "{}", run.stdout);
    };

    // 9 cpu on a ClusterQueue of 8: it can never fit.
    k.apply(&k.job(ns, "job-huge", "q").replace("cpu: \"1\"", "cpu: \"9\""));
    let huge = k.workload_of(ns, "job-huge");
    let q = quota_said(&huge, "ExceedsMaxQuota");
    explained(
        &huge,
        "exceedsMaxQuota",
        format!(
            "can never be admitted here: it asks for more than ClusterQueue team-a could ever give (Kueue: ExceedsMaxQuota: {})",
            message(&q)
        ),
    );
    next_is(&huge, &["kubectl describe clusterqueue team-a"]);

    // A ClusterQueue that does not admit the Workload's namespace.
    k.apply(&k.job(ns, "job-sel", "q-sel"));
    let sel = k.workload_of(ns, "job-sel");
    let q = quota_said(&sel, "Misconfigured");
    explained(&sel, "misconfigured", format!("cannot be admitted until Kueue's queues are fixed: {}", message(&q)));

    // Held back by an admission gate: Kueue copies the Job's annotation to its Workload.
    let gated_job = k.job(ns, "job-gated", "q").replacen(
        "  labels:\n",
        "  annotations:\n    kueue.x-k8s.io/admission-gated-by: example.com/hold\n  labels:\n",
        1,
    );
    k.apply(&gated_job);
    let gated = k.workload_of(ns, "job-gated");
    let w = eventually(&format!("Kueue copies the admission gate to {gated}"), Duration::from_secs(60), || {
        let w = k.workload(ns, &gated);
        let gate = &w["metadata"]["annotations"]["kueue.x-k8s.io/admission-gated-by"];
        if gate == "example.com/hold" { Ok(w) } else { Err(w["metadata"].to_string()) }
    });
    assert_ne!(condition(&w, "QuotaReserved")["status"], "True", "{w}");
    let run = c.dispatch(&["workload", &gated, "-n", ns]);
    run.expect_code(3);
    assert_eq!(
        last_line(&run),
        format!(
            "Workload {ns}/{gated}: held back by example.com/hold (annotation kueue.x-k8s.io/admission-gated-by): it has not asked for quota yet"
        )
    );
    assert_eq!(
        c.dispatch(&["workload", &gated, "-n", ns, "-o", "json"]).json()["admissionGatedBy"],
        "example.com/hold"
    );

    // A LocalQueue on hold (spec.stopPolicy: Hold): Kueue admits nothing from it (Suspended),
    // and Next: names both queues.
    k.apply(&k.local_queue(ns, "q-held", "team-a").replace("spec:\n", "spec:\n  stopPolicy: Hold\n"));
    k.apply(&k.job(ns, "job-held", "q-held"));
    let held = k.workload_of(ns, "job-held");
    let q = quota_said(&held, "Suspended");
    explained(
        &held,
        "suspended",
        format!(
            "held: Kueue admits nothing from LocalQueue q-held or ClusterQueue team-a now: one of them is stopped (spec.stopPolicy) or inactive (Kueue: Suspended: {})",
            message(&q)
        ),
    );
    next_is(&held, &["kubectl describe localqueue q-held -n ml", "kubectl describe clusterqueue team-a"]);

    // No ResourceFlavor of the ClusterQueue matches the Job's node selector.
    k.apply(&format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: pool-a\nspec:\n  nodeLabels:\n    pool: a\n---\n{}{}",
        k.cluster_queue("team-pool", "pool-a", &[]),
        k.local_queue(ns, "q-pool", "team-pool")
    ));
    k.apply(
        &k.job(ns, "job-pool-b", "q-pool").replace(
            "      restartPolicy: Never\n",
            "      restartPolicy: Never\n      nodeSelector:\n        pool: b\n",
        ),
    );
    let pool_b = k.workload_of(ns, "job-pool-b");
    let q = quota_said(&pool_b, "NoMatchingFlavor");
    explained(
        &pool_b,
        "noMatchingFlavor",
        format!(
            "cannot be admitted until a ResourceFlavor of ClusterQueue team-pool matches it: none fits its node selector, affinity or tolerations (Kueue: NoMatchingFlavor: {})",
            message(&q)
        ),
    );
    next_is(&pool_b, &["kubectl describe clusterqueue team-pool", "kubectl get resourceflavors -o yaml"]);
}

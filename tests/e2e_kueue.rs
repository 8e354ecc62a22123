//! End to end through real Kueue: every Kueue line users run (v0.14.0, v0.15.0, v0.17.0,
//! v0.19.2), each
//! on a cluster of its own with Kueue's own controller manager and webhooks
//! (`testcluster start --kueue-manager`). Kueue creates the Workloads of suspended Jobs,
//! reserves their quota and puts them at dispatch's check; a stand-in for dispatch-admission
//! then answers the check, and the plugin shows what Kueue made of each answer.
//!
//! Kueue's manager is built from its pinned Go module on first use (minutes; see docs/development.md),
//! then cached. A failing test prints the tail of the manager's log.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::fixtures;
use support::kueue::{Kueue, condition};
use support::watch::Watch;
use support::{Cluster, Run, eventually};

const NS: &str = "ml";
const CHECK: &str = "dispatch";
const LEASE: &str = "dispatch-system/dispatch-admission";

/// The gate's waiting rows as (name, state, quotaReserved, message).
fn rows(run: &Run) -> Vec<(String, String, bool, String)> {
    let json = run.json();
    json["waiting"]
        .as_array()
        .unwrap_or_else(|| panic!("no waiting list in:\n{}", run.stdout))
        .iter()
        .map(|w| {
            assert_eq!(w["clusterQueue"], "team-a", "{w}");
            assert_eq!(w["check"], CHECK, "{w}");
            (
                w["name"].as_str().unwrap().to_string(),
                w["state"].as_str().unwrap().to_string(),
                w["quotaReserved"].as_bool().unwrap(),
                w["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Each chain's verdict, reason and checks, the Lease's detail (it has the Lease's age) left out.
fn judged(run: &Run) -> Vec<Value> {
    let json = run.json();
    json["chains"]
        .as_array()
        .unwrap_or_else(|| panic!("no chains in:\n{}", run.stdout))
        .iter()
        .map(|chain| {
            let mut chain = chain.clone();
            if let Some(checks) = chain["checks"].as_array_mut() {
                checks.iter_mut().filter(|c| c["id"] == "leaseHeartbeat").for_each(|c| c["detail"] = Value::Null);
            }
            chain
        })
        .collect()
}

fn row(name: &str, state: &str, reserved: bool, message: &str) -> (String, String, bool, String) {
    (name.into(), state.into(), reserved, message.into())
}

/// The world of one scenario, as Kueue left it after dispatch answered.
struct Answered {
    ready: String,
    retry: String,
    rejected: String,
}

/// ResourceFlavor, dispatch's AdmissionCheck (Active through /status), ClusterQueue team-a
/// listing it with LocalQueue q, `more` objects beside them, and a fresh dispatch Lease; returns
/// once Kueue marks team-a Active (it does once the check it lists is).
fn team_a_behind_dispatch(k: &Kueue, more: &str) {
    k.apply(&format!(
        "{}{}{}{}{more}",
        k.resource_flavor("default-flavor"),
        k.admission_check(CHECK),
        k.cluster_queue("team-a", "default-flavor", &[CHECK]),
        k.local_queue(NS, "q", "team-a"),
    ));
    k.apply_status(&k.admission_check_active(CHECK));
    k.cluster.apply(&fixtures::lease(
        "dispatch-system",
        "dispatch-admission",
        Some("dispatch-admission-0"),
        Some(0),
        Some(300),
    ));
    eventually("Kueue makes ClusterQueue team-a Active", Duration::from_secs(60), || {
        let cq = k.get(&["clusterqueues.kueue.x-k8s.io", "team-a"]);
        let active = condition(&cq, "Active");
        if active["status"] == "True" { Ok(()) } else { Err(cq["status"].to_string()) }
    });
}

/// ResourceFlavor, dispatch's AdmissionCheck (Active through /status), ClusterQueue team-a
/// listing it, team-b without it, their LocalQueues, a fresh Lease, and suspended Jobs: three
/// on team-a (they wait at dispatch's check) and one on team-b (Kueue admits it at once).
/// The gate lists exactly the three; then dispatch answers Ready, Retry and Rejected.
fn answered_scenario(k: &Kueue) -> Answered {
    let c = &k.cluster;
    team_a_behind_dispatch(
        k,
        &format!("{}{}", k.cluster_queue("team-b", "default-flavor", &[]), k.local_queue(NS, "qb", "team-b")),
    );

    k.apply(&format!(
        "{}{}{}{}",
        k.job(NS, "job-a", "q"),
        k.job(NS, "job-b", "q"),
        k.job(NS, "job-c", "q"),
        k.job(NS, "job-d", "qb")
    ));
    let wl: Vec<String> = ["job-a", "job-b", "job-c", "job-d"].iter().map(|j| k.workload_of(NS, j)).collect();
    // Kueue reserves quota for all four; team-b's has no check and is admitted at once.
    for name in &wl[..3] {
        eventually(&format!("Kueue reserves quota for {name} and puts it at {CHECK}"), Duration::from_secs(60), || {
            let w = k.workload(NS, name);
            let at_check = w["status"]["admissionChecks"][0]["state"] == "Pending";
            if condition(&w, "QuotaReserved")["status"] == "True" && at_check {
                Ok(())
            } else {
                Err(w["status"].to_string())
            }
        });
    }
    eventually(&format!("Kueue admits {} (team-b lists no check)", wl[3]), Duration::from_secs(60), || {
        let w = k.workload(NS, &wl[3]);
        if condition(&w, "Admitted")["status"] == "True" { Ok(()) } else { Err(w["status"].to_string()) }
    });

    // The gate lists exactly the three at dispatch's Pending check.
    let run = c.dispatch(&["gate", "-n", NS, "-o", "json"]);
    run.expect_code(0);
    assert_eq!(run.json()["verdict"], "yes", "{}", run.stdout);
    let mut want: Vec<_> = wl[..3].iter().map(|n| row(n, "Pending", true, "")).collect();
    want.sort();
    assert_eq!(rows(&run), want, "stderr: {}", run.stderr);
    let table = c.dispatch(&["gate", "-n", NS]);
    table.expect_code(0);
    for name in &wl[..3] {
        let want = [NS, name.as_str(), "team-a", CHECK, "Pending"];
        let found = table.lines().iter().any(|l| l.split_whitespace().take(5).eq(want.iter().copied()));
        assert!(found, "no row {want:?} in:\n{}", table.stdout);
    }
    assert!(!table.stdout.contains(&wl[3]), "{}", table.stdout);

    // dispatch answers.
    k.set_check(NS, &wl[0], CHECK, "Ready", "placed on cluster far-1");
    k.set_check(NS, &wl[1], CHECK, "Retry", "cluster far-2 is full; try again");
    k.set_check(NS, &wl[2], CHECK, "Rejected", "no cluster can run this job");
    Answered { ready: wl[0].clone(), retry: wl[1].clone(), rejected: wl[2].clone() }
}

/// What every Kueue line here does with dispatch's answers, read from Kueue itself and then
/// from the plugin.
fn kueue_acts(k: &Kueue, a: &Answered) {
    let c = &k.cluster;
    // Ready: Kueue admits the Workload and unsuspends its Job.
    let admitted = eventually(&format!("Kueue admits {}", a.ready), Duration::from_secs(60), || {
        let w = k.workload(NS, &a.ready);
        let cond = condition(&w, "Admitted").clone();
        if cond["status"] == "True" { Ok(cond) } else { Err(w["status"].to_string()) }
    });
    assert_eq!(admitted["message"], "The workload is admitted", "{admitted}");
    eventually("Kueue unsuspends job-a", Duration::from_secs(30), || {
        let job = k.get(&["job", "-n", NS, "job-a"]);
        if job["spec"]["suspend"] == false { Ok(()) } else { Err(job["spec"].to_string()) }
    });

    // Retry: Kueue evicts the Workload, requeues it, reserves quota again and resets the check
    // to Pending; it waits at dispatch's check again.
    let retry_message = "Reset to Pending after eviction. Previously: Retry";
    eventually(&format!("Kueue requeues {} at {CHECK} after Retry", a.retry), Duration::from_secs(60), || {
        let w = k.workload(NS, &a.retry);
        let check = &w["status"]["admissionChecks"][0];
        let back = check["state"] == "Pending" && check["message"] == retry_message;
        if back && condition(&w, "QuotaReserved")["status"] == "True" { Ok(()) } else { Err(w["status"].to_string()) }
    });
    let w = k.workload(NS, &a.retry);
    // Kueue's own words, which v0.19 made more precise.
    let evicted = match k.version {
        "v0.19.2" => {
            "Previously: Evicted due to AdmissionCheck in Retry state: \"dispatch\" (cluster far-2 is full; try again)"
        }
        _ => "Previously: At least one admission check is false",
    };
    assert_eq!(condition(&w, "Evicted")["message"], evicted, "{w}");

    // Rejected: Kueue deactivates the Workload (spec.active false), releases its quota and
    // resets the check to Pending; its Job stays suspended.
    let reject_message = "Reset to Pending after eviction. Previously: Rejected";
    let deactivated = match k.version {
        "v0.19.2" => {
            "The workload is deactivated due to AdmissionCheck in Rejected state: \"dispatch\" (no cluster can run this job)"
        }
        _ => "The workload is deactivated due to Admission check(s): dispatch, were rejected",
    };
    eventually(&format!("Kueue deactivates {} after Rejected", a.rejected), Duration::from_secs(60), || {
        let w = k.workload(NS, &a.rejected);
        let check = &w["status"]["admissionChecks"][0];
        let done = w["spec"]["active"] == false
            && check["state"] == "Pending"
            && check["message"] == reject_message
            && condition(&w, "QuotaReserved")["status"] == "False"
            && condition(&w, "Evicted")["message"] == deactivated;
        if done { Ok(()) } else { Err(format!("spec.active={} status={}", w["spec"]["active"], w["status"])) }
    });
    let job = k.get(&["job", "-n", NS, "job-c"]);
    assert_eq!(job["spec"]["suspend"], true, "{}", job["spec"]);

    // The plugin: the admitted Workload left the list; the retried one waits again.
    let run = c.dispatch(&["gate", "-n", NS, "-o", "json"]);
    run.expect_code(0);
    assert_eq!(rows(&run), [row(&a.retry, "Pending", true, retry_message)], "stderr: {}", run.stderr);
    // --all-states adds the deactivated one, at the check without quota, with Kueue's message.
    let all = c.dispatch(&["gate", "-n", NS, "--all-states", "-o", "json"]);
    all.expect_code(0);
    let mut want =
        vec![row(&a.retry, "Pending", true, retry_message), row(&a.rejected, "Pending", false, reject_message)];
    want.sort();
    assert_eq!(rows(&all), want, "stderr: {}", all.stderr);
    let table = c.dispatch(&["gate", "-n", NS, "--all-states", "-o", "wide"]);
    table.expect_code(0);
    let line = |name: &str| table.lines().into_iter().find(|l| l.contains(name)).map(str::to_string);
    assert!(line(&a.ready).is_none(), "{}", table.stdout);
    let rejected = line(&a.rejected).unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(rejected.contains("Pending (no quota)") && rejected.ends_with(reject_message), "{rejected}");
    let retried = line(&a.retry).unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(retried.contains(" Pending ") && retried.ends_with(retry_message), "{retried}");
    table.expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(table.stdout.contains(&format!("Lease {LEASE}")), "{}", table.stdout);
}

#[test]
fn kueue_v0_14_0_v1beta1_only() {
    let k = Kueue::start("v0.14.0");
    let served = k.cluster.kubectl_ok(&["get", "--raw", "/apis/kueue.x-k8s.io"], None);
    let group: Value = serde_json::from_str(&served).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta1", "{served}");
    let answered = answered_scenario(&k);
    kueue_acts(&k, &answered);
}

#[test]
fn kueue_v0_17_0() {
    v1beta2_stored("v0.17.0");
}

/// v0.19 serves v1beta1 marked deprecated (the apiserver warns on every v1beta1 read), stores
/// v1beta2, and writes its own reasons on a waiting Workload: the same answers.
#[test]
fn kueue_v0_19_2() {
    v1beta2_stored("v0.19.2");
}

/// One story about a ClusterQueue Kueue itself stops (issue 35, item 3): a Workload reserves
/// quota on team-a and waits at dispatch's check; then team-a is changed to a ResourceFlavor
/// that does not exist, and Kueue's manager reports it `Active=False` (FlavorNotFound). The
/// gate keeps the adapter's yes, and every verb says that Kueue admits nothing there, with
/// `kubectl describe clusterqueue team-a` next.
#[test]
fn an_inactive_cluster_queue_one_story_v0_19_2() {
    let k = Kueue::start("v0.19.2");
    let c = &k.cluster;
    team_a_behind_dispatch(&k, "");
    k.apply(&k.job(NS, "job-a", "q"));
    let wl = k.workload_of(NS, "job-a");
    eventually(&format!("Kueue reserves quota for {wl} at {CHECK}"), Duration::from_secs(60), || {
        let w = k.workload(NS, &wl);
        let at_check = w["status"]["admissionChecks"][0]["state"] == "Pending";
        if condition(&w, "QuotaReserved")["status"] == "True" && at_check {
            Ok(())
        } else {
            Err(w["status"].to_string())
        }
    });
    k.apply(&k.cluster_queue("team-a", "missing-flavor", &[CHECK]));
    eventually("Kueue reports team-a inactive (FlavorNotFound)", Duration::from_secs(60), || {
        let cq = k.get(&["clusterqueues.kueue.x-k8s.io", "team-a"]);
        let active = condition(&cq, "Active");
        if active["status"] == "False" && active["reason"] == "FlavorNotFound" {
            Ok(())
        } else {
            Err(cq["status"].to_string())
        }
    });

    let gate = c.dispatch(&["gate", "-A"]);
    gate.expect_code(0);
    gate.expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(
        gate.lines()
            .iter()
            .any(|l| l.starts_with("Warning: Kueue reports ClusterQueue team-a inactive (FlavorNotFound")),
        "{}",
        gate.stdout
    );
    gate.expect_line("1 workload waits on ClusterQueue team-a, which Kueue reports inactive");
    gate.expect_line("Next:");
    gate.expect_line("  kubectl describe clusterqueue team-a");

    let clause = "Kueue admits nothing on ClusterQueue team-a (FlavorNotFound)";
    let list = c.dispatch(&["workload", "-A", "-o", "json"]);
    list.expect_code(0);
    let items = list.json()["items"].clone();
    let item = items.as_array().unwrap().iter().find(|i| i["name"] == wl.as_str()).unwrap_or_else(|| panic!("{items}"));
    assert_eq!(item["summary"], format!("waits at dispatch's Pending check; {clause}"), "{item}");
    let table = c.dispatch(&["workload", "-A"]);
    assert!(
        table.stderr.contains("(kubectl describe clusterqueue team-a)"),
        "stdout:\n{}\nstderr:\n{}",
        table.stdout,
        table.stderr
    );
    let one = c.dispatch(&["workload", &wl, "-n", NS]);
    one.expect_line("  kubectl describe clusterqueue team-a");
    assert!(one.stdout.contains(clause), "{}", one.stdout);

    let doctor = c.dispatch(&["doctor", "-n", NS]);
    assert!(
        doctor.stdout.contains("nothing stops the gate or the plugin, but Kueue admits nothing on ClusterQueue team-a"),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        doctor.code,
        doctor.stdout,
        doctor.stderr
    );
}

fn v1beta2_stored(version: &'static str) {
    let k = Kueue::start(version);
    let answered = answered_scenario(&k);
    kueue_acts(&k, &answered);
    // v1beta2 is stored: with the manager stopped (and kube-apiserver restarted, so that its
    // watch cache, filled while the webhook answered, serves nothing), the gate reads as
    // before, without a warning.
    k.cluster.stop_kueue_manager();
    k.cluster.kill_apiserver();
    k.cluster.start_apiserver();
    let run = k.cluster.dispatch(&["gate", "-n", NS, "--all-states", "-o", "json"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{}", run.stderr);
    assert_eq!(rows(&run).len(), 2, "{}", run.stdout);
    // The harness runs this manager without leader election: it holds no Lease, which is said
    // as such, never as stale.
    assert_eq!(run.json()["kueueLease"]["status"], "no lease", "{}", run.stdout);
    let table = k.cluster.dispatch(&["gate", "-n", NS]);
    table.expect_line("Kueue's manager: no Lease kueue-system/c1f6bfd2.kueue.x-k8s.io: its heartbeat cannot be shown");
}

/// v0.15 serves v1beta2 through Kueue's conversion webhook and stores v1beta1.
#[test]
fn kueue_v0_15_0_conversion_webhook() {
    let k = Kueue::start("v0.15.0");
    let c = &k.cluster;
    let answered = answered_scenario(&k);
    kueue_acts(&k, &answered);
    let before = c.dispatch(&["gate", "-n", NS, "--all-states", "-o", "json"]);
    before.expect_code(0);
    assert_eq!(before.stderr, "", "{}", before.stderr);

    // The webhook down: v1beta2 cannot be served, so the gate reads v1beta1 and says why.
    // kube-apiserver serves lists from its watch cache, converted while the webhook answered;
    // once it restarts (or for any read the cache does not serve), v1beta2 needs the webhook.
    c.stop_kueue_manager();
    c.kill_apiserver();
    c.start_apiserver();
    let raw = c.kubectl(&["get", "clusterqueues.v1beta2.kueue.x-k8s.io", "team-a"], None);
    assert!(!raw.status.success(), "v1beta2 should need the webhook");
    let run = c.dispatch(&["gate", "-n", NS, "--all-states", "-o", "json"]);
    run.expect_code(0);
    let warning = "Warning: Kueue's conversion webhook does not answer; reading kueue.x-k8s.io/v1beta1 (the API server cannot return ";
    assert!(run.stderr.starts_with(warning), "stderr:\n{}", run.stderr);
    assert!(run.stderr.contains("conversion webhook for kueue.x-k8s.io/v1beta1"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert_eq!(rows(&run), rows(&before), "the same answer from v1beta1");
    assert_eq!(judged(&run), judged(&before), "the same verdict from v1beta1");
    assert!(run.json()["warnings"][0].as_str().unwrap().starts_with(&warning["Warning: ".len()..]));
    // The same for a table, and for --wait, which chooses its version before it watches.
    let table = c.dispatch(&["gate", "-n", NS]);
    table.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(table.stderr.starts_with(warning), "{}", table.stderr);
    let wait = c.dispatch(&["gate", "-n", NS, "--wait", "--timeout", "20s"]);
    wait.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(wait.stderr.starts_with(warning), "{}", wait.stderr);
    assert!(wait.stdout.contains(&answered.retry), "{}", wait.stdout);
    // doctor says the same: Kueue's versions agree, read at v1beta1 (a warning), and why.
    let doctor = c.dispatch(&["doctor", "-n", NS, "-o", "json"]);
    let kueue = kueue_finding(&doctor);
    assert_eq!(kueue["result"], "warning", "{kueue}");
    let detail = kueue["detail"].as_str().unwrap();
    assert!(detail.contains("; the plugin reads v1beta1: Kueue's conversion webhook does not answer; "), "{detail}");

    // When no version can be read, the error says Kueue's webhook is down. Mid-upgrade to a
    // Kueue that stores v1beta2, new objects are stored as v1beta2 while older ones are still
    // v1beta1; then both versions need the webhook.
    c.start_kueue_manager();
    let crd = k.get(&["crd", "workloads.kueue.x-k8s.io"]);
    let versions: Vec<&str> =
        crd["spec"]["versions"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    let storage = |v: &str| versions.iter().position(|n| *n == v).unwrap();
    let patch = format!(
        r#"[{{"op":"replace","path":"/spec/versions/{}/storage","value":false}},{{"op":"replace","path":"/spec/versions/{}/storage","value":true}}]"#,
        storage("v1beta1"),
        storage("v1beta2")
    );
    c.kubectl_ok(&["patch", "crd", "workloads.kueue.x-k8s.io", "--type=json", "-p", &patch], None);
    k.apply(&k.job(NS, "job-e", "q"));
    let newer = k.workload_of(NS, "job-e");
    c.stop_kueue_manager();
    c.kill_apiserver();
    c.start_apiserver();
    let down = c.dispatch(&["gate", "-n", NS]);
    // Only the Workloads fail at v1beta1; which read failed first at v1beta2 is a race.
    down.expect_one_error("Kueue's webhook is down: the API server cannot return Workloads as ");
    // The API server's own words follow the version: up to 1.36 the webhook's failure comes
    // right after the version; 1.37 first says which stored object it could not decode
    // ("failed to read one or more workloads.kueue.x-k8s.io from the storage: ... object not
    // decodable ..."). The plugin passes either on whole.
    let server_words = down.stderr.split_once("kueue.x-k8s.io/v1beta1: ").map(|(_, rest)| rest).unwrap_or_default();
    assert!(
        server_words
            .lines()
            .next()
            .is_some_and(|l| l.contains("conversion webhook for kueue.x-k8s.io/v1beta2, Kind=Workload failed: ")
                && (l.starts_with("conversion webhook")
                    || l.starts_with("failed to read one or more workloads.kueue.x-k8s.io"))),
        "{}",
        down.stderr
    );
    assert!(down.stderr.lines().nth(1).is_some_and(|h| h.contains("Kueue's controller manager")), "{}", down.stderr);
    assert!(!newer.is_empty());
    // doctor: no version can be read, which would stop the gate.
    let doctor = c.dispatch(&["doctor", "-n", NS, "-o", "json"]);
    doctor.expect_code(3);
    let kueue = kueue_finding(&doctor);
    assert_eq!(kueue["result"], "fail", "{kueue}");
    assert!(kueue["detail"].as_str().unwrap().contains("; Kueue's webhook is down: "), "{kueue}");
}

/// `doctor -o json`'s finding about Kueue's versions.
fn kueue_finding(run: &Run) -> Value {
    let v = run.json();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["area"] == "kueue")
        .cloned()
        .unwrap_or_else(|| panic!("no kueue finding: {v:#}"))
}

const KUEUE_LEASE: &str = "kueue-system/c1f6bfd2.kueue.x-k8s.io";

/// `gate -o json`'s kueueLease.
fn kueue_lease(run: &Run) -> Value {
    let doc = run.json();
    assert!(doc["kueueLease"].is_object(), "no kueueLease in:\n{}", run.stdout);
    doc["kueueLease"].clone()
}

/// The line `-o prometheus` writes for Kueue's Lease at `status`.
fn kueue_status_sample(run: &Run, status: &str) -> Option<String> {
    let prefix = format!(
        "kubectl_dispatch_kueue_lease_status{{context=\"admin\",lease=\"{KUEUE_LEASE}\",status=\"{status}\"}} "
    );
    run.stdout.lines().find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
}

/// Waits until Kueue's manager holds its Lease, and returns it. Until the manager has created
/// it, the Lease does not exist: that is a wait, not a failure.
fn kueue_lease_held(c: &Cluster, what: &str, limit: Duration) -> Value {
    let (kns, kname) = KUEUE_LEASE.split_once('/').unwrap();
    eventually(what, limit, || {
        let out = c.kubectl(&["get", "lease", "-n", kns, kname, "-o", "json"], None);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let lease: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if lease["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty()) {
            Ok(lease)
        } else {
            Err(lease.to_string())
        }
    })
}

/// Kueue's own heartbeat, through Kueue v0.19.2's real manager run with leader election on:
/// while it leads, the plugin shows its Lease as Kubernetes holds it and adds no line; once the
/// manager is SIGKILLed and its Lease goes stale, the gate (still yes: Kueue's heartbeat is not
/// one of the adapter's checks) says so under the chain, in JSON and in -o prometheus, doctor
/// has a warning row, and `workload` adds a clause to a Workload that waits for quota. A user
/// who may not read Kueue's Lease gets "forbidden", never "stale". `lease --watch` (a table and
/// JSON) says Kueue's manager going stale at its deadline, with no event from the dead manager,
/// and a manager leading again once it is started anew; the viewer's watch goes on, silent.
#[test]
fn kueues_own_heartbeat_v0_19_2_leader_election() {
    let k = Kueue::start_and("v0.19.2", &["--kueue-leader-elect"]);
    let c = &k.cluster;
    let (kns, kname) = KUEUE_LEASE.split_once('/').unwrap();
    let held = kueue_lease_held(c, "Kueue's manager takes its Lease", Duration::from_secs(90));
    assert_eq!(held["spec"]["leaseDurationSeconds"], 15, "{held}");
    team_a_behind_dispatch(&k, "");
    // A Job that can never fit in team-a's 8 cpu waits for quota.
    k.apply(&k.job(NS, "job-big", "q").replace("cpu: \"1\"", "cpu: \"9\""));
    let big = k.workload_of(NS, "job-big");
    eventually(&format!("Kueue refuses quota to {big}"), Duration::from_secs(60), || {
        let w = k.workload(NS, &big);
        if condition(&w, "QuotaReserved")["status"] == "False" { Ok(()) } else { Err(w["status"].to_string()) }
    });

    // A manager leads: the JSON shows its Lease as Kubernetes holds it; no line, no clause.
    let run = c.dispatch(&["gate", "-n", NS, "-o", "json"]);
    run.expect_code(0);
    let lease = kueue_lease(&run);
    assert_eq!(lease["status"], "fresh", "{lease}");
    assert_eq!(lease["holder"], held["spec"]["holderIdentity"], "{lease}");
    assert_eq!(lease["down"], false);
    let table = c.dispatch(&["gate", "-n", NS]);
    table.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(!table.stdout.contains("Kueue's manager"), "{}", table.stdout);
    let prom = c.dispatch(&["gate", "-n", NS, "-o", "prometheus"]);
    prom.expect_code(0);
    assert_eq!(kueue_status_sample(&prom, "fresh").as_deref(), Some("1"), "{}", prom.stdout);
    let wl = c.dispatch(&["workload", &big, "-n", NS, "-o", "json"]);
    assert!(!wl.json()["summary"].as_str().unwrap().contains("Kueue's manager"), "{}", wl.stdout);
    assert_eq!(wl.json()["kueueLease"]["status"], "fresh", "{}", wl.stdout);

    // lease --watch follows Kueue's Lease beside dispatch's, in a table, in JSON, and as the
    // viewer, who may not read Kueue's Lease (it is context: the watch goes on, and says nothing).
    let mut rows = Watch::start(c, &["lease", "--watch", "--lease", LEASE]);
    let mut json = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", LEASE]);
    let mut viewer = Watch::start(c, &["lease", "--watch", "-o", "json", "--context", "viewer", "--lease", LEASE]);
    rows.wait_for("dispatch's Lease's first row", Duration::from_secs(30), |l| l.contains(" observed "));
    json.wait_for("dispatch's Lease's first change", Duration::from_secs(30), |l| l.contains("\"LeaseChange\""));
    viewer.wait_for("dispatch's Lease's first change", Duration::from_secs(30), |l| l.contains("\"LeaseChange\""));

    // SIGKILLed: nothing releases the Lease; it keeps its holder and goes stale.
    c.kill_kueue_manager();
    let stale_line = rows.wait_for("lease --watch's line on Kueue's manager", Duration::from_secs(120), |l| {
        l.contains("Kueue's manager: ")
    });
    assert!(
        stale_line.contains(&format!("   Kueue's manager: Lease {KUEUE_LEASE} was last renewed "))
            && stale_line.ends_with(" ago, beyond 30s: no manager leads, so Kueue admits nothing"),
        "the first line on Kueue's manager is its going stale: {stale_line}\n{}",
        rows.seen.join("\n")
    );
    let doc = json
        .wait_for("lease --watch's KueueLeaseChange", Duration::from_secs(60), |l| l.contains("\"KueueLeaseChange\""));
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["kueueLease"]["status"], "stale", "{doc}");
    assert_eq!(doc["kueueLease"]["down"], true, "{doc}");
    assert_eq!(doc["kueueLease"]["holder"], held["spec"]["holderIdentity"], "{doc}");
    assert_eq!(doc["detail"].as_str(), Some(stale_line.split_once("   ").unwrap().1), "{doc}");
    // dispatch's Lease renewed: its row carries Kueue's Lease as it is then, stale (or, for the
    // viewer, forbidden: said in the field only).
    c.apply(&fixtures::lease(
        "dispatch-system",
        "dispatch-admission",
        Some("dispatch-admission-0"),
        Some(0),
        Some(300),
    ));
    let renewed = |w: &mut Watch| -> Value {
        let line = w.wait_for("dispatch's Lease renewed", Duration::from_secs(30), |l| l.contains("\"renewed\""));
        serde_json::from_str(&line).unwrap()
    };
    assert_eq!(renewed(&mut json)["kueueLease"]["status"], "stale");
    assert_eq!(renewed(&mut viewer)["kueueLease"]["status"], "forbidden");
    rows.wait_for("dispatch's Lease renewed", Duration::from_secs(30), |l| l.contains(" renewed "));
    let run = eventually("Kueue's manager's Lease goes stale", Duration::from_secs(120), || {
        let run = c.dispatch(&["gate", "-n", NS, "-o", "json"]);
        if kueue_lease(&run)["status"] == "stale" { Ok(run) } else { Err(run.stdout.clone()) }
    });
    run.expect_code(0);
    assert_eq!(run.json()["verdict"], "yes", "Kueue's heartbeat is context, not a check: {}", run.stdout);
    let lease = kueue_lease(&run);
    let now_held = k.get(&["lease", "-n", kns, kname]);
    assert_eq!(lease["holder"], now_held["spec"]["holderIdentity"], "{lease}");
    assert_eq!(lease["holder"], held["spec"]["holderIdentity"], "the same holder, never released");
    assert_eq!(lease["down"], true);
    assert_eq!(lease["limitSeconds"], 30);
    let table = c.dispatch(&["gate", "-n", NS]);
    table.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    let line = table
        .lines()
        .into_iter()
        .find(|l| l.starts_with("Kueue's manager: "))
        .unwrap_or_else(|| panic!("no line for Kueue's manager in:\n{}", table.stdout));
    assert!(
        line.starts_with(&format!("Kueue's manager: Lease {KUEUE_LEASE} was last renewed "))
            && line.ends_with(" ago, beyond 30s: no manager leads, so Kueue admits nothing"),
        "{line}"
    );
    let prom = c.dispatch(&["gate", "-n", NS, "-o", "prometheus"]);
    prom.expect_code(0);
    assert_eq!(kueue_status_sample(&prom, "stale").as_deref(), Some("1"), "{}", prom.stdout);
    assert_eq!(kueue_status_sample(&prom, "fresh").as_deref(), Some("0"), "{}", prom.stdout);
    // doctor: a warning row, which does not change its verdict.
    let doctor = c.dispatch(&["doctor", "-n", NS, "-o", "json"]);
    let finding = doctor.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["area"] == "kueue manager")
        .cloned()
        .unwrap_or_else(|| panic!("no kueue manager finding: {}", doctor.stdout));
    assert_eq!(finding["result"], "warning", "{finding}");
    assert!(finding["detail"].as_str().unwrap().ends_with("no manager leads, so Kueue admits nothing"), "{finding}");
    // workload: the Workload waiting for quota gets the clause.
    let wl = c.dispatch(&["workload", &big, "-n", NS, "-o", "json"]);
    wl.expect_code(3);
    let summary = wl.json()["summary"].as_str().unwrap().to_string();
    let clause = format!("; Kueue's manager is down (its Lease {KUEUE_LEASE} has been stale for ");
    assert!(summary.contains(&clause) && summary.ends_with("), so nothing is admitted until it is back"), "{summary}");
    let wl_table = c.dispatch(&["workload", &big, "-n", NS]);
    assert!(wl_table.lines().iter().any(|l| l.starts_with("Kueue's manager: Lease ")), "{}", wl_table.stdout);

    // The viewer (deploy/rbac.yaml) may not read Kueue's Lease: forbidden, said as such.
    let run = c.dispatch(&["gate", "-n", NS, "--context", "viewer", "-o", "json"]);
    let lease = kueue_lease(&run);
    assert_eq!(lease["status"], "forbidden", "{lease}");
    assert_eq!(
        lease["missingRbac"],
        "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system"
    );
    // The line is context, said when it matters (docs/kueue.md): with nothing waiting, the
    // default view leaves it out and -o wide says it.
    let forbidden_line = format!(
        "Kueue's manager: Lease {KUEUE_LEASE} cannot be read without RBAC: get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system"
    );
    let table = c.dispatch(&["gate", "-n", NS, "--context", "viewer"]);
    assert!(!table.lines().iter().any(|l| l.starts_with("Kueue's manager: ")), "{}", table.stdout);
    let wide = c.dispatch(&["gate", "-n", NS, "--context", "viewer", "-o", "wide"]);
    wide.expect_line(&forbidden_line);
    // --kueue-lease names another Lease: there is none, which is said as such.
    let run = c.dispatch(&["gate", "-n", NS, "--kueue-lease", "kueue-system/renamed", "-o", "json"]);
    assert_eq!(kueue_lease(&run)["status"], "no lease", "{}", run.stdout);

    // Kueue's manager started again takes its Lease over: the watches say a manager leads.
    c.start_kueue_manager();
    let back = rows.wait_for("lease --watch's line on Kueue's manager leading again", Duration::from_secs(120), |l| {
        l.contains("Kueue's manager: ")
    });
    assert!(
        back.contains(&format!("   Kueue's manager: Lease {KUEUE_LEASE} renewed "))
            && back.ends_with(" ago, within 30s: a manager leads"),
        "{back}"
    );
    let doc = json.wait_for("lease --watch's second KueueLeaseChange", Duration::from_secs(60), |l| {
        l.contains("\"KueueLeaseChange\"")
    });
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["kueueLease"]["status"], "fresh", "{doc}");
    assert_ne!(doc["kueueLease"]["holder"], held["spec"]["holderIdentity"], "a new manager holds it: {doc}");
    // Kueue's going stale and its return are two lines (two documents), never a row of
    // dispatch's Lease, and end no watch; the viewer's watch says nothing of a Lease it may not read.
    let kinds = |seen: &[String]| -> Vec<String> {
        seen.iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .map(|d| d["kind"].as_str().unwrap().to_string())
            .filter(|k| k != "LeaseChange")
            .collect()
    };
    let (code, seen, stderr) = rows.stop();
    assert_eq!((code, stderr.len()), (0, 0), "{seen:#?} {stderr:#?}");
    assert_eq!(seen.iter().filter(|l| l.contains("Kueue's manager: ")).count(), 2, "{seen:#?}");
    assert!(seen.iter().all(|l| l.contains("Kueue's manager: ") || !l.contains("Kueue")), "{seen:#?}");
    let (code, seen, stderr) = json.stop();
    assert_eq!((code, stderr.len()), (0, 0), "{seen:#?} {stderr:#?}");
    assert_eq!(kinds(&seen), ["KueueLeaseChange", "KueueLeaseChange"], "{seen:#?}");
    let (code, seen, stderr) = viewer.stop();
    assert_eq!((code, stderr.len()), (0, 0), "{seen:#?} {stderr:#?}");
    assert_eq!(kinds(&seen), Vec::<String>::new(), "{seen:#?}");
}

/// `gate --watch` follows Kueue's manager's Lease live, through Kueue v0.19.2's real manager
/// with leader election on, side by side with `kubectl get lease -w` on the same Lease: no line
/// while the manager leads; SIGKILLed, its Lease goes quiet (kubectl's watch shows nothing
/// more) and the watch says it is stale once its time has passed, from its own timer; started
/// again, the manager takes the Lease back and the watch says a manager leads; killed and its
/// Lease deleted (kubectl shows the DELETED event), the watch says there is no Lease. The chain
/// is never printed again (Kueue's heartbeat is context), and `-o json` prints a document at
/// each change with `kueueLease` as Kubernetes holds the Lease.
#[test]
fn gate_watch_follows_kueues_own_heartbeat_v0_19_2() {
    let k = Kueue::start_and("v0.19.2", &["--kueue-leader-elect"]);
    let c = &k.cluster;
    let (kns, kname) = KUEUE_LEASE.split_once('/').unwrap();
    kueue_lease_held(c, "Kueue's manager takes its Lease", Duration::from_secs(120));
    team_a_behind_dispatch(&k, "");
    let mut kubectl = support::watch::Watch::spawn(
        c.command("kubectl", &["get", "lease", "-n", kns, kname, "-w", "--output-watch-events", "-o", "json"]),
    );
    let mut table = support::watch::Watch::start(c, &["gate", "-n", NS, "--watch"]);
    let mut json = support::watch::Watch::start(c, &["gate", "-n", NS, "--watch", "-o", "json"]);
    let doc = |l: &str| serde_json::from_str::<Value>(l).unwrap_or(Value::Null);
    let status = move |l: &str, want: &str| doc(l)["kueueLease"]["status"] == want;
    table.wait_for("the first verdict", Duration::from_secs(30), |l| l == "ReadmissionGate: yes (the adapter writes)");
    table.wait_for("the waiting count", Duration::from_secs(30), |l| {
        l.ends_with(" workloads wait at dispatch's Pending check")
    });
    json.wait_for("the first document, Kueue's Lease fresh", Duration::from_secs(30), |l| status(l, "fresh"));
    kubectl.wait_for("kubectl's first event", Duration::from_secs(30), |l| l.contains("\"ADDED\""));

    // SIGKILLed: nothing releases the Lease, nothing writes it again.
    c.kill_kueue_manager();
    let line =
        table.wait_for("Kueue's Lease going stale", Duration::from_secs(90), |l| l.contains(" Kueue's manager: "));
    let stamp = "HH:MM:SSZ ".len();
    assert!(
        line[stamp..].starts_with(&format!("Kueue's manager: Lease {KUEUE_LEASE} was last renewed "))
            && line.ends_with(" ago, beyond 30s: no manager leads, so Kueue admits nothing"),
        "{line}"
    );
    let stale =
        doc(&json.wait_for("a document with Kueue's Lease stale", Duration::from_secs(30), |l| status(l, "stale")));
    assert_eq!(stale["verdict"], "yes", "context, not a check: {stale}");
    assert_eq!(stale["kueueLease"]["down"], true, "{stale}");
    // The plugin shows the Lease as kubectl's watch saw its last write, and as Kubernetes
    // holds it now: no write since, so its stale state came from its own timer.
    let renewed = stale["kueueLease"]["renewTime"].as_str().unwrap().to_string();
    // The manager may be killed before it renews once more after kubectl's watch began: then
    // the last write kubectl saw is its ADDED event, which may have been read already.
    if !kubectl.seen.iter().any(|l| l.contains(&renewed)) {
        kubectl.wait_for("kubectl's event with that renewTime", Duration::from_secs(30), |l| l.contains(&renewed));
    }
    let now = k.get(&["lease", "-n", kns, kname]);
    assert_eq!(now["spec"]["renewTime"], renewed.as_str(), "{now}");
    assert_eq!(stale["kueueLease"]["holder"], now["spec"]["holderIdentity"], "{now}");

    // Started again: the manager takes its Lease back.
    c.start_kueue_manager();
    let line =
        table.wait_for("a manager leading again", Duration::from_secs(120), |l| l.contains(" Kueue's manager: "));
    assert!(
        line[stamp..].starts_with(&format!("Kueue's manager: Lease {KUEUE_LEASE} renewed "))
            && line.ends_with(", within 30s: a manager leads"),
        "{line}"
    );
    json.wait_for("a document with Kueue's Lease fresh again", Duration::from_secs(30), |l| status(l, "fresh"));

    // Killed again and its Lease deleted: a manager without leader election holds none.
    c.kill_kueue_manager();
    c.kubectl_ok(&["delete", "lease", "-n", kns, kname], None);
    kubectl.wait_for("kubectl's DELETED event", Duration::from_secs(30), |l| l.contains("\"DELETED\""));
    let line = table.wait_for("no Lease", Duration::from_secs(30), |l| l.contains(" Kueue's manager: "));
    assert_eq!(&line[stamp..], format!("Kueue's manager: no Lease {KUEUE_LEASE}: its heartbeat cannot be shown"));
    json.wait_for("a document without Kueue's Lease", Duration::from_secs(30), |l| status(l, "no lease"));

    let (code, seen, stderr) = table.stop();
    assert_eq!(code, 0, "{stderr:?}");
    let blocks = seen.iter().filter(|l| l.ends_with(" ReadmissionGate re-evaluated")).count();
    assert_eq!(blocks, 1, "the chain printed once, at the start:\n{}", seen.join("\n"));
    let kueue_lines = seen.iter().filter(|l| l.contains(" Kueue's manager: ")).count();
    assert_eq!(kueue_lines, 3, "one line per change of state:\n{}", seen.join("\n"));
    let (code, docs, _) = json.stop();
    assert_eq!(code, 0);
    let states: Vec<String> =
        docs.iter().map(|l| doc(l)["kueueLease"]["status"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(states, ["fresh", "stale", "fresh", "no lease"], "a document per change of state: {docs:#?}");
}

/// A cluster as Kueue v0.20 installs it: Kueue's CRDs serve v1beta2 alone and only the v1beta2
/// visibility APIService is registered (the harness's --kueue-v1beta2-only, on v0.19.2's
/// manager). The gate, its live modes (`--wait`, `--watch`), lease and `lease --watch`, workload
/// (its queue position included, at the version discovery lists), doctor and completion
/// (Workloads, ClusterQueues, AdmissionChecks) work there, all at v1beta2.
#[test]
fn v1beta2_only_cluster_v0_19_2() {
    let k = Kueue::start_and("v0.19.2", &["--kueue-v1beta2-only"]);
    let c = &k.cluster;
    let served = |group: &str| -> Vec<String> {
        let raw = c.kubectl_ok(&["get", "--raw", &format!("/apis/{group}")], None);
        let doc: Value = serde_json::from_str(&raw).unwrap();
        doc["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(served("kueue.x-k8s.io"), ["v1beta2"]);
    assert_eq!(served("visibility.kueue.x-k8s.io"), ["v1beta2"]);
    let answered = answered_scenario(&k);
    kueue_acts(&k, &answered);

    // The live mode reads and watches at v1beta2.
    let wait = c.dispatch(&["gate", "-n", NS, "--wait", "--timeout", "30s"]);
    wait.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert_eq!(wait.stderr, "", "{}", wait.stderr);
    let lease = c.dispatch(&["lease", "--lease", LEASE, "-o", "json"]);
    lease.expect_code(0);
    assert_eq!(lease.json()["lease"]["status"], "fresh", "{}", lease.stdout);
    // lease --watch, and Kueue's Lease beside it: this manager runs without leader election,
    // so there is none, which the watch says in its field only.
    let mut lease = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", LEASE]);
    let first: Value =
        serde_json::from_str(&lease.wait_for("the first change", Duration::from_secs(30), |l| l.contains("observed")))
            .unwrap();
    assert_eq!(first["lease"]["status"], "fresh", "{first}");
    c.apply(&fixtures::lease(
        "dispatch-system",
        "dispatch-admission",
        Some("dispatch-admission-0"),
        Some(0),
        Some(300),
    ));
    let renewed: Value =
        serde_json::from_str(&lease.wait_for("a renewal", Duration::from_secs(30), |l| l.contains("\"renewed\"")))
            .unwrap();
    assert_eq!(renewed["kueueLease"]["status"], "no lease", "{renewed}");
    let (code, seen, stderr) = lease.stop();
    assert_eq!((code, stderr.len()), (0, 0), "{seen:#?} {stderr:#?}");
    assert!(seen.iter().all(|l| l.contains("\"LeaseChange\"")), "no line on a Lease that is not there: {seen:#?}");

    // gate --watch lists, watches and re-reads at v1beta2: a new Job's Workload, put at
    // dispatch's check by Kueue, is one more in its count.
    let mut gate = Watch::start(c, &["gate", "-n", NS, "--watch"]);
    gate.wait_for("the first verdict", Duration::from_secs(30), |l| l == "ReadmissionGate: yes (the adapter writes)");
    let count = |line: &str| -> usize { line.split_whitespace().nth(1).unwrap().parse().unwrap() };
    let at_check = " at dispatch's Pending check";
    let before = count(&gate.wait_for("the waiting count", Duration::from_secs(30), |l| l.ends_with(at_check)));
    k.apply(&k.job(NS, "job-e", "q"));
    let more = format!(" {} workloads wait{at_check}", before + 1);
    gate.wait_for("one more waiting", Duration::from_secs(60), |l| l.ends_with(&more));
    let (code, seen, stderr) = gate.stop();
    assert_eq!((code, stderr.len()), (0, 0), "{seen:#?} {stderr:#?}");

    // A Job that cannot fit beside the retried one waits for quota: its position is the one
    // Kueue's v1beta2 visibility API gives.
    k.apply(&k.job(NS, "job-big", "q").replace("cpu: \"1\"", "cpu: \"8\""));
    let big = k.workload_of(NS, "job-big");
    let path = format!("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/q/pendingworkloads");
    let (in_cq, in_lq) = eventually(&format!("Kueue's visibility API lists {big}"), Duration::from_secs(60), || {
        let raw = c.kubectl_ok(&["get", "--raw", &path], None);
        let doc: Value = serde_json::from_str(&raw).unwrap();
        doc["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["metadata"]["name"] == big.as_str()))
            .map(|i| (i["positionInClusterQueue"].clone(), i["positionInLocalQueue"].clone()))
            .ok_or(raw)
    });
    let run = c.dispatch(&["workload", &big, "-n", NS, "-o", "json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["stage"], "waitingForQuota", "{}", run.stdout);
    assert_eq!(doc["position"]["status"], "found", "{}", run.stdout);
    assert_eq!(doc["position"]["positionInClusterQueue"], in_cq);
    assert_eq!(doc["position"]["positionInLocalQueue"], in_lq);

    // doctor: Kueue serves v1beta2 only, and the plugin reads it.
    let doctor = c.dispatch(&["doctor", "-n", NS, "-o", "json"]);
    let kueue = kueue_finding(&doctor);
    assert_eq!(kueue["result"], "ok", "{kueue}");
    assert_eq!(kueue["detail"], "serves v1beta2; the plugin reads v1beta2");

    // Completion lists the Workloads through kubectl.
    let dir = std::env::temp_dir().join(support::unique("v1beta2-completer"));
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-dispatch"), dir.join("kubectl_complete-dispatch")).unwrap();
    let mut cmd = c.command("kubectl", &["__complete", "dispatch", "workload", "-n", NS, "job-job-big"]);
    cmd.env("PATH", format!("{}:{}", dir.display(), support::plugin_path()));
    let run = Run::from(cmd.output().expect("kubectl __complete"));
    run.expect_code(0);
    assert_eq!(run.lines(), [big.as_str(), ":4"], "{}", run.stderr);
    // ClusterQueues and AdmissionChecks too, read at the version discovery lists.
    for (flag, want) in [("--cluster-queue", &["team-a", "team-b", ":4"][..]), ("--admission-check", &[CHECK, ":4"])] {
        let mut cmd = c.command("kubectl", &["__complete", "dispatch", "gate", flag, ""]);
        cmd.env("PATH", format!("{}:{}", dir.display(), support::plugin_path()));
        let run = Run::from(cmd.output().expect("kubectl __complete"));
        run.expect_code(0);
        assert_eq!(run.lines(), want, "{flag}: {}", run.stderr);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

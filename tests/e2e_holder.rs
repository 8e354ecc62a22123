//! The holder's pod on the real cluster: real Pods and Nodes (bound by spec.nodeName, their
//! status written through /status: there is no kubelet), a Lease whose holderIdentity names
//! them, and `lease` / `gate` through the real kubectl saying what became of the pod, without
//! the verdict ever moving. And the user who may read the Lease but not pods: a note.

mod support;

use support::fixtures::{self, Scenario};
use support::pods::{self, Container};
use support::{Cluster, Run, unique};

/// The Lease of `s`, renewed 1 s ago (acquired 301 s ago) by `holder`.
fn hold(c: &Cluster, s: &Scenario, holder: &str) {
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some(holder), Some(1), Some(15)));
}

fn holder_pod_of(run: &Run) -> serde_json::Value {
    run.expect_code(0);
    run.json()["lease"]["holderPod"].clone()
}

#[test]
fn lease_and_gate_say_what_became_of_the_holders_pod() {
    let c = Cluster::shared();
    let s = Scenario::new("holder");
    c.apply(&s.healthy_yaml());
    pods::namespace_for_pods(c, &s.lease_ns);
    let (up, down) = (unique("node-up"), unique("node-down"));
    c.apply(&pods::node(&up, "True", "KubeletReady"));
    c.apply(&pods::node(&down, "Unknown", "NodeStatusUnknown"));
    let lease = |holder: &str| {
        hold(c, &s, holder);
        holder_pod_of(&c.dispatch(&s.args("lease", &["-o", "json"])))
    };

    // Running and ready: its UID in the identity.
    let ready = unique("ctl-ready");
    c.apply(&pods::pod(&s.lease_ns, &ready, &up, Container::Ready { restarts: 0 }));
    let uid = pods::uid(c, &s.lease_ns, &ready);
    let pod = lease(&format!("{ready}_{uid}"));
    assert_eq!(pod["status"], "running", "{pod}");
    assert_eq!(pod["node"], up.as_str());
    assert_eq!(pod["detail"], format!("pod {ready} is running and ready on node {up}"));

    // Restarting: the count and the last termination's reason.
    let crashing = unique("ctl-crash");
    c.apply(&pods::pod(&s.lease_ns, &crashing, &up, Container::CrashLooping { restarts: 4 }));
    let uid = pods::uid(c, &s.lease_ns, &crashing);
    let pod = lease(&format!("{crashing}_{uid}"));
    assert_eq!((pod["status"].as_str(), pod["restarts"].as_i64()), (Some("restarting"), Some(4)), "{pod}");
    // Finished 120 s before the fixture was written: some seconds more now.
    let detail = pod["detail"].as_str().unwrap();
    let head =
        format!("pod {crashing} is restarting on node {up}: restarted 4 times, last manager Error (exit code 1) 2m");
    // "2m ago" when read within the same second, else "2m<N>s ago".
    let rest = detail.strip_prefix(&head).unwrap_or_else(|| panic!("{detail}"));
    let seconds = rest.strip_suffix(" ago, now CrashLoopBackOff").unwrap_or_else(|| panic!("{detail}"));
    assert!(seconds.is_empty() || seconds.strip_suffix('s').is_some_and(|n| n.parse::<u8>().is_ok()), "{detail}");

    // Ready again after restarts: running, with the restarts said.
    let restarted = unique("ctl-restarted");
    c.apply(&pods::pod(&s.lease_ns, &restarted, &up, Container::Ready { restarts: 2 }));
    let uid = pods::uid(c, &s.lease_ns, &restarted);
    let pod = lease(&format!("{restarted}_{uid}"));
    assert_eq!(pod["status"], "running");
    let detail = pod["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("{restarted} is running and ready on node {up}, restarted 2 times, last manager OOMKilled (exit code 137) 2m")), "{detail}");

    // On a node that is not Ready.
    let stranded = unique("ctl-stranded");
    c.apply(&pods::pod(&s.lease_ns, &stranded, &down, Container::Ready { restarts: 0 }));
    let stranded_holder = format!("{stranded}_{}", pods::uid(c, &s.lease_ns, &stranded));
    let pod = lease(&stranded_holder);
    assert_eq!(pod["status"], "node not ready");
    assert_eq!(
        pod["detail"],
        format!("pod {stranded} is on node {down}, which is not Ready (Ready=Unknown, NodeStatusUnknown)")
    );

    // Gone: no such pod.
    let pod = lease(&format!("{}_0b9e6c1d", unique("ctl-gone")));
    assert_eq!(pod["status"], "gone");
    assert!(
        pod["detail"].as_str().unwrap().ends_with(" is gone: no pod of that name in namespace dispatch-system"),
        "{pod}"
    );

    // Gone: a pod of that name, another UID, created after the holder took the Lease (301 s
    // before this Lease's renewal; the pod is seconds old).
    let pod = lease(&format!("{ready}_6f1e0c4a-another-process"));
    assert_eq!(pod["status"], "gone", "{pod}");
    let detail = pod["detail"].as_str().unwrap();
    assert!(detail.starts_with(&format!("pod {ready} is gone: the pod of that name now (uid ")), "{detail}");
    assert!(detail.ends_with("after the holder took the Lease"), "{detail}");

    // lease -o wide: the HOLDER POD column. The verdict never moves: the Lease is fresh.
    hold(c, &s, &stranded_holder);
    let wide = c.dispatch(&s.args("lease", &["-o", "wide"]));
    wide.expect_code(0);
    assert_eq!(wide.lines()[0].split("   ").filter(|h| !h.is_empty()).last().map(str::trim), Some("HOLDER POD"));
    assert!(
        wide.lines()[1].ends_with(&format!(
            "pod {stranded} is on node {down}, which is not Ready (Ready=Unknown, NodeStatusUnknown)"
        )),
        "{}",
        wide.stdout
    );

    // gate: the Lease check's detail in wide and JSON, not in the table; the verdict yes.
    let sentence = format!("; pod {stranded} is on node {down}, which is not Ready (Ready=Unknown, NodeStatusUnknown)");
    let gate = c.dispatch(&s.args("gate", &["-o", "wide"]));
    gate.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    let check = gate.lines().into_iter().find(|l| l.starts_with("4 ")).unwrap().to_string();
    assert!(check.ends_with(&sentence), "{}", gate.stdout);
    let table = c.dispatch(&s.args("gate", &[]));
    table.expect_code(0);
    assert!(!table.stdout.contains(&sentence), "{}", table.stdout);
    let json = c.dispatch(&s.args("gate", &["-o", "json"]));
    json.expect_code(0);
    let v = json.json();
    assert_eq!(v["verdict"], "yes");
    assert!(v["chains"][0]["checks"][3]["detail"].as_str().unwrap().ends_with(&sentence), "{v}");
    assert_eq!(v["lease"]["holderPod"]["status"], "node not ready");

    // A holder that names no pod: said, and nothing is looked up.
    hold(c, &s, "leader-without-a-pod-name");
    let pod = holder_pod_of(&c.dispatch(&s.args("lease", &["-o", "json"])));
    assert_eq!((pod["status"].as_str(), pod["name"].is_null()), (Some("not a pod"), true), "{pod}");
}

/// no-pods may read the Lease (the default one, which its Role names) but not pods: the pod is
/// a note in wide and JSON, never an error, and neither verdict moves.
#[test]
fn forbidden_pods_are_a_note() {
    let c = Cluster::shared();
    let s = Scenario::new("nopods");
    c.apply(&s.healthy_yaml());
    pods::namespace_for_pods(c, "dispatch-system");
    let name = unique("ctl-hidden");
    let node = unique("node");
    c.apply(&pods::node(&node, "True", "KubeletReady"));
    c.apply(&pods::pod("dispatch-system", &name, &node, Container::Ready { restarts: 0 }));
    let uid = pods::uid(c, "dispatch-system", &name);
    c.apply(&fixtures::lease(
        "dispatch-system",
        "dispatch-admission",
        Some(&format!("{name}_{uid}")),
        Some(1),
        Some(15),
    ));

    let note = format!("pod {name} not checked: missing RBAC: get pods in namespace dispatch-system");
    let json = c.dispatch(&["lease", "--context", "no-pods", "-o", "json"]);
    let pod = holder_pod_of(&json);
    assert_eq!(pod["status"], "forbidden");
    assert_eq!(pod["missingRbac"], "get pods in namespace dispatch-system");
    assert_eq!(pod["detail"], note.as_str());
    assert_eq!(json.json()["lease"]["status"], "fresh");
    let wide = c.dispatch(&["lease", "--context", "no-pods", "-o", "wide"]);
    wide.expect_code(0);
    assert!(wide.lines()[1].ends_with(&note), "{}", wide.stdout);
    assert!(!wide.stderr.contains("error"), "{}", wide.stderr);
    let gate = c.dispatch(&["gate", "--context", "no-pods", "--controller-name", &s.controller, "-o", "wide"]);
    gate.expect_code(0).expect_line("ReadmissionGate: yes (the adapter writes)");
    assert!(gate.stdout.contains(&format!("; {note}")), "{}", gate.stdout);

    // The viewer may read pods: the same Lease, the pod seen running.
    let viewer = c.dispatch(&["lease", "--context", "viewer", "-o", "json"]);
    assert_eq!(holder_pod_of(&viewer)["status"], "running");
}

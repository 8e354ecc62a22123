//! Data honesty end to end, through `kubectl dispatch`: the Lease is judged at a moment no
//! earlier than the one its answer arrived (a slow Lease answer ages it), one object's odd
//! metadata time never makes a whole list unreadable (the hostile server serves it: a real
//! apiserver resets such times), and invisible or direction-changing characters in a holder's
//! name reach the terminal escaped.

mod support;

use std::time::Duration;

use support::fixtures::{self, Scenario};
use support::hostile::Hostile;
use support::{Cluster, Run};

/// How long the forwarder holds the Lease's GET back: past the Lease's stale limit
/// (2 × leaseDurationSeconds = 10 s), far past the time a run takes to start reading.
const HELD: Duration = Duration::from_secs(14);

/// A Lease renewed just now, fresh when the gate starts, whose answer arrives only after the
/// Lease has gone stale (a forwarder in front of `kubectl proxy` holds its GET back): the gate
/// judges it at the moment the answer arrived or later, so it says no (3), where reading `now`
/// as the reads start said yes. `workload` and `doctor` judge it the same way.
#[test]
fn a_lease_that_went_stale_while_it_was_read_is_judged_stale() {
    let c = Cluster::shared();
    let s = Scenario::new("slowlease");
    c.apply(&s.healthy_yaml());
    let path = format!("/leases/{}", s.lease_name);
    let chosen = move |request: &str| request.starts_with("GET ") && request.contains(&path);
    let paced = support::forward::Pager::start_before(c, chosen, || std::thread::sleep(HELD));
    let dir = std::env::temp_dir().join(support::unique("dispatch-slowlease"));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("config");
    paced.kubeconfig(&kubeconfig);

    // Renewed now, for 5 s: fresh for the first 10 s of the run.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(0), Some(5)));
    let mut args = vec!["dispatch", "--kubeconfig", kubeconfig.to_str().unwrap()];
    args.extend(s.args("gate", &["-o", "json"]));
    let run = Run::from(c.command("kubectl", &args).output().unwrap());
    let doc = run.json();
    assert_eq!(doc["lease"]["status"], "stale", "the Lease is judged when its answer came:\n{}", run.stdout);
    run.expect_code(3);
    let held = paced.requests.lock().unwrap().iter().filter(|l| l.contains("/leases/")).count();
    assert!(held >= 1, "the Lease's GET went through the forwarder");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A holder's name that hides text in tag characters, turns direction with an Arabic letter
/// mark and an isolate, and breaks nothing visibly with a soft hyphen and a word joiner: the
/// table shows each as `\u{..}`, as kubectl's JSON keeps every one exact.
#[test]
fn invisible_and_direction_changing_characters_in_a_holder_are_shown() {
    let c = Cluster::shared();
    let s = Scenario::new("hidden");
    c.apply(&s.healthy_yaml());
    let tags: String = "rm -rf".chars().map(|ch| char::from_u32(0xE0000 + ch as u32).unwrap()).collect();
    let holder = format!("ctl\u{00AD}a{tags}\u{061C}b\u{2066}c\u{2060}d\u{FFF9}e\u{206A}");
    // JSON, as the API server stores it (the YAML fixture would write Rust's escapes).
    let lease = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": s.lease_name, "namespace": s.lease_ns},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": fixtures::micro_ago(1)},
    });
    c.apply(&lease.to_string());
    let table = c.dispatch(&s.args("lease", &[]));
    table.expect_code(0);
    let want = "ctl\\u{ad}a\\u{e0072}\\u{e006d}\\u{e0020}\\u{e002d}\\u{e0072}\\u{e0066}\\u{61c}b\\u{2066}c\\u{2060}d\\u{fff9}e\\u{206a}";
    assert!(table.stdout.contains(want), "the holder, escaped:\n{}", table.stdout);
    for ch in table.stdout.chars() {
        assert!(ch == '\n' || !kubectl_dispatch::text::sanitize::needs_escape(ch), "{ch:?} reached the terminal");
    }
    let json = c.dispatch(&s.args("lease", &["-o", "json"]));
    assert_eq!(json.json()["lease"]["holder"], holder.as_str(), "JSON keeps the value exact");
}

/// A holder pod whose two containers each say i32::MAX restarts: the sum stays at i32::MAX
/// (it wrapped, or in a debug build panicked, before).
#[test]
fn restart_counts_at_the_extreme_do_not_wrap() {
    let c = Cluster::shared();
    let s = Scenario::new("restarts");
    c.apply(&s.healthy_yaml());
    support::pods::namespace_for_pods(c, &s.lease_ns);
    let node = support::unique("node-max");
    c.apply(&support::pods::node(&node, "True", "KubeletReady"));
    let pod = support::unique("ctl-max");
    let container = |name: &str| {
        format!(
            "  - name: {name}\n    image: registry.invalid/dispatch-admission:1\n    imageID: \"\"\n    ready: true\n    restartCount: {}\n    state:\n      running:\n        startedAt: \"{}\"\n",
            i32::MAX,
            fixtures::time_ago(60)
        )
    };
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: {ns}\nspec:\n  nodeName: {node}\n  automountServiceAccountToken: false\n  containers:\n  - name: manager\n    image: registry.invalid/dispatch-admission:1\n  - name: sidecar\n    image: registry.invalid/dispatch-admission:1\nstatus:\n  phase: Running\n  conditions:\n  - type: Ready\n    status: \"True\"\n  containerStatuses:\n{}{}",
        container("manager"),
        container("sidecar"),
        ns = s.lease_ns,
    ));
    let uid = support::pods::uid(c, &s.lease_ns, &pod);
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some(&format!("{pod}_{uid}")), Some(1), Some(15)));
    let run = c.dispatch(&s.args("lease", &["-o", "json"]));
    run.expect_code(0);
    let held = &run.json()["lease"]["holderPod"];
    assert_eq!(held["restarts"].as_i64(), Some(i64::from(i32::MAX)), "{held}");
}

/// The hostile server's small Kueue API, every object's metadata carrying a time jiff cannot
/// hold (`creationTimestamp` 9999-12-31T23:59:59Z, a managedFields time in year 10000), the
/// Lease's too: the gate reads every object (the plugin reads no metadata time) and says yes
/// with both waiting Workloads, where one such object made the whole list "cannot decode". A
/// third Workload whose spec no client can read is left out with one warning.
#[test]
fn odd_metadata_times_leave_every_list_readable() {
    let server = Hostile::start("odd-times");
    let dir = std::env::temp_dir().join(support::unique("dispatch-oddtimes"));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: x\n    user: x\n    namespace: team\nclusters:\n- name: x\n  cluster:\n    server: http://{}\nusers:\n- name: x\n  user: {{}}\n",
            server.addr
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "dispatch",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "gate",
            "--controller-name",
            "dispatch-admission",
            "--lease",
            "dispatch-system/dispatch-admission",
        ];
        args.extend_from_slice(extra);
        let mut cmd = std::process::Command::new("kubectl");
        cmd.args(&args).env("PATH", support::plugin_path());
        for var in ["KUBECONFIG", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            cmd.env_remove(var);
        }
        Run::from(cmd.output().expect("run kubectl"))
    };
    for extra in [&["-A", "-o", "json"][..], &["-o", "json"][..]] {
        let gate = run(extra);
        assert!(!gate.stderr.contains("cannot decode") && !gate.stderr.contains("panicked"), "{}", gate.stderr);
        gate.expect_code(0);
        let doc = gate.json();
        let names: Vec<&str> = doc["waiting"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["w-odd", "w-plain"], "{extra:?}: {}", gate.stdout);
        assert_eq!(doc["lease"]["status"], "fresh", "{}", gate.stdout);
        // The one object no client can read is left out, said once.
        let said: Vec<&str> = gate.stderr.lines().filter(|l| l.contains("w-unreadable")).collect();
        assert_eq!(said.len(), 1, "{}", gate.stderr);
        assert!(said[0].starts_with("Warning: cannot read Workload team/w-unreadable, left out: "), "{}", gate.stderr);
    }
    let table = run(&["-A"]);
    table.expect_code(0);
    assert!(table.stdout.contains("w-odd"), "{}", table.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

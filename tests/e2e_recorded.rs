//! The fast tier's recordings (`tests/recorded/`) kept equal to what the real kube-apiserver
//! answers. One world of Kueue objects and Leases on a real test cluster; each recorded command
//! run as `kubectl dispatch ...` through a recording proxy (`support::record`) in front of
//! `kubectl proxy` as the command's user; what it saw compared with the committed recording,
//! volatile values (resourceVersion, uid, times, continue tokens) aside. A recording that no
//! longer matches fails here, naming the first answer that differs.
//!
//! `DISPATCH_RECORD=1 cargo test --test e2e_recorded` writes the recordings instead; then
//! `UPDATE_GOLDEN=1 cargo test --test inprocess_commands` writes the outputs the fast tier
//! expects of them.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use support::fixtures::{admission_check, cluster_queue, lease, local_queue, workload};
use support::record::Recorder;
use support::script::Script;
use support::{Cluster, Run, with_kubeconfig};

/// One recorded command: its file's name, the context it runs in, its arguments, its exit code.
/// Each is run twice, as given and with `-o wide`, so the recording answers every format.
struct Case {
    name: &'static str,
    context: &'static str,
    args: &'static [&'static str],
    code: i32,
}

const ONE_SHOT: &[Case] = &[
    Case { name: "gate-healthy", context: "admin", args: &["gate", "-A"], code: 0 },
    Case {
        name: "gate-stale",
        context: "admin",
        args: &["gate", "-A", "--lease", "dispatch-system/stale-admission"],
        code: 3,
    },
    Case {
        name: "gate-missing-lease",
        context: "admin",
        args: &["gate", "--lease", "dispatch-system/dispatch-admision"],
        code: 3,
    },
    Case { name: "gate-forbidden", context: "no-lease", args: &["gate", "-A"], code: 4 },
    Case { name: "lease-fresh", context: "admin", args: &["lease"], code: 0 },
    Case {
        name: "lease-stale",
        context: "admin",
        args: &["lease", "--lease", "dispatch-system/stale-admission"],
        code: 3,
    },
    Case { name: "lease-forbidden", context: "no-lease", args: &["lease"], code: 4 },
    Case {
        name: "lease-missing",
        context: "admin",
        args: &["lease", "--lease", "dispatch-system/dispatch-admision"],
        code: 3,
    },
    Case { name: "gate-namespace", context: "admin", args: &["gate", "-n", "team-a"], code: 0 },
    Case { name: "workload", context: "admin", args: &["workload", "job-a", "-n", "team-a"], code: 3 },
    Case { name: "workloads", context: "admin", args: &["workloads", "-A"], code: 0 },
    Case { name: "doctor", context: "admin", args: &["doctor"], code: 0 },
];

/// The world every recording sees: dispatch's check listed by team-a's ClusterQueue, another
/// controller's check by team-b's, a LocalQueue each, two Workloads waiting at dispatch's
/// Pending check and one waiting for quota; written again before each command, so every
/// recording sees the same ages.
fn recorded_world() -> String {
    [
        admission_check("dispatch", "dispatch-admission", Some(true)),
        admission_check("other", "example.com/other", Some(true)),
        cluster_queue("team-a", &["dispatch"]),
        cluster_queue("team-b", &["other"]),
        local_queue("team-a", "default", "team-a"),
        local_queue("team-b", "default", "team-b"),
        workload("team-a", "job-a", "default", Some("team-a"), &[("dispatch", "Pending", "waiting for dispatch", 60)]),
        workload("team-a", "job-b", "default", Some("team-a"), &[("dispatch", "Pending", "waiting for dispatch", 30)]),
        workload("team-b", "job-c", "default", None, &[]),
        leases(2),
    ]
    .concat()
}

/// dispatch's Lease renewed `secs` ago (60 s, so it stays fresh for the two runs of a command
/// on a loaded machine), and a stale one renewed 125 s ago (15 s).
fn leases(secs: i64) -> String {
    [
        lease("dispatch-system", "dispatch-admission", Some("dispatch-admission-7d9f_1"), Some(secs), Some(60)),
        lease("dispatch-system", "stale-admission", Some("dispatch-admission-5c4b_1"), Some(125), Some(15)),
    ]
    .concat()
}

/// `DISPATCH_RECORD=1` records every script again; `DISPATCH_RECORD=NAME,NAME` those named.
fn recording(name: &str) -> bool {
    let wanted = std::env::var("DISPATCH_RECORD").unwrap_or_default();
    wanted == "1" || wanted.split(',').any(|w| w == name)
}

/// Saves `seen` (recording) or compares it with the committed one; returns what differs.
fn keep_or_compare(name: &str, seen: &Script) -> Option<String> {
    if recording(name) {
        seen.save(name);
        return None;
    }
    let committed = Script::load(name);
    if (&committed.command, &committed.context) != (&seen.command, &seen.context) {
        return Some(format!(
            "{name}: recorded for {:?} in {}, the test runs {:?} in {}",
            committed.command, committed.context, seen.command, seen.context
        ));
    }
    let (want, got) = (committed.comparable(), seen.comparable());
    if want == got {
        return None;
    }
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap();
    let first = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let show = |list: &[serde_json::Value]| list.get(first).map(pretty).unwrap_or_else(|| "(none)".into());
    let keys = |list: &[serde_json::Value]| -> Vec<String> { list.iter().map(|v| v["key"].to_string()).collect() };
    let differing: Vec<String> =
        want.iter().zip(&got).filter(|(a, b)| a != b).map(|(a, _)| a["key"].to_string()).collect();
    Some(format!(
        "{name}: the real apiserver's answers differ from tests/recorded/{name}.json ({} answers recorded, {} now; differing: {differing:?}; recorded only: {:?}; now only: {:?}); the first that differs:\n--- recorded\n{}\n--- now\n{}",
        want.len(),
        got.len(),
        keys(&want).into_iter().filter(|k| !keys(&got).contains(k)).collect::<Vec<_>>(),
        keys(&got).into_iter().filter(|k| !keys(&want).contains(k)).collect::<Vec<_>>(),
        show(&want),
        show(&got)
    ))
}

#[test]
fn the_recordings_are_what_the_real_apiserver_answers() {
    let c = Cluster::shared();
    let mut drifted = Vec::new();
    for case in ONE_SHOT {
        c.apply(&recorded_world());
        let recorder = Recorder::start(c, case.context);
        let started = Timestamp::now();
        let run = with_kubeconfig(&recorder.kubeconfig(), case.args);
        // -o wide reads more (the holder's pod): the recording has its answers too.
        let wide: Vec<&str> = case.args.iter().copied().chain(["-o", "wide"]).collect();
        with_kubeconfig(&recorder.kubeconfig(), &wide).expect_code(case.code);
        if run.code != case.code {
            drifted.push(format!(
                "{}: {:?} exited {}, not {}\nstdout:\n{}\nstderr:\n{}",
                case.name, case.args, run.code, case.code, run.stdout, run.stderr
            ));
        }
        let seen = recorder.script(case.args, started);
        assert!(!seen.exchanges.is_empty(), "{}: the recorder saw no request", case.name);
        drifted.extend(keep_or_compare(case.name, &seen));
    }
    drifted.extend(record_lease_watch(c));
    drifted.extend(record_gate_watch(c));
    assert!(drifted.is_empty(), "{}", drifted.join("\n\n"));
}

/// `lease --watch` for 4.5 s while the Lease is renewed at 1.5 s and 3 s: the list, the watch
/// and its two MODIFIED events at their times (and Kueue's Lease, missing, followed as context).
fn record_lease_watch(c: &Cluster) -> Option<String> {
    let renew = || c.apply(&leases(0));
    let seen = record_live(c, &["lease", "--watch"], 2, [&renew as &dyn Fn(), &renew]);
    let watch = seen.exchanges.iter().find(|e| e.is_watch() && e.uri.contains("dispatch-admission"));
    assert_eq!(modified(watch), 2, "two renewals seen by the watch: {:#?}", seen.exchanges);
    keep_or_compare("lease-watch", &seen)
}

/// `gate --watch -A` for 4.5 s while dispatch's AdmissionCheck turns inactive at 1.5 s and
/// active again at 3 s: the six lists and watches, the check's changes at their times.
fn record_gate_watch(c: &Cluster) -> Option<String> {
    let inactive = || c.apply(&admission_check("dispatch", "dispatch-admission", Some(false)));
    let active = || c.apply(&admission_check("dispatch", "dispatch-admission", Some(true)));
    let seen = record_live(c, &["gate", "--watch", "-A"], 6, [&inactive as &dyn Fn(), &active]);
    let watch = seen.exchanges.iter().find(|e| e.is_watch() && e.uri.contains("admissionchecks"));
    assert!(modified(watch) >= 2, "the check's changes seen by the watch: {:#?}", seen.exchanges);
    keep_or_compare("gate-watch", &seen)
}

/// How many MODIFIED events a recorded watch has.
fn modified(watch: Option<&support::script::Exchange>) -> usize {
    watch.map_or(0, |w| w.chunks.iter().filter(|c| c.line.as_ref().is_some_and(|l| l["type"] == "MODIFIED")).count())
}

/// `kubectl-dispatch ARGS` as admin through a recorder, `changes` made 1.5 s and 3 s after its
/// `watches` watches are open, ended 1.5 s later; what the recorder saw. The plugin is ended by SIGINT, as Ctrl-C ends it.
fn record_live(c: &Cluster, args: &[&str], watches: usize, changes: [&dyn Fn(); 2]) -> Script {
    c.apply(&recorded_world());
    let recorder = Recorder::start(c, "admin");
    let dir = support::temp_dir("record-watch");
    let path = dir.join("config");
    std::fs::write(&path, recorder.kubeconfig()).unwrap();
    let started = Timestamp::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-dispatch"))
        .args(args)
        .env("KUBECONFIG", &path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the plugin");
    // The changes are made once every watch is open, so they come as events, not in the lists,
    // however slowly a loaded machine starts the plugin.
    support::eventually("the plugin's watches are open", Duration::from_secs(60), || {
        (recorder.watches() >= watches).then_some(()).ok_or_else(|| format!("{} watches", recorder.watches()))
    });
    let begun = Instant::now();
    for (at, change) in [1500, 3000].into_iter().zip(changes) {
        std::thread::sleep(Duration::from_millis(at).saturating_sub(begun.elapsed()));
        change();
    }
    std::thread::sleep(Duration::from_millis(4500).saturating_sub(begun.elapsed()));
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill").args(["-INT", &pid]).status();
    let run = Run::from(child.wait_with_output().expect("the plugin ends"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(run.lines().len() >= 3, "{args:?} printed what it saw:\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    recorder.script(args, started)
}

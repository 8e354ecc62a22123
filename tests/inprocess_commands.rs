//! The fast tier: whole one-shot commands in process (`support::inprocess`, `app::run` at a
//! fixed clock) against the real kube-apiserver's answers recorded in `tests/recorded/`
//! (`tests/e2e_recorded.rs` keeps them equal to what it answers) and served on loopback by
//! `support::replay`, in every output format. Each run's exit code, stdout and stderr are
//! compared with `tests/recorded/golden/RECORDING.FORMAT.txt`; `UPDATE_GOLDEN=1` rewrites them.
//!
//! A run that asks for something the recording lacks fails, naming the request.

mod support;

use std::time::Duration;

use kubectl_dispatch::clock::FixedClock;
use support::replay::Replay;
use support::script::{Script, epoch};

/// The formats every verb takes, by the name of their golden file.
const FORMATS: &[(&str, &[&str])] = &[
    ("table", &[]),
    ("wide", &["-o", "wide"]),
    ("json", &["-o", "json"]),
    ("yaml", &["-o", "yaml"]),
    ("name", &["-o", "name"]),
    ("jsonpath", &["-o", "jsonpath={.kind}{\"\\n\"}"]),
    ("custom-columns", &["-o", "custom-columns=KIND:.kind,SCHEMA:.schema"]),
    ("no-headers", &["--no-headers"]),
];

/// gate's own: Prometheus text, and a template over its chains.
const GATE_FORMATS: &[(&str, &[&str])] = &[
    ("prometheus", &["-o", "prometheus"]),
    ("jsonpath-chains", &["-o", "jsonpath={range .chains[*]}{.clusterQueue}={.verdict}{\"\\n\"}{end}"]),
];

fn golden_folder() -> std::path::PathBuf {
    support::repo().join("tests/recorded/golden")
}

/// Runs the recording's command in each format with `extra` formats, against the recording;
/// compares each with its golden file. Returns every mismatch.
fn check(recording: &str, extra: &[(&str, &[&str])]) {
    check_formats(recording, extra, &[]);
}

/// [`check`], leaving out the formats named in `without` (ones the verb does not take).
fn check_formats(recording: &str, extra: &[(&str, &[&str])], without: &[&str]) {
    let script = Script::load(recording);
    let mut failures = Vec::new();
    for (format, flags) in FORMATS.iter().chain(extra).filter(|(f, _)| !without.contains(f)) {
        let replay = Replay::start(&script);
        let mut args: Vec<&str> = script.command.iter().map(String::as_str).collect();
        args.extend_from_slice(flags);
        let run = support::inprocess::run(
            &replay.kubeconfig(&script.context),
            &args,
            &FixedClock(epoch()),
            Duration::from_secs(20),
        );
        replay.expect_all_answered();
        let text = format!("exit {}\n--- stdout\n{}--- stderr\n{}", run.code, run.stdout, run.stderr)
            .replace(&replay.url(), "http://SERVER");
        failures.extend(against_golden(&format!("{recording}.{format}.txt"), &text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn against_golden(file: &str, got: &str) -> Option<String> {
    let path = golden_folder().join(file);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(golden_folder()).unwrap();
        std::fs::write(&path, got).unwrap();
        return None;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| format!("{}: {e} (UPDATE_GOLDEN=1 cargo test --test inprocess_commands)", path.display()));
    (want != got).then(|| format!("{} differs:\n--- want\n{want}--- got\n{got}", path.display()))
}

#[test]
fn gate_on_a_healthy_gate() {
    check("gate-healthy", GATE_FORMATS);
}

#[test]
fn gate_on_a_stale_lease() {
    check("gate-stale", GATE_FORMATS);
}

#[test]
fn gate_on_a_missing_lease_with_a_hint() {
    check("gate-missing-lease", GATE_FORMATS);
}

#[test]
fn gate_without_the_right_to_read_the_lease() {
    check("gate-forbidden", GATE_FORMATS);
}

#[test]
fn lease_fresh() {
    check("lease-fresh", &[]);
}

#[test]
fn lease_stale() {
    check("lease-stale", &[]);
}

#[test]
fn lease_forbidden() {
    check("lease-forbidden", &[]);
}

#[test]
fn lease_missing() {
    check("lease-missing", &[]);
}

#[test]
fn gate_in_one_namespace() {
    check("gate-namespace", &[]);
}

#[test]
fn workload_explained() {
    check("workload", &[]);
}

#[test]
fn workloads_listed() {
    check("workloads", &[]);
}

#[test]
fn doctor_checks() {
    // doctor's report is no list of objects: it takes no `-o name` (a usage error, exit 2).
    check_formats("doctor", &[], &["name"]);
}

/// The drift check's rule: a new resourceVersion, uid or time is the same answer; a changed
/// field the plugin reads is not.
#[test]
fn a_changed_answer_is_drift_and_a_new_resource_version_is_not() {
    let recorded = Script::load("lease-fresh");
    let mut again = recorded.clone();
    let lease = again.exchange_mut("leases/dispatch-admission").body.as_mut().expect("the Lease");
    lease["metadata"]["resourceVersion"] = "999999".into();
    lease["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000".into();
    lease["spec"]["renewTime"] = "2031-01-01T00:00:00.000000Z".into();
    assert_eq!(recorded.comparable(), again.comparable());
    let lease = again.exchange_mut("leases/dispatch-admission").body.as_mut().expect("the Lease");
    lease["spec"]["holderIdentity"] = "someone-else".into();
    assert_ne!(recorded.comparable(), again.comparable());
}

/// The binary itself, as a user runs it (KUBECONFIG, the system clock), against a recording:
/// `main`'s one error line and exit code for a Lease it may not read.
#[test]
fn the_binary_against_a_recording() {
    let script = Script::load("lease-forbidden");
    let replay = Replay::start(&script);
    let dir = support::temp_dir("inprocess-binary");
    let config = dir.join("config");
    std::fs::write(&config, replay.kubeconfig(&script.context)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-dispatch"))
        .args(&script.command)
        .args(["-o", "json"])
        .env("KUBECONFIG", &config)
        .output()
        .expect("run the plugin");
    std::fs::remove_dir_all(&dir).unwrap();
    replay.expect_all_answered();
    let run = support::Run::from(out);
    run.expect_code(4);
    assert_eq!(run.json()["lease"]["status"], "forbidden", "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(lines.len() == 2 && lines[0].starts_with("error: ") && lines[0].contains("is forbidden"), "{}", run.stderr);
}

/// `recording`'s command with `flags` in process at the recording's clock; every request
/// answered.
fn replayed(recording: &str, flags: &[&str]) -> support::Run {
    let script = Script::load(recording);
    let replay = Replay::start(&script);
    let mut args: Vec<&str> = script.command.iter().map(String::as_str).collect();
    args.extend_from_slice(flags);
    let run = support::inprocess::run(
        &replay.kubeconfig(&script.context),
        &args,
        &FixedClock(epoch()),
        Duration::from_secs(20),
    );
    replay.expect_all_answered();
    run
}

/// `lease` reports each status (moved down from the end-to-end tier: rendering and exit codes
/// of answers the recordings hold): fresh in JSON, forbidden without headers (exit 4), missing
/// in the wide table (exit 3).
#[test]
fn the_lease_verb_reports_each_status() {
    let fresh = replayed("lease-fresh", &["-o", "json"]);
    fresh.expect_code(0);
    let json = fresh.json();
    assert_eq!(json["kind"], "LeaseReport");
    assert_eq!(json["lease"]["status"], "fresh");
    assert_eq!(json["lease"]["leaseDurationSeconds"], 60);
    assert_eq!(json["lease"]["leaseTransitions"], 2);
    let forbidden = replayed("lease-forbidden", &["--no-headers"]);
    forbidden.expect_code(4);
    let cells: Vec<&str> = forbidden.stdout.split_whitespace().collect();
    let lease = "dispatch-system/dispatch-admission";
    assert_eq!(cells, [lease, "<none>", "<none>", "<none>", "<none>", "forbidden", "<none>", "<none>"]);
    let missing = replayed("lease-missing", &["-o", "wide"]);
    missing.expect_code(3);
    assert!(
        missing.lines()[1].ends_with(
            "missing   <none>        <none>     <none>       <none>         Lease dispatch-system/dispatch-admision does not exist   <none>"
        ),
        "{}",
        missing.stdout
    );
}

/// gate's -n may come before the verb, as kubectl's flags may, and reads the same namespace
/// (moved down from the end-to-end tier: the replay answers only the requests recorded for
/// `gate -n team-a`, so the same reads are made, and the same document printed).
#[test]
fn namespace_flags_before_the_verb_read_the_same_namespace() {
    let script = Script::load("gate-namespace");
    assert_eq!(script.command, ["gate", "-n", "team-a"]);
    let after = replayed("gate-namespace", &["-o", "json"]);
    let replay = Replay::start(&script);
    let before = support::inprocess::run(
        &replay.kubeconfig(&script.context),
        &["-n", "team-a", "gate", "-o", "json"],
        &FixedClock(epoch()),
        Duration::from_secs(20),
    );
    replay.expect_all_answered();
    assert_eq!((before.code, &before.stdout, &before.stderr), (after.code, &after.stdout, &after.stderr));
    let doc = after.json();
    let names: Vec<&str> = doc["waiting"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["job-a", "job-b"]);
}

/// A closed stdout (`| true`) ends a one-shot run quietly, with the code of what it judged
/// (moved down from the end-to-end tier: the binary's own pipe handling, on recorded answers):
/// the same stderr and exit code as with stdout open. The binary runs on the machine's clock,
/// long after the recording, so its verdict is the stale Lease's; the pipe changes nothing.
#[test]
fn a_closed_stdout_ends_quietly() {
    let script = Script::load("gate-healthy");
    let replay = Replay::start(&script);
    let dir = support::temp_dir("inprocess-pipe");
    let config = dir.join("config");
    std::fs::write(&config, replay.kubeconfig(&script.context)).unwrap();
    let plugin = env!("CARGO_BIN_EXE_kubectl-dispatch");
    let shell = |line: String| {
        std::process::Command::new("bash").args(["-c", &line]).env("KUBECONFIG", &config).output().expect("run bash")
    };
    let open = shell(format!("{plugin} gate -A >/dev/null"));
    let piped = shell(format!("set -o pipefail; {plugin} gate -A | true"));
    std::fs::remove_dir_all(&dir).unwrap();
    replay.expect_all_answered();
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(stderr(&piped), stderr(&open), "a closed pipe printed something");
    assert_eq!(piped.status.code(), open.status.code());
    assert!(!stderr(&piped).contains("error") && !stderr(&piped).contains("panicked"), "{}", stderr(&piped));
}

//! The fast tier's live modes: `lease --watch` and `gate --watch` run in process (`support::inprocess`, a clock
//! that runs from the recording's start) against the real kube-apiserver's recorded list and
//! watch (`tests/recorded/lease-watch.json`: the Lease renewed twice while it was watched;
//! `gate-watch.json`: dispatch's AdmissionCheck inactive, then active again),
//! served with their times by `support::replay`; and the same recording changed into what no
//! healthy server sends: a watch gone silent, a watch cut mid-stream, an answer slower than
//! `--request-timeout`.

mod support;

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubectl_dispatch::clock::FixedClock;
use support::inprocess::{Moving, run};
use support::replay::Replay;
use support::script::{End, Exchange, Script, epoch};

/// The watch of dispatch's Lease in the recording.
fn lease_watch(script: &mut Script) -> &mut Exchange {
    script
        .exchanges
        .iter_mut()
        .find(|e| e.is_watch() && e.uri.contains("dispatch-admission"))
        .expect("the Lease's watch")
}

/// The recording's events brought within 3 s, in their order and proportions: on a loaded
/// machine a recording can take longer between its changes than a fast test should wait.
fn within_3s(script: &mut Script) {
    let last = script.exchanges.iter().flat_map(|e| &e.chunks).map(|c| c.at_ms).max().unwrap_or(1).max(3_000);
    for c in script.exchanges.iter_mut().flat_map(|e| &mut e.chunks) {
        c.at_ms = c.at_ms * 3_000 / last;
    }
}

/// The event column of each row after the header.
fn event_column(stdout: &str) -> Vec<String> {
    stdout.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1)).map(str::to_string).collect()
}

#[test]
fn lease_watch_shows_each_recorded_renewal_at_its_time() {
    let mut script = Script::load("lease-watch");
    within_3s(&mut script);
    let replay = Replay::start(&script);
    let started = std::time::Instant::now();
    let r = run(&replay.kubeconfig("admin"), &["lease", "--watch"], &Moving::from(epoch()), Duration::from_secs(4));
    replay.expect_all_answered();
    // Still watching when the test stopped it: no code of its own.
    assert_eq!(r.code, -1, "{r:?}");
    assert!(started.elapsed() >= Duration::from_secs(4));
    assert!(r.stdout.starts_with("TIME "), "{}", r.stdout);
    assert_eq!(event_column(&r.stdout), ["observed", "renewed", "renewed"], "{}", r.stdout);
    assert!(r.stdout.lines().skip(1).all(|l| l.contains("fresh (stale in ")), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn a_silent_watch_ends_until_stale_when_the_limit_passes() {
    let mut script = Script::load("lease-watch");
    // The connection stays open and says nothing: no renewal comes.
    lease_watch(&mut script).chunks.clear();
    // The clock starts 118 s after the listed renewal: 2 s of the 120 s limit left.
    let list = script.exchange_mut("namespaces/dispatch-system/leases?fieldSelector").body.clone().expect("the list");
    let renewed: Timestamp = list["items"][0]["spec"]["renewTime"].as_str().expect("renewTime").parse().unwrap();
    // At the deadline the Lease is read once on a new connection (the real server's answer to
    // that get, recorded for `lease`), and found as listed: not renewed, so stale.
    let mut get = Script::load("lease-fresh").exchange_mut("leases/dispatch-admission").clone();
    let mut lease = list["items"][0].clone();
    lease["apiVersion"] = "coordination.k8s.io/v1".into();
    lease["kind"] = "Lease".into();
    get.body = Some(lease);
    script.exchanges.push(get);
    let replay = Replay::start(&script);
    let clock = Moving::from(renewed + SignedDuration::from_secs(118));
    let r =
        run(&replay.kubeconfig("admin"), &["lease", "--watch", "--until", "stale"], &clock, Duration::from_secs(15));
    replay.expect_all_answered();
    r.expect_code(0);
    assert_eq!(event_column(&r.stdout).first().map(String::as_str), Some("observed"), "{}", r.stdout);
    assert!(event_column(&r.stdout).iter().any(|e| e == "stale"), "{}", r.stdout);
    assert!(
        r.stdout.contains("the admission controller's Lease was last renewed "),
        "the stale row gives the reason:\n{}",
        r.stdout
    );
}

#[test]
fn a_watch_cut_mid_stream_resumes_and_loses_no_renewal() {
    let mut script = Script::load("lease-watch");
    within_3s(&mut script);
    let watch = lease_watch(&mut script);
    // The first answer ends cut after the first renewal; the watch asked again gets the second.
    let mut second = watch.clone();
    let first_at = watch.chunks[0].at_ms;
    watch.chunks.truncate(1);
    watch.end = End::Cut;
    second.chunks.remove(0);
    for c in &mut second.chunks {
        c.at_ms -= first_at.min(c.at_ms);
    }
    let at = script.exchanges.iter().position(|e| e.is_watch() && e.uri.contains("dispatch-admission")).unwrap();
    script.exchanges.insert(at + 1, second);
    let replay = Replay::start(&script);
    let r = run(&replay.kubeconfig("admin"), &["lease", "--watch"], &Moving::from(epoch()), Duration::from_secs(5));
    replay.expect_all_answered();
    assert_eq!(event_column(&r.stdout), ["observed", "renewed", "renewed"], "{}\n{}", r.stdout, r.stderr);
    let watches = replay.seen().iter().filter(|k| k.contains("watch=true") && k.contains("dispatch-admission")).count();
    assert_eq!(watches, 2, "one watch, then one more after the cut: {:#?}", replay.seen());
}

#[test]
fn an_answer_slower_than_request_timeout_is_one_error() {
    let mut script = Script::load("lease-fresh");
    script.exchange_mut("leases/dispatch-admission").headers_after_ms = 3_000;
    let replay = Replay::start(&script);
    let started = std::time::Instant::now();
    let r = run(
        &replay.kubeconfig(&script.context),
        &["lease", "--request-timeout", "1s"],
        &FixedClock(epoch()),
        Duration::from_secs(10),
    );
    assert!(started.elapsed() < Duration::from_millis(2_500), "bounded by --request-timeout: {:?}", started.elapsed());
    r.expect_one_error(&format!("no answer from the API server at {} within 1s", replay.url()));
}

/// `gate --watch` on the recorded six lists and watches while dispatch's AdmissionCheck went
/// inactive and active again (its events brought within 3 s): the chain printed again at each
/// change of verdict, yes, no, yes, with the deciding check.
#[test]
fn gate_watch_prints_the_chain_again_at_each_recorded_change() {
    let mut script = Script::load("gate-watch");
    within_3s(&mut script);
    let replay = Replay::start(&script);
    let r =
        run(&replay.kubeconfig("admin"), &["gate", "--watch", "-A"], &Moving::from(epoch()), Duration::from_secs(5));
    replay.expect_all_answered();
    assert_eq!(r.code, -1, "still watching when stopped: {r:?}");
    let verdicts: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("ReadmissionGate: ")).collect();
    assert_eq!(
        verdicts,
        [
            "ReadmissionGate: yes (the adapter writes)",
            "ReadmissionGate: no (observe-only): AdmissionCheck dispatch is not Active (Active=False, ControllerDown: The controller stopped)",
            "ReadmissionGate: yes (the adapter writes)",
        ],
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches(" ReadmissionGate re-evaluated").count(), 3, "{}", r.stdout);
    assert!(r.stdout.contains(" 2 workloads wait at dispatch's Pending check"), "{}", r.stdout);
}

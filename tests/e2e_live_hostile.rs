//! The live modes against answers only a hostile server gives (issue 34), through `kubectl
//! dispatch` and the harness's `testcluster hostile` (its modes are described in
//! tests/cluster/hostile/live.go; every Lease there lasts 2 s, so stale 4 s after a renewal):
//! a server that ignores the field selector, one unreadable watch event, Kueue's manager's
//! Lease failing while dispatch's goes stale, watches that end at once (counted, as a bound on
//! how many, not on time), and a `Retry-After` of Go's longest duration.

mod support;

use std::time::Duration;

use support::Run;
use support::hostile::{Hostile, kubectl_watched};

const WATCHDOG: Duration = Duration::from_secs(120);

fn against(url: &str, args: &[&str]) -> Run {
    let mut full = vec!["dispatch", "-s", url];
    full.extend_from_slice(args);
    kubectl_watched(&full, &[], WATCHDOG, Duration::from_millis(100), &mut |_| {})
}

/// The rows' event column (`-o json`'s `event`).
fn row_events(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["event"].as_str().map(String::from))
        .collect()
}

#[test]
fn a_server_that_ignores_the_field_selector_still_goes_stale_on_time() {
    let server = Hostile::start("foreign-leases");
    let run = against(&server.url(), &["lease", "--watch", "--until", "stale", "--timeout", "30s", "-o", "json"]);
    assert_eq!(run.code, 0, "--until stale reached\n{}\n{}", run.stdout, run.stderr);
    assert_eq!(row_events(&run), ["observed", "stale"], "{}", run.stdout);
    let warned: Vec<&str> = run.stderr.lines().filter(|l| l.contains("does not honour the field selector")).collect();
    assert_eq!(warned.len(), 1, "said once:\n{}", run.stderr);
    assert!(
        warned[0].starts_with(
            "Warning: the API server does not honour the field selector metadata.name=dispatch-admission: it sent \
             Lease dispatch-system/other"
        ),
        "{}",
        warned[0]
    );
}

#[test]
fn one_unreadable_watch_event_is_passed_over_and_the_watch_goes_on() {
    let server = Hostile::start("bad-event");
    let run = against(&server.url(), &["lease", "--watch", "--until", "stale", "--timeout", "8s", "-o", "json"]);
    assert_eq!(run.code, 5, "never stale: renewed every 500 ms\n{}\n{}", run.stdout, run.stderr);
    let events = row_events(&run);
    assert!(events.iter().filter(|e| *e == "renewed").count() >= 5, "{}", run.stdout);
    assert!(!events.contains(&"stale".to_string()), "{}", run.stdout);
    let passed: Vec<&str> = run.stderr.lines().filter(|l| l.contains("passed over a watch event")).collect();
    assert_eq!(passed.len(), 1, "said once:\n{}", run.stderr);
    assert!(!run.stderr.contains("watch interrupted"), "no outage:\n{}", run.stderr);
}

#[test]
fn kueues_lease_failing_never_hides_dispatchs_stale_nor_changes_the_code() {
    let server = Hostile::start("kueue-503");
    let run = against(&server.url(), &["lease", "--watch", "--until", "stale", "--timeout", "30s", "-o", "json"]);
    assert_eq!(run.code, 0, "--until stale reached\n{}\n{}", run.stdout, run.stderr);
    assert!(row_events(&run).contains(&"stale".to_string()), "{}", run.stdout);
    assert!(run.stderr.contains("watch interrupted: the API server failed (503: "), "said:\n{}", run.stderr);
    // Without --until: --timeout ends it with 0, Kueue's outage notwithstanding.
    let run = against(&server.url(), &["lease", "--watch", "--timeout", "6s", "-o", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

/// How many watches of Leases the plugin sent.
fn watches(server: &Hostile) -> usize {
    server.seen().iter().filter(|s| s.by_plugin() && s.uri.contains("watch=true")).count()
}

#[test]
fn watches_that_end_at_once_are_not_asked_again_in_a_tight_loop() {
    // Every watch one BOOKMARK then the end: asked again with the backoff (0.5 s doubling to
    // 2 s, with jitter), never in a loop (the plugin sent 330 watches in 15 s before).
    let server = Hostile::start("watch-bookmark");
    let run = against(&server.url(), &["lease", "--watch", "--timeout", "15s", "-o", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let n = watches(&server);
    assert!((2..=20).contains(&n), "{n} watches in 15 s (each of two Leases)");
    // Every watch an ERROR event with 401, after a list that succeeded: the credential is
    // fetched anew once, and the second 401 within the window ends it as the one-shot's 401.
    let server = Hostile::start("watch-401");
    let url = server.url();
    let run = against(&url, &["lease", "--watch", "--timeout", "15s", "-o", "json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let refused = format!("error: the API server at {url} rejected the credentials (401 Unauthorized)");
    assert!(run.stderr.lines().any(|l| l == refused), "{}", run.stderr);
    assert!(watches(&server) <= 4, "{} watches", watches(&server));
}

#[test]
fn a_retry_after_of_gos_longest_duration_is_final_at_once() {
    // Before, the one-shot hung past 60 s (the watchdog ends a hang with its reason).
    let server = Hostile::start("retry-after-go-max");
    let run = against(&server.url(), &["lease"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    let asked = server.seen().iter().filter(|s| s.by_plugin()).count();
    assert_eq!(asked, 1, "not asked again");
}

#[test]
fn a_watch_silent_past_the_bookmark_period_is_started_again() {
    // A Lease of 300 s (no stale deadline within the test); every watch is accepted and then
    // silent, its connection held open. After 75 s with no line (kube-apiserver sends a
    // bookmark about once a minute) the watch is presumed dead and started again, on a new
    // connection, quietly (it was never said to be down, and the new one is accepted).
    let server = Hostile::start("silent-watch");
    let run = against(&server.url(), &["lease", "--watch", "--timeout", "90s", "-o", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(row_events(&run), ["observed"], "{}", run.stdout);
    // Two Leases (dispatch's and Kueue's manager's), each watched once, then again at 75 s.
    assert!(
        watches(&server) >= 4,
        "the silent watches were started again: {} watches\n{}",
        watches(&server),
        run.stderr
    );
    assert_eq!(run.stderr, "", "a restart that works is not said");
}

//! The live verbs on the real test cluster, through `kubectl dispatch`: a controller that
//! stops, rolling restarts, apiserver restarts, a relist, and the exit codes of --until and
//! --wait. Delays are measured by the benchmark; these tests only bound them generously.

mod support;

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use support::controller::{Controller, write_lease};
use support::fixtures::{self, Scenario};
use support::watch::{Watch, connection_lines, is_event, json_event};
use support::{Cluster, Run};

const S: Duration = Duration::from_secs(1);

fn leased(c: &Cluster, s: &Scenario) {
    c.apply(&s.healthy_yaml());
}

#[test]
fn a_stopped_controller_goes_stale_with_no_event_from_the_server() {
    let c = Cluster::shared();
    let s = Scenario::new("w-stop");
    leased(c, &s);
    let mut ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 5);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    ctl.stop();
    let stale = w.wait_for("the stale row", 30 * S, is_event("stale"));
    let (_, v) = json_event(&stale).unwrap();
    assert_eq!(v["lease"]["status"], "stale");
    // Just past the deadline the age is 10 s and a fraction, read as 11s (rounded up, so it reads
    // beyond the limit); a loaded machine may read the clock a second later.
    let detail = v["detail"].as_str().unwrap();
    assert!(
        ["11s", "12s"]
            .iter()
            .any(|age| detail == format!("the admission controller's Lease was last renewed {age} ago, beyond 10s")),
        "{v}"
    );
    let (code, _, stderr) = w.stop();
    assert_eq!(code, 0, "SIGTERM ends a watch with 0; stderr: {stderr:?}");
}

#[test]
fn a_rolling_restart_inside_the_window_shows_the_takeover_and_never_stale() {
    let c = Cluster::shared();
    let s = Scenario::new("w-roll");
    leased(c, &s);
    let mut a = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 10);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    a.stop();
    // Past the Lease's own 10 s, inside the heartbeat rule's 20 s.
    std::thread::sleep(10 * S);
    let _b = Controller::take_over(c, &a, &s.lease_ns, &s.lease_name, "ctl-b_2", 10);
    let takeover = w.wait_for("the takeover", 20 * S, is_event("takeover"));
    let (_, v) = json_event(&takeover).unwrap();
    assert_eq!(v["previousHolder"], "ctl-a_1");
    assert_eq!(v["lease"]["holder"], "ctl-b_2");
    assert_eq!(v["lease"]["leaseTransitions"], 1);
    let gap = v["gapSeconds"].as_i64().unwrap();
    assert!((10..=17).contains(&gap), "gap {gap}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .ends_with("the controller was replaced: reopen adapters opened before the takeover")
    );
    w.wait_for("b's renewal", 20 * S, is_event("renewed"));
    let (code, seen, _) = w.stop();
    assert_eq!(code, 0);
    assert!(seen.iter().filter_map(|l| json_event(l)).all(|(e, _)| e != "stale"), "{seen:#?}");
}

#[test]
fn a_takeover_past_the_window_says_stale_then_fresh() {
    let c = Cluster::shared();
    let s = Scenario::new("w-late");
    leased(c, &s);
    let mut a = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 10);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    a.stop();
    w.wait_for("the stale row", 40 * S, is_event("stale"));
    let _b = Controller::take_over(c, &a, &s.lease_ns, &s.lease_name, "ctl-b_2", 15);
    w.wait_for("the takeover", 20 * S, is_event("takeover"));
    w.wait_for("fresh again", 5 * S, is_event("fresh"));
    let (code, seen, _) = w.stop();
    assert_eq!(code, 0);
    let events: Vec<String> =
        seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).filter(|e| e != "renewed").collect();
    assert_eq!(events, ["observed", "stale", "takeover", "fresh"]);
}

/// A controller that stops past the window and comes back under the same name: the `fresh` row
/// carries the gap the stale spell left (the last renewal before it to the renewal that ends
/// it), in JSON and in the table's GAP, and the closing summary counts it. A 3 s Lease (6 s
/// window), so the spell is short.
#[test]
fn fresh_after_a_stale_spell_shows_the_renewal_gap_and_the_summary_counts_it() {
    let c = Cluster::shared();
    let s = Scenario::new("w-gap");
    leased(c, &s);
    let event = |name: &'static str| move |l: &str| l.split_whitespace().nth(1) == Some(name);
    let mut a = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 3);
    let mut json = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    let mut table = Watch::start(c, &["lease", "--watch", "--lease", &s.lease]);
    json.wait_for("a renewal", 20 * S, is_event("renewed"));
    table.wait_for("a renewal", 20 * S, event("renewed"));
    a.stop();
    json.wait_for("the stale row", 30 * S, is_event("stale"));
    table.wait_for("the stale row", 30 * S, event("stale"));
    let _back = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 3);
    let fresh = json.wait_for("fresh again", 20 * S, is_event("fresh"));
    let (_, v) = json_event(&fresh).unwrap();
    let gap = v["gapSeconds"].as_i64().unwrap_or_else(|| panic!("no gap on the fresh document: {v}"));
    assert!(gap >= 6, "the gap spans the stale spell (past the 6 s window): {v}");
    let row = table.wait_for("the fresh row", 20 * S, event("fresh"));
    // TIME EVENT HOLDER RENEWED GAP STATUS...: the gap as HumanDuration writes one under 2 minutes.
    let cell = row.split_whitespace().nth(4).unwrap().to_string();
    let secs: i64 =
        cell.strip_suffix('s').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("GAP {cell:?}: {row}"));
    assert!(secs >= 6, "{row}");
    let (code, seen, _) = table.stop();
    assert_eq!(code, 0);
    let summary = seen.last().unwrap();
    let max = summary.rsplit_once("max ").and_then(|(_, m)| m.strip_suffix('s')).and_then(|m| m.parse::<i64>().ok());
    assert!(max.is_some_and(|m| m >= secs), "the summary counts the gap: {summary:?} ({seen:#?})");
    let (code, _, _) = json.stop();
    assert_eq!(code, 0);
}

#[test]
fn rolling_restart_rows_in_a_table_never_say_stale() {
    // The same story as a person sees it: the table (piped, so no status line or escapes).
    let c = Cluster::shared();
    let s = Scenario::new("w-table");
    leased(c, &s);
    let mut a = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 10);
    let mut w = Watch::start(c, &["lease", "--watch", "--lease", &s.lease]);
    let header = w.wait_for("the header", 20 * S, |l| l.starts_with("TIME"));
    assert!(header.split_whitespace().eq(["TIME", "EVENT", "HOLDER", "RENEWED", "GAP", "STATUS", "DETAIL"]));
    w.wait_for("a renewal", 20 * S, |l| l.split_whitespace().nth(1) == Some("renewed"));
    a.stop();
    // Past the Lease's own 10 s, inside the heartbeat rule's 20 s.
    std::thread::sleep(10 * S);
    let _b = Controller::take_over(c, &a, &s.lease_ns, &s.lease_name, "ctl-b_2", 10);
    let row = w.wait_for("the takeover row", 20 * S, |l| l.split_whitespace().nth(1) == Some("takeover"));
    assert!(row.contains("ctl-a_1 -> ctl-b_2 after 1"), "{row}");
    w.wait_for("b's renewal", 20 * S, |l| l.split_whitespace().nth(1) == Some("renewed"));
    let (code, seen, _) = w.stop();
    assert_eq!(code, 0);
    assert!(seen.iter().all(|l| !l.contains('\u{1b}')), "no escape codes when piped");
    assert!(seen.iter().all(|l| l.split_whitespace().nth(1) != Some("stale")), "{seen:#?}");
    assert!(seen.last().unwrap().starts_with("renewal gaps: "), "the summary on exit: {seen:#?}");
}

#[test]
fn three_apiserver_restarts_on_a_quiet_lease_are_each_said_and_ended_and_stale_comes_on_time() {
    // Nobody renews: no object event follows the first, yet each outage is said when it
    // starts and ended when the watch is back; and the stale row comes at renewTime + 2 x 30s,
    // from the timer, whatever the outages. kubectl get -w beside it ends at the first outage.
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start("v0.17.0")));
    let s = Scenario::new("w-quiet");
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(0), Some(30)));
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    let observed = w.wait_for("the first row", 20 * S, is_event("observed"));
    let renewed: k8s_openapi::jiff::Timestamp =
        json_event(&observed).unwrap().1["lease"]["renewTime"].as_str().unwrap().parse().unwrap();
    let mut kubectl = Watch::spawn(c.command("kubectl", &["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w"]));
    kubectl.wait_for("kubectl's row", 10 * S, |l| l.starts_with(&s.lease_name));
    for round in 1..=3 {
        c.kill_apiserver();
        w.wait_for_stderr_prefix("watch interrupted: ", 15 * S);
        if round == 1 {
            assert_eq!(kubectl.finish(10 * S), 0, "kubectl get -w ends, with 0, when its watch drops");
        }
        c.start_apiserver();
        w.wait_for_stderr("watch resumed", 15 * S);
    }
    let stale = w.wait_for("the stale row", 60 * S, is_event("stale"));
    let at: k8s_openapi::jiff::Timestamp = json_event(&stale).unwrap().1["time"].as_str().unwrap().parse().unwrap();
    let late = at.duration_since(renewed + k8s_openapi::jiff::SignedDuration::from_secs(60));
    assert!(late.as_secs_f64() >= 0.0 && late.as_secs_f64() < 2.0, "stale at {at}, renewed {renewed}");
    let (code, seen, stderr) = w.stop();
    assert_eq!(code, 0);
    assert_eq!(
        connection_lines(&stderr).into_iter().filter(|l| *l != "expired").collect::<Vec<_>>(),
        ["interrupted", "resumed", "interrupted", "resumed", "interrupted", "resumed"],
        "{stderr:#?}"
    );
    for l in stderr.iter().filter(|l| l.starts_with("watch interrupted: ")) {
        assert!(!l.contains("close_notify") && !l.contains("https://docs.rs"), "a cause in plain words: {l}");
    }
    let events: Vec<String> = seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).collect();
    assert_eq!(events, ["observed", "stale"], "{seen:#?}");
    c.stop();
}

#[test]
fn an_etcd_compaction_past_the_watch_is_one_relist_and_the_rows_continue() {
    // Watches served from etcd (not the watch cache), the plugin's connection through a
    // forwarder that can cut it while the API server keeps running. Cut once with nothing
    // compacted: the watch resumes where it was, no relist. Then compact etcd past the
    // watch's resourceVersion and cut again: the resumed watch gets etcd's 410, the plugin
    // says so, relists once, and the rows go on.
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start_without_watch_cache()));
    let s = Scenario::new("w-compact");
    leased(c, &s);
    let port = c.apiserver_url().trim_start_matches("https://").to_string();
    let cutter = support::forward::Cutter::start(&port);
    let mut ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 15);
    let args = ["lease", "--watch", "-o", "json", "--lease", &s.lease, "--server", &cutter.url()];
    let mut w = Watch::start(c, &args);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    assert!(cutter.cut() >= 1);
    w.wait_for_stderr("watch resumed", 15 * S);
    w.wait_for("a renewal after the cut", 20 * S, is_event("renewed"));
    // Quiet while compacting, so no newer event moves the watch past the compaction.
    ctl.stop();
    c.compact();
    cutter.cut();
    // The watch is accepted again (resumed), then etcd's 410 comes as its first event.
    w.wait_for_stderr_prefix("watch expired: ", 15 * S);
    let _b = Controller::take_over(c, &ctl, &s.lease_ns, &s.lease_name, "ctl-b_2", 15);
    let takeover = w.wait_for("the takeover after the relist", 20 * S, is_event("takeover"));
    assert_eq!(json_event(&takeover).unwrap().1["previousHolder"], "ctl-a_1");
    w.wait_for("b's renewal", 20 * S, is_event("renewed"));
    // The outage ends when both streams are answered again: Kueue's relists after its own
    // backoff, which may come after dispatch's rows went on.
    w.wait_for_stderr_count("watch resumed", 2, 20 * S);
    let (code, seen, stderr) = w.stop();
    assert_eq!(code, 0);
    // Two streams (dispatch's Lease and Kueue's) are cut and both meet the 410: one
    // expiry is said, after the second cut, before or after `resumed` as the streams race.
    let lines = connection_lines(&stderr);
    assert_eq!(lines.iter().filter(|l| **l == "expired").count(), 1, "{stderr:#?}");
    assert_eq!(
        lines.iter().copied().filter(|l| *l != "expired").collect::<Vec<_>>(),
        ["interrupted", "resumed", "interrupted", "resumed"],
        "{stderr:#?}"
    );
    assert!(
        lines.iter().position(|l| *l == "expired") > lines.iter().rposition(|l| *l == "interrupted"),
        "{stderr:#?}"
    );
    let expired = stderr.iter().find(|l| l.starts_with("watch expired: ")).unwrap();
    assert!(expired.contains("(410 Gone); relisting"), "{expired}");
    let events: Vec<String> = seen.iter().filter_map(|l| json_event(l)).map(|(e, _)| e).collect();
    assert_eq!(events.iter().filter(|e| *e == "observed").count(), 1, "a relist is no new first row: {events:?}");
    assert!(!events.iter().any(|e| e == "stale"), "{events:?}");
    let lists = c
        .plugin_events()
        .iter()
        .filter(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "leases" && e["stage"] == "ResponseComplete")
        // dispatch's Lease's (Kueue's manager's, in kueue-system, is followed beside it).
        .filter(|e| e["objectRef"]["namespace"] == s.lease_ns.as_str())
        .count();
    assert_eq!(lists, 2, "the first list and one relist");
    c.stop();
}

#[test]
fn a_relist_after_an_apiserver_restart_loses_no_transition() {
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start("v0.17.0")));
    let s = Scenario::new("w-410");
    leased(c, &s);
    let a = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 15);
    let mut w = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease]);
    w.wait_for("a renewal", 20 * S, is_event("renewed"));
    let mut a = a;
    a.stop();
    c.kill_apiserver();
    c.start_apiserver();
    // The takeover happens while the plugin is still backing off: it must find it when it
    // resumes, by relisting when the restarted apiserver answers 410 for its old version.
    write_lease(c, &s.lease_ns, &s.lease_name, "ctl-b_2", &fixtures::micro_ago(0), 1, 15);
    let takeover = w.wait_for("the takeover", 30 * S, is_event("takeover"));
    let (_, v) = json_event(&takeover).unwrap();
    assert_eq!(v["previousHolder"], "ctl-a_1");
    let (code, _, _) = w.stop();
    assert_eq!(code, 0);
    let lists =
        c.plugin_events().iter().filter(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "leases").count();
    assert!(lists >= 2, "a relist (a second LIST) after the restart; saw {lists}");
    c.stop();
}

/// The plugin's requests for the Lease of `s` received since `since` and answered, from the
/// audit log, as `(user, verb, code)`.
fn lease_requests(c: &Cluster, s: &Scenario, since: Timestamp) -> Vec<(String, String, i64)> {
    let path = format!("/namespaces/{}/leases", s.lease_ns);
    c.plugin_events()
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter(|e| e["requestURI"].as_str().is_some_and(|u| u.contains(&path) && u.contains(&s.lease_name)))
        .filter(|e| e["requestReceivedTimestamp"].as_str().and_then(|t| t.parse::<Timestamp>().ok()) >= Some(since))
        .map(|e| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (text(&e["user"]["username"]), text(&e["verb"]), e["responseStatus"]["code"].as_i64().unwrap_or_default())
        })
        .collect()
}

#[test]
fn a_watch_forbidden_from_the_start_ends_at_once_with_4() {
    // As `kubectl get -w` ends on Forbidden; 4 is the one-shot's code for a forbidden Lease.
    // tests/e2e_live.rs has the rest, beside kubectl.
    let c = Cluster::shared();
    let s = Scenario::new("w-403");
    leased(c, &s);
    // --timeout only so that a regression fails rather than hangs: it ends long before.
    let run = c.dispatch(&["lease", "--watch", "--timeout", "2m", "--context", "no-lease", "--lease", &s.lease]);
    run.expect_code(4);
    assert!(run.stderr.contains("\nmissing RBAC: get, list and watch leases.coordination.k8s.io"), "{}", run.stderr);
}

fn dispatch_timed(c: &Cluster, args: &[&str]) -> (Run, Duration) {
    let started = std::time::Instant::now();
    let run = c.dispatch(args);
    (run, started.elapsed())
}

#[test]
fn until_exit_codes_on_success_and_timeout() {
    let c = Cluster::shared();
    let s = Scenario::new("w-until");
    leased(c, &s);
    let lease = ["--lease", s.lease.as_str()];
    let args = |extra: &[&'static str]| -> Vec<String> {
        ["lease", "--watch", "-o", "json"].iter().chain(extra).chain(lease.iter()).map(|a| a.to_string()).collect()
    };
    let call = |extra: &[&'static str]| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        dispatch_timed(c, &refs)
    };
    let (run, took) = call(&["--until", "fresh", "--timeout", "20s"]);
    run.expect_code(0);
    assert!(took < 10 * S);
    // Each --timeout below is long enough for the first answer on a loaded machine: one that
    // came after it would end the run with 1 (the connection's, not the condition's, timeout),
    // as it did once at 2 s while two test targets and a release build shared the 2 cores.
    let (run, _) = call(&["--until", "stale", "--timeout", "5s"]);
    run.expect_code(5);
    let (run, _) = call(&["--until", "holder-change", "--timeout", "5s"]);
    run.expect_code(5);
    c.kubectl_ok(&["delete", "lease", "-n", &s.lease_ns, &s.lease_name], None);
    let (run, took) = call(&["--until", "fresh", "--timeout", "5s"]);
    run.expect_code(3);
    assert!(took >= 5 * S && took < 15 * S, "{took:?}");
    let (run, _) = call(&["--until", "stale", "--timeout", "20s"]);
    run.expect_code(0);
    let forbidden = c.dispatch(&[
        "lease",
        "--watch",
        "--until",
        "fresh",
        "--timeout",
        "2s",
        "--context",
        "no-lease",
        "--lease",
        &s.lease,
    ]);
    forbidden.expect_code(4);
}

#[test]
fn gate_wait_exit_codes_on_success_and_timeout() {
    let c = Cluster::shared();
    let s = Scenario::new("w-wait");
    leased(c, &s);
    c.dispatch(&s.args("gate", &["--wait", "--timeout", "20s"]))
        .expect_code(0)
        .expect_line("ReadmissionGate: yes (the adapter writes)");
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(100), Some(15)));
    let (run, took) = dispatch_timed(c, &s.args("gate", &["--wait", "--timeout", "3s"]));
    run.expect_code(3);
    assert!(took >= 3 * S, "{took:?}");
    assert!(
        run.stdout.contains("ReadmissionGate: no (observe-only): the admission controller's Lease was last renewed"),
        "{}",
        run.stdout
    );
    c.dispatch(&s.args("gate", &["--wait", "--timeout", "3s", "--context", "no-lease"])).expect_code(4);
    // Stale at the start, then the controller comes back: --wait returns 0 as soon as it does.
    let started = Timestamp::now();
    let mut w = Watch::start(c, &s.args("gate", &["--wait", "--timeout", "60s"]));
    support::eventually("the waiting gate has read the stale Lease", 20 * S, || {
        let asked = lease_requests(c, &s, started);
        if asked.is_empty() { Err("no answered request for the Lease yet".into()) } else { Ok(()) }
    });
    assert!(w.running(), "--wait ended on a stale Lease; stderr: {:?}", w.stderr);
    let _ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-b_2", 15);
    assert_eq!(w.finish(30 * S), 0);
}

#[test]
fn gate_watch_prints_the_chain_when_the_verdict_changes() {
    let c = Cluster::shared();
    let s = Scenario::new("w-gate");
    leased(c, &s);
    c.apply(&fixtures::workload(&s.ns, "job-1", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 5)]));
    let mut ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 5);
    let mut w = Watch::start(c, &s.args("gate", &["--watch", "-A"]));
    w.wait_for("the first verdict", 20 * S, |l| l == "ReadmissionGate: yes (the adapter writes)");
    w.wait_for("the waiting count", 10 * S, |l| l.ends_with(" 1 workload waits at dispatch's Pending check"));
    ctl.stop();
    let no = w.wait_for("the verdict going no", 30 * S, |l| l.starts_with("ReadmissionGate: no (observe-only): "));
    assert!(
        ["11s", "12s"].iter().any(
            |age| no.ends_with(&format!("the admission controller's Lease was last renewed {age} ago, beyond 10s"))
        ),
        "{no}"
    );
    c.apply(&fixtures::workload(&s.ns, "job-2", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 5)]));
    w.wait_for("the new waiting count", 20 * S, |l| l.ends_with(" 2 workloads wait at dispatch's Pending check"));
    let (code, _, _) = w.stop();
    assert_eq!(code, 0);
}

#[test]
fn gate_watch_on_a_stale_lease_does_not_reprint_the_chain_for_unrelated_workloads() {
    // The deciding reason of a stale Lease holds its growing age; only a change of verdict or
    // of the deciding rule prints the chain again, not each Workload event.
    let c = Cluster::shared();
    let s = Scenario::new("w-quietgate");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(100), Some(15)));
    let mut w = Watch::start(c, &s.args("gate", &["--watch", "-A"]));
    w.wait_for("the verdict", 20 * S, |l| l.starts_with("ReadmissionGate: no (observe-only): "));
    for i in 1..=3 {
        c.apply(&fixtures::workload(&s.ns, &format!("job-{i}"), &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 5)]));
        // Each Workload's event is seen alone: its waiting count is printed before the next.
        let count = match i {
            1 => " 1 workload waits at dispatch's Pending check".to_string(),
            _ => format!(" {i} workloads wait at dispatch's Pending check"),
        };
        let what = if i == 3 { "the last waiting count".to_string() } else { format!("waiting count {i}") };
        w.wait_for(&what, 20 * S, |l| l.ends_with(&count));
    }
    // A renewed Lease turns the verdict: that is printed.
    let _ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-b_2", 15);
    w.wait_for("the verdict going yes", 20 * S, |l| l == "ReadmissionGate: yes (the adapter writes)");
    let (code, seen, _) = w.stop();
    assert_eq!(code, 0);
    let blocks = seen.iter().filter(|l| l.ends_with(" ReadmissionGate re-evaluated")).count();
    assert_eq!(blocks, 2, "the chain printed at the start and when the verdict turned, no more:\n{}", seen.join("\n"));
}

#[test]
fn watch_with_yaml_prints_documents_separated_like_kubectl() {
    let c = Cluster::shared();
    let s = Scenario::new("w-yaml");
    c.apply(&s.healthy_yaml());
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(100), Some(15)));
    let mut lease = Watch::start(c, &["lease", "--watch", "-o", "yaml", "--lease", &s.lease]);
    let mut gate = Watch::start(c, &s.args("gate", &["--watch", "-o", "yaml"]));
    let mut kubectl =
        Watch::spawn(c.command("kubectl", &["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-w", "-o", "yaml"]));
    lease.wait_for("the lease's first document", 20 * S, |l| l == "event: observed");
    gate.wait_for("the gate's first document", 20 * S, |l| l == "verdict: \"no\"");
    kubectl.wait_for("kubectl's first document", 20 * S, |l| l == "kind: Lease");
    let _ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-b_2", 15);
    lease.wait_for("the takeover document", 20 * S, |l| l == "event: takeover");
    gate.wait_for("the gate's yes document", 20 * S, |l| l == "verdict: \"yes\"");
    kubectl.wait_for("kubectl's second document", 20 * S, |l| l == "---");
    for (what, w) in [("lease", lease), ("gate", gate), ("kubectl", kubectl)] {
        let (_, seen, _) = w.stop();
        let text = seen.join("\n");
        assert!(!text.starts_with("---"), "{what}: no separator before the first document:\n{text}");
        let docs: Vec<serde_json::Value> = text
            .split("\n---\n")
            .map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{what}: not YAML ({e}):\n{d}")))
            .collect();
        assert!(docs.len() >= 2, "{what}: {text}");
        if what != "kubectl" {
            assert!(docs.iter().all(|d| d["schema"] == "kubectl-dispatch/v1"), "{what}: {text}");
        }
    }
}

#[test]
fn a_watch_whose_reader_goes_away_ends_quietly_with_0() {
    let c = Cluster::shared();
    let s = Scenario::new("w-pipe");
    leased(c, &s);
    let _ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 15);
    // head takes the first row and leaves; the next renewal's row meets a closed pipe.
    let script =
        format!("set -o pipefail; kubectl dispatch lease --watch -o json --lease {} | head -n 1 >/dev/null", s.lease);
    let out = c.command("bash", &["-c", &script]).output().unwrap();
    let run = Run::from(out);
    run.expect_code(0);
    assert_eq!(run.stderr, "", "nothing on stderr");
}

#[test]
fn a_closed_stdout_keeps_the_verdicts_code_as_dev_null_does() {
    // Issue 26: on a stale Lease, `--until fresh --timeout 8s | head -1` exited 0 while the same
    // command into /dev/null exited 3. Both are 3 now: the code --timeout gives.
    let c = Cluster::shared();
    let s = Scenario::new("w-pipe-stale");
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-a_1"), Some(600), Some(10)));
    let command = format!("kubectl dispatch lease --watch --until fresh --timeout 8s -o json --lease {}", s.lease);
    for tail in ["| head -n 1 >/dev/null", ">/dev/null"] {
        let script = format!("set -o pipefail; {command} {tail}");
        let run = Run::from(c.command("bash", &["-c", &script]).output().unwrap());
        run.expect_code(3);
        // Nothing but the timeout's own line, as kubectl wait says it (docs/usage.md), when the
        // timeout is what ended it (into /dev/null always; after head, when no write came first).
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert!(
            lines.is_empty() || (lines.len() == 1 && lines[0].starts_with("error: timed out waiting for Lease ")),
            "{tail}: {}",
            run.stderr
        );
    }
}

#[test]
fn until_holder_change_is_reached_by_a_release_then_an_acquire() {
    // Issue 26: holder A, then no holder (client-go's ReleaseOnCancel), then B is a holder change.
    let c = Cluster::shared();
    let s = Scenario::new("w-handover");
    let acquired = fixtures::micro_ago(0);
    write_lease(c, &s.lease_ns, &s.lease_name, "ctl-a_1", &acquired, 1, 15);
    let mut w = Watch::start(
        c,
        &["lease", "--watch", "--until", "holder-change", "--timeout", "90s", "-o", "json", "--lease", &s.lease],
    );
    w.wait_for("the first row", 20 * S, is_event("observed"));
    c.kubectl_ok(
        &[
            "patch",
            "lease",
            "-n",
            &s.lease_ns,
            &s.lease_name,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/holderIdentity"}]"#,
        ],
        None,
    );
    w.wait_for("the release", 20 * S, |l| json_event(l).is_some_and(|(_, v)| v["lease"]["status"] == "no holder"));
    assert!(w.running(), "a release alone is no holder change");
    write_lease(c, &s.lease_ns, &s.lease_name, "ctl-b_2", &fixtures::micro_ago(0), 2, 15);
    let takeover = w.wait_for("the takeover row", 20 * S, is_event("takeover"));
    let (_, v) = json_event(&takeover).unwrap();
    assert_eq!(
        (v["previousHolder"].as_str(), v["lease"]["holder"].as_str()),
        (Some("ctl-a_1"), Some("ctl-b_2")),
        "{v}"
    );
    assert_eq!(w.finish(20 * S), 0, "--until holder-change reached");
}

#[test]
fn while_cut_off_a_renewed_lease_is_unknown_not_stale_and_until_stale_is_not_reached() {
    // Issue 26: a Lease renewed every 2 s by a live holder, the plugin's connection cut for
    // longer than the stale window (10 s): it said stale and exited 0 within 20 s, so a script
    // failing over on `--until stale` failed over on a network blip. Now the heartbeat is
    // unknown while cut off, and --timeout in the outage is 1.
    let c = Cluster::shared();
    let s = Scenario::new("w-cutoff");
    leased(c, &s);
    let port = c.apiserver_url().trim_start_matches("https://").to_string();
    let cutter = support::forward::Cutter::start(&port);
    let _ctl = Controller::start(c, &s.lease_ns, &s.lease_name, "ctl-a_1", 5);
    let server = cutter.url();
    let mut until = Watch::start(
        c,
        &[
            "lease",
            "--watch",
            "--until",
            "stale",
            "--timeout",
            "30s",
            "-o",
            "json",
            "--lease",
            &s.lease,
            "--server",
            &server,
        ],
    );
    let mut rows = Watch::start(c, &["lease", "--watch", "-o", "json", "--lease", &s.lease, "--server", &server]);
    until.wait_for("a renewal", 20 * S, is_event("renewed"));
    rows.wait_for("a renewal", 20 * S, is_event("renewed"));
    cutter.cut_off();
    let unknown = "heartbeat unknown: its stale deadline passed while the connection was down";
    for w in [&mut until, &mut rows] {
        w.wait_for_stderr_any("the unknown line", 40 * S, |l| l.contains(unknown));
    }
    assert_eq!(until.finish(60 * S), 1, "stdout {:#?}\nstderr {:#?}", until.seen, until.stderr);
    assert!(until.stderr.iter().any(|l| l.starts_with("error: --timeout 30s came while the connection was down")));
    assert!(!until.seen.iter().any(|l| is_event("stale")(l)), "{:#?}", until.seen);
    cutter.restore();
    rows.wait_for_stderr("watch resumed", 30 * S);
    // Renewed all along: once back, renewed rows, and never a stale one.
    rows.wait_for("a renewal after the outage", 20 * S, is_event("renewed"));
    std::thread::sleep(3 * S);
    let (code, seen, stderr) = rows.stop();
    assert_eq!(code, 0, "{stderr:#?}");
    assert!(!seen.iter().any(|l| is_event("stale")(l)), "{seen:#?}");
}

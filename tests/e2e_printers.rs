//! What kubectl users type, end to end on the real test cluster through the real kubectl:
//! `-o jsonpath=`, `-o custom-columns=` and `-o name` on gate, lease, workload and the watches
//! (compared with kubectl's own printers, `testcluster printcheck`, over the `-o json`
//! document of the same objects), `-l` and `--sort-by` beside `kubectl get workloads -l ...
//! --sort-by ...`, and `--color`.

mod support;

use std::time::Duration;

use support::Cluster;
use support::fixtures::{self, Scenario, gate};
use support::kubectls::each_kubectl;
use support::printcheck::oracle;
use support::watch::Watch;

/// A Workload of the scenario, Pending at dispatch's check for `since` seconds, with labels.
fn labelled_workload(s: &Scenario, name: &str, labels: &[(&str, &str)], since: i64) -> String {
    let yaml = fixtures::workload(&s.ns, name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waits", since)]);
    let labels: String = labels.iter().map(|(k, v)| format!("    {k}: {v}\n")).collect();
    yaml.replacen("metadata:\n", &format!("metadata:\n  labels:\n{labels}"), 1)
}

/// The scenario's Lease renewed now for an hour, so the verdict stays yes however long the runs
/// with both kubectls take on a loaded machine (the healthy Lease is stale 30 s after it).
fn fresh_for_an_hour(c: &Cluster, s: &Scenario) {
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(2), Some(3600)));
}

/// Each template on the gate's `-o json` document, by the plugin and by kubectl's printer.
#[test]
fn gate_lease_and_workload_print_with_kubectls_printers() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let s = Scenario::new("printers");
        c.apply(&s.healthy_yaml());
        fresh_for_an_hour(c, &s);
        c.apply(&labelled_workload(&s, "w-1", &[("team", "ml")], 30));
        c.apply(&labelled_workload(&s, "w-2", &[("team", "web")], 60));

        // Fields that do not move between two runs (no ages).
        let templates = [
            "{.verdict}",
            "{range .chains[*]}{.clusterQueue}={.verdict}{\"\\n\"}{end}",
            "{.chains[0].checks[?(@.result==\"pass\")].id}",
            "{.lease.holder} {.lease.namespace}/{.lease.name}",
            "{range .waiting[*]}{.namespace}/{.name} {.state}{\"\\n\"}{end}",
            "{.waiting[?(@.name==\"w-2\")].message}",
            "{.nothing}",
        ];
        let json = gate(c, &s, &["-n", &s.ns, "-o", "json"]);
        json.expect_code(0);
        for t in templates {
            let want = oracle(&json.stdout, &format!("jsonpath={t}"), &[]).expect("kubectl's printer takes it");
            let run = gate(c, &s, &["-n", &s.ns, "-o", &format!("jsonpath={t}")]);
            run.expect_code(0);
            assert_eq!(run.stdout, want, "gate -o jsonpath={t}\nstderr: {}", run.stderr);
        }
        let spec = "CQ:.chains[*].clusterQueue,VERDICT:.verdict,WAITING:.waiting[*].name,NONE:.none";
        let want = oracle(&json.stdout, &format!("custom-columns={spec}"), &[]).unwrap();
        let run = gate(c, &s, &["-n", &s.ns, "-o", &format!("custom-columns={spec}")]);
        assert_eq!(run.expect_code(0).stdout, want);
        let file = std::env::temp_dir().join(format!("{}-columns.txt", s.ns));
        std::fs::write(&file, "CQ VERDICT\n.chains[0].clusterQueue {.verdict}\n").unwrap();
        let file_arg = format!("custom-columns-file={}", file.display());
        let want = oracle(&json.stdout, &file_arg, &["--no-headers"]).unwrap();
        let run = gate(c, &s, &["-n", &s.ns, "--no-headers", "-o", &file_arg]);
        assert_eq!(run.expect_code(0).stdout, want);
        let jp_file = std::env::temp_dir().join(format!("{}-template.txt", s.ns));
        std::fs::write(&jp_file, "{.verdict}{\"\\n\"}").unwrap();
        let run = gate(c, &s, &["-n", &s.ns, "-o", &format!("jsonpath-file={}", jp_file.display())]);
        assert_eq!(run.expect_code(0).stdout, "yes\n");
        let _ = std::fs::remove_file(file);
        let _ = std::fs::remove_file(jp_file);

        // -o name: the waiting Workloads, named as kubectl names them.
        let kubectl_names = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "-o", "name"], None);
        let run = gate(c, &s, &["-n", &s.ns, "-o", "name"]);
        assert_eq!(run.expect_code(0).stdout, kubectl_names);

        // lease: its document, and its name as kubectl names it.
        let lease_json = c.dispatch(&s.args("lease", &["-o", "json"]));
        let t = "{.lease.status} {.lease.holder} {.lease.leaseDurationSeconds}";
        let want = oracle(&lease_json.stdout, &format!("jsonpath={t}"), &[]).unwrap();
        let run = c.dispatch(&s.args("lease", &["-o", &format!("jsonpath={t}")]));
        assert_eq!(run.expect_code(0).stdout, want);
        assert_eq!(want, "fresh dispatch-admission-7d9f_1 3600");
        let kubectl_name = c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "name"], None);
        assert_eq!(c.dispatch(&s.args("lease", &["-o", "name"])).expect_code(0).stdout, kubectl_name);

        // workload: its document, and its name.
        let wl = |extra: &[&str]| {
            let mut args =
                vec!["workload", "w-1", "-n", &s.ns, "--controller-name", &s.controller, "--lease", &s.lease];
            args.extend_from_slice(extra);
            c.dispatch(&args)
        };
        let wl_json = wl(&["-o", "json"]);
        let t = "{.name} {.stage} {.queue.clusterQueue}{range .admissionChecks[*]} {.name}={.state}{end}";
        let want = oracle(&wl_json.stdout, &format!("jsonpath={t}"), &[]).unwrap();
        let run = wl(&["-o", &format!("jsonpath={t}")]);
        assert_eq!(run.stdout, want, "{}", run.stderr);
        assert!(want.starts_with("w-1 "), "{want}");
        let kubectl_name = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "w-1", "-o", "name"], None);
        assert_eq!(wl(&["-o", "name"]).stdout, kubectl_name);
    });
}

#[test]
fn a_bad_template_is_one_usage_error_and_missing_keys_follow_the_flag_as_kubectl() {
    let c = Cluster::shared();
    let s = Scenario::new("badtemplate");
    c.apply(&s.healthy_yaml());
    let run = gate(c, &s, &["-o", "jsonpath={.chains[", "--watch"]);
    run.expect_code(2);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines[0], "error: error parsing jsonpath {.chains[, unterminated array", "{}", run.stderr);
    assert!(lines.iter().filter(|l| l.starts_with("error:")).count() == 1 && run.stdout.is_empty(), "{run:?}");
    let run = c.dispatch(&s.args("lease", &["-o", "custom-columns=NAME"]));
    run.expect_code(2);
    assert!(
        run.stderr.starts_with("error: unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>\n")
    );

    let missing = oracle("{}", "jsonpath={.nope}", &["--allow-missing-template-keys=false"]).unwrap_err();
    assert_eq!(missing, "execute: nope is not found");
    // A template that parses but fails on the document is kubectl's execution error, exit 1
    // (not a usage error), its first line word for word, without the dump after it.
    let theirs = c.kubectl(
        &[
            "get",
            "lease",
            &s.lease_name,
            "-n",
            &s.lease_ns,
            "-o",
            "jsonpath={.nope}",
            "--allow-missing-template-keys=false",
        ],
        None,
    );
    assert_eq!(theirs.status.code(), Some(1), "{theirs:?}");
    let theirs = String::from_utf8_lossy(&theirs.stderr).lines().next().unwrap_or_default().to_string();
    let kubectls = theirs
        .strip_suffix(". Printing more information for debugging the template:")
        .unwrap_or_else(|| panic!("{theirs}"));
    assert_eq!(kubectls, "error: error executing jsonpath \"{.nope}\": Error executing template: nope is not found");
    for verb in ["gate", "lease"] {
        let run = c.dispatch(&s.args(verb, &["-o", "jsonpath={.nope}", "--allow-missing-template-keys=false"]));
        run.expect_code(1);
        let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors, [kubectls], "{verb}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    let run = gate(c, &s, &["-o", "jsonpath={.nope}"]);
    assert_eq!(run.expect_code(0).stdout, "", "missing keys print nothing by default, as in kubectl");
    let run = gate(c, &s, &["-o", "go-template={{.verdict}}"]);
    run.expect_code(2);
    assert!(run.stderr.contains("go-template is not supported"), "{}", run.stderr);
}

/// The verbs of the plugin's reads of `workloads` (a namespace's Workloads path) that carry the
/// selector `team=web`, among the plugin's audit `events`; a read without any selector panics
/// (but the one-object probes, `limit=1`).
fn selector_reads(events: &[serde_json::Value], workloads: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    for event in events {
        let uri = event["requestURI"].as_str().unwrap_or_default();
        if !uri.contains(workloads) {
            continue;
        }
        let verb = event["verb"].as_str().unwrap_or_default().to_string();
        if uri.contains("labelSelector=team%3Dweb") {
            seen.insert(verb);
        } else if !uri.contains("labelSelector=") && !uri.contains("limit=1&") && !uri.ends_with("limit=1") {
            panic!("a Workload read without the selector: {uri}");
        }
    }
    seen
}

#[test]
fn selector_and_sort_by_are_kubectls() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let s = Scenario::new("selector");
        c.apply(&s.healthy_yaml());
        fresh_for_an_hour(c, &s);
        // Names whose natural order is not their byte order; ages not in name order.
        for (name, team, since) in
            [("w-10", "ml", 50), ("w-2", "ml", 300), ("w-1", "ml", 120), ("w-3", "web", 10), ("x-9", "ml", 200)]
        {
            c.apply(&labelled_workload(&s, name, &[("team", team)], since));
        }
        let kubectl = |args: &[&str]| {
            let mut full = vec!["get", "workloads.kueue.x-k8s.io", "-n", s.ns.as_str(), "-o", "name"];
            full.extend_from_slice(args);
            c.kubectl_ok(&full, None)
        };
        for (selector, ours, theirs) in [
            ("team=ml", ".name", ".metadata.name"),
            ("team=ml", "{.lastTransitionTime}", ".status.admissionChecks[0].lastTransitionTime"),
            ("team in (ml,web)", "name", "{.metadata.name}"),
            ("team!=ml", ".name", ".metadata.name"),
        ] {
            let want = kubectl(&["-l", selector, "--sort-by", theirs]);
            let run = gate(c, &s, &["-n", &s.ns, "-l", selector, "--sort-by", ours, "-o", "name"]);
            assert_eq!(run.expect_code(0).stdout, want, "-l {selector} --sort-by {ours}");
        }
        // The server filters: the plugin's list and watch of Workloads ask for labelSelector, as
        // the apiserver's audit log records them.
        gate(c, &s, &["-n", &s.ns, "-l", "team=web"]).expect_code(0);
        let mut watch = Watch::start(c, &s.args("gate", &["-n", &s.ns, "-l", "team=web", "--watch"]));
        watch.wait_for("the first chain", Duration::from_secs(60), |l| l.starts_with("ReadmissionGate: "));
        // The watch is asked after the first chain is printed, so the audit log is read until it
        // holds the watch (the apiserver logs a request as it is received), the plugin still
        // running: stopped at once, on a loaded machine it had not asked yet (seen in a cold run).
        let workloads = format!("/namespaces/{}/workloads?", s.ns);
        support::eventually("the selector's list and watch in the audit log", Duration::from_secs(60), || {
            let seen = selector_reads(&c.plugin_events(), &workloads);
            if seen.contains("list") && seen.contains("watch") { Ok(()) } else { Err(format!("{seen:?}")) }
        });
        drop(watch);
        // The table follows the same order.
        let table = gate(c, &s, &["-n", &s.ns, "-l", "team=ml", "--sort-by", ".name", "--no-headers"]);
        let rows: Vec<&str> = table
            .stdout
            .lines()
            .filter(|l| l.starts_with(&format!("{} ", s.ns)))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert_eq!(rows, ["w-1", "w-10", "w-2", "x-9"], "{}", table.stdout);
        let run = gate(c, &s, &["-l", "team in (ml", "-n", &s.ns]);
        assert_ne!(run.code, 0, "a bad selector is refused: {run:?}");
    });
}

#[test]
fn the_watches_print_each_document_with_the_template() {
    let c = Cluster::shared();
    let s = Scenario::new("watchjp");
    c.apply(&s.healthy_yaml());
    c.apply(&labelled_workload(&s, "w-a", &[("team", "ml")], 30));
    c.apply(&labelled_workload(&s, "w-b", &[("team", "web")], 30));
    let limit = Duration::from_secs(60);
    let mut args = s.args("gate", &["-n", &s.ns, "--watch", "-l", "team=ml"]);
    args.extend(["-o", "jsonpath={.verdict} {.waiting[*].name}{\"\\n\"}"]);
    let mut watch = Watch::start(c, &args);
    watch.wait_for("the first document", limit, |l| l == "yes w-a");
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(600), Some(15)));
    watch.wait_for("the stale Lease's document", limit, |l| l == "no w-a");
    drop(watch);

    let mut args = s.args("lease", &["--watch"]);
    args.extend(["-o", "custom-columns=HOLDER:.lease.holder,STATUS:.lease.status"]);
    let mut watch = Watch::start(c, &args);
    watch.wait_for("the header", limit, |l| l.split_whitespace().eq(["HOLDER", "STATUS"]));
    watch.wait_for("the first row", limit, |l| l.split_whitespace().eq(["dispatch-admission-7d9f_1", "stale"]));
}

#[test]
fn color_is_always_never_or_auto() {
    let c = Cluster::shared();
    let s = Scenario::new("color");
    c.apply(&s.healthy_yaml());
    let green = "\u{1b}[32myes\u{1b}[0m";
    // Not a terminal: auto and never are plain; always colours, NO_COLOR or not.
    assert!(!gate(c, &s, &[]).expect_code(0).stdout.contains('\u{1b}'));
    assert!(!gate(c, &s, &["--color=auto"]).stdout.contains('\u{1b}'));
    assert!(!gate(c, &s, &["--color", "never"]).stdout.contains('\u{1b}'));
    assert!(gate(c, &s, &["--color=always"]).expect_code(0).stdout.contains(green));
    let mut cmd = c.command("kubectl", &["dispatch", "--color=always"]);
    cmd.args(s.args("gate", &[])).env("NO_COLOR", "1").env("TERM", "dumb");
    let out = cmd.output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(green), "--color=always wins over NO_COLOR");
    // Every verb takes it, before or after the verb.
    c.dispatch(&s.args("lease", &["--color=never"])).expect_code(0);
    let run = c.dispatch(&s.args("gate", &["--color=sometimes"]));
    run.expect_code(2);
    // In the watch: the chain printed again is coloured too.
    let mut watch = Watch::start(c, &s.args("gate", &["--watch", "--color=always"]));
    watch.wait_for("a coloured verdict", Duration::from_secs(60), |l| l.contains(green));
    // Every status word, not the verdict alone: gate's RESULT, lease's STATUS, doctor's RESULT,
    // lease --watch's rows; and none with never.
    let painted = |word: &str| format!("\u{1b}[32m{word}\u{1b}[0m");
    let run = gate(c, &s, &["--color=always"]);
    assert!(run.stdout.lines().filter(|l| l.contains(&painted("pass"))).count() >= 4, "{}", run.stdout);
    let run = c.dispatch(&s.args("lease", &["--color=always"]));
    assert!(run.expect_code(0).stdout.contains(&painted("fresh")), "{}", run.stdout);
    let doctor = |color: &'static str| c.dispatch(&["doctor", "--lease", s.lease.as_str(), color]);
    let run = doctor("--color=always");
    assert!(run.stdout.contains(&painted("ok")), "{}", run.stdout);
    assert!(!doctor("--color=never").stdout.contains('\u{1b}'));
    assert!(!c.dispatch(&s.args("lease", &["--color=never"])).stdout.contains('\u{1b}'));
    let mut watch = Watch::start(c, &s.args("lease", &["--watch", "--color=always"]));
    watch.wait_for("a coloured status", Duration::from_secs(60), |l| l.contains(&painted("fresh")));
}

/// What reaches the terminal: `-o jsonpath` prints a Workload's message byte for byte, as
/// kubectl's JSONPath printer prints the same field; a custom-columns cell is escaped as the
/// tables' cells are (kubectl would let the tab and the newline break its table).
#[test]
fn jsonpath_is_byte_exact_and_columns_are_escaped() {
    each_kubectl(|_kubectl| {
        let c = Cluster::shared();
        let s = Scenario::new("escapes");
        c.apply(&s.healthy_yaml());
        let yaml =
            fixtures::workload(&s.ns, "w-x", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "one\ttwo\nthree", 30)]);
        c.apply(&yaml);
        let theirs = c.kubectl_ok(
            &[
                "get",
                "workloads.kueue.x-k8s.io",
                "-n",
                &s.ns,
                "w-x",
                "-o",
                "jsonpath={.status.admissionChecks[0].message}",
            ],
            None,
        );
        assert_eq!(theirs, "one\ttwo\nthree");
        let run = gate(c, &s, &["-n", &s.ns, "-o", "jsonpath={.waiting[0].message}"]);
        assert_eq!(run.expect_code(0).stdout, theirs, "jsonpath prints the bytes, as kubectl");
        let run = gate(c, &s, &["-n", &s.ns, "--no-headers", "-o", "custom-columns=M:.waiting[0].message"]);
        assert_eq!(run.expect_code(0).stdout, "one\\ttwo\\nthree\n", "a cell is escaped");
    });
}

//! Bounded against any server (issue 26, the transport half), through `kubectl dispatch`, with
//! kubectl beside it where it has a behaviour: an answer past a bound (an endless body, a gzip
//! bomb, a list that never ends, an exec plugin that never stops writing) is one `error:` line
//! naming the bound, exit 1, with the plugin's peak memory measured under each hostile body; a
//! credential no header can carry, and a removed auth-provider, are errors, not aborts; a
//! password in the server URL never shows; a 3xx gets its own error.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::fixtures::Scenario;
use support::hostile::Hostile;
use support::{Cluster, Run, unique};

/// The bound on the plugin's peak resident memory under any hostile answer (an answer read
/// whole is bounded at 16 MiB, and a list is read as it arrives, object by object).
const PEAK_RSS_KIB: u64 = 256 << 10;

/// A generous watchdog: a run that hangs fails with its reason rather than holding the suite.
const WATCHDOG: Duration = Duration::from_secs(180);

/// A finished run, and the plugin's peak resident memory (VmHWM, KiB) as last seen while it ran.
struct Measured {
    run: Run,
    peak_kib: Option<u64>,
}

/// `kubectl ARGS` with `env`, its plugin's VmHWM sampled every 10 ms while it runs (kubectl
/// execs the plugin in its own process, so the samples taken once the process is
/// `kubectl-dispatch` are the plugin's alone; VmHWM only grows, so the last is the peak, less
/// what grew in the last 10 ms).
fn measured(args: &[&str], env: &[(&str, &str)]) -> Measured {
    let mut peak_kib = None;
    let mut sample = |pid| {
        if let Some(kib) = vm_hwm(pid) {
            peak_kib = Some(kib);
        }
    };
    let run = support::hostile::kubectl_watched(args, env, WATCHDOG, Duration::from_millis(10), &mut sample);
    Measured { run, peak_kib }
}

/// The process's VmHWM in KiB, once it is the plugin.
fn vm_hwm(pid: u32) -> Option<u64> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    if !comm.starts_with("kubectl-dispatc") {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Asserts the peak was seen and is under [`PEAK_RSS_KIB`]; prints it for the record.
fn within_memory(m: &Measured, case: &str) {
    let Some(kib) = m.peak_kib else { panic!("{case}: the plugin's memory was never sampled:\n{}", m.run.stderr) };
    eprintln!("{case}: peak RSS {} MiB", kib >> 10);
    assert!(kib < PEAK_RSS_KIB, "{case}: peak RSS {kib} KiB is past {PEAK_RSS_KIB} KiB");
}

const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/dispatch-system/leases/";

#[test]
fn an_endless_body_stops_at_the_body_bound_in_bounded_memory() {
    let server = Hostile::start("flood");
    let url = server.url();
    // No --request-timeout: the bound on size alone ends it.
    let lease = measured(&["dispatch", "-s", &url, "lease"], &[]);
    lease.run.expect_one_error(LEASE_PATH).expect_one_error("is larger than 16 MiB, the bound on one object");
    within_memory(&lease, "flood, lease");
    let gate = measured(&["dispatch", "-s", &url, "gate"], &[]);
    gate.run.expect_one_error("the API server's answer to /apis/kueue.x-k8s.io is larger than 16 MiB");
    within_memory(&gate, "flood, gate");
}

#[test]
fn a_gzip_bomb_is_bounded_after_it_is_inflated() {
    let server = Hostile::start("gzip-bomb");
    let url = server.url();
    let lease = measured(&["dispatch", "-s", &url, "lease"], &[]);
    lease.run.expect_one_error(LEASE_PATH).expect_one_error("is larger than 16 MiB");
    within_memory(&lease, "gzip bomb, lease");
    let asked = server.seen().into_iter().find(|s| s.by_plugin()).expect("the plugin asked");
    assert_eq!(asked.header("Accept-Encoding"), Some("gzip"), "the plugin asks for gzip, so the bomb is inflated");
    // With --disable-compression the plugin does not ask for gzip and does not inflate it:
    // the 256 KiB it gets are no JSON.
    let plain = measured(&["dispatch", "-s", &url, "--disable-compression", "lease"], &[]);
    plain.run.expect_code(1);
    assert!(!plain.run.stderr.contains("larger than"), "{}", plain.run.stderr);
}

const WORKLOADS_LIST: &str = "the API server's Workloads list at /apis/kueue.x-k8s.io/v1beta2/workloads holds ";

/// A page is decoded as it arrives, object by object, keeping only what each row needs: one
/// page of 4,000,000 tiny Workloads (64 MB, which cost 10.7 GB whole) stops at the bound on one
/// list's objects, its rows streamed until then, in bounded memory; so does a body of tiny
/// Workloads that never ends.
#[test]
fn a_page_of_millions_of_tiny_objects_stops_at_the_bound_on_one_list_in_bounded_memory() {
    let tiny = Hostile::start("tiny-items");
    let m = measured(&["dispatch", "-s", &tiny.url(), "workloads", "-A"], &[]);
    m.run.expect_code(1);
    let error = format!("error: {WORKLOADS_LIST}more than 1000000 objects, the bound on one list");
    assert_eq!(m.run.stderr.lines().collect::<Vec<_>>(), [error.as_str()], "the rows read, then one error line");
    assert_eq!(m.run.stdout.lines().count(), 1_000_001, "the header and a row for each object read");
    within_memory(&m, "4,000,000 tiny items, workloads -A");
    let endless = Hostile::start("endless-items");
    let m = measured(&["dispatch", "-s", &endless.url(), "gate", "-A"], &[]);
    m.run.expect_one_error(&format!("{WORKLOADS_LIST}more than 1000000 objects, the bound on one list"));
    within_memory(&m, "endless tiny items, gate -A");
}

/// No bound on a page's size: 1,200 Workloads of 150 KB each, in pages of 500 (75 MB each,
/// past the old 64 MiB bound on a body), are listed, every row, as they are decoded.
#[test]
fn pages_of_heavy_workloads_are_listed_whole_in_bounded_memory() {
    let heavy = Hostile::start("heavy-page");
    let m = measured(&["dispatch", "-s", &heavy.url(), "workloads", "-A"], &[]);
    m.run.expect_code(0);
    let rows: Vec<&str> = m.run.stdout.lines().collect();
    assert_eq!(rows.len(), 1201, "{}", m.run.stderr);
    assert!(rows[0].starts_with("NAMESPACE   NAME "), "{}", rows[0]);
    assert!(rows[1].starts_with("ns-0        heavy-0000   lq "), "{}", rows[1]);
    assert!(rows[1200].starts_with("ns-4        heavy-1199   lq "), "{}", rows[1200]);
    let pages: Vec<String> =
        heavy.seen().into_iter().filter(|s| s.uri.contains("/workloads?")).map(|s| s.uri).collect();
    assert_eq!(pages.len(), 3, "{pages:?}");
    within_memory(&m, "1,200 Workloads of 150 KB paged at 500, workloads -A");
}

/// Inside a list, the bound is on each object: an items array of spaces that never ends, and
/// a gzip answer that inflates to 256 MiB of them, stop at 16 MiB.
#[test]
fn an_endless_or_inflated_object_in_a_list_stops_at_the_bound_on_one_object() {
    for (mode, case) in [("flood-list", "endless list body"), ("gzip-list", "gzip bomb list")] {
        let server = Hostile::start(mode);
        let m = measured(&["dispatch", "-s", &server.url(), "workloads", "-A"], &[]);
        m.run.expect_one_error(&format!(
            "{WORKLOADS_LIST}an object larger than 16 MiB, the bound on one object (after decompression)"
        ));
        within_memory(&m, &format!("{case}, workloads -A"));
    }
}

#[test]
fn a_redirect_gets_its_own_error_with_the_location_redacted() {
    let server = Hostile::start("redirect");
    let url = server.url();
    let ours = measured(&["dispatch", "-s", &url, "lease"], &[]).run;
    ours.expect_one_error(&format!(
        "the API server answered 302 (to https://admin:***@127.0.0.1:1/elsewhere) for {LEASE_PATH}"
    ));
    assert!(ours.stderr.contains("kubectl-dispatch does not follow redirects"), "{}", ours.stderr);
    assert!(!ours.stderr.contains("S3CRET"), "{}", ours.stderr);
    let asked = server.seen().into_iter().filter(|s| s.by_plugin()).count();
    assert_eq!(asked, 1, "one request, not followed");
    // kubectl follows it (to a port nothing answers at) and fails there; it too never prints
    // the password.
    let k = measured(&["-s", &url, "get", "lease", "-n", "dispatch-system", "x"], &[]).run;
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
    assert!(!k.stderr.contains("S3CRET"), "{}", k.stderr);
}

#[test]
fn a_list_that_repeats_its_continue_token_or_never_ends_is_an_error() {
    let same = Hostile::start("continue-same");
    let ours = measured(&["dispatch", "-s", &same.url(), "gate"], &[]).run;
    ours.expect_one_error("list at /apis/kueue.x-k8s.io/v1beta2/")
        .expect_one_error("does not end: page 2 gave the same continue token as an earlier page");
    let new = Hostile::start("continue-new");
    let ours = measured(&["dispatch", "-s", &new.url(), "gate"], &[]).run;
    ours.expect_one_error("did not end within 10000 pages, the bound on one list");
}

/// The live modes list through the one-shot reads' pager: a list that does not end ends the
/// command with the one-shot's error, where the live list used to ask for page after page for
/// ever. `gate --watch` reads each Kueue list's first page once before its watches start
/// (`continue-later` lets those end), then its watches' lists meet the bound; `lease --watch`'s
/// only lists are its watches' (the Lease by name, and Kueue's manager's).
#[test]
fn the_live_modes_lists_have_the_one_shot_reads_page_bounds() {
    let later = Hostile::start("continue-later");
    let ours = measured(&["dispatch", "-s", &later.url(), "gate", "--watch", "--timeout", "90s"], &[]).run;
    ours.expect_one_error("list at /apis/kueue.x-k8s.io/v1beta2/")
        .expect_one_error("does not end: page 2 gave the same continue token as an earlier page");
    // On a server of its own, the one-shot gate's reads (each list's first) all end.
    let once = measured(&["dispatch", "-s", &Hostile::start("continue-later").url(), "gate"], &[]).run;
    assert!(!once.stderr.contains("does not end"), "{}", once.stderr);
    let same = Hostile::start("continue-same");
    let ours = measured(&["dispatch", "-s", &same.url(), "lease", "--watch", "--timeout", "90s"], &[]).run;
    ours.expect_one_error("the API server's Leases list at /apis/coordination.k8s.io/v1/namespaces/")
        .expect_one_error("does not end: page 2 gave the same continue token as an earlier page");
    let new = Hostile::start("continue-new");
    let ours = measured(&["dispatch", "-s", &new.url(), "lease", "--watch", "--timeout", "150s"], &[]).run;
    ours.expect_one_error("the API server's Leases list at /apis/coordination.k8s.io/v1/namespaces/")
        .expect_one_error("did not end within 10000 pages, the bound on one list");
}

#[test]
fn a_password_in_the_server_url_is_redacted_everywhere() {
    let url = "https://admin:S3CRET@127.0.0.1:1";
    for flags in [&["lease"][..], &["-v", "6", "lease"], &["gate", "-o", "json"]] {
        let mut args = vec!["dispatch", "-s", url, "--request-timeout", "5s"];
        args.extend_from_slice(flags);
        let ours = measured(&args, &[]).run;
        ours.expect_code(1);
        assert!(!ours.stderr.contains("S3CRET") && !ours.stdout.contains("S3CRET"), "{flags:?}:\n{}", ours.stderr);
        assert!(
            ours.stderr.contains("cannot reach the API server at https://admin:***@127.0.0.1:1"),
            "{}",
            ours.stderr
        );
    }
    // The fleet's JSON error field.
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-kc"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    let cluster = json!({"name": "x", "cluster": {"server": url}});
    let contexts = [
        json!({"name": "a", "context": {"cluster": "x", "user": "x"}}),
        json!({"name": "b", "context": {"cluster": "x", "user": "x"}}),
    ];
    let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "current-context": "a", "clusters": [cluster],
        "users": [{"name": "x", "user": {"token": "t"}}], "contexts": contexts});
    std::fs::write(&path, kubeconfig.to_string()).unwrap();
    let kc = path.to_str().unwrap();
    let fleet = measured(
        &["dispatch", "gate", "--all-contexts", "--request-timeout", "5s", "-o", "json"],
        &[("KUBECONFIG", kc)],
    )
    .run;
    assert!(!fleet.stdout.contains("S3CRET") && !fleet.stderr.contains("S3CRET"), "{}\n{}", fleet.stdout, fleet.stderr);
    let v: Value = fleet.json();
    let error = v["contexts"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("https://admin:***@127.0.0.1:1"), "{}", fleet.stdout);
    // kubectl's errors redact it the same way (Go's net/http client); with a token, so that it
    // does not prompt for a user name.
    let k = measured(&["-s", url, "--token", "t", "--request-timeout", "5s", "get", "lease", "-A"], &[]).run;
    assert_eq!(k.code, 1, "{}", k.stderr);
    assert!(!k.stderr.contains("S3CRET") && k.stderr.contains("admin:***@127.0.0.1:1"), "kubectl:\n{}", k.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The kubeconfig is read once a run (issue 36): a FIFO written once, holding two contexts, is
/// enough for `gate --all-contexts`, which reads the contexts' names and then connects each
/// one (read again, the FIFO would wait for a writer that never comes, and each context fail
/// after 10 s).
#[test]
fn a_kubeconfig_that_can_be_read_once_serves_a_whole_fleet() {
    let c = Cluster::shared();
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-once"));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let v: Value =
        serde_json::from_str(&c.kubectl_ok(&["config", "view", "--raw", "--minify", "-o", "json"], None)).unwrap();
    let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "x", "cluster": v["clusters"][0]["cluster"]}],
        "users": [{"name": "x", "user": v["users"][0]["user"]}],
        "contexts": [{"name": "a", "context": {"cluster": "x", "user": "x"}},
                     {"name": "b", "context": {"cluster": "x", "user": "x"}}]});
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, kubeconfig.to_string()).unwrap())
    };
    let fifo_text = fifo.to_str().unwrap();
    let args = ["dispatch", "gate", "-A", "--all-contexts", "--kubeconfig", fifo_text, "-o", "json"];
    let started = std::time::Instant::now();
    let run = measured(&args, &[]).run;
    writer.join().unwrap();
    let v: Value = run.json();
    let contexts: Vec<&str> =
        v["contexts"].as_array().unwrap().iter().map(|c| c["context"].as_str().unwrap()).collect();
    assert_eq!(contexts, ["a", "b"], "{}\n{}", run.stdout, run.stderr);
    for c in v["contexts"].as_array().unwrap() {
        assert!(c.get("error").is_none_or(Value::is_null), "{c}\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("error:"), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(10), "the FIFO was waited on: {:?}", started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A copy of the shared cluster's kubeconfig, changed by `kubectl config ARGS`.
fn kubeconfig_copy(c: &Cluster, dir: &Path, name: &str, change: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let text = c.kubectl_ok(&["config", "view", "--raw"], None);
    std::fs::write(&path, text).unwrap();
    let user = c.kubectl_ok(&["config", "view", "--minify", "-o", "jsonpath={.contexts[0].context.user}"], None);
    let mut args =
        vec!["--kubeconfig".to_string(), path.display().to_string(), "config".into(), "set-credentials".into(), user];
    args.extend(change.iter().map(|s| s.to_string()));
    let out = Command::new("kubectl").args(&args).env_remove("KUBECONFIG").output().unwrap();
    assert!(out.status.success(), "kubectl config set-credentials: {}", String::from_utf8_lossy(&out.stderr));
    path
}

/// `kubectl ARGS` (the plugin or kubectl's own verbs) on kubeconfig `path`.
fn on(path: &Path, args: &[&str]) -> Run {
    measured(args, &[("KUBECONFIG", path.to_str().unwrap())]).run
}

#[test]
fn a_token_with_a_line_break_is_refused_as_kubectl_refuses_it() {
    let c = Cluster::shared();
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-token"));
    std::fs::create_dir_all(&dir).unwrap();
    let want = "net/http: invalid header field value for \"Authorization\": the token holds a line break";
    // --token with a trailing line break.
    let plain = kubeconfig_copy(c, &dir, "plain", &[]);
    on(&plain, &["dispatch", "--token", "abc\n", "lease"]).expect_one_error(want);
    let k = on(&plain, &["--token", "abc\n", "get", "lease", "-A"]);
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
    assert!(k.stderr.contains("invalid header field value for \"Authorization\""), "kubectl:\n{}", k.stderr);
    // A kubeconfig `token: |` block (kubectl writes one for a token that ends in a line break).
    let block = kubeconfig_copy(c, &dir, "block", &["--token=abc\n"]);
    assert!(std::fs::read_to_string(&block).unwrap().contains("token: |"), "a block scalar");
    on(&block, &["dispatch", "lease"]).expect_one_error(want);
    on(&block, &["dispatch", "gate"]).expect_one_error(want);
    let k = on(&block, &["get", "lease", "-A"]);
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
    assert!(k.stderr.contains("invalid header field value for \"Authorization\""), "kubectl:\n{}", k.stderr);
    // An impersonation value, likewise.
    on(&plain, &["dispatch", "--as", "a\nb", "lease"])
        .expect_one_error("invalid header field value for \"Impersonate-User\"");
    let k = on(&plain, &["--as", "a\nb", "get", "lease", "-A"]);
    assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_removed_auth_providers_are_refused_through_kubectl_in_kubectls_words_and_code() {
    let c = Cluster::shared();
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-provider"));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["gcp", "azure"] {
        // A cmd-path that would hang: it is never run.
        let path = kubeconfig_copy(
            c,
            &dir,
            name,
            &[
                &format!("--auth-provider={name}"),
                "--auth-provider-arg=cmd-path=/bin/sleep",
                "--auth-provider-arg=cmd-args=600",
            ],
        );
        let first = format!("The {name} auth plugin has been removed.");
        let ours = on(&path, &["dispatch", "lease"]);
        ours.expect_one_error(&first);
        assert!(
            ours.stderr.lines().nth(1).is_some_and(|l| l.contains("kubectl/client-go credential plugin instead")),
            "{}",
            ours.stderr
        );
        let k = on(&path, &["get", "lease", "-A"]);
        assert_eq!(k.code, 1, "kubectl:\n{}", k.stderr);
        assert!(k.stderr.contains(&first), "kubectl:\n{}", k.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_exec_plugin_that_writes_without_end_is_stopped_at_its_bound() {
    let c = Cluster::shared();
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-exec"));
    std::fs::create_dir_all(&dir).unwrap();
    let script = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    };
    let cases = [
        ("stdout", script("stdout", "exec yes"), "its standard output passed 1 MiB, the bound on it"),
        (
            "stderr",
            script("stderr", "exec yes x | tr -d '\\n' >&2"),
            "its standard error line passed 64 KiB, the bound on it",
        ),
    ];
    for (name, command, want) in cases {
        // The cluster's entry, and a user with this exec plugin only.
        let text = c.kubectl_ok(&["config", "view", "--raw", "--minify", "-o", "json"], None);
        let v: Value = serde_json::from_str(&text).unwrap();
        let exec =
            json!({"apiVersion": "client.authentication.k8s.io/v1", "command": command, "interactiveMode": "Never"});
        let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "x", "cluster": v["clusters"][0]["cluster"]}],
            "users": [{"name": "x", "user": {"exec": exec}}],
            "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]});
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, kubeconfig.to_string()).unwrap();
        let m = measured(&["dispatch", "lease"], &[("KUBECONFIG", path.to_str().unwrap())]);
        m.run.expect_one_error(want);
        within_memory(&m, &format!("exec {name}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn in_a_fleet_an_endless_context_is_reported_as_such_and_the_rest_print() {
    let c = Cluster::shared();
    let s = Scenario::new("bounds-fleet");
    c.apply(&s.healthy_yaml());
    // A Lease of an hour, so the good contexts stay "yes" however long the endless one takes.
    c.apply(&support::fixtures::lease(
        &s.lease_ns,
        &s.lease_name,
        Some("dispatch-admission-7d9f_1"),
        Some(2),
        Some(3600),
    ));
    let endless = Hostile::start("continue-new");
    let text = c.kubectl_ok(&["config", "view", "--raw", "--minify", "-o", "json"], None);
    let v: Value = serde_json::from_str(&text).unwrap();
    let good = |name: &str| {
        (
            json!({"name": name, "cluster": v["clusters"][0]["cluster"]}),
            json!({"name": name, "user": v["users"][0]["user"]}),
            json!({"name": name, "context": {"cluster": name, "user": name}}),
        )
    };
    let ((ca, ua, xa), (cb, ub, xb)) = (good("a"), good("b"));
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [ca, cb, {"name": "endless", "cluster": {"server": endless.url()}}],
        "users": [ua, ub, {"name": "endless", "user": {}}],
        "contexts": [xa, xb, {"name": "endless", "context": {"cluster": "endless", "user": "endless"}}],
    });
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-fleet"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig.to_string()).unwrap();
    let args = s.args("gate", &["--context", "a", "--context", "endless", "--context", "b", "-A"]);
    let mut full = vec!["dispatch"];
    full.extend(args);
    let table = on(&path, &full);
    table.expect_code(1);
    let rows: Vec<Vec<&str>> = table.lines().iter().map(|l| l.split_whitespace().collect()).collect();
    // Each context's rows as it is judged: a and b at once (in either order), the endless
    // one last, at its own bound.
    let mut good: Vec<&str> = rows[1..3].iter().map(|r| r[0]).collect();
    good.sort_unstable();
    assert_eq!(good, ["a", "b"], "{}", table.stdout);
    assert!(rows[1..3].iter().all(|r| r[1..3] == [s.cq.as_str(), "yes"]), "{}", table.stdout);
    assert_eq!(rows[3][..3], ["endless", "<none>", "error"], "{}", table.stdout);
    // The whole reason, in JSON (the table cuts it to its column).
    full.extend(["-o", "json"]);
    let v = on(&path, &full).json();
    assert_eq!(v["contexts"][0]["report"]["verdict"], "yes", "{v}");
    assert_eq!(v["contexts"][2]["report"]["verdict"], "yes", "{v}");
    let error = v["contexts"][1]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the API server's ")
            && error.contains(" list at /apis/kueue.x-k8s.io/v1beta2/")
            && error.ends_with("did not end within 10000 pages, the bound on one list"),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real cluster with heavy Workloads (issue 36): 600 Workloads whose annotations hold
/// 150,000 bytes each (within Kubernetes' 256 KB limit on annotations), which kube-apiserver
/// sends in pages of 75 MB, past the old 64 MiB bound on a body. `workloads -A` lists them all,
/// over two pages, with the rows `kubectl get workloads -A` lists, in bounded memory.
#[test]
fn a_cluster_of_heavy_workloads_is_listed_as_kubectl_lists_it() {
    let c = Cluster::start("v0.17.0");
    let ns = "heavy";
    c.kubectl_ok(&["create", "namespace", ns], None);
    let annotation = "x".repeat(150_000);
    let yaml: String = (0..600)
        .map(|i| {
            let w = support::fixtures::workload(ns, &format!("heavy-{i:03}"), "lq", None, &[]);
            let w = w.split("status:\n").next().unwrap_or_default().to_string();
            let head = format!("metadata:\n  name: heavy-{i:03}\n");
            w.replacen(&head, &format!("{head}  annotations:\n    example.com/big: {annotation}\n"), 1) + "---\n"
        })
        .collect();
    // create, not apply: client-side apply would copy the annotation into another one.
    c.kubectl_ok(&["create", "-f", "-"], Some(&yaml));
    drop(yaml);
    let theirs = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-A"], None);
    let m = measured(&["dispatch", "workloads", "-A"], &[("KUBECONFIG", c.kubeconfig())]);
    m.run.expect_code(0);
    let ours: Vec<Vec<&str>> = m.run.stdout.lines().map(|l| l.split_whitespace().take(3).collect()).collect();
    let kubectls: Vec<Vec<&str>> = theirs.lines().map(|l| l.split_whitespace().take(3).collect()).collect();
    assert_eq!(ours.len(), 601, "{}", m.run.stderr);
    assert_eq!(ours, kubectls, "the same namespaces, names and queues, in the same order");
    within_memory(&m, "600 Workloads of 150 KB on kube-apiserver, workloads -A");
    let gate = measured(&["dispatch", "gate", "-A"], &[("KUBECONFIG", c.kubeconfig())]);
    assert!(!gate.run.stderr.contains("error:"), "{}", gate.run.stderr);
    within_memory(&gate, "600 Workloads of 150 KB on kube-apiserver, gate -A");
}

/// Completion's lookups are paged like every list, bounded in names and in time: the 1,200
/// Workloads of three pages (of small Workloads: the lookup has 3 s) are all offered, each once; a page of 4,000,000 nameless ones
/// ends within the lookup's 3 s, offering none.
#[test]
fn completion_pages_its_lookups_within_its_time() {
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-complete"));
    std::fs::create_dir_all(&dir).unwrap();
    let completer = dir.join("kubectl_complete-dispatch");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-dispatch"), &completer).unwrap();
    let complete = |url: &str| {
        let started = std::time::Instant::now();
        let out =
            Command::new(&completer).args(["--server", url, "workload", ""]).env("KUBECONFIG", "/dev/null").output();
        (support::Run::from(out.unwrap()), started.elapsed())
    };
    let light = Hostile::start("light-pages");
    let (run, _) = complete(&light.url());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let names: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("heavy-")).collect();
    assert_eq!(names.len(), 1200, "{}", run.stdout);
    assert_eq!(names.iter().collect::<std::collections::HashSet<_>>().len(), 1200);
    assert!(run.stdout.ends_with(":4\n"), "{}", run.stdout);
    let tiny = Hostile::start("tiny-items");
    let (run, took) = complete(&tiny.url());
    assert_eq!((run.code, run.stdout.as_str()), (0, ":4\n"), "{}", run.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Local files are bounded too (issue 36): a kubeconfig or a `tokenFile` that is `/dev/zero`,
/// larger than its bound, or a FIFO nothing writes to, is one `error:` line naming the file,
/// read on a thread of its own. kubectl reads each whole: it waits on the FIFO for ever (cut
/// here at 5 s), and `/dev/zero` would grow it until memory runs out (not run).
#[test]
fn local_files_past_their_bounds_are_one_error_naming_the_file() {
    let c = Cluster::shared();
    let dir = std::env::temp_dir().join(unique("dispatch-bounds-local"));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let big = dir.join("big");
    std::fs::write(&big, vec![b' '; (16 << 20) + 1]).unwrap();
    let fifo_text = fifo.to_str().unwrap();
    for (path, why) in [
        ("/dev/zero", "larger than 16 MiB, the bound on a kubeconfig"),
        (big.to_str().unwrap(), "larger than 16 MiB, the bound on a kubeconfig"),
        (fifo_text, "reading it did not end within 10s (a FIFO that nothing writes to?)"),
    ] {
        let m = measured(&["dispatch", "--kubeconfig", path, "lease"], &[]);
        m.run.expect_one_error(&format!("cannot read kubeconfig {path}: {why}"));
    }
    let mut k = Command::new("timeout");
    k.args(["5", "kubectl", "--kubeconfig", fifo_text, "get", "lease", "-A"]);
    assert_eq!(k.output().unwrap().status.code(), Some(124), "kubectl waits on the FIFO");
    let text = c.kubectl_ok(&["config", "view", "--raw", "--minify", "-o", "json"], None);
    let v: Value = serde_json::from_str(&text).unwrap();
    for (file, why) in [
        ("/dev/zero", "larger than 1 MiB, the bound on a token file"),
        (fifo_text, "reading it did not end within 10s"),
    ] {
        let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "x", "cluster": v["clusters"][0]["cluster"]}],
            "users": [{"name": "x", "user": {"tokenFile": file}}],
            "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]});
        let path = dir.join("token.kubeconfig");
        std::fs::write(&path, kubeconfig.to_string()).unwrap();
        let m = measured(&["dispatch", "lease"], &[("KUBECONFIG", path.to_str().unwrap())]);
        m.run.expect_one_error(&format!("failed to read token file {file:?}: {why}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

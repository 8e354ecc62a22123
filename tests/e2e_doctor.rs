//! `kubectl dispatch doctor` on the real cluster, through the real kubectl, as the harness's
//! users: viewer (what deploy/rbac.yaml grants), no-lease, no-pods, nobody (no rights at all),
//! and impersonated identities. Its access answers are checked against `kubectl auth can-i`,
//! and the RBAC it prints is applied with kubectl to prove that it applies and suffices.

mod support;

use serde_json::json;
use std::sync::OnceLock;

use support::pods;
use support::{Cluster, Run, unique};

/// The default Lease, fresh for an hour, held by a running pod on a Ready node; once per run.
fn cluster() -> &'static Cluster {
    static READY: OnceLock<()> = OnceLock::new();
    let c = Cluster::shared();
    READY.get_or_init(|| {
        pods::healthy_default_holder(c);
        // Kueue's install creates its namespace (no Kueue manager runs here): doctor asks
        // for the get on Kueue's manager's Lease there.
        let _ = c.kubectl(&["create", "namespace", "kueue-system"], None);
    });
    c
}

fn doctor(c: &Cluster, args: &[&str]) -> Run {
    let mut full = vec!["doctor"];
    full.extend_from_slice(args);
    c.dispatch(&full)
}

fn finding<'a>(v: &'a serde_json::Value, check: &str) -> &'a serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no finding {check:?} in {v:#}"))
}

fn results(v: &serde_json::Value, area: &str) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["area"] == area)
        .map(|f| (f["check"].as_str().unwrap().to_string(), f["result"].as_str().unwrap().to_string()))
        .collect()
}

/// `kubectl auth can-i` for an access finding, with the same context: the oracle.
fn kubectl_can_i(c: &Cluster, context: &str, access: &serde_json::Value) -> bool {
    let resource = match access["group"].as_str().unwrap() {
        "" => access["resource"].as_str().unwrap().to_string(),
        group => format!("{}.{group}", access["resource"].as_str().unwrap()),
    };
    let target = match access["name"].as_str() {
        Some(name) => format!("{resource}/{name}"),
        None => resource,
    };
    let mut args = vec!["auth", "can-i", "--context", context, access["verb"].as_str().unwrap(), &target];
    let ns = access["namespace"].as_str().map(String::from);
    match &ns {
        Some(ns) => args.extend(["-n", ns.as_str()]),
        None if !["clusterqueues", "admissionchecks", "nodes", "namespaces"]
            .contains(&access["resource"].as_str().unwrap()) =>
        {
            args.push("-A")
        }
        None => {}
    }
    let out = c.kubectl(&args, None);
    match String::from_utf8_lossy(&out.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!("kubectl auth can-i {args:?}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn the_viewer_has_what_the_plugin_needs_as_kubectl_auth_can_i_agrees() {
    let c = cluster();
    let table = doctor(c, &["--context", "viewer"]);
    table.expect_code(0);
    // Three warnings (namespaces for completion; Kueue's manager's Lease, not granted: its
    // access row and the manager's row): not "all well".
    table.expect_line("Doctor: ok with warnings: nothing stops the gate or the plugin (3 warnings)");
    assert_eq!(table.lines()[0].split_whitespace().collect::<Vec<_>>(), ["AREA", "CHECK", "RESULT", "DETAIL"]);

    let json = doctor(c, &["--context", "viewer", "-o", "json"]);
    json.expect_code(0);
    let v = json.json();
    assert_eq!((v["kind"].as_str(), v["result"].as_str()), (Some("DoctorReport"), Some("ok")));
    assert_eq!(v["identity"]["username"], "viewer");
    assert_eq!(v["context"], "viewer");
    // Only the convenience of completing -n and Kueue's manager's Lease (context) are missing;
    // deploy/rbac.yaml leaves them out.
    let missing: Vec<&str> = v["missingRbac"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(
        missing,
        [
            "list namespaces (cluster-wide)",
            "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system"
        ]
    );
    for f in v["findings"].as_array().unwrap().iter().filter(|f| f["area"] == "access") {
        let allowed = f["access"]["answer"] == "allowed";
        assert_eq!(allowed, kubectl_can_i(c, "viewer", &f["access"]), "doctor and kubectl auth can-i disagree: {f:#}");
    }
    let kueue = finding(&v, "Kueue's API versions agree with the plugin's");
    assert_eq!(kueue["detail"], "serves v1beta2, v1beta1; the plugin reads v1beta2");
    let lease = finding(&v, "Lease dispatch-system/dispatch-admission is a live heartbeat");
    assert_eq!(lease["result"], "ok");
    let ns = finding(&v, "the Lease's namespace dispatch-system exists");
    assert_eq!((ns["result"].as_str(), ns["detail"].as_str()), (Some("ok"), Some("exists (the Lease is in it)")));
    let pod = finding(&v, "the holder's pod runs");
    assert_eq!(pod["detail"], "pod dispatch-admission-5c7d9-q2x4z is running and ready on node doctor-node");

    // YAML is the same document.
    let yaml = doctor(c, &["--context", "viewer", "-o", "yaml"]);
    yaml.expect_code(0);
    let mut from_yaml: serde_json::Value = serde_saphyr::from_str(&yaml.stdout).unwrap();
    let mut from_json = v.clone();
    for d in [&mut from_yaml, &mut from_json] {
        d["evaluatedAt"] = serde_json::Value::Null;
        d["findings"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .filter(|f| f["area"] == "lease")
            .for_each(|f| f["detail"] = "".into());
    }
    assert_eq!(from_yaml, from_json);
}

/// The default table fits a 120-column terminal, for admin and the viewer (whose run also
/// prints the RBAC to apply); `-o wide` carries each check and detail whole, as JSON has them.
#[test]
fn the_default_table_fits_120_columns_and_wide_has_the_detail() {
    use unicode_width::UnicodeWidthStr;
    let c = cluster();
    for context in ["admin", "viewer"] {
        let table = doctor(c, &["--context", context]);
        table.expect_code(0);
        let wide_lines: Vec<String> = table.lines().iter().filter(|l| l.width() > 120).map(|l| l.to_string()).collect();
        assert!(wide_lines.is_empty(), "{context}: lines over 120 columns: {wide_lines:#?}\n{}", table.stdout);
        assert_eq!(table.lines()[0].split_whitespace().collect::<Vec<_>>(), ["AREA", "CHECK", "RESULT", "DETAIL"]);
        let wide = doctor(c, &["--context", context, "-o", "wide"]);
        wide.expect_code(0);
        let json = doctor(c, &["--context", context, "-o", "json"]);
        let v = json.json();
        for f in v["findings"].as_array().unwrap() {
            let (check, detail) = (f["check"].as_str().unwrap(), f["detail"].as_str().unwrap());
            // A Lease's age moves between runs: those rows are found by their check alone.
            let row = wide.lines().into_iter().find(|l| l.contains(check));
            let row = row.unwrap_or_else(|| panic!("{context}: -o wide has no row {check:?}:\n{}", wide.stdout));
            let ages = f["area"] == "lease" || f["area"] == "kueue manager";
            assert!(ages || row.ends_with(detail), "{context}: {row:?} lacks {detail:?}");
        }
        assert!(wide.lines().iter().any(|l| l.width() > 120), "{context}: -o wide is not cut:\n{}", wide.stdout);
    }
}

#[test]
fn no_lease_is_told_the_rules_to_add() {
    let c = cluster();
    let run = doctor(c, &["--context", "no-lease", "-o", "json"]);
    run.expect_code(3);
    let v = run.json();
    assert_eq!(v["result"], "fail");
    let missing: Vec<&str> = v["missingRbac"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(
        missing,
        [
            "get leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system",
            "list leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system",
            "watch leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system",
            "get pods in namespace dispatch-system",
            "list namespaces (cluster-wide)",
            "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system",
        ]
    );
    let lease = finding(&v, "Lease dispatch-system/dispatch-admission is a live heartbeat");
    assert_eq!(lease["result"], "unknown");
    let rbac = v["rbac"].as_str().unwrap();
    let objects = yaml_stream(rbac);
    let binding = objects.iter().find(|o| o["kind"] == "RoleBinding").expect("a RoleBinding");
    assert_eq!(
        binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "no-lease"}])
    );
    let role = objects.iter().find(|o| o["kind"] == "Role").expect("a Role");
    assert_eq!(
        role["rules"][0],
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["dispatch-admission"], "verbs": ["get", "list", "watch"]}),
        "{rbac}"
    );
    let table = doctor(c, &["--context", "no-lease"]);
    table.expect_code(3);
    table.expect_line("Doctor: fail: 1 finding would stop the gate or the plugin (6 warnings)");
    // The command is the one that works for no-lease, run by an admin.
    assert!(table.stdout.contains("\nTo grant what is missing, an admin applies this\n(kubectl dispatch doctor --as no-lease --as-group no-lease -n default --rbac | kubectl apply -f -):\n\n# What no-lease lacks"), "{}", table.stdout);
    // --no-headers: nothing but rows on stdout.
    let rows = doctor(c, &["--context", "no-lease", "--no-headers"]);
    rows.expect_code(3);
    assert!(rows.lines().iter().all(|l| l.split_whitespace().count() >= 4), "{}", rows.stdout);
    // The findings the table cut, whole, and the summary go to stderr.
    assert!(rows.stderr.starts_with("Findings in full:\n"), "{}", rows.stderr);
    assert!(rows.stderr.lines().any(|l| l.starts_with("Doctor: fail: ")), "{}", rows.stderr);
}

#[test]
fn nobody_applies_the_rbac_it_prints_and_then_passes() {
    let c = cluster();
    let before = doctor(c, &["--context", "nobody", "-o", "json"]);
    before.expect_code(3);
    let v = before.json();
    assert_eq!(v["identity"]["username"], "nobody");
    for (check, result) in results(&v, "access") {
        assert_ne!(result, "ok", "nobody may {check}");
    }
    // The grant is whole, so --rbac exits 0 though the checklist fails (3).
    let rbac = doctor(c, &["--context", "nobody", "--rbac"]);
    rbac.expect_code(0);
    assert_eq!(rbac.stdout, v["rbac"].as_str().unwrap());
    let applied = c.kubectl_ok(&["apply", "-f", "-"], Some(&rbac.stdout));
    assert!(
        applied.contains("clusterrolebinding.rbac.authorization.k8s.io/kubectl-dispatch-doctor-nobody created"),
        "{applied}"
    );
    let after = doctor(c, &["--context", "nobody", "-o", "json"]);
    after.expect_code(0);
    let v = after.json();
    assert_eq!(v["result"], "ok");
    assert!(v["missingRbac"].as_array().unwrap().is_empty() && v["rbac"].is_null(), "{v:#}");
    for (check, result) in results(&v, "access") {
        assert_eq!(result, "ok", "{check}");
    }
    // And the plugin itself now works as nobody.
    let gate = c.dispatch(&["lease", "--context", "nobody"]);
    gate.expect_code(0);
    let quiet = doctor(c, &["--context", "nobody", "--rbac"]);
    quiet.expect_code(0);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", "Nothing to grant: every read is allowed.\n"));
}

/// --as checks as whom the caller says: the adapter's ServiceAccount gets a ServiceAccount
/// subject, and once that is applied its get on the Lease is allowed.
#[test]
fn as_the_adapters_service_account() {
    let c = cluster();
    let sa = unique("adapter");
    let who = format!("system:serviceaccount:dispatch-system:{sa}");
    let run = doctor(c, &["--as", &who, "-o", "json"]);
    run.expect_code(3);
    let v = run.json();
    assert_eq!(v["identity"]["username"], who.as_str());
    let get = "get leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system";
    assert_eq!(finding(&v, get)["result"], "fail");
    assert!(
        finding(&v, get)["detail"].as_str().unwrap().ends_with("needed by gate, lease, and the adapter's preflight")
    );
    let rbac = v["rbac"].as_str().unwrap();
    let binding = yaml_stream(rbac).into_iter().find(|o| o["kind"] == "RoleBinding").expect("a RoleBinding");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": sa, "namespace": "dispatch-system"}]),
        "{rbac}"
    );
    c.kubectl_ok(&["apply", "-f", "-"], Some(rbac));
    let v = doctor(c, &["--as", &who, "-o", "json"]).json();
    assert_eq!(finding(&v, get)["result"], "ok");
    assert_eq!(v["result"], "ok");
}

/// system:anonymous may not even ask: every check is unknown, exit 4.
#[test]
fn an_identity_that_may_not_ask_cannot_tell() {
    let c = cluster();
    let run = doctor(c, &["--as", "system:anonymous"]);
    run.expect_code(4);
    assert!(run.stdout.lines().any(|l| l.starts_with("Doctor: cannot tell: ")), "{}", run.stdout);
    let v = doctor(c, &["--as", "system:anonymous", "-o", "json"]).json();
    assert_eq!(v["result"], "unknown");
    assert!(v["identity"].is_null());
    assert_eq!(
        finding(&v, "list clusterqueues.kueue.x-k8s.io (cluster-wide)")["detail"],
        "cannot tell: may not create selfsubjectaccessreviews.authorization.k8s.io"
    );
    assert_eq!(finding(&v, "Kueue's API versions agree with the plugin's")["result"], "unknown");
}

/// `doctor --rbac`'s exit code says whether the grant could be computed, not what the
/// checklist found: with a stale Lease the checklist says 3, and `--rbac > grant.yaml && kubectl
/// apply -f grant.yaml` still applies; one who may not even ask gets 4 and the reasons.
#[test]
fn rbac_exits_on_whether_the_grant_was_computed() {
    let c = cluster();
    let s = support::fixtures::Scenario::new("rbacstale");
    c.apply(&support::fixtures::lease(&s.lease_ns, &s.lease_name, Some("ctl-0_x"), Some(600), Some(15)));
    let who = unique("stale-user");
    let checklist = doctor(c, &["--as", &who, "--lease", &s.lease]);
    checklist.expect_code(3);
    let dir = support::temp_dir("rbacstale");
    let grant = dir.join("grant.yaml");
    let script = format!(
        "kubectl dispatch doctor --as {who} --lease {} --rbac > {g} && kubectl apply -f {g}",
        s.lease,
        g = grant.display()
    );
    let out = c.command("sh", &["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let applied = String::from_utf8_lossy(&out.stdout);
    assert!(applied.contains(&format!("kubectl-dispatch-doctor-{who} created")), "{applied}");
    let anonymous = doctor(c, &["--as", "system:anonymous", "--rbac"]);
    anonymous.expect_code(4);
    assert!(
        anonymous.stderr.lines().any(|l| l.starts_with("Warning: ") && l.contains(": cannot tell: ")),
        "{}",
        anonymous.stderr
    );
    assert!(!anonymous.stderr.contains("Nothing to grant"), "{}", anonymous.stderr);
}

#[test]
fn a_lease_namespace_that_does_not_exist_fails() {
    let c = cluster();
    let ns = unique("nowhere");
    let lease = format!("{ns}/ctl");
    let v = doctor(c, &["--lease", &lease, "-o", "json"]).json();
    assert_eq!(v["result"], "fail");
    let f = finding(&v, &format!("the Lease's namespace {ns} exists"));
    assert_eq!(
        (f["result"].as_str(), f["detail"].clone()),
        (Some("fail"), format!("namespace {ns} does not exist").into())
    );
    doctor(c, &["--lease", &lease]).expect_code(3);
}

/// The doctor's only requests that are not reads are the two reviews, which store nothing.
#[test]
fn the_doctor_writes_nothing_but_reviews() {
    let c = cluster();
    doctor(c, &["--context", "viewer"]).expect_code(0);
    let mut reviews = 0;
    for event in c.plugin_events() {
        let verb = event["verb"].as_str().unwrap_or_default();
        let resource = event["objectRef"]["resource"].as_str().unwrap_or_default();
        if ["get", "list", "watch"].contains(&verb) {
            continue;
        }
        assert_eq!(verb, "create", "{event}");
        assert!(["selfsubjectaccessreviews", "selfsubjectreviews"].contains(&resource), "{event}");
        reviews += 1;
    }
    assert!(reviews >= 14, "only {reviews} reviews in the audit log");
}

#[test]
fn without_kueue_the_doctor_says_so() {
    let c = Cluster::start("none");
    let run = c.dispatch(&["doctor", "-o", "json"]);
    run.expect_code(3);
    let v = run.json();
    let kueue = finding(&v, "Kueue's API versions agree with the plugin's");
    assert_eq!(
        (kueue["result"].as_str(), kueue["detail"].as_str()),
        (Some("fail"), Some("kueue.x-k8s.io is not served: Kueue is not installed on this cluster"))
    );
    c.stop();
}

/// The documents of a YAML stream (`---` between them), as kubectl apply reads them.
fn yaml_stream(text: &str) -> Vec<serde_json::Value> {
    text.split("\n---\n").map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"))).collect()
}

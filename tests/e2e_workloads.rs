//! `kubectl dispatch workloads` on the real test cluster, through the real kubectl, side by side
//! with `kubectl get workloads` on the same objects: the same Workloads in the same order (-n,
//! and -A over two namespaces), `-o name` and jsonpath equal to kubectl's, custom columns a row
//! per Workload aligned byte for byte as kubectl's, each row's explanation the summary `workload NAME` gives, and
//! `--sort-by`, `--no-headers`, an empty namespace and a forbidden list.

mod support;

use support::fixtures::{self, Scenario};
use support::{Cluster, Run};

/// A Workload of the fixtures, labelled `run: <tag>` so a -A list sees only this test's.
fn labelled(
    tag: &str,
    ns: &str,
    name: &str,
    lq: &str,
    reserved_in: Option<&str>,
    checks: &[(&str, &str, &str, i64)],
) -> String {
    let yaml = fixtures::workload(ns, name, lq, reserved_in, checks);
    let head = format!("metadata:\n  name: {name}\n");
    yaml.replacen(&head, &format!("{head}  labels:\n    run: {tag}\n"), 1)
}

/// Three Workloads of `s.ns`, created out of name order: one at dispatch's Pending check with
/// quota reserved, one waiting for quota, one whose LocalQueue does not exist.
fn three(c: &Cluster, s: &Scenario, tag: &str) {
    c.apply(&s.healthy_yaml());
    // Renewed an hour's worth ahead: the gate stays open however long the runs take.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(0), Some(3600)));
    c.apply(&labelled(tag, &s.ns, "job-b", &s.lq, Some(&s.cq), &[(&s.check, "Pending", "waiting", 60)]));
    c.apply(&labelled(tag, &s.ns, "job-c", "no-such-queue", None, &[]));
    c.apply(&labelled(tag, &s.ns, "job-a", &s.lq, None, &[]));
}

fn workloads(c: &Cluster, s: &Scenario, extra: &[&str]) -> Run {
    c.dispatch(&s.args("workloads", extra))
}

/// The first `n` words of each line.
fn columns(text: &str, n: usize) -> Vec<Vec<String>> {
    text.lines().map(|l| l.split_whitespace().take(n).map(str::to_string).collect()).collect()
}

#[test]
fn lists_what_kubectl_get_workloads_lists_each_with_its_explanation() {
    let c = Cluster::shared();
    let s = Scenario::new("wls");
    three(c, &s, "wls");
    let theirs = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns], None);
    let ours = workloads(c, &s, &["-n", &s.ns]);
    ours.expect_code(0);
    let header: Vec<&str> = ours.lines()[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "EXPLANATION"], "{}", ours.stdout);
    // The same names in the same order, and kubectl's QUEUE column.
    assert_eq!(columns(&ours.stdout, 2), columns(&theirs, 2), "ours:\n{}\nkubectl's:\n{theirs}", ours.stdout);
    assert_eq!(columns(&ours.stdout, 1), [["NAME"], ["job-a"], ["job-b"], ["job-c"]]);

    // Each row says what `workload NAME` says of it, word for word.
    let list = workloads(c, &s, &["-n", &s.ns, "-o", "json"]).json();
    assert_eq!(list["kind"], "WorkloadList");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{list}");
    for item in items {
        let name = item["name"].as_str().unwrap();
        let one = c.dispatch(&s.args("workload", &[name, "-n", &s.ns, "-o", "json"])).json();
        assert_eq!((&item["stage"], &item["summary"]), (&one["stage"], &one["summary"]), "{name}");
        let row = ours.lines().into_iter().find(|l| l.starts_with(&format!("{name} "))).unwrap().to_string();
        assert!(row.ends_with(one["summary"].as_str().unwrap()), "{row}\n{one}");
    }
    assert_eq!(items[1]["stage"], "waitingAtDispatch");
    assert_eq!(items[1]["reservedIn"], s.cq.as_str());
    assert_eq!(items[1]["gate"], "yes");
    assert_eq!(items[2]["stage"], "queueMissing");

    // --no-headers: the rows alone, as kubectl's.
    let bare = workloads(c, &s, &["-n", &s.ns, "--no-headers"]);
    let theirs_bare = c.kubectl_ok(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "--no-headers"], None);
    assert_eq!(columns(&bare.stdout, 1), columns(&theirs_bare, 1), "{}", bare.stdout);
    assert!(bare.stderr.is_empty(), "{}", bare.stderr);
}

#[test]
fn every_namespace_and_the_printers_as_kubectl() {
    let c = Cluster::shared();
    let (s, t) = (Scenario::new("wls-all"), Scenario::new("wls-all2"));
    let tag = s.ns.clone();
    three(c, &s, &tag);
    c.apply(&t.healthy_yaml());
    c.apply(&labelled(&tag, &t.ns, "job-0", &t.lq, Some(&t.cq), &[(&t.check, "Ready", "", 30)]));
    let selector = format!("run={tag}");
    let get = |extra: &[&str]| {
        let mut args = vec!["get", "workloads.kueue.x-k8s.io", "-l", selector.as_str()];
        args.extend_from_slice(extra);
        c.kubectl_ok(&args, None)
    };
    let ours = workloads(c, &s, &["-A", "-l", &selector]);
    ours.expect_code(0);
    let theirs = get(&["-A"]);
    assert_eq!(columns(&ours.stdout, 2), columns(&theirs, 2), "ours:\n{}\nkubectl's:\n{theirs}", ours.stdout);
    assert_eq!(ours.lines().len(), 5, "{}", ours.stdout);
    // `kwl` with -A before it, the same list; -o name and jsonpath are kubectl's, byte for byte.
    let mut args = vec!["-A", "kwl", "--controller-name", &s.controller, "--lease", &s.lease, "-l", &selector];
    args.extend(["-o", "name"]);
    let named = c.dispatch(&args);
    assert_eq!(named.stdout, get(&["-A", "-o", "name"]));
    let paths = workloads(c, &s, &["-A", "-l", &selector, "-o", "jsonpath={.items[*].name}"]);
    assert_eq!(paths.stdout, get(&["-A", "-o", "jsonpath={.items[*].metadata.name}"]));
    // Custom columns: a row per Workload under one header, as kubectl prints a list's.
    let ours = workloads(c, &s, &["-n", &s.ns, "-o", "custom-columns=NAME:.name,STAGE:.stage"]);
    let theirs = c.kubectl_ok(
        &["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "-o", "custom-columns=NAME:.metadata.name"],
        None,
    );
    assert_eq!(columns(&ours.stdout, 1), columns(&theirs, 1), "{}", ours.stdout);
    assert_eq!(ours.lines()[2].split_whitespace().nth(1), Some("waitingAtDispatch"), "{}", ours.stdout);
    // --sort-by orders the rows by each one's -o json item.
    let sorted = workloads(c, &s, &["-n", &s.ns, "--sort-by", ".stage", "-o", "name"]);
    let want = ["job-c", "job-b", "job-a"].map(|n| format!("workload.kueue.x-k8s.io/{n}\n")).concat();
    assert_eq!(sorted.stdout, want);

    // -A with names of different lengths: every row through one tab writer, byte for byte as
    // kubectl's (each document's own widths misaligned them).
    c.apply(&labelled(&tag, &t.ns, "a-much-longer-workload-name-1", &t.lq, None, &[]));
    for no_headers in ["--no-headers=false", "--no-headers=true"] {
        let ours = workloads(
            c,
            &s,
            &[
                "-A",
                "-l",
                &selector,
                no_headers,
                "-o",
                "custom-columns=NAMESPACE:.namespace,NAME:.name,QUEUE:.localQueue",
            ],
        );
        ours.expect_code(0);
        let spec = "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,QUEUE:.spec.queueName";
        let theirs = get(&["-A", no_headers, "-o", spec]);
        assert_eq!(ours.stdout, theirs, "{no_headers}");
        assert_eq!(theirs.lines().count(), if no_headers.ends_with("true") { 5 } else { 6 }, "{theirs}");
    }
}

#[test]
fn an_empty_namespace_and_a_forbidden_list() {
    let c = Cluster::shared();
    let s = Scenario::new("wls-none");
    c.apply(&s.healthy_yaml());
    // Nothing there: kubectl's words on stderr, nothing on stdout, exit 0.
    let theirs = c.kubectl(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns], None);
    let ours = workloads(c, &s, &["-n", &s.ns]);
    ours.expect_code(0);
    assert!(ours.stdout.is_empty(), "{}", ours.stdout);
    assert_eq!(ours.stderr, String::from_utf8_lossy(&theirs.stderr));
    assert_eq!(ours.stderr, format!("No resources found in {} namespace.\n", s.ns));
    // Not allowed to list them: one error, the rule to add, exit 4 (kubectl: exit 1, Forbidden).
    let theirs = c.kubectl(&["get", "workloads.kueue.x-k8s.io", "-n", &s.ns, "--as", "nobody"], None);
    assert!(String::from_utf8_lossy(&theirs.stderr).starts_with("Error from server (Forbidden)"));
    let run = workloads(c, &s, &["-n", &s.ns, "--as", "nobody"]);
    run.expect_code(4);
    assert_eq!(
        run.stderr,
        format!(
            "error: may not list Workloads in namespace {ns} (forbidden)\nmissing RBAC: list workloads.kueue.x-k8s.io in namespace {ns}\n",
            ns = s.ns
        )
    );
    assert!(run.stdout.is_empty());
}

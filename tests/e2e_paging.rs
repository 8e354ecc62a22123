//! Paging end to end on the real test cluster: with more Workloads than one LIST page (500),
//! `kubectl dispatch gate` still finds every one waiting at dispatch's Pending check; a
//! `--request-timeout` shorter than the whole run but longer than each page does not stop it;
//! and the pages come gzip-compressed, as kubectl's do (counted by a real proxy).

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use support::fixtures::{self, Scenario};
use support::{Cluster, try_eventually};

const TOTAL: usize = 1_100; // three pages of at most 500

/// A Workload with no status at all (as a Job's Workload is before Kueue reconciles it).
fn bare_workload(ns: &str, name: &str, lq: &str) -> String {
    let doc = fixtures::workload(ns, name, lq, None, &[]);
    let spec = doc.split("status:\n").next().expect("a Workload document");
    format!("{spec}---\n")
}

#[test]
fn every_waiting_workload_is_found_across_list_pages() {
    let c = Cluster::shared();
    let s = Scenario::new("paging");
    c.apply(&s.healthy_yaml());

    // Every 18th Workload waits, and so do the last of page one, the first of page two and
    // the very last; a few others hold the check Ready, or Pending before quota (not waiting).
    let mut bare = String::new();
    let mut with_status = String::new();
    let mut want = BTreeSet::new();
    for i in 0..TOTAL {
        let name = format!("w-{i:04}");
        if i % 18 == 0 || [499, 500, TOTAL - 1].contains(&i) {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]);
            want.insert(name);
        } else if i % 18 == 1 {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, Some(&s.cq), &[(&s.check, "Ready", "", 60)]);
        } else if i % 18 == 2 {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, None, &[(&s.check, "Pending", "", 60)]);
        } else {
            bare += &bare_workload(&s.ns, &name, &s.lq);
        }
    }
    // One kubectl call for all the objects, one for the statuses. --validate=false: kubectl's
    // client-side validation against the large Workload schema costs about 30 ms of CPU per
    // object (the apiserver still validates each one).
    let objects = format!("{bare}{with_status}");
    c.kubectl_ok(&["apply", "--server-side", "--validate=false", "-f", "-"], Some(&objects));
    c.kubectl_ok(
        &["apply", "--server-side", "--validate=false", "--subresource=status", "-f", "-"],
        Some(&with_status),
    );

    // Loading takes a while on a busy machine: renew the Lease, so the gate is yes.
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(1), Some(15)));
    let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "json", "-v", "6"]));
    run.expect_code(0);
    let json = run.json();
    let found: BTreeSet<String> = json["waiting"]
        .as_array()
        .expect("waiting is a list")
        .iter()
        .map(|w| {
            assert_eq!(w["namespace"], s.ns.as_str());
            assert_eq!(w["state"], "Pending");
            w["name"].as_str().expect("a name").to_string()
        })
        .collect();
    assert_eq!(found.len(), json["waiting"].as_array().unwrap().len(), "a Workload is listed twice");
    assert_eq!(found, want, "the waiting Workloads across pages");

    let pages = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("I LIST ") && l.contains(&format!("/namespaces/{}/workloads?limit=500", s.ns)))
        .count();
    assert!(pages >= TOTAL.div_ceil(500), "{pages} LIST pages of Workloads, expected at least 3:\n{}", run.stderr);

    request_timeout_bounds_each_page_not_the_run(c, &s, want.len());
    lists_come_gzip_compressed(c, &s);
}

#[test]
fn an_expired_continue_token_starts_the_list_over_once() {
    // Lists served from etcd (kube-apiserver's watch cache would serve the continue token
    // from its own snapshot), 1,100 Workloads: three pages.
    let c: &'static Cluster = Box::leak(Box::new(Cluster::start_without_watch_cache()));
    let s = Scenario::new("paging-410");
    c.apply(&s.healthy_yaml());
    let mut bare = String::new();
    let mut with_status = String::new();
    let mut want = BTreeSet::new();
    for i in 0..TOTAL {
        let name = format!("w-{i:04}");
        if i % 50 == 0 || [499, 500, TOTAL - 1].contains(&i) {
            with_status += &fixtures::workload(&s.ns, &name, &s.lq, Some(&s.cq), &[(&s.check, "Pending", "", 60)]);
            want.insert(name);
        } else {
            bare += &bare_workload(&s.ns, &name, &s.lq);
        }
    }
    let objects = format!("{bare}{with_status}");
    c.kubectl_ok(&["apply", "--server-side", "--validate=false", "-f", "-"], Some(&objects));
    c.kubectl_ok(
        &["apply", "--server-side", "--validate=false", "--subresource=status", "-f", "-"],
        Some(&with_status),
    );
    c.apply(&fixtures::lease(&s.lease_ns, &s.lease_name, Some("dispatch-admission-7d9f_1"), Some(1), Some(15)));
    an_expired_continue_token_starts_the_list_over(c, &s, &want);
    c.stop();
}

/// etcd compacted between two pages (the harness's `compact`, run by a forwarder just before
/// the first request with a continue token goes on): that page answers 410 Gone, and the list
/// starts over from its first page, once, as client-go's pager does. `gate -A` still finds
/// every waiting Workload, each once.
fn an_expired_continue_token_starts_the_list_over(c: &'static Cluster, s: &Scenario, want: &BTreeSet<String>) {
    let paced = support::forward::Pager::start(c, move || c.compact());
    let dir = std::env::temp_dir().join(support::unique("dispatch-paced"));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("config");
    paced.kubeconfig(&kubeconfig);
    let mut args = vec!["dispatch", "--kubeconfig", kubeconfig.to_str().unwrap()];
    args.extend(s.args("gate", &["-A", "-o", "json", "-v", "1"]));
    let run = support::Run::from(c.command("kubectl", &args).output().unwrap());
    run.expect_code(0);
    let found: Vec<String> =
        run.json()["waiting"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(found.len(), want.len(), "each waiting Workload once");
    assert_eq!(found.into_iter().collect::<BTreeSet<_>>(), *want);
    assert!(
        run.stderr
            .contains("the Workloads list's continue token expired (410 Gone); listing again from the first page"),
        "{}",
        run.stderr
    );
    let lines = paced.requests.lock().unwrap().clone();
    let workloads: Vec<&String> = lines.iter().filter(|l| l.contains("/workloads?")).collect();
    let firsts = workloads.iter().filter(|l| !l.contains("continue=")).count();
    let continued = workloads.iter().filter(|l| l.contains("continue=")).count();
    // Page 1, page 2 (410), then pages 1, 2 and 3 again.
    assert_eq!((firsts, continued), (2, 3), "{workloads:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--request-timeout` is kubectl's: a bound on each request. A bound below the whole run's
/// time but above each page's lets the run finish; the same bound on the whole run would not.
fn request_timeout_bounds_each_page_not_the_run(c: &Cluster, s: &Scenario, waiting: usize) {
    for attempt in 1..=3 {
        let started = Instant::now();
        c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "json"])).expect_code(0);
        let whole = started.elapsed();
        // Three pages and the reads before them: each is well under 60% of the whole.
        let bound = whole.mul_f64(0.6).max(Duration::from_millis(1));
        let bound_arg = format!("{}ms", bound.as_millis());
        let started = Instant::now();
        let run = c.dispatch(&s.args("gate", &["-n", &s.ns, "-o", "json", "--request-timeout", &bound_arg]));
        let took = started.elapsed();
        run.expect_code(0);
        assert_eq!(run.json()["waiting"].as_array().map(Vec::len), Some(waiting));
        if took > bound {
            return;
        }
        eprintln!("attempt {attempt}: the run took {took:?}, within the {bound:?} bound; it proves nothing, again");
    }
    panic!("three runs were faster than 60% of the one before them: cannot show a per-request bound");
}

/// The Workload pages through an HTTP CONNECT proxy that counts bytes: with gzip (the default,
/// as client-go asks) and with `--disable-compression`.
fn lists_come_gzip_compressed(c: &Cluster, s: &Scenario) {
    let shapes = support::shapes::Shapes::new(c);
    let mut received = Vec::new();
    for flags in [&[][..], &["--disable-compression"][..]] {
        let proxy = support::proxy::Proxy::start("http", None);
        let kc = shapes.kubeconfig(
            "counted",
            &format!("{}    proxy-url: {}\n", shapes.cluster(), proxy.url()),
            "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n",
        );
        let mut args = vec!["dispatch", "--kubeconfig", kc.to_str().unwrap()];
        args.extend_from_slice(flags);
        args.extend(s.args("gate", &["-n", &s.ns]));
        shapes.kubectl(&args, &[]).expect_code(0);
        let polled = try_eventually(Duration::from_secs(5), || {
            let closed: Vec<u64> = proxy
                .carried()
                .iter()
                .filter(|l| l.starts_with("CLOSED "))
                .filter_map(|l| l.rsplit("down=").next()?.parse().ok())
                .collect();
            if closed.is_empty() { Err(closed) } else { Ok(closed) }
        });
        let (Ok(closed) | Err(closed)) = polled;
        let down = closed.iter().sum::<u64>();
        assert!(down > 0, "the proxy counted nothing: {:?}", proxy.carried());
        received.push(down);
    }
    let (gzip, plain) = (received[0], received[1]);
    assert!(gzip * 3 < plain, "gzip {gzip} bytes against {plain} uncompressed: the lists were not compressed");
}

//! Bad input that needs no cluster, ending in one `error:` line and exit 1, through the real
//! kubectl: a server nothing listens at, a server that never answers (bounded by
//! `--request-timeout`), and kubeconfig problems (an unknown context, a missing or malformed
//! file, none at all).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{Run, UNREACHABLE_KUBECONFIG, plugin_path, with_kubeconfig};

#[test]
fn unreachable_server_is_one_line() {
    let kc = "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {cluster: x, user: x}\nclusters:\n- name: x\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: x\n  user: {token: abc}\n";
    let run = with_kubeconfig(kc, &["gate"]);
    Run::expect_one_error(&run, "error: cannot reach the API server at https://127.0.0.1:1: ");
}

#[test]
fn a_server_that_never_answers_is_bounded_by_request_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(2).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(conns);
    });
    let kc = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {{cluster: x, user: x}}\nclusters:\n- name: x\n  cluster: {{server: \"https://127.0.0.1:{port}\"}}\nusers:\n- name: x\n  user: {{token: abc}}\n"
    );
    let started = Instant::now();
    let run = with_kubeconfig(&kc, &["lease", "--request-timeout", "1"]);
    Run::expect_one_error(&run, &format!("error: no answer from the API server at https://127.0.0.1:{port} within 1s"));
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    drop(hold);
}

#[test]
fn kubeconfig_problems_are_one_line() {
    Run::expect_one_error(
        &with_kubeconfig(UNREACHABLE_KUBECONFIG, &["gate", "--context", "nope"]),
        "error: context \"nope\" not found in the kubeconfig",
    );
    Run::expect_one_error(
        &with_kubeconfig(UNREACHABLE_KUBECONFIG, &["lease", "--kubeconfig", "/nonexistent/config"]),
        "error: cannot read kubeconfig /nonexistent/config: ",
    );
    Run::expect_one_error(&with_kubeconfig("clusters: [oops\n", &["gate"]), "error: cannot read kubeconfig ");
    // UTF-16 with an odd byte left over: kube's reader panicked on it (found by fuzz/); kubectl
    // refuses the same file with exit 1.
    let odd = std::env::temp_dir().join(format!("dispatch-utf16-odd-{}", std::process::id()));
    std::fs::write(&odd, b"\xfe\xff\xff\xffapiVersion: v").unwrap();
    let odd_arg = odd.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("kubectl").args(args).env("PATH", plugin_path()).env_remove("NO_COLOR").output();
        Run::from(out.unwrap())
    };
    Run::expect_one_error(
        &run(&["dispatch", "lease", "--kubeconfig", odd_arg]),
        &format!("error: cannot read kubeconfig {odd_arg}: Invalid UTF-16 BE"),
    );
    run(&["--kubeconfig", odd_arg, "get", "lease"]).expect_code(1);
    let _ = std::fs::remove_file(&odd);
    let run = Command::new("kubectl")
        .args(["dispatch", "gate"])
        .env("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
        .env("HOME", "/nonexistent")
        .env("PATH", plugin_path())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    Run::expect_one_error(&Run::from(run), "error: no kubeconfig found");
}

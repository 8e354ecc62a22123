//! Proxies as kubectl has them, side by side with kubectl on the same kubeconfig: `proxy-url`
//! through a real HTTP CONNECT proxy and a real SOCKS5 proxy on loopback (the harness's
//! `testcluster proxy`, which logs every tunnel it carries), with and without credentials, and
//! to a closed port; the environment's proxy never used for a loopback server.

mod support;

use support::Cluster;
use support::proxy::{Proxy, closed_port};
use support::shapes::{Shapes, both_fail, both_work};

const ADMIN: &str = "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n";

fn through(s: &Shapes, name: &str, proxy_url: &str) -> std::path::PathBuf {
    s.kubeconfig(name, &format!("{}    proxy-url: {proxy_url}\n", s.cluster()), ADMIN)
}

/// The apiserver's `127.0.0.1:PORT`, as the proxy logs its tunnels.
fn apiserver(s: &Shapes) -> String {
    s.server.trim_start_matches("https://").to_string()
}

#[test]
fn proxy_url_through_http_connect_and_socks5_proxies_carries_the_plugin() {
    let s = Shapes::new(Cluster::shared());
    for kind in ["http", "socks5"] {
        let proxy = Proxy::start(kind, None);
        let kc = through(&s, &format!("via-{kind}"), &proxy.url());
        // The plugin alone first: the tunnel in the log is the plugin's.
        let ours = s.kubectl(&["dispatch", "--kubeconfig", kc.to_str().unwrap(), "lease"], &[]);
        let tunnel = format!("{} {}", if kind == "http" { "CONNECT" } else { "SOCKS5" }, apiserver(&s));
        assert!(proxy.carried().contains(&tunnel), "the {kind} proxy did not carry the plugin: {:?}", proxy.carried());
        let (k, ours_again) = s.side_by_side(&kc, &[], &[]);
        both_work(&k, &ours);
        both_work(&k, &ours_again);
    }
}

#[test]
fn proxy_credentials_right_and_wrong() {
    let s = Shapes::new(Cluster::shared());
    for kind in ["http", "socks5"] {
        let proxy = Proxy::start(kind, Some(("ops", "p@ss:w0rd")));
        let right = through(&s, &format!("{kind}-right"), &proxy.url_as("ops", "p%40ss%3Aw0rd"));
        let (k, ours) = s.side_by_side(&right, &[], &[]);
        both_work(&k, &ours);
        let wrong = through(&s, &format!("{kind}-wrong"), &proxy.url_as("ops", "nope"));
        let (k, ours) = s.side_by_side(&wrong, &[], &[]);
        let cause = match kind {
            "http" => {
                "the proxy demands credentials it was not given or did not accept (407 Proxy Authentication Required)"
            }
            _ => "the SOCKS5 proxy did not accept the credentials",
        };
        both_fail(&k, &ours, &format!("through the proxy {}: {cause}", proxy.url()));
        assert!(!ours.stderr.contains("nope"), "the proxy password was printed:\n{}", ours.stderr);
        let none = through(&s, &format!("{kind}-none"), &proxy.url());
        let (k, ours) = s.side_by_side(&none, &[], &[]);
        assert_ne!(k.code, 0);
        ours.expect_one_error(&format!("through the proxy {}: ", proxy.url()));
    }
}

#[test]
fn proxy_url_to_a_closed_port_names_the_proxy() {
    let s = Shapes::new(Cluster::shared());
    let port = closed_port();
    for scheme in ["http", "socks5", "https"] {
        let kc = through(&s, &format!("closed-{scheme}"), &format!("{scheme}://{port}"));
        let (k, ours) = s.side_by_side(&kc, &[], &[]);
        both_fail(
            &k,
            &ours,
            &format!(
                "cannot reach the API server at {} through the proxy {scheme}://{port}: cannot connect to the proxy: ",
                s.server
            ),
        );
        assert!(ours.stderr.contains("HTTPS_PROXY"), "the hint names the settings:\n{}", ours.stderr);
    }
}

#[test]
fn the_environments_proxy_never_carries_a_loopback_server() {
    let s = Shapes::new(Cluster::shared());
    let kc = s.kubeconfig("plain", &s.cluster(), ADMIN);
    let dead = format!("http://{}", closed_port());
    for var in ["HTTPS_PROXY", "https_proxy"] {
        let (k, ours) = s.side_by_side(&kc, &[], &[(var, &dead)]);
        both_work(&k, &ours);
    }
    // localhost too, by name.
    let by_name = s.kubeconfig(
        "localhost",
        &format!(
            "    server: {}\n    certificate-authority: {}\n",
            s.server.replace("127.0.0.1", "localhost"),
            s.path("pki/ca.crt")
        ),
        ADMIN,
    );
    let (k, ours) = s.side_by_side(&by_name, &[], &[("HTTPS_PROXY", &dead)]);
    both_work(&k, &ours);
    // The kubeconfig's proxy-url is used even for loopback, whatever NO_PROXY says.
    let proxy = Proxy::start("http", None);
    let kc = through(&s, "no-proxy-ignored", &proxy.url());
    let (k, ours) = s.side_by_side(&kc, &[], &[("NO_PROXY", "*")]);
    both_work(&k, &ours);
    assert!(proxy.carried().iter().filter(|l| l.starts_with("CONNECT ")).count() >= 2, "{:?}", proxy.carried());
}

#[test]
fn the_environments_proxy_carries_a_named_server() {
    let s = Shapes::new(Cluster::shared());
    let port = s.server.rsplit(':').next().unwrap().to_string();
    // dispatch.test (a name reserved for tests, RFC 6761) means this machine only to the test
    // proxy, which maps it without DNS; the cluster's certificate names localhost. Every run
    // here goes through a proxy, so no client ever looks the name up.
    let cluster = format!(
        "    server: https://dispatch.test:{port}\n    certificate-authority: {}\n    tls-server-name: localhost\n",
        s.path("pki/ca.crt")
    );
    let kc = s.kubeconfig("named", &cluster, ADMIN);
    let proxy = Proxy::start("http", None);
    let tunnel = format!("CONNECT dispatch.test:{port}");
    for (var, no_proxy) in
        [("HTTPS_PROXY", ""), ("https_proxy", ""), ("HTTPS_PROXY", "other.test,dispatch.test:1,10.0.0.0/8")]
    {
        let before = proxy.carried().iter().filter(|l| **l == tunnel).count();
        let (k, ours) = s.side_by_side(&kc, &[], &[(var, &proxy.url()), ("NO_PROXY", no_proxy)]);
        both_work(&k, &ours);
        let after = proxy.carried().iter().filter(|l| **l == tunnel).count();
        assert!(
            after >= before + 2,
            "{var} with NO_PROXY={no_proxy:?}: both went through the proxy: {:?}",
            proxy.carried()
        );
    }
    // SOCKS5 through proxy-url: the proxy resolves the name, for kubectl and the plugin.
    let socks = Proxy::start("socks5", None);
    let via = s.kubeconfig("named-socks", &format!("{cluster}    proxy-url: {}\n", socks.url()), ADMIN);
    let ours = s.kubectl(&["dispatch", "--kubeconfig", via.to_str().unwrap(), "lease"], &[]);
    assert!(socks.carried().iter().any(|l| l == "RESOLVED dispatch.test"), "{:?}", socks.carried());
    let (k, _) = s.side_by_side(&via, &[], &[]);
    both_work(&k, &ours);
}

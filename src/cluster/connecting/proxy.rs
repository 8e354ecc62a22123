//! Which proxy a connection to the API server goes through, by kubectl's rules:
//! - the cluster's `proxy-url` in the kubeconfig, when set, always (NO_PROXY does not apply);
//! - else the environment, as Go's `net/http.ProxyFromEnvironment` reads it (client-go's default):
//!   `HTTPS_PROXY`/`https_proxy` for an https server, `HTTP_PROXY`/`http_proxy` for http (not in
//!   a CGI environment, where `REQUEST_METHOD` is set), unless `NO_PROXY`/`no_proxy` matches the
//!   server. `localhost` and loopback addresses are never proxied through the environment.
//!
//! Written here rather than taken from hyper-util's matcher, which follows curl's rules
//! (`ALL_PROXY`, no `host:port` entries, loopback proxied), or kube's loader, which matches
//! NO_PROXY against the proxy's address instead of the server's.

use std::net::IpAddr;

use http::Uri;
use ipnet::IpNet;

/// The proxy for `server`, if any. `env` reads one environment variable.
pub fn choose(
    kubeconfig_proxy: Option<&str>,
    server: &Uri,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Uri>, String> {
    if let Some(url) = kubeconfig_proxy.filter(|u| !u.is_empty()) {
        // The URL may hold a password: messages show it without.
        let shown = match url.rsplit_once('@') {
            Some((head, host)) => format!("{}://{host}", head.split("://").next().unwrap_or("http")),
            None => url.to_string(),
        };
        return parse(url).map(Some).map_err(|e| format!("proxy-url {shown:?}: {e}"));
    }
    let var = |names: [&str; 2]| names.iter().find_map(|n| env(n).filter(|v| !v.is_empty()));
    let from_env = match server.scheme_str() {
        Some("https") => var(["HTTPS_PROXY", "https_proxy"]),
        Some("http") if env("REQUEST_METHOD").is_none() => var(["HTTP_PROXY", "http_proxy"]),
        _ => None,
    };
    // Go ignores a proxy variable it cannot parse.
    let Some(proxy) = from_env.and_then(|p| parse(&p).ok()) else { return Ok(None) };
    let no_proxy = NoProxy::parse(&var(["NO_PROXY", "no_proxy"]).unwrap_or_default());
    Ok(no_proxy.use_proxy(server).then_some(proxy))
}

/// A proxy URL as Go reads one: without a scheme, `http://` is assumed.
fn parse(text: &str) -> Result<Uri, String> {
    let text = text.trim();
    let full = if text.contains("://") { text.to_string() } else { format!("http://{text}") };
    let uri: Uri = full.parse().map_err(|e: http::uri::InvalidUri| e.to_string())?;
    match uri.scheme_str() {
        Some("http" | "https" | "socks5") if uri.host().is_some() => Ok(uri),
        Some("http" | "https" | "socks5") => Err("no host".into()),
        Some(other) => Err(format!("unsupported scheme {other:?} (http, https and socks5 are)")),
        None => Err("no scheme".into()),
    }
}

/// `NO_PROXY` as Go's `golang.org/x/net/http/httpproxy` parses it.
#[derive(Debug, Default)]
struct NoProxy {
    all: bool,
    ips: Vec<(IpAddr, Option<u16>)>,
    nets: Vec<IpNet>,
    /// (".suffix", port, whether the bare domain matches too)
    domains: Vec<(String, Option<u16>, bool)>,
}

impl NoProxy {
    fn parse(text: &str) -> NoProxy {
        let mut n = NoProxy::default();
        for entry in text.split(',').map(|p| p.trim().to_lowercase()).filter(|p| !p.is_empty()) {
            if entry == "*" {
                return NoProxy { all: true, ..NoProxy::default() };
            }
            if let Ok(net) = entry.parse::<IpNet>() {
                n.nets.push(net);
                continue;
            }
            let (host, port) = split_host_port(&entry);
            if host.is_empty() {
                continue;
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                n.ips.push((ip, port));
                continue;
            }
            let host = host.strip_prefix('*').unwrap_or(host);
            match host.strip_prefix('.') {
                Some(_) => n.domains.push((host.to_string(), port, false)),
                None => n.domains.push((format!(".{host}"), port, true)),
            }
        }
        n
    }

    fn use_proxy(&self, server: &Uri) -> bool {
        let Some(host) = server.host() else { return true };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_lowercase();
        let port = server.port_u16().unwrap_or(if server.scheme_str() == Some("http") { 80 } else { 443 });
        let ip = host.parse::<IpAddr>().ok();
        if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        if self.all {
            return false;
        }
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        if let Some(ip) = ip
            && (self.nets.iter().any(|net| net.contains(&ip)) || self.ips.iter().any(|(i, p)| *i == ip && port_ok(p)))
        {
            return false;
        }
        !self
            .domains
            .iter()
            .any(|(suffix, p, bare)| (host.ends_with(suffix.as_str()) || (*bare && host == suffix[1..])) && port_ok(p))
    }
}

/// `host:port`, `[v6]:port`, or a bare host (an IPv6 address without brackets has no port).
fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, tail)) = rest.split_once(']')
    {
        return (host, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(p) => (host, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn pick(kubeconfig: Option<&str>, server: &str, vars: &[(&str, &str)]) -> Option<String> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let env = move |name: &str| vars.get(name).cloned();
        choose(kubeconfig, &server.parse().unwrap(), &env).unwrap().map(|u| u.to_string())
    }

    #[test]
    fn the_kubeconfig_proxy_always_wins() {
        let env = [("NO_PROXY", "*"), ("HTTPS_PROXY", "http://env:1")];
        assert_eq!(pick(Some("socks5://p:1080"), "https://127.0.0.1:6443", &env).as_deref(), Some("socks5://p:1080/"));
        assert_eq!(pick(Some("http://p:3128"), "https://localhost", &[]).as_deref(), Some("http://p:3128/"));
    }

    #[test]
    fn the_environment_follows_go() {
        let env = [("HTTPS_PROXY", "proxy.corp:3128"), ("HTTP_PROXY", "http://plain:80")];
        assert_eq!(pick(None, "https://api.example.com", &env).as_deref(), Some("http://proxy.corp:3128/"));
        assert_eq!(pick(None, "http://api.example.com", &env).as_deref(), Some("http://plain:80/"));
        // lower case is read too, upper case first
        assert_eq!(pick(None, "https://a.io", &[("https_proxy", "http://low:1")]).as_deref(), Some("http://low:1/"));
        // CGI: HTTP_PROXY is not trusted
        assert_eq!(pick(None, "http://a.io", &[("HTTP_PROXY", "http://p:1"), ("REQUEST_METHOD", "GET")]), None);
        // https does not fall back to HTTP_PROXY
        assert_eq!(pick(None, "https://a.io", &[("HTTP_PROXY", "http://p:1")]), None);
    }

    #[test]
    fn loopback_is_never_proxied_by_the_environment() {
        let env = [("HTTPS_PROXY", "http://p:1")];
        for server in ["https://127.0.0.1:6443", "https://localhost:6443", "https://[::1]:6443", "https://127.4.5.6"] {
            assert_eq!(pick(None, server, &env), None, "{server}");
        }
    }

    #[test]
    fn no_proxy_matches_like_go() {
        let on =
            |no: &str, server: &str| pick(None, server, &[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", no)]).is_some();
        assert!(!on("*", "https://a.io"));
        assert!(!on("example.com", "https://example.com"));
        assert!(!on("example.com", "https://api.example.com"));
        assert!(on(".example.com", "https://example.com"));
        assert!(!on(".example.com", "https://api.example.com"));
        assert!(!on("*.example.com", "https://api.example.com"));
        assert!(on("example.com", "https://notexample.com"));
        assert!(!on("example.com:6443", "https://example.com:6443"));
        assert!(on("example.com:6443", "https://example.com"));
        assert!(!on("10.0.0.0/8", "https://10.1.2.3:6443"));
        assert!(on("10.0.0.0/8", "https://11.1.2.3"));
        assert!(!on("10.1.2.3", "https://10.1.2.3"));
        assert!(!on("10.1.2.3:443", "https://10.1.2.3"));
        assert!(on("10.1.2.3:80", "https://10.1.2.3"));
        assert!(!on(" foo.io , EXAMPLE.com ", "https://example.com"));
        assert!(!on("[2001:db8::1]:443", "https://[2001:db8::1]"));
        assert!(on("", "https://example.com"));
    }

    #[test]
    fn bad_proxy_urls() {
        let server: Uri = "https://a.io".parse().unwrap();
        let none = |_: &str| None;
        assert!(choose(Some("ftp://p:21"), &server, &none).unwrap_err().contains("unsupported scheme"));
        // An environment value Go cannot parse is ignored.
        let bad = |n: &str| (n == "HTTPS_PROXY").then(|| "ftp://x".to_string());
        assert_eq!(choose(None, &server, &bad).unwrap(), None);
    }
}

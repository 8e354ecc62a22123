//! The HTTP client under kube's `Client`: kube's own layers (base URI, auth, extra headers, kube's
//! rustls configuration) and client-go's retry rule ([`super::retry`]) over a transport
//! assembled here, because kube's `ClientBuilder` builds its TCP connector and hyper client
//! itself and cannot carry:
//! - TCP_NODELAY. kube's connector leaves Nagle's algorithm on, and with several requests in
//!   flight a small TLS write then waits for a delayed ACK: a 40 ms stall on loopback.
//! - HTTP/2 (ALPN h2, else HTTP/1.1) with wide flow-control windows, as kubectl has.
//! - kubectl's time bounds: dial 30 s then TLS handshake 10 s ([`super::tls`]), and
//!   `--request-timeout` on each request ([`super::deadline`]).
//! - exec credentials that are refreshed before they lapse, certificates included
//!   ([`super::credentials`]).
//!
//! Proxies use the same connectors kube's `http-proxy` and `socks5` features use (hyper-util's
//! `Tunnel` and `SocksV5`); responses are gzip-compressed as client-go asks (tower-http).

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
use hyper_util::client::legacy::connect::{Connection, HttpConnector};
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::{Client, Config};
use tower::retry::RetryLayer;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_http::decompression::DecompressionLayer;

use super::credentials::{MakeHttp, TokenFile, Transport};
use super::deadline::RequestTimeout;
use super::exec::{Credential, ExecPlugin};
use super::kubeconfig::{OwnCredential, own_credential};
use super::retry::RetryAfter;
use super::server_clock::{ServerClock, ServerClockLayer};
use super::tls::TlsConnector;
use crate::error::Error;

/// HTTP/2 flow-control windows. hyper's 2 MiB per stream is less than one page of 500 large
/// Workloads (about 6 MB), so a far cluster would stall each page for window updates, a round
/// trip each; client-go's transport allows 4 MiB per stream and 1 GiB per connection. The
/// window is permission to send, not a buffer: the body is read as it arrives.
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

/// client-go's HTTP/2 health check (`ReadIdleTimeout`, `PingTimeout`).
const H2_PING_AFTER: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// kubectl's dialer keeps TCP connections alive with a probe every 30 s.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// How to reach the server, besides the kubeconfig.
pub struct Route {
    pub proxy: Option<Uri>,
    pub request_timeout: Option<Duration>,
    /// The exec plugin and its first credential, when the user authenticates through one.
    pub exec: Option<(ExecPlugin, Credential)>,
    /// Where each response's `Date` header is kept.
    pub server_clock: ServerClock,
}

pub fn build(mut config: Config, route: Route) -> Result<Client, Error> {
    // Before kube's layers, which abort on a value no header can carry.
    super::headers::check(&config.auth_info)?;
    let make = make_http(&config, route.proxy.as_ref(), route.request_timeout)?;
    // A token file kube would send is read here instead, as client-go reads it
    // (super::credentials): kube's sends it untrimmed and reads it again only once a minute,
    // also after a 401. Which credential wins is super::kubeconfig::own_credential's.
    let token_file = match (&config.auth_info.token_file, own_credential(&config.auth_info)) {
        (Some(path), OwnCredential::TokenFile) => Some(TokenFile::open(std::path::Path::new(path))?),
        _ => None,
    };
    if token_file.is_some() {
        config.auth_info.token_file = None;
    }
    let transport = match (route.exec, token_file) {
        (Some((plugin, first)), _) => Transport::exec(plugin, first, config.clone(), make)?,
        (None, Some(file)) => Transport::token_file(make, config.rustls_client_config().map_err(invalid)?, file),
        (None, None) => Transport::fixed(make, config.rustls_client_config().map_err(invalid)?),
    };
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| RetryLayer::new(RetryAfter::within(route.request_timeout))))
        .option_layer(config.auth_layer().map_err(invalid)?)
        .layer(config.extra_headers_layer().map_err(invalid)?)
        // Outside the decompression: the bound is on the inflated text.
        .layer(super::bounds::BoundsLayer)
        .layer(DecompressionLayer::new().no_br().no_deflate().no_zstd().gzip(!config.disable_compression))
        .layer(ServerClockLayer(route.server_clock))
        .service(transport);
    Ok(Client::new(service, config.default_namespace))
}

/// kube could not make the TLS or auth settings from the kubeconfig.
fn invalid(e: kube::Error) -> Error {
    Error::Kubeconfig(crate::error::root_cause(&e))
}

/// The TLS settings and connector chain for the server, through its proxy if it has one.
fn make_http(config: &Config, proxy: Option<&Uri>, request_timeout: Option<Duration>) -> Result<MakeHttp, Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_keepalive(Some(KEEPALIVE));
    let server_name = match &config.tls_server_name {
        Some(name) => Some(
            rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| Error::Kubeconfig(format!("tls-server-name {name:?}: {e}")))?,
        ),
        None => None,
    };
    let settings = Settings { server_name, request_timeout };
    let Some(proxy) = proxy else { return Ok(settings.make(tcp)) };
    match proxy.scheme_str() {
        Some("socks5") => {
            let mut socks = SocksV5::new(proxy.clone(), tcp);
            if let Some((user, pass)) = userinfo(proxy) {
                socks = socks.with_auth(user, pass);
            }
            Ok(settings.make(socks))
        }
        Some("http") => Ok(settings.make(with_basic_auth(proxy, Tunnel::new(proxy.clone(), tcp)))),
        Some("https") => {
            // Go dials an https proxy with the cluster's TLS settings, named for the proxy.
            let to_proxy = hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(config.rustls_client_config().map_err(invalid)?)
                .https_only()
                .enable_http1()
                .wrap_connector(tcp);
            Ok(settings.make(with_basic_auth(proxy, Tunnel::new(proxy.clone(), to_proxy))))
        }
        other => Err(Error::Kubeconfig(format!(
            "proxy {}: scheme {other:?} is not supported (http, https and socks5 are)",
            display_proxy(proxy)
        ))),
    }
}

#[derive(Clone)]
struct Settings {
    server_name: Option<rustls::pki_types::ServerName<'static>>,
    request_timeout: Option<Duration>,
}

impl Settings {
    fn make<C>(self, base: C) -> MakeHttp
    where
        C: tower::Service<Uri> + Clone + Send + Sync + 'static,
        C::Response: hyper::rt::Read + hyper::rt::Write + Connection + Send + Unpin + 'static,
        C::Future: Send + 'static,
        C::Error: Into<BoxError>,
    {
        Arc::new(move |tls: rustls::ClientConfig| {
            let connector = TlsConnector::new(base.clone(), tls, self.server_name.clone());
            let client = hyper_util::client::legacy::Builder::new(TokioExecutor::new())
                .http2_initial_stream_window_size(STREAM_WINDOW)
                .http2_initial_connection_window_size(CONNECTION_WINDOW)
                // client-go's dead-connection check: a ping after 30 s with no frame read, the
                // connection dropped when 15 s pass with no answer (a watch on a connection
                // that went silent then fails, and is started again on a new one).
                .timer(hyper_util::rt::TokioTimer::new())
                .http2_keep_alive_interval(Some(H2_PING_AFTER))
                .http2_keep_alive_timeout(H2_PING_TIMEOUT)
                .build(connector);
            BoxCloneSyncService::new(RequestTimeout::new(client.map_err(BoxError::from), self.request_timeout))
        })
    }
}

/// The proxy URL's `user:password@`, percent-decoded.
fn userinfo(proxy: &Uri) -> Option<(String, String)> {
    let authority = proxy.authority()?.as_str();
    let (info, _) = authority.rsplit_once('@')?;
    let (user, pass) = info.split_once(':').unwrap_or((info, ""));
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    Some((decode(user), decode(pass)))
}

fn with_basic_auth<C>(proxy: &Uri, tunnel: Tunnel<C>) -> Tunnel<C> {
    use base64::Engine;
    let Some((user, pass)) = userinfo(proxy) else { return tunnel };
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    match http::HeaderValue::from_str(&format!("Basic {encoded}")) {
        Ok(mut value) => {
            value.set_sensitive(true);
            tunnel.with_auth(value)
        }
        Err(_) => tunnel,
    }
}

/// A proxy URL for messages: without its credentials.
pub fn display_proxy(proxy: &Uri) -> String {
    let scheme = proxy.scheme_str().unwrap_or("http");
    let host_port = proxy.authority().map(|a| a.as_str().rsplit('@').next().unwrap_or_default().to_string());
    format!("{scheme}://{}", host_port.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_credentials_are_decoded_and_never_shown() {
        let uri: Uri = "http://us%40er:p%3Ass@proxy:3128".parse().unwrap();
        assert_eq!(userinfo(&uri), Some(("us@er".into(), "p:ss".into())));
        assert_eq!(display_proxy(&uri), "http://proxy:3128");
        let plain: Uri = "socks5://proxy:1080".parse().unwrap();
        assert_eq!(userinfo(&plain), None);
        assert_eq!(display_proxy(&plain), "socks5://proxy:1080");
    }
}

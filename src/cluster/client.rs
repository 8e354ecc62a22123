//! The HTTP client under kube's `Client`: kube's own stack (base URI, server retries, auth,
//! extra headers, connect/read/write timeouts, kube's rustls configuration), assembled here
//! for two differences:
//! - TCP_NODELAY. kube's connector leaves Nagle's algorithm on, and with several requests in
//!   flight a small TLS write then waits for a delayed ACK: a 40 ms stall on loopback, which
//!   was most of a one-shot `gate`'s time.
//! - HTTP/2 when the server offers it (ALPN h2, else HTTP/1.1), as kubectl does: the reads
//!   of one run share one TLS connection instead of a handshake each.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tower::ServiceBuilder;
use tower::retry::RetryLayer;

use crate::error::Error;

/// HTTP/2 flow-control windows. hyper's 2 MiB per stream is less than one page of 500 large
/// Workloads (about 6 MB), so a far cluster would stall each page for window updates, a round
/// trip each; client-go's transport allows 4 MiB per stream and 1 GiB per connection. The
/// window is permission to send, not a buffer: the body is read as it arrives.
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

pub fn build(config: Config) -> Result<Client, Error> {
    let fail = |e: kube::Error| Error::Kubeconfig(super::failure::root_cause(&e));
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let mut https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config().map_err(fail)?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = name.clone().try_into().map_err(|e| Error::Kubeconfig(format!("tls-server-name {name:?}: {e}")))?;
        https = https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let https = https.enable_all_versions().wrap_connector(http);
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http_client = hyper_util::client::legacy::Builder::new(TokioExecutor::new())
        .http2_initial_stream_window_size(STREAM_WINDOW)
        .http2_initial_connection_window_size(CONNECTION_WINDOW)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| RetryLayer::new(RetryPolicy::server_retry())))
        .option_layer(config.auth_layer().map_err(fail)?)
        .layer(config.extra_headers_layer().map_err(fail)?)
        .map_err(tower::BoxError::from)
        .service(http_client);
    Ok(Client::new(service, config.default_namespace))
}

//! The HTTP client under kube's `Client`: kube's own stack (base URI, server retries, auth,
//! extra headers, connect/read/write timeouts, rustls), assembled here for one difference:
//! TCP_NODELAY. kube's connector leaves Nagle's algorithm on, and with several requests in
//! flight a small TLS write then waits for a delayed ACK: a 40 ms stall on loopback, which
//! was most of a one-shot `gate`'s time.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tower::ServiceBuilder;
use tower::retry::RetryLayer;

use crate::error::Error;

pub fn build(config: Config) -> Result<Client, Error> {
    let fail = |e: kube::Error| Error::Kubeconfig(super::failure::root_cause(&e));
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = config.rustls_https_connector_with_connector(http).map_err(fail)?;
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http_client = hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| RetryLayer::new(RetryPolicy::server_retry())))
        .option_layer(config.auth_layer().map_err(fail)?)
        .layer(config.extra_headers_layer().map_err(fail)?)
        .map_err(tower::BoxError::from)
        .service(http_client);
    Ok(Client::new(service, config.default_namespace))
}

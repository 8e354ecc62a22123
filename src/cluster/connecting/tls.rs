//! TLS to the API server over any base connection (TCP, or a proxy's tunnel), with kubectl's
//! two bounds: 30 s to connect (and open the tunnel), then 10 s for the TLS handshake. It
//! offers HTTP/2 and HTTP/1.1 by ALPN, and names the server by `tls-server-name` when set.
//!
//! hyper-rustls's connector does the same but bounds only the whole; its stream type is kept,
//! so hyper sees the negotiated protocol as usual.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use http::Uri;
use hyper_rustls::MaybeHttpsStream;
use hyper_util::client::legacy::connect::Connection;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tower::{BoxError, Service};

/// kubectl's dialer timeout, and its transport's TLS handshake timeout.
pub const DIAL_BOUND: Duration = Duration::from_secs(30);
pub const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// The connection could not be made in time; Display is the cause as the user reads it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
pub enum ConnectTimedOut {
    #[error("no connection within {}", crate::core::duration::go_duration(*.0))]
    Dial(Duration),
    #[error("the TLS handshake did not finish within {}", crate::core::duration::go_duration(*.0))]
    Handshake(Duration),
}

#[derive(Clone)]
pub struct TlsConnector<C> {
    base: C,
    tls: tokio_rustls::TlsConnector,
    server_name: Option<ServerName<'static>>,
}

impl<C> TlsConnector<C> {
    /// `tls` gets the ALPN protocols here.
    pub fn new(base: C, mut tls: rustls::ClientConfig, server_name: Option<ServerName<'static>>) -> Self {
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TlsConnector { base, tls: tokio_rustls::TlsConnector::from(Arc::new(tls)), server_name }
    }
}

impl<C> Service<Uri> for TlsConnector<C>
where
    C: Service<Uri> + Send + 'static,
    C::Response: hyper::rt::Read + hyper::rt::Write + Connection + Send + Unpin + 'static,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = MaybeHttpsStream<C::Response>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), BoxError>> {
        self.base.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let https = dst.scheme() == Some(&http::uri::Scheme::HTTPS);
        let name = match &self.server_name {
            Some(name) => Ok(name.clone()),
            None => {
                let host = dst.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
                ServerName::try_from(host.to_string()).map_err(|e| format!("server name {host:?}: {e}"))
            }
        };
        let tls = self.tls.clone();
        let connecting = self.base.call(dst);
        Box::pin(async move {
            let io = tokio::time::timeout(DIAL_BOUND, connecting)
                .await
                .map_err(|_| ConnectTimedOut::Dial(DIAL_BOUND))?
                .map_err(Into::into)?;
            if !https {
                return Ok(MaybeHttpsStream::Http(io));
            }
            let stream = tokio::time::timeout(HANDSHAKE_BOUND, tls.connect(name?, TokioIo::new(io)))
                .await
                .map_err(|_| ConnectTimedOut::Handshake(HANDSHAKE_BOUND))??;
            Ok(MaybeHttpsStream::from(stream))
        })
    }
}

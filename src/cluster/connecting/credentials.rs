//! The transport at the bottom of the stack: one HTTP client, or, for a user whose credential
//! comes from an exec plugin, the client and the credential of the moment. A credential with an
//! `expirationTimestamp` is fetched again before it lapses; a new client certificate gets a new
//! HTTP client (the old connections were made with the old certificate and go with it, as
//! client-go closes them); a 401 makes the next request fetch a new one.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::header::{AUTHORIZATION, HeaderValue};
use http::{Request, Response};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Config;
use kube::client::{Body, ConfigExt};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceExt};

use super::deadline::Deadline;
use super::exec::{Credential, ExecError, ExecPlugin};
use crate::error::Error;

/// One HTTP client, ready to send: hyper's, behind the per-request bound.
pub type HttpService =
    BoxCloneSyncService<http::Request<kube::client::Body>, http::Response<Deadline<hyper::body::Incoming>>, BoxError>;

/// Builds an [`HttpService`] for a TLS client configuration (a new one when an exec plugin
/// hands out a new client certificate).
pub type MakeHttp = Arc<dyn Fn(rustls::ClientConfig) -> HttpService + Send + Sync>;

#[derive(Clone)]
pub struct Transport(Arc<Inner>);

enum Inner {
    Fixed(HttpService),
    Exec(Box<ExecState>),
}

struct ExecState {
    plugin: ExecPlugin,
    config: Config,
    make: MakeHttp,
    current: tokio::sync::Mutex<Current>,
}

struct Current {
    credential: Credential,
    obtained: Timestamp,
    http: HttpService,
    /// The server said 401 to this credential: fetch anew before the next request.
    rejected: bool,
    /// Counts the credentials fetched, so a 401 to an older one changes nothing.
    generation: u64,
}

impl Transport {
    pub fn fixed(http: HttpService) -> Transport {
        Transport(Arc::new(Inner::Fixed(http)))
    }

    pub fn exec(plugin: ExecPlugin, first: Credential, config: Config, make: MakeHttp) -> Result<Transport, Error> {
        let http = make(tls_for(&config, &first, &plugin.command())?);
        let current = Current { credential: first, obtained: Timestamp::now(), http, rejected: false, generation: 0 };
        Ok(Transport(Arc::new(Inner::Exec(Box::new(ExecState {
            plugin,
            config,
            make,
            current: tokio::sync::Mutex::new(current),
        })))))
    }
}

/// kube's TLS configuration, with the plugin's client certificate when it gave one.
fn tls_for(config: &Config, credential: &Credential, command: &str) -> Result<rustls::ClientConfig, ExecError> {
    use base64::Engine;
    let mut config = config.clone();
    if let Some((cert, key)) = &credential.identity {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        config.auth_info.client_certificate_data = Some(b64(cert));
        config.auth_info.client_key_data = Some(b64(key).into());
    }
    config.rustls_client_config().map_err(|e| ExecError::NoCredential {
        command: command.to_string(),
        cause: format!("its client certificate cannot be used: {}", crate::error::root_cause(&e)),
    })
}

/// Whether a credential obtained at `obtained` should be fetched again at `now`: when it has
/// an expiry and less than a fifth of its life (at most a minute) is left.
pub fn due(expires: Option<Timestamp>, obtained: Timestamp, now: Timestamp) -> bool {
    let Some(expires) = expires else { return false };
    let life = expires.duration_since(obtained);
    let margin = (life / 5).clamp(SignedDuration::ZERO, SignedDuration::from_secs(60));
    // An expiry so early that the margin cannot be taken from it is due already.
    expires.checked_sub(margin).map_or(true, |refresh_at| now >= refresh_at)
}

impl ExecState {
    /// The HTTP client, bearer token and credential generation to use now, fetching a new
    /// credential when due.
    async fn current(&self) -> Result<(HttpService, Option<String>, u64), BoxError> {
        let mut current = self.current.lock().await;
        if current.rejected || due(current.credential.expires, current.obtained, Timestamp::now()) {
            let fresh = self.plugin.run().await?;
            if fresh.identity != current.credential.identity {
                current.http = (self.make)(tls_for(&self.config, &fresh, &self.plugin.command())?);
            }
            current.credential = fresh;
            current.obtained = Timestamp::now();
            current.rejected = false;
            current.generation += 1;
        }
        Ok((current.http.clone(), current.credential.token.clone(), current.generation))
    }

    /// The server refused credential `generation`; a later one is not affected.
    async fn rejected(&self, generation: u64) {
        let mut current = self.current.lock().await;
        if current.generation == generation {
            current.rejected = true;
        }
    }
}

impl Service<Request<Body>> for Transport {
    type Response = Response<Deadline<hyper::body::Incoming>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // hyper's client is always ready; each call clones the one it uses.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move {
            match &*inner {
                Inner::Fixed(http) => http.clone().oneshot(req).await,
                Inner::Exec(state) => {
                    let (http, token, generation) = state.current().await?;
                    if let Some(token) = token {
                        let mut value = HeaderValue::try_from(format!("Bearer {token}"))?;
                        value.set_sensitive(true);
                        req.headers_mut().insert(AUTHORIZATION, value);
                    }
                    let response = http.oneshot(req).await?;
                    if response.status() == http::StatusCode::UNAUTHORIZED {
                        state.rejected(generation).await;
                    }
                    Ok(response)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn refreshed_before_it_lapses() {
        let obtained = at("2026-12-01T10:00:00Z");
        // ten minutes of life: fetched again in its last minute
        let expires = Some(at("2026-12-01T10:10:00Z"));
        assert!(!due(expires, obtained, at("2026-12-01T10:08:59Z")));
        assert!(due(expires, obtained, at("2026-12-01T10:09:00Z")));
        // ten seconds of life: in its last two
        let expires = Some(at("2026-12-01T10:00:10Z"));
        assert!(!due(expires, obtained, at("2026-12-01T10:00:07Z")));
        assert!(due(expires, obtained, at("2026-12-01T10:00:08Z")));
        // already expired when it came, or no expiry at all
        assert!(due(Some(at("2026-12-01T09:00:00Z")), obtained, obtained));
        assert!(!due(None, obtained, at("2030-01-01T00:00:00Z")));
    }
}

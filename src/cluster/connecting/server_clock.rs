//! The API server's clock, from the `Date` header of every response: a layer under kube's
//! client keeps the latest header and this machine's clock when it arrived, so every verb
//! can compare the clocks from the reads it already makes (no extra request).

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{HeaderMap, Request, Response};
use k8s_openapi::jiff::Timestamp;
use tower::{Layer, Service};

/// The latest `(server's Date, this machine's clock on arrival)`, shared by every request of
/// one connection.
#[derive(Clone, Default)]
pub struct ServerClock(Arc<Mutex<Option<(Timestamp, Timestamp)>>>);

impl std::fmt::Debug for ServerClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerClock").field(&self.latest()).finish()
    }
}

impl ServerClock {
    pub fn latest(&self) -> Option<(Timestamp, Timestamp)> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, headers: &HeaderMap) {
        if let Some(date) = date(headers) {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((date, Timestamp::now()));
        }
    }
}

/// The `Date` header (RFC 2822 / IMF-fixdate), if it parses.
pub fn date(headers: &HeaderMap) -> Option<Timestamp> {
    let text = headers.get(http::header::DATE)?.to_str().ok()?;
    k8s_openapi::jiff::fmt::rfc2822::parse(text).ok().map(|z| z.timestamp())
}

/// Records each response's `Date` into a [`ServerClock`].
#[derive(Clone)]
pub struct ServerClockLayer(pub ServerClock);

impl<S> Layer<S> for ServerClockLayer {
    type Service = Recording<S>;

    fn layer(&self, inner: S) -> Recording<S> {
        Recording { inner, clock: self.0.clone() }
    }
}

#[derive(Clone)]
pub struct Recording<S> {
    inner: S,
    clock: ServerClock,
}

impl<S, B, RB> Service<Request<B>> for Recording<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<RB>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let clock = self.clock.clone();
        self.inner
            .call(req)
            .map(move |result| {
                if let Ok(response) = &result {
                    clock.record(response.headers());
                }
                result
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_header_parses_as_the_api_server_writes_it() {
        let mut h = HeaderMap::new();
        assert_eq!(date(&h), None);
        h.insert(http::header::DATE, "Tue, 01 Dec 2026 13:25:46 GMT".parse().unwrap());
        assert_eq!(date(&h), Some("2026-12-01T13:25:46Z".parse().unwrap()));
        h.insert(http::header::DATE, "yesterday".parse().unwrap());
        assert_eq!(date(&h), None);
    }
}

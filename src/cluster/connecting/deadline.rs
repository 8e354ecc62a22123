//! `--request-timeout` as kubectl means it: a bound on each request, from sending it to the
//! last byte of its response, like Go's `http.Client.Timeout`. A watch is bounded only until
//! its response starts: a quiet watch is not a slow request (`cluster::watching::reflector` ends and renews
//! each one itself).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Service};

/// The request did not complete within `--request-timeout`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request did not complete within {}", crate::core::duration::go_duration(*.0))]
pub struct RequestTimedOut(pub Duration);

#[derive(Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    bound: Option<Duration>,
}

impl<S> RequestTimeout<S> {
    pub fn new(inner: S, bound: Option<Duration>) -> Self {
        RequestTimeout { inner, bound }
    }
}

pub fn is_watch<B>(req: &Request<B>) -> bool {
    req.uri().query().is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

impl<S, ReqBody, B> Service<Request<ReqBody>> for RequestTimeout<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>, Error = BoxError>,
    S::Future: Send + 'static,
    B: Body + Unpin + Send + 'static,
{
    type Response = Response<Deadline<B>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let watch = is_watch(&req);
        let bound = self.bound;
        let response = self.inner.call(req);
        Box::pin(async move {
            // A bound past the clock's last instant bounds nothing (settings refuse one anyway).
            let Some((bound, until)) = bound.and_then(|b| Some((b, Instant::now().checked_add(b)?))) else {
                return response.await.map(|r| r.map(|body| Deadline { inner: body, timer: None }));
            };
            let response = tokio::time::timeout_at(until, response).await.map_err(|_| RequestTimedOut(bound))??;
            let timer = (!watch).then(|| (Box::pin(tokio::time::sleep_until(until)), bound));
            Ok(response.map(|body| Deadline { inner: body, timer }))
        })
    }
}

/// A response body that fails once the request's time is up.
pub struct Deadline<B> {
    inner: B,
    timer: Option<(Pin<Box<Sleep>>, Duration)>,
}

impl<B> Body for Deadline<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        if let Some((sleep, bound)) = self.timer.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            let bound = *bound;
            self.timer = None;
            return Poll::Ready(Some(Err(RequestTimedOut(bound).into())));
        }
        Pin::new(&mut self.inner).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_are_told_apart_by_their_query() {
        let req = |uri: &str| Request::get(uri).body(()).unwrap();
        assert!(is_watch(&req("/api/v1/x?fieldSelector=a&watch=true&timeoutSeconds=290")));
        assert!(is_watch(&req("/api/v1/x?watch=1")));
        assert!(!is_watch(&req("/api/v1/x?limit=500")));
        assert!(!is_watch(&req("/api/v1/watchers")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_body_fails_at_the_deadline() {
        use http_body_util::BodyExt;
        // A body that never produces a frame.
        struct Never;
        impl Body for Never {
            type Data = bytes::Bytes;
            type Error = std::convert::Infallible;
            fn poll_frame(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<bytes::Bytes>, Self::Error>>> {
                Poll::Pending
            }
        }
        let body = Deadline {
            inner: Never,
            timer: Some((Box::pin(tokio::time::sleep(Duration::from_secs(2))), Duration::from_secs(2))),
        };
        let Err(err) = body.collect().await else { panic!("the body should time out") };
        assert_eq!(err.to_string(), "the request did not complete within 2s");
    }
}

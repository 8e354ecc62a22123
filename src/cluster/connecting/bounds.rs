//! Bounds on what a server may send, so that no answer can take all the memory: each one a
//! named constant, each overflow one error that names the bound and the request's path. A
//! layer of the HTTP stack (client.rs) bounds every response body that is read whole after gzip
//! is inflated (gets, discovery) and turns a 3xx answer into an error of its own; the exec
//! plugin's output, a list's objects and a list's pages are bounded where they are read
//! (exec.rs, reading/items.rs and reading/pager.rs, for the one-shot reads and the live modes'
//! lists alike).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tower::{BoxError, Layer, Service};

use crate::error::size;

/// One object: each object of a list as it is decoded (reading/items.rs),
/// every stretch of a list's body between its objects, and every answer that is not a list (a
/// get, discovery), after gzip is inflated. etcd refuses an object over 1.5 MiB by default, so
/// 16 MiB holds any real object many times over (a newer server's larger limit, JSON
/// escaping); it is the bound on a watch's event line too. A list's body as a whole is not
/// bounded: a page of 500 Workloads of 150 KB each is 75 MB, and is read as it arrives.
pub const OBJECT_LIMIT: u64 = 16 << 20;

/// An answer that is not a list, read whole: one object ([`OBJECT_LIMIT`]).
pub const BODY_LIMIT: u64 = OBJECT_LIMIT;

/// Objects in one list: far past the largest Kueue cluster's Workloads (Kueue is measured at
/// tens of thousands), and what bounds the facts one list keeps (a few hundred bytes each) and
/// the time a body of endless tiny objects takes.
pub const MAX_OBJECTS: usize = 1_000_000;

/// A request whose body is read as it arrives, bounded object by object by its reader (a
/// list's pages): the layer leaves its body unbounded.
#[derive(Clone, Copy, Debug)]
pub struct Streamed;

/// An exec credential plugin's standard output: an ExecCredential is a token or a certificate
/// and key, a few kilobytes; 1 MiB leaves room for long certificate chains.
pub const EXEC_STDOUT_LIMIT: u64 = 1 << 20;

/// One line of an exec credential plugin's standard error (passed on line by line, so the
/// whole is bounded by the plugin's time, not held): a device-code login's URL and message
/// are well under a kilobyte.
pub const EXEC_STDERR_LINE_LIMIT: u64 = 64 << 10;

/// Pages of one list: 10,000 pages of 500 are five million objects, far past any Kueue
/// cluster's ClusterQueues, AdmissionChecks or Workloads; a server that hands out a new
/// continue token for ever is stopped here (one that repeats a token is stopped at once).
pub const MAX_PAGES: usize = 10_000;

/// A response body went past [`BODY_LIMIT`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("the API server's answer to {path} is larger than {}, the bound on one object (after decompression); kubectl-dispatch stopped reading it", size(*limit))]
pub struct TooLarge {
    pub path: String,
    pub limit: u64,
}

/// A 3xx answer, with its `Location` (redacted).
#[derive(Debug, Clone, thiserror::Error)]
#[error("redirected ({status})")]
pub struct Redirected {
    pub status: u16,
    pub location: Option<String>,
    pub path: String,
}

/// The layer of [`Bounded`].
#[derive(Clone, Copy)]
pub struct BoundsLayer;

impl<S> Layer<S> for BoundsLayer {
    type Service = Bounded<S>;
    fn layer(&self, inner: S) -> Bounded<S> {
        Bounded { inner }
    }
}

/// Bounds each response body (a watch's and a list's excepted: each is read as it arrives,
/// bounded event by event or object by object by its reader) and refuses 3xx answers.
#[derive(Clone)]
pub struct Bounded<S> {
    inner: S,
}

impl<S, ReqBody, B> Service<Request<ReqBody>> for Bounded<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
{
    type Response = Response<Limited<B>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let path = req.uri().path().to_string();
        let streamed = super::deadline::is_watch(&req) || req.extensions().get::<Streamed>().is_some();
        let left = (!streamed).then_some(BODY_LIMIT);
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = response.await.map_err(Into::into)?;
            if response.status().is_redirection() {
                let location = response
                    .headers()
                    .get(http::header::LOCATION)
                    .map(|l| crate::error::redact_url(&String::from_utf8_lossy(l.as_bytes())));
                return Err(Redirected { status: response.status().as_u16(), location, path }.into());
            }
            Ok(response.map(|body| Limited { inner: Box::pin(body), left, path }))
        })
    }
}

/// A body that fails once more than its bound has come.
pub struct Limited<B> {
    inner: Pin<Box<B>>,
    /// Bytes still allowed; `None`: unbounded (a watch).
    left: Option<u64>,
    path: String,
}

impl<B> Body for Limited<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let frame = match self.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        if let (Some(left), Some(data)) = (self.left, frame.data_ref()) {
            let len = data.remaining() as u64;
            if len > left {
                self.left = Some(0);
                return Poll::Ready(Some(Err(TooLarge { path: self.path.clone(), limit: BODY_LIMIT }.into())));
            }
            self.left = Some(left - len);
        }
        Poll::Ready(Some(Ok(frame)))
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
    use http_body_util::BodyExt;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(BODY_LIMIT), "16 MiB");
        assert_eq!(size(EXEC_STDERR_LINE_LIMIT), "64 KiB");
        assert_eq!(size(1000), "1000 bytes");
    }

    #[tokio::test]
    async fn a_body_past_the_bound_fails_and_one_at_it_passes() {
        let body = |n: usize, left: u64| Limited {
            inner: Box::pin(http_body_util::Full::new(bytes::Bytes::from(vec![b' '; n]))),
            left: Some(left),
            path: "/api/v1/x".into(),
        };
        assert_eq!(body(100, 100).collect().await.unwrap().to_bytes().len(), 100);
        let Err(e) = body(101, 100).collect().await else { panic!("past the bound") };
        assert_eq!(
            e.to_string(),
            "the API server's answer to /api/v1/x is larger than 16 MiB, the bound on one object (after \
             decompression); kubectl-dispatch stopped reading it"
        );
    }
}

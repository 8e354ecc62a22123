//! Bounds on what a server may send, so that no answer can take all the memory: each one a
//! named constant, each overflow one error that names the bound and the request's path. A
//! layer of the HTTP stack (client.rs) bounds every response body after gzip is
//! inflated (the pager's pages, kube's get and list, discovery alike) and turns a 3xx answer
//! into an error of its own; the exec plugin's output and a list's pages are bounded where
//! they are read (exec.rs, and reading/pager.rs, for the one-shot reads and the live modes'
//! lists alike).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tower::{BoxError, Layer, Service};

use crate::error::size;

/// One response body, after decompression. The largest page the plugin asks for is 500
/// Workloads, about 6 MB, and kube-apiserver itself refuses a request body over 3 MiB: 64 MiB
/// is ten times the largest honest answer and still small beside the machine's memory (the
/// text is held once as it arrives and once decoded).
pub const BODY_LIMIT: u64 = 64 << 20;

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
#[error("the API server's answer to {path} is larger than {}, the bound on one response (after decompression); kubectl-dispatch stopped reading it", size(*limit))]
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

/// Bounds each response body (a watch's excepted: it is a stream of events, bounded event by
/// event by its reader) and refuses 3xx answers.
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
        let left = (!super::deadline::is_watch(&req)).then_some(BODY_LIMIT);
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
        assert_eq!(size(BODY_LIMIT), "64 MiB");
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
            "the API server's answer to /api/v1/x is larger than 64 MiB, the bound on one response (after \
             decompression); kubectl-dispatch stopped reading it"
        );
    }
}

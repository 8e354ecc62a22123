//! When an answer is sent again: client-go's rule, which kubectl follows. A 429 or 5xx that
//! carries `Retry-After: N` (whole seconds) is asked again after N seconds, at most 10 times;
//! every other answer is final.
//!
//! kube's `RetryPolicy::server_retry` also retries a 503 or 504 that names no delay, with a
//! backoff growing to minutes, 15 times: an aggregated API whose server is down (Kueue's
//! visibility API with Kueue's manager stopped answers 503 at once) then held `workload` for
//! about five minutes, where kubectl reports the 503 at once.

use std::time::Duration;

use http::{Request, Response, StatusCode, header::RETRY_AFTER};
use kube::client::Body;
use tower::BoxError;
use tower::retry::Policy;

/// client-go's `maxRetries` for a request.
const MAX_RETRIES: u32 = 10;

#[derive(Clone, Debug)]
pub struct RetryAfter {
    left: u32,
}

impl Default for RetryAfter {
    fn default() -> Self {
        RetryAfter { left: MAX_RETRIES }
    }
}

/// The delay an answer asks for, when it is one client-go waits on (`checkWait`).
fn wait<B>(response: &Response<B>) -> Option<Duration> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = response.headers().get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

impl<Res> Policy<Request<Body>, Response<Res>, BoxError> for RetryAfter {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        let delay = wait(result.as_ref().ok()?)?;
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        let mut copy = Request::builder().method(req.method().clone()).uri(req.uri().clone()).version(req.version());
        if let Some(headers) = copy.headers_mut() {
            headers.extend(req.headers().clone());
        }
        let mut copy = copy.body(req.body().try_clone()?).ok()?;
        *copy.extensions_mut() = req.extensions().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>) -> Response<()> {
        let mut r = Response::builder().status(status);
        if let Some(v) = retry_after {
            r = r.header(RETRY_AFTER, v);
        }
        r.body(()).unwrap()
    }

    #[test]
    fn only_a_429_or_5xx_that_names_a_delay_is_waited_on() {
        assert_eq!(wait(&answer(503, None)), None, "an aggregated API that is down: at once");
        assert_eq!(wait(&answer(504, None)), None);
        assert_eq!(wait(&answer(429, Some("1"))), Some(Duration::from_secs(1)));
        assert_eq!(wait(&answer(503, Some("3"))), Some(Duration::from_secs(3)));
        assert_eq!(wait(&answer(500, Some(" 2 "))), Some(Duration::from_secs(2)));
        assert_eq!(wait(&answer(404, Some("1"))), None);
        assert_eq!(wait(&answer(200, Some("1"))), None);
        assert_eq!(wait(&answer(429, Some("Wed, 21 Oct 2026 07:28:00 GMT"))), None, "client-go reads seconds only");
    }

    #[tokio::test(start_paused = true)]
    async fn ten_times_at_most() {
        let mut policy = RetryAfter::default();
        let mut req = Request::get("/api").body(Body::empty()).unwrap();
        let mut retried = 0;
        loop {
            let mut result: Result<Response<()>, BoxError> = Ok(answer(429, Some("1")));
            match policy.retry(&mut req, &mut result) {
                Some(sleep) => {
                    sleep.await;
                    retried += 1;
                }
                None => break,
            }
        }
        assert_eq!(retried, 10);
        let mut other = RetryAfter::default();
        let mut result: Result<Response<()>, BoxError> = Ok(answer(503, None));
        assert!(other.retry(&mut req, &mut result).is_none());
    }
}

//! When an answer is asked for again: client-go's rule for answers, which kubectl follows. A
//! 429 or 5xx that carries `Retry-After: N` (whole seconds, at most 60: a longer wait is final
//! at once, where client-go would wait it out) is asked again after N seconds, at most 10
//! times, and never past `--request-timeout` counted from the first attempt (client-go bounds
//! the whole retry loop with it); every other answer is final. Unlike client-go, a GET
//! whose connection broke (reset, EOF, HTTP/2 GOAWAY) is not sent again here: kube's policy
//! did not either, and the live modes reconnect on their own.
//!
//! kube's `RetryPolicy::server_retry` also retries a 503 or 504 that names no delay, with a
//! backoff growing to minutes, 15 times: an aggregated API whose server is down (Kueue's
//! visibility API with Kueue's manager stopped answers 503 at once) then held `workload` for
//! about five minutes, where kubectl reports the 503 at once.

use std::time::Duration;

use http::{Request, Response, StatusCode, header::RETRY_AFTER};
use kube::client::Body;
use tokio::time::Instant;
use tower::BoxError;
use tower::retry::Policy;

/// client-go's `maxRetries` for a request.
const MAX_RETRIES: u32 = 10;

/// The longest `Retry-After` waited on: a longer one is final at once. client-go waits any
/// delay its `time.Duration` can hold (about 292 years), so a server asking for hours holds
/// kubectl for hours; a minute is as long as any real API server asks (its own default is 1 s).
const MAX_WAIT_SECONDS: u64 = 60;

#[derive(Clone, Debug)]
pub struct RetryAfter {
    left: u32,
    /// `--request-timeout`: no retry ends past it, counted from the first attempt.
    timeout: Option<Duration>,
    /// When the first attempt was sent (tower clones the request for it first).
    started: Option<Instant>,
}

impl RetryAfter {
    pub fn within(timeout: Option<Duration>) -> Self {
        RetryAfter { left: MAX_RETRIES, timeout, started: None }
    }
}

/// The delay an answer asks for, when it is one client-go waits on (`checkWait`).
fn wait<B>(response: &Response<B>) -> Option<Duration> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = response.headers().get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    // A longer wait is no answer to wait on: the request fails with the answer it got.
    (seconds <= MAX_WAIT_SECONDS).then(|| Duration::from_secs(seconds))
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
        // A wait that would end past the timeout (or past the end of time) is not waited.
        if let (Some(timeout), Some(started)) = (self.timeout, self.started)
            && started.elapsed().checked_add(delay).is_none_or(|end| end >= timeout)
        {
            return None;
        }
        self.left -= 1;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        self.started.get_or_insert_with(Instant::now);
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

    /// Sends a request (tower clones it first) that is answered 429 with `Retry-After: 1` every
    /// time, sleeping as the policy says (on a paused clock): how many times it was sent again.
    async fn retries_of_429s(policy: &mut RetryAfter) -> usize {
        let mut req = Request::get("/api").body(Body::empty()).unwrap();
        assert!(Policy::<_, Response<()>, BoxError>::clone_request(policy, &req).is_some());
        let mut retried = 0;
        loop {
            let mut result: Result<Response<()>, BoxError> = Ok(answer(429, Some("1")));
            match policy.retry(&mut req, &mut result) {
                Some(sleep) => {
                    sleep.await;
                    retried += 1;
                }
                None => return retried,
            }
        }
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
        // A minute is the longest wait; beyond, the answer is final at once
        assert_eq!(wait(&answer(503, Some("60"))), Some(Duration::from_secs(60)));
        assert_eq!(wait(&answer(503, Some("61"))), None);
        assert_eq!(wait(&answer(429, Some("9223372036"))), None, "no hang on Go's longest duration");
        assert_eq!(wait(&answer(503, Some("10000000000000000000"))), None);
        assert_eq!(wait(&answer(503, Some("99999999999999999999999"))), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// Any Retry-After text on any status: a delay of a minute at most, or none.
        #[test]
        fn any_retry_after_is_a_bounded_delay_or_none(status in 100u16..600, value in "\\PC{0,24}", digits in "[0-9]{1,25}") {
            for v in [&value, &digits] {
                let Ok(mut r) = Response::builder().status(status).header(RETRY_AFTER, v.as_str()).body(()) else { continue };
                if let Some(d) = wait(&r) {
                    proptest::prop_assert!(d.as_secs() <= MAX_WAIT_SECONDS);
                    proptest::prop_assert!(status == 429 || status >= 500);
                }
                *r.status_mut() = StatusCode::OK;
                proptest::prop_assert_eq!(wait(&r), None);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn never_past_the_request_timeout() {
        let mut policy = RetryAfter::within(Some(Duration::from_millis(2500)));
        assert_eq!(retries_of_429s(&mut policy).await, 2, "after 1 s and 2 s; a third would end at 3 s, past 2.5 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_timeout_or_the_cap_is_not_waited() {
        let mut policy = RetryAfter::within(Some(Duration::from_secs(30)));
        let mut req = Request::get("/api").body(Body::empty()).unwrap();
        assert!(Policy::<_, Response<()>, BoxError>::clone_request(&mut policy, &req).is_some());
        tokio::time::advance(Duration::from_secs(1)).await;
        let mut result: Result<Response<()>, BoxError> = Ok(answer(503, Some("30")));
        assert!(policy.retry(&mut req, &mut result).is_none(), "1 s + 30 s is past --request-timeout 30s");
        let max = RetryAfter { left: 1, timeout: Some(Duration::MAX), started: policy.started };
        let mut result: Result<Response<()>, BoxError> = Ok(answer(503, Some("60")));
        assert!(max.clone().retry(&mut req, &mut result).is_some(), "within a timeout that long, a minute is waited");
        let mut result: Result<Response<()>, BoxError> = Ok(answer(503, Some("9223372036")));
        assert!(max.clone().retry(&mut req, &mut result).is_none(), "no timeout makes an absurd wait one to wait");
    }

    #[tokio::test(start_paused = true)]
    async fn ten_times_at_most() {
        assert_eq!(retries_of_429s(&mut RetryAfter::within(None)).await, 10);
        let mut req = Request::get("/api").body(Body::empty()).unwrap();
        let mut result: Result<Response<()>, BoxError> = Ok(answer(503, None));
        assert!(RetryAfter::within(None).retry(&mut req, &mut result).is_none());
    }
}

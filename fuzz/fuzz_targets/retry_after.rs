//! client-go's `Retry-After` rule as the plugin's retry policy applies it: any status, any
//! header bytes, with or without `--request-timeout` (up to the longest there is), a moment
//! or minutes after the first attempt. A delay, or an answer taken as final, never a panic
//! (the unchecked `elapsed + Retry-After` aborted the release build); never more than ten
//! retries.

#![no_main]

use std::time::Duration;

use http::header::{HeaderValue, RETRY_AFTER};
use http::{Request, Response};
use kube::client::Body;
use kubectl_dispatch::cluster::connecting::retry::RetryAfter;
use libfuzzer_sys::fuzz_target;
use tower::BoxError;
use tower::retry::Policy;

fuzz_target!(|data: &[u8]| {
    let [s0, s1, timeout, after, value @ ..] = data else { return };
    let Ok(value) = HeaderValue::from_bytes(value) else { return };
    let status = u16::from_be_bytes([*s0, *s1]) % 1000;
    let answer = || Response::builder().status(status).header(RETRY_AFTER, value.clone()).body(());
    if answer().is_err() {
        return;
    }
    let timeout = match timeout {
        0 => None,
        255 => Some(Duration::MAX),
        s => Some(Duration::from_secs(u64::from(*s))),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let mut policy = RetryAfter::within(timeout);
        let mut req = Request::get("/api/v1/namespaces").body(Body::empty()).unwrap();
        assert!(Policy::<_, Response<()>, BoxError>::clone_request(&mut policy, &req).is_some());
        tokio::time::advance(Duration::from_secs(u64::from(*after))).await;
        let mut retried = 0;
        for _ in 0..12 {
            let mut result: Result<Response<()>, BoxError> = Ok(answer().unwrap());
            match policy.retry(&mut req, &mut result) {
                Some(sleep) => {
                    drop(sleep);
                    retried += 1;
                }
                None => break,
            }
        }
        assert!(retried <= 10, "{retried} retries");
    });
});

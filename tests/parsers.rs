//! Property tests of the parsers (proptest, a bounded number of cases in every `cargo test`;
//! the corpus of past failures, if any, in `tests/parsers.proptest-regressions`), each with a
//! property beyond "no panic": Lease and Workload times from year 0000 to 9999 decode (or the
//! decoder says which field is out of range), durations read back from their nanoseconds, an
//! exec credential's token and certificate come back as written. That no input at all panics
//! the parsers (kubeconfigs, the proxy choice, exec output, any JSON on the wire) is the fuzz
//! targets' job (`fuzz/`, run by `scripts/fuzz`), with coverage guidance and far more inputs.

use std::time::Duration;

use kubectl_dispatch::cli::resolve::{MAX_DURATION, parse_timeout};
use kubectl_dispatch::cluster::connecting::exec;
use kubectl_dispatch::cluster::reading::wire;
use kubectl_dispatch::core::lease::LeaseFacts;
use proptest::prelude::*;
use serde_json::json;

/// Time text as an API server, a plugin or an attacker might write it.
fn time_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..=9999, 1u32..=12, 1u32..=31, 0u32..=23, 0u32..=59, 0u32..=59, 0u32..1_000_000)
            .prop_map(|(y, mo, d, h, mi, s, us)| format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z")),
        (0u32..=59, 0u32..=59).prop_map(|(m, s)| format!("9999-12-31T23:{m:02}:{s:02}Z")),
        Just("0000-01-01T00:00:00Z".to_string()),
        "[0-9:TZ.+-]{0,30}",
    ]
}

/// Whether `at` is a time as the API server writes one with microseconds
/// (`YYYY-MM-DDTHH:MM:SS.ffffffZ`): `None` when it has not that shape, else
/// whether every field is in range (a real day of a real month, leap years
/// counted). The oracle for what the decoder must accept.
fn stored_time(at: &str) -> Option<bool> {
    let b = at.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    if b.len() != shape.len() || !b.iter().zip(shape).all(|(c, s)| if *s == b'd' { c.is_ascii_digit() } else { c == s })
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| at[r].parse::<u32>().ok();
    let (y, m, d, h, mi, s) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let day_ok = (1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1];
    Some(day_ok && h <= 23 && mi <= 59 && s <= 59)
}

#[test]
fn the_stored_time_oracle_knows_its_shapes() {
    assert_eq!(stored_time("2024-02-29T23:59:59.000000Z"), Some(true));
    assert_eq!(stored_time("2023-02-29T00:00:00.000000Z"), Some(false));
    assert_eq!(stored_time("2023-01-01T24:00:00.000000Z"), Some(false));
    assert_eq!(stored_time("00-0-+1---T-T0-T-ZTZ0+T00-+"), None);
    assert_eq!(stored_time("0000-01-01T00:00:00Z"), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_lease_with_any_times_decodes_or_says_why(
        renew in time_text(),
        acquire in time_text(),
        duration in any::<i64>(),
        odd in "\\PC{0,30}",
    ) {
        // The metadata's times are never read: any text there leaves the Lease readable.
        let text = json!({
            "metadata": {"name": "l", "namespace": "n", "creationTimestamp": odd, "managedFields": [{"time": renew}]},
            "spec": {"holderIdentity": "h", "renewTime": renew, "acquireTime": acquire, "leaseDurationSeconds": duration},
        })
        .to_string();
        match serde_json::from_str::<wire::WireLease>(&text) {
            Ok(l) => {
                let facts = LeaseFacts::from(&l);
                prop_assert!(facts.renew_time.is_some());
                prop_assert!(i32::try_from(duration).is_ok(), "{duration} is no int32");
            }
            Err(e) => prop_assert!(
                wire::parse_time(&renew).is_err() || wire::parse_time(&acquire).is_err() || i32::try_from(duration).is_err(),
                "{e}"
            ),
        }
    }

    #[test]
    fn a_workload_with_any_times_decodes_and_converts(
        at in time_text(),
        requeue in any::<i64>(),
        retries in any::<i64>(),
        odd in "\\PC{0,30}",
    ) {
        let text = json!({
            "metadata": {"name": "w", "namespace": "n", "creationTimestamp": at, "deletionTimestamp": odd,
                "managedFields": [{"manager": "m", "time": odd}]},
            "spec": {"queueName": "lq", "active": true},
            "status": {
                "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}],
                "admissionChecks": [{"name": "dispatch", "state": "Retry", "message": "m", "lastTransitionTime": at,
                    "requeueAfterSeconds": requeue, "retryCount": retries}],
            },
        })
        .to_string();
        let decoded = serde_json::from_str::<wire::WireWorkload>(&text);
        // Every time an API server can store (year 0000 to 9999) is read.
        if stored_time(&at) == Some(true) && i32::try_from(requeue).is_ok() && i32::try_from(retries).is_ok() {
            prop_assert!(decoded.is_ok(), "{at}: {:?}", decoded.err());
        }
        if let Ok(w) = decoded {
            let _ = wire::workload(&w);
            let _ = wire::workload_facts(&w);
        }
    }

    /// An accepted duration is within Go's range and reads back the same from its nanoseconds
    /// (Go's smallest unit): what any mix of units adds up to is what the flag means.
    #[test]
    fn an_accepted_duration_reads_back_from_its_nanoseconds(
        text in "([0-9]{1,4}(\\.[0-9]{1,3})?(ns|us|µs|ms|s|m|h)){1,3}|[0-9]{1,22}|\\PC{0,24}",
    ) {
        if let Ok(Some(d)) = parse_timeout(&text) {
            prop_assert!(d <= MAX_DURATION, "{text}: {d:?}");
            prop_assert_eq!(parse_timeout(&format!("{}ns", d.as_nanos())).ok(), Some(Some(d)), "{}", text);
        }
    }

    #[test]
    fn whole_seconds_and_go_durations_read_as_written(secs in any::<u64>(), ms in 0u64..1_000_000_000) {
        match parse_timeout(&secs.to_string()) {
            Ok(d) => prop_assert_eq!(d, (secs > 0).then(|| Duration::from_secs(secs))),
            Err(e) => prop_assert!(Duration::from_secs(secs) > MAX_DURATION, "{secs}: {e}"),
        }
        prop_assert_eq!(parse_timeout(&format!("{ms}ms")).unwrap(), (ms > 0).then(|| Duration::from_millis(ms)));
    }

    /// A token and a certificate with its key come back as the plugin wrote them.
    #[test]
    fn an_exec_credential_reads_as_written(
        token in prop::option::of("[A-Za-z0-9._~+/=-]{1,40}"),
        identity in prop::option::of(("[A-Za-z0-9+/=]{1,16}", "[A-Za-z0-9+/=]{1,16}")),
    ) {
        let (cert, key) = identity.clone().unzip();
        let out = json!({
            "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": token, "clientCertificateData": cert, "clientKeyData": key},
        })
        .to_string();
        match exec::parse(out.as_bytes(), "client.authentication.k8s.io/v1") {
            Ok(c) => {
                prop_assert_eq!(c.token, token);
                prop_assert_eq!(c.identity, identity);
            }
            Err(e) => prop_assert!(token.is_none() && identity.is_none(), "{out}: {e}"),
        }
    }
}

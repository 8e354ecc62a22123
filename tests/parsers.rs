//! Property tests of the parsers (proptest, a bounded number of cases in every `cargo test`;
//! the corpus of past failures, if any, in `tests/parsers.proptest-regressions`): whatever a
//! kubeconfig, a flag, an exec plugin or an API server hands them, they answer with a value or
//! an error, never a panic (an abort in the release build). Each family also gets well-formed
//! input generated around the shapes that matter (exec and proxy fields, time strings at the
//! edges of the range, numbers past every limit), with the result checked where it is known.

use std::time::Duration;

use kubectl_dispatch::cli::resolve::{MAX_DURATION, parse_timeout};
use kubectl_dispatch::cluster::connecting::{exec, kubeconfig, proxy};
use kubectl_dispatch::cluster::reading::wire;
use kubectl_dispatch::core::lease::LeaseFacts;
use kubectl_dispatch::invocation::ConnectionSettings;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Any JSON value, a few levels deep, with keys the decoders look for among the random ones.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("metadata".to_string()),
        Just("spec".to_string()),
        Just("status".to_string()),
        Just("name".to_string()),
        Just("renewTime".to_string()),
        Just("lastTransitionTime".to_string()),
        Just("conditions".to_string()),
        Just("admissionChecks".to_string()),
        "[a-zA-Z]{1,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        time_text().prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(key.clone(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

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
    fn the_wire_decoders_take_any_json(value in json_value()) {
        let text = value.to_string();
        if let Ok(l) = serde_json::from_str::<wire::WireLease>(&text) {
            let _ = LeaseFacts::from(&l);
        }
        if let Ok(w) = serde_json::from_str::<wire::WireWorkload>(&text) {
            let _ = wire::workload(&w);
            let _ = wire::workload_facts(&w);
        }
        if let Ok(q) = serde_json::from_str::<wire::WireClusterQueue>(&text) {
            let _ = wire::cluster_queue(&q);
        }
        if let Ok(a) = serde_json::from_str::<wire::WireAdmissionCheck>(&text) {
            let _ = wire::admission_check(&a);
        }
        if let Ok(q) = serde_json::from_str::<wire::WireLocalQueue>(&text) {
            let _ = wire::local_queue(&q);
        }
    }

    #[test]
    fn a_lease_with_any_times_decodes_or_says_why(
        renew in time_text(),
        acquire in time_text(),
        duration in any::<i64>(),
    ) {
        let text = json!({
            "metadata": {"name": "l", "namespace": "n"},
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
    ) {
        let text = json!({
            "metadata": {"name": "w", "namespace": "n"},
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
        if let Some(true) = stored_time(&at)
            && i32::try_from(requeue).is_ok()
            && i32::try_from(retries).is_ok()
        {
            prop_assert!(decoded.is_ok(), "{at}: {:?}", decoded.err());
        }
        if let Ok(w) = decoded {
            let _ = wire::workload(&w);
            let _ = wire::workload_facts(&w);
        }
    }

    #[test]
    fn durations_parse_or_are_refused(text in "\\PC{0,24}") {
        let _ = parse_timeout(&text);
    }

    #[test]
    fn whole_seconds_and_go_durations_read_as_written(secs in any::<u64>(), ms in 0u64..1_000_000_000) {
        match parse_timeout(&secs.to_string()) {
            Ok(d) => prop_assert_eq!(d, (secs > 0).then(|| Duration::from_secs(secs))),
            Err(e) => prop_assert!(Duration::from_secs(secs) > MAX_DURATION, "{secs}: {e}"),
        }
        prop_assert_eq!(parse_timeout(&format!("{ms}ms")).unwrap(), (ms > 0).then(|| Duration::from_millis(ms)));
    }

    #[test]
    fn an_exec_plugin_may_print_anything(out in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = exec::parse(&out, "client.authentication.k8s.io/v1");
    }

    #[test]
    fn an_exec_credential_with_any_fields(
        token in prop::option::of("\\PC{0,12}"),
        cert in prop::option::of("\\PC{0,12}"),
        key in prop::option::of("\\PC{0,12}"),
        expires in prop::option::of(time_text()),
    ) {
        let out = json!({
            "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": token, "clientCertificateData": cert, "clientKeyData": key, "expirationTimestamp": expires},
        })
        .to_string();
        let _ = exec::parse(out.as_bytes(), "client.authentication.k8s.io/v1");
    }

    #[test]
    fn proxy_settings_of_any_text(
        kubeconfig_proxy in prop::option::of("\\PC{0,30}"),
        env_proxy in prop::option::of("[a-z0-9:/@%.\\[\\]-]{0,30}"),
        no_proxy in "[a-z0-9.,*:/\\[\\] -]{0,30}",
        server in prop_oneof![Just("https://api.example.com:6443"), Just("http://10.0.0.1"), Just("https://[::1]:6443")],
    ) {
        let env = move |name: &str| match name {
            "HTTPS_PROXY" | "HTTP_PROXY" => env_proxy.clone(),
            "NO_PROXY" => Some(no_proxy.clone()),
            _ => None,
        };
        let _ = proxy::choose(kubeconfig_proxy.as_deref(), &server.parse().unwrap(), &env);
    }

    #[test]
    fn a_kubeconfig_of_any_shape_is_read_or_refused(
        server in prop_oneof![Just("https://h:6443".to_string()), Just("h:1".to_string()), "\\PC{0,20}"],
        proxy_url in prop::option::of("\\PC{0,20}"),
        exec_command in prop::option::of("[a-z/-]{0,12}"),
        api_version in "\\PC{0,30}",
        interactive in prop_oneof![Just("Never"), Just("IfAvailable"), Just("Always"), Just("x")],
        token in prop::option::of("\\PC{0,10}"),
        extra in "\\PC{0,40}",
    ) {
        let mut cluster = json!({"server": server});
        if let Some(p) = proxy_url {
            cluster["proxy-url"] = json!(p);
        }
        let mut user = json!({});
        if let Some(c) = exec_command {
            user["exec"] = json!({"command": c, "apiVersion": api_version, "interactiveMode": interactive, "args": [extra]});
        }
        if let Some(t) = token {
            user["token"] = json!(t);
        }
        let config = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            "clusters": [{"name": "x", "cluster": cluster}],
            "users": [{"name": "x", "user": user}],
        });
        read(&config.to_string());
        // And the same text, cut short or with random bytes in it.
        let text = config.to_string();
        let half = (0..=text.len() / 2).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        read(&text[..half]);
        read(&format!("{extra}{text}"));
    }
}

/// `kubeconfig::choose` on this text as `--kubeconfig`: a value or an error, and the exec
/// plugin's settings validated as the plugin would before running it.
fn read(text: &str) {
    let path = std::env::temp_dir().join(format!(
        "dispatch-parsers-{}-{:?}.kubeconfig",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, text).unwrap();
    let args = ConnectionSettings { kubeconfig: Some(path.clone()), ..ConnectionSettings::default() };
    if let Ok(Some(chosen)) = kubeconfig::choose(&args) {
        let _ = kubeconfig::uses_exec(&chosen.user);
        let _ = chosen.to_kubeconfig();
    }
    let _ = std::fs::remove_file(&path);
}

//! The plugin's one human duration (`core::duration::human`, every duration in its tables and
//! messages but the adapter's reason strings) against the function kubectl's AGE column uses,
//! `k8s.io/apimachinery/pkg/util/duration.HumanDuration`, run by `tests/cluster/testcluster
//! printcheck -o human-duration` (the pinned Go module `tests/cluster/printcheck/`) over every
//! second of the first ten minutes, each bound of its branches a nanosecond either side, the
//! negative edge, and a spread of values up to 250 years.

mod support;

use k8s_openapi::jiff::SignedDuration;
use kubectl_dispatch::core::duration::human;
use support::printcheck::oracle;

const NS: i64 = 1_000_000_000;

fn seconds_to_try() -> Vec<i64> {
    let mut v: Vec<i64> = (-3..=600).map(|s| s * NS).collect();
    let (minute, hour, day) = (60 * NS, 3600 * NS, 86_400 * NS);
    let year = 365 * day;
    let bounds = [-2 * NS, -NS, 0, 2 * minute, 10 * minute, 3 * hour, 8 * hour, 48 * hour, 8 * day, 2 * year, 8 * year];
    for b in bounds {
        v.extend([b - 1, b, b + 1, b - NS, b + NS, b + minute, b + hour, b + day]);
    }
    // A fixed spread (a linear congruential sequence) across 250 years.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..4000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let scale = [minute, hour, day, year, 250 * year][(x >> 60) as usize % 5];
        v.push((x >> 1) as i64 % scale);
    }
    v.extend([i64::MAX, i64::MIN + 1]);
    v
}

#[test]
fn human_durations_are_kubectls_human_duration() {
    let cases = seconds_to_try();
    let input: String = cases.iter().map(|n| format!("{n}\n")).collect();
    let want = oracle(&input, "human-duration", &[]).unwrap_or_else(|e| panic!("printcheck: {e}"));
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(want.len(), cases.len(), "printcheck printed one line per value");
    let wrong: Vec<String> = cases
        .iter()
        .zip(&want)
        .filter_map(|(n, want)| {
            let got = human(SignedDuration::from_nanos(*n));
            (got != *want).then(|| format!("{n} ns: plugin {got:?}, HumanDuration {want:?}"))
        })
        .take(20)
        .collect();
    assert!(wrong.is_empty(), "the plugin's human duration differs from kubectl's:\n{}", wrong.join("\n"));
}

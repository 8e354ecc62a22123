//! Durations written the two ways operators already know: kubectl's `HumanDuration` (every age
//! and limit in a table, a sentence or the adapter's reason strings) and Go's `time.Duration`
//! text (a bound as the flags take it: `--timeout 1.5s`).

use k8s_openapi::jiff::SignedDuration;

/// Writes whole seconds as Go's `time.Duration.String()` does: `0s`, `47s`, `2m3s`, `1h0m5s`.
/// Negative values keep Go's leading minus (`-5s`).
pub fn go_seconds(seconds: i64) -> String {
    if seconds == 0 {
        return "0s".to_string();
    }
    let sign = if seconds < 0 { "-" } else { "" };
    let s = seconds.unsigned_abs();
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

/// A configured bound as Go writes a `time.Duration`: `500ms`, `2s`, `1.5s`, `1m30s`.
pub fn go_duration(d: std::time::Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms.is_multiple_of(1000) || ms >= 60_000 {
        return go_seconds(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    }
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    format!("{}s", text.trim_end_matches('0'))
}

/// The whole seconds of an age judged against a limit, rounded up: a limit is whole seconds,
/// so an age past it by any fraction reads past it (`31s ago, beyond 30s`, never `30s`), and
/// an age within it never reads past it. Negative ages (a renewTime in the future) round
/// toward zero.
pub fn ceil_seconds(d: SignedDuration) -> i64 {
    d.as_secs() + i64::from(d.subsec_nanos() > 0)
}

/// [`human`] of an age or overrun judged against a limit, rounded up to whole seconds first
/// ([`ceil_seconds`]).
pub fn human_up(d: SignedDuration) -> String {
    human(SignedDuration::from_secs(ceil_seconds(d)))
}

/// kubectl's `duration.HumanDuration`: integer truncation, a year of 365 days, `<invalid>`
/// for more than a second in the future.
pub fn human(d: SignedDuration) -> String {
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    let s = seconds;
    if s < 60 * 2 {
        return format!("{s}s");
    }
    let minutes = s / 60;
    if minutes < 10 {
        let rest = s % 60;
        return if rest == 0 { format!("{minutes}m") } else { format!("{minutes}m{rest}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = s / 3600;
    if hours < 8 {
        let rest = minutes % 60;
        return if rest == 0 { format!("{hours}h") } else { format!("{hours}h{rest}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let rest = hours % 24;
        let days = hours / 24;
        return if rest == 0 { format!("{days}d") } else { format!("{days}d{rest}h") };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    let years = hours / 24 / 365;
    if years < 8 {
        let days = (hours / 24) % 365;
        return if days == 0 { format!("{years}y") } else { format!("{years}y{days}d") };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_match_go() {
        for (secs, want) in
            [(0, "0s"), (47, "47s"), (60, "1m0s"), (123, "2m3s"), (3605, "1h0m5s"), (90061, "25h1m1s"), (-5, "-5s")]
        {
            assert_eq!(go_seconds(secs), want, "{secs}");
        }
    }

    #[test]
    fn bounds_read_as_go_writes_them() {
        use std::time::Duration;
        for (ms, want) in [(0, "0s"), (500, "500ms"), (2000, "2s"), (1500, "1.5s"), (1250, "1.25s"), (90_000, "1m30s")]
        {
            assert_eq!(go_duration(Duration::from_millis(ms)), want, "{ms}");
        }
    }

    #[test]
    fn ages_against_a_limit_round_up() {
        let us = SignedDuration::from_micros;
        assert_eq!(ceil_seconds(us(30_000_000)), 30);
        assert_eq!(ceil_seconds(us(30_000_001)), 31);
        assert_eq!(ceil_seconds(us(29_999_999)), 30);
        assert_eq!(ceil_seconds(us(0)), 0);
        assert_eq!(ceil_seconds(us(-1_500_000)), -1);
        assert_eq!(human_up(us(119_000_001)), "2m");
        assert_eq!(human_up(us(400_000)), "1s");
    }

    #[test]
    fn human_durations_match_kubectl() {
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (62, "62s"),
            (119, "119s"),
            (122, "2m2s"),
            (120, "2m"),
            (336, "5m36s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 300, "3h5m"),
            (3 * 3600, "3h"),
            (7 * 3600 + 59 * 60, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (2 * 86400 + 3 * 3600, "2d3h"),
            (2 * 86400, "2d"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (2 * 365 * 86400 + 86400, "2y1d"),
            (2 * 365 * 86400, "2y"),
            (8 * 365 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human(SignedDuration::from_secs(secs)), want, "{secs}");
        }
    }
}

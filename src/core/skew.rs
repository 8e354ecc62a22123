//! Clock warnings. The Lease's times come from the holder's node clock and we compare them with
//! ours, so skew adds straight to the age the rule judges.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::duration::human;
use super::lease::{LeaseFacts, future_skew};

/// Our clock against the apiserver's `Date` header, which has one-second resolution (the true
/// server time lies in `[date, date + 1s)`). Warns beyond 2 s either way.
pub fn server_clock(server_date: Option<Timestamp>, now: Timestamp) -> Option<String> {
    let date = server_date?;
    let ahead = now.duration_since(date);
    let limit = SignedDuration::from_secs(2);
    let skew = if ahead > limit.saturating_add(SignedDuration::from_secs(1)) {
        ahead.saturating_sub(SignedDuration::from_secs(1))
    } else if ahead < -limit {
        ahead
    } else {
        return None;
    };
    let (secs, side) = if skew.is_negative() { (-skew.as_secs(), "behind") } else { (skew.as_secs(), "ahead of") };
    Some(format!(
        "this machine's clock is about {} {side} the API server's; Lease ages are measured with this machine's clock",
        human(SignedDuration::from_secs(secs.max(1)))
    ))
}

/// A renewTime more than a second in the future: the rule still passes it, but the holder's
/// clock is ahead. (Within a second it is a renewal made while the request was under way,
/// since `now` is read as the reads start.)
pub fn lease_in_future(facts: Option<&LeaseFacts>, now: Timestamp) -> Option<String> {
    let ahead = future_skew(facts?, now).filter(|a| *a > SignedDuration::from_secs(1))?;
    Some(format!(
        "the Lease's renewTime is {} in the future: the holder's clock is ahead of this machine's",
        human(SignedDuration::from_secs(ahead.as_secs().max(1)))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn server_clock_tolerates_two_seconds_and_the_header_resolution() {
        let now = t("2026-11-30T12:00:03.900Z");
        assert_eq!(server_clock(Some(t("2026-11-30T12:00:01Z")), now), None);
        assert!(server_clock(Some(t("2026-11-30T11:59:59Z")), now).unwrap().contains("about 3s ahead of"));
        assert!(server_clock(Some(t("2026-11-30T12:00:10Z")), now).unwrap().contains("about 6s behind"));
        assert_eq!(server_clock(None, now), None);
    }

    #[test]
    fn a_renewal_during_the_request_is_not_skew() {
        let now = t("2026-11-30T12:00:00Z");
        let facts = |renewed: &str| LeaseFacts { renew_time: Some(t(renewed)), ..Default::default() };
        assert_eq!(lease_in_future(Some(&facts("2026-11-30T12:00:00.800Z")), now), None);
        assert!(
            lease_in_future(Some(&facts("2026-11-30T12:00:05Z")), now)
                .unwrap()
                .starts_with("the Lease's renewTime is 5s")
        );
        // Durations as kubectl's HumanDuration writes them, as everywhere but the reasons.
        assert!(
            lease_in_future(Some(&facts("2026-11-30T12:03:05Z")), now)
                .unwrap()
                .starts_with("the Lease's renewTime is 3m5s in the future")
        );
        assert!(server_clock(Some(t("2026-11-30T11:57:00Z")), now).unwrap().contains("about 2m59s ahead of"));
        assert!(
            server_clock(Some(t("2026-11-30T11:58:19Z")), now).unwrap().contains("about 100s ahead of"),
            "HumanDuration keeps seconds below two minutes"
        );
    }
}

//! Times as the cluster writes them.

use k8s_openapi::jiff::Timestamp;

/// An RFC 3339 time, as Go reads one; a time in year 9999 past the last instant a jiff
/// timestamp holds reads as that last instant (it is judged the same: far in the future).
pub fn parse_time(text: &str) -> Result<Timestamp, String> {
    text.parse::<Timestamp>().or_else(|e| {
        let civil = text.strip_suffix('Z').or_else(|| text.strip_suffix("+00:00")).unwrap_or(text);
        match civil.parse::<k8s_openapi::jiff::civil::DateTime>() {
            Ok(dt) if dt.year() == 9999 => Ok(Timestamp::MAX),
            _ => Err(format!("{text:?} is not a time: {e}")),
        }
    })
}

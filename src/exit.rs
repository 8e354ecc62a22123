//! The documented exit codes. `kubectl dispatch gate ... && start-job` must behave predictably,
//! so each outcome has its own code, and 2 stays clap's for usage errors.

use crate::core::verdict::Verdict;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: gate yes, Lease fresh, doctor all well, or a plain `--watch` that ended as asked
    /// (Ctrl-C, `--timeout`).
    Success,
    /// Could not evaluate: an error, reported on stderr.
    Failed,
    /// Usage error.
    Usage,
    /// Gate no, or Lease not fresh.
    No,
    /// Unknown: a read that decides was forbidden.
    Unknown,
    /// `lease --watch --until stale|holder-change` reached its `--timeout` first.
    TimedOut,
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::No => 3,
            Exit::Unknown => 4,
            Exit::TimedOut => 5,
        }
    }
}

impl From<Verdict> for Exit {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Yes => Exit::Success,
            Verdict::No => Exit::No,
            Verdict::Unknown => Exit::Unknown,
        }
    }
}

/// The table printed in `--help` and the README.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  gate yes, or Lease fresh; doctor: all well
  1  could not evaluate (an error; one line on stderr)
  2  usage error
  3  gate no, or Lease not fresh; doctor: something would stop the gate or the plugin
  4  unknown: a read that decides was forbidden; doctor: a check could not be made
  5  lease --until stale|holder-change: --timeout came first
     (gate --wait and lease --until fresh end on --timeout with the last state's code;
     a plain --watch ends on --timeout or Ctrl-C with 0)";

/// `workload`'s own meaning of the codes (and of `workloads`, its list), in its `--help` and
/// the README.
pub const WORKLOAD_EXIT_CODES_HELP: &str = "\
Exit codes:
  0  the Workload is admitted (or finished); without NAME: the list was read
  1  could not explain it: an error, e.g. the Workload does not exist, or Kueue is not installed
  2  usage error
  3  the Workload is not admitted: it waits, was rejected, evicted or deactivated
  4  reading the Workload was forbidden (without NAME: listing them)";

/// What a live mode says on stderr when `--timeout` comes before what it waited for, as
/// `kubectl wait` says `error: timed out waiting for the condition`, naming what was awaited:
/// `timed out waiting for the gate to be yes (--timeout 3s; last: no)`. With `--timeout 0`,
/// which checks once, kubectl wait's words for a check that fails: `condition not met for the
/// gate to be yes (--timeout 0 checks once; last: no)`.
pub fn timed_out(awaited: &str, timeout: std::time::Duration, last: Option<&str>) -> String {
    let last = last.map(|l| format!("; last: {l}")).unwrap_or_default();
    if timeout.is_zero() {
        return format!("condition not met for {awaited} (--timeout 0 checks once{last})");
    }
    format!("timed out waiting for {awaited} (--timeout {}{last})", crate::core::duration::go_duration(timeout))
}

#[cfg(test)]
mod tests {

    #[test]
    fn timed_out_names_what_was_awaited() {
        assert_eq!(
            super::timed_out("the gate to be yes", std::time::Duration::from_secs(3), Some("no")),
            "timed out waiting for the gate to be yes (--timeout 3s; last: no)"
        );
        assert_eq!(
            super::timed_out("Lease a/b to be stale", std::time::Duration::from_millis(1500), None),
            "timed out waiting for Lease a/b to be stale (--timeout 1.5s)"
        );
        assert_eq!(
            super::timed_out("the gate to be yes", std::time::Duration::ZERO, Some("no")),
            "condition not met for the gate to be yes (--timeout 0 checks once; last: no)"
        );
    }

    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(Exit::Success.code(), 0);
        assert_eq!(Exit::Failed.code(), 1);
        assert_eq!(Exit::Usage.code(), 2);
        assert_eq!(Exit::No.code(), 3);
        assert_eq!(Exit::Unknown.code(), 4);
        assert_eq!(Exit::TimedOut.code(), 5);
        assert_eq!(Exit::from(Verdict::Unknown), Exit::Unknown);
        assert_eq!(Exit::from(Verdict::No), Exit::No);
    }
}

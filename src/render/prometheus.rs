//! `gate -o prometheus`: the gate as Prometheus text exposition (format 0.0.4), for
//! node_exporter's textfile collector or a push to a Pushgateway. One family at a time, each
//! with its HELP and TYPE lines, then every context's samples; no sample timestamps (the
//! textfile collector refuses them), the evaluation time is a gauge of its own instead.
//!
//! Verdicts and states are state sets, as kube-state-metrics writes a pod's phase: one series
//! per possible value, 1 for the one that holds and 0 for the others, so an alert is a plain
//! comparison (`kubectl_dispatch_gate_verdict{verdict="no"} == 1`) that keeps its labels.

use std::io::{self, Write};

use crate::core::gate::{Chain, CheckKind};
use crate::core::kueue_lease;
use crate::core::lease::LeaseState;
use crate::core::verdict::Verdict;
use crate::report::GateRun;

const VERDICTS: [Verdict; 3] = [Verdict::Yes, Verdict::No, Verdict::Unknown];
const CHECKS: [CheckKind; 4] = [CheckKind::Listed, CheckKind::Controller, CheckKind::Active, CheckKind::Heartbeat];
const RESULTS: [&str; 3] = ["pass", "fail", "unknown"];
/// The Lease's statuses as `-o json` writes them (`lease.status`).
const LEASE_STATUSES: [&str; 6] = ["fresh", "stale", "no holder", "never renewed", "missing", "forbidden"];

/// One family: its name, help, and a function that writes the samples of one context.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: fn(&GateRun, &mut Vec<Sample>),
    /// Written only when some context has samples: Kueue's Lease families, which a run that
    /// did not read that Lease has nothing for.
    optional: bool,
}

/// A sample: label pairs (the context's is put first) and a value.
struct Sample {
    labels: Vec<(&'static str, String)>,
    value: f64,
}

const FAMILIES: &[Family] = &[
    Family {
        name: "kubectl_dispatch_gate_verdict",
        help: "ReadmissionGate of a ClusterQueue as the adapter judges it: 1 for the verdict it has (yes: the adapter writes; no: observe-only; unknown: a read that decides was forbidden), 0 for the others.",
        samples: verdicts,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_gate_check",
        help: "Each of the gate's four checks on a ClusterQueue (listed, controllerName, active, leaseHeartbeat): 1 for its result (pass, fail, unknown), 0 for the others.",
        samples: checks,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_lease_status",
        help: "The controller's leader-election Lease as a heartbeat: 1 for its status (fresh, stale, no holder, never renewed, missing, forbidden), 0 for the others.",
        samples: lease_status,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_lease_renewal_age_seconds",
        help: "Seconds from the Lease's renewTime to the evaluation (negative when renewTime lies in the future); absent when the Lease has no renewTime or cannot be read.",
        samples: lease_age,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_lease_limit_seconds",
        help: "The Lease's heartbeat limit, 2 x leaseDurationSeconds: a renewal older than this is stale.",
        samples: lease_limit,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_lease_renew_time_seconds",
        help: "The Lease's renewTime as seconds since the Unix epoch, for alerts on time() - renewTime.",
        samples: lease_renew_time,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_kueue_lease_status",
        help: "Kueue's own manager's leader-election Lease (context, never a check of the gate): 1 for its status (fresh, stale, no holder, never renewed, no lease: a manager without leader election, forbidden), 0 for the others.",
        samples: kueue_lease_status,
        optional: true,
    },
    Family {
        name: "kubectl_dispatch_kueue_lease_renewal_age_seconds",
        help: "Seconds from Kueue's manager's Lease renewTime to the evaluation; absent when it has no renewTime or cannot be read.",
        samples: kueue_lease_age,
        optional: true,
    },
    Family {
        name: "kubectl_dispatch_waiting_workloads",
        help: "Workloads that reserved quota in the ClusterQueue and wait at dispatch's Pending check (in the namespace read, or every namespace with -A); absent when Workloads may not be listed.",
        samples: waiting,
        optional: false,
    },
    Family {
        name: "kubectl_dispatch_gate_evaluated_timestamp_seconds",
        help: "When the gate was evaluated (the reads began), as seconds since the Unix epoch.",
        samples: evaluated,
        optional: false,
    },
];

/// `kubectl_dispatch_gate_evaluation_success`: 1 when the context was judged, 0 when it could
/// not be (its error is on stderr).
const SUCCESS_NAME: &str = "kubectl_dispatch_gate_evaluation_success";
const SUCCESS_HELP: &str = "1 when the context's gate was evaluated, 0 when it could not be (the error is on stderr).";

/// One context's gate, or the error that kept it from being judged.
pub struct Context<'a> {
    /// The kubeconfig context's name; empty when there is none (in-cluster).
    pub name: &'a str,
    pub outcome: Result<&'a GateRun, &'a str>,
}

/// Writes every context's gate as one exposition.
pub fn render(results: &[Context<'_>], out: &mut dyn Write) -> io::Result<()> {
    let mut text = String::new();
    family(
        &mut text,
        SUCCESS_NAME,
        SUCCESS_HELP,
        results.iter().map(|r| {
            let labels = vec![("context", r.name.to_string())];
            Sample { labels, value: f64::from(u8::from(r.outcome.is_ok())) }
        }),
    );
    for f in FAMILIES {
        let mut samples = Vec::new();
        for r in results {
            if let Ok(run) = &r.outcome {
                let start = samples.len();
                (f.samples)(run, &mut samples);
                for s in &mut samples[start..] {
                    s.labels.insert(0, ("context", r.name.to_string()));
                }
            }
        }
        if f.optional && samples.is_empty() {
            continue;
        }
        family(&mut text, f.name, f.help, samples.into_iter());
    }
    out.write_all(text.as_bytes())
}

fn family(text: &mut String, name: &str, help: &str, samples: impl Iterator<Item = Sample>) {
    use std::fmt::Write as _;
    let _ = writeln!(text, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(text, "# TYPE {name} gauge");
    for s in samples {
        let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
        let _ = writeln!(text, "{name}{{{}}} {}", labels.join(","), value(s.value));
    }
}

/// A value as Go's strconv writes one for Prometheus: the shortest text that reads back the
/// same (Rust's `Display` for f64 gives that, without an exponent).
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        v.to_string()
    }
}

/// A label value in the text format: backslash, double quote and line feed escaped.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A HELP text in the text format: backslash and line feed escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn cluster_queue(chain: &Chain) -> String {
    chain.cluster_queue.clone().unwrap_or_default()
}

fn one(b: bool) -> f64 {
    f64::from(u8::from(b))
}

fn verdicts(run: &GateRun, out: &mut Vec<Sample>) {
    for chain in &run.report.chains {
        for v in VERDICTS {
            out.push(Sample {
                labels: vec![("cluster_queue", cluster_queue(chain)), ("verdict", v.as_str().into())],
                value: one(chain.verdict == v),
            });
        }
    }
}

fn checks(run: &GateRun, out: &mut Vec<Sample>) {
    for chain in &run.report.chains {
        for kind in CHECKS {
            let result = chain.checks.iter().find(|c| c.kind == kind).map(|c| c.outcome.label());
            for r in RESULTS {
                out.push(Sample {
                    labels: vec![
                        ("cluster_queue", cluster_queue(chain)),
                        ("check", kind.id().into()),
                        ("result", r.into()),
                    ],
                    value: one(result == Some(r)),
                });
            }
        }
    }
}

fn lease_label(run: &GateRun) -> (&'static str, String) {
    ("lease", run.report.lease.lease.to_string())
}

fn lease_status(run: &GateRun, out: &mut Vec<Sample>) {
    let status = run.report.lease.state.label();
    for s in LEASE_STATUSES {
        out.push(Sample { labels: vec![lease_label(run), ("status", s.into())], value: one(status == s) });
    }
}

fn lease_age(run: &GateRun, out: &mut Vec<Sample>) {
    if let Some(renewed) = run.report.lease.facts.as_ref().and_then(|f| f.renew_time) {
        let age = run.now.duration_since(renewed).as_secs_f64();
        out.push(Sample { labels: vec![lease_label(run)], value: age });
    }
}

fn lease_limit(run: &GateRun, out: &mut Vec<Sample>) {
    let lease = &run.report.lease;
    let limit = match &lease.state {
        LeaseState::Fresh { limit, .. } | LeaseState::Stale { limit, .. } => Some(limit.as_secs()),
        _ => lease.facts.as_ref().and_then(|f| f.duration_seconds).map(|d| 2 * i64::from(d)),
    };
    if let Some(limit) = limit {
        out.push(Sample { labels: vec![lease_label(run)], value: limit as f64 });
    }
}

fn lease_renew_time(run: &GateRun, out: &mut Vec<Sample>) {
    if let Some(renewed) = run.report.lease.facts.as_ref().and_then(|f| f.renew_time) {
        out.push(Sample { labels: vec![lease_label(run)], value: unix_seconds(renewed) });
    }
}

fn kueue_lease_status(run: &GateRun, out: &mut Vec<Sample>) {
    let Some(a) = &run.kueue_lease else { return };
    let status = kueue_lease::status(a);
    for s in kueue_lease::STATUSES {
        out.push(Sample {
            labels: vec![("lease", a.lease.to_string()), ("status", s.into())],
            value: one(status == s),
        });
    }
}

fn kueue_lease_age(run: &GateRun, out: &mut Vec<Sample>) {
    let Some(a) = &run.kueue_lease else { return };
    if let Some(renewed) = a.facts.as_ref().and_then(|f| f.renew_time) {
        let age = run.now.duration_since(renewed).as_secs_f64();
        out.push(Sample { labels: vec![("lease", a.lease.to_string())], value: age });
    }
}

fn waiting(run: &GateRun, out: &mut Vec<Sample>) {
    let Some(waiting) = run.waiting.found() else { return };
    for chain in &run.report.chains {
        let Some(cq) = &chain.cluster_queue else { continue };
        let count = waiting.iter().filter(|w| w.is_stalled() && w.cluster_queue.as_ref() == Some(cq)).count();
        out.push(Sample { labels: vec![("cluster_queue", cq.clone())], value: count as f64 });
    }
}

fn evaluated(run: &GateRun, out: &mut Vec<Sample>) {
    out.push(Sample { labels: Vec::new(), value: unix_seconds(run.now) });
}

fn unix_seconds(t: k8s_openapi::jiff::Timestamp) -> f64 {
    t.as_microsecond() as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_help_are_escaped_per_the_format() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");
    }

    #[test]
    fn values_read_back_exactly() {
        assert_eq!(value(1.0), "1");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(4.25), "4.25");
        assert_eq!(value(-5.0), "-5");
        assert_eq!(value(1_796_040_000.123_456), "1796040000.123456");
        assert_eq!(value(f64::INFINITY), "+Inf");
    }
}

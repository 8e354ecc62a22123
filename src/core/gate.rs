//! The readmission gate: the adapter's chain of checks, per ClusterQueue, and its verdict.
//!
//! In chain order: (1) the ClusterQueue lists the AdmissionCheck, (2) the check names
//! dispatch's controller, (3) the check is Active, (4) the controller's Lease is a live
//! heartbeat. Every check is evaluated, so the report shows them all; the first failing one
//! decides. Any failure gives *no*; a check that could not be read, with no failure anywhere,
//! gives *unknown*. Both leave the adapter observe-only. `docs/design.md` is the contract,
//! and quotes every reason below.

use std::collections::BTreeSet;

use k8s_openapi::jiff::Timestamp;

use super::fetched::Fetched;
use super::kueue::{AdmissionCheck, ClusterQueue};
use super::lease::{self, LeaseAssessment, LeaseFacts, LeaseRef, LeaseState};
use super::verdict::Verdict;

/// What the operator asked about; the adapter's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSettings {
    pub controller_name: String,
    /// ClusterQueues named with `--cluster-queue`; empty means every one that uses dispatch.
    pub cluster_queues: Vec<String>,
    pub admission_check: Option<String>,
    pub lease: LeaseRef,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            controller_name: "dispatch-admission".into(),
            cluster_queues: Vec::new(),
            admission_check: None,
            lease: LeaseRef::default(),
        }
    }
}

/// Everything the gate reads from the cluster.
#[derive(Debug, Clone)]
pub struct GateFacts {
    pub cluster_queues: Fetched<Vec<ClusterQueue>>,
    pub admission_checks: Fetched<Vec<AdmissionCheck>>,
    pub lease: Fetched<LeaseFacts>,
}

/// The four links of the chain, in the adapter's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    Listed,
    Controller,
    Active,
    Heartbeat,
}

impl CheckKind {
    pub fn title(self) -> &'static str {
        match self {
            CheckKind::Listed => "ClusterQueue lists the AdmissionCheck",
            CheckKind::Controller => "check names dispatch's controller",
            CheckKind::Active => "check is Active",
            CheckKind::Heartbeat => "Lease is a live heartbeat",
        }
    }

    /// A stable identifier for JSON.
    pub fn id(self) -> &'static str {
        match self {
            CheckKind::Listed => "listed",
            CheckKind::Controller => "controllerName",
            CheckKind::Active => "active",
            CheckKind::Heartbeat => "leaseHeartbeat",
        }
    }
}

/// A check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// Failed; the string is the reason.
    Fail(String),
    /// Could not be read; the string is the RBAC rule that is missing.
    Unknown(String),
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail(_) => "fail",
            Outcome::Unknown(_) => "unknown",
        }
    }
}

/// One link of the chain with its result and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub kind: CheckKind,
    pub outcome: Outcome,
    /// What was seen, for the operator (names, condition, holder and ages).
    pub detail: String,
}

/// The chain for one ClusterQueue.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// `None` when no ClusterQueue matched (check 1 then says what was looked for).
    pub cluster_queue: Option<String>,
    pub admission_check: Option<String>,
    pub checks: Vec<Check>,
    pub verdict: Verdict,
    /// The deciding reason: the first failing check's, else the first unknown one's.
    pub reason: Option<String>,
}

/// The gate over every ClusterQueue in scope.
#[derive(Debug, Clone, PartialEq)]
pub struct GateReport {
    pub chains: Vec<Chain>,
    pub lease: LeaseAssessment,
    /// Names of dispatch's AdmissionChecks in scope (whose Pending state means "waits for us").
    pub dispatch_checks: BTreeSet<String>,
    pub verdict: Verdict,
}

/// Evaluates the gate at `now`.
pub fn evaluate(settings: &GateSettings, facts: &GateFacts, now: Timestamp) -> GateReport {
    let lease = lease::assess(&settings.lease, &facts.lease, now);
    let heartbeat = heartbeat_check(&lease);
    let dispatch_checks = dispatch_checks(settings, &facts.admission_checks);

    let chains: Vec<Chain> = targets(settings, facts, &dispatch_checks)
        .into_iter()
        .map(|target| {
            let mut checks = link_checks(settings, facts, &target);
            checks.push(heartbeat.clone());
            finish(target.cluster_queue, target.admission_check, checks)
        })
        .collect();
    let verdict = Verdict::worst(chains.iter().map(|c| c.verdict));
    GateReport { chains, lease, dispatch_checks, verdict }
}

/// The AdmissionChecks that are dispatch's: the one named with `--admission-check`, else every
/// check whose controllerName is dispatch's.
pub fn dispatch_checks(settings: &GateSettings, admission_checks: &Fetched<Vec<AdmissionCheck>>) -> BTreeSet<String> {
    if let Some(name) = &settings.admission_check {
        return BTreeSet::from([name.clone()]);
    }
    admission_checks
        .found()
        .map(|acs| {
            acs.iter()
                .filter(|ac| ac.controller_name.as_deref() == Some(&settings.controller_name))
                .map(|ac| ac.name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A ClusterQueue to judge, and the AdmissionCheck to judge it with.
struct Target {
    cluster_queue: Option<String>,
    admission_check: Option<String>,
    /// Set when check 1 is already decided while choosing targets.
    listed: Option<Outcome>,
    listed_detail: String,
}

fn targets(settings: &GateSettings, facts: &GateFacts, dispatch: &BTreeSet<String>) -> Vec<Target> {
    let wanted = describe_wanted(settings);
    let queues: &[ClusterQueue] = match &facts.cluster_queues {
        Fetched::Found(queues) => queues,
        // A list has no "missing"; read as empty.
        Fetched::Missing => &[],
        Fetched::Forbidden(denied) => {
            let names: Vec<Option<String>> = if settings.cluster_queues.is_empty() {
                vec![None]
            } else {
                settings.cluster_queues.iter().cloned().map(Some).collect()
            };
            return names
                .into_iter()
                .map(|cq| Target {
                    cluster_queue: cq,
                    admission_check: single(dispatch),
                    listed: Some(Outcome::Unknown(denied.rule.clone())),
                    listed_detail: "may not list ClusterQueues".into(),
                })
                .collect();
        }
    };

    if !settings.cluster_queues.is_empty() {
        return settings
            .cluster_queues
            .iter()
            .map(|name| match queues.iter().find(|q| &q.name == name) {
                None => Target {
                    cluster_queue: Some(name.clone()),
                    admission_check: single(dispatch),
                    listed: Some(Outcome::Fail(format!("ClusterQueue {name} does not exist"))),
                    listed_detail: format!("ClusterQueue {name} does not exist"),
                },
                Some(q) => named_target(q, settings, dispatch, facts),
            })
            .collect();
    }

    // Without the AdmissionCheck list we cannot tell which listed check is dispatch's: judge
    // every queue that lists any (its first check then says unknown), rather than claim none.
    let blind = matches!(facts.admission_checks, Fetched::Forbidden(_)) && settings.admission_check.is_none();
    let mut found: Vec<Target> = queues
        .iter()
        .filter(|q| {
            if blind { !q.admission_checks.is_empty() } else { q.admission_checks.iter().any(|c| dispatch.contains(c)) }
        })
        .map(|q| named_target(q, settings, dispatch, facts))
        .collect();
    found.sort_by(|a, b| a.cluster_queue.cmp(&b.cluster_queue));
    if found.is_empty() {
        let reason = format!("no ClusterQueue lists {wanted}");
        found.push(Target {
            cluster_queue: None,
            admission_check: single(dispatch).or_else(|| settings.admission_check.clone()),
            listed: Some(Outcome::Fail(reason.clone())),
            listed_detail: reason,
        });
    }
    found
}

fn single(names: &BTreeSet<String>) -> Option<String> {
    (names.len() == 1).then(|| names.iter().next().cloned()).flatten()
}

fn describe_wanted(settings: &GateSettings) -> String {
    match &settings.admission_check {
        Some(name) => format!("AdmissionCheck {name}"),
        None => format!("an AdmissionCheck whose controllerName is {}", settings.controller_name),
    }
}

fn named_target(q: &ClusterQueue, settings: &GateSettings, dispatch: &BTreeSet<String>, facts: &GateFacts) -> Target {
    let listed: Vec<&String> = q.admission_checks.iter().filter(|c| dispatch.contains(*c)).collect();
    match listed.first() {
        Some(check) => Target {
            cluster_queue: Some(q.name.clone()),
            admission_check: Some((*check).clone()),
            listed: None,
            listed_detail: format!("{} lists {}", q.name, check),
        },
        None => {
            let reason = format!("ClusterQueue {} does not list {}", q.name, describe_wanted(settings));
            let lists = if q.admission_checks.is_empty() {
                "it lists no AdmissionChecks".to_string()
            } else {
                format!("it lists {}", q.admission_checks.join(", "))
            };
            // With the AC list forbidden we cannot tell which listed check is dispatch's.
            let outcome = match (&facts.admission_checks, &settings.admission_check) {
                (Fetched::Forbidden(d), None) if !q.admission_checks.is_empty() => Outcome::Unknown(d.rule.clone()),
                _ => Outcome::Fail(reason),
            };
            Target {
                cluster_queue: Some(q.name.clone()),
                admission_check: single(dispatch).or_else(|| settings.admission_check.clone()),
                listed: Some(outcome),
                listed_detail: lists,
            }
        }
    }
}

/// Checks 1 to 3 for one target.
fn link_checks(settings: &GateSettings, facts: &GateFacts, target: &Target) -> Vec<Check> {
    let listed = Check {
        kind: CheckKind::Listed,
        outcome: target.listed.clone().unwrap_or(Outcome::Pass),
        detail: target.listed_detail.clone(),
    };
    let (controller, active) = match (&target.admission_check, &facts.admission_checks) {
        (_, Fetched::Forbidden(d)) => (unknown(CheckKind::Controller, d), unknown(CheckKind::Active, d)),
        (None, _) => (not_identified(CheckKind::Controller, settings), not_identified(CheckKind::Active, settings)),
        (Some(name), Fetched::Missing) => {
            (missing_check(name, CheckKind::Controller), missing_check(name, CheckKind::Active))
        }
        (Some(name), Fetched::Found(acs)) => match acs.iter().find(|ac| &ac.name == name) {
            None => (missing_check(name, CheckKind::Controller), missing_check(name, CheckKind::Active)),
            Some(ac) => (controller_check(ac, settings), active_check(ac)),
        },
    };
    vec![listed, controller, active]
}

fn unknown(kind: CheckKind, denied: &super::fetched::Denied) -> Check {
    Check { kind, outcome: Outcome::Unknown(denied.rule.clone()), detail: "may not read AdmissionChecks".into() }
}

fn not_identified(kind: CheckKind, settings: &GateSettings) -> Check {
    let reason = format!("no AdmissionCheck to judge: none found whose controllerName is {}", settings.controller_name);
    Check { kind, outcome: Outcome::Fail(reason), detail: "no AdmissionCheck identified".into() }
}

fn missing_check(name: &str, kind: CheckKind) -> Check {
    let reason = format!("AdmissionCheck {name} does not exist");
    Check { kind, outcome: Outcome::Fail(reason.clone()), detail: reason }
}

fn controller_check(ac: &AdmissionCheck, settings: &GateSettings) -> Check {
    let name = ac.controller_name.as_deref().unwrap_or("");
    if name == settings.controller_name {
        Check { kind: CheckKind::Controller, outcome: Outcome::Pass, detail: format!("{} names {name}", ac.name) }
    } else {
        let reason =
            format!("AdmissionCheck {} names controller {:?}, not {}", ac.name, name, settings.controller_name);
        Check {
            kind: CheckKind::Controller,
            outcome: Outcome::Fail(reason),
            detail: format!("{} names {name:?}", ac.name),
        }
    }
}

/// Active=True passes, but proves only that someone once set it: nothing clears it when the
/// controller stops, which is why the Lease check follows.
fn active_check(ac: &AdmissionCheck) -> Check {
    match &ac.active {
        Some(c) if c.is_true() => Check {
            kind: CheckKind::Active,
            outcome: Outcome::Pass,
            detail: format!("Active=True{}", reason_suffix(c)),
        },
        Some(c) => Check {
            kind: CheckKind::Active,
            outcome: Outcome::Fail(format!(
                "AdmissionCheck {} is not Active (Active={}{})",
                ac.name,
                c.status,
                reason_suffix(c)
            )),
            detail: format!("Active={}{}", c.status, reason_suffix(c)),
        },
        None => Check {
            kind: CheckKind::Active,
            outcome: Outcome::Fail(format!("AdmissionCheck {} has no Active condition", ac.name)),
            detail: "no Active condition".into(),
        },
    }
}

fn reason_suffix(c: &super::kueue::Condition) -> String {
    match (c.reason.as_deref().filter(|r| !r.is_empty()), c.message.as_deref().filter(|m| !m.is_empty())) {
        (Some(r), Some(m)) => format!(", {r}: {m}"),
        (Some(r), None) => format!(", {r}"),
        (None, Some(m)) => format!(": {m}"),
        (None, None) => String::new(),
    }
}

fn heartbeat_check(lease: &LeaseAssessment) -> Check {
    use super::duration::{go_seconds, human};
    let holder = lease
        .facts
        .as_ref()
        .and_then(|f| f.holder())
        .map(|h| format!("holder {h}"))
        .unwrap_or_else(|| "no holder".into());
    let (outcome, detail) = match &lease.state {
        LeaseState::Fresh { age, limit, stale_in } => (
            Outcome::Pass,
            format!(
                "{holder}, renewed {} ago, limit {}, stale in {}",
                human(*age),
                go_seconds(limit.as_secs()),
                human(*stale_in)
            ),
        ),
        LeaseState::Stale { age, limit, stale_for } => (
            Outcome::Fail(lease.state.reason(&lease.lease).unwrap_or_default()),
            format!(
                "{holder}, renewed {} ago, limit {}, stale for {}",
                human(*age),
                go_seconds(limit.as_secs()),
                human(*stale_for)
            ),
        ),
        LeaseState::NoHolder | LeaseState::NeverRenewed => {
            let renewed = lease.facts.as_ref().and_then(|f| f.renew_time).map(|_| "").unwrap_or(", never renewed");
            (Outcome::Fail(lease.state.reason(&lease.lease).unwrap_or_default()), format!("{holder}{renewed}"))
        }
        LeaseState::Missing => (
            Outcome::Fail(lease.state.reason(&lease.lease).unwrap_or_default()),
            format!("Lease {} does not exist", lease.lease),
        ),
        LeaseState::Forbidden { rule } => {
            (Outcome::Unknown(rule.clone()), format!("may not read Lease {}", lease.lease))
        }
    };
    Check { kind: CheckKind::Heartbeat, outcome, detail }
}

fn finish(cluster_queue: Option<String>, admission_check: Option<String>, checks: Vec<Check>) -> Chain {
    let failed = checks.iter().find_map(|c| match &c.outcome {
        Outcome::Fail(reason) => Some(reason.clone()),
        _ => None,
    });
    let unknown = checks.iter().find_map(|c| match &c.outcome {
        Outcome::Unknown(rule) => Some(format!("{}: cannot be read without RBAC: {rule}", c.kind.title())),
        _ => None,
    });
    let (verdict, reason) = match (failed, unknown) {
        (Some(reason), _) => (Verdict::No, Some(reason)),
        (None, Some(reason)) => (Verdict::Unknown, Some(reason)),
        (None, None) => (Verdict::Yes, None),
    };
    Chain { cluster_queue, admission_check, checks, verdict, reason }
}

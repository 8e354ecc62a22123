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
use super::holder::HolderFacts;
use super::kueue::{AdmissionCheck, CheckRule, ClusterQueue, Condition};
use super::lease::{self, LeaseAssessment, LeaseFacts, LeaseRef, LeaseState};
use super::lookalike::{self, Lookalike};
use super::verdict::Verdict;

/// What the operator asked about; the adapter's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSettings {
    pub controller_name: String,
    /// ClusterQueues named with `--cluster-queue`; empty means every one that uses dispatch.
    pub cluster_queues: Vec<String>,
    pub admission_check: Option<String>,
    pub lease: LeaseRef,
    /// Kueue's own manager's Lease, read beside dispatch's and shown as context, never judged
    /// as a check.
    pub kueue_lease: LeaseRef,
}

impl GateSettings {
    /// What names dispatch's check, for [`lookalike`].
    pub fn wanted(&self) -> lookalike::Wanted<'_> {
        lookalike::Wanted { controller_name: &self.controller_name, admission_check: self.admission_check.as_deref() }
    }
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            controller_name: "dispatch-admission".into(),
            cluster_queues: Vec::new(),
            admission_check: None,
            lease: LeaseRef::default(),
            kueue_lease: LeaseRef::kueue_default(),
        }
    }
}

/// Everything the gate reads from the cluster.
#[derive(Debug, Clone)]
pub struct GateFacts {
    pub cluster_queues: Fetched<Vec<ClusterQueue>>,
    pub admission_checks: Fetched<Vec<AdmissionCheck>>,
    pub lease: Fetched<LeaseFacts>,
    /// The holder's pod and its node, read beside the Lease; `None` when not looked up.
    pub holder: Option<HolderFacts>,
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
    /// A stable, machine-readable name for why it failed or could not be read (`LeaseStale`,
    /// `ClusterQueueNotFound`, ...; docs/output.md lists them); `None` when it passed.
    pub code: Option<&'static str>,
}

/// The chain for one ClusterQueue.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// `None` when no ClusterQueue matched (check 1 then says what was looked for).
    pub cluster_queue: Option<String>,
    /// The AdmissionCheck the chain is about: the one judged, or with several, the one whose
    /// failure decides (else the first by name). `None` when none could be identified.
    pub admission_check: Option<String>,
    /// Every AdmissionCheck that checks 2 and 3 judged, by name.
    pub admission_checks: Vec<String>,
    /// How the ClusterQueue lists those of dispatch's checks it lists (with their onFlavors),
    /// by name; empty when it lists none or could not be read.
    pub rules: Vec<CheckRule>,
    /// Kueue's own `Active` condition on the ClusterQueue, shown beside check 3. It does not
    /// decide: it says whether Kueue admits anything there, not whether dispatch's gate holds.
    pub cluster_queue_active: Option<Condition>,
    pub checks: Vec<Check>,
    pub verdict: Verdict,
    /// The deciding reason: the first failing check's, else the first unknown one's.
    pub reason: Option<String>,
    /// The deciding check's [`Check::code`].
    pub reason_code: Option<&'static str>,
}

impl Chain {
    /// Whether the adapter, which stops at the first failing check, reaches check `i` (from 0):
    /// every check up to and including the first failure is reached; after it none is.
    pub fn reached(&self, i: usize) -> bool {
        self.checks.iter().position(|c| matches!(c.outcome, Outcome::Fail(_))).is_none_or(|first| i <= first)
    }
}

/// The gate over every ClusterQueue in scope.
#[derive(Debug, Clone, PartialEq)]
pub struct GateReport {
    pub chains: Vec<Chain>,
    pub lease: LeaseAssessment,
    /// Names of dispatch's AdmissionChecks in scope (whose Pending state means "waits for us").
    pub dispatch_checks: BTreeSet<String>,
    pub verdict: Verdict,
    /// When no AdmissionCheck names dispatch's controller, those that plainly are dispatch's
    /// under another controllerName ([`lookalike`](super::lookalike)); said beside the verdict,
    /// never changing it. Their waiting Workloads are counted where those were read.
    pub lookalikes: Vec<Lookalike>,
}

/// Evaluates the gate at `now`.
pub fn evaluate(settings: &GateSettings, facts: &GateFacts, now: Timestamp) -> GateReport {
    let lease = lease::assess_with_holder(&settings.lease, &facts.lease, facts.holder.as_ref(), now);
    let heartbeat = heartbeat_check(&lease);
    let dispatch_checks = dispatch_checks(settings, &facts.admission_checks);

    let chains: Vec<Chain> = subjects(settings, facts, &dispatch_checks)
        .into_iter()
        .map(|subject| chain(settings, facts, subject, heartbeat.clone()))
        .collect();
    let verdict = Verdict::worst(chains.iter().map(|c| c.verdict));
    let lookalikes = lookalike::find(settings.wanted(), &facts.admission_checks, &[]);
    GateReport { chains, lease, dispatch_checks, verdict, lookalikes }
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

/// A ClusterQueue to judge, once check 1 is decided: what it found, and which AdmissionChecks
/// checks 2 and 3 then judge. Every way of choosing ClusterQueues (named, discovered, a list
/// that is forbidden or names none) ends in this one shape.
struct Subject<'a> {
    cluster_queue: Option<String>,
    /// The ClusterQueue as read, when it was.
    queue: Option<&'a ClusterQueue>,
    /// Check 1.
    listed: Check,
    /// dispatch's checks the ClusterQueue lists, by name.
    rules: Vec<CheckRule>,
    /// The AdmissionChecks checks 2 and 3 judge, by name: those the ClusterQueue lists, else
    /// every one of dispatch's (so a check that is missing or down still shows); empty when
    /// none could be identified.
    judged: Vec<String>,
}

impl Subject<'_> {
    /// A ClusterQueue that could not be read or is not there: check 1 says so, and checks 2 and
    /// 3 judge every one of dispatch's checks.
    fn unread(
        cluster_queue: Option<String>,
        (listed, code): (Outcome, &'static str),
        detail: String,
        dispatch: &BTreeSet<String>,
    ) -> Self {
        let code = (listed != Outcome::Pass).then_some(code);
        Subject {
            cluster_queue,
            queue: None,
            listed: Check { kind: CheckKind::Listed, outcome: listed, detail, code },
            rules: Vec::new(),
            judged: dispatch.iter().cloned().collect(),
        }
    }
}

fn subjects<'a>(settings: &GateSettings, facts: &'a GateFacts, dispatch: &BTreeSet<String>) -> Vec<Subject<'a>> {
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
                .map(|cq| {
                    let outcome = Outcome::Unknown(denied.rule.clone());
                    let listed = (outcome, "ClusterQueuesForbidden");
                    Subject::unread(cq, listed, "may not list ClusterQueues".into(), dispatch)
                })
                .collect();
        }
    };

    if !settings.cluster_queues.is_empty() {
        return settings
            .cluster_queues
            .iter()
            .map(|name| match queues.iter().find(|q| &q.name == name) {
                None => {
                    let reason = format!("ClusterQueue {name} does not exist");
                    let listed = (Outcome::Fail(reason.clone()), "ClusterQueueNotFound");
                    Subject::unread(Some(name.clone()), listed, reason, dispatch)
                }
                Some(q) => listing(q, settings, dispatch, facts),
            })
            .collect();
    }

    // Without the AdmissionCheck list we cannot tell which listed check is dispatch's: judge
    // every queue that lists any (its first check then says unknown), rather than claim none.
    let blind = matches!(facts.admission_checks, Fetched::Forbidden(_)) && settings.admission_check.is_none();
    let mut found: Vec<Subject> = queues
        .iter()
        .filter(|q| if blind { !q.admission_checks.is_empty() } else { q.check_names().any(|c| dispatch.contains(c)) })
        .map(|q| listing(q, settings, dispatch, facts))
        .collect();
    found.sort_by(|a, b| a.cluster_queue.cmp(&b.cluster_queue));
    if found.is_empty() {
        let reason = format!("no ClusterQueue lists {}", describe_wanted(settings));
        let listed = (Outcome::Fail(reason.clone()), "NoClusterQueueListsCheck");
        found.push(Subject::unread(None, listed, reason, dispatch));
    }
    found
}

fn describe_wanted(settings: &GateSettings) -> String {
    match &settings.admission_check {
        Some(name) => format!("AdmissionCheck {name}"),
        None => format!("an AdmissionCheck whose controllerName is {}", settings.controller_name),
    }
}

/// Check 1 for a ClusterQueue that was read.
fn listing<'a>(
    q: &'a ClusterQueue,
    settings: &GateSettings,
    dispatch: &BTreeSet<String>,
    facts: &GateFacts,
) -> Subject<'a> {
    let mut ours: Vec<CheckRule> = q.admission_checks.iter().filter(|r| dispatch.contains(&r.name)).cloned().collect();
    // By name, not in the ClusterQueue's order: the same ClusterQueue gives the same chain.
    ours.sort_by(|a, b| a.name.cmp(&b.name));
    if !ours.is_empty() {
        return Subject {
            cluster_queue: Some(q.name.clone()),
            queue: Some(q),
            listed: Check {
                kind: CheckKind::Listed,
                outcome: Outcome::Pass,
                detail: format!("{} lists {}", q.name, describe_rules(&ours)),
                code: None,
            },
            judged: ours.iter().map(|r| r.name.clone()).collect(),
            rules: ours,
        };
    }
    let reason = format!("ClusterQueue {} does not list {}", q.name, describe_wanted(settings));
    let lists = if q.admission_checks.is_empty() {
        "it lists no AdmissionChecks".to_string()
    } else {
        format!("it lists {}", q.check_names().collect::<Vec<_>>().join(", "))
    };
    // With the AC list forbidden we cannot tell which listed check is dispatch's.
    let outcome = match (&facts.admission_checks, &settings.admission_check) {
        (Fetched::Forbidden(d), None) if !q.admission_checks.is_empty() => {
            (Outcome::Unknown(d.rule.clone()), "AdmissionChecksForbidden")
        }
        _ => (Outcome::Fail(reason), "ClusterQueueDoesNotListCheck"),
    };
    Subject { queue: Some(q), ..Subject::unread(Some(q.name.clone()), outcome, lists, dispatch) }
}

/// `dispatch`, `dispatch (onFlavors: gpu-a, gpu-b)`, `a and b`, `a, b and c`.
fn describe_rules(rules: &[CheckRule]) -> String {
    let names: Vec<String> = rules
        .iter()
        .map(|r| {
            if r.on_flavors.is_empty() {
                r.name.clone()
            } else {
                format!("{} (onFlavors: {})", r.name, r.on_flavors.join(", "))
            }
        })
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The whole chain for one subject: check 1 as decided, checks 2 and 3 over its AdmissionChecks,
/// Kueue's view of the ClusterQueue beside check 3, and the shared heartbeat.
fn chain(settings: &GateSettings, facts: &GateFacts, subject: Subject<'_>, heartbeat: Check) -> Chain {
    let (controller, mut active, deciding) = link_checks(settings, facts, &subject.judged);
    let cluster_queue_active = subject.queue.and_then(|q| q.active.clone());
    if let (Some(c), Some(q)) = (&cluster_queue_active, subject.queue) {
        active.detail = format!("{}; ClusterQueue {}: Active={}{}", active.detail, q.name, c.status, reason_suffix(c));
    }
    let checks = vec![subject.listed, controller, active, heartbeat];
    let (verdict, reason) = decide(&checks);
    let reason_code = decide_code(&checks);
    Chain {
        cluster_queue: subject.cluster_queue,
        admission_check: deciding,
        admission_checks: subject.judged,
        rules: subject.rules,
        cluster_queue_active,
        checks,
        verdict,
        reason,
        reason_code,
    }
}

/// Checks 2 and 3 over the judged AdmissionChecks, and the one the chain is about. With
/// several, each is judged; a check fails if it fails for any, and the first by name decides.
fn link_checks(settings: &GateSettings, facts: &GateFacts, judged: &[String]) -> (Check, Check, Option<String>) {
    let acs: &[AdmissionCheck] = match &facts.admission_checks {
        Fetched::Forbidden(d) => {
            return (unknown(CheckKind::Controller, d), unknown(CheckKind::Active, d), judged.first().cloned());
        }
        Fetched::Found(acs) => acs,
        Fetched::Missing => &[],
    };
    if judged.is_empty() {
        return (not_identified(CheckKind::Controller, settings), not_identified(CheckKind::Active, settings), None);
    }
    let each: Vec<(&str, Check, Check)> = judged
        .iter()
        .map(|name| match acs.iter().find(|ac| &ac.name == name) {
            None => (name.as_str(), missing_check(name, CheckKind::Controller), missing_check(name, CheckKind::Active)),
            Some(ac) => (name.as_str(), controller_check(ac, settings), active_check(ac)),
        })
        .collect();
    let fails = |c: &Check| matches!(c.outcome, Outcome::Fail(_));
    let deciding = each
        .iter()
        .find(|e| fails(&e.1))
        .or_else(|| each.iter().find(|e| fails(&e.2)))
        .map(|e| e.0.to_string())
        .or_else(|| judged.first().cloned());
    let controller = combine(CheckKind::Controller, each.iter().map(|(name, c, _)| (*name, c)).collect());
    let active = combine(CheckKind::Active, each.iter().map(|(name, _, a)| (*name, a)).collect());
    (controller, active, deciding)
}

/// One check over several AdmissionChecks: it fails if any fails (the first, by name, gives the
/// reason), and its detail has each one's, named.
fn combine(kind: CheckKind, each: Vec<(&str, &Check)>) -> Check {
    if let [(_, only)] = each[..] {
        return only.clone();
    }
    let (outcome, code) = each
        .iter()
        .find(|(_, c)| matches!(c.outcome, Outcome::Fail(_)))
        .or_else(|| each.iter().find(|(_, c)| matches!(c.outcome, Outcome::Unknown(_))))
        .map(|(_, c)| (c.outcome.clone(), c.code))
        .unwrap_or((Outcome::Pass, None));
    // Each part named: "dispatch names ..." and "AdmissionCheck dispatch does not exist" are;
    // "Active=True, ..." gets "dispatch: " in front.
    let named = |name: &str, detail: &str| {
        detail.starts_with(&format!("{name} ")) || detail.starts_with(&format!("AdmissionCheck {name} "))
    };
    let detail = each
        .iter()
        .map(|(name, c)| if named(name, &c.detail) { c.detail.clone() } else { format!("{name}: {}", c.detail) })
        .collect::<Vec<_>>()
        .join("; ");
    Check { kind, outcome, detail, code }
}

fn unknown(kind: CheckKind, denied: &super::fetched::Denied) -> Check {
    Check {
        kind,
        outcome: Outcome::Unknown(denied.rule.clone()),
        detail: "may not read AdmissionChecks".into(),
        code: Some("AdmissionChecksForbidden"),
    }
}

fn not_identified(kind: CheckKind, settings: &GateSettings) -> Check {
    let reason = format!("no AdmissionCheck to judge: none found whose controllerName is {}", settings.controller_name);
    let code = Some("NoAdmissionCheckIdentified");
    Check { kind, outcome: Outcome::Fail(reason), detail: "no AdmissionCheck identified".into(), code }
}

fn missing_check(name: &str, kind: CheckKind) -> Check {
    let reason = format!("AdmissionCheck {name} does not exist");
    Check { kind, outcome: Outcome::Fail(reason.clone()), detail: reason, code: Some("AdmissionCheckNotFound") }
}

fn controller_check(ac: &AdmissionCheck, settings: &GateSettings) -> Check {
    let name = ac.controller_name.as_deref().unwrap_or("");
    if name == settings.controller_name {
        let detail = format!("{} names {name}", ac.name);
        Check { kind: CheckKind::Controller, outcome: Outcome::Pass, detail, code: None }
    } else {
        let reason =
            format!("AdmissionCheck {} names controller {:?}, not {}", ac.name, name, settings.controller_name);
        Check {
            kind: CheckKind::Controller,
            outcome: Outcome::Fail(reason),
            detail: format!("{} names {name:?}", ac.name),
            code: Some("ControllerNameMismatch"),
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
            code: None,
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
            code: Some("AdmissionCheckInactive"),
        },
        None => Check {
            kind: CheckKind::Active,
            outcome: Outcome::Fail(format!("AdmissionCheck {} has no Active condition", ac.name)),
            detail: "no Active condition".into(),
            code: Some("AdmissionCheckNoActiveCondition"),
        },
    }
}

/// `, Reason: message`, `, Reason`, `: message`, or nothing, after `Active=False`.
fn reason_suffix(c: &Condition) -> String {
    let said = c.said();
    match (said.is_empty(), c.reason.as_deref().is_some_and(|r| !r.is_empty())) {
        (true, _) => String::new(),
        (false, true) => format!(", {said}"),
        (false, false) => format!(": {said}"),
    }
}

fn heartbeat_check(lease: &LeaseAssessment) -> Check {
    use super::duration::{human, human_up};
    let holder = lease
        .facts
        .as_ref()
        .and_then(|f| f.holder())
        .map(|h| format!("holder {h}"))
        .unwrap_or_else(|| "no holder".into());
    let (outcome, detail) = match &lease.state {
        LeaseState::Fresh { age, limit, stale_in } => (
            Outcome::Pass,
            format!("{holder}, renewed {} ago, limit {}, stale in {}", human_up(*age), human(*limit), human(*stale_in)),
        ),
        LeaseState::Stale { age, limit, stale_for } => (
            Outcome::Fail(lease.state.reason(&lease.lease).unwrap_or_default()),
            format!(
                "{holder}, renewed {} ago, limit {}, stale for {}",
                human_up(*age),
                human(*limit),
                human_up(*stale_for)
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
    Check { kind: CheckKind::Heartbeat, outcome, detail, code: lease_code(&lease.state) }
}

/// A machine-readable name for a Lease's state when it fails the heartbeat or cannot be read;
/// `None` when it is fresh.
pub fn lease_code(state: &LeaseState) -> Option<&'static str> {
    match state {
        LeaseState::Fresh { .. } => None,
        LeaseState::Stale { .. } => Some("LeaseStale"),
        LeaseState::NoHolder => Some("LeaseNoHolder"),
        LeaseState::NeverRenewed => Some("LeaseNeverRenewed"),
        LeaseState::Missing => Some("LeaseNotFound"),
        LeaseState::Forbidden { .. } => Some("LeaseForbidden"),
    }
}

/// The deciding check's code: the first failure's, else the first unknown read's.
fn decide_code(checks: &[Check]) -> Option<&'static str> {
    let first = |f: fn(&Outcome) -> bool| checks.iter().find(|c| f(&c.outcome)).and_then(|c| c.code);
    first(|o| matches!(o, Outcome::Fail(_))).or_else(|| first(|o| matches!(o, Outcome::Unknown(_))))
}

/// The chain's verdict and deciding reason: the first failure, else the first unknown read.
fn decide(checks: &[Check]) -> (Verdict, Option<String>) {
    let failed = checks.iter().find_map(|c| match &c.outcome {
        Outcome::Fail(reason) => Some(reason.clone()),
        _ => None,
    });
    let unknown = checks.iter().find_map(|c| match &c.outcome {
        Outcome::Unknown(rule) => Some(format!("{}: cannot be read without RBAC: {rule}", c.kind.title())),
        _ => None,
    });
    match (failed, unknown) {
        (Some(reason), _) => (Verdict::No, Some(reason)),
        (None, Some(reason)) => (Verdict::Unknown, Some(reason)),
        (None, None) => (Verdict::Yes, None),
    }
}

//! Table-driven tests of the pure core: `gate::evaluate` at a fixed instant, the wire layer's
//! ClusterQueue conversion (both API shapes), and the waiting-Workload selection.
//!
//! The reason strings asserted here are those `docs/design.md` quotes, word for word (the
//! Lease's are the adapter's own); a change to one is a change of contract, and the last test
//! checks that the design still quotes each one.

mod facts;

use std::collections::BTreeSet;

use facts::{CHECK, CONTROLLER, ac, ago, cq, dispatch_ac, forbidden, kueue_condition, now, secs, workload};
use k8s_openapi::jiff::SignedDuration;
use kubectl_dispatch::cluster::reading::wire::{self, WireClusterQueue};
use kubectl_dispatch::core::fetched::{Denied, Fetched};
use kubectl_dispatch::core::gate::{self, Chain, CheckKind, GateFacts, GateReport, GateSettings, Outcome};
use kubectl_dispatch::core::kueue::{AdmissionCheck, CheckRule, CheckState, ClusterQueue, Condition, LocalQueue};
use kubectl_dispatch::core::lease::{self, LeaseFacts, LeaseRef, LeaseState};
use kubectl_dispatch::core::verdict::Verdict;
use kubectl_dispatch::core::waiting::{self, Waiting, WaitingScope};

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

const HOLDER: &str = "dispatch-admission-7d9f_1";
const LEASE_RULE: &str = "get leases in namespace dispatch-system";
const AC_RULE: &str = "list admissionchecks.kueue.x-k8s.io";
const CQ_RULE: &str = "list clusterqueues.kueue.x-k8s.io";
const READY: &str = "the controller is ready";

/// A condition that last changed an hour ago.
fn condition(status: &str, reason: Option<&str>, message: Option<&str>) -> Condition {
    kueue_condition(status, reason, message, secs(3600))
}

fn active_true() -> Option<Condition> {
    Some(condition("True", Some("Active"), Some(READY)))
}

/// A Lease renewed `renewed_ago` before now, with the controller's default 15 s duration.
fn lease_renewed(renewed_ago: SignedDuration) -> LeaseFacts {
    facts::lease(HOLDER, renewed_ago, secs(3 * 3600))
}

fn fresh_lease() -> Fetched<LeaseFacts> {
    Fetched::Found(lease_renewed(secs(4)))
}

/// One ClusterQueue `team-a` listing dispatch's check, which is Active, and a fresh Lease.
fn healthy() -> GateFacts {
    GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK])]),
        admission_checks: Fetched::Found(vec![dispatch_ac(READY)]),
        lease: fresh_lease(),
        holder: None,
    }
}

fn with_lease(lease: Fetched<LeaseFacts>) -> GateFacts {
    GateFacts { lease, ..healthy() }
}

fn with_acs(acs: Vec<AdmissionCheck>) -> GateFacts {
    GateFacts { admission_checks: Fetched::Found(acs), ..healthy() }
}

fn with_cqs(cqs: Vec<ClusterQueue>) -> GateFacts {
    GateFacts { cluster_queues: Fetched::Found(cqs), ..healthy() }
}

fn named_cq(names: &[&str]) -> GateSettings {
    GateSettings { cluster_queues: names.iter().map(|n| n.to_string()).collect(), ..GateSettings::default() }
}

fn named_check(name: &str) -> GateSettings {
    GateSettings { admission_check: Some(name.into()), ..GateSettings::default() }
}

fn pass() -> Outcome {
    Outcome::Pass
}

fn fail(reason: &str) -> Outcome {
    Outcome::Fail(reason.into())
}

fn unknown(rule: &str) -> Outcome {
    Outcome::Unknown(rule.into())
}

// The adapter's reasons, word for word.
const NO_CQ_LISTS: &str = "no ClusterQueue lists an AdmissionCheck whose controllerName is dispatch-admission";
const NO_AC_TO_JUDGE: &str = "no AdmissionCheck to judge: none found whose controllerName is dispatch-admission";
const LEASE_STALE_47S: &str = "the admission controller's Lease was last renewed 47s ago, beyond 30s";
const LEASE_NO_HOLDER: &str = "the admission controller's Lease has no holder";
const LEASE_NEVER_RENEWED: &str = "the admission controller's Lease has never been renewed";
const LEASE_MISSING: &str = "Lease dispatch-system/dispatch-admission does not exist";

// ---------------------------------------------------------------------------------------------
// The chain, one case per path
// ---------------------------------------------------------------------------------------------

/// One scenario with one expected chain.
struct Case {
    name: &'static str,
    settings: GateSettings,
    facts: GateFacts,
    verdict: Verdict,
    cluster_queue: Option<&'static str>,
    admission_check: Option<&'static str>,
    /// Listed, Controller, Active, Heartbeat.
    outcomes: [Outcome; 4],
    reason: Option<&'static str>,
}

fn assert_chain(case: &str, chain: &Chain, want: &Case) {
    assert_eq!(chain.cluster_queue.as_deref(), want.cluster_queue, "{case}: cluster_queue");
    assert_eq!(chain.admission_check.as_deref(), want.admission_check, "{case}: admission_check");
    let kinds: Vec<CheckKind> = chain.checks.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [CheckKind::Listed, CheckKind::Controller, CheckKind::Active, CheckKind::Heartbeat],
        "{case}: the chain's order"
    );
    for (i, (check, outcome)) in chain.checks.iter().zip(&want.outcomes).enumerate() {
        assert_eq!(&check.outcome, outcome, "{case}: check {} ({})", i + 1, check.kind.title());
        assert!(!check.detail.is_empty(), "{case}: check {} has no detail", i + 1);
    }
    assert_eq!(chain.verdict, want.verdict, "{case}: chain verdict");
    assert_eq!(chain.reason.as_deref(), want.reason, "{case}: reason");
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "healthy",
            settings: GateSettings::default(),
            facts: healthy(),
            verdict: Verdict::Yes,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), pass()],
            reason: None,
        },
        Case {
            name: "no ClusterQueue lists the check (auto-discovery)",
            settings: GateSettings::default(),
            facts: with_cqs(vec![cq("team-a", &[]), cq("team-b", &["provisioning"])]),
            verdict: Verdict::No,
            cluster_queue: None,
            admission_check: Some(CHECK),
            outcomes: [fail(NO_CQ_LISTS), pass(), pass(), pass()],
            reason: Some(NO_CQ_LISTS),
        },
        Case {
            name: "no ClusterQueues at all",
            settings: GateSettings::default(),
            facts: with_cqs(vec![]),
            verdict: Verdict::No,
            cluster_queue: None,
            admission_check: Some(CHECK),
            outcomes: [fail(NO_CQ_LISTS), pass(), pass(), pass()],
            reason: Some(NO_CQ_LISTS),
        },
        Case {
            name: "named ClusterQueue does not list the check",
            settings: named_cq(&["team-b"]),
            facts: with_cqs(vec![cq("team-a", &[CHECK]), cq("team-b", &["provisioning"])]),
            verdict: Verdict::No,
            cluster_queue: Some("team-b"),
            admission_check: Some(CHECK),
            outcomes: [
                fail("ClusterQueue team-b does not list an AdmissionCheck whose controllerName is dispatch-admission"),
                pass(),
                pass(),
                pass(),
            ],
            reason: Some(
                "ClusterQueue team-b does not list an AdmissionCheck whose controllerName is dispatch-admission",
            ),
        },
        Case {
            name: "named ClusterQueue lists nothing, named check",
            settings: GateSettings { admission_check: Some(CHECK.into()), ..named_cq(&["team-b"]) },
            facts: with_cqs(vec![cq("team-b", &[])]),
            verdict: Verdict::No,
            cluster_queue: Some("team-b"),
            admission_check: Some(CHECK),
            outcomes: [fail("ClusterQueue team-b does not list AdmissionCheck dispatch"), pass(), pass(), pass()],
            reason: Some("ClusterQueue team-b does not list AdmissionCheck dispatch"),
        },
        Case {
            name: "named ClusterQueue does not exist",
            settings: named_cq(&["team-z"]),
            facts: healthy(),
            verdict: Verdict::No,
            cluster_queue: Some("team-z"),
            admission_check: Some(CHECK),
            outcomes: [fail("ClusterQueue team-z does not exist"), pass(), pass(), pass()],
            reason: Some("ClusterQueue team-z does not exist"),
        },
        Case {
            name: "wrong controllerName with --admission-check",
            settings: named_check(CHECK),
            facts: with_acs(vec![ac(CHECK, Some("example.com/other"), active_true())]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                fail("AdmissionCheck dispatch names controller \"example.com/other\", not dispatch-admission"),
                pass(),
                pass(),
            ],
            reason: Some("AdmissionCheck dispatch names controller \"example.com/other\", not dispatch-admission"),
        },
        Case {
            name: "no controllerName with --admission-check",
            settings: named_check(CHECK),
            facts: with_acs(vec![ac(CHECK, None, active_true())]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                fail("AdmissionCheck dispatch names controller \"\", not dispatch-admission"),
                pass(),
                pass(),
            ],
            reason: Some("AdmissionCheck dispatch names controller \"\", not dispatch-admission"),
        },
        Case {
            name: "wrong controllerName without --admission-check finds no check",
            settings: GateSettings::default(),
            facts: with_acs(vec![ac(CHECK, Some("example.com/other"), active_true())]),
            verdict: Verdict::No,
            cluster_queue: None,
            admission_check: None,
            outcomes: [fail(NO_CQ_LISTS), fail(NO_AC_TO_JUDGE), fail(NO_AC_TO_JUDGE), pass()],
            reason: Some(NO_CQ_LISTS),
        },
        Case {
            name: "AdmissionCheck missing",
            settings: named_check(CHECK),
            facts: with_acs(vec![ac("provisioning", Some("kueue.x-k8s.io/prov"), active_true())]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                fail("AdmissionCheck dispatch does not exist"),
                fail("AdmissionCheck dispatch does not exist"),
                pass(),
            ],
            reason: Some("AdmissionCheck dispatch does not exist"),
        },
        Case {
            name: "Active False",
            settings: GateSettings::default(),
            facts: with_acs(vec![ac(
                CHECK,
                Some(CONTROLLER),
                Some(condition("False", Some("ControllerDown"), Some("no leader"))),
            )]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                pass(),
                fail("AdmissionCheck dispatch is not Active (Active=False, ControllerDown: no leader)"),
                pass(),
            ],
            reason: Some("AdmissionCheck dispatch is not Active (Active=False, ControllerDown: no leader)"),
        },
        Case {
            name: "Active Unknown without reason or message",
            settings: GateSettings::default(),
            facts: with_acs(vec![ac(CHECK, Some(CONTROLLER), Some(condition("Unknown", None, None)))]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), fail("AdmissionCheck dispatch is not Active (Active=Unknown)"), pass()],
            reason: Some("AdmissionCheck dispatch is not Active (Active=Unknown)"),
        },
        Case {
            name: "Active missing",
            settings: GateSettings::default(),
            facts: with_acs(vec![ac(CHECK, Some(CONTROLLER), None)]),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), fail("AdmissionCheck dispatch has no Active condition"), pass()],
            reason: Some("AdmissionCheck dispatch has no Active condition"),
        },
        Case {
            name: "Lease stale",
            settings: GateSettings::default(),
            // 46.1s reads 47s: an age judged against a limit is rounded up to whole seconds.
            facts: with_lease(Fetched::Found(lease_renewed(secs(46) + SignedDuration::from_millis(100)))),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail(LEASE_STALE_47S)],
            reason: Some(LEASE_STALE_47S),
        },
        Case {
            name: "Lease has no holder (released)",
            settings: GateSettings::default(),
            facts: with_lease(Fetched::Found(LeaseFacts {
                holder: Some(String::new()),
                duration_seconds: Some(1),
                ..lease_renewed(secs(2))
            })),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail(LEASE_NO_HOLDER)],
            reason: Some(LEASE_NO_HOLDER),
        },
        Case {
            name: "Lease never renewed",
            settings: GateSettings::default(),
            facts: with_lease(Fetched::Found(LeaseFacts { renew_time: None, ..lease_renewed(secs(2)) })),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail(LEASE_NEVER_RENEWED)],
            reason: Some(LEASE_NEVER_RENEWED),
        },
        Case {
            name: "Lease without leaseDurationSeconds was never renewed",
            settings: GateSettings::default(),
            facts: with_lease(Fetched::Found(LeaseFacts { duration_seconds: None, ..lease_renewed(secs(2)) })),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail(LEASE_NEVER_RENEWED)],
            reason: Some(LEASE_NEVER_RENEWED),
        },
        Case {
            name: "Lease missing",
            settings: GateSettings::default(),
            facts: with_lease(Fetched::Missing),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail(LEASE_MISSING)],
            reason: Some(LEASE_MISSING),
        },
        Case {
            name: "Lease missing under --lease names the Lease asked for",
            settings: GateSettings { lease: "ops/ctl".parse().unwrap(), ..GateSettings::default() },
            facts: with_lease(Fetched::Missing),
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), fail("Lease ops/ctl does not exist")],
            reason: Some("Lease ops/ctl does not exist"),
        },
        Case {
            name: "the first failing check decides (Active False, Lease missing)",
            settings: GateSettings::default(),
            facts: GateFacts {
                lease: Fetched::Missing,
                ..with_acs(vec![ac(CHECK, Some(CONTROLLER), Some(condition("False", None, Some("stopped"))))])
            },
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                pass(),
                fail("AdmissionCheck dispatch is not Active (Active=False: stopped)"),
                fail(LEASE_MISSING),
            ],
            reason: Some("AdmissionCheck dispatch is not Active (Active=False: stopped)"),
        },
        Case {
            name: "the first failing check decides (wrong controller, Active missing, Lease stale)",
            settings: named_check(CHECK),
            facts: GateFacts {
                lease: Fetched::Found(lease_renewed(secs(47))),
                ..with_acs(vec![ac(CHECK, Some("x"), None)])
            },
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                fail("AdmissionCheck dispatch names controller \"x\", not dispatch-admission"),
                fail("AdmissionCheck dispatch has no Active condition"),
                fail(LEASE_STALE_47S),
            ],
            reason: Some("AdmissionCheck dispatch names controller \"x\", not dispatch-admission"),
        },
        Case {
            name: "a failure beats a forbidden read (Lease forbidden, Active False)",
            settings: GateSettings::default(),
            facts: GateFacts {
                lease: forbidden(LEASE_RULE),
                ..with_acs(vec![ac(CHECK, Some(CONTROLLER), Some(condition("False", Some("Stopped"), None)))])
            },
            verdict: Verdict::No,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [
                pass(),
                pass(),
                fail("AdmissionCheck dispatch is not Active (Active=False, Stopped)"),
                unknown(LEASE_RULE),
            ],
            reason: Some("AdmissionCheck dispatch is not Active (Active=False, Stopped)"),
        },
        Case {
            name: "a later failure also beats an earlier forbidden read",
            settings: GateSettings::default(),
            facts: GateFacts { cluster_queues: forbidden(CQ_RULE), lease: Fetched::Missing, ..healthy() },
            verdict: Verdict::No,
            cluster_queue: None,
            admission_check: Some(CHECK),
            outcomes: [unknown(CQ_RULE), pass(), pass(), fail(LEASE_MISSING)],
            reason: Some(LEASE_MISSING),
        },
        Case {
            name: "Lease forbidden alone",
            settings: GateSettings::default(),
            facts: with_lease(forbidden(LEASE_RULE)),
            verdict: Verdict::Unknown,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), unknown(LEASE_RULE)],
            reason: Some(
                "Lease is a live heartbeat: cannot be read without RBAC: get leases in namespace dispatch-system",
            ),
        },
        Case {
            name: "ClusterQueue list forbidden",
            settings: GateSettings::default(),
            facts: GateFacts { cluster_queues: forbidden(CQ_RULE), ..healthy() },
            verdict: Verdict::Unknown,
            cluster_queue: None,
            admission_check: Some(CHECK),
            outcomes: [unknown(CQ_RULE), pass(), pass(), pass()],
            reason: Some(
                "ClusterQueue lists the AdmissionCheck: cannot be read without RBAC: list clusterqueues.kueue.x-k8s.io",
            ),
        },
        Case {
            name: "ClusterQueue list forbidden, named ClusterQueue",
            settings: named_cq(&["team-a"]),
            facts: GateFacts { cluster_queues: forbidden(CQ_RULE), ..healthy() },
            verdict: Verdict::Unknown,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [unknown(CQ_RULE), pass(), pass(), pass()],
            reason: Some(
                "ClusterQueue lists the AdmissionCheck: cannot be read without RBAC: list clusterqueues.kueue.x-k8s.io",
            ),
        },
        Case {
            name: "AdmissionCheck list forbidden, named check",
            settings: named_check(CHECK),
            facts: GateFacts { admission_checks: forbidden(AC_RULE), ..healthy() },
            verdict: Verdict::Unknown,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), unknown(AC_RULE), unknown(AC_RULE), pass()],
            reason: Some(
                "check names dispatch's controller: cannot be read without RBAC: list admissionchecks.kueue.x-k8s.io",
            ),
        },
        Case {
            name: "AdmissionCheck list forbidden, named ClusterQueue that lists checks",
            settings: named_cq(&["team-a"]),
            facts: GateFacts { admission_checks: forbidden(AC_RULE), ..healthy() },
            verdict: Verdict::Unknown,
            cluster_queue: Some("team-a"),
            admission_check: None,
            outcomes: [unknown(AC_RULE), unknown(AC_RULE), unknown(AC_RULE), pass()],
            reason: Some(
                "ClusterQueue lists the AdmissionCheck: cannot be read without RBAC: list admissionchecks.kueue.x-k8s.io",
            ),
        },
        Case {
            name: "--controller-name changes what is dispatch's",
            settings: GateSettings { controller_name: "example.com/dispatch".into(), ..GateSettings::default() },
            facts: with_acs(vec![ac(CHECK, Some("example.com/dispatch"), active_true())]),
            verdict: Verdict::Yes,
            cluster_queue: Some("team-a"),
            admission_check: Some(CHECK),
            outcomes: [pass(), pass(), pass(), pass()],
            reason: None,
        },
    ]
}

fn evaluate(settings: &GateSettings, facts: &GateFacts) -> GateReport {
    gate::evaluate(settings, facts, now())
}

#[test]
fn every_case_gives_its_chain() {
    let cases = cases();
    let mut names = BTreeSet::new();
    for case in &cases {
        assert!(names.insert(case.name), "duplicate case {}", case.name);
        let report = evaluate(&case.settings, &case.facts);
        assert_eq!(report.chains.len(), 1, "{}: one chain", case.name);
        assert_chain(case.name, &report.chains[0], case);
        assert_eq!(report.verdict, case.verdict, "{}: report verdict", case.name);
    }
}

#[test]
fn the_deciding_reason_is_the_first_failing_checks() {
    for case in cases() {
        let chain = &evaluate(&case.settings, &case.facts).chains[0];
        let first_fail = chain.checks.iter().find_map(|c| match &c.outcome {
            Outcome::Fail(r) => Some(r.clone()),
            _ => None,
        });
        if let Some(reason) = first_fail {
            assert_eq!(chain.reason, Some(reason), "{}", case.name);
            assert_eq!(chain.verdict, Verdict::No, "{}", case.name);
        }
    }
}

#[test]
fn the_lease_assessment_and_dispatch_checks_are_reported() {
    let report = evaluate(&GateSettings::default(), &healthy());
    assert!(matches!(
        report.lease.state,
        LeaseState::Fresh { age, limit, stale_in }
            if age == secs(4) && limit == secs(30) && stale_in == secs(26)
    ));
    assert_eq!(report.lease.lease.to_string(), "dispatch-system/dispatch-admission");
    assert_eq!(report.dispatch_checks, BTreeSet::from([CHECK.to_string()]));
    let heartbeat = &report.chains[0].checks[3];
    assert_eq!(heartbeat.detail, format!("holder {HOLDER}, renewed 4s ago, limit 30s, stale in 26s"));
}

#[test]
fn several_cluster_queues_give_chains_sorted_by_name_and_the_worst_verdict() {
    // Listed out of order; team-c uses a second dispatch check that is not Active.
    let acs =
        vec![dispatch_ac(READY), ac("dispatch-gpu", Some(CONTROLLER), Some(condition("False", Some("Stopped"), None)))];
    let cqs = vec![
        cq("team-c", &["dispatch-gpu"]),
        cq("team-a", &[CHECK]),
        cq("unrelated", &["provisioning"]),
        cq("team-b", &["provisioning", CHECK]),
    ];
    let facts = GateFacts {
        cluster_queues: Fetched::Found(cqs.clone()),
        admission_checks: Fetched::Found(acs.clone()),
        lease: fresh_lease(),
        holder: None,
    };
    let report = evaluate(&GateSettings::default(), &facts);
    let names: Vec<_> = report.chains.iter().map(|c| c.cluster_queue.as_deref().unwrap()).collect();
    assert_eq!(names, ["team-a", "team-b", "team-c"]);
    let checks: Vec<_> = report.chains.iter().map(|c| c.admission_check.as_deref().unwrap()).collect();
    assert_eq!(checks, [CHECK, CHECK, "dispatch-gpu"]);
    let verdicts: Vec<_> = report.chains.iter().map(|c| c.verdict).collect();
    assert_eq!(verdicts, [Verdict::Yes, Verdict::Yes, Verdict::No]);
    assert_eq!(report.verdict, Verdict::No, "no beats yes");
    assert_eq!(report.dispatch_checks, BTreeSet::from([CHECK.to_string(), "dispatch-gpu".to_string()]));

    // Named ClusterQueues keep the order they were asked for.
    let report = evaluate(&named_cq(&["team-b", "team-a"]), &facts);
    let names: Vec<_> = report.chains.iter().map(|c| c.cluster_queue.as_deref().unwrap()).collect();
    assert_eq!(names, ["team-b", "team-a"]);
    assert_eq!(report.verdict, Verdict::Yes);

    // No beats Unknown: one ClusterQueue fails, the Lease is forbidden for all.
    let facts = GateFacts { lease: forbidden(LEASE_RULE), ..facts };
    let report = evaluate(&GateSettings::default(), &facts);
    let verdicts: Vec<_> = report.chains.iter().map(|c| c.verdict).collect();
    assert_eq!(verdicts, [Verdict::Unknown, Verdict::Unknown, Verdict::No]);
    assert_eq!(report.verdict, Verdict::No);

    // Every source of *unknown* (the Lease, either list) is shared by all chains, so one
    // report cannot mix yes and unknown chains; with nothing failing, unknown is the verdict.
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK]), cq("team-b", &[CHECK])]),
        admission_checks: Fetched::Found(acs),
        lease: forbidden(LEASE_RULE),
        holder: None,
    };
    let report = evaluate(&GateSettings::default(), &facts);
    assert_eq!(report.chains.iter().map(|c| c.verdict).collect::<Vec<_>>(), [Verdict::Unknown, Verdict::Unknown]);
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(Verdict::worst([Verdict::Yes, report.verdict, Verdict::Yes]), Verdict::Unknown, "unknown beats yes");

    // With the AdmissionCheck list forbidden, a named queue that lists checks is unknown,
    // while one that lists none is a proven failure, and no beats unknown.
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK]), cq("team-b", &[])]),
        admission_checks: forbidden(AC_RULE),
        lease: fresh_lease(),
        holder: None,
    };
    let report = evaluate(&named_cq(&["team-a", "team-b"]), &facts);
    assert_eq!(report.chains.iter().map(|c| c.verdict).collect::<Vec<_>>(), [Verdict::Unknown, Verdict::No]);
    assert_eq!(report.verdict, Verdict::No);
}

#[test]
fn exactly_twice_the_duration_passes_and_a_microsecond_more_fails() {
    let at_limit = with_lease(Fetched::Found(lease_renewed(secs(30))));
    let report = evaluate(&GateSettings::default(), &at_limit);
    assert_eq!(report.verdict, Verdict::Yes);
    assert_eq!(report.chains[0].checks[3].outcome, Outcome::Pass);
    assert!(matches!(
        report.lease.state,
        LeaseState::Fresh { stale_in, .. } if stale_in.is_zero()
    ));

    let past = with_lease(Fetched::Found(lease_renewed(secs(30) + SignedDuration::from_micros(1))));
    let report = evaluate(&GateSettings::default(), &past);
    assert_eq!(report.verdict, Verdict::No);
    // Past the limit by a microsecond reads past it: the age is rounded up.
    let reason = "the admission controller's Lease was last renewed 31s ago, beyond 30s";
    assert_eq!(report.chains[0].checks[3].outcome, fail(reason));
    assert_eq!(report.chains[0].reason.as_deref(), Some(reason));
    assert!(matches!(
        report.lease.state,
        LeaseState::Stale { stale_for, .. } if stale_for == SignedDuration::from_micros(1)
    ));

    // The limit follows the Lease's own duration.
    let long = with_lease(Fetched::Found(LeaseFacts { duration_seconds: Some(60), ..lease_renewed(secs(120)) }));
    assert_eq!(evaluate(&GateSettings::default(), &long).verdict, Verdict::Yes);
    let long = with_lease(Fetched::Found(LeaseFacts { duration_seconds: Some(60), ..lease_renewed(secs(121)) }));
    assert_eq!(
        evaluate(&GateSettings::default(), &long).chains[0].reason.as_deref(),
        Some("the admission controller's Lease was last renewed 2m1s ago, beyond 2m")
    );
}

#[test]
fn a_renew_time_in_the_future_passes() {
    let facts = with_lease(Fetched::Found(lease_renewed(secs(-5))));
    assert_eq!(evaluate(&GateSettings::default(), &facts).verdict, Verdict::Yes);
}

/// Without `--admission-check`, dispatch's checks are found through the AdmissionCheck list.
/// When that list is forbidden nothing can be identified, so "no ClusterQueue lists" is not
/// proven: the gate cannot be judged, which should be *unknown*, not *no*.
#[test]

fn admission_check_list_forbidden_in_auto_discovery_is_unknown() {
    let facts = GateFacts { admission_checks: forbidden(AC_RULE), ..healthy() };
    let report = evaluate(&GateSettings::default(), &facts);
    assert_eq!(report.verdict, Verdict::Unknown, "{:#?}", report.chains);
}

// ---------------------------------------------------------------------------------------------
// Kueue's remaining shapes: several of dispatch's checks on one ClusterQueue, onFlavors, and
// Kueue's own Active condition on the ClusterQueue
// ---------------------------------------------------------------------------------------------

const GPU: &str = "dispatch-gpu";

fn inactive(name: &str, reason: &str) -> AdmissionCheck {
    ac(name, Some(CONTROLLER), Some(condition("False", Some(reason), Some("the controller stopped"))))
}

/// Every order of the ClusterQueue's list and of the AdmissionCheck list gives the same report.
fn in_every_order(settings: &GateSettings, checks: &[&str], acs: Vec<AdmissionCheck>) -> GateReport {
    let mut reports = Vec::new();
    for listed in [checks.to_vec(), checks.iter().rev().copied().collect()] {
        for acs in [acs.clone(), acs.iter().rev().cloned().collect()] {
            let facts = GateFacts { cluster_queues: Fetched::Found(vec![cq("team-a", &listed)]), ..with_acs(acs) };
            reports.push(evaluate(settings, &facts));
        }
    }
    for r in &reports[1..] {
        assert_eq!(r, &reports[0], "the report depends on the order of the lists");
    }
    reports.remove(0)
}

#[test]
fn several_of_dispatchs_checks_on_one_cluster_queue_are_each_judged_in_any_order() {
    // Both Active: one chain for the ClusterQueue, both checks judged, yes.
    let report = in_every_order(
        &GateSettings::default(),
        &[GPU, CHECK],
        vec![dispatch_ac(READY), ac(GPU, Some(CONTROLLER), active_true())],
    );
    assert_eq!(report.chains.len(), 1);
    let chain = &report.chains[0];
    assert_eq!(chain.verdict, Verdict::Yes);
    assert_eq!(chain.admission_checks, [CHECK, GPU]);
    assert_eq!(chain.admission_check.as_deref(), Some(CHECK), "with nothing failing, the first by name");
    assert_eq!(chain.checks[0].detail, "team-a lists dispatch and dispatch-gpu");
    assert_eq!(chain.checks[1].detail, "dispatch names dispatch-admission; dispatch-gpu names dispatch-admission");
    assert_eq!(
        chain.checks[2].detail,
        "dispatch: Active=True, Active: the controller is ready; dispatch-gpu: Active=True, Active: the controller is ready"
    );
    assert_eq!(report.dispatch_checks, BTreeSet::from([CHECK.to_string(), GPU.to_string()]));

    // One not Active: the ClusterQueue's chain fails on it, whichever order either list has.
    let report =
        in_every_order(&GateSettings::default(), &[CHECK, GPU], vec![dispatch_ac(READY), inactive(GPU, "Stopped")]);
    let chain = &report.chains[0];
    let reason = "AdmissionCheck dispatch-gpu is not Active (Active=False, Stopped: the controller stopped)";
    assert_eq!((chain.verdict, chain.reason.as_deref()), (Verdict::No, Some(reason)));
    assert_eq!(chain.admission_check.as_deref(), Some(GPU), "the check that decides");
    assert_eq!(chain.checks[1].outcome, pass());
    assert_eq!(chain.checks[2].outcome, fail(reason));
    assert_eq!(
        chain.checks[2].detail,
        "dispatch: Active=True, Active: the controller is ready; dispatch-gpu: Active=False, Stopped: the controller stopped"
    );

    // Both down: the first by name gives the reason.
    let report = in_every_order(
        &GateSettings::default(),
        &[GPU, CHECK],
        vec![inactive(GPU, "Stopped"), inactive(CHECK, "Down")],
    );
    assert_eq!(
        report.chains[0].reason.as_deref(),
        Some("AdmissionCheck dispatch is not Active (Active=False, Down: the controller stopped)")
    );
    assert_eq!(report.chains[0].admission_check.as_deref(), Some(CHECK));

    // A ClusterQueue listing one of them judges that one alone.
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK]), cq("team-gpu", &[GPU])]),
        ..with_acs(vec![dispatch_ac(READY), inactive(GPU, "Stopped")])
    };
    let report = evaluate(&GateSettings::default(), &facts);
    let judged: Vec<_> = report.chains.iter().map(|c| (c.admission_checks.clone(), c.verdict)).collect();
    assert_eq!(judged, [(vec![CHECK.to_string()], Verdict::Yes), (vec![GPU.to_string()], Verdict::No)]);
}

#[test]
fn with_several_of_dispatchs_checks_the_detail_never_says_none_found() {
    let acs = vec![dispatch_ac(READY), inactive(GPU, "Stopped")];
    let cases: Vec<(&str, GateSettings, GateFacts)> = vec![
        (
            "no ClusterQueue lists them",
            GateSettings::default(),
            GateFacts { cluster_queues: Fetched::Found(vec![cq("batch", &[])]), ..with_acs(acs.clone()) },
        ),
        ("the named ClusterQueue does not exist", named_cq(&["team-z"]), with_acs(acs.clone())),
        (
            "the named ClusterQueue lists none of them",
            named_cq(&["batch"]),
            GateFacts { cluster_queues: Fetched::Found(vec![cq("batch", &["provisioning"])]), ..with_acs(acs.clone()) },
        ),
        (
            "the ClusterQueue list is forbidden",
            GateSettings::default(),
            GateFacts { cluster_queues: forbidden(CQ_RULE), ..with_acs(acs.clone()) },
        ),
    ];
    for (name, settings, facts) in cases {
        let report = evaluate(&settings, &facts);
        let chain = &report.chains[0];
        for check in &chain.checks {
            assert!(
                !check.detail.contains("none found") && !check.detail.contains("no AdmissionCheck identified"),
                "{name}: {check:?}"
            );
            assert!(!matches!(&check.outcome, Outcome::Fail(r) if r.contains("none found")), "{name}: {check:?}");
        }
        assert_eq!(chain.admission_checks, [CHECK, GPU], "{name}: both are judged");
        assert_eq!(
            chain.checks[1].detail, "dispatch names dispatch-admission; dispatch-gpu names dispatch-admission",
            "{name}"
        );
        assert_eq!(
            chain.checks[2].outcome,
            fail("AdmissionCheck dispatch-gpu is not Active (Active=False, Stopped: the controller stopped)"),
            "{name}"
        );
        assert_ne!(chain.verdict, Verdict::Yes, "{name}");
    }
    // "none found" is kept for when there is none.
    let report = evaluate(&GateSettings::default(), &with_acs(vec![]));
    assert_eq!(report.chains[0].checks[1].outcome, fail(NO_AC_TO_JUDGE));
}

#[test]
fn on_flavors_show_in_the_detail_of_check_1() {
    let mut queue = cq("team-a", &[GPU, CHECK, "provisioning"]);
    queue.admission_checks[0].on_flavors = vec!["gpu-a".into(), "gpu-b".into()];
    queue.admission_checks[2].on_flavors = vec!["spot".into()];
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![queue]),
        ..with_acs(vec![dispatch_ac(READY), ac(GPU, Some(CONTROLLER), active_true())])
    };
    let chain = &evaluate(&GateSettings::default(), &facts).chains[0];
    assert_eq!(chain.checks[0].outcome, pass());
    assert_eq!(chain.checks[0].detail, "team-a lists dispatch and dispatch-gpu (onFlavors: gpu-a, gpu-b)");
    assert_eq!(
        chain.rules,
        [
            CheckRule { name: CHECK.into(), on_flavors: vec![] },
            CheckRule { name: GPU.into(), on_flavors: vec!["gpu-a".into(), "gpu-b".into()] },
        ],
        "dispatch's rules only, by name"
    );
    assert_eq!(chain.verdict, Verdict::Yes, "onFlavors narrows which Workloads wait, not whether the gate holds");

    let mut one = cq("team-b", &[CHECK]);
    one.admission_checks[0].on_flavors = vec!["default-flavor".into()];
    let chain = &evaluate(&GateSettings::default(), &with_cqs(vec![one])).chains[0];
    assert_eq!(chain.checks[0].detail, "team-b lists dispatch (onFlavors: default-flavor)");
}

#[test]
fn kueues_active_condition_on_the_cluster_queue_shows_beside_check_3_and_does_not_decide() {
    let kueue_says = |status: &str, reason: &str, message: &str| {
        let mut queue = cq("team-a", &[CHECK]);
        queue.active = Some(condition(status, Some(reason), Some(message)));
        queue
    };
    // Kueue stops the ClusterQueue because dispatch's check is not Active: check 3 fails on the
    // check itself, and Kueue's reason is beside it.
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![kueue_says(
            "False",
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): dispatch.",
        )]),
        ..with_acs(vec![inactive(CHECK, "Stopped")])
    };
    let chain = &evaluate(&GateSettings::default(), &facts).chains[0];
    assert_eq!(
        chain.checks[2].outcome,
        fail("AdmissionCheck dispatch is not Active (Active=False, Stopped: the controller stopped)")
    );
    assert_eq!(
        chain.checks[2].detail,
        "Active=False, Stopped: the controller stopped; ClusterQueue team-a: Active=False, AdmissionCheckInactive: Can't admit new workloads: references inactive AdmissionCheck(s): dispatch."
    );
    assert_eq!(chain.cluster_queue_active.as_ref().map(|c| c.reason.as_deref()), Some(Some("AdmissionCheckInactive")));

    // Kueue stopped the ClusterQueue for its own reasons: shown, but dispatch's gate holds.
    let facts = with_cqs(vec![kueue_says("False", "Stopped", "Can't admit new workloads: is stopped.")]);
    let report = evaluate(&GateSettings::default(), &facts);
    assert_eq!(report.verdict, Verdict::Yes);
    assert_eq!(report.chains[0].checks[2].outcome, pass());
    assert_eq!(
        report.chains[0].checks[2].detail,
        "Active=True, Active: the controller is ready; ClusterQueue team-a: Active=False, Stopped: Can't admit new workloads: is stopped."
    );

    // Ready, and beside a check that could not be read.
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![kueue_says("True", "Ready", "Can admit new workloads")]),
        admission_checks: forbidden(AC_RULE),
        lease: fresh_lease(),
        holder: None,
    };
    let chain = &evaluate(&named_cq(&["team-a"]), &facts).chains[0];
    assert_eq!(chain.checks[2].outcome, unknown(AC_RULE));
    assert_eq!(
        chain.checks[2].detail,
        "may not read AdmissionChecks; ClusterQueue team-a: Active=True, Ready: Can admit new workloads"
    );

    // A ClusterQueue Kueue has not reported on shows nothing more.
    let chain = &evaluate(&GateSettings::default(), &healthy()).chains[0];
    assert_eq!(
        (chain.checks[2].detail.as_str(), &chain.cluster_queue_active),
        ("Active=True, Active: the controller is ready", &None)
    );
}

// ---------------------------------------------------------------------------------------------
// The wire layer: both ClusterQueue shapes become one
// ---------------------------------------------------------------------------------------------

fn wire_cq(json: &str) -> ClusterQueue {
    let o: WireClusterQueue = serde_json::from_str(json).unwrap();
    wire::cluster_queue(&o)
}

#[test]
fn v1beta1_cluster_queues_list_checks_in_spec_admission_checks() {
    let q = wire_cq(
        r#"{
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "team-a", "uid": "1", "resourceVersion": "7"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": []}],
                "admissionChecks": ["dispatch", "provisioning"]
            },
            "status": {"pendingWorkloads": 3}
        }"#,
    );
    assert_eq!(q, cq("team-a", &["dispatch", "provisioning"]));
}

#[test]
fn v1beta2_cluster_queues_list_checks_in_the_strategy() {
    let q = wire_cq(
        r#"{
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "team-b"},
            "spec": {
                "admissionChecksStrategy": {
                    "admissionChecks": [
                        {"name": "dispatch", "onFlavors": ["default"]},
                        {"name": "provisioning"}
                    ]
                }
            }
        }"#,
    );
    let mut want = cq("team-b", &["dispatch", "provisioning"]);
    want.admission_checks[0].on_flavors = vec!["default".into()];
    assert_eq!(q, want);
}

#[test]
fn v1beta1_strategies_keep_on_flavors_and_the_status_gives_kueues_active_condition() {
    // v1beta1 has admissionChecksStrategy too (Kueue refuses it beside spec.admissionChecks).
    let q = wire_cq(
        r#"{
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "team-c"},
            "spec": {
                "admissionChecksStrategy": {
                    "admissionChecks": [{"name": "dispatch-gpu", "onFlavors": ["gpu-a", "gpu-b"]}, {"name": "dispatch"}]
                }
            },
            "status": {
                "pendingWorkloads": 2,
                "conditions": [
                    {"type": "Other", "status": "True", "reason": "X", "message": "y", "lastTransitionTime": "2026-11-30T11:00:00Z"},
                    {"type": "Active", "status": "False", "reason": "AdmissionCheckInactive",
                     "message": "Can't admit new workloads: references inactive AdmissionCheck(s): dispatch-gpu.",
                     "lastTransitionTime": "2026-11-30T11:00:00Z", "observedGeneration": 3}
                ]
            }
        }"#,
    );
    assert_eq!(
        q.admission_checks,
        [
            CheckRule { name: "dispatch-gpu".into(), on_flavors: vec!["gpu-a".into(), "gpu-b".into()] },
            CheckRule { name: "dispatch".into(), on_flavors: vec![] },
        ]
    );
    assert_eq!(
        q.active,
        Some(Condition {
            status: "False".into(),
            reason: Some("AdmissionCheckInactive".into()),
            message: Some("Can't admit new workloads: references inactive AdmissionCheck(s): dispatch-gpu.".into()),
            last_transition: Some("2026-11-30T11:00:00Z".parse().unwrap()),
        })
    );
}

#[test]
fn cluster_queues_without_checks_or_spec_list_none() {
    for json in [
        r#"{"metadata": {"name": "q"}, "spec": {}}"#,
        r#"{"metadata": {"name": "q"}, "spec": {"admissionChecksStrategy": {}}}"#,
        r#"{"metadata": {"name": "q"}, "spec": {"admissionChecks": []}}"#,
    ] {
        assert_eq!(wire_cq(json), cq("q", &[]), "{json}");
    }
}

#[test]
fn both_shapes_judge_alike() {
    let v1beta1 = wire_cq(r#"{"metadata": {"name": "team-a"}, "spec": {"admissionChecks": ["dispatch"]}}"#);
    let v1beta2 = wire_cq(
        r#"{"metadata": {"name": "team-a"},
            "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "dispatch"}]}}}"#,
    );
    let judge = |q: ClusterQueue| {
        let report = evaluate(&GateSettings::default(), &with_cqs(vec![q]));
        (report.verdict, report.chains[0].checks[0].clone())
    };
    let a = judge(v1beta1);
    assert_eq!(a.0, Verdict::Yes);
    assert_eq!(a.1.detail, "team-a lists dispatch");
    assert_eq!(a, judge(v1beta2));
}

// ---------------------------------------------------------------------------------------------
// Waiting Workloads
// ---------------------------------------------------------------------------------------------

fn check_state(name: &str, state: &str, message: &str) -> CheckState {
    facts::check_state(name, state, message, secs(90))
}

fn scope(all_states: bool) -> WaitingScope {
    WaitingScope { checks: BTreeSet::from([CHECK.to_string()]), cluster_queues: BTreeSet::new(), all_states }
}

fn states(rows: &[Waiting]) -> Vec<(String, String, bool)> {
    rows.iter().map(|w| (w.name.clone(), w.state.clone(), w.quota_reserved)).collect()
}

#[test]
fn quota_reserved_and_pending_is_selected() {
    let w =
        workload("ml", "train-1", Some("team-a"), vec![check_state(CHECK, "Pending", "waiting for the controller")]);
    let rows = waiting::select(&w, &scope(false));
    assert_eq!(
        rows,
        [Waiting {
            namespace: "ml".into(),
            name: "train-1".into(),
            cluster_queue: Some("team-a".into()),
            queue_name: Some("user-queue".into()),
            check: CHECK.into(),
            state: "Pending".into(),
            quota_reserved: true,
            since: Some(ago(secs(90))),
            message: "waiting for the controller".into(),
        }]
    );
    assert!(rows[0].is_stalled());
}

#[test]
fn ready_is_never_selected_and_other_checks_are_ignored() {
    let w = workload(
        "ml",
        "train-1",
        Some("team-a"),
        vec![check_state(CHECK, "Ready", ""), check_state("provisioning", "Pending", "")],
    );
    for all in [false, true] {
        assert_eq!(waiting::select(&w, &scope(all)), [], "all_states={all}");
    }
}

#[test]
fn retry_rejected_and_pending_without_quota_only_with_all_states() {
    let cases = [(Some("team-a"), "Retry"), (Some("team-a"), "Rejected"), (None, "Pending")];
    for (reserved, state) in cases {
        let w = workload("ml", "w", reserved, vec![check_state(CHECK, state, "m")]);
        assert_eq!(waiting::select(&w, &scope(false)), [], "{state} {reserved:?}");
        let rows = waiting::select(&w, &scope(true));
        assert_eq!(states(&rows), [("w".into(), state.into(), reserved.is_some())], "{state} {reserved:?}");
        assert!(!rows[0].is_stalled(), "{state} {reserved:?}");
    }
}

#[test]
fn every_dispatch_check_of_a_workload_is_an_entry() {
    let w = workload(
        "ml",
        "w",
        Some("team-a"),
        vec![check_state("dispatch-gpu", "Pending", ""), check_state(CHECK, "Pending", "")],
    );
    let scope =
        WaitingScope { checks: BTreeSet::from([CHECK.to_string(), "dispatch-gpu".to_string()]), ..scope(false) };
    let rows = waiting::finish(waiting::select(&w, &scope), &[], &scope);
    let checks: Vec<_> = rows.iter().map(|r| r.check.as_str()).collect();
    assert_eq!(checks, [CHECK, "dispatch-gpu"], "sorted by check last");
}

fn local_queue(ns: &str, name: &str, cq: &str) -> LocalQueue {
    LocalQueue { namespace: ns.into(), name: name.into(), cluster_queue: cq.into() }
}

#[test]
fn the_cluster_queue_comes_through_the_local_queue_without_admission() {
    let scope = scope(true);
    let mut w = workload("ml", "w", None, vec![check_state(CHECK, "Pending", "")]);
    w.queue_name = Some("lq".into());
    let mut other_ns = w.clone();
    other_ns.namespace = "web".into();
    let mut no_queue = w.clone();
    no_queue.name = "x".into();
    no_queue.queue_name = None;
    let rows: Vec<Waiting> = [&w, &other_ns, &no_queue].into_iter().flat_map(|w| waiting::select(w, &scope)).collect();
    let lqs = [local_queue("ml", "lq", "team-a"), local_queue("web", "other", "team-b")];
    let rows = waiting::finish(rows, &lqs, &scope);
    let got: Vec<_> =
        rows.iter().map(|r| (r.namespace.as_str(), r.name.as_str(), r.cluster_queue.as_deref())).collect();
    assert_eq!(got, [("ml", "w", Some("team-a")), ("ml", "x", None), ("web", "w", None)]);
}

#[test]
fn admission_wins_over_the_local_queue() {
    let scope = scope(false);
    let w = workload("ml", "w", Some("team-z"), vec![check_state(CHECK, "Pending", "")]);
    let rows = waiting::finish(waiting::select(&w, &scope), &[local_queue("ml", "user-queue", "team-a")], &scope);
    assert_eq!(rows[0].cluster_queue.as_deref(), Some("team-z"));
}

#[test]
fn rows_sort_by_namespace_then_name() {
    let scope = scope(false);
    let rows: Vec<Waiting> = [("b", "a"), ("a", "z"), ("a", "b"), ("b", "0")]
        .into_iter()
        .flat_map(|(ns, name)| {
            waiting::select(&workload(ns, name, Some("team-a"), vec![check_state(CHECK, "Pending", "")]), &scope)
        })
        .collect();
    let rows = waiting::finish(rows, &[], &scope);
    let got: Vec<_> = rows.iter().map(|r| (r.namespace.as_str(), r.name.as_str())).collect();
    assert_eq!(got, [("a", "b"), ("a", "z"), ("b", "0"), ("b", "a")]);
}

#[test]
fn cluster_queue_filter_keeps_only_named_queues() {
    let scope = WaitingScope { cluster_queues: BTreeSet::from(["team-a".to_string()]), ..scope(true) };
    let mut through_lq = workload("ml", "via-lq", None, vec![check_state(CHECK, "Pending", "")]);
    through_lq.queue_name = Some("lq".into());
    let mut unresolved = through_lq.clone();
    unresolved.name = "unresolved".into();
    unresolved.queue_name = Some("nope".into());
    let workloads = [
        workload("ml", "in-a", Some("team-a"), vec![check_state(CHECK, "Pending", "")]),
        workload("ml", "in-b", Some("team-b"), vec![check_state(CHECK, "Pending", "")]),
        through_lq,
        unresolved,
    ];
    let rows: Vec<Waiting> = workloads.iter().flat_map(|w| waiting::select(w, &scope)).collect();
    let rows = waiting::finish(rows, &[local_queue("ml", "lq", "team-a")], &scope);
    let names: Vec<_> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["in-a", "via-lq"]);
}

// ---------------------------------------------------------------------------------------------
// docs/design.md quotes the code's sentences
// ---------------------------------------------------------------------------------------------

/// Every reason and verdict sentence that `docs/design.md` quotes is what the code prints: each
/// case below is evaluated with names such as `<cq>` and `<controller>`, and the sentence it
/// gives must appear in the design, in backticks, exactly.
#[test]
fn the_design_quotes_every_reason_word_for_word() {
    let design = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/design.md")).expect("design");
    let quoted = |sentence: &str| {
        assert!(design.contains(&format!("`{sentence}`")), "docs/design.md does not quote `{sentence}`");
    };
    let ours = |cq_names: &[&str], check: Option<&str>| GateSettings {
        controller_name: "<controller>".into(),
        cluster_queues: cq_names.iter().map(|n| n.to_string()).collect(),
        admission_check: check.map(String::from),
        lease: LeaseRef { namespace: "<namespace>".into(), name: "<name>".into() },
        kueue_lease: LeaseRef::kueue_default(),
    };
    let facts = |cqs: Vec<ClusterQueue>, acs: Vec<AdmissionCheck>| GateFacts {
        cluster_queues: Fetched::Found(cqs),
        admission_checks: Fetched::Found(acs),
        lease: fresh_lease(),
        holder: None,
    };
    let fine = || ac("<check>", Some("<controller>"), active_true());
    let failure = |settings: &GateSettings, facts: &GateFacts, kind: CheckKind| -> String {
        let report = gate::evaluate(settings, facts, now());
        let check = report.chains[0].checks.iter().find(|c| c.kind == kind).expect("the check");
        match &check.outcome {
            Outcome::Fail(reason) => reason.clone(),
            other => panic!("{kind:?} did not fail: {other:?}"),
        }
    };

    // Check 1.
    let none = facts(vec![cq("other", &[])], vec![fine()]);
    quoted(&failure(&ours(&[], None), &none, CheckKind::Listed));
    quoted(&failure(&ours(&[], Some("<check>")), &none, CheckKind::Listed));
    quoted(&failure(&ours(&["<cq>"], None), &facts(vec![], vec![fine()]), CheckKind::Listed));
    let unlisted = facts(vec![cq("<cq>", &[])], vec![fine()]);
    quoted(&failure(&ours(&["<cq>"], None), &unlisted, CheckKind::Listed));
    quoted(&failure(&ours(&["<cq>"], Some("<check>")), &unlisted, CheckKind::Listed));

    // Check 2 (and 3 with the same sentences).
    let gone = facts(vec![cq("<cq>", &["<check>"])], vec![]);
    for kind in [CheckKind::Controller, CheckKind::Active] {
        quoted(&failure(&ours(&[], Some("<check>")), &gone, kind));
        quoted(&failure(&ours(&[], None), &facts(vec![], vec![]), kind));
    }
    let foreign = facts(vec![cq("<cq>", &["<check>"])], vec![ac("<check>", Some("<other>"), active_true())]);
    quoted(&failure(&ours(&[], Some("<check>")), &foreign, CheckKind::Controller));

    // Check 3.
    let listed = |active: Option<Condition>| {
        facts(vec![cq("<cq>", &["<check>"])], vec![ac("<check>", Some("<controller>"), active)])
    };
    let inactive = listed(Some(condition("<status>", Some("<reason>"), Some("<message>"))));
    quoted(&failure(&ours(&[], None), &inactive, CheckKind::Active));
    let bare = failure(&ours(&[], None), &listed(Some(condition("False", None, None))), CheckKind::Active);
    assert!(bare.ends_with("(Active=False)") && design.contains("`(Active=False)`"), "{bare}");
    quoted(&failure(&ours(&[], None), &listed(None), CheckKind::Active));

    // Check 4: the adapter's sentences.
    let lease_ref = LeaseRef { namespace: "<namespace>".into(), name: "<name>".into() };
    let reason = |fetched: Fetched<LeaseFacts>| {
        lease::assess(&lease_ref, &fetched, now()).state.reason(&lease_ref).expect("a reason")
    };
    quoted(&reason(Fetched::Found(LeaseFacts { holder: Some(String::new()), ..lease_renewed(secs(1)) })));
    quoted(&reason(Fetched::Found(LeaseFacts { renew_time: None, ..lease_renewed(secs(1)) })));
    let stale = reason(Fetched::Found(lease_renewed(secs(187))));
    quoted(&stale);
    quoted(&stale.replace("3m7s ago", "<age> ago").replace("beyond 30s", "beyond <limit>"));
    quoted(&reason(Fetched::Missing));

    // A forbidden read, and the verdict lines.
    let style = kubectl_dispatch::render::Style { color: false, live: false };
    let chain_of = |facts: &GateFacts| gate::evaluate(&ours(&[], None), facts, now()).chains.remove(0);
    let yes = chain_of(&listed(active_true()));
    quoted(&kubectl_dispatch::render::gate::verdict_line(&yes, style));
    let mut forbidden = listed(active_true());
    forbidden.lease = Fetched::Forbidden(Denied { rule: "<rule>".into() });
    let unknown = chain_of(&forbidden);
    let unknown_reason = unknown.reason.clone().expect("a reason");
    quoted(&unknown_reason.replace(CheckKind::Heartbeat.title(), "<check title>"));
    assert!(unknown_reason.starts_with("Lease is a live heartbeat: "), "{unknown_reason}");
    let golden = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/gate-lease-forbidden.txt"))
        .expect("golden");
    let example =
        golden.lines().find_map(|l| l.strip_prefix("ReadmissionGate: unknown (observe-only): ")).expect("line");
    quoted(example);
    for chain in [unknown, chain_of(&inactive)] {
        let reason = chain.reason.clone().expect("a reason");
        quoted(&kubectl_dispatch::render::gate::verdict_line(&chain, style).replace(&reason, "<reason>"));
    }
    for rule in
        ["list clusterqueues.kueue.x-k8s.io (cluster-wide)", "list admissionchecks.kueue.x-k8s.io (cluster-wide)"]
    {
        quoted(rule);
        let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/cluster/reading/fetch.rs"))
            .expect("fetch.rs");
        assert!(source.contains(&format!("{rule:?}")), "src/cluster/reading/fetch.rs no longer names {rule}");
    }
}

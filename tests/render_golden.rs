//! Golden files of every output format, for the `gate`, `lease`, `workload`, `workloads` and
//! `doctor` verbs.
//!
//! Each report is built through the public API (facts → `gate::evaluate` / `lease::assess`,
//! Workloads → `waiting::select` / `finish`) at a fixed instant, rendered into a buffer, and
//! compared with `tests/golden/<report>[-<format>].<ext>`. On a mismatch the test prints a line
//! diff and fails. With `UPDATE_GOLDEN=1` it rewrites the files instead (and passes):
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test --test render_golden
//! ```

mod facts;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use facts::{
    CHECK, CONTROLLER, ac, ago, check_state, cq, dispatch_ac, forbidden, kueue_condition, micros, now, secs, workload,
};
use kubectl_dispatch::core::doctor::{self, Access, Answer, DoctorFacts, Identity, KueueServed, QueueFacts};
use kubectl_dispatch::core::fetched::Fetched;
use kubectl_dispatch::core::gate::{self, GateFacts, GateSettings};
use kubectl_dispatch::core::holder::{HolderFacts, NodeFacts, PodFacts, Termination};
use kubectl_dispatch::core::kueue::{AdmissionCheck, CheckState, Condition, LocalQueue, Workload};
use kubectl_dispatch::core::kueue_lease;
use kubectl_dispatch::core::lease::{self, LeaseFacts, LeaseRef};
use kubectl_dispatch::core::lookalike;
use kubectl_dispatch::core::waiting::{self, WaitingScope};
use kubectl_dispatch::core::workload::{self, CheckDetail, PodSetUpdate, Position, WorkloadFacts, WorkloadInput};
use kubectl_dispatch::core::workloads::{self, ListFacts};
use kubectl_dispatch::invocation::Format;
use kubectl_dispatch::invocation::Output;
use kubectl_dispatch::render::{self, Style};
use kubectl_dispatch::report::doctor::DoctorRun;
use kubectl_dispatch::report::workload::WorkloadRun;
use kubectl_dispatch::report::workloads::WorkloadsRun;
use kubectl_dispatch::report::{GateRun, LeaseRun};
use kubectl_dispatch::text::sanitize::escape;

// ---------------------------------------------------------------------------------------------
// Fixed facts
// ---------------------------------------------------------------------------------------------

const HOLDER: &str = "dispatch-admission-7d9f8c6b5-x2kqp_6f1e0c4a";
const LEASE_RULE: &str = "get leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system";

const READY: &str = "the dispatch admission controller is ready";

/// The controller's Lease, renewed `s.us` seconds ago, with the default 15 s duration.
fn lease_facts(s: i64, us: i64) -> LeaseFacts {
    facts::lease(HOLDER, secs(s) + micros(us), secs(3 * 3600 + 12 * 60) + micros(517_000))
}

fn healthy_facts() -> GateFacts {
    GateFacts {
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK]), cq("batch", &[])]),
        admission_checks: Fetched::Found(vec![dispatch_ac(READY)]),
        lease: Fetched::Found(lease_facts(4, 250_000)),
        holder: None,
    }
}

fn stale_facts() -> GateFacts {
    GateFacts { lease: Fetched::Found(lease_facts(3 * 60 + 7, 400_000)), ..healthy_facts() }
}

/// An AdmissionCheck's Active condition, set a day ago.
fn active(status: &str, reason: &str, message: &str) -> Option<Condition> {
    Some(kueue_condition(status, Some(reason), Some(message), secs(86_400)))
}

/// dispatch's check in `state` since `since` seconds.
fn dispatch_check(state: &str, message: &str, since: i64) -> CheckState {
    check_state(CHECK, state, message, secs(since))
}

/// A message long enough to be cut in the table, with an ANSI escape and a second line.
const LONG_MESSAGE: &str = "\u{1b}[31mwaiting for dispatch\u{1b}[0m to place the workload on a member cluster with free nvidia.com/gpu capacity\nlast attempt: no cluster matched";

/// Two Workloads: one reserved and Pending with a long hostile message; one Pending before
/// quota, whose ClusterQueue is known only through its LocalQueue.
fn two_waiting() -> Vec<Workload> {
    vec![
        workload(
            "ml",
            "train-llama-7b-x9k2",
            Some("team-a"),
            vec![dispatch_check("Pending", LONG_MESSAGE, 5 * 60 + 12)],
        ),
        workload("ml", "eval-small-4hq7", None, vec![dispatch_check("Pending", "queued\nwaiting for quota", 42)]),
    ]
}

fn local_queues() -> Vec<LocalQueue> {
    vec![LocalQueue { namespace: "ml".into(), name: "user-queue".into(), cluster_queue: "team-a".into() }]
}

struct GateInput {
    settings: GateSettings,
    facts: GateFacts,
    workloads: Fetched<Vec<Workload>>,
    all_states: bool,
    namespace: Option<&'static str>,
    warnings: Vec<String>,
    /// Kueue's own manager's Lease, read beside dispatch's; `None`: not read.
    kueue_lease: Option<Fetched<LeaseFacts>>,
}

impl GateInput {
    fn new(facts: GateFacts, workloads: Vec<Workload>) -> Self {
        GateInput {
            settings: GateSettings::default(),
            facts,
            workloads: Fetched::Found(workloads),
            all_states: false,
            namespace: Some("ml"),
            warnings: Vec::new(),
            kueue_lease: None,
        }
    }

    /// What `gate` does with the facts, minus the I/O.
    fn run(self) -> GateRun {
        let mut report = gate::evaluate(&self.settings, &self.facts, now());
        // As `gate` reads them: dispatch's checks and, when none names its controller, the
        // lookalikes, whose Workloads are counted apart.
        let mut checks = report.dispatch_checks.clone();
        checks.extend(lookalike::names(self.settings.wanted(), &self.facts.admission_checks));
        let scope = WaitingScope {
            checks,
            cluster_queues: self.settings.cluster_queues.iter().cloned().collect(),
            all_states: self.all_states,
        };
        let mut near = Vec::new();
        let waiting = self.workloads.map(|ws| {
            let rows = ws.iter().flat_map(|w| waiting::select(w, &scope)).collect();
            let (ours, theirs) =
                lookalike::split(waiting::finish(rows, &local_queues(), &scope), &report.dispatch_checks);
            near = theirs;
            ours
        });
        report.lookalikes = lookalike::find(self.settings.wanted(), &self.facts.admission_checks, &near);
        let mut warnings = self.warnings;
        warnings.extend(report.lookalikes.iter().map(|l| l.warning(&self.settings.controller_name)));
        let kueue_lease = self.kueue_lease.map(|f| kueue_lease::assess(&self.settings.kueue_lease, &f, now()));
        GateRun { report, waiting, namespace: self.namespace.map(String::from), warnings, now: now(), kueue_lease }
    }
}

fn lease_run(fetched: Fetched<LeaseFacts>, warnings: Vec<String>) -> LeaseRun {
    LeaseRun { assessment: lease::assess(&LeaseRef::default(), &fetched, now()), warnings, now: now() }
}

// ---------------------------------------------------------------------------------------------
// Golden comparison
// ---------------------------------------------------------------------------------------------

/// Every format, with the file suffix it is kept under.
const FORMATS: &[(&str, Format, bool)] = &[
    (".txt", Format::Table, false),
    ("-wide.txt", Format::Wide, false),
    ("-no-headers.txt", Format::Table, true),
    (".json", Format::Json, false),
    (".yaml", Format::Yaml, false),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `got` with the golden file (or rewrites it); returns a description on mismatch.
fn compare(file: &str, got: &str) -> Option<String> {
    let path = golden_dir().join(file);
    if updating() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, got).unwrap();
        return None;
    }
    let want = match std::fs::read_to_string(&path) {
        Ok(want) => want,
        Err(e) => {
            return Some(format!("{}: {e} (run with UPDATE_GOLDEN=1 to create it)\n", path.display()));
        }
    };
    (want != got).then(|| format!("--- {} (golden)\n+++ rendered\n{}", path.display(), diff(&want, got)))
}

/// A line diff from the longest common subsequence: ` ` kept, `-` golden only, `+` rendered
/// only. Control characters are escaped so the diff itself cannot act on the terminal.
fn diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.split_inclusive('\n').collect();
    let b: Vec<&str> = got.split_inclusive('\n').collect();
    // lcs[i][j]: the LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, mark: char, n: usize, text: &str| {
        let (body, newline) = match text.strip_suffix('\n') {
            Some(body) => (body, ""),
            None => (text, "  (no newline at end)"),
        };
        let _ = writeln!(out, "{mark}{n:>4} | {}{newline}", escape(body));
    };
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            line(&mut out, ' ', i + 1, a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            line(&mut out, '-', i + 1, a[i]);
            i += 1;
        } else {
            line(&mut out, '+', j + 1, b[j]);
            j += 1;
        }
    }
    out
}

fn check_all(name: &str, mut render: impl FnMut(Output, &mut Vec<u8>)) {
    let mut failures = String::new();
    let (mut json, mut yaml) = (None, None);
    for (suffix, format, no_headers) in FORMATS {
        let mut buf = Vec::new();
        render(Output { format: *format, no_headers: *no_headers }, &mut buf);
        let text = String::from_utf8(buf).expect("output is UTF-8");
        if let Some(mismatch) = compare(&format!("{name}{suffix}"), &text) {
            failures.push_str(&mismatch);
            failures.push('\n');
        }
        match format {
            Format::Json => json = Some(text),
            Format::Yaml => yaml = Some(text),
            _ => {}
        }
    }
    // The YAML (with its folded and escaped scalars) must read back as the same document.
    let json: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
    let yaml: serde_json::Value = serde_saphyr::from_str(&yaml.unwrap()).unwrap();
    assert_eq!(yaml, json, "{name}: -o yaml and -o json disagree");
    assert!(
        failures.is_empty(),
        "rendered output differs from the golden files (UPDATE_GOLDEN=1 rewrites them):\n{failures}"
    );
}

/// `--color always`: the default table with every status word coloured.
const COLOUR: Style = Style { color: true, live: false };

/// The default table with colour on, kept as `<name>-color.txt`: it must hold colour, and with
/// the plugin's colour sequences removed be the plain table byte for byte (the columns align
/// as they do without colour).
fn colour_golden(name: &str, render: impl Fn(Style) -> String) {
    let (plain, coloured) = (render(Style::default()), render(COLOUR));
    assert!(coloured.contains('\u{1b}'), "{name}: --color always colours nothing");
    assert_eq!(kubectl_dispatch::text::width::plain(&coloured), plain, "{name}: colour moved the columns");
    let mismatch = compare(&format!("{name}-color.txt"), &coloured);
    assert!(mismatch.is_none(), "rendered output differs from the golden files:\n{}", mismatch.unwrap_or_default());
}

/// The default table as `render` writes it with `style`.
fn table_text(render: impl Fn(Output, Style, &mut Vec<u8>)) -> impl Fn(Style) -> String {
    move |style| {
        let mut buf = Vec::new();
        render(Output { format: Format::Table, no_headers: false }, style, &mut buf);
        String::from_utf8(buf).unwrap()
    }
}

fn gate_golden(name: &str, input: GateInput) {
    let run = input.run();
    let mut notes_seen = Vec::new();
    check_all(name, |output, buf| {
        let mut notes = Vec::new();
        render::gate::render_to(&run, output, Style::default(), buf, &mut notes).unwrap();
        if output.no_headers {
            notes_seen = notes;
        } else {
            assert!(notes.is_empty(), "{name}: only --no-headers sends lines elsewhere");
        }
    });
    // With --no-headers stdout has table rows only: the rest goes to stderr.
    let notes = String::from_utf8(notes_seen).unwrap();
    let mut failures: Vec<String> = compare(&format!("{name}-no-headers.stderr.txt"), &notes).into_iter().collect();
    // The same run as metrics, judged on a context named prod.
    colour_golden(name, table_text(|o, style, buf| render::gate::render(&run, o, style, buf).unwrap()));
    let mut prom = Vec::new();
    let context = render::prometheus::Context { name: "prod", outcome: Ok(&run) };
    render::prometheus::render(&[context], &mut prom).unwrap();
    failures.extend(compare(&format!("{name}.prom"), &String::from_utf8(prom).unwrap()));
    assert!(failures.is_empty(), "rendered output differs from the golden files:\n{}", failures.join("\n"));
}

fn lease_golden(name: &str, run: LeaseRun) {
    check_all(name, |output, buf| render::lease::render(&run, output, Style::default(), buf).unwrap());
    colour_golden(name, table_text(|o, style, buf| render::lease::render(&run, o, style, buf).unwrap()));
}

// ---------------------------------------------------------------------------------------------
// gate
// ---------------------------------------------------------------------------------------------

#[test]
fn gate_healthy() {
    gate_golden("gate-healthy", GateInput { all_states: true, ..GateInput::new(healthy_facts(), two_waiting()) });
}

#[test]
fn gate_stale() {
    let mut workloads = two_waiting();
    workloads.push(workload("web", "render-frames-0", Some("team-a"), vec![dispatch_check("Pending", "", 3 * 60 + 1)]));
    // Renewed 98.4 s ago: 99 s rounded up, which kubectl's HumanDuration writes `99s` (not Go's
    // `1m39s`) in the check row and in the reason alike.
    let facts = GateFacts { lease: Fetched::Found(lease_facts(98, 400_000)), ..healthy_facts() };
    gate_golden("gate-stale", GateInput { namespace: None, ..GateInput::new(facts, workloads) });
}

/// The README's example: the same stale Lease, with plain messages an operator would see.
#[test]
fn gate_stuck() {
    let workloads = vec![
        workload(
            "ml",
            "train-llama-7b-x9k2",
            Some("team-a"),
            vec![dispatch_check("Pending", "waiting for dispatch", 5 * 60 + 12)],
        ),
        workload("web", "render-frames-0", Some("team-a"), vec![dispatch_check("Pending", "", 3 * 60 + 1)]),
    ];
    gate_golden("gate-stuck", GateInput { namespace: None, ..GateInput::new(stale_facts(), workloads) });
}

/// Kueue's manager's Lease beside dispatch's: fresh (nothing shown but the JSON field and the
/// metric), stale (a line under the chain), none (a manager without leader election) and
/// forbidden, each said as such.
#[test]
fn gate_kueue_lease() {
    let kueue = |holder: &str, age: i64| LeaseFacts {
        holder: Some(holder.into()),
        renew_time: Some(ago(secs(age) + micros(120_000))),
        acquire_time: Some(ago(secs(3600))),
        duration_seconds: Some(15),
        transitions: Some(0),
    };
    let waiting = || {
        vec![workload("ml", "train-llama-7b-x9k2", Some("team-a"), vec![check_state(CHECK, "Pending", "", secs(75))])]
    };
    let rule = "get leases.coordination.k8s.io \"c1f6bfd2.kueue.x-k8s.io\" in namespace kueue-system";
    for (name, fetched) in [
        ("gate-kueue-lease-fresh", Fetched::Found(kueue("kueue-controller-manager-5c9f7_3a1b", 2))),
        ("gate-kueue-lease-stale", Fetched::Found(kueue("kueue-controller-manager-5c9f7_3a1b", 2 * 60 + 4))),
        ("gate-kueue-lease-none", Fetched::Missing),
        ("gate-kueue-lease-forbidden", forbidden(rule)),
    ] {
        gate_golden(name, GateInput { kueue_lease: Some(fetched), ..GateInput::new(healthy_facts(), waiting()) });
    }
}

#[test]
fn gate_lease_forbidden() {
    gate_golden(
        "gate-lease-forbidden",
        GateInput::new(
            GateFacts { lease: forbidden(LEASE_RULE), ..healthy_facts() },
            vec![workload(
                "ml",
                "train-llama-7b-x9k2",
                Some("team-a"),
                vec![dispatch_check("Pending", "waiting for the admission controller", 75)],
            )],
        ),
    );
}

#[test]
fn gate_several_cluster_queues() {
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![
            cq("team-gpu", &["dispatch-gpu"]),
            cq("team-a", &[CHECK]),
            cq("batch", &["provisioning"]),
            cq("team-b", &["provisioning", CHECK]),
        ]),
        admission_checks: Fetched::Found(three_checks()),
        lease: Fetched::Found(lease_facts(9, 0)),
        holder: None,
    };
    let mut gpu = workload("ml", "finetune-gpu-2", Some("team-gpu"), vec![dispatch_check("Pending", "", 20 * 60)]);
    gpu.checks[0].name = "dispatch-gpu".into();
    gate_golden("gate-several", GateInput::new(facts, vec![gpu]));
}

/// dispatch's check, a second of dispatch's (for GPU flavors, not Active), and Kueue's own
/// provisioning check.
fn three_checks() -> Vec<AdmissionCheck> {
    vec![
        dispatch_ac(READY),
        ac(
            "dispatch-gpu",
            Some(CONTROLLER),
            active("False", "ControllerNotReady", "no member cluster offers nvidia.com/gpu"),
        ),
        AdmissionCheck {
            name: "provisioning".into(),
            controller_name: Some("kueue.x-k8s.io/provisioning-request".into()),
            active: None,
        },
    ]
}

/// A typo and Kueue's own blocker: `--cluster-queue team-b` names no ClusterQueue (check 1
/// decides, the rest is not reached), and team-a is inactive by Kueue's account for a reason
/// of its own (a missing flavor), said on a line of its own with its waiting Workload.
#[test]
fn gate_queue_inactive() {
    let mut team_a = cq("team-a", &[CHECK]);
    team_a.active = Some(kueue_condition(
        "False",
        Some("FlavorNotFound"),
        Some("Can't admit new workloads: references missing ResourceFlavor(s): default-flavor."),
        secs(20 * 60),
    ));
    let facts = GateFacts { cluster_queues: Fetched::Found(vec![team_a, cq("batch", &[])]), ..healthy_facts() };
    let workloads =
        vec![workload("ml", "train-llama-7b-x9k2", Some("team-a"), vec![dispatch_check("Pending", "", 60)])];
    let mut input = GateInput::new(facts, workloads);
    input.settings.cluster_queues = vec!["team-a".into(), "team-b".into()];
    gate_golden("gate-queue-inactive", input);
}

#[test]
fn gate_kueue_shapes() {
    // team-a lists two of dispatch's checks, one only for GPU flavors and not Active, and Kueue
    // has stopped admitting there because of it; team-b is Ready by Kueue's account.
    let kueue_active = |status: &str, reason: &str, message: &str| {
        Some(kueue_condition(status, Some(reason), Some(message), secs(20 * 60)))
    };
    let mut team_a = cq("team-a", &["dispatch-gpu", CHECK, "provisioning"]);
    team_a.admission_checks[0].on_flavors = vec!["gpu-a100".into(), "gpu-h100".into()];
    team_a.active = kueue_active(
        "False",
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): dispatch-gpu.",
    );
    let mut team_b = cq("team-b", &[CHECK]);
    team_b.active = kueue_active("True", "Ready", "Can admit new workloads");
    let facts = GateFacts {
        cluster_queues: Fetched::Found(vec![team_b, team_a]),
        admission_checks: Fetched::Found(three_checks()),
        lease: Fetched::Found(lease_facts(9, 0)),
        holder: None,
    };
    let mut gpu = workload("ml", "finetune-gpu-2", Some("team-a"), vec![dispatch_check("Pending", "", 20 * 60)]);
    gpu.checks[0].name = "dispatch-gpu".into();
    gate_golden("gate-kueue-shapes", GateInput::new(facts, vec![gpu]));
}

#[test]
fn gate_lease_missing() {
    gate_golden(
        "gate-lease-missing",
        GateInput {
            workloads: forbidden("list workloads.kueue.x-k8s.io in namespace ml"),
            warnings: vec![
                "cannot show waiting Workloads: missing RBAC: list workloads.kueue.x-k8s.io in namespace ml".into(),
            ],
            ..GateInput::new(GateFacts { lease: Fetched::Missing, ..healthy_facts() }, vec![])
        },
    );
}

#[test]
fn gate_no_cluster_queue_lists_the_check() {
    gate_golden(
        "gate-not-listed",
        GateInput::new(GateFacts { cluster_queues: Fetched::Found(vec![cq("batch", &[])]), ..healthy_facts() }, vec![]),
    );
}

/// Two checks fail: the first decides, and every check after it is `not reached`, the failing
/// Lease too (its detail still says what was seen).
#[test]
fn gate_after_the_deciding_failure_nothing_is_reached() {
    let inactive =
        AdmissionCheck { active: active("False", "Inactive", "the controller is gone"), ..dispatch_ac(READY) };
    let facts = GateFacts { admission_checks: Fetched::Found(vec![inactive]), ..stale_facts() };
    gate_golden("gate-two-failures", GateInput::new(facts, two_waiting()));
}

/// The stderr a one-shot `gate` writes for `run` around the table: its warnings, then the
/// closing notes on the waiting Workloads.
fn gate_stderr(run: &GateRun) -> String {
    let mut text = String::new();
    for w in &run.warnings {
        let _ = writeln!(text, "Warning: {}", escape(w));
    }
    for line in render::gate::waiting_notes(run, None) {
        let _ = writeln!(text, "{line}");
    }
    text
}

/// dispatch's check names `example.com/dispatch-admission`: the adapter's verdict as it is
/// (no ClusterQueue lists a check of dispatch-admission), and on stderr the check that is
/// plainly dispatch's, the flag that selects it and the two Workloads that wait at it.
#[test]
fn gate_controller_elsewhere() {
    let facts = GateFacts {
        admission_checks: Fetched::Found(vec![
            ac(CHECK, Some("example.com/dispatch-admission"), active("True", "Active", READY)),
            ac("provisioning", Some("kueue.x-k8s.io/provisioning-request"), None),
        ]),
        ..healthy_facts()
    };
    let workloads = vec![
        workload("ml", "train-llama-7b-x9k2", Some("team-a"), vec![dispatch_check("Pending", "", 5 * 60 + 12)]),
        workload("web", "render-frames-0", Some("team-a"), vec![dispatch_check("Pending", "", 3 * 60 + 1)]),
    ];
    let input = GateInput { namespace: None, ..GateInput::new(facts, workloads) };
    let run = input.run();
    let failures: Vec<String> =
        compare("gate-controller-elsewhere.stderr.txt", &gate_stderr(&run)).into_iter().collect();
    assert!(failures.is_empty(), "rendered output differs from the golden files:\n{}", failures.join("\n"));
    let facts = GateFacts {
        admission_checks: Fetched::Found(vec![ac(CHECK, Some("example.com/dispatch-admission"), None)]),
        ..healthy_facts()
    };
    let workloads = vec![
        workload("ml", "train-llama-7b-x9k2", Some("team-a"), vec![dispatch_check("Pending", "", 5 * 60 + 12)]),
        workload("web", "render-frames-0", Some("team-a"), vec![dispatch_check("Pending", "", 3 * 60 + 1)]),
    ];
    gate_golden("gate-controller-elsewhere", GateInput { namespace: None, ..GateInput::new(facts, workloads) });
}

/// A ClusterQueue Kueue reports inactive for a reason of its own (a missing flavor): the gate
/// says yes, as the adapter would, and says that Kueue admits nothing there, with its
/// waiting Workload and `kubectl describe clusterqueue` next.
#[test]
fn gate_queue_inactive_alone() {
    let mut team_a = cq("team-a", &[CHECK]);
    team_a.active = Some(kueue_condition(
        "False",
        Some("FlavorNotFound"),
        Some("Can't admit new workloads: references missing ResourceFlavor(s): default-flavor."),
        secs(20 * 60),
    ));
    let facts = GateFacts { cluster_queues: Fetched::Found(vec![team_a, cq("batch", &[])]), ..healthy_facts() };
    let workloads =
        vec![workload("ml", "train-llama-7b-x9k2", Some("team-a"), vec![dispatch_check("Pending", "", 60)])];
    gate_golden("gate-queue-inactive-alone", GateInput { namespace: None, ..GateInput::new(facts, workloads) });
}

// ---------------------------------------------------------------------------------------------
// gate on several contexts
// ---------------------------------------------------------------------------------------------

#[test]
fn fleet() {
    use kubectl_dispatch::report::fleet::ContextResult;
    let stale = GateInput {
        warnings: vec![
            "this machine's clock is about 3s ahead of the API server's; Lease ages are measured with this machine's clock"
                .into(),
        ],
        ..GateInput::new(stale_facts(), two_waiting())
    };
    let forbidden = GateInput {
        workloads: forbidden("list workloads.kueue.x-k8s.io in namespace ml"),
        warnings: vec![
            "cannot show waiting Workloads: missing RBAC: list workloads.kueue.x-k8s.io in namespace ml".into(),
        ],
        ..GateInput::new(healthy_facts(), vec![])
    };
    let results = vec![
        ContextResult { context: "prod".into(), outcome: Ok(stale.run()) },
        // A context name is someone's text: quotes, a backslash and a line feed are escaped.
        ContextResult { context: "lab \"b\"\\\n2".into(), outcome: Ok(forbidden.run()) },
        ContextResult {
            context: "edge".into(),
            outcome: Err("cannot reach the API server at https://10.0.0.9:6443: connection refused".into()),
        },
    ];
    let mut failures = Vec::new();
    for (name, ext, format) in [("fleet", "txt", Format::Table), ("fleet-prom", "prom", Format::Prometheus)] {
        let output = Output { format, no_headers: false };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render::fleet::render(&results, output, Style::default(), &mut out).unwrap();
        render::fleet::notes(&results, output, &mut err).unwrap();
        failures.extend(compare(&format!("fleet.{ext}"), &String::from_utf8(out).unwrap()));
        failures.extend(compare(&format!("{name}.stderr.txt"), &String::from_utf8(err).unwrap()));
    }
    assert!(failures.is_empty(), "rendered output differs from the golden files:\n{}", failures.join("\n"));
    colour_golden("fleet", table_text(|o, style, buf| render::fleet::render(&results, o, style, buf).unwrap()));
}

// ---------------------------------------------------------------------------------------------
// lease
// ---------------------------------------------------------------------------------------------

#[test]
fn lease_fresh() {
    lease_golden("lease-fresh", lease_run(Fetched::Found(lease_facts(4, 250_000)), vec![]));
}

#[test]
fn lease_stale() {
    lease_golden(
        "lease-stale",
        lease_run(
            Fetched::Found(lease_facts(3 * 60 + 7, 400_000)),
            vec!["this machine's clock is about 3s ahead of the API server's; Lease ages are measured with this machine's clock".into()],
        ),
    );
}

#[test]
fn lease_forbidden() {
    lease_golden("lease-forbidden", lease_run(forbidden(LEASE_RULE), vec![]));
}

#[test]
fn lease_missing() {
    lease_golden("lease-missing", lease_run(Fetched::Missing, vec![]));
}

#[test]
fn lease_released() {
    // client-go's release: holder "" and leaseDurationSeconds 1.
    lease_golden(
        "lease-no-holder",
        lease_run(
            Fetched::Found(LeaseFacts { holder: Some(String::new()), duration_seconds: Some(1), ..lease_facts(12, 0) }),
            vec![],
        ),
    );
}

#[test]
fn lease_never_renewed() {
    lease_golden(
        "lease-never-renewed",
        lease_run(
            Fetched::Found(LeaseFacts { renew_time: None, acquire_time: None, transitions: None, ..lease_facts(0, 0) }),
            vec![],
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// workload
// ---------------------------------------------------------------------------------------------

fn workload_check(name: &str, state: &str, message: &str, since: i64) -> CheckDetail {
    CheckDetail {
        name: name.into(),
        state: state.into(),
        message: message.into(),
        last_transition: Some(ago(secs(since))),
        ..Default::default()
    }
}

/// `train-llama-7b-x9k2` in ml, queued on user-queue (ClusterQueue team-a).
fn explained(reserved: bool, checks: Vec<CheckDetail>) -> WorkloadFacts {
    let mut conditions = std::collections::BTreeMap::new();
    if reserved {
        conditions.insert(
            "QuotaReserved".to_string(),
            kueue_condition(
                "True",
                Some("QuotaReserved"),
                Some("Quota reserved in ClusterQueue team-a"),
                secs(15 * 60),
            ),
        );
        conditions.insert(
            "Admitted".to_string(),
            kueue_condition(
                "False",
                Some("UnsatisfiedChecks"),
                Some("The workload has not all checks ready"),
                secs(15 * 60),
            ),
        );
    } else {
        conditions.insert(
            "QuotaReserved".to_string(),
            kueue_condition(
                "False",
                Some("Pending"),
                Some("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 2 more needed"),
                secs(42),
            ),
        );
    }
    WorkloadFacts {
        namespace: "ml".into(),
        name: "train-llama-7b-x9k2".into(),
        queue_name: Some("user-queue".into()),
        active: true,
        admitted_in: reserved.then(|| "team-a".to_string()),
        conditions,
        checks,
        ..Default::default()
    }
}

fn provisioning_ac() -> AdmissionCheck {
    AdmissionCheck {
        controller_name: Some("kueue.x-k8s.io/provisioning-request".into()),
        ..ac("prov", Some(CONTROLLER), active("True", "Active", "ready"))
    }
}

fn workload_golden(name: &str, w: WorkloadFacts, gate: GateFacts, position: Position) {
    workload_golden_with(name, w, gate, position, None);
}

fn workload_golden_with(
    name: &str,
    w: WorkloadFacts,
    gate: GateFacts,
    position: Position,
    kueue_lease: Option<Fetched<LeaseFacts>>,
) {
    let local_queue = Fetched::Found(local_queues().remove(0));
    let input = WorkloadInput { workload: w, local_queue, gate, position, kueue_lease };
    let run = WorkloadRun {
        explanation: workload::explain(&GateSettings::default(), &input, now()),
        warnings: vec![],
        now: now(),
    };
    check_all(name, |output, buf| {
        render::workload::render(&run, output, Style::default(), buf, &mut std::io::sink()).unwrap()
    });
    colour_golden(
        name,
        table_text(|o, style, buf| render::workload::render(&run, o, style, buf, &mut std::io::sink()).unwrap()),
    );
}

#[test]
fn workload_at_dispatch_with_a_stale_lease() {
    let prov = CheckDetail {
        retry_count: Some(1),
        pod_set_updates: vec![PodSetUpdate {
            name: "main".into(),
            labels: [("dispatch.example/cluster".to_string(), "far-1".to_string())].into(),
            node_selector: [("cloud".to_string(), "far-1".to_string())].into(),
            tolerations: vec!["gpu:NoSchedule".into(), "dedicated=ml:NoExecute".into()],
            ..Default::default()
        }],
        ..workload_check("prov", "Ready", "capacity provisioned", 11 * 60)
    };
    let w = explained(true, vec![workload_check(CHECK, "Pending", LONG_MESSAGE, 14 * 60), prov]);
    let mut facts = stale_facts();
    facts.admission_checks = Fetched::Found(vec![dispatch_ac(READY), provisioning_ac()]);
    workload_golden("workload-stale", w, facts, Position::NotServed);
}

/// At dispatch's check with the gate open, on a ClusterQueue Kueue reports inactive (a
/// missing flavor): the sentence names it instead of "dispatch's controller has yet to
/// answer", and `Next:` gives `kubectl describe clusterqueue`. Kueue's manager has no Lease:
/// said once, briefly, since the Workload waits.
#[test]
fn workload_on_an_inactive_cluster_queue() {
    let w = explained(true, vec![workload_check(CHECK, "Pending", "", 14 * 60)]);
    let mut facts = healthy_facts();
    let mut team_a = facts::cq("team-a", &[CHECK]);
    team_a.active = Some(kueue_condition(
        "False",
        Some("FlavorNotFound"),
        Some("Can't admit new workloads: references missing ResourceFlavor(s): default-flavor."),
        secs(20 * 60),
    ));
    facts.cluster_queues = Fetched::Found(vec![team_a]);
    workload_golden_with("workload-queue-inactive", w, facts, Position::NotAsked, Some(Fetched::Missing));
}

#[test]
fn workload_waiting_for_quota_with_its_position() {
    let mut w = explained(false, vec![workload_check(CHECK, "Pending", "", 42)]);
    w.conditions.insert(
        "Evicted".into(),
        kueue_condition("True", Some("AdmissionCheck"), Some("At least one admission check is false"), secs(5 * 60)),
    );
    workload_golden("workload-quota", w, healthy_facts(), Position::Found { cluster_queue: 3, local_queue: 1 });
}

#[test]
fn workload_unreadable_checks_and_position() {
    let w = explained(false, vec![workload_check(CHECK, "Pending", "", 42)]);
    let facts = GateFacts {
        admission_checks: forbidden("list admissionchecks.kueue.x-k8s.io (cluster-wide)"),
        ..healthy_facts()
    };
    let rule = "get localqueues/pendingworkloads.visibility.kueue.x-k8s.io \"user-queue\" in namespace ml";
    workload_golden("workload-forbidden", w, facts, Position::Forbidden(rule.into()));
}

/// Waiting for quota while Kueue's manager's Lease is stale: a clause in the sentence, a line
/// above it, a field in JSON/YAML.
#[test]
fn workload_while_kueues_manager_is_down() {
    let w = explained(false, vec![workload_check(CHECK, "Pending", "", 42)]);
    let kueue = LeaseFacts {
        holder: Some("kueue-controller-manager-5c9f7_3a1b".into()),
        renew_time: Some(ago(secs(2 * 60 + 4) + micros(120_000))),
        acquire_time: Some(ago(secs(3600))),
        duration_seconds: Some(15),
        transitions: Some(0),
    };
    workload_golden_with(
        "workload-kueue-down",
        w,
        healthy_facts(),
        Position::Found { cluster_queue: 0, local_queue: 0 },
        Some(Fetched::Found(kueue)),
    );
}

/// MultiKueue's placement: the worker cluster that admitted it (Kueue clears the nominated
/// ones when it sets clusterName; the two are mutually exclusive).
#[test]
fn workload_placed_by_multikueue() {
    let mut w = explained(true, vec![workload_check(CHECK, "Ready", "placed on far-1", 20)]);
    w.conditions.insert(
        "Admitted".into(),
        kueue_condition("True", Some("Admitted"), Some("The workload is admitted"), secs(15)),
    );
    w.cluster_name = Some("worker-eu-1".into());
    workload_golden("workload-multikueue", w, healthy_facts(), Position::NotAsked);
}

// ---------------------------------------------------------------------------------------------
// workloads
// ---------------------------------------------------------------------------------------------

/// `workloads -A` on the stale Lease: one row per Workload in the order listed, each with the
/// sentence `workload NAME` ends with (at dispatch's check, waiting for quota, on a LocalQueue
/// that does not exist, admitted); `-n ml` drops the NAMESPACE column.
/// The custom columns of workloads-all-custom-columns.txt (tests/jsonpath_oracle.rs has them too).
const WORKLOAD_COLUMNS: &str = "NAMESPACE:.namespace,NAME:.name,QUEUE:.localQueue,STAGE:.stage,GATE:.gate";

#[test]
fn workloads_every_namespace_and_one() {
    let mut quota = explained(false, vec![workload_check(CHECK, "Pending", "", 42)]);
    quota.name = "eval-sweep-3".into();
    let mut lost = explained(false, vec![]);
    lost.name = "orphan-1".into();
    lost.queue_name = Some("gone-queue".into());
    let stuck = explained(true, vec![workload_check(CHECK, "Pending", LONG_MESSAGE, 14 * 60)]);
    let mut admitted = explained(true, vec![workload_check(CHECK, "Ready", "placed on far-1", 20)]);
    admitted.namespace = "web".into();
    admitted.name = "render-frames-0".into();
    admitted.conditions.insert(
        "Admitted".into(),
        kueue_condition("True", Some("Admitted"), Some("The workload is admitted"), secs(15)),
    );
    let facts = ListFacts {
        workloads: vec![quota, lost, stuck, admitted],
        local_queues: Fetched::Found(local_queues()),
        gate: stale_facts(),
        kueue_lease: None,
    };
    let explanations = workloads::explain_all(&GateSettings::default(), &facts, now());
    let all = WorkloadsRun { explanations, namespace: None, warnings: vec![], now: now() };
    check_all("workloads-all", |output, buf| render::workloads::render(&all, output, Style::default(), buf).unwrap());
    // Its status word, GATE, is in the wide table: that one is kept with colour on.
    colour_golden("workloads-all", |style| {
        let mut buf = Vec::new();
        render::workloads::render(&all, Output { format: Format::Wide, no_headers: false }, style, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    });
    // -o custom-columns: a row per Workload, all through one tab writer (names of different
    // lengths aligned); tests/jsonpath_oracle.rs holds these files to kubectl's own printer
    // over the items of workloads-all.json.
    let items: Vec<_> = all.explanations.iter().map(kubectl_dispatch::report::workloads::item_doc).collect();
    let mut failures = Vec::new();
    for (no_headers, file) in
        [(false, "workloads-all-custom-columns.txt"), (true, "workloads-all-custom-columns-no-headers.txt")]
    {
        let spec = kubectl_dispatch::invocation::PrinterSpec {
            kind: kubectl_dispatch::invocation::PrinterKind::CustomColumns,
            template: WORKLOAD_COLUMNS.into(),
            allow_missing_keys: true,
            no_headers,
        };
        let mut buf = Vec::new();
        render::printer::Printer::new(&spec).unwrap().print_list(&items, &mut buf).unwrap();
        failures.extend(compare(file, &String::from_utf8(buf).unwrap()));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let ml: Vec<_> = all.explanations.iter().filter(|e| e.namespace == "ml").cloned().collect();
    let one = WorkloadsRun { explanations: ml, namespace: Some("ml".into()), ..all.clone() };
    let mut buf = Vec::new();
    render::workloads::render(&one, Output { format: Format::Table, no_headers: false }, Style::default(), &mut buf)
        .unwrap();
    let failure = compare("workloads-ml.txt", &String::from_utf8(buf).unwrap());
    assert!(failure.is_none(), "{}", failure.unwrap_or_default());
    // Nothing listed: nothing on stdout (the command says `No resources found` on stderr).
    let none = WorkloadsRun { explanations: vec![], ..one };
    let mut buf = Vec::new();
    render::workloads::render(&none, Output { format: Format::Table, no_headers: false }, Style::default(), &mut buf)
        .unwrap();
    assert!(buf.is_empty());
}

#[test]
fn workload_retry() {
    let retry = CheckDetail {
        retry_count: Some(2),
        requeue_after_seconds: Some(600),
        ..workload_check("prov", "Retry", "capacity not available in any zone", 10)
    };
    let w = explained(true, vec![workload_check(CHECK, "Ready", "placed on far-1", 20), retry]);
    let mut facts = healthy_facts();
    facts.admission_checks = Fetched::Found(vec![dispatch_ac(READY), provisioning_ac()]);
    workload_golden("workload-retry", w, facts, Position::NotServed);
}

// ---------------------------------------------------------------------------------------------
// The harness itself
// ---------------------------------------------------------------------------------------------

#[test]
fn the_diff_marks_changed_lines() {
    let d = diff("a\nb\nc\n", "a\nB\nc\nd");
    assert_eq!(d, "    1 | a\n-   2 | b\n+   2 | B\n    3 | c\n+   4 | d  (no newline at end)\n");
    assert_eq!(diff("x\u{1b}\n", "y\n"), "-   1 | x\\u{1b}\n+   1 | y\n");
}

// ---------------------------------------------------------------------------------------------
// The holder's pod
// ---------------------------------------------------------------------------------------------

fn holder_pod(restarts: i32, ready: &str, waiting: Option<&str>) -> PodFacts {
    PodFacts {
        name: "dispatch-admission-7d9f8c6b5-x2kqp".into(),
        uid: "0b9e6c1d-5a43-4c1e-9d7f-2f6a8e1b3c55".into(),
        created: Some(ago(secs(5 * 3600))),
        deleting: None,
        phase: Some("Running".into()),
        node: Some("worker-2".into()),
        ready: Some((ready.into(), (ready != "True").then(|| "ContainersNotReady".into()))),
        restarts,
        last_termination: (restarts > 0).then(|| Termination {
            container: "manager".into(),
            reason: Some("OOMKilled".into()),
            exit_code: 137,
            finished: Some(ago(secs(41))),
        }),
        waiting: waiting.map(String::from),
    }
}

fn node(ready: &str, reason: &str) -> Option<Fetched<NodeFacts>> {
    Some(Fetched::Found(NodeFacts { name: "worker-2".into(), ready: Some((ready.into(), Some(reason.into()))) }))
}

fn lease_with_holder(fetched: Fetched<LeaseFacts>, holder: HolderFacts) -> LeaseRun {
    let assessment = lease::assess_with_holder(&LeaseRef::default(), &fetched, Some(&holder), now());
    LeaseRun { assessment, warnings: vec![], now: now() }
}

#[test]
fn lease_holder_restarting() {
    let pod = Fetched::Found(holder_pod(4, "False", Some("CrashLoopBackOff")));
    let run = lease_with_holder(
        Fetched::Found(lease_facts(3 * 60 + 7, 400_000)),
        HolderFacts { pod, node: node("True", "KubeletReady") },
    );
    lease_golden("lease-holder-restarting", run);
}

#[test]
fn lease_holder_pods_forbidden() {
    let holder = HolderFacts { pod: forbidden("get pods in namespace dispatch-system"), node: None };
    lease_golden("lease-holder-forbidden", lease_with_holder(Fetched::Found(lease_facts(4, 250_000)), holder));
}

#[test]
fn gate_holder_on_a_node_not_ready() {
    let holder =
        HolderFacts { pod: Fetched::Found(holder_pod(0, "True", None)), node: node("Unknown", "NodeStatusUnknown") };
    let facts = GateFacts { holder: Some(holder), ..stale_facts() };
    gate_golden("gate-holder-node-not-ready", GateInput::new(facts, vec![]));
}

// ---------------------------------------------------------------------------------------------
// doctor
// ---------------------------------------------------------------------------------------------

fn doctor_facts(answer: impl Fn(&Access) -> Answer, identity: Option<Identity>) -> DoctorFacts {
    let access = doctor::reads(&LeaseRef::default(), Some("ml")).into_iter().map(|a| (a.clone(), answer(&a))).collect();
    DoctorFacts {
        identity,
        access,
        kueue: KueueServed::Served {
            versions: vec!["v1beta2".into(), "v1beta1".into()],
            reads: Some("v1beta2".into()),
            fallback: None,
            error: None,
        },
        namespace: Fetched::Found(()),
        lease: Fetched::Found(lease_facts(4, 250_000)),
        holder: Some(HolderFacts {
            pod: Fetched::Found(holder_pod(0, "True", None)),
            node: node("True", "KubeletReady"),
        }),
        kueue_lease: None,
        queues: None,
    }
}

fn doctor_golden(name: &str, facts: DoctorFacts) {
    let report = doctor::evaluate(&LeaseRef::default(), &facts, now());
    let run = DoctorRun { report, context: Some("prod-eu".into()), now: now() };
    check_all(name, |output, buf| {
        render::doctor::render(&run, output, Style::default(), buf, &mut Vec::new()).unwrap()
    });
    colour_golden(
        name,
        table_text(|o, style, buf| render::doctor::render(&run, o, style, buf, &mut Vec::new()).unwrap()),
    );
}

fn alice() -> Option<Identity> {
    Some(Identity { username: "alice@example.com".into(), groups: vec!["sre".into(), "system:authenticated".into()] })
}

#[test]
fn doctor_all_well() {
    let allowed = |a: &Access| if a.resource == "namespaces" { Answer::Denied(None) } else { Answer::Allowed };
    doctor_golden("doctor-all-well", doctor_facts(allowed, alice()));
}

#[test]
fn doctor_missing_rules() {
    let answer = |a: &Access| match a.resource {
        "leases" | "pods" => Answer::Denied(Some("RBAC: no rule allows it".into())),
        "workloads" if a.verb == "watch" => Answer::Denied(None),
        _ => Answer::Allowed,
    };
    let mut facts = doctor_facts(answer, alice());
    facts.lease = forbidden(LEASE_RULE);
    facts.holder = None;
    facts.namespace = forbidden("get namespaces \"dispatch-system\"");
    facts.kueue = KueueServed::Served {
        versions: vec!["v1beta2".into(), "v1beta1".into()],
        reads: Some("v1beta1".into()),
        fallback: Some("Kueue's conversion webhook does not answer".into()),
        error: None,
    };
    doctor_golden("doctor-missing-rules", facts);
}

/// Kueue's queues as `doctor` reads them: dispatch's check under another controllerName (a
/// warning with the flag and the Workloads that wait at it), and a ClusterQueue Kueue reports
/// inactive (a warning, and the summary says Kueue admits nothing there).
#[test]
fn doctor_kueue_queues() {
    let allowed = |_: &Access| Answer::Allowed;
    let waiting = |check: &str| waiting::Waiting {
        namespace: "ml".into(),
        name: "train-llama-7b-x9k2".into(),
        cluster_queue: Some("team-a".into()),
        queue_name: Some("user-queue".into()),
        check: check.into(),
        state: "Pending".into(),
        quota_reserved: true,
        since: Some(ago(secs(60))),
        message: String::new(),
    };
    let mut facts = doctor_facts(allowed, alice());
    facts.queues = Some(QueueFacts {
        controller_name: CONTROLLER.into(),
        cluster_queues: Fetched::Found(vec![cq("team-a", &[CHECK])]),
        admission_checks: Fetched::Found(vec![ac(CHECK, Some("example.com/dispatch-admission"), None)]),
        waiting: vec![waiting(CHECK)],
    });
    doctor_golden("doctor-controller-elsewhere", facts);

    let mut team_a = cq("team-a", &[CHECK]);
    team_a.active = Some(kueue_condition(
        "False",
        Some("FlavorNotFound"),
        Some("Can't admit new workloads: references missing ResourceFlavor(s): default-flavor."),
        secs(20 * 60),
    ));
    let mut facts = doctor_facts(allowed, alice());
    facts.queues = Some(QueueFacts {
        controller_name: CONTROLLER.into(),
        cluster_queues: Fetched::Found(vec![team_a, cq("batch", &[])]),
        admission_checks: Fetched::Found(vec![dispatch_ac(READY)]),
        waiting: vec![waiting(CHECK)],
    });
    doctor_golden("doctor-queue-inactive", facts);
}

/// Kueue's manager's Lease gone stale: a warning of its own, which leaves doctor's verdict as
/// it was (Kueue's heartbeat is context, not the gate's).
#[test]
fn doctor_kueue_lease_stale() {
    let allowed = |a: &Access| if a.resource == "namespaces" { Answer::Denied(None) } else { Answer::Allowed };
    let mut facts = doctor_facts(allowed, alice());
    let stale = LeaseFacts {
        holder: Some("kueue-controller-manager-5c9f7_3a1b".into()),
        renew_time: Some(ago(secs(2 * 60 + 4) + micros(120_000))),
        acquire_time: Some(ago(secs(3600))),
        duration_seconds: Some(15),
        transitions: Some(0),
    };
    facts.kueue_lease = Some((LeaseRef::kueue_default(), Fetched::Found(stale)));
    doctor_golden("doctor-kueue-lease-stale", facts);
}

#[test]
fn doctor_cannot_tell() {
    let mut facts = doctor_facts(
        |_| Answer::Unanswered("may not create selfsubjectaccessreviews.authorization.k8s.io".into()),
        None,
    );
    facts.kueue = KueueServed::Forbidden;
    doctor_golden("doctor-cannot-tell", facts);
}

/// A wall clock that moves with tokio's paused time, from the golden instant.
struct PausedClock {
    base: k8s_openapi::jiff::Timestamp,
    start: tokio::time::Instant,
}

impl kubectl_dispatch::clock::Clock for PausedClock {
    fn now(&self) -> k8s_openapi::jiff::Timestamp {
        self.base + k8s_openapi::jiff::SignedDuration::try_from(self.start.elapsed()).unwrap()
    }
}

/// `lease --watch` for a minute while dispatch's controller renews every 10 s and Kueue's
/// manager stops renewing at once, then a new one takes its Lease at 45 s: Kueue's manager's
/// two lines (stale at its deadline, then a manager leads), in every format (and the table in
/// colour), from the one live loop run on paused time.
#[test]
fn lease_watch_while_kueues_manager_goes_down_and_comes_back() {
    let name = "lease-watch-kueue-down";
    let mut failures = String::new();
    for (suffix, format, no_headers) in FORMATS {
        let output = Output { format: *format, no_headers: *no_headers };
        let (out, err) = watch_for_a_minute(output, Style::default());
        failures.extend(compare(&format!("{name}{suffix}"), &out));
        if *no_headers {
            failures.extend(compare(&format!("{name}-no-headers.stderr.txt"), &err));
        } else {
            assert_eq!(err, "", "{suffix}: only --no-headers sends Kueue's lines to stderr");
        }
    }
    assert!(
        failures.is_empty(),
        "rendered output differs from the golden files (UPDATE_GOLDEN=1 rewrites them):\n{failures}"
    );
    colour_golden(name, |style| watch_for_a_minute(Output { format: Format::Table, no_headers: false }, style).0);
}

/// The watch of [`lease_watch_while_kueues_manager_goes_down_and_comes_back`]: its stdout and
/// stderr.
fn watch_for_a_minute(output: Output, style: Style) -> (String, String) {
    use futures::StreamExt;
    use kubectl_dispatch::cluster::watching::kueue_lease::KueueLeaseUpdate;
    use kubectl_dispatch::cluster::watching::reflector::LeaseUpdate;
    use kubectl_dispatch::commands::lease_watch::{self, Leases, Shown};
    use kubectl_dispatch::core::link::LinkEvent;
    use kubectl_dispatch::invocation::LeaseWatch;
    use std::time::Duration;

    let base = now();
    let facts = |holder: &str, at: i64| LeaseFacts {
        holder: Some(holder.into()),
        renew_time: Some(base + k8s_openapi::jiff::SignedDuration::from_secs(at)),
        acquire_time: Some(base),
        duration_seconds: Some(15),
        transitions: Some(1),
    };
    fn script<T>(items: Vec<(u64, T)>) -> impl futures::Stream<Item = T> {
        let start = tokio::time::Instant::now();
        futures::stream::iter(items)
            .then(move |(at, u)| async move {
                tokio::time::sleep_until(start + Duration::from_secs(at)).await;
                u
            })
            .chain(futures::stream::pending())
    }
    let dispatch_ref = LeaseRef { namespace: "dispatch-system".into(), name: "dispatch-admission".into() };
    let kueue_ref = LeaseRef::kueue_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let clock = PausedClock { base, start: tokio::time::Instant::now() };
        let dispatch: Vec<(u64, LeaseUpdate)> = std::iter::once((0, LeaseUpdate::Link(LinkEvent::Up)))
            .chain(
                (0..=60).step_by(10).map(|t| (t, LeaseUpdate::Lease(Some(facts("dispatch-admission-0_1", t as i64))))),
            )
            .collect();
        let kueue = vec![
            (0, KueueLeaseUpdate::Link(LinkEvent::Up)),
            (0, KueueLeaseUpdate::Lease(Fetched::Found(facts("kueue-controller-manager-7c9d_1", 0)))),
            (45, KueueLeaseUpdate::Lease(Fetched::Found(facts("kueue-controller-manager-5b2f_2", 45)))),
        ];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let log = kubectl_dispatch::log::Log::silent();
        let mut deps = kubectl_dispatch::commands::Deps {
            clock: &clock,
            out: &mut out,
            err: &mut err,
            log: &log,
            style,
            printer: None,
        };
        let opts = LeaseWatch { changes_only: false, until: None, timeout: None };
        let stop = tokio::time::sleep(Duration::from_secs(61));
        let leases = Leases { lease: &dispatch_ref, kueue: &kueue_ref };
        let confirm = kubectl_dispatch::commands::live::Confirmers::scripted(None).0;
        let shown = Shown { leases, output, opts, live_line: false, confirm };
        lease_watch::follow(script(dispatch), || script(kueue), shown, stop, &mut deps).await.unwrap();
        (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    })
}

#[test]
fn every_golden_file_is_rendered_by_a_test() {
    if updating() {
        return;
    }
    let names = [
        "gate-healthy",
        "gate-stale",
        "gate-stuck",
        "gate-queue-inactive",
        "gate-lease-forbidden",
        "gate-several",
        "gate-kueue-shapes",
        "gate-lease-missing",
        "gate-not-listed",
        "gate-two-failures",
        "lease-fresh",
        "lease-stale",
        "lease-forbidden",
        "lease-missing",
        "lease-no-holder",
        "lease-never-renewed",
        "workload-stale",
        "workload-quota",
        "workload-forbidden",
        "workload-retry",
        "workload-kueue-down",
        "workload-multikueue",
        "workloads-all",
        "lease-holder-restarting",
        "lease-holder-forbidden",
        "gate-holder-node-not-ready",
        "doctor-all-well",
        "doctor-missing-rules",
        "doctor-cannot-tell",
        "doctor-kueue-lease-stale",
        "gate-kueue-lease-fresh",
        "gate-kueue-lease-stale",
        "gate-kueue-lease-none",
        "gate-kueue-lease-forbidden",
        "lease-watch-kueue-down",
        "gate-controller-elsewhere",
        "gate-queue-inactive-alone",
        "workload-queue-inactive",
        "doctor-controller-elsewhere",
        "doctor-queue-inactive",
    ];
    let mut expected: BTreeSet<String> =
        names.iter().flat_map(|n| FORMATS.iter().map(move |(suffix, ..)| format!("{n}{suffix}"))).collect();
    // Every report's table with colour on (workloads': its wide one), and fleet's (below).
    expected.extend(names.iter().map(|n| format!("{n}-color.txt")));
    for gate in names.iter().filter(|n| n.starts_with("gate-")) {
        expected.insert(format!("{gate}.prom"));
        expected.insert(format!("{gate}-no-headers.stderr.txt"));
    }
    expected.insert("lease-watch-kueue-down-no-headers.stderr.txt".into());
    expected.extend(
        ["fleet.txt", "fleet-color.txt", "fleet.prom", "fleet.stderr.txt", "fleet-prom.stderr.txt"].map(String::from),
    );
    expected.insert("workloads-ml.txt".into());
    expected.insert("workloads-all-custom-columns.txt".into());
    expected.insert("workloads-all-custom-columns-no-headers.txt".into());
    expected.insert("gate-controller-elsewhere.stderr.txt".into());
    let present: BTreeSet<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let stray: Vec<_> = present.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&present).collect();
    assert!(stray.is_empty() && missing.is_empty(), "stray golden files: {stray:?}; missing: {missing:?}");
}

//! `doctor`: what this plugin and dispatch's adapter need, checked from the caller's identity,
//! as findings judged from fetched facts at one `now`: the access reviews' answers, Kueue's
//! served versions, the Lease's namespace, the Lease and its holder's pod.

use k8s_openapi::jiff::Timestamp;

use super::fetched::Fetched;
use super::gate::GateSettings;
use super::holder::{HolderFacts, PodState};
use super::kueue::{API_VERSIONS, AdmissionCheck, ClusterQueue, inactive_by_kueue, inactive_sentence};
use super::kueue_lease;
use super::lease::{self, LeaseFacts, LeaseRef, LeaseState};
use super::lookalike;
use super::waiting::Waiting;

/// One read the plugin (or the adapter) does, as an access review asks about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub verb: &'static str,
    /// The API group; "" for the core group.
    pub group: &'static str,
    pub resource: &'static str,
    /// `None`: cluster-scoped, or every namespace.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// What stops without it.
    pub needed_by: &'static str,
    /// Without it the gate or the plugin stops; otherwise only a note is lost.
    pub required: bool,
}

impl Access {
    /// `get leases.coordination.k8s.io "dispatch-admission" in namespace dispatch-system`.
    pub fn rule(&self) -> String {
        let resource = qualified(self.group, self.resource);
        let name = self.name.as_deref().map(|n| format!(" {n:?}")).unwrap_or_default();
        let scope = match (&self.namespace, cluster_scoped(self.resource)) {
            (Some(ns), _) => format!(" in namespace {ns}"),
            (None, true) => " (cluster-wide)".into(),
            (None, false) => " in all namespaces".into(),
        };
        format!("{} {resource}{name}{scope}", self.verb)
    }

    /// The read as `kubectl get` names it, for the default table (the rule in full is in
    /// `-o wide` and JSON): `get leases dispatch-admission -n dispatch-system`,
    /// `list clusterqueues (cluster-wide)`, `list workloads -A`.
    pub fn brief(&self) -> String {
        let name = self.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
        let scope = match (&self.namespace, cluster_scoped(self.resource)) {
            (Some(ns), _) => format!(" -n {ns}"),
            (None, true) => " (cluster-wide)".into(),
            (None, false) => " -A".into(),
        };
        format!("{} {}{name}{scope}", self.verb, self.resource)
    }
}

/// `leases.coordination.k8s.io`, or `pods` for the core group: a resource as RBAC and kubectl
/// name it.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

fn cluster_scoped(resource: &str) -> bool {
    matches!(resource, "clusterqueues" | "admissionchecks" | "nodes" | "namespaces")
}

/// Every read the plugin does, and the adapter's own get on the Lease. `namespace` is where
/// the Workloads are read (`None` with `-A`).
pub fn reads(lease: &LeaseRef, namespace: Option<&str>) -> Vec<Access> {
    let at = |verb, group, resource, ns: Option<&str>, name: Option<&str>, needed_by, required| Access {
        verb,
        group,
        resource,
        namespace: ns.map(String::from),
        name: name.map(String::from),
        needed_by,
        required,
    };
    let (lns, lname) = (Some(lease.namespace.as_str()), Some(lease.name.as_str()));
    const KUEUE: &str = "kueue.x-k8s.io";
    vec![
        at("get", "coordination.k8s.io", "leases", lns, lname, "gate, lease, and the adapter's preflight", true),
        // Without list and watch, the live modes follow the Lease by polling with get.
        at(
            "list",
            "coordination.k8s.io",
            "leases",
            lns,
            lname,
            "lease --watch, gate --watch and --wait (else they poll)",
            false,
        ),
        at(
            "watch",
            "coordination.k8s.io",
            "leases",
            lns,
            lname,
            "lease --watch, gate --watch and --wait (else they poll)",
            false,
        ),
        at("list", KUEUE, "clusterqueues", None, None, "gate (check 1)", true),
        at("watch", KUEUE, "clusterqueues", None, None, "gate --watch and --wait", true),
        at("list", KUEUE, "admissionchecks", None, None, "gate (checks 2 and 3)", true),
        at("watch", KUEUE, "admissionchecks", None, None, "gate --watch and --wait", true),
        at("list", KUEUE, "localqueues", namespace, None, "gate (a waiting Workload's ClusterQueue)", true),
        at("watch", KUEUE, "localqueues", namespace, None, "gate --watch and --wait", true),
        at("list", KUEUE, "workloads", namespace, None, "gate (the waiting Workloads)", true),
        at("watch", KUEUE, "workloads", namespace, None, "gate --watch and --wait", true),
        at("get", KUEUE, "workloads", namespace, None, "workload NAME", true),
        at("get", KUEUE, "localqueues", namespace, None, "workload NAME (its ClusterQueue)", true),
        at(
            "get",
            "visibility.kueue.x-k8s.io",
            "localqueues/pendingworkloads",
            namespace,
            None,
            "workload NAME (its place in the queue, a note)",
            false,
        ),
        at("get", "", "pods", lns, None, "the holder's pod (a note)", false),
        at("get", "", "nodes", None, None, "the holder pod's node (a note)", false),
        at("list", "", "namespaces", None, None, "completion of -n (a convenience)", false),
    ]
}

/// The get on Kueue's manager's Lease that the gate, `workload` and `doctor` read as context:
/// optional, so that `--rbac` grants it when the manager's row warns that it cannot be read.
pub fn kueue_lease_read(kueue: &LeaseRef) -> Access {
    Access {
        verb: "get",
        group: "coordination.k8s.io",
        resource: "leases",
        namespace: Some(kueue.namespace.clone()),
        name: Some(kueue.name.clone()),
        needed_by: "Kueue's manager's heartbeat (context)",
        required: false,
    }
}

/// An access review's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Allowed,
    /// Denied; the authorizer's reason when it gave one.
    Denied(Option<String>),
    /// The review itself could not be made (e.g. creating SelfSubjectAccessReviews is forbidden).
    Unanswered(String),
}

/// Who the caller is, from a SelfSubjectReview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub username: String,
    pub groups: Vec<String>,
}

/// Kueue's API group as discovery and one read saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KueueServed {
    /// The group is not served (Kueue is not installed).
    NotServed,
    /// Discovery of the group was refused (403).
    Forbidden,
    Served {
        /// Every version served, as discovery lists them.
        versions: Vec<String>,
        /// The version the plugin reads (v1beta2, else v1beta1); `None` when neither is served.
        reads: Option<String>,
        /// Why the plugin reads another version than discovery chose (conversion webhook down).
        fallback: Option<String>,
        /// No version served could be read: the error.
        error: Option<String>,
    },
}

/// Everything the doctor reads.
#[derive(Debug, Clone)]
pub struct DoctorFacts {
    /// `None` when the caller may not ask who it is (no SelfSubjectReview).
    pub identity: Option<Identity>,
    pub access: Vec<(Access, Answer)>,
    pub kueue: KueueServed,
    /// The Lease's namespace (a GET of the Namespace).
    pub namespace: Fetched<()>,
    pub lease: Fetched<LeaseFacts>,
    pub holder: Option<HolderFacts>,
    /// Kueue's own manager's Lease and what reading it gave; `None` when not read.
    pub kueue_lease: Option<(LeaseRef, Fetched<LeaseFacts>)>,
    /// Kueue's queues and checks as the gate reads them; `None` when they could not be read.
    pub queues: Option<QueueFacts>,
}

/// What the gate reads of Kueue, for the doctor's findings about it: dispatch's checks under
/// another controllerName, and ClusterQueues Kueue itself does not admit on.
#[derive(Debug, Clone)]
pub struct QueueFacts {
    /// dispatch's controllerName (`--controller-name`, the adapter's config, or the default).
    pub controller_name: String,
    pub cluster_queues: Fetched<Vec<ClusterQueue>>,
    pub admission_checks: Fetched<Vec<AdmissionCheck>>,
    /// The Workloads waiting at dispatch's checks or at their lookalikes.
    pub waiting: Vec<Waiting>,
}

/// How a finding weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    /// Worth knowing; stops nothing.
    Warning,
    /// Cannot tell.
    Unknown,
    /// Would stop the gate or the plugin.
    Fail,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Unknown => "unknown",
            Level::Fail => "fail",
        }
    }
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// access, identity, kueue, namespace, lease, holder pod.
    pub area: &'static str,
    pub check: String,
    /// The check in fewer words, for the default table (`None`: as `check` says it): a read
    /// as `kubectl get` names it ([`Access::brief`]), the Lease without its name.
    pub short: Option<String>,
    pub level: Level,
    pub detail: String,
    /// For access findings: the read asked about.
    pub access: Option<(Access, Answer)>,
}

/// The doctor's judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorReport {
    pub identity: Option<Identity>,
    pub findings: Vec<Finding>,
    /// The reads denied, in the order asked.
    pub missing: Vec<Access>,
    /// The RBAC objects that grant what is missing; `None` when nothing is.
    pub rbac: Option<RbacPlan>,
    /// The command an admin runs to apply them: `kubectl dispatch doctor --as <the caller>
    /// --rbac | kubectl apply -f -`, so that the RBAC is computed for the caller, not for the
    /// admin; `None` when nothing is missing.
    pub grant: Option<String>,
    /// Fail when anything would stop the gate or the plugin, else Unknown when something
    /// cannot be told, else Ok (warnings never count).
    pub overall: Level,
}

/// What `doctor --rbac` could make of the access reviews, whatever else the doctor found (a
/// stale Lease is no reason to withhold a grant): its exit code says this, not the checklist's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RbacOutcome {
    /// Every read was reviewed and the grant names the caller: apply it (or, with no plan,
    /// nothing is missing).
    Complete,
    /// The grant is partial or names no one: these are the reads that could not be reviewed,
    /// or the placeholder user that must be replaced.
    Incomplete(Vec<String>),
}

impl DoctorReport {
    /// Whether `--rbac`'s YAML is the whole grant for a named caller.
    pub fn rbac_outcome(&self) -> RbacOutcome {
        let mut gaps: Vec<String> = self
            .findings
            .iter()
            .filter_map(|f| match &f.access {
                Some((access, Answer::Unanswered(why))) => Some(format!("{}: cannot tell: {why}", access.rule())),
                _ => None,
            })
            .collect();
        if self.rbac.is_some() && self.identity.is_none() {
            gaps.push(format!("the user could not be named: replace {RBAC_PLACEHOLDER} in the YAML"));
        }
        if gaps.is_empty() { RbacOutcome::Complete } else { RbacOutcome::Incomplete(gaps) }
    }
}

/// Judges the facts at `now`.
pub fn evaluate(lease_ref: &LeaseRef, facts: &DoctorFacts, now: Timestamp) -> DoctorReport {
    let mut findings = Vec::new();
    findings.push(identity_finding(facts.identity.as_ref()));
    for (access, answer) in &facts.access {
        findings.push(access_finding(access, answer));
    }
    findings.push(kueue_finding(&facts.kueue));
    findings.push(namespace_finding(lease_ref, &facts.namespace, &facts.lease));
    let assessment = lease::assess_with_holder(lease_ref, &facts.lease, facts.holder.as_ref(), now);
    findings.push(lease_finding(lease_ref, &assessment.state));
    if let Some(pod) = &assessment.holder_pod {
        let level = match pod.state {
            PodState::Ready { .. } => Level::Ok,
            _ => Level::Warning,
        };
        findings.push(Finding {
            area: "holder pod",
            check: "the holder's pod runs".into(),
            short: None,
            level,
            detail: pod.sentence(),
            access: None,
        });
    }
    if let Some((kueue_ref, fetched)) = &facts.kueue_lease {
        findings.push(kueue_lease_finding(&kueue_lease::assess(kueue_ref, fetched, now)));
    }
    if let Some(queues) = &facts.queues {
        findings.extend(queue_findings(queues));
    }
    let missing: Vec<Access> =
        facts.access.iter().filter(|(_, answer)| matches!(answer, Answer::Denied(_))).map(|(a, _)| a.clone()).collect();
    let rbac = (!missing.is_empty()).then(|| rbac_plan(&missing, facts.identity.as_ref()));
    let overall = findings.iter().map(|f| f.level).filter(|l| *l != Level::Warning).max().unwrap_or(Level::Ok);
    let grant = rbac.as_ref().map(|_| grant_command(lease_ref, facts));
    DoctorReport { identity: facts.identity.clone(), findings, missing, rbac, grant, overall }
}

/// `kubectl dispatch doctor --as alice --as-group team-ml -n team-a --rbac | kubectl apply -f -`:
/// the doctor run as the caller (the SelfSubjectReview's user and its groups; the placeholder
/// when it could not be asked), with the reads that chose the RBAC (the Workloads' namespace,
/// a Lease that is not the default), so that an admin who runs it gets the caller's RBAC.
pub fn grant_command(lease_ref: &LeaseRef, facts: &DoctorFacts) -> String {
    let word = super::lookalike::shell_word;
    let mut args = vec!["kubectl dispatch doctor".to_string()];
    match &facts.identity {
        Some(id) => {
            args.push(format!("--as {}", word(&id.username)));
            // system:authenticated is added to every impersonated user by the API server.
            let groups = id.groups.iter().filter(|g| g.as_str() != "system:authenticated");
            args.extend(groups.map(|g| format!("--as-group {}", word(g))));
        }
        None => args.push(format!("--as {RBAC_PLACEHOLDER}")),
    }
    let workloads = facts.access.iter().find(|(a, _)| a.resource == "workloads").map(|(a, _)| &a.namespace);
    match workloads {
        Some(Some(ns)) => args.push(format!("-n {}", word(ns))),
        Some(None) => args.push("-A".into()),
        None => {}
    }
    if *lease_ref != LeaseRef::default() {
        args.push(format!("--lease {}", word(&lease_ref.to_string())));
    }
    if let Some((kueue, _)) = facts.kueue_lease.as_ref().filter(|(k, _)| *k != LeaseRef::kueue_default()) {
        args.push(format!("--kueue-lease {}", word(&kueue.to_string())));
    }
    args.push("--rbac | kubectl apply -f -".into());
    args.join(" ")
}

fn identity_finding(identity: Option<&Identity>) -> Finding {
    let (level, detail) = match identity {
        Some(id) if id.groups.is_empty() => (Level::Ok, id.username.clone()),
        Some(id) => (Level::Ok, format!("{} (groups: {})", id.username, id.groups.join(", "))),
        None => (
            Level::Warning,
            "may not create SelfSubjectReviews: the RBAC it prints names a placeholder user".to_string(),
        ),
    };
    Finding { area: "identity", check: "who the checks run as".into(), short: None, level, detail, access: None }
}

fn access_finding(access: &Access, answer: &Answer) -> Finding {
    let (level, detail) = match answer {
        Answer::Allowed => (Level::Ok, format!("allowed; for {}", access.needed_by)),
        Answer::Denied(reason) => {
            let level = if access.required { Level::Fail } else { Level::Warning };
            let why = reason.as_deref().filter(|r| !r.is_empty()).map(|r| format!(" ({r})")).unwrap_or_default();
            (level, format!("denied{why}; needed by {}", access.needed_by))
        }
        Answer::Unanswered(why) => (Level::Unknown, format!("cannot tell: {why}")),
    };
    Finding {
        area: "access",
        check: access.rule(),
        short: Some(access.brief()),
        level,
        detail,
        access: Some((access.clone(), answer.clone())),
    }
}

fn kueue_finding(kueue: &KueueServed) -> Finding {
    let check = "Kueue's API versions agree with the plugin's".to_string();
    let (level, detail) = match kueue {
        KueueServed::NotServed => {
            (Level::Fail, "kueue.x-k8s.io is not served: Kueue is not installed on this cluster".to_string())
        }
        KueueServed::Forbidden => {
            (Level::Unknown, "cannot tell: may not read the discovery document /apis/kueue.x-k8s.io".to_string())
        }
        KueueServed::Served { versions, reads, fallback, error } => {
            let served = format!("serves {}", versions.join(", "));
            match (reads, fallback, error) {
                (_, _, Some(error)) => (Level::Fail, format!("{served}; {error}")),
                (None, _, _) => (Level::Fail, format!("{served}; the plugin reads {}", API_VERSIONS.join(" or "))),
                (Some(v), Some(why), None) => (Level::Warning, format!("{served}; the plugin reads {v}: {why}")),
                (Some(v), None, None) => (Level::Ok, format!("{served}; the plugin reads {v}")),
            }
        }
    };
    Finding { area: "kueue", check, short: None, level, detail, access: None }
}

fn namespace_finding(lease_ref: &LeaseRef, namespace: &Fetched<()>, lease: &Fetched<LeaseFacts>) -> Finding {
    let ns = &lease_ref.namespace;
    let (level, detail) = match (namespace, lease) {
        (Fetched::Found(()), _) => (Level::Ok, "exists".to_string()),
        (Fetched::Missing, _) => (Level::Fail, format!("namespace {ns} does not exist")),
        (Fetched::Forbidden(_), Fetched::Found(_)) => (Level::Ok, "exists (the Lease is in it)".to_string()),
        (Fetched::Forbidden(d), _) => (Level::Unknown, format!("cannot tell: missing RBAC: {}", d.rule)),
    };
    Finding {
        area: "namespace",
        check: format!("the Lease's namespace {ns} exists"),
        short: Some("the Lease's namespace exists".into()),
        level,
        detail,
        access: None,
    }
}

fn lease_finding(lease_ref: &LeaseRef, state: &LeaseState) -> Finding {
    let (level, detail) = match state {
        LeaseState::Fresh { .. } => (Level::Ok, "fresh: the adapter writes".to_string()),
        LeaseState::Forbidden { rule } => (Level::Unknown, format!("cannot tell: missing RBAC: {rule}")),
        other => (Level::Fail, other.reason(lease_ref).unwrap_or_default()),
    };
    Finding {
        area: "lease",
        check: format!("Lease {lease_ref} is a live heartbeat"),
        short: Some("the Lease is a live heartbeat".into()),
        level,
        detail,
        access: None,
    }
}

/// Kueue's manager's heartbeat: context, so never worse than a warning. Ok only when a manager
/// is shown to lead; a warning when its Lease shows none does, or when it could not be checked
/// (no Lease: a manager without leader election, or no Kueue manager at all; a read
/// deploy/rbac.yaml does not grant): a row that could not check is not `ok`.
fn kueue_lease_finding(a: &lease::LeaseAssessment) -> Finding {
    let level = if matches!(a.state, LeaseState::Fresh { .. }) { Level::Ok } else { Level::Warning };
    Finding {
        area: "kueue manager",
        check: "Kueue's manager holds its Lease (context)".into(),
        short: None,
        level,
        detail: kueue_lease::sentence(a),
        access: None,
    }
}

/// What the gate would say beside its verdict: each AdmissionCheck that is plainly dispatch's
/// under another controllerName (with its flag and its waiting Workloads), and each ClusterQueue
/// that lists one of dispatch's checks but that Kueue reports inactive for a reason of its own.
/// Warnings: neither changes the adapter's verdict, which `gate` gives.
fn queue_findings(q: &QueueFacts) -> Vec<Finding> {
    let settings = GateSettings { controller_name: q.controller_name.clone(), ..GateSettings::default() };
    let mut findings: Vec<Finding> = lookalike::find(settings.wanted(), &q.admission_checks, &q.waiting)
        .into_iter()
        .map(|l| {
            let waits = if l.waiting > 0 { format!("; {}", l.waiting_sentence()) } else { String::new() };
            Finding {
                area: "admission check",
                check: format!("an AdmissionCheck names controller {}", q.controller_name),
                short: None,
                level: Level::Warning,
                detail: format!("{}{waits}", l.warning(&q.controller_name)),
                access: None,
            }
        })
        .collect();
    let dispatch = super::gate::dispatch_checks(&settings, &q.admission_checks);
    let queues = q.cluster_queues.found().map(Vec::as_slice).unwrap_or_default();
    for cq in queues.iter().filter(|cq| cq.check_names().any(|c| dispatch.contains(c))) {
        let Some(active) = inactive_by_kueue(cq.active.as_ref()) else { continue };
        let waits = q.waiting.iter().filter(|w| w.cluster_queue.as_deref() == Some(&cq.name)).count();
        let waits = match waits {
            0 => String::new(),
            1 => "; 1 workload waits there".to_string(),
            n => format!("; {n} workloads wait there"),
        };
        findings.push(Finding {
            area: "clusterqueue",
            check: format!("Kueue admits on ClusterQueue {}", cq.name),
            short: None,
            level: Level::Warning,
            detail: format!(
                "{}: Kueue admits nothing there, whatever dispatch's gate says{waits} (kubectl describe clusterqueue {})",
                inactive_sentence(&cq.name, active),
                cq.name
            ),
            access: None,
        });
    }
    findings
}

/// What the caller lacks, as the RBAC objects that grant it: a ClusterRole and
/// ClusterRoleBinding for the cluster-wide reads, a Role and RoleBinding per namespace for the
/// others, bound to the caller (a ServiceAccount when the username is one), else to a
/// placeholder to replace. Data only: `report::rbac` writes it as YAML.
#[derive(Debug, Clone, PartialEq)]
pub struct RbacPlan {
    /// The caller's username, when the server said it.
    pub caller: Option<String>,
    /// The name of every object: `kubectl-dispatch-doctor-<caller>`.
    pub object: String,
    pub subject: RbacSubject,
    /// The cluster-wide scope (`namespace: None`) first, then the namespaces in order.
    pub scopes: Vec<RbacScope>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RbacSubject {
    ServiceAccount {
        namespace: String,
        name: String,
    },
    /// A user by name, or the placeholder `REPLACE-WITH-THE-USER`.
    User(String),
}

/// The rules of one Role (a namespace) or of the ClusterRole (`None`).
#[derive(Debug, Clone, PartialEq)]
pub struct RbacScope {
    pub namespace: Option<String>,
    pub rules: Vec<RbacRule>,
}

/// One rule: a (group, resource, name) and the verbs asked of it, in the order asked, with
/// what needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct RbacRule {
    pub group: &'static str,
    pub resource: &'static str,
    pub name: Option<String>,
    pub verbs: Vec<&'static str>,
    pub needed_by: Vec<&'static str>,
}

pub const RBAC_PLACEHOLDER: &str = "REPLACE-WITH-THE-USER";

/// The RBAC objects that grant `missing` to the caller.
pub fn rbac_plan(missing: &[Access], identity: Option<&Identity>) -> RbacPlan {
    let caller = identity.map(|i| i.username.clone());
    let username = caller.as_deref().unwrap_or(RBAC_PLACEHOLDER);
    let parts: Vec<&str> = username.splitn(4, ':').collect();
    let subject = match parts[..] {
        ["system", "serviceaccount", ns, name] if !ns.is_empty() && !name.is_empty() => {
            RbacSubject::ServiceAccount { namespace: ns.into(), name: name.into() }
        }
        _ => RbacSubject::User(username.into()),
    };
    let mut namespaces: Vec<Option<String>> = Vec::new();
    for a in missing {
        if !namespaces.contains(&a.namespace) {
            namespaces.push(a.namespace.clone());
        }
    }
    namespaces.sort();
    let scopes = namespaces
        .into_iter()
        .map(|namespace| {
            let rules = rules(missing.iter().filter(|a| a.namespace == namespace));
            RbacScope { namespace, rules }
        })
        .collect();
    RbacPlan {
        object: format!("kubectl-dispatch-doctor-{}", slug(caller.as_deref().unwrap_or("user"))),
        caller,
        subject,
        scopes,
    }
}

/// One rule per (group, resource, name), with the verbs in the order asked.
fn rules<'a>(accesses: impl Iterator<Item = &'a Access>) -> Vec<RbacRule> {
    let mut rules: Vec<RbacRule> = Vec::new();
    for a in accesses {
        let i = match rules
            .iter()
            .position(|r| (r.group, r.resource, r.name.as_deref()) == (a.group, a.resource, a.name.as_deref()))
        {
            Some(i) => i,
            None => {
                rules.push(RbacRule {
                    group: a.group,
                    resource: a.resource,
                    name: a.name.clone(),
                    verbs: Vec::new(),
                    needed_by: Vec::new(),
                });
                rules.len() - 1
            }
        };
        let rule = &mut rules[i];
        if !rule.verbs.contains(&a.verb) {
            rule.verbs.push(a.verb);
        }
        if !rule.needed_by.contains(&a.needed_by) {
            rule.needed_by.push(a.needed_by);
        }
    }
    rules
}

/// A name fit for an object's name: lower case, `[a-z0-9-]`, at most 63 characters.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let out: String = out.chars().take(63).collect();
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "user".into() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fetched::Denied;
    use k8s_openapi::jiff::SignedDuration;

    fn now() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().unwrap()
    }

    fn facts(answer: impl Fn(&Access) -> Answer) -> DoctorFacts {
        let access = reads(&LeaseRef::default(), Some("team-a")).into_iter().map(|a| (a.clone(), answer(&a))).collect();
        DoctorFacts {
            identity: Some(Identity { username: "alice".into(), groups: vec!["system:authenticated".into()] }),
            access,
            kueue: KueueServed::Served {
                versions: vec!["v1beta2".into(), "v1beta1".into()],
                reads: Some("v1beta2".into()),
                fallback: None,
                error: None,
            },
            namespace: Fetched::Found(()),
            lease: Fetched::Found(LeaseFacts {
                holder: Some("ctl-0_x".into()),
                renew_time: Some(now() - SignedDuration::from_secs(2)),
                acquire_time: None,
                duration_seconds: Some(15),
                transitions: None,
            }),
            holder: None,
            kueue_lease: None,
            queues: None,
        }
    }

    #[test]
    fn all_allowed_is_ok_and_asks_nothing() {
        let r = evaluate(&LeaseRef::default(), &facts(|_| Answer::Allowed), now());
        assert_eq!(r.overall, Level::Ok);
        assert!(r.rbac.is_none() && r.missing.is_empty());
        assert_eq!(
            r.findings[1].check,
            "get leases.coordination.k8s.io \"dispatch-admission\" in namespace dispatch-system"
        );
        assert_eq!(r.findings[4].check, "list clusterqueues.kueue.x-k8s.io (cluster-wide)");
        assert_eq!(r.findings[8].check, "list localqueues.kueue.x-k8s.io in namespace team-a");
        let brief: Vec<String> = r.findings.iter().filter_map(|f| f.access.as_ref()).map(|(a, _)| a.brief()).collect();
        assert_eq!(brief[0], "get leases dispatch-admission -n dispatch-system");
        assert_eq!(brief[3], "list clusterqueues (cluster-wide)");
        assert_eq!(brief[7], "list localqueues -n team-a");
        let everywhere = reads(&LeaseRef::default(), None);
        assert_eq!(everywhere[9].brief(), "list workloads -A");
    }

    #[test]
    fn a_denied_optional_read_is_a_warning_and_a_required_one_fails() {
        let pods_only = |a: &Access| if a.resource == "pods" { Answer::Denied(None) } else { Answer::Allowed };
        let r = evaluate(&LeaseRef::default(), &facts(pods_only), now());
        assert_eq!(r.overall, Level::Ok);
        assert_eq!(r.missing.len(), 1);
        let plan = r.rbac.unwrap();
        assert_eq!(plan.object, "kubectl-dispatch-doctor-alice");
        assert_eq!(plan.scopes.len(), 1);
        let scope = &plan.scopes[0];
        assert_eq!(scope.namespace.as_deref(), Some("dispatch-system"));
        assert_eq!(
            scope.rules,
            [RbacRule {
                group: "",
                resource: "pods",
                name: None,
                verbs: vec!["get"],
                needed_by: vec!["the holder's pod (a note)"]
            }]
        );
        let leases =
            |a: &Access| if a.resource == "leases" { Answer::Denied(Some("no".into())) } else { Answer::Allowed };
        let r = evaluate(&LeaseRef::default(), &facts(leases), now());
        assert_eq!(r.overall, Level::Fail);
        let plan = r.rbac.unwrap();
        let rule = &plan.scopes[0].rules[0];
        assert_eq!(
            (rule.resource, rule.name.as_deref(), rule.verbs.as_slice()),
            ("leases", Some("dispatch-admission"), ["get", "list", "watch"].as_slice())
        );
    }

    #[test]
    fn an_unanswered_review_is_unknown_unless_something_fails() {
        let r = evaluate(&LeaseRef::default(), &facts(|_| Answer::Unanswered("forbidden".into())), now());
        assert_eq!(r.overall, Level::Unknown);
        let mut f = facts(|_| Answer::Unanswered("forbidden".into()));
        f.namespace = Fetched::Missing;
        assert_eq!(evaluate(&LeaseRef::default(), &f, now()).overall, Level::Fail);
    }

    #[test]
    fn rbac_is_complete_whatever_the_lease_says() {
        let pods = |a: &Access| if a.resource == "pods" { Answer::Denied(None) } else { Answer::Allowed };
        let mut f = facts(pods);
        f.lease = Fetched::Found(LeaseFacts {
            renew_time: Some(now() - SignedDuration::from_secs(600)),
            ..f.lease.found().unwrap().clone()
        });
        let r = evaluate(&LeaseRef::default(), &f, now());
        assert_eq!(r.overall, Level::Fail, "the stale Lease fails the checklist");
        assert_eq!(r.rbac_outcome(), RbacOutcome::Complete, "but the grant is whole");
        assert_eq!(
            evaluate(&LeaseRef::default(), &facts(|_| Answer::Allowed), now()).rbac_outcome(),
            RbacOutcome::Complete
        );
        let mut nobody = facts(pods);
        nobody.identity = None;
        let RbacOutcome::Incomplete(gaps) = evaluate(&LeaseRef::default(), &nobody, now()).rbac_outcome() else {
            panic!("a placeholder user is no whole grant")
        };
        assert_eq!(gaps, ["the user could not be named: replace REPLACE-WITH-THE-USER in the YAML"]);
        let unanswered =
            |a: &Access| if a.resource == "pods" { Answer::Unanswered("x".into()) } else { Answer::Allowed };
        let RbacOutcome::Incomplete(gaps) = evaluate(&LeaseRef::default(), &facts(unanswered), now()).rbac_outcome()
        else {
            panic!("an unreviewed read is no whole grant")
        };
        assert_eq!(gaps.len(), 1);
        assert!(gaps[0].starts_with("get pods") && gaps[0].ends_with(": cannot tell: x"), "{gaps:?}");
    }

    #[test]
    fn kueue_namespace_and_lease() {
        let mut f = facts(|_| Answer::Allowed);
        f.kueue = KueueServed::NotServed;
        f.lease = Fetched::Forbidden(Denied { rule: "get leases".into() });
        f.namespace = Fetched::Forbidden(Denied { rule: "get namespaces".into() });
        let r = evaluate(&LeaseRef::default(), &f, now());
        let level = |area: &str| r.findings.iter().find(|x| x.area == area).unwrap().level;
        assert_eq!((level("kueue"), level("namespace"), level("lease")), (Level::Fail, Level::Unknown, Level::Unknown));
        f.lease = Fetched::Missing;
        let r = evaluate(&LeaseRef::default(), &f, now());
        let lease = r.findings.iter().find(|x| x.area == "lease").unwrap();
        assert_eq!(
            (lease.level, lease.detail.as_str()),
            (Level::Fail, "Lease dispatch-system/dispatch-admission does not exist")
        );
    }

    #[test]
    fn the_subject_is_the_caller_a_service_account_or_a_placeholder() {
        let missing = vec![reads(&LeaseRef::default(), None).remove(3)];
        let sa = Identity { username: "system:serviceaccount:dispatch-system:adapter".into(), groups: vec![] };
        let plan = rbac_plan(&missing, Some(&sa));
        assert_eq!(
            plan.subject,
            RbacSubject::ServiceAccount { namespace: "dispatch-system".into(), name: "adapter".into() }
        );
        assert_eq!(plan.object, "kubectl-dispatch-doctor-system-serviceaccount-dispatch-system-adapter");
        let plan = rbac_plan(&missing, None);
        assert_eq!(plan.subject, RbacSubject::User(RBAC_PLACEHOLDER.into()));
        assert_eq!((plan.object.as_str(), plan.scopes[0].namespace.as_deref()), ("kubectl-dispatch-doctor-user", None));
        assert_eq!(slug("Alice@Example.COM"), "alice-example-com");
    }
}

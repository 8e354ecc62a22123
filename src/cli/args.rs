//! The command line, as clap derive types. Doc comments are the help text. kubectl hands a
//! plugin its arguments untouched (it refuses flags before the plugin name), so the plugin
//! parses kubectl's connection flags itself, after its name.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

use crate::core::lease::LeaseRef;
use crate::exit::{EXIT_CODES_HELP, WORKLOAD_EXIT_CODES_HELP};
use crate::invocation::{self, ConnectionSettings, OutputChoice, PrinterKind, Secret};

/// See whether dispatch's readmission gate holds, why, and what waits because of it.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-dispatch",
    bin_name = "kubectl dispatch",
    version,
    after_help = EXIT_CODES_HELP,
    disable_help_subcommand = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// gate's `-n`/`-A` typed before the verb (`kubectl dispatch -n ml gate`), as kubectl
    /// takes flags before or after the verb; any other verb refuses them.
    #[command(flatten)]
    pub scope: ScopeArgs,

    /// Colour the verdicts: auto (on a terminal, unless NO_COLOR is set or TERM is dumb), always, never
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,

    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorArg {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The readmission gate as the adapter judges it: each check, the verdict, and the
    /// Workloads waiting at dispatch's Pending check.
    #[command(after_help = with_examples(GATE_EXAMPLES, EXIT_CODES_HELP))]
    Gate(GateArgs),
    /// The controller's leader-election Lease as a heartbeat: holder, last renewal, limit,
    /// status.
    #[command(after_help = with_examples(LEASE_EXAMPLES, EXIT_CODES_HELP))]
    Lease(LeaseArgs),
    /// One Workload explained: its queues, quota, admission checks, the gate of its
    /// ClusterQueue when dispatch's check is among them, and where it is stuck; without NAME,
    /// every Workload of the namespace (-A: of all), each with that explanation in one row.
    #[command(visible_aliases = ["workloads", "kwl"], after_help = with_examples(WORKLOAD_EXAMPLES, WORKLOAD_EXIT_CODES_HELP))]
    Workload(WorkloadArgs),
    /// Check what this plugin and dispatch's adapter need, as the caller (or --as): each
    /// read's RBAC, Kueue's served versions, the Lease's namespace, the Lease and its holder's
    /// pod; print the RBAC to add.
    #[command(
        after_help = with_examples(DOCTOR_EXAMPLES, EXIT_CODES_HELP),
        mut_arg("namespace", |a| a.help("The namespace whose Workload reads to check, as gate reads them (default: the context's namespace, else default)")),
        mut_arg("all_namespaces", |a| a.help("Check the Workload reads of every namespace, as gate -A reads them")),
        // doctor's document names no Kubernetes object, so it has no -o name.
        mut_arg("output", |a| a
            .help("Output format: table, wide, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE (the last four over the -o json document)")
            .value_parser(OutputParser { gate: false, name: false }))
    )]
    Doctor(DoctorArgs),
    /// Print a shell completion script for kubectl-dispatch (bash, zsh, fish or powershell)
    Completion(CompletionArgs),
    /// Print the list of flags inherited by all commands (kubectl's connection flags)
    Options,
}

const GATE_EXAMPLES: &str = "  # Workloads stuck? The gate, and what waits at dispatch's check in every namespace
  kubectl dispatch gate -A

  # One ClusterQueue as JSON; .chains[].reasonCode says why in one word
  kubectl dispatch gate --cluster-queue team-a -o json

  # Wait up to 5 minutes for the gate to open (exit 0), then start a job
  kubectl dispatch gate --wait --timeout 5m && kubectl create -f job.yaml

  # Every context of the kubeconfig, one row each
  kubectl dispatch gate --all-contexts";

const LEASE_EXAMPLES: &str = "  # dispatch's controller's Lease (dispatch-system/dispatch-admission)
  kubectl dispatch lease

  # A Lease named as kubectl names it: NAME -n NAMESPACE (or as --lease: NAMESPACE/NAME)
  kubectl dispatch lease dispatch-admission -n dispatch-system
  kubectl dispatch lease dispatch-system/dispatch-admission

  # One field of the -o json document: the Lease's are under .lease, not .spec
  kubectl dispatch lease -o jsonpath='{.lease.status}'

  # Follow it; exit 0 once it is fresh again, 3 if 2 minutes pass first
  kubectl dispatch lease --watch --until fresh --timeout 2m";

const WORKLOAD_EXAMPLES: &str = "  # Every Workload of every namespace, each with why it waits (or does not)
  kubectl dispatch workloads -A

  # Why is this Workload not running?
  kubectl dispatch workload train-llama-7b-x9k2 -n ml

  # The same as YAML: .stage in one word, .summary the closing sentence
  kubectl dispatch workload train-llama-7b-x9k2 -n ml -o yaml";

const DOCTOR_EXAMPLES: &str = "  # What would stop this plugin or the adapter, as you
  kubectl dispatch doctor

  # As another user, and the RBAC an admin applies to grant what they lack
  kubectl dispatch doctor --as alice --rbac > grant.yaml";

/// A verb's `--help` ending: its examples, then its exit codes.
fn with_examples(examples: &str, codes: &str) -> String {
    format!("Examples:\n{examples}\n\n{codes}")
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to write the script for
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// The heading of kubectl's connection flags in `--help`.
const CONNECTION: &str = "Connection (kubectl's flags)";

/// kubectl's connection flags, accepted before or after the verb.
#[derive(Debug, Args, Default, Clone)]
pub struct ConnectionArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged as kubectl does, else ~/.kube/config)
    #[arg(value_hint = ValueHint::FilePath, help_heading = CONNECTION, long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (gate: repeat it to judge several clusters at once)
    #[arg(help_heading = CONNECTION, long = "context", global = true, value_name = "NAME")]
    pub contexts: Vec<String>,

    /// The kubeconfig cluster to use
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,

    /// The kubeconfig user to use
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "NAME")]
    pub user: Option<String>,

    /// User to impersonate
    #[arg(help_heading = CONNECTION, long = "as", global = true, value_name = "USER")]
    pub impersonate: Option<String>,

    /// Group to impersonate (repeatable)
    #[arg(help_heading = CONNECTION, long = "as-group", global = true, value_name = "GROUP")]
    pub impersonate_groups: Vec<String>,

    /// UID to impersonate (with --as)
    #[arg(help_heading = CONNECTION, long = "as-uid", global = true, value_name = "UID")]
    pub impersonate_uid: Option<String>,

    /// The address and port of the API server (replaces the kubeconfig cluster's server)
    #[arg(help_heading = CONNECTION, short = 's', long, global = true, value_name = "ADDRESS")]
    pub server: Option<String>,

    /// Bearer token for authentication to the API server
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "TOKEN")]
    pub token: Option<Secret>,

    /// Path to a cert file for the certificate authority
    #[arg(value_hint = ValueHint::FilePath, help_heading = CONNECTION, long, global = true, value_name = "PATH")]
    pub certificate_authority: Option<PathBuf>,

    /// Path to a client certificate file for TLS
    #[arg(value_hint = ValueHint::FilePath, help_heading = CONNECTION, long, global = true, value_name = "PATH")]
    pub client_certificate: Option<PathBuf>,

    /// Path to a client key file for TLS
    #[arg(value_hint = ValueHint::FilePath, help_heading = CONNECTION, long, global = true, value_name = "PATH")]
    pub client_key: Option<PathBuf>,

    /// Do not check the server's certificate (insecure)
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub insecure_skip_tls_verify: Option<bool>,

    /// Server name to check the server's certificate against (default: the server's host)
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "NAME")]
    pub tls_server_name: Option<String>,

    /// Do not ask the server to compress responses
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub disable_compression: Option<bool>,

    /// Bound on each request to the server, e.g. 5s or 1m; 0 means none
    #[arg(help_heading = CONNECTION, long, global = true, value_name = "DURATION", default_value = "0")]
    pub request_timeout: String,

    /// Log level for stderr: 1 shows the context and server, 6 each request
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,
}

impl ConnectionArgs {
    /// The plain settings a connection is made with: the one context in use (the first
    /// `--context`), and `namespace`, the `-n` of the verb, typed before it or after.
    pub fn settings(&self, namespace: Option<String>) -> ConnectionSettings {
        ConnectionSettings {
            kubeconfig: self.kubeconfig.clone(),
            context: self.contexts.first().cloned(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            impersonate: self.impersonate.clone(),
            impersonate_groups: self.impersonate_groups.clone(),
            impersonate_uid: self.impersonate_uid.clone(),
            namespace,
            server: self.server.clone(),
            token: self.token.clone(),
            certificate_authority: self.certificate_authority.clone(),
            client_certificate: self.client_certificate.clone(),
            client_key: self.client_key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            tls_server_name: self.tls_server_name.clone(),
            disable_compression: self.disable_compression,
        }
    }
}

/// Which Lease to read. Flags win over `--config`.
#[derive(Debug, Args, Default, Clone)]
pub struct LeaseTargetArgs {
    /// The controller's Lease [default: dispatch-system/dispatch-admission]
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub lease: Option<LeaseRef>,

    /// Read these settings from the adapter's YAML config (kueue.admissionLease, ...)
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Kueue's own manager's leader-election Lease, shown beside dispatch's as context.
#[derive(Debug, Args, Default, Clone)]
pub struct KueueLeaseArgs {
    /// Kueue's manager's Lease, shown as context [default: kueue-system/c1f6bfd2.kueue.x-k8s.io]
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub kueue_lease: Option<LeaseRef>,
}

/// Which of dispatch's objects the gate reads. Flags win over `--config`.
#[derive(Debug, Args, Default, Clone)]
pub struct GateTargetArgs {
    #[command(flatten)]
    pub lease: LeaseTargetArgs,

    #[command(flatten)]
    pub kueue_lease: KueueLeaseArgs,

    /// dispatch's controllerName on AdmissionChecks [default: dispatch-admission]
    #[arg(long, value_name = "NAME")]
    pub controller_name: Option<String>,

    /// ClusterQueue to judge (repeatable; default: every one that lists dispatch's check)
    #[arg(long = "cluster-queue", value_name = "NAME")]
    pub cluster_queues: Vec<String>,

    /// The AdmissionCheck to judge (default: those whose controllerName is dispatch's)
    #[arg(long, value_name = "NAME")]
    pub admission_check: Option<String>,
}

/// Where the gate looks for waiting Workloads: `-n`/`-A`, after the verb or before it.
#[derive(Debug, Args, Default, Clone)]
pub struct ScopeArgs {
    /// Namespace of the Workloads to show (default: the context's namespace, else default)
    #[arg(short = 'n', long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Show Workloads in every namespace
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

impl ScopeArgs {
    pub fn is_set(&self) -> bool {
        self.namespace.is_some() || self.all_namespaces
    }
}

#[derive(Debug, Args, Clone)]
pub struct GateOutputArgs {
    /// Output format: table, wide, json, yaml, prometheus (text exposition for node_exporter's
    /// textfile collector or a Pushgateway), name, jsonpath=TEMPLATE, jsonpath-file=FILE,
    /// custom-columns=SPEC, custom-columns-file=FILE (the last five over the -o json document)
    #[arg(short = 'o', long, value_name = "FORMAT", default_value = "table", hide_possible_values = true, value_parser = OutputParser { gate: true, name: true })]
    pub output: OutputChoice,

    /// Print tables without their header row; stdout gets one table, the waiting Workloads' rows (the checks and the rest go to stderr)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", action = clap::ArgAction::Set)]
    pub no_headers: bool,

    #[command(flatten)]
    pub template: TemplateArgs,
}

/// kubectl's flag of its template printers.
#[derive(Debug, Args, Clone)]
pub struct TemplateArgs {
    /// With -o jsonpath: print nothing for a field the document lacks (false: an error)
    #[arg(long, value_name = "BOOL", default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub allow_missing_template_keys: bool,
}

#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format: table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE,
    /// custom-columns=SPEC, custom-columns-file=FILE (the last five over the -o json document)
    #[arg(short = 'o', long, value_name = "FORMAT", default_value = "table", hide_possible_values = true, value_parser = OutputParser { gate: false, name: true })]
    pub output: OutputChoice,

    /// Print tables without their header row
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", action = clap::ArgAction::Set)]
    pub no_headers: bool,

    #[command(flatten)]
    pub template: TemplateArgs,
}

/// kubectl's printers, by the words `-o` takes for them.
const PRINTERS: &[(&str, PrinterKind)] = &[
    ("name", PrinterKind::Name),
    ("jsonpath", PrinterKind::JsonPath),
    ("jsonpath-file", PrinterKind::JsonPathFile),
    ("custom-columns", PrinterKind::CustomColumns),
    ("custom-columns-file", PrinterKind::CustomColumnsFile),
];

const PRINTERS_HELP: &str =
    "name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE";

/// clap's parser of `-o`: gate's formats (with prometheus), or those of lease, workload and
/// doctor (the names of [`Format`] or [`ReportFormat`]), or a printer and its argument. Its
/// possible values (for completion) are the formats and the printers' prefixes.
#[derive(Debug, Clone, Copy)]
pub struct OutputParser {
    pub gate: bool,
    /// Whether `-o name` is offered: not for doctor, whose document names no object.
    pub name: bool,
}

impl OutputParser {
    fn formats(self) -> Vec<(String, invocation::Format)> {
        let named = |v: Option<clap::builder::PossibleValue>| v.map(|v| v.get_name().to_string());
        if self.gate {
            Format::value_variants().iter().filter_map(|f| Some((named(f.to_possible_value())?, (*f).into()))).collect()
        } else {
            ReportFormat::value_variants()
                .iter()
                .filter_map(|f| Some((named(f.to_possible_value())?, (*f).into())))
                .collect()
        }
    }

    /// `-o TEXT`: a plain format, or a printer (its argument after `=`, as kubectl splits it).
    pub fn choice(self, text: &str) -> Result<OutputChoice, String> {
        let formats = self.formats();
        if let Some((_, f)) = formats.iter().find(|(n, _)| n == text) {
            return Ok(OutputChoice { format: *f, printer: None });
        }
        let (name, arg) = text.split_once('=').unwrap_or((text, ""));
        let kind = match PRINTERS.iter().find(|(n, _)| *n == name) {
            Some((_, PrinterKind::Name)) if text.contains('=') || !self.name => None,
            Some((_, kind)) => Some(*kind),
            None if matches!(name, "go-template" | "go-template-file" | "template" | "templatefile") => {
                return Err("go-template is not supported: use jsonpath=TEMPLATE, or -o json and jq".into());
            }
            None => None,
        };
        let Some(kind) = kind else {
            let plain: Vec<&str> = formats.iter().map(|(n, _)| n.as_str()).collect();
            let printers = if self.name { PRINTERS_HELP } else { &PRINTERS_HELP["name, ".len()..] };
            return Err(format!("possible values: {}, {printers}", plain.join(", ")));
        };
        if kind != PrinterKind::Name && !text.contains('=') {
            return Err(format!("{name} needs a value: -o {name}=..."));
        }
        Ok(OutputChoice { format: invocation::Format::Json, printer: Some((kind, arg.to_string())) })
    }
}

impl clap::builder::TypedValueParser for OutputParser {
    type Value = OutputChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<OutputChoice, clap::Error> {
        let text = value.to_str().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))?;
        self.choice(text).map_err(|why| {
            let name = arg.map(|a| a.to_string()).unwrap_or_else(|| "--output".into());
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value '{text}' for '{name}': {why}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let formats: Vec<clap::builder::PossibleValue> = if self.gate {
            Format::value_variants().iter().filter_map(ValueEnum::to_possible_value).collect()
        } else {
            ReportFormat::value_variants().iter().filter_map(ValueEnum::to_possible_value).collect()
        };
        let printers = ["name", "jsonpath=", "jsonpath-file=", "custom-columns=", "custom-columns-file="];
        let printers = printers.into_iter().filter(|p| self.name || *p != "name");
        Some(Box::new(formats.into_iter().chain(printers.map(clap::builder::PossibleValue::new))))
    }
}

/// Every output format; `gate` takes them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Prometheus,
}

/// The formats of `lease` and `workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Table,
    Wide,
    Json,
    Yaml,
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Format {
        match f {
            ReportFormat::Table => Format::Table,
            ReportFormat::Wide => Format::Wide,
            ReportFormat::Json => Format::Json,
            ReportFormat::Yaml => Format::Yaml,
        }
    }
}

impl From<Format> for invocation::Format {
    fn from(f: Format) -> invocation::Format {
        match f {
            Format::Table => invocation::Format::Table,
            Format::Wide => invocation::Format::Wide,
            Format::Json => invocation::Format::Json,
            Format::Yaml => invocation::Format::Yaml,
            Format::Prometheus => invocation::Format::Prometheus,
        }
    }
}

impl From<ReportFormat> for invocation::Format {
    fn from(f: ReportFormat) -> invocation::Format {
        Format::from(f).into()
    }
}

#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub target: GateTargetArgs,

    #[command(flatten)]
    pub scope: ScopeArgs,

    #[command(flatten)]
    pub output: GateOutputArgs,

    /// Also show Workloads at dispatch's check in Retry, Rejected, or Pending before quota
    #[arg(long)]
    pub all_states: bool,

    /// Show only the Workloads with these labels (a label selector, as kubectl's -l; the server filters)
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,

    /// Sort the waiting Workloads by this JSONPath over each one's -o json entry (e.g. .sinceSeconds, .name)
    #[arg(long, value_name = "JSONPATH")]
    pub sort_by: Option<String>,

    /// Judge the gate on every context of the kubeconfig, concurrently (one row per context)
    #[arg(long, conflicts_with_all = ["watch", "wait", "contexts"])]
    pub all_contexts: bool,

    /// With several contexts, judge at most this many at once
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrency: u16,

    /// Follow the gate: print the chain again when a verdict or its deciding check changes
    #[arg(short = 'w', long, conflicts_with = "wait")]
    pub watch: bool,

    /// Wait until ReadmissionGate is yes (exit 0); on --timeout, exit with the last verdict's code
    #[arg(long)]
    pub wait: bool,

    /// With --wait or --watch, give up after this long (e.g. 5m; 0: check once); default: never
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,
}

#[derive(Debug, Args)]
pub struct LeaseArgs {
    /// The Lease's name, as `kubectl get lease NAME`: in -n NAMESPACE, else the context's
    /// namespace; or NAMESPACE/NAME, as --lease takes it (-n may not name another namespace)
    #[arg(value_name = "NAME", conflicts_with = "lease")]
    pub name: Option<String>,

    /// The Lease's namespace, as kubectl's -n (with no NAME: dispatch's Lease name in it)
    #[arg(short = 'n', long, value_name = "NAMESPACE", conflicts_with = "lease")]
    pub namespace: Option<String>,

    #[command(flatten)]
    pub target: LeaseTargetArgs,

    #[command(flatten)]
    pub output: OutputArgs,
    /// Follow the Lease live: a row for each renewal, takeover, deletion, and the moment it goes stale
    #[arg(short = 'w', long)]
    pub watch: bool,

    /// With --watch, hide renewals that change nothing else (slow ones are still shown)
    #[arg(long, requires = "watch")]
    pub changes_only: bool,

    /// With --watch, exit 0 as soon as this happens: fresh (a live heartbeat), stale (not one:
    /// stale, no holder, never renewed, or missing), holder-change (another holder takes it)
    #[arg(long, value_enum, requires = "watch", value_name = "CONDITION")]
    pub until: Option<Until>,

    /// With --watch, give up after this long (e.g. 2m; 0: check once); default: never
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,

    /// With --watch, Kueue's manager's Lease, followed as context [default: kueue-system/c1f6bfd2.kueue.x-k8s.io]
    #[arg(long, value_name = "NAMESPACE/NAME", requires = "watch")]
    pub kueue_lease: Option<LeaseRef>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub lease: LeaseTargetArgs,

    #[command(flatten)]
    pub kueue_lease: KueueLeaseArgs,

    /// The gate's Workload reads to check: -n for one namespace, -A for all (as `gate` reads)
    #[command(flatten)]
    pub scope: ScopeArgs,

    /// dispatch's controllerName on AdmissionChecks [default: dispatch-admission]
    #[arg(long, value_name = "NAME")]
    pub controller_name: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Print only the RBAC objects that grant what is missing, for `kubectl apply -f -`
    #[arg(long, conflicts_with = "output")]
    pub rbac: bool,
}

/// What `lease --watch --until` waits for. Its values are described in the flag's help (no
/// doc comment on them: clap would list them again, on lines of their own, in `--help` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Until {
    // The Lease is a live heartbeat.
    Fresh,
    // The Lease is not a live heartbeat (stale, no holder, never renewed, or missing).
    Stale,
    // Another holder takes the Lease.
    HolderChange,
}

impl From<Until> for invocation::Until {
    fn from(u: Until) -> invocation::Until {
        match u {
            Until::Fresh => invocation::Until::Fresh,
            Until::Stale => invocation::Until::Stale,
            Until::HolderChange => invocation::Until::HolderChange,
        }
    }
}

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// The Workload's name (in -n NAMESPACE, else the context's namespace); without it, list them
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// The Workload's namespace, or the one to list (default: the context's namespace, else default)
    #[arg(short = 'n', long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Without NAME: list the Workloads of every namespace
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Without NAME: only the Workloads with these labels (a label selector, as kubectl's -l; the server filters)
    #[arg(short = 'l', long, value_name = "SELECTOR", conflicts_with = "name")]
    pub selector: Option<String>,

    /// Without NAME: sort the rows by this JSONPath over each one's -o json item (e.g. .stage, .name)
    #[arg(long, value_name = "JSONPATH", conflicts_with = "name")]
    pub sort_by: Option<String>,

    #[command(flatten)]
    pub lease: LeaseTargetArgs,

    #[command(flatten)]
    pub kueue_lease: KueueLeaseArgs,

    /// dispatch's controllerName on AdmissionChecks [default: dispatch-admission]
    #[arg(long, value_name = "NAME")]
    pub controller_name: Option<String>,

    /// dispatch's AdmissionCheck (default: those whose controllerName is dispatch's)
    #[arg(long, value_name = "NAME")]
    pub admission_check: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl WorkloadArgs {
    /// The settings that name dispatch's objects, as `gate` takes them (no ClusterQueue: the
    /// Workload's own is judged).
    pub fn target(&self) -> GateTargetArgs {
        GateTargetArgs {
            lease: self.lease.clone(),
            kueue_lease: self.kueue_lease.clone(),
            controller_name: self.controller_name.clone(),
            cluster_queues: Vec::new(),
            admission_check: self.admission_check.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_values() {
        let gate = |s: &str| OutputParser { gate: true, name: true }.choice(s);
        assert_eq!(gate("json").unwrap(), OutputChoice { format: invocation::Format::Json, printer: None });
        assert_eq!(gate("prometheus").unwrap().format, invocation::Format::Prometheus);
        let jp = gate("jsonpath={.a=b}").unwrap();
        assert_eq!(jp.printer, Some((PrinterKind::JsonPath, "{.a=b}".to_string())));
        assert!(OutputParser { gate: false, name: true }.choice("prometheus").is_err());
        let doctor = OutputParser { gate: false, name: false };
        assert_eq!(
            doctor.choice("name").unwrap_err(),
            "possible values: table, wide, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE"
        );
        assert!(doctor.choice("jsonpath={.a}").is_ok());
        assert!(gate("jsonpath").is_err());
        assert!(gate("name=x").is_err());
        assert!(gate("go-template={{.}}").unwrap_err().contains("not supported"));
    }
}

//! The command line, as clap derive types. Doc comments are the help text. kubectl hands a
//! plugin its arguments untouched (it refuses flags before the plugin name), so the plugin
//! parses kubectl's connection flags itself, after its name.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

use crate::core::lease::LeaseRef;
use crate::exit::EXIT_CODES_HELP;

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

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The readmission gate as the adapter judges it: each check, the verdict, and the
    /// Workloads waiting at dispatch's Pending check.
    #[command(after_help = EXIT_CODES_HELP)]
    Gate(GateArgs),
    /// The controller's leader-election Lease as a heartbeat: holder, last renewal, limit,
    /// status.
    #[command(after_help = EXIT_CODES_HELP)]
    Lease(LeaseArgs),
    /// Print a shell completion script for kubectl-dispatch (bash, zsh, fish or powershell)
    Completion(crate::complete::CompletionArgs),
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

    /// The one context in use (set from --context when it is given once)
    #[arg(skip)]
    pub context: Option<String>,

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

    /// Namespace of the Workloads to show (default: the context's namespace, else default)
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Show Workloads in every namespace
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,

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

/// A flag's value that is never shown: `Debug` prints `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

/// Which of dispatch's objects to read. Flags win over `--config`.
#[derive(Debug, Args, Default, Clone)]
pub struct TargetArgs {
    /// The controller's Lease [default: dispatch-system/dispatch-admission]
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub lease: Option<LeaseRef>,

    /// dispatch's controllerName on AdmissionChecks [default: dispatch-admission]
    #[arg(long, value_name = "NAME")]
    pub controller_name: Option<String>,

    /// ClusterQueue to judge (repeatable; default: every one that lists dispatch's check)
    #[arg(long = "cluster-queue", value_name = "NAME")]
    pub cluster_queues: Vec<String>,

    /// The AdmissionCheck to judge (default: those whose controllerName is dispatch's)
    #[arg(long, value_name = "NAME")]
    pub admission_check: Option<String>,

    /// Read these settings from the adapter's YAML config (kueue.admissionLease, ...)
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    pub output: Format,

    /// Print tables without their header row
    #[arg(long)]
    pub no_headers: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub target: TargetArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Also show Workloads at dispatch's check in Retry, Rejected, or Pending before quota
    #[arg(long)]
    pub all_states: bool,

    /// Judge the gate on every context of the kubeconfig, concurrently (one row per context)
    #[arg(long, conflicts_with_all = ["watch", "wait"])]
    pub all_contexts: bool,

    /// Follow the gate: print the chain again when a verdict or its deciding check changes
    #[arg(short = 'w', long, conflicts_with = "wait")]
    pub watch: bool,

    /// Wait until ReadmissionGate is yes (exit 0); on --timeout, exit with the last verdict's code
    #[arg(long)]
    pub wait: bool,

    /// Give up waiting or watching after this long (e.g. 5m); default: never
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

#[derive(Debug, Args)]
pub struct LeaseArgs {
    #[command(flatten)]
    pub target: TargetArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Follow the Lease live: a row for each renewal, takeover, deletion, and the moment it goes stale
    #[arg(short = 'w', long)]
    pub watch: bool,

    /// With --watch, hide renewals that change nothing else (slow ones are still shown)
    #[arg(long, requires = "watch")]
    pub changes_only: bool,

    /// With --watch, exit 0 as soon as this happens
    #[arg(long, value_enum, requires = "watch", value_name = "CONDITION")]
    pub until: Option<Until>,

    /// Give up watching after this long (e.g. 2m); default: never
    #[arg(long, value_name = "DURATION", requires = "watch")]
    pub timeout: Option<String>,
}

/// What `lease --watch --until` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Until {
    /// The Lease is a live heartbeat
    Fresh,
    /// The Lease is not a live heartbeat (stale, no holder, never renewed, or missing)
    Stale,
    /// Another holder takes the Lease
    HolderChange,
}

//! One run of the plugin as plain, validated settings: what the command line (`cli/`) resolves into,
//! and all that the layers below it take. No clap type is here or below.

use std::path::PathBuf;
use std::time::Duration;

use crate::core::gate::GateSettings;
use crate::core::lease::LeaseRef;

/// One run of the plugin, fully resolved.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub connection: ConnectionSettings,
    pub timeout: Option<Duration>,
    pub verb: Verb,
    /// `-o name|jsonpath=...|custom-columns=...`: the printer of the verb's `-o json` document,
    /// its template read and checked.
    pub printer: Option<PrinterSpec>,
    pub color: ColorWhen,
}

impl Invocation {
    /// stdout carries data, kept exact: the verb's JSON, YAML, Prometheus text or RBAC YAML,
    /// or a JSONPath template's values (byte for byte, as kubectl's printer writes them).
    /// `-o name` and custom columns are text for a terminal, like a table.
    pub fn writes_data(&self) -> bool {
        match self.printer.as_ref().map(|p| p.kind) {
            Some(PrinterKind::JsonPath | PrinterKind::JsonPathFile) => true,
            Some(PrinterKind::Name | PrinterKind::CustomColumns | PrinterKind::CustomColumnsFile) => false,
            None => self.verb.writes_data(),
        }
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set or `TERM` is `dumb`.
    #[default]
    Auto,
    Always,
    Never,
}

/// The value of `-o`: one of the plain formats, or one of kubectl's printers and its argument
/// (a template, a spec, or a file's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChoice {
    pub format: Format,
    pub printer: Option<(PrinterKind, String)>,
}

/// kubectl's printers of a document: `-o name`, `-o jsonpath=`, `-o custom-columns=` and their
/// `-file=` forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrinterKind {
    Name,
    JsonPath,
    JsonPathFile,
    CustomColumns,
    CustomColumnsFile,
}

/// A printer as resolved: its kind, its template's text (a `-file=` form's file already read),
/// and kubectl's flags that shape it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterSpec {
    pub kind: PrinterKind,
    pub template: String,
    /// `--allow-missing-template-keys`.
    pub allow_missing_keys: bool,
    pub no_headers: bool,
}

/// Which Workloads gate (the waiting ones) or `workloads` shows, and in which order: `-l` and
/// `--sort-by`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadView {
    /// A label selector, passed to the server.
    pub selector: Option<String>,
    /// A JSONPath over each waiting Workload's `-o json` entry, in kubectl's relaxed form
    /// already made whole (`{.name}`) and checked.
    pub sort_by: Option<String>,
}

/// kubectl's connection flags, resolved: the one context in use, and the namespace of the
/// Workloads to show (`-n` of gate, doctor and workload).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub impersonate: Option<String>,
    pub impersonate_groups: Vec<String>,
    pub impersonate_uid: Option<String>,
    pub namespace: Option<String>,
    pub server: Option<String>,
    pub token: Option<Secret>,
    pub certificate_authority: Option<PathBuf>,
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub insecure_skip_tls_verify: Option<bool>,
    pub tls_server_name: Option<String>,
    pub disable_compression: Option<bool>,
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

/// The contexts of a fleet run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fleet {
    Named(Vec<String>),
    All,
}

#[derive(Debug, Clone)]
pub enum Verb {
    /// `gate` on several contexts at once.
    Fleet {
        contexts: Fleet,
        settings: GateSettings,
        output: Output,
        all_states: bool,
        all_namespaces: bool,
        /// `--max-concurrency`: contexts judged at once.
        max_concurrency: usize,
        view: WorkloadView,
    },
    Gate {
        settings: GateSettings,
        output: Output,
        all_states: bool,
        all_namespaces: bool,
        live: Option<GateLive>,
        view: WorkloadView,
    },
    Lease {
        lease: LeaseRef,
        /// `lease NAME` without `-n`: the Lease is in the context's namespace, as `kubectl get
        /// lease NAME` reads it; known once connected.
        in_context_namespace: bool,
        /// dispatch's Lease's namespace (`--lease`, `--config`, else the default): where a
        /// Lease missing from the namespace looked in is looked for ("did you mean -n ...?").
        dispatch_namespace: String,
        /// Kueue's manager's Lease, followed by `--watch` as context.
        kueue_lease: LeaseRef,
        output: Output,
        watch: Option<LeaseWatch>,
    },
    /// One Workload explained.
    Workload { name: String, settings: GateSettings, output: Output },
    /// `workloads`: every Workload of the namespace (of all with `all_namespaces`), each
    /// explained in one row; `view` is `-l` and `--sort-by`.
    Workloads { settings: GateSettings, output: Output, all_namespaces: bool, view: WorkloadView },
    Doctor {
        lease: LeaseRef,
        /// dispatch's controllerName, for the AdmissionChecks that look like dispatch's.
        controller_name: String,
        /// Kueue's manager's Lease (a finding of its own, context only).
        kueue_lease: LeaseRef,
        output: Output,
        all_namespaces: bool,
        /// Print only the RBAC to add.
        rbac: bool,
    },
}

impl Verb {
    /// A live mode (`--watch`, `--wait`): it runs until something ends it, a closed stdout too.
    pub fn is_live(&self) -> bool {
        matches!(self, Verb::Gate { live: Some(_), .. } | Verb::Lease { watch: Some(_), .. })
    }

    /// stdout carries data (JSON, YAML, Prometheus text, `doctor --rbac`'s YAML), kept exact
    /// and escaped as its format requires, rather than text for a terminal.
    pub fn writes_data(&self) -> bool {
        matches!(self, Verb::Doctor { rbac: true, .. }) || self.output().format.is_exact()
    }

    pub fn output(&self) -> Output {
        match self {
            Verb::Fleet { output, .. }
            | Verb::Gate { output, .. }
            | Verb::Lease { output, .. }
            | Verb::Workload { output, .. }
            | Verb::Workloads { output, .. }
            | Verb::Doctor { output, .. } => *output,
        }
    }
}

/// `gate --watch` or `gate --wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateLive {
    pub wait: bool,
    pub timeout: Option<Duration>,
}

/// `lease --watch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseWatch {
    pub changes_only: bool,
    pub until: Option<Until>,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub format: Format,
    pub no_headers: bool,
}

/// Every output format; `gate` takes them all, `lease`, `workload` and `doctor` all but
/// prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Prometheus,
}

impl Format {
    /// A data format: its text keeps every value exact, escaped as the format itself requires
    /// (JSON, YAML, Prometheus' exposition format), so it is not screened for a terminal.
    pub fn is_exact(self) -> bool {
        matches!(self, Format::Json | Format::Yaml | Format::Prometheus)
    }
}

/// What `lease --watch --until` waits for: the live machine's own.
pub use crate::core::live_lease::Until;

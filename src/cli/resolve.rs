//! Turns the parsed command line into plain, validated settings ([`crate::invocation`]) before
//! anything connects: `--help`, usage errors and a bad `--config` need no cluster. Nothing after
//! this sees clap.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::args::{
    Cli, ColorArg, Command, GateOutputArgs, GateTargetArgs, LeaseArgs, LeaseTargetArgs, OutputArgs, ScopeArgs,
    TemplateArgs,
};
use crate::core::gate::GateSettings;
use crate::core::lease::LeaseRef;
use crate::error::{Error, first_line};
use crate::invocation::{
    ColorWhen, Fleet, Format, GateLive, Invocation, LeaseWatch, Output, OutputChoice, PrinterKind, PrinterSpec, Verb,
    WorkloadView,
};

impl From<&GateOutputArgs> for Output {
    fn from(o: &GateOutputArgs) -> Self {
        Output { format: o.output.format, no_headers: o.no_headers }
    }
}

impl From<&OutputArgs> for Output {
    fn from(o: &OutputArgs) -> Self {
        Output { format: o.output.format, no_headers: o.no_headers }
    }
}

impl From<ColorArg> for ColorWhen {
    fn from(c: ColorArg) -> ColorWhen {
        match c {
            ColorArg::Auto => ColorWhen::Auto,
            ColorArg::Always => ColorWhen::Always,
            ColorArg::Never => ColorWhen::Never,
        }
    }
}

pub fn resolve(cli: Cli) -> Result<Invocation, Error> {
    let timeout = parse_timeout(&cli.connection.request_timeout)?;
    let connection = cli.connection;
    let scope = scope(&cli.command, cli.scope)?;
    if let Command::Gate(args) = &cli.command
        && args.output.output.format == Format::Prometheus
        && (args.watch || args.wait)
    {
        return Err(Error::Usage(
            "-o prometheus writes one exposition: it takes neither --watch nor --wait (run it from a timer or a CronJob)"
                .into(),
        ));
    }
    timeout_needs_a_live_mode(&cli.command)?;
    let fleet = fleet(&cli.command, &connection.contexts)?;
    let resolved = connection.settings(scope.namespace.clone());
    let printer = printer(&cli.command)?;
    if fleet.is_some() && printer.is_some() {
        return Err(Error::Usage(
            "-o name, jsonpath and custom-columns print one context's document: give --context once".into(),
        ));
    }
    let verb = verb(cli.command, fleet, scope.all_namespaces, scope.namespace.as_deref())?;
    Ok(Invocation { connection: resolved, timeout, verb, printer, color: cli.color.into() })
}

/// `--timeout` bounds a live mode: alone, the one-shot reads once and it would mean nothing.
fn timeout_needs_a_live_mode(command: &Command) -> Result<(), Error> {
    match command {
        Command::Gate(a) if a.timeout.is_some() && !(a.watch || a.wait) => {
            Err(Error::Usage("--timeout needs --watch or --wait (without them gate reads once)".into()))
        }
        Command::Lease(a) if a.timeout.is_some() && !a.watch => {
            Err(Error::Usage("--timeout needs --watch (without it lease reads once)".into()))
        }
        _ => Ok(()),
    }
}

/// gate's -n/-A and workload's -n, after the verb or before it (`top`); lease reads no Workloads.
fn scope(command: &Command, top: ScopeArgs) -> Result<ScopeArgs, Error> {
    Ok(match command {
        Command::Gate(args) => ScopeArgs {
            namespace: args.scope.namespace.clone().or(top.namespace),
            all_namespaces: args.scope.all_namespaces || top.all_namespaces,
        },
        Command::Doctor(args) => ScopeArgs {
            namespace: args.scope.namespace.clone().or(top.namespace),
            all_namespaces: args.scope.all_namespaces || top.all_namespaces,
        },
        Command::Workload(args) if args.name.is_some() && (args.all_namespaces || top.all_namespaces) => {
            return Err(Error::Usage(
                "a Workload is named in one namespace: use -n NAMESPACE, not -A (list them all with 'kubectl dispatch workloads -A')".into(),
            ));
        }
        // Without NAME, `workloads` lists them: -A for every namespace, as `kubectl get workloads -A`.
        Command::Workload(args) => ScopeArgs {
            namespace: args.namespace.clone().or(top.namespace),
            all_namespaces: args.all_namespaces || top.all_namespaces,
        },
        Command::Lease(_) if top.all_namespaces => {
            return Err(Error::Usage(
                "lease reads one Lease: name it with NAME -n NAMESPACE (or --lease NAMESPACE/NAME), not -A".into(),
            ));
        }
        Command::Lease(args) => {
            ScopeArgs { namespace: args.namespace.clone().or(top.namespace), all_namespaces: false }
        }
        _ if top.is_set() => {
            return Err(Error::Usage(
                "only gate, lease, workload and doctor take --namespace, and only gate, workloads and doctor --all-namespaces".into(),
            ));
        }
        _ => ScopeArgs::default(),
    })
}

/// The contexts a gate judges side by side (`--all-contexts`, or `--context` more than once).
fn fleet(command: &Command, contexts: &[String]) -> Result<Option<Fleet>, Error> {
    Ok(match command {
        // clap sees this conflict only when --context comes after the verb.
        Command::Gate(args) if args.all_contexts && !contexts.is_empty() => {
            return Err(Error::Usage("the argument '--all-contexts' cannot be used with '--context <NAME>'".into()));
        }
        Command::Gate(args) if args.all_contexts => Some(Fleet::All),
        Command::Gate(args) if contexts.len() > 1 => {
            if args.watch || args.wait {
                return Err(Error::Usage("--watch and --wait take one --context".into()));
            }
            Some(Fleet::Named(contexts.to_vec()))
        }
        _ if contexts.len() > 1 => {
            return Err(Error::Usage("only gate takes --context more than once".into()));
        }
        _ => None,
    })
}

/// The verb and its plain settings; `namespace` is `-n`, before the verb or after it.
fn verb(command: Command, fleet: Option<Fleet>, all_namespaces: bool, namespace: Option<&str>) -> Result<Verb, Error> {
    let view = match &command {
        Command::Gate(args) => workload_view(args.selector.clone(), args.sort_by.as_deref())?,
        Command::Workload(args) => workload_view(args.selector.clone(), args.sort_by.as_deref())?,
        _ => WorkloadView::default(),
    };
    Ok(match command {
        Command::Gate(args) if fleet.is_some() => Verb::Fleet {
            contexts: fleet.unwrap_or(Fleet::All),
            settings: gate_settings(&args.target)?,
            output: (&args.output).into(),
            all_states: args.all_states,
            all_namespaces,
            max_concurrency: usize::from(args.max_concurrency),
            view,
        },
        Command::Gate(args) => Verb::Gate {
            settings: gate_settings(&args.target)?,
            output: (&args.output).into(),
            all_states: args.all_states,
            all_namespaces,
            live: (args.watch || args.wait)
                .then(|| Ok::<_, Error>(GateLive { wait: args.wait, timeout: wait_timeout(args.timeout.as_deref())? }))
                .transpose()?,
            view,
        },
        Command::Lease(args) => {
            let dispatch = lease_ref(&args.target, &read_target_config(&args.target)?)?;
            let (lease, in_context_namespace) = named_lease(args.name.as_deref(), namespace, &dispatch)?;
            lease_verb(&args, lease, in_context_namespace, dispatch.namespace)?
        }
        Command::Workload(args) => match args.name.clone() {
            Some(name) => {
                Verb::Workload { settings: gate_settings(&args.target())?, output: (&args.output).into(), name }
            }
            None => Verb::Workloads {
                settings: gate_settings(&args.target())?,
                output: (&args.output).into(),
                all_namespaces,
                view,
            },
        },
        Command::Doctor(args) => {
            let file = read_target_config(&args.lease)?;
            Verb::Doctor {
                lease: lease_ref(&args.lease, &file)?,
                controller_name: args
                    .controller_name
                    .clone()
                    .or(file.controller_name)
                    .unwrap_or(GateSettings::default().controller_name),
                kueue_lease: args.kueue_lease.kueue_lease.clone().unwrap_or_else(LeaseRef::kueue_default),
                output: (&args.output).into(),
                all_namespaces,
                rbac: args.rbac,
            }
        }
        // Need no cluster: `cli::parse` prints them before resolving anything.
        Command::Completion(_) => return Err(Error::Usage("completion is not a cluster command".into())),
        Command::Options => return Err(Error::Usage("options is not a cluster command".into())),
    })
}

/// `lease`'s settings, once its Lease is named.
fn lease_verb(args: &LeaseArgs, lease: LeaseRef, in_context_namespace: bool, dispatch: String) -> Result<Verb, Error> {
    Ok(Verb::Lease {
        lease,
        in_context_namespace,
        dispatch_namespace: dispatch,
        kueue_lease: args.kueue_lease.clone().unwrap_or_else(LeaseRef::kueue_default),
        output: (&args.output).into(),
        watch: args
            .watch
            .then(|| {
                Ok::<_, Error>(LeaseWatch {
                    changes_only: args.changes_only,
                    until: args.until.map(Into::into),
                    timeout: wait_timeout(args.timeout.as_deref())?,
                })
            })
            .transpose()?,
    })
}

/// The printer `-o` names, its file read and its template checked (a bad one is a usage error,
/// as kubectl's, before anything connects).
fn printer(command: &Command) -> Result<Option<PrinterSpec>, Error> {
    let (choice, no_headers, template_flags): (&OutputChoice, bool, &TemplateArgs) = match command {
        Command::Gate(a) => (&a.output.output, a.output.no_headers, &a.output.template),
        Command::Lease(a) => (&a.output.output, a.output.no_headers, &a.output.template),
        Command::Workload(a) => (&a.output.output, a.output.no_headers, &a.output.template),
        Command::Doctor(a) => (&a.output.output, a.output.no_headers, &a.output.template),
        Command::Completion(_) | Command::Options => return Ok(None),
    };
    let Some((kind, arg)) = &choice.printer else { return Ok(None) };
    let template = match kind {
        PrinterKind::JsonPathFile | PrinterKind::CustomColumnsFile => {
            std::fs::read_to_string(arg).map_err(|e| Error::Usage(format!("error reading template {arg}, {e}")))?
        }
        _ => arg.clone(),
    };
    let spec = PrinterSpec {
        kind: *kind,
        template,
        allow_missing_keys: template_flags.allow_missing_template_keys,
        no_headers,
    };
    crate::render::printer::Printer::new(&spec).map_err(Error::Usage)?;
    Ok(Some(spec))
}

/// `-l` and `--sort-by` of gate and of `workloads`, the JSONPath made whole and checked.
fn workload_view(selector: Option<String>, sort_by: Option<&str>) -> Result<WorkloadView, Error> {
    let sort_by = match sort_by {
        None => None,
        Some(path) => {
            let expr = crate::render::jsonpath::relaxed(path).map_err(Error::Usage)?;
            crate::render::jsonpath::Template::parse(&expr)
                .map_err(|e| Error::Usage(format!("error parsing jsonpath {expr}, {e}")))?;
            Some(expr)
        }
    };
    Ok(WorkloadView { selector, sort_by })
}

/// The adapter's config, as far as it names dispatch's objects. Unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct AdapterConfig {
    kueue: KueueConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct KueueConfig {
    admission_lease: Option<String>,
    controller_name: Option<String>,
    admission_check: Option<String>,
    cluster_queue: Option<String>,
    cluster_queues: Vec<String>,
}

fn read_target_config(target: &LeaseTargetArgs) -> Result<KueueConfig, Error> {
    match &target.config {
        Some(path) => read_config(path),
        None => Ok(KueueConfig::default()),
    }
}

/// `lease NAME -n NS`, kubectl's way: NAME (else the configured Lease's name) in NS (else, for
/// a NAME, the context's namespace, filled in once connected: the `bool`; else the configured
/// namespace). NAME may be `NAMESPACE/NAME`, as `--lease` takes it; a `-n` that names another
/// namespace is refused with kubectl's words for a namespace given twice (`kubectl get -f`
/// of an object in one namespace with `-n` another).
fn named_lease(name: Option<&str>, namespace: Option<&str>, configured: &LeaseRef) -> Result<(LeaseRef, bool), Error> {
    Ok(match name {
        Some(text) if text.contains('/') => {
            let lease: LeaseRef = text
                .parse()
                .map_err(|_| Error::Usage(format!("invalid Lease {text:?}: name it NAME or NAMESPACE/NAME")))?;
            if let Some(given) = namespace.filter(|n| *n != lease.namespace) {
                let ns = &lease.namespace;
                return Err(Error::Usage(format!(
                    "the namespace from the provided object \"{ns}\" does not match the namespace \"{given}\". You must pass '--namespace={ns}' to perform this operation."
                )));
            }
            (lease, false)
        }
        Some(name) => match namespace {
            Some(ns) => (LeaseRef { namespace: ns.to_string(), name: name.to_string() }, false),
            None => (LeaseRef { namespace: configured.namespace.clone(), name: name.to_string() }, true),
        },
        None => {
            let ns = namespace.map_or_else(|| configured.namespace.clone(), str::to_string);
            (LeaseRef { namespace: ns, name: configured.name.clone() }, false)
        }
    })
}

/// `--lease`, else the config's `kueue.admissionLease`, else the default.
fn lease_ref(target: &LeaseTargetArgs, file: &KueueConfig) -> Result<LeaseRef, Error> {
    Ok(match (&target.lease, &file.admission_lease) {
        (Some(lease), _) => lease.clone(),
        (None, Some(text)) => text.parse().map_err(|e| Error::ConfigFile {
            path: target.config.clone().unwrap_or_default(),
            cause: format!("kueue.admissionLease: {e}"),
        })?,
        (None, None) => LeaseRef::default(),
    })
}

fn gate_settings(target: &GateTargetArgs) -> Result<GateSettings, Error> {
    let file = read_target_config(&target.lease)?;
    let defaults = GateSettings::default();
    let lease = lease_ref(&target.lease, &file)?;
    let cluster_queues = if !target.cluster_queues.is_empty() {
        target.cluster_queues.clone()
    } else {
        file.cluster_queue.into_iter().chain(file.cluster_queues).collect()
    };
    Ok(GateSettings {
        controller_name: target.controller_name.clone().or(file.controller_name).unwrap_or(defaults.controller_name),
        cluster_queues,
        admission_check: target.admission_check.clone().or(file.admission_check),
        lease,
        kueue_lease: target.kueue_lease.kueue_lease.clone().unwrap_or_else(LeaseRef::kueue_default),
    })
}

fn read_config(path: &Path) -> Result<KueueConfig, Error> {
    let fail = |cause: String| Error::ConfigFile { path: path.to_path_buf(), cause };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let config: AdapterConfig = serde_saphyr::from_str(&text).map_err(|e| fail(first_line(&e.to_string())))?;
    Ok(config.kueue)
}

/// `--timeout` of the live modes: a duration, or seconds; none means wait for ever, and 0
/// checks once, as `kubectl wait --timeout=0` does. A negative one is refused: kubectl wait
/// reads it as a week, which nobody typing `-1s` means.
fn wait_timeout(text: Option<&str>) -> Result<Option<Duration>, Error> {
    let Some(t) = text else { return Ok(None) };
    if t.starts_with('-') {
        return Err(Error::Usage(format!(
            "invalid --timeout {t:?}: a timeout is not negative (0 checks once; without --timeout it waits for ever)"
        )));
    }
    match duration_flag(t) {
        Ok(d) => Ok(Some(d.unwrap_or(Duration::ZERO))),
        Err(BadDuration::Invalid) => Err(Error::Usage(format!(
            "invalid --timeout {t:?}: use a whole number of seconds, or a duration such as 2m"
        ))),
        Err(BadDuration::TooLong) => Err(Error::Usage(too_long("--timeout", t))),
    }
}

/// Go's longest `time.Duration`, 2562047h47m16.854775807s (about 292 years): kubectl refuses a
/// longer `--request-timeout` ("Invalid timeout value"), and so do the plugin's duration flags
/// (a usage error, exit 2), where the process would otherwise reach past the clock's range.
pub const MAX_DURATION: Duration = Duration::new(9_223_372_036, 854_775_807);

#[derive(Debug, PartialEq)]
enum BadDuration {
    Invalid,
    TooLong,
}

fn too_long(flag: &str, text: &str) -> String {
    format!("invalid {flag} {text:?}: longer than 2562047h47m16s, the longest timeout kubectl takes")
}

/// kubectl's `--request-timeout`: a bare integer is seconds, anything else a Go duration
/// (`500ms`, `5s`, `1m30s`); zero means no bound; longer than [`MAX_DURATION`] is refused.
pub fn parse_timeout(text: &str) -> Result<Option<Duration>, Error> {
    duration_flag(text).map_err(|e| match e {
        BadDuration::Invalid => Error::Usage(format!(
            "invalid --request-timeout {text:?}: use a whole number of seconds, or a duration such as 5s or 1m30s"
        )),
        BadDuration::TooLong => Error::Usage(too_long("--request-timeout", text)),
    })
}

fn duration_flag(text: &str) -> Result<Option<Duration>, BadDuration> {
    let d = match text.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        // Digits alone that do not fit u64 are a number too long, not a malformed one.
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => return Err(BadDuration::TooLong),
        Err(_) => parse_go_duration(text)?,
    };
    if d > MAX_DURATION {
        return Err(BadDuration::TooLong);
    }
    Ok((!d.is_zero()).then_some(d))
}

fn parse_go_duration(text: &str) -> Result<Duration, BadDuration> {
    use BadDuration::{Invalid, TooLong};
    if text.is_empty() {
        return Err(Invalid);
    }
    // Go's time.ParseDuration: whole nanoseconds, only a component's fraction through a float.
    const LIMIT: u64 = 1 << 63;
    fn digits(s: &str) -> impl Iterator<Item = u64> + '_ {
        s.bytes().map(|b| u64::from(b - b'0'))
    }
    let mut rest = text;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or(Invalid)?;
        let (whole, fraction) = rest[..number_end].split_once('.').unwrap_or((&rest[..number_end], ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(Invalid);
        }
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit: u64 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(Invalid),
        };
        rest = &rest[unit_end..];
        let whole = digits(whole).try_fold(0u64, |v, d| v.checked_mul(10)?.checked_add(d)).ok_or(TooLong)?;
        // The fraction's digits past what an int64 holds are dropped, as Go drops them.
        let (mut f, mut scale) = (0u64, 1f64);
        for d in digits(fraction) {
            if f > (LIMIT - 1) / 10 || f * 10 + d > LIMIT - 1 {
                break;
            }
            (f, scale) = (f * 10 + d, scale * 10.0);
        }
        let part = whole
            .checked_mul(unit)
            .and_then(|v| v.checked_add((f as f64 * (unit as f64 / scale)) as u64))
            .filter(|v| *v <= LIMIT)
            .ok_or(TooLong)?;
        total = total.checked_add(part).filter(|t| *t <= LIMIT).ok_or(TooLong)?;
    }
    Ok(Duration::from_nanos(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_like_kubectl() {
        assert_eq!(parse_timeout("5").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout("5s").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout("1m30s").unwrap(), Some(Duration::from_secs(90)));
        assert_eq!(parse_timeout("500ms").unwrap(), Some(Duration::from_millis(500)));
        assert_eq!(parse_timeout("1.5h").unwrap(), Some(Duration::from_secs(5400)));
        assert_eq!(parse_timeout("0").unwrap(), None);
        // Whole nanoseconds, as Go adds them (a sum of floats was 2 ns short here).
        let exact = Some(Duration::from_secs(5010 * 3600) + Duration::from_micros(1));
        assert_eq!(parse_timeout("1us5010h").unwrap(), exact);
        assert_eq!(parse_timeout("5010h0.001ms").unwrap(), exact);
        for bad in ["", "5x", "s", "-1", "1m30"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
        // Go's longest time.Duration is the limit, as kubectl's
        assert_eq!(parse_timeout("2562047h").unwrap(), Some(Duration::from_secs(2_562_047 * 3600)));
        assert_eq!(parse_timeout("9223372036").unwrap(), Some(Duration::from_secs(9_223_372_036)));
        for absurd in ["10000000000000000000", "99999999999999999999999", "9223372037", "3000000h", "1e400h"] {
            let e = parse_timeout(absurd).unwrap_err().to_string();
            let want = if absurd == "1e400h" {
                "use a whole number"
            } else {
                "longer than 2562047h47m16s, the longest timeout kubectl takes"
            };
            assert!(e.contains(want), "{absurd}: {e}");
        }
        assert!(wait_timeout(Some("10000000000000000000")).unwrap_err().to_string().starts_with("invalid --timeout"));
        // A live mode's 0 checks once (kubectl wait's); --request-timeout's 0 means no bound.
        assert_eq!(wait_timeout(Some("0")).unwrap(), Some(Duration::ZERO));
        assert_eq!(wait_timeout(Some("0s")).unwrap(), Some(Duration::ZERO));
        assert_eq!(wait_timeout(None).unwrap(), None);
    }

    fn resolve_words(words: &[&str]) -> Result<Invocation, String> {
        use clap::Parser;
        let cli = Cli::try_parse_from(std::iter::once("kubectl-dispatch").chain(words.iter().copied()))
            .map_err(|e| format!("clap: {}", e.kind()))?;
        resolve(cli).map_err(|e| e.to_string())
    }

    #[test]
    fn lease_name_and_namespace_as_kubectl_takes_them() {
        let lease = |words: &[&str]| match resolve_words(words).unwrap().verb {
            Verb::Lease { lease, in_context_namespace, .. } => (lease.to_string(), in_context_namespace),
            _ => unreachable!(),
        };
        assert_eq!(lease(&["lease", "x", "-n", "ns"]), ("ns/x".into(), false));
        assert_eq!(lease(&["-n", "ns", "lease", "x"]), ("ns/x".into(), false));
        assert_eq!(lease(&["lease", "-n", "ns"]), ("ns/dispatch-admission".into(), false));
        assert!(lease(&["lease", "x"]).1, "NAME alone: the context's namespace, as kubectl");
        assert_eq!(lease(&["lease"]), ("dispatch-system/dispatch-admission".into(), false));
        // NAMESPACE/NAME, as --lease takes it; -n may repeat its namespace, not contradict it.
        assert_eq!(lease(&["lease", "ns/x"]), ("ns/x".into(), false));
        assert_eq!(lease(&["lease", "ns/x", "-n", "ns"]), ("ns/x".into(), false));
        assert_eq!(lease(&["-n", "ns", "lease", "ns/x"]), ("ns/x".into(), false));
        for words in [&["lease", "ns/x", "-n", "other"][..], &["-n", "other", "lease", "ns/x"]] {
            let e = resolve_words(words).unwrap_err();
            assert_eq!(
                e,
                "the namespace from the provided object \"ns\" does not match the namespace \"other\". You must pass '--namespace=ns' to perform this operation."
            );
        }
        for bad in ["ns/", "/x", "a/b/c"] {
            let e = resolve_words(&["lease", bad]).unwrap_err();
            assert_eq!(e, format!("invalid Lease {bad:?}: name it NAME or NAMESPACE/NAME"));
        }
        let Verb::Lease { dispatch_namespace, .. } = resolve_words(&["lease", "x"]).unwrap().verb else { panic!() };
        assert_eq!(dispatch_namespace, "dispatch-system", "where did-you-mean looks");
    }

    #[test]
    fn gate_scope_before_or_after_the_verb() {
        for words in [&["-n", "ml", "gate"][..], &["gate", "-n", "ml"], &["--namespace=ml", "gate"]] {
            let inv = resolve_words(words).unwrap();
            assert_eq!(inv.connection.namespace.as_deref(), Some("ml"), "{words:?}");
            assert!(matches!(inv.verb, Verb::Gate { all_namespaces: false, .. }), "{words:?}");
        }
        let inv = resolve_words(&["-A", "gate", "--context", "a", "--context", "b"]).unwrap();
        assert!(matches!(inv.verb, Verb::Fleet { all_namespaces: true, .. }));
        assert_eq!(resolve_words(&["-n", "x", "gate", "-n", "y"]).unwrap().connection.namespace.as_deref(), Some("y"));
    }

    #[test]
    fn what_a_verb_does_not_use_is_a_usage_error() {
        let usage = |words: &[&str]| match resolve_words(words) {
            Err(e) if e.starts_with("clap: ") => e,
            Err(e) => {
                // Our own usage errors: the same exit code (2) as clap's.
                use clap::Parser;
                let cli =
                    Cli::try_parse_from(std::iter::once("kubectl-dispatch").chain(words.iter().copied())).unwrap();
                assert!(resolve(cli).unwrap_err().is_usage(), "{words:?}: {e}");
                e
            }
            Ok(_) => panic!("{words:?} was accepted"),
        };
        for words in [
            &["lease", "--cluster-queue", "a"][..],
            &["lease", "--admission-check", "a"],
            &["lease", "--controller-name", "a"],
            &["lease", "-A"],
            &["lease", "x", "--lease", "a/b"],
            &["lease", "-o", "prometheus"],
            &["gate", "--all-contexts", "--context", "a"],
            &["gate", "--all-contexts", "--watch"],
            &["doctor", "-o", "name"],
        ] {
            assert!(usage(words).starts_with("clap: "), "{words:?}");
        }
        assert!(usage(&["-A", "lease"]).contains("lease reads one Lease"));
        assert_eq!(
            usage(&["gate", "--timeout", "5s"]),
            "--timeout needs --watch or --wait (without them gate reads once)"
        );
        assert_eq!(usage(&["lease", "--timeout", "5s"]), "--timeout needs --watch (without it lease reads once)");
        for words in [&["gate", "--wait", "--timeout", "-1s"][..], &["lease", "--watch", "--timeout=-1s"]] {
            assert!(usage(words).starts_with("invalid --timeout \"-1s\": a timeout is not negative"), "{words:?}");
        }
        assert!(usage(&["--context", "a", "gate", "--all-contexts"]).contains("'--all-contexts' cannot be used with"));
        assert!(usage(&["gate", "-o", "prometheus", "--wait"]).contains("-o prometheus"));
        assert!(resolve_words(&["gate", "--wait", "--timeout", "5s"]).is_ok());
        assert!(resolve_words(&["gate", "--watch", "--timeout", "5s"]).is_ok());
        assert!(resolve_words(&["lease", "--lease", "a/b", "-o", "wide"]).is_ok());
    }

    #[test]
    fn printers_selectors_and_colour_resolve_to_plain_settings() {
        let inv = resolve_words(&["gate", "-o", "jsonpath={.verdict}", "--color=always"]).unwrap();
        let spec = inv.printer.expect("a printer");
        assert_eq!((spec.kind, spec.template.as_str()), (PrinterKind::JsonPath, "{.verdict}"));
        assert!(spec.allow_missing_keys);
        assert_eq!(inv.color, ColorWhen::Always);
        let inv = resolve_words(&["gate", "-l", "team=ml", "--sort-by", ".name"]).unwrap();
        let Verb::Gate { view, .. } = inv.verb else { panic!("gate") };
        assert_eq!(view, WorkloadView { selector: Some("team=ml".into()), sort_by: Some("{.name}".into()) });
        let inv =
            resolve_words(&["lease", "-o", "custom-columns=A:.a", "--allow-missing-template-keys=false"]).unwrap();
        assert!(!inv.printer.unwrap().allow_missing_keys);
        for (words, says) in [
            (&["gate", "-o", "jsonpath={.a["][..], "error parsing jsonpath {.a[, unterminated array"),
            (&["gate", "-o", "custom-columns=NAME"], "unexpected custom-columns spec: NAME"),
            (&["gate", "--sort-by", "{.a}{.b}"], "unexpected path string"),
            (&["gate", "--context", "a", "--context", "b", "-o", "name"], "give --context once"),
            (&["gate", "-o", "jsonpath-file=/nonexistent/template"], "error reading template /nonexistent/template"),
        ] {
            let e = resolve_words(words).unwrap_err();
            assert!(e.contains(says), "{words:?}: {e}");
        }
    }

    #[test]
    fn help_shows_only_what_a_verb_uses() {
        let mut root = crate::cli::options::command();
        root.build();
        let help = |name: &str| {
            let mut sub = root.find_subcommand(name).unwrap().clone();
            sub.render_long_help().to_string()
        };
        let lease = help("lease");
        // -n is kubectl's, the Lease's namespace (`lease NAME -n NS`); -A is not.
        assert!(lease.contains("--namespace"), "{lease}");
        for foreign in [
            "--all-namespaces",
            "--cluster-queue",
            "--admission-check",
            "--controller-name",
            "prometheus",
            "--all-contexts",
        ] {
            assert!(!lease.contains(foreign), "lease --help shows {foreign}:\n{lease}");
        }
        // kubectl's connection flags are taken but listed by `options`, as kubectl lists its own.
        assert!(lease.contains("--lease") && !lease.contains("--kubeconfig"), "{lease}");
        assert!(lease.contains("\"kubectl dispatch options\""), "{lease}");
        let gate = help("gate");
        for own in ["--namespace", "--all-namespaces", "--cluster-queue", "prometheus", "--all-contexts", "--timeout"] {
            assert!(gate.contains(own), "gate --help lacks {own}:\n{gate}");
        }
    }

    #[test]
    fn workload_without_a_name_lists_them() {
        let list = |words: &[&str]| match resolve_words(words).unwrap().verb {
            Verb::Workloads { all_namespaces, view, .. } => (all_namespaces, view.sort_by),
            other => panic!("{words:?}: {other:?}"),
        };
        assert_eq!(list(&["workloads"]), (false, None));
        assert_eq!(list(&["workload", "-A"]), (true, None));
        assert_eq!(list(&["-A", "kwl", "--sort-by", ".stage"]), (true, Some("{.stage}".into())));
        assert!(matches!(resolve_words(&["workloads", "w", "-n", "ml"]).unwrap().verb, Verb::Workload { .. }));
        for words in [&["workload", "w", "-A"][..], &["-A", "workloads", "w"]] {
            assert!(resolve_words(words).unwrap_err().contains("a Workload is named in one namespace"), "{words:?}");
        }
        assert!(resolve_words(&["workload", "w", "--sort-by", ".name"]).unwrap_err().starts_with("clap: "));
    }

    #[test]
    fn config_file_settings_yield_to_flags() {
        let dir = std::env::temp_dir().join(format!("dispatch-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("adapter.yaml");
        std::fs::write(
            &path,
            "kueue:\n  admissionLease: ops/ctl\n  controllerName: example.com/x\n  clusterQueue: cq-a\n  other: 1\nunrelated: true\n",
        )
        .unwrap();
        let mut target =
            GateTargetArgs { lease: LeaseTargetArgs { config: Some(path.clone()), lease: None }, ..Default::default() };
        let s = gate_settings(&target).unwrap();
        assert_eq!(s.lease.to_string(), "ops/ctl");
        assert_eq!(s.controller_name, "example.com/x");
        assert_eq!(s.cluster_queues, vec!["cq-a".to_string()]);
        target.lease.lease = Some("a/b".parse().unwrap());
        target.controller_name = Some("flag".into());
        let s = gate_settings(&target).unwrap();
        assert_eq!(s.lease.to_string(), "a/b");
        assert_eq!(s.controller_name, "flag");
        std::fs::write(&path, "kueue: [1, 2\n").unwrap();
        assert!(matches!(gate_settings(&target), Err(Error::ConfigFile { .. })));
        std::fs::remove_dir_all(dir).unwrap();
    }
}

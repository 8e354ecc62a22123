//! Turns the parsed command line into plain, validated settings before anything connects:
//! `--help`, usage errors and a bad `--config` need no cluster. Nothing after this sees clap.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::cli::{Cli, Command, ConnectionArgs, Format, OutputArgs, TargetArgs};
use crate::core::gate::GateSettings;
use crate::core::lease::LeaseRef;
use crate::error::{Error, first_line};

/// One run of the plugin, fully resolved.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub connection: ConnectionArgs,
    pub timeout: Option<Duration>,
    pub verb: Verb,
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
    },
    Gate {
        settings: GateSettings,
        output: Output,
        all_states: bool,
        live: Option<GateLive>,
    },
    Lease {
        lease: LeaseRef,
        output: Output,
        watch: Option<LeaseWatch>,
    },
    Doctor {
        lease: LeaseRef,
        output: Output,
        /// Print only the RBAC to add.
        rbac: bool,
    },
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
    pub until: Option<crate::cli::Until>,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub format: Format,
    pub no_headers: bool,
}

impl From<&OutputArgs> for Output {
    fn from(o: &OutputArgs) -> Self {
        Output { format: o.output, no_headers: o.no_headers }
    }
}

pub fn resolve(cli: Cli) -> Result<Invocation, Error> {
    let timeout = parse_timeout(&cli.connection.request_timeout)?;
    let mut connection = cli.connection;
    let fleet = match &cli.command {
        Command::Gate(args) if args.all_contexts => Some(Fleet::All),
        Command::Gate(args) if connection.contexts.len() > 1 => {
            if args.watch || args.wait {
                return Err(Error::Usage("--watch and --wait take one --context".into()));
            }
            Some(Fleet::Named(connection.contexts.clone()))
        }
        _ if connection.contexts.len() > 1 => {
            return Err(Error::Usage("only gate takes --context more than once".into()));
        }
        _ => None,
    };
    connection.context = connection.contexts.first().cloned();
    let verb = match cli.command {
        Command::Gate(args) if fleet.is_some() => Verb::Fleet {
            contexts: fleet.unwrap_or(Fleet::All),
            settings: gate_settings(&args.target)?,
            output: (&args.output).into(),
            all_states: args.all_states,
        },
        Command::Gate(args) => Verb::Gate {
            settings: gate_settings(&args.target)?,
            output: (&args.output).into(),
            all_states: args.all_states,
            live: (args.watch || args.wait)
                .then(|| Ok::<_, Error>(GateLive { wait: args.wait, timeout: wait_timeout(args.timeout.as_deref())? }))
                .transpose()?,
        },
        Command::Lease(args) => Verb::Lease {
            lease: gate_settings(&args.target)?.lease,
            output: (&args.output).into(),
            watch: args
                .watch
                .then(|| {
                    Ok::<_, Error>(LeaseWatch {
                        changes_only: args.changes_only,
                        until: args.until,
                        timeout: wait_timeout(args.timeout.as_deref())?,
                    })
                })
                .transpose()?,
        },
        Command::Doctor(args) => Verb::Doctor {
            lease: gate_settings(&TargetArgs {
                lease: args.lease.clone(),
                config: args.config.clone(),
                ..Default::default()
            })?
            .lease,
            output: (&args.output).into(),
            rbac: args.rbac,
        },
        // Needs no cluster: main prints the script before resolving anything.
        Command::Completion(_) => return Err(Error::Usage("completion is not a cluster command".into())),
    };
    Ok(Invocation { connection, timeout, verb })
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

fn gate_settings(target: &TargetArgs) -> Result<GateSettings, Error> {
    let file = match &target.config {
        Some(path) => read_config(path)?,
        None => KueueConfig::default(),
    };
    let defaults = GateSettings::default();
    let lease = match (&target.lease, &file.admission_lease) {
        (Some(lease), _) => lease.clone(),
        (None, Some(text)) => text.parse().map_err(|e| Error::ConfigFile {
            path: target.config.clone().unwrap_or_default(),
            cause: format!("kueue.admissionLease: {e}"),
        })?,
        (None, None) => defaults.lease,
    };
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
    })
}

fn read_config(path: &Path) -> Result<KueueConfig, Error> {
    let fail = |cause: String| Error::ConfigFile { path: path.to_path_buf(), cause };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let config: AdapterConfig = serde_saphyr::from_str(&text).map_err(|e| fail(first_line(&e.to_string())))?;
    Ok(config.kueue)
}

/// `--timeout` of the live modes: a duration, or seconds; none means wait for ever.
fn wait_timeout(text: Option<&str>) -> Result<Option<Duration>, Error> {
    match text {
        None => Ok(None),
        Some(t) => parse_timeout(t).map_err(|_| {
            Error::Usage(format!("invalid --timeout {t:?}: use a whole number of seconds, or a duration such as 2m"))
        }),
    }
}

/// kubectl's `--request-timeout`: a bare integer is seconds, anything else a Go duration
/// (`500ms`, `5s`, `1m30s`); zero means no bound.
pub fn parse_timeout(text: &str) -> Result<Option<Duration>, Error> {
    let invalid = || {
        Error::Usage(format!(
            "invalid --request-timeout {text:?}: use a whole number of seconds, or a duration such as 5s or 1m30s"
        ))
    };
    let d = match text.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => parse_go_duration(text).ok_or_else(invalid)?,
    };
    Ok((!d.is_zero()).then_some(d))
}

fn parse_go_duration(text: &str) -> Option<Duration> {
    if text.is_empty() {
        return None;
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
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
        for bad in ["", "5x", "s", "-1", "1m30"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
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
        let mut target = TargetArgs { config: Some(path.clone()), ..Default::default() };
        let s = gate_settings(&target).unwrap();
        assert_eq!(s.lease.to_string(), "ops/ctl");
        assert_eq!(s.controller_name, "example.com/x");
        assert_eq!(s.cluster_queues, vec!["cq-a".to_string()]);
        target.lease = Some("a/b".parse().unwrap());
        target.controller_name = Some("flag".into());
        let s = gate_settings(&target).unwrap();
        assert_eq!(s.lease.to_string(), "a/b");
        assert_eq!(s.controller_name, "flag");
        std::fs::write(&path, "kueue: [1, 2\n").unwrap();
        assert!(matches!(gate_settings(&target), Err(Error::ConfigFile { .. })));
        std::fs::remove_dir_all(dir).unwrap();
    }
}

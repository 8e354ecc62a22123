//! `gate --context a --context b ...` and `gate --all-contexts`: the gate on several clusters
//! at once. Each context is connected and judged concurrently, each within its own
//! `--request-timeout`, so a dead cluster holds up no other beyond that bound.

use std::time::Duration;

use futures::future::join_all;

use super::Deps;
use super::gate::{self, GateOptions};
use crate::cli::ConnectionArgs;
use crate::cluster::connect;
use crate::core::gate::GateSettings;
use crate::core::verdict::Verdict;
use crate::error::Error;
use crate::exit::Exit;
use crate::render::fleet::{self, ContextResult};
use crate::settings::{Fleet, Output};

pub struct FleetOptions<'a> {
    pub connection: &'a ConnectionArgs,
    pub contexts: &'a Fleet,
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_states: bool,
    pub timeout: Option<Duration>,
}

pub async fn run(opts: &FleetOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let names = match opts.contexts {
        Fleet::Named(names) => names.clone(),
        Fleet::All => connect::context_names(opts.connection)?,
    };
    let log = deps.log;
    let clock = deps.clock;
    let results = join_all(names.iter().map(|name| async move {
        let outcome = match opts.timeout {
            Some(t) => tokio::time::timeout(t, judge_one(name, opts, log, clock)).await.unwrap_or_else(|_| {
                Err(format!("no answer within {}", crate::core::duration::go_seconds(t.as_secs() as i64)))
            }),
            None => judge_one(name, opts, log, clock).await,
        };
        ContextResult { context: name.clone(), outcome }
    }))
    .await;
    fleet::render(&results, opts.output, deps.out)?;
    Ok(worst(&results))
}

async fn judge_one(
    name: &str,
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
    clock: &dyn crate::clock::Clock,
) -> Result<crate::report::GateRun, String> {
    let mut args = opts.connection.clone();
    args.context = Some(name.to_string());
    args.contexts = vec![name.to_string()];
    let conn = connect::connect(&args, opts.timeout, false, log).await.map_err(|e| e.to_string())?;
    let gate_opts = GateOptions {
        settings: opts.settings,
        output: opts.output,
        all_states: opts.all_states,
        all_namespaces: args.all_namespaces,
        timeout: None,
    };
    let now = clock.now();
    let collected = gate::collect(&conn, &gate_opts, log).await.map_err(|e| e.to_string())?;
    Ok(gate::judge(collected, &gate_opts, &conn.namespace, now))
}

/// The exit of a fleet: a proven *no* anywhere wins, then a context that could not be judged
/// (1), then *unknown*, else *yes*.
fn worst(results: &[ContextResult]) -> Exit {
    let verdicts: Vec<Verdict> =
        results.iter().filter_map(|r| r.outcome.as_ref().ok()).map(|r| r.report.verdict).collect();
    if verdicts.contains(&Verdict::No) {
        Exit::No
    } else if results.iter().any(|r| r.outcome.is_err()) {
        Exit::Failed
    } else {
        Exit::from(Verdict::worst(verdicts))
    }
}

//! `gate --context a --context b ...` and `gate --all-contexts`: the gate on several clusters
//! at once. Each context is connected and judged concurrently, and each of its requests (and
//! its exec credential plugin's run) is bounded by `--request-timeout` when set, else by
//! [`REQUEST_BOUND`]: a dead cluster holds up no other beyond that, while a big one that
//! answers page after page is judged however long its pages take together.

use std::time::Duration;

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

/// The bound on each request of a context, and on its exec plugin's run, when
/// `--request-timeout` is not set.
pub const REQUEST_BOUND: Duration = Duration::from_secs(30);

pub struct FleetOptions<'a> {
    pub connection: &'a ConnectionArgs,
    pub contexts: &'a Fleet,
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_states: bool,
    pub all_namespaces: bool,
    pub timeout: Option<Duration>,
    pub view: &'a crate::settings::WorkloadView,
}

pub fn run(opts: &FleetOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let names = match opts.contexts {
        Fleet::Named(names) => names.clone(),
        Fleet::All => crate::cluster::kubeconfig::context_names(opts.connection)?,
    };
    let (log, clock) = (deps.log, deps.clock);
    // A thread and a current-thread runtime per context: the contexts' responses are decoded
    // in parallel on every core, not interleaved on one.
    let results: Vec<ContextResult> = std::thread::scope(|scope| {
        let threads: Vec<_> =
            names.iter().map(|name| scope.spawn(move || judge_on_own_thread(name, opts, log, clock))).collect();
        names
            .iter()
            .zip(threads)
            .map(|(name, thread)| ContextResult {
                context: name.clone(),
                outcome: thread.join().unwrap_or_else(|_| Err("the judging thread failed".into())),
            })
            .collect()
    });
    fleet::notes(&results, opts.output, deps.err)?;
    fleet::render(&results, opts.output, deps.out)?;
    Ok(worst(&results))
}

fn judge_on_own_thread(
    name: &str,
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
    clock: &dyn crate::clock::Clock,
) -> Result<crate::report::GateRun, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(judge_one(name, opts, log, clock))
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
    // Never the terminal, nor stderr: several plugins would talk at once.
    let request_timeout = Some(opts.timeout.unwrap_or(REQUEST_BOUND));
    let manner = connect::Manner { request_timeout, interactive: false, pass_stderr: false };
    let conn = connect::connect(&args, manner, log).await.map_err(|e| e.to_string())?;
    let gate_opts = GateOptions {
        settings: opts.settings,
        output: opts.output,
        all_states: opts.all_states,
        all_namespaces: opts.all_namespaces,
        view: opts.view,
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

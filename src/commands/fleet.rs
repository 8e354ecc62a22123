//! `gate --context a --context b ...` and `gate --all-contexts`: the gate on several clusters
//! at once. Each context is named once (a repeated `--context` is judged once, so `-o
//! prometheus` has no duplicate series), and at most `--max-concurrency` are connected and
//! judged at a time, each on a thread of its own: a kubeconfig of 300 contexts runs 8 threads,
//! runtimes and exec credential plugins at once, not 300. Each of a context's requests (and its
//! exec plugin's run) is bounded by `--request-timeout` when set, else by [`REQUEST_BOUND`]: a
//! dead cluster holds up no other beyond that, while a big one that answers page after page is
//! judged however long its pages take together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::Deps;
use super::gate::{self, GateOptions};
use crate::cluster::connecting::connect;
use crate::core::gate::GateSettings;
use crate::core::verdict::Verdict;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::ConnectionSettings;
use crate::invocation::{Fleet, Output};
use crate::render::fleet;
use crate::report::fleet::ContextResult;

/// The bound on each request of a context, and on its exec plugin's run, when
/// `--request-timeout` is not set.
pub const REQUEST_BOUND: Duration = Duration::from_secs(30);

pub struct FleetOptions<'a> {
    pub connection: &'a ConnectionSettings,
    pub contexts: &'a Fleet,
    pub settings: &'a GateSettings,
    pub output: Output,
    pub all_states: bool,
    pub all_namespaces: bool,
    pub timeout: Option<Duration>,
    /// Contexts judged at once (at least 1).
    pub max_concurrency: usize,
    /// `-l` on the Workloads of each context.
    pub selector: Option<&'a str>,
    /// `--sort-by` on the waiting Workloads of each context.
    pub sort_by: Option<&'a crate::render::jsonpath::Template>,
}

pub fn run(opts: &FleetOptions<'_>, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let names = match opts.contexts {
        Fleet::Named(names) => names.clone(),
        Fleet::All => crate::cluster::connecting::kubeconfig::context_names(opts.connection)?,
    };
    let names = once_each(names);
    let (log, clock) = (deps.log, deps.clock);
    // Workers, each a thread with a current-thread runtime per context it takes: the contexts'
    // responses are decoded in parallel on every core, not interleaved on one.
    let next = AtomicUsize::new(0);
    let workers = opts.max_concurrency.clamp(1, names.len().max(1));
    let mut outcomes: Vec<Option<Result<crate::report::GateRun, String>>> = names.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) {
                        done.push((name.clone(), judge_on_own_thread(name, opts, log, clock)));
                    }
                    done
                })
            })
            .collect();
        for thread in threads {
            for (name, outcome) in thread.join().unwrap_or_default() {
                if let Some(i) = names.iter().position(|n| *n == name) {
                    outcomes[i] = Some(outcome);
                }
            }
        }
    });
    let results: Vec<ContextResult> = names
        .iter()
        .zip(outcomes)
        .map(|(name, outcome)| ContextResult {
            context: name.clone(),
            outcome: outcome.unwrap_or_else(|| Err("the judging thread failed".into())),
        })
        .collect();
    fleet::notes(&results, opts.output, deps.err)?;
    fleet::render(&results, opts.output, deps.out)?;
    Ok(worst(&results))
}

/// The names in their first order, each once.
fn once_each(names: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().filter(|n| seen.insert(n.clone())).collect()
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
    // Never the terminal, nor stderr: several plugins would talk at once.
    let request_timeout = Some(opts.timeout.unwrap_or(REQUEST_BOUND));
    let manner = connect::Manner { request_timeout, interactive: false, pass_stderr: false };
    let conn = connect::connect(&args, manner, log).await.map_err(|e| e.to_string())?;
    let gate_opts = GateOptions {
        settings: opts.settings,
        output: opts.output,
        all_states: opts.all_states,
        all_namespaces: opts.all_namespaces,
        selector: opts.selector,
        sort_by: opts.sort_by,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_context_is_judged_once_in_its_first_place() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(once_each(names(&["a", "b", "a", "c", "b"])), names(&["a", "b", "c"]));
        assert_eq!(once_each(names(&["a", "a"])), names(&["a"]));
    }
}

//! `gate --context a --context b ...` and `gate --all-contexts`: the gate on several clusters
//! at once. Each context is named once (a repeated `--context` is judged once, so `-o
//! prometheus` has no duplicate series). At most `--max-concurrency` connect at a time (their
//! exec credential plugins, their first round trip) and at most as many are read and judged,
//! each stage on threads of its own: a kubeconfig of 300 contexts runs 16 threads and 8 exec
//! plugins at once, not 300, and a silent cluster waits out its timeout beside the others.
//! Each of a context's requests (and its exec plugin's run) is bounded by `--request-timeout`
//! when set, else by [`REQUEST_BOUND`]: a dead cluster holds up no other beyond that, while a
//! big one that answers page after page is judged however long its pages take together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use super::Deps;
use super::gate::{self, GateOptions};
use crate::cluster::connecting::connect;
use crate::cluster::reading::fetch::{self, KueueApi};
use crate::core::gate::GateSettings;
use crate::core::verdict::Verdict;
use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::ConnectionSettings;
use crate::invocation::{Fleet, Format, Output};
use crate::render::fleet;
use crate::report::fleet::ContextResult;

/// The bound on each request of a context, and on its exec plugin's run, when
/// `--request-timeout` is not set.
pub const REQUEST_BOUND: Duration = Duration::from_secs(30);

/// The bound on reading and judging one context, whatever its requests: a server that answers
/// every request in time but never ends a list (a new continue token on every page, say) is
/// reported as such, and the other contexts print. The largest cluster measured (20,000
/// Workloads) reads in seconds; ten minutes leaves room for a far and slow one.
pub const CONTEXT_BOUND: Duration = Duration::from_secs(600);

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
    // A table prints each context's rows the moment it is judged, as kubectl prints one table
    // per resource: a context still reading holds back no other's. The documents (JSON, YAML,
    // prometheus) are one whole each, printed at the end, in the kubeconfig's order.
    let streamed = matches!(opts.output.format, Format::Table | Format::Wide);
    let (out, style) = (&mut *deps.out, deps.style);
    let mut printed = 0usize;
    let mut shown = |r: &ContextResult| -> std::io::Result<()> {
        if !streamed {
            return Ok(());
        }
        printed += 1;
        if printed == 1 || opts.output.no_headers {
            fleet::render(std::slice::from_ref(r), opts.output, style, out)?;
            return out.flush();
        }
        // A later context: aligned with the header, as the first was, and written without it.
        let mut block = Vec::new();
        fleet::render(std::slice::from_ref(r), opts.output, style, &mut block)?;
        let start = block.iter().position(|&b| b == b'\n').map_or(block.len(), |i| i + 1);
        out.write_all(&block[start..])?;
        out.flush()
    };
    let outcomes = judge_all(&names, opts, deps.log, deps.clock, &mut shown);
    let results: Vec<ContextResult> = names
        .iter()
        .zip(outcomes)
        .map(|(name, outcome)| {
            outcome.unwrap_or_else(|| {
                let r = ContextResult { context: name.clone(), outcome: Err("the judging thread failed".into()) };
                let _ = shown(&r);
                r
            })
        })
        .collect();
    fleet::notes(&results, opts.output, deps.err)?;
    if !streamed {
        fleet::render(&results, opts.output, deps.style, deps.out)?;
    }
    Ok(worst(&results))
}

/// Connected contexts that may wait for a reader, per worker: enough that a silent cluster's
/// first request is sent while the others are read, so it waits out its timeout beside them
/// rather than after them; few enough that a kubeconfig of 300 contexts holds at most 4 × the
/// limit idle connections (each a socket, its TLS state and a runtime: no thread).
const WAITING_PER_WORKER: usize = 4;

/// A context connected and answered once (discovery), waiting to be read: its own
/// current-thread runtime, which drives its connection wherever it is blocked on.
struct Connected {
    index: usize,
    runtime: tokio::runtime::Runtime,
    conn: connect::Connection,
    kueue: KueueApi,
}

type Outcome = Result<crate::report::GateRun, String>;

/// Judges every context in two stages, each at most `--max-concurrency` at once, with threads
/// of their own: connecting (the exec plugin, the first round trip) and reading (the lists,
/// then the judgement). The contexts' responses are decoded in parallel on every core, and a
/// context whose server never answers holds one connecting worker for its timeout while the
/// readers go on with the others: it is not the last thing the fleet waits for.
fn judge_all(
    names: &[String],
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
    clock: &dyn crate::clock::Clock,
    shown: &mut dyn FnMut(&ContextResult) -> std::io::Result<()>,
) -> Vec<Option<ContextResult>> {
    let mut results: Vec<Option<ContextResult>> = names.iter().map(|_| None).collect();
    let (judged, arriving) = mpsc::channel::<(usize, Outcome)>();
    let record = |i: usize, outcome: Outcome| drop(judged.send((i, outcome)));
    let workers = opts.max_concurrency.clamp(1, names.len().max(1));
    let next = AtomicUsize::new(0);
    let (ready, waiting) = mpsc::sync_channel::<Connected>(workers * WAITING_PER_WORKER);
    let waiting = Mutex::new(waiting);
    std::thread::scope(|scope| {
        let mut threads = Vec::new();
        for _ in 0..workers {
            let ready = ready.clone();
            threads.push(scope.spawn(|| {
                let ready = ready;
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = names.get(index) else { break };
                    match connect_on_own_runtime(index, name, opts, log) {
                        // Only if every reader is gone; the context is left unjudged (`None`).
                        Ok(connected) => drop(ready.send(connected)),
                        Err(e) => record(index, Err(e)),
                    }
                }
            }));
        }
        drop(ready);
        for _ in 0..workers {
            threads.push(scope.spawn(|| {
                loop {
                    let taken = waiting.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(c) = taken else { break };
                    record(c.index, read_on_own_runtime(c, opts, log, clock));
                }
            }));
        }
        // Each context as it is judged, until every thread is done (a thread that failed
        // leaves its contexts unjudged, `None`, never the others).
        let mut left = names.len();
        while left > 0 {
            let (i, outcome) = match arriving.recv_timeout(Duration::from_millis(200)) {
                Ok(judged) => judged,
                // Every thread done: what they sent is all there.
                Err(_) if threads.iter().all(|t| t.is_finished()) => match arriving.try_recv() {
                    Ok(judged) => judged,
                    Err(_) => break,
                },
                Err(_) => continue,
            };
            let result = ContextResult { context: names[i].clone(), outcome };
            let _ = shown(&result);
            if let Some(slot) = results.get_mut(i) {
                *slot = Some(result);
                left -= 1;
            }
        }
        for thread in threads {
            let _ = thread.join();
        }
    });
    results
}

/// Reads and judges a connected context on its own runtime, within [`CONTEXT_BOUND`].
fn read_on_own_runtime(
    c: Connected,
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
    clock: &dyn crate::clock::Clock,
) -> Outcome {
    // The timer is made inside the runtime, which drives it.
    let reading =
        async { tokio::time::timeout(CONTEXT_BOUND, read_and_judge(&c.conn, c.kueue, opts, log, clock)).await };
    c.runtime.block_on(reading).unwrap_or_else(|_| {
        Err(format!(
            "reading this context did not end within {}, the bound on one context of a fleet",
            crate::core::duration::go_duration(CONTEXT_BOUND)
        ))
    })
}

/// The names in their first order, each once.
fn once_each(names: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().filter(|n| seen.insert(n.clone())).collect()
}

/// Connects to context `name` on a runtime of its own and asks discovery: the first round
/// trip, which a silent server never answers.
fn connect_on_own_runtime(
    index: usize,
    name: &str,
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
) -> Result<Connected, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let mut args = opts.connection.clone();
    args.context = Some(name.to_string());
    // Never the terminal, nor stderr: several plugins would talk at once.
    let request_timeout = Some(opts.timeout.unwrap_or(REQUEST_BOUND));
    let connect_options = connect::ConnectOptions { request_timeout, interactive: false, pass_stderr: false };
    let (conn, kueue) = runtime
        .block_on(async {
            let conn = connect::connect(&args, connect_options, log).await?;
            let kueue = fetch::discover_kueue(&conn, log).await?;
            Ok::<_, Error>((conn, kueue))
        })
        .map_err(|e| e.to_string())?;
    Ok(Connected { index, runtime, conn, kueue })
}

async fn read_and_judge(
    conn: &connect::Connection,
    kueue: KueueApi,
    opts: &FleetOptions<'_>,
    log: &crate::log::Log,
    clock: &dyn crate::clock::Clock,
) -> Outcome {
    let gate_opts = GateOptions {
        settings: opts.settings,
        output: opts.output,
        all_states: opts.all_states,
        all_namespaces: opts.all_namespaces,
        selector: opts.selector,
        sort_by: opts.sort_by,
    };
    let collected = gate::collect_discovered(conn, kueue, &gate_opts, log).await.map_err(|e| e.to_string())?;
    // After the reads, the Lease's among them, as the one-shot gate reads it (docs/gate.md).
    let now = clock.now();
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

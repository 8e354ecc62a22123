//! Whole commands in process, for the fast tier: the command line parsed and resolved as the
//! binary does it (`cli::options::command`, `cli::resolve`), then `app::run` with the test's
//! clock, stdout and stderr kept in memory behind the same output boundary the binary puts
//! them behind (`text::terminal::Screen`), and the error `main` would print.
//!
//! The kubeconfig is the test's (usually [`super::replay::Replay::kubeconfig`]), passed by
//! `--kubeconfig`, so runs on several threads never share an environment variable.

use std::time::Duration;

use clap::FromArgMatches;
use kubectl_dispatch::app;
use kubectl_dispatch::cli::{args, options, resolve};
use kubectl_dispatch::clock::Clock;
use kubectl_dispatch::commands::Deps;
use kubectl_dispatch::error::Error;
use kubectl_dispatch::log::Log;
use kubectl_dispatch::render::Style;
use kubectl_dispatch::render::printer::Printer;
use kubectl_dispatch::text::terminal::{Allow, Screen};

use super::Run;

/// `kubectl dispatch ARGS` run in this process with `kubeconfig`'s text and `clock`; a live
/// mode still running after `limit` is dropped there (as Ctrl-C would end it, without the
/// final line), and its code is -1.
pub fn run(kubeconfig: &str, args: &[&str], clock: &dyn Clock, limit: Duration) -> Run {
    let dir = super::temp_dir("inprocess");
    let path = dir.join("config");
    std::fs::write(&path, kubeconfig).expect("write the kubeconfig");
    let mut full = vec!["kubectl-dispatch", "--kubeconfig", path.to_str().unwrap()];
    full.extend_from_slice(args);
    let run = run_args(&full, clock, limit);
    let _ = std::fs::remove_dir_all(&dir);
    run
}

fn run_args(full: &[&str], clock: &dyn Clock, limit: Duration) -> Run {
    let matches = options::command()
        .try_get_matches_from(full)
        .and_then(|m| args::Cli::from_arg_matches(&m))
        .unwrap_or_else(|e| panic!("the fast tier runs valid command lines; {full:?}: {e}"));
    let invocation = match resolve::resolve(matches) {
        Ok(inv) => inv,
        Err(e) => return failed(&e, String::new(), String::new()),
    };
    let printer = invocation.printer.as_ref().map(Printer::new).transpose().expect("a printer the resolver checked");
    let style = Style { color: false, live: false };
    let allow = Allow { colour: false, clear_line: false };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = {
        let mut data: Box<dyn std::io::Write> = match invocation.writes_data() {
            true => Box::new(&mut out),
            false => Box::new(Screen::new(&mut out, allow)),
        };
        let mut screen_err = Screen::new(&mut err, allow);
        let log = Log::silent();
        let mut deps =
            Deps { clock, out: &mut *data, err: &mut screen_err, log: &log, style, printer: printer.as_ref() };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let result = runtime.block_on(async { tokio::time::timeout(limit, app::run(&invocation, &mut deps)).await });
        let _ = std::io::Write::flush(&mut data);
        let _ = std::io::Write::flush(&mut screen_err);
        result
    };
    let (stdout, stderr) = (String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned());
    match result {
        Ok(Ok(exit)) => Run { code: exit.code(), stdout, stderr },
        Ok(Err(e)) => failed(&e, stdout, stderr),
        Err(_elapsed) => Run { code: -1, stdout, stderr },
    }
}

/// What `main` prints for an error: `error: ...`, and its hint.
fn failed(e: &Error, stdout: String, mut stderr: String) -> Run {
    stderr += &format!("error: {e}\n");
    if let Some(hint) = e.hint() {
        stderr += &format!("{hint}\n");
    }
    Run { code: e.exit().code(), stdout, stderr }
}

/// A clock that starts at `base` and runs with the machine's: a live mode's ages grow as a
/// script's times pass.
pub struct Moving {
    base: k8s_openapi::jiff::Timestamp,
    start: std::time::Instant,
}

impl Moving {
    pub fn from(base: k8s_openapi::jiff::Timestamp) -> Moving {
        Moving { base, start: std::time::Instant::now() }
    }
}

impl Clock for Moving {
    fn now(&self) -> k8s_openapi::jiff::Timestamp {
        let elapsed = k8s_openapi::jiff::SignedDuration::try_from(self.start.elapsed()).unwrap_or_default();
        self.base + elapsed
    }
}

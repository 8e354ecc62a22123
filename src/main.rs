//! `kubectl-dispatch`: parse, run, print at most one error, exit with the documented code.
//! Never returns an error from `main` (RUST_BACKTRACE=1 would print a backtrace).

use std::io::{self, Write};
use std::process::ExitCode;

use kubectl_dispatch::app;
use kubectl_dispatch::cli::{self, Parsed};
use kubectl_dispatch::clock::SystemClock;
use kubectl_dispatch::commands::Deps;
use kubectl_dispatch::error::Error;
use kubectl_dispatch::exit::Exit;
use kubectl_dispatch::invocation::Invocation;
use kubectl_dispatch::log::Log;
use kubectl_dispatch::render::Style;
use kubectl_dispatch::text::terminal::Lines;

fn main() -> ExitCode {
    if let Some(exit) = cli::complete::as_kubectl_completer() {
        return ExitCode::from(exit.code() as u8);
    }
    let exit = match cli::parse() {
        Parsed::Run(invocation, verbosity) => run(&invocation, verbosity),
        Parsed::Done(exit) => exit,
        Parsed::Invalid(e) => report(&e),
    };
    ExitCode::from(exit.code() as u8)
}

fn run(invocation: &Invocation, verbosity: u8) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return report(&Error::Output(e)),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut err = io::stderr();
    let log = Log::new(verbosity, Lines::new(Box::new(io::stderr())));
    let clock = SystemClock;
    let mut deps = Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Style::detect() };
    let result = runtime.block_on(app::run(invocation, &mut deps));
    let flushed = out.flush();
    match (result, flushed) {
        (Err(e), _) => report(&e),
        (Ok(exit), Ok(())) => exit,
        (Ok(exit), Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => exit,
        (Ok(_), Err(e)) => report(&Error::Output(e)),
    }
}

/// Prints `error: ...` and at most one hint; a closed stdout is not worth a word.
fn report(e: &Error) -> Exit {
    if let Error::Output(io) = e
        && io.kind() == io::ErrorKind::BrokenPipe
    {
        return Exit::Failed;
    }
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "error: {e}");
    if let Some(hint) = e.hint() {
        let _ = writeln!(stderr, "{hint}");
    }
    if e.is_usage() {
        let _ = writeln!(stderr, "See 'kubectl dispatch --help' for usage.");
    }
    e.exit()
}

//! `kubectl-dispatch`: parse, run, print at most one error, exit with the documented code.
//! Never returns an error from `main` (RUST_BACKTRACE=1 would print a backtrace).

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use kubectl_dispatch::cli::Cli;
use kubectl_dispatch::clock::SystemClock;
use kubectl_dispatch::commands::Deps;
use kubectl_dispatch::error::Error;
use kubectl_dispatch::exit::Exit;
use kubectl_dispatch::log::Log;
use kubectl_dispatch::render::Style;
use kubectl_dispatch::{app, settings};

fn main() -> ExitCode {
    if let Some(exit) = kubectl_dispatch::complete::as_kubectl_completer() {
        return ExitCode::from(exit.code() as u8);
    }
    let exit = match Cli::try_parse() {
        Ok(cli) => run(cli),
        Err(e) => usage(e),
    };
    ExitCode::from(exit.code() as u8)
}

fn run(cli: Cli) -> Exit {
    if let kubectl_dispatch::cli::Command::Completion(args) = &cli.command {
        return kubectl_dispatch::complete::print_script(args.shell);
    }
    let verbosity = cli.connection.verbosity;
    let invocation = match settings::resolve(cli) {
        Ok(inv) => inv,
        Err(e) => return report(&e),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return report(&Error::Output(e)),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut err = io::stderr();
    let log = Log::new(verbosity, Box::new(io::stderr()));
    let clock = SystemClock;
    let style = Style::for_color(invocation.color);
    let printer = invocation.printer.as_ref();
    let mut deps = Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style, printer };
    let result = runtime.block_on(app::run(&invocation, &mut deps));
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

/// clap's errors, reduced to kubectl's shape: one `error:` line and one hint.
fn usage(e: clap::Error) -> Exit {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { Exit::Usage } else { Exit::Yes };
    }
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("error: invalid usage");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // "the following required arguments were not provided:" lists them on the lines below.
    if line.ends_with(':') {
        let listed: Vec<&str> = lines.take_while(|l| l.starts_with("  ")).map(str::trim).collect();
        line = format!("{line} {}", listed.join(", "));
    }
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "error: {line}");
    let _ = writeln!(stderr, "See 'kubectl dispatch --help' for usage.");
    Exit::Usage
}

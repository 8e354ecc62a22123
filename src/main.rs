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
use kubectl_dispatch::render::printer::Printer;
use kubectl_dispatch::text::terminal::{Allow, LineSink, Screen};

/// The version `--version` answers: Cargo.toml's, unless the build sets
/// `KUBECTL_DISPATCH_VERSION` (tests/e2e_krew.rs builds a second version of the plugin that way:
/// only this crate is compiled again, not the library). Releases never set it.
const VERSION: &str = match option_env!("KUBECTL_DISPATCH_VERSION") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};

fn main() -> ExitCode {
    if let Some(exit) = cli::complete::as_kubectl_completer() {
        return ExitCode::from(exit.code() as u8);
    }
    let exit = match cli::parse(VERSION) {
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
    let style = Style::for_color(invocation.color);
    // Text for a terminal passes the screen; JSON, YAML, Prometheus and jsonpath keep their
    // data exact.
    let allow = Allow { colour: style.color, clear_line: style.live };
    let stdout: Box<dyn Write> = match invocation.writes_data() {
        true => Box::new(io::stdout().lock()),
        false => Box::new(Screen::new(io::stdout().lock(), allow)),
    };
    let mut out = ClosedPipe::new(io::BufWriter::new(stdout), !invocation.verb.is_live());
    let mut err = Screen::new(io::stderr(), Allow { clear_line: false, ..allow });
    let log = Log::new(verbosity, LineSink::stderr());
    let clock = SystemClock;
    // Checked when the command line was resolved: this parses the same text again.
    let printer = match invocation.printer.as_ref().map(Printer::new).transpose() {
        Ok(p) => p,
        Err(e) => return report(&Error::Usage(e)),
    };
    let mut deps = Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style, printer: printer.as_ref() };
    let result = runtime.block_on(app::run(invocation, &mut deps));
    let flushed = out.flush();
    match (result, flushed) {
        (Err(e), _) => report(&e),
        (Ok(exit), Ok(())) => exit,
        (Ok(exit), Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => exit,
        (Ok(_), Err(e)) => report(&Error::Output(e)),
    }
}

/// One rule for a closed stdout (`| head -1`): it changes no exit code. A one-shot command
/// writes on into nothing once the reader is gone, so it ends with the code of what it judged,
/// however much was written first; a live mode is told (the write fails) and ends as Ctrl-C
/// ends it.
struct ClosedPipe<W> {
    inner: W,
    /// Swallow writes after the pipe closed (one-shot), rather than fail them (live modes).
    swallow: bool,
    closed: bool,
}

impl<W: Write> ClosedPipe<W> {
    fn new(inner: W, swallow: bool) -> Self {
        ClosedPipe { inner, swallow, closed: false }
    }

    fn gone(&mut self, e: io::Error) -> io::Result<()> {
        if e.kind() == io::ErrorKind::BrokenPipe && self.swallow {
            self.closed = true;
            return Ok(());
        }
        Err(e)
    }
}

impl<W: Write> Write for ClosedPipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) => self.gone(e).map(|()| buf.len()),
            ok => ok,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) => self.gone(e),
            ok => ok,
        }
    }
}

/// Prints `error: ...` and at most one hint; a closed stdout is not worth a word.
fn report(e: &Error) -> Exit {
    if let Error::Output(io) = e
        && io.kind() == io::ErrorKind::BrokenPipe
    {
        return Exit::Failed;
    }
    let stderr = LineSink::stderr();
    stderr.error(&e.to_string());
    if let Some(hint) = e.hint() {
        stderr.foreign(&hint);
    }
    if e.is_usage() {
        stderr.ours(&cli::usage_hint());
    }
    e.exit()
}

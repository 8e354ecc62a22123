//! The edge of the plugin, and the only place that knows clap: the command line as clap types
//! ([`args`]), their resolution into the plain settings every layer below takes
//! ([`resolve`], into [`crate::invocation`]), shell completion ([`complete`]), and kubectl's
//! connection flags, kept out of each verb's help and listed by `options` ([`options`]).

pub mod args;
pub mod complete;
pub mod options;
pub mod resolve;

use clap::FromArgMatches;

use crate::error::Error;
use crate::exit::Exit;
use crate::invocation::Invocation;
use crate::text::terminal::LineSink;

/// What the command line asks for.
pub enum Parsed {
    /// A cluster command, resolved; with the `-v` level for the log.
    Run(Box<Invocation>, u8),
    /// Done already (help, version, a completion script or a usage error was printed): exit
    /// with this.
    Done(Exit),
    /// The command line was read, but is not a valid run.
    Invalid(Error),
}

/// Parses this process's arguments, and prints what needs no cluster: help, version (`version`,
/// which the binary names), usage errors in kubectl's shape, completion scripts.
pub fn parse(version: &'static str) -> Parsed {
    let matches = options::command().version(version).try_get_matches();
    let cli = match matches.and_then(|m| args::Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) => return Parsed::Done(usage(e)),
    };
    match &cli.command {
        args::Command::Completion(completion) => return Parsed::Done(complete::print_script(completion.shell)),
        args::Command::Options => return Parsed::Done(options::print()),
        _ => {}
    }
    let verbosity = cli.connection.verbosity;
    match resolve::resolve(cli) {
        Ok(inv) => Parsed::Run(Box::new(inv), verbosity),
        Err(e) => Parsed::Invalid(e),
    }
}

/// clap's errors, reduced to kubectl's shape: one `error:` line and one hint.
fn usage(e: clap::Error) -> Exit {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            Exit::Usage
        } else {
            Exit::Success
        };
    }
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("error: invalid usage");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // "the following required arguments were not provided:" lists them on the lines below.
    if line.ends_with(':') {
        let listed: Vec<&str> = text.lines().skip(1).take_while(|l| l.starts_with("  ")).map(str::trim).collect();
        line = format!("{line} {}", listed.join(", "));
    }
    // A value that is none of a flag's values (`--until bogus`): the values, on the same line,
    // as `-o` lists its formats.
    let values = text.lines().map(str::trim).find_map(|l| l.strip_prefix("[possible values: ")?.strip_suffix(']'));
    if let Some(values) = values {
        line = format!("{line}: possible values: {values}");
    }
    // clap's did-you-mean for a verb or a flag (`tip: a similar argument exists: '--all-namespaces'`).
    let tip = lines.map(str::trim).find(|l| l.starts_with("tip: a similar"));
    let stderr = LineSink::stderr();
    stderr.error(&line);
    if let Some(tip) = tip {
        stderr.ours(tip);
    }
    stderr.ours(&usage_hint());
    Exit::Usage
}

/// `See 'kubectl dispatch VERB --help' for usage.`, naming the verb the command line has (as
/// kubectl names `kubectl get --help`), else the plugin's own help.
pub fn usage_hint() -> String {
    let verb = options::command()
        .ignore_errors(true)
        .try_get_matches()
        .ok()
        .and_then(|m| m.subcommand_name().map(str::to_string));
    match verb {
        Some(verb) => format!("See 'kubectl dispatch {verb} --help' for usage."),
        None => "See 'kubectl dispatch --help' for usage.".into(),
    }
}

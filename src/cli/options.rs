//! kubectl's connection flags, as kubectl shows its own: every command takes them, but a verb's
//! `--help` lists only its own flags and ends by pointing at `kubectl dispatch options`, which
//! lists these in `kubectl options`' layout.

use std::io::Write;

use clap::{Arg, ArgAction, Args, CommandFactory};

use super::args::{Cli, ConnectionArgs};
use crate::exit::Exit;
use crate::text::terminal::LineSink;

/// The last line of every `--help`, in kubectl's words with the plugin's name.
pub const POINTER: &str =
    "Use \"kubectl dispatch options\" for a list of global command-line options (applies to all commands).";

/// The line above [`POINTER`] in the plugin's own `--help`, as in `kubectl --help`.
const VERB_POINTER: &str = "Use \"kubectl dispatch <command> --help\" for more information about a given command.";

/// kubectl's connection flags as clap arguments, in the order they are declared.
fn connection_args() -> Vec<Arg> {
    ConnectionArgs::augment_args(clap::Command::new("options")).get_arguments().cloned().collect()
}

/// The command line as it is parsed and as `--help` shows it: the connection flags accepted
/// by every verb (before it or after it) but hidden from each verb's help, which ends with
/// [`POINTER`]. Completion keeps [`Cli::command`], where they are visible, so `--con<TAB>`
/// still offers `--context` (as kubectl's completion does).
pub fn command() -> clap::Command {
    let ids: Vec<String> = connection_args().iter().map(|a| a.get_id().to_string()).collect();
    let ends = |c: clap::Command, extra: &str| {
        let before = c.get_after_help().map(|h| format!("{h}\n\n")).unwrap_or_default();
        c.after_help(format!("{before}{extra}{POINTER}"))
    };
    let root = Cli::command().mut_args(|a| if ids.iter().any(|id| id == a.get_id()) { a.hide(true) } else { a });
    let root = root.mut_subcommands(|sub| if sub.get_name() == "options" { sub } else { ends(sub, "") });
    ends(root, &format!("{VERB_POINTER}\n"))
}

/// `kubectl dispatch options`: the connection flags, laid out as `kubectl options` lays out
/// its own (the heading, then each flag as `    --NAME=DEFAULT:` and its help after a tab,
/// sorted by name, a blank line after each).
pub fn text() -> String {
    let mut args = connection_args();
    args.sort_by_key(|a| a.get_long().unwrap_or_default().to_string());
    let mut out = String::from("The following options can be passed to any command:\n\n");
    for arg in &args {
        let Some(long) = arg.get_long() else { continue };
        let short = arg.get_short().map(|s| format!("-{s}, ")).unwrap_or_default();
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!("    {short}--{long}={}:\n\t{help}\n\n", kubectl_default(arg)));
    }
    out
}

/// A flag's default as `kubectl options` prints it: `''` for text, `[]` for a list, `false`
/// for a switch, a bare number for `-v`. `--context` is one name to kubectl (gate alone takes
/// it more than once), so it is shown as kubectl shows it.
fn kubectl_default(arg: &Arg) -> String {
    if matches!(arg.get_action(), ArgAction::Append) && arg.get_long() != Some("context") {
        return "[]".into();
    }
    let default = arg.get_default_values().first().map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
    match arg.get_value_names().and_then(|n| n.first()).map(|n| n.as_str()) {
        Some("BOOL") => "false".into(),
        Some("LEVEL") => default,
        _ => format!("'{default}'"),
    }
}

/// Prints [`text`] on stdout.
pub fn print() -> Exit {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(text().as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Success,
        Err(e) => {
            LineSink::stderr().error(&format!("cannot write the options: {e}"));
            Exit::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(words: &[&str]) -> String {
        let argv = std::iter::once("kubectl-dispatch").chain(words.iter().copied()).chain(["--help"]);
        command().try_get_matches_from(argv).unwrap_err().render().to_string()
    }

    #[test]
    fn a_verbs_help_lists_its_own_flags_and_ends_pointing_at_options() {
        for verb in [&[][..], &["gate"], &["lease"], &["workload"], &["doctor"], &["completion"]] {
            let help = help(verb);
            // A listed flag starts its line (an example may use one: `doctor --as alice`).
            let listed = |flag: &str| help.lines().any(|l| l.trim_start().starts_with(flag));
            for global in
                ["--kubeconfig", "--context", "-s, --server", "--token", "--as ", "--request-timeout", "-v, --v"]
            {
                assert!(!listed(global), "{verb:?} --help lists {global}:\n{help}");
            }
            assert!(listed("--color") && listed("-h, --help"), "{verb:?}:\n{help}");
            assert!(help.trim_end().ends_with(POINTER), "{verb:?}:\n{help}");
        }
        assert!(help(&["gate"]).contains("--cluster-queue"));
        assert!(help(&[]).contains(VERB_POINTER));
    }

    #[test]
    fn every_verb_still_takes_every_connection_flag() {
        for verb in ["gate", "lease", "doctor", "options"] {
            let words =
                ["--context", "a", verb, "--kubeconfig", "k", "--as", "u", "--request-timeout", "5s", "-v", "6"];
            let argv = std::iter::once("kubectl-dispatch").chain(words);
            assert!(command().try_get_matches_from(argv).is_ok(), "{verb}");
        }
    }

    #[test]
    fn options_are_laid_out_as_kubectl_options() {
        let text = text();
        assert!(text.starts_with("The following options can be passed to any command:\n\n    --as='':\n\t"), "{text}");
        for line in [
            "    --as-group=[]:",
            "    --context='':",
            "    -s, --server='':",
            "    -v, --v=0:",
            "    --request-timeout='0':",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
        }
        assert!(text.lines().any(|l| l == "    --insecure-skip-tls-verify=false:"), "{text}");
        assert!(text.ends_with("\n\n") && !text.contains("--color"), "{text}");
    }
}

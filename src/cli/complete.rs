//! Shell completion, two ways:
//!
//! - `kubectl dispatch completion SHELL` prints clap_complete's script for `kubectl-dispatch`
//!   run by that name (bash, zsh, fish, powershell). It needs no cluster.
//! - kubectl's own plugin completion (kubectl 1.26+): for `kubectl dispatch <TAB>`, kubectl's
//!   `__complete` runs `kubectl_complete-dispatch` from PATH with the words after the plugin name,
//!   the last one being the word under the cursor (empty on a fresh word). This binary answers
//!   when it is called by that name (a symlink; Krew cannot place one): one candidate per line,
//!   `value<TAB>description` where there is one, then cobra's directive line (`:4`: no file
//!   completion; `:0`: let the shell complete file names). Names come live from the current
//!   context (contexts, clusters and users from the kubeconfig; namespaces, ClusterQueues and
//!   AdmissionChecks from the cluster, through [`connect`](crate::cluster::connecting::connect::connect)),
//!   bounded by a short timeout; any failure just leaves them out. The words before the cursor
//!   are parsed by clap itself, so every connection flag reaches the lookups as it reaches a
//!   run; only the word under the cursor, and a flag still waiting for its value, are read here.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, ValueHint};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::core::ApiResource;

use super::args::{Cli, CompletionShell, ConnectionArgs};
use crate::cluster::connecting::connect;
use crate::cluster::reading::pager::{Failed, Pager};
use crate::cluster::reading::{fetch, wire};
use crate::exit::Exit;
use crate::invocation::ConnectionSettings;
use crate::log::Log;
use crate::text::sanitize::needs_escape;
use crate::text::terminal::LineSink;

/// The name kubectl looks for on PATH to complete `kubectl dispatch`.
pub const COMPLETER: &str = "kubectl_complete-dispatch";

/// How long the live lookups of one completion may take, all together.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// cobra's ShellCompDirective values.
const DIRECTIVE_DEFAULT: u8 = 0;
const DIRECTIVE_NO_FILE: u8 = 4;

/// Writes the completion script for `kubectl-dispatch` to `out`.
pub fn script(shell: CompletionShell, out: &mut dyn Write) {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
        CompletionShell::Powershell => clap_complete::Shell::PowerShell,
    };
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubectl-dispatch", &mut text);
    let mut text = String::from_utf8_lossy(&text).into_owned();
    if shell == clap_complete::Shell::Bash {
        // clap_complete 4.6 names the bash cases of a hyphenated binary's subcommands with the
        // hyphen turned into its subcommand separator, so they never match the state the
        // script computes (`kubectl__dispatch__subcmd__gate`): subcommand flags would not
        // complete. Name them as the script looks them up.
        text = text.replace("kubectl__subcmd__dispatch__subcmd__", "kubectl__dispatch__subcmd__");
    }
    let _ = out.write_all(text.as_bytes());
}

/// `kubectl dispatch completion SHELL`: the script on stdout.
pub fn print_script(shell: CompletionShell) -> Exit {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    script(shell, &mut out);
    match out.flush() {
        Ok(()) => Exit::Success,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Success,
        Err(e) => {
            LineSink::stderr().error(&format!("cannot write the completion script: {e}"));
            Exit::Failed
        }
    }
}

/// Runs as kubectl's completer if this process was started as `kubectl_complete-dispatch`;
/// `None` otherwise.
pub fn as_kubectl_completer() -> Option<Exit> {
    let mut argv = std::env::args_os();
    let argv0 = PathBuf::from(argv.next()?);
    let name = argv0.file_stem()?.to_string_lossy().into_owned();
    if name != COMPLETER {
        return None;
    }
    let words: Vec<String> = argv.map(|w: OsString| w.to_string_lossy().into_owned()).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = out.write_all(kubectl_complete(&words, &Live).as_bytes());
    let _ = out.flush();
    Some(Exit::Success)
}

/// What a completion needs from outside: names from the kubeconfig and the cluster.
pub trait Names {
    /// Names for the value of the flag `long` (e.g. `context`, `cluster-queue`), given the
    /// connection flags typed so far; `None` when this flag has no named values.
    fn names(&self, long: &str, connection: &ConnectionSettings) -> Option<Vec<String>>;
}

/// Reads names from the real kubeconfig and cluster.
pub struct Live;

impl Names for Live {
    fn names(&self, long: &str, connection: &ConnectionSettings) -> Option<Vec<String>> {
        let kind = match long {
            "context" | "cluster" | "user" => return Some(kubeconfig_names(long, connection)),
            "namespace" => Lookup::Namespaces,
            "cluster-queue" => Lookup::Kueue("ClusterQueue", "clusterqueues"),
            "admission-check" => Lookup::Kueue("AdmissionCheck", "admissionchecks"),
            // `workload NAME`: the Workloads of -n, else of the context's namespace.
            "workload" => Lookup::Workloads,
            _ => return None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        let found = runtime
            .block_on(async { tokio::time::timeout(LOOKUP_TIMEOUT, lookup(kind, connection)).await.ok().flatten() });
        Some(found.unwrap_or_default())
    }
}

#[derive(Clone, Copy)]
enum Lookup {
    Namespaces,
    Kueue(&'static str, &'static str),
    Workloads,
}

/// The most names one lookup gathers: far more than a shell can show usefully, and a bound on
/// what a cluster of millions of Workloads costs a TAB.
const MAX_NAMES: usize = 10_000;

/// An object as a lookup reads it: its name, the rest skipped unread.
type Named = wire::WireObject<serde::de::IgnoredAny, serde::de::IgnoredAny>;

async fn lookup(kind: Lookup, connection: &ConnectionSettings) -> Option<Vec<String>> {
    let log = Log::silent();
    // The exec credential plugin, if any, is bounded like every request, and never gets the
    // terminal: the shell is waiting on this.
    let connect_options =
        connect::ConnectOptions { request_timeout: Some(LOOKUP_TIMEOUT), interactive: false, pass_stderr: false };
    let conn = connect::connect(connection, connect_options, &log).await.ok()?;
    let (kind, plural) = match kind {
        Lookup::Namespaces => {
            let api = Api::all_with(conn.client.clone(), &ApiResource::erase::<Namespace>(&()));
            return names(api, "Namespaces", &log).await.ok();
        }
        Lookup::Kueue(kind, plural) => (kind, plural),
        Lookup::Workloads => ("Workload", "workloads"),
    };
    let kueue = fetch::discover_kueue(&conn, &log).await.ok()?;
    // Names only; Kueue's conversion webhook being down must not hide them.
    let served = fetch::read_served(&kueue, &log, async |k: &fetch::KueueApi| {
        let resource = k.resource(kind, plural);
        let api: Api<Named> = match kind {
            "Workload" => Api::namespaced_with(conn.client.clone(), &conn.namespace, &resource),
            _ => Api::all_with(conn.client.clone(), &resource),
        };
        names(api, kind, &log).await.map_err(|e| match e {
            Failed::Request(e) => fetch::list_error(e, &conn, k, kind),
            Failed::Bound(message) => crate::error::Error::Bound(message),
        })
    })
    .await
    .ok()?;
    Some(served.value)
}

/// The names of `api`'s objects, page by page, up to [`MAX_NAMES`].
async fn names(api: Api<Named>, what: &str, log: &Log) -> Result<Vec<String>, Failed> {
    let mut pager = Pager::keeping(api, what, ListParams::default(), |o: Named| o.metadata.name);
    let mut names = Vec::new();
    while names.len() < MAX_NAMES {
        let Some(page) = pager.next(log).await? else { break };
        names.extend(page.items.into_iter().flatten());
    }
    names.truncate(MAX_NAMES);
    Ok(names)
}

fn kubeconfig_names(long: &str, connection: &ConnectionSettings) -> Vec<String> {
    let Some(config) = crate::cluster::connecting::kubeconfig::load(connection).ok().flatten() else {
        return Vec::new();
    };
    match long {
        "context" => config.contexts.into_iter().map(|c| c.name).collect(),
        "cluster" => config.clusters.into_iter().map(|c| c.name).collect(),
        _ => config.auth_infos.into_iter().map(|a| a.name).collect(),
    }
}

/// kubectl's completer: `words` are the words after `dispatch`, the last one the word under
/// the cursor. Returns the candidate lines and the directive line.
pub fn kubectl_complete(words: &[String], names: &dyn Names) -> String {
    let mut words: Vec<&str> = words.iter().map(String::as_str).collect();
    // A shim written for cobra programs passes `__complete` first; accept that too.
    if matches!(words.first(), Some(&("__complete" | "__completeNoDesc"))) {
        words.remove(0);
    }
    let (current, typed) = match words.split_last() {
        Some((last, rest)) => (*last, rest),
        None => ("", &[][..]),
    };
    let mut root = Cli::command();
    root.build();
    let line = Line::parse(&root, typed);
    let mut out = Candidates::default();
    let directive = if let Some(arg) = line.pending {
        out.values(&arg, current, "", &line.connection, names)
    } else if let Some((flag, value)) = current.strip_prefix("--").and_then(|c| c.split_once('=')) {
        match line.find_long(&root, flag) {
            Some(arg) if takes_value(&arg) => out.values(&arg, value, &format!("--{flag}="), &line.connection, names),
            _ => DIRECTIVE_NO_FILE,
        }
    } else if current.starts_with('-') {
        out.flags(line.args(&root), current);
        DIRECTIVE_NO_FILE
    } else {
        let sub = line.leaf(&root);
        if line.positionals == 0 && sub.has_subcommands() {
            for s in sub.get_subcommands().filter(|s| !s.is_hide_set()) {
                out.push(s.get_name(), s.get_about().map(|a| a.to_string()), current);
            }
            DIRECTIVE_NO_FILE
        } else if let Some(arg) = sub.get_positionals().nth(line.positionals) {
            // A positional's names are looked up by its verb: `workload`'s NAME, Workloads.
            out.values_named(arg, sub.get_name(), current, "", &line.connection, names)
        } else {
            DIRECTIVE_NO_FILE
        }
    };
    out.text.push_str(&format!(":{directive}\n"));
    out.text
}

fn takes_value(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Set | ArgAction::Append)
}

/// What the words before the cursor say: the subcommand path and the connection settings, as
/// clap parses them, and whether the last word is a flag still waiting for its value.
#[derive(Default)]
struct Line {
    /// Subcommand names from the root.
    path: Vec<String>,
    positionals: usize,
    pending: Option<Arg>,
    connection: ConnectionSettings,
}

impl Line {
    fn parse(root: &clap::Command, words: &[&str]) -> Line {
        let mut line = Line::default();
        let argv = std::iter::once("kubectl-dispatch").chain(words.iter().copied());
        // An unfinished line is no valid command: clap keeps what it could read.
        if let Ok(matches) = root.clone().ignore_errors(true).try_get_matches_from(argv) {
            line.read(root, &matches);
        }
        line.pending = line.waiting_for_value(root, words.last().copied());
        line
    }

    /// The subcommands, the leaf's positionals and the connection settings, from clap's matches.
    fn read(&mut self, root: &clap::Command, matches: &ArgMatches) {
        let mut leaf = matches;
        let mut command = root;
        while let Some((name, sub)) = leaf.subcommand() {
            let Some(found) = command.find_subcommand(name) else { break };
            self.path.push(found.get_name().to_string());
            command = found;
            leaf = sub;
        }
        self.positionals = command
            .get_positionals()
            .filter(|a| leaf.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .count();
        let namespace = |m: &ArgMatches| m.try_get_one::<String>("namespace").ok().flatten().cloned();
        // The verb's -n, else the one typed before the verb, as `resolve` takes them.
        let namespace = namespace(leaf).or_else(|| namespace(matches));
        let args = ConnectionArgs::from_arg_matches(matches).unwrap_or_default();
        self.connection = args.settings(namespace);
    }

    /// The flag `last` names when it still waits for its value (`--context`, `-n`, `-An`), as
    /// the cursor's word will be that value.
    fn waiting_for_value(&self, root: &clap::Command, last: Option<&str>) -> Option<Arg> {
        let word = last?;
        if word == "--" || word == "-" || !word.starts_with('-') {
            return None;
        }
        if let Some(long) = word.strip_prefix("--") {
            if long.contains('=') {
                return None;
            }
            // `--insecure-skip-tls-verify[=BOOL]` takes its value only after `=`.
            return self.find_long(root, long).filter(|a| takes_value(a) && !a.is_require_equals_set());
        }
        // Short flags, possibly clustered (`-An`); a value attached (`-nfoo`) is no wait.
        let shorts: Vec<char> = word[1..].chars().collect();
        for (k, c) in shorts.iter().enumerate() {
            let arg = self.find_short(root, *c)?;
            if takes_value(&arg) {
                return (k + 1 == shorts.len()).then_some(arg);
            }
        }
        None
    }

    /// The commands in scope, innermost first (global flags live on the root).
    fn commands<'a>(&self, root: &'a clap::Command) -> Vec<&'a clap::Command> {
        let mut chain = vec![root];
        for name in &self.path {
            match chain.last().and_then(|c| c.find_subcommand(name)) {
                Some(s) => chain.push(s),
                None => break,
            }
        }
        chain.reverse();
        chain
    }

    /// The flags in scope: the innermost command's, and its ancestors' global ones (a flag of
    /// the root alone, like `-n` typed before `gate`, is not one of `lease`'s).
    fn args<'a>(&self, root: &'a clap::Command) -> impl Iterator<Item = &'a Arg> {
        self.commands(root)
            .into_iter()
            .enumerate()
            .flat_map(|(depth, c)| c.get_arguments().filter(move |a| depth == 0 || a.is_global_set()))
    }

    fn leaf<'a>(&self, root: &'a clap::Command) -> &'a clap::Command {
        self.commands(root)[0]
    }

    fn find_long(&self, root: &clap::Command, name: &str) -> Option<Arg> {
        self.args(root).find(|a| a.get_long() == Some(name)).cloned()
    }

    fn find_short(&self, root: &clap::Command, short: char) -> Option<Arg> {
        self.args(root).find(|a| a.get_short() == Some(short)).cloned()
    }
}

#[derive(Default)]
struct Candidates {
    text: String,
    seen: std::collections::HashSet<String>,
}

impl Candidates {
    /// Adds `value` if it starts with `prefix`. Nothing the sanitizer escapes gets out (a
    /// control, bidi or invisible character, [`needs_escape`]): names from a kubeconfig or a
    /// cluster must not reach the shell as more than one line, nor look like another name.
    fn push(&mut self, value: &str, help: Option<String>, prefix: &str) {
        if !value.starts_with(prefix) || value.chars().any(needs_escape) || !self.seen.insert(value.to_string()) {
            return;
        }
        self.text.push_str(value);
        if let Some(help) = help.as_deref().and_then(|h| h.lines().next()).filter(|h| !h.is_empty()) {
            let help: String = help.chars().filter(|&c| !needs_escape(c)).collect();
            self.text.push('\t');
            self.text.push_str(&help);
        }
        self.text.push('\n');
    }

    fn flags<'a>(&mut self, args: impl Iterator<Item = &'a Arg>, current: &str) {
        for arg in args.filter(|a| !a.is_hide_set()) {
            let help = arg.get_help().map(|h| h.to_string());
            if let Some(long) = arg.get_long() {
                self.push(&format!("--{long}"), help.clone(), current);
            }
            if let Some(short) = arg.get_short() {
                self.push(&format!("-{short}"), help, current);
            }
        }
    }

    /// Values for `arg` that start with `current`, each written after `lead` (`--flag=` when
    /// completing that form). Returns the directive.
    fn values(
        &mut self,
        arg: &Arg,
        current: &str,
        lead: &str,
        connection: &ConnectionSettings,
        names: &dyn Names,
    ) -> u8 {
        let long = arg.get_long().unwrap_or_default();
        self.values_named(arg, long, current, lead, connection, names)
    }

    /// [`Candidates::values`], with the names looked up as `key` (a flag's long name, or for a
    /// positional, its verb).
    fn values_named(
        &mut self,
        arg: &Arg,
        key: &str,
        current: &str,
        lead: &str,
        connection: &ConnectionSettings,
        names: &dyn Names,
    ) -> u8 {
        let possible = arg.get_possible_values();
        if !possible.is_empty() {
            for v in possible.iter().filter(|v| !v.is_hide_set()) {
                self.push(
                    &format!("{lead}{}", v.get_name()),
                    v.get_help().map(|h| h.to_string()),
                    &format!("{lead}{current}"),
                );
            }
            return DIRECTIVE_NO_FILE;
        }
        if arg.get_value_hint() == ValueHint::FilePath {
            return DIRECTIVE_DEFAULT;
        }
        let mut found = names.names(key, connection).unwrap_or_default();
        found.sort();
        for name in found {
            self.push(&format!("{lead}{name}"), None, &format!("{lead}{current}"));
        }
        DIRECTIVE_NO_FILE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    impl Names for Fake {
        fn names(&self, long: &str, connection: &ConnectionSettings) -> Option<Vec<String>> {
            match long {
                "context" => Some(vec!["admin".into(), "viewer".into()]),
                "cluster-queue" => {
                    Some(vec![format!("cq-{}", connection.context.as_deref().unwrap_or("current")), "team-b".into()])
                }
                "namespace" => Some(vec![
                    "default".into(),
                    "ml\nevil".into(),
                    "kube-\u{202e}metsys".into(),
                    "kube-system\u{e0041}".into(),
                    "kube-system".into(),
                ]),
                "workload" => {
                    let ns = connection.namespace.as_deref().unwrap_or("current");
                    Some(vec![format!("job-{ns}-1"), format!("job-{ns}-2"), "other".into()])
                }
                _ => None,
            }
        }
    }

    fn complete(words: &[&str]) -> Vec<String> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        kubectl_complete(&words, &Fake).lines().map(str::to_string).collect()
    }

    fn values(lines: &[String]) -> Vec<&str> {
        lines.iter().map(|l| l.split('\t').next().unwrap_or_default()).collect()
    }

    #[test]
    fn verbs_on_a_fresh_word() {
        let lines = complete(&[""]);
        assert_eq!(values(&lines), ["gate", "lease", "workload", "doctor", "completion", "options", ":4"]);
        assert!(lines[0].starts_with("gate\tThe readmission gate"), "{lines:?}");
        assert_eq!(values(&complete(&["l"])), ["lease", ":4"]);
        assert_eq!(values(&complete(&["__complete", "g"])), ["gate", ":4"]);
    }

    #[test]
    fn live_names_for_flag_values() {
        assert_eq!(values(&complete(&["gate", "--cluster-queue", ""])), ["cq-current", "team-b", ":4"]);
        assert_eq!(values(&complete(&["gate", "--context", "viewer", "--cluster-queue", "c"])), ["cq-viewer", ":4"]);
        assert_eq!(values(&complete(&["--context", "v"])), ["viewer", ":4"]);
        assert_eq!(values(&complete(&["gate", "--context=a"])), ["--context=admin", ":4"]);
        // A name with a control, bidi or invisible character never reaches the shell.
        assert_eq!(values(&complete(&["gate", "-n", ""])), ["default", "kube-system", ":4"]);
        // gate's -n before the verb, as kubectl takes flags before or after it.
        assert_eq!(values(&complete(&["-n", "k"])), ["kube-system", ":4"]);
        assert_eq!(values(&complete(&["gate", "-A", "--cluster-queue", "team"])), ["team-b", ":4"]);
    }

    #[test]
    fn workload_names_for_the_workload_verb() {
        assert_eq!(values(&complete(&["workload", ""])), ["job-current-1", "job-current-2", "other", ":4"]);
        assert_eq!(values(&complete(&["-n", "ml", "workload", "job"])), ["job-ml-1", "job-ml-2", ":4"]);
        assert_eq!(values(&complete(&["kwl", "--namespace=team", "j"])), ["job-team-1", "job-team-2", ":4"]);
        assert_eq!(values(&complete(&["workloads", "o"])), ["other", ":4"]);
        // One name only; then nothing but flags.
        assert_eq!(values(&complete(&["workload", "job-current-1", ""])), [":4"]);
        assert_eq!(
            values(&complete(&["workload", "--admission-check", "x", "-o", ""])),
            [
                "table",
                "wide",
                "json",
                "yaml",
                "name",
                "jsonpath=",
                "jsonpath-file=",
                "custom-columns=",
                "custom-columns-file=",
                ":4"
            ]
        );
        assert_eq!(values(&complete(&["gate", ""])), [":4"], "gate takes no names");
    }

    #[test]
    fn enums_files_and_flags() {
        let printers = ["name", "jsonpath=", "jsonpath-file=", "custom-columns=", "custom-columns-file="];
        let gate: Vec<&str> =
            ["table", "wide", "json", "yaml", "prometheus"].into_iter().chain(printers).chain([":4"]).collect();
        assert_eq!(values(&complete(&["gate", "-o", ""])), gate);
        let lease: Vec<&str> = ["table", "wide", "json", "yaml"].into_iter().chain(printers).chain([":4"]).collect();
        assert_eq!(values(&complete(&["lease", "-o", ""])), lease);
        assert_eq!(values(&complete(&["gate", "--kubeconfig", ""])), [":0"]);
        assert_eq!(values(&complete(&["completion", ""])), ["bash", "zsh", "fish", "powershell", ":4"]);
        let flags = complete(&["gate", "--cl"]);
        assert_eq!(values(&flags), ["--cluster-queue", "--cluster", "--client-certificate", "--client-key", ":4"]);
        assert_eq!(values(&complete(&["lease", "--all-s"])), [":4"], "--all-states belongs to gate only");
        // lease offers only what it uses: -n (the Lease's namespace) but no -A, no gate targets,
        // --timeout only as its own.
        let lease = complete(&["lease", "-"]);
        assert!(values(&lease).contains(&"-n"), "{lease:?}");
        for foreign in ["-A", "--all-namespaces", "--cluster-queue", "--admission-check", "--controller-name"] {
            assert!(!values(&lease).contains(&foreign), "lease offers {foreign}: {lease:?}");
        }
        assert!(values(&lease).contains(&"--lease") && values(&lease).contains(&"--context"), "{lease:?}");
        assert!(values(&complete(&["gate", "-"])).contains(&"-n"));
        // `workloads` lists: -A, -l and --sort-by are its own; the connection flags, hidden from
        // its --help, are still offered, as kubectl's completion offers its global flags.
        let list = complete(&["workloads", "-"]);
        for own in ["-A", "-l", "--sort-by", "--no-headers", "--context", "--kubeconfig"] {
            assert!(values(&list).contains(&own), "workloads lacks {own}: {list:?}");
        }
        assert_eq!(values(&complete(&["gate", "--request-timeout", ""])), [":4"]);
        for file in ["--certificate-authority", "--client-certificate", "--client-key", "--config"] {
            assert_eq!(values(&complete(&["gate", file, ""])), [":0"], "{file} takes a file");
        }
        // A flag whose value needs `=` does not take the next word.
        assert_eq!(values(&complete(&["--insecure-skip-tls-verify", "l"])), ["lease", ":4"]);
        assert_eq!(
            values(&complete(&["--insecure-skip-tls-verify="])),
            ["--insecure-skip-tls-verify=true", "--insecure-skip-tls-verify=false", ":4"]
        );
        assert_eq!(values(&complete(&["-s", "https://x", "--tok"])), ["--token", ":4"]);
    }

    /// Keeps the connection settings each lookup is asked with.
    struct Recording(std::cell::RefCell<Vec<ConnectionSettings>>);

    impl Names for Recording {
        fn names(&self, _long: &str, connection: &ConnectionSettings) -> Option<Vec<String>> {
            self.0.borrow_mut().push(connection.clone());
            Some(Vec::new())
        }
    }

    /// Every connection flag clap knows reaches the lookups as it reaches a run: the settings
    /// completion connects with are the ones `resolve` gives for the same words.
    #[test]
    fn every_connection_flag_reaches_the_lookups() {
        use clap::{Args, Parser};
        // Not settings of the connection: completion bounds its lookups itself, and logs nothing.
        let not_settings = ["request-timeout", "v"];
        let flags = ConnectionArgs::augment_args(clap::Command::new("flags"));
        let mut checked = 0;
        for arg in flags.get_arguments() {
            let long = arg.get_long().expect("connection flags are long flags");
            if not_settings.contains(&long) {
                continue;
            }
            let typed: Vec<String> = if arg.is_require_equals_set() {
                vec![format!("--{long}=true")]
            } else {
                vec![format!("--{long}"), format!("value-of-{long}")]
            };
            for place in ["before", "after"] {
                let words: Vec<String> = match place {
                    "before" => typed.iter().cloned().chain(["gate".into()]).collect(),
                    _ => std::iter::once("gate".to_string()).chain(typed.iter().cloned()).collect(),
                };
                let recording = Recording(Default::default());
                let line: Vec<String> =
                    words.iter().cloned().chain(["--cluster-queue".into(), String::new()]).collect();
                kubectl_complete(&line, &recording);
                let asked = recording.0.borrow().clone();
                assert_eq!(asked.len(), 1, "--{long} {place} the verb: {asked:?}");
                let cli = Cli::try_parse_from(std::iter::once("kubectl-dispatch".to_string()).chain(words.clone()))
                    .unwrap_or_else(|e| panic!("{words:?}: {e}"));
                let run = super::super::resolve::resolve(cli).unwrap_or_else(|e| panic!("{words:?}: {e}"));
                assert_ne!(asked[0], ConnectionSettings::default(), "completion ignores --{long} ({place} the verb)");
                assert_eq!(asked[0], run.connection, "--{long} {place} the verb");
            }
            checked += 1;
        }
        assert!(checked >= 15, "only {checked} connection flags");
        // -n, before the verb or after it, is the namespace of the lookups too.
        for words in [&["-n", "ml", "gate"][..], &["gate", "-n", "ml"], &["workload", "--namespace=ml"]] {
            let recording = Recording(Default::default());
            let line: Vec<String> =
                words.iter().map(|w| w.to_string()).chain(["--cluster-queue".into(), String::new()]).collect();
            kubectl_complete(&line, &recording);
            assert_eq!(recording.0.borrow()[0].namespace.as_deref(), Some("ml"), "{words:?}");
        }
    }

    #[test]
    fn the_bash_script_completes_subcommand_flags() {
        let mut out = Vec::new();
        script(CompletionShell::Bash, &mut out);
        let script = String::from_utf8(out).expect("utf-8");
        let complete = |line: &str| {
            let words: Vec<&str> = line.split(' ').collect();
            let (cur, prev) = (words[words.len() - 1], words[words.len() - 2]);
            let driver = format!(
                "{script}\nCOMP_WORDS=({line}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
                 _kubectl__dispatch kubectl-dispatch '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                words.len() - 1
            );
            let out = std::process::Command::new("bash").args(["--norc", "-c", &driver]).output().expect("bash");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        assert!(complete("kubectl-dispatch gate --all").lines().any(|l| l == "--all-states"));
        assert!(complete("kubectl-dispatch l").lines().any(|l| l == "lease"));
        assert!(complete("kubectl-dispatch completion p").lines().any(|l| l == "powershell"));
    }

    #[test]
    fn scripts_for_each_shell() {
        for shell in [CompletionShell::Bash, CompletionShell::Zsh, CompletionShell::Fish, CompletionShell::Powershell] {
            let mut out = Vec::new();
            script(shell, &mut out);
            let text = String::from_utf8(out).expect("utf-8");
            assert!(text.contains("kubectl-dispatch") && text.contains("cluster-queue"), "{shell:?}:\n{text}");
        }
    }
}

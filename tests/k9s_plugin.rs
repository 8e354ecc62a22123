//! The k9s plugin snippet in docs/k9s.md, checked by its structure: a `plugins` map whose
//! entries have the keys k9s reads, the gate in every view, the Workload explanation in the
//! Workload view with the selected row's name and namespace, and command lines that the
//! plugin's own parser accepts (k9s' variables put in as k9s would).

use clap::Parser;
use kubectl_dispatch::cli::args::{Cli, ColorArg, Command};
use serde_json::Value;

fn snippet() -> Value {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/k9s.md")).expect("docs/k9s.md");
    let start = doc.find("<!-- k9s:plugins.yaml -->").expect("the marker before the snippet");
    let open = start + doc[start..].find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let close = open + doc[open..].find("```\n").expect("the block's end");
    serde_saphyr::from_str(&doc[open..close]).expect("the snippet is YAML")
}

/// The words `bash -c LINE` hands `kubectl`, with k9s' variables set: the line must be
/// `kubectl dispatch ...`, piped into `less -R`.
fn words(line: &str) -> Vec<String> {
    let (command, pager) = line.split_once(" | ").expect("the output is paged");
    assert_eq!(pager, "less -R", "{line}");
    let vars = [("$CONTEXT", "kind-ml"), ("$NAMESPACE", "team-a"), ("$NAME", "job-1-abc")];
    let mut out = Vec::new();
    for word in command.split(' ') {
        let mut w = word.to_string();
        if w.starts_with('"') {
            assert!(w.ends_with('"') && w.len() > 2, "a variable is quoted whole: {word}");
            w = w.trim_matches('"').to_string();
            assert!(vars.iter().any(|(k, _)| *k == w), "only k9s' variables are quoted: {word}");
        }
        for (k, v) in vars {
            w = w.replace(k, v);
        }
        out.push(w);
    }
    assert_eq!(out[..2], ["kubectl", "dispatch"], "{line}");
    out
}

fn plugin<'a>(plugins: &'a Value, name: &str) -> (&'a Value, Cli) {
    let p = &plugins[name];
    for key in ["shortCut", "description", "scopes", "command", "args"] {
        assert!(!p[key].is_null(), "{name} has no {key}");
    }
    let known = ["shortCut", "description", "scopes", "command", "args", "background", "confirm"];
    for key in p.as_object().unwrap().keys() {
        assert!(known.contains(&key.as_str()), "{name}: {key} is not a k9s plugin key");
    }
    assert_eq!(p["command"], "bash");
    assert_eq!(p["background"], false, "{name} runs in the terminal");
    let args = p["args"].as_array().unwrap();
    assert_eq!(args.len(), 2);
    assert_eq!(args[0], "-c");
    let words = words(args[1].as_str().unwrap());
    // kubectl hands the plugin what follows its name.
    let mut argv = vec!["kubectl-dispatch".to_string()];
    argv.extend(words[2..].iter().cloned());
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{name}: {argv:?} does not parse: {e}"));
    assert_eq!(cli.connection.contexts, ["kind-ml"], "{name} judges k9s' context");
    assert_eq!(cli.color, ColorArg::Always, "{name} keeps its colour through less -R");
    (p, cli)
}

#[test]
fn the_k9s_snippet_runs_gate_for_the_context_and_workload_for_the_selected_workload() {
    let doc = snippet();
    let plugins = &doc["plugins"];
    let keys: Vec<&String> = plugins.as_object().expect("plugins is a map").keys().collect();
    assert_eq!(keys.len(), 2, "{keys:?}");

    let (gate, cli) = plugin(plugins, "dispatch-gate");
    assert_eq!(gate["scopes"], serde_json::json!(["all"]));
    let Command::Gate(args) = cli.command else { panic!("dispatch-gate runs gate") };
    assert!(args.scope.all_namespaces, "the gate lists the Workloads of every namespace");

    let (workload, cli) = plugin(plugins, "dispatch-workload");
    assert_eq!(workload["scopes"], serde_json::json!(["workloads"]));
    let Command::Workload(args) = cli.command else { panic!("dispatch-workload runs workload") };
    assert_eq!(args.name.as_deref(), Some("job-1-abc"), "the selected row's name");
    assert_eq!(args.namespace.as_deref(), Some("team-a"), "the selected row's namespace");

    let short: Vec<&str> = [&gate, &workload].iter().map(|p| p["shortCut"].as_str().unwrap()).collect();
    assert!(short.iter().all(|s| s.starts_with("Shift-") || s.starts_with("Ctrl-")), "{short:?}");
    assert_ne!(short[0], short[1]);
}

//! Escape sequences and line breaks from everywhere the plugin reads text, through every verb,
//! output format and error path, on the real test cluster: a Lease holder, an AdmissionCheck's
//! message, a Workload's check and quota messages, a kubeconfig context name, an impersonated
//! username (which `doctor --rbac` writes into YAML), an exec plugin's stderr and a server's
//! Status message (the harness's hostile server: no kube-apiserver sends one).
//!
//! Text meant for a terminal (table, wide, every stderr line) holds no control character but
//! line breaks, no bidi or zero-width character, and no line that the hostile text started;
//! JSON and YAML hold the hostile text exactly, as a value; Prometheus' text format escapes
//! the line breaks in a label (its own rule) and adds no line.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::fixtures::{self, Scenario};
use support::hostile::Hostile;
use support::shapes::Shapes;
use support::{Cluster, Run, with_kubeconfig};

/// An OSC window title ended by BEL, a clear-screen CSI, a colour, a C1 CSI, a right-to-left
/// override, a zero-width space, a DEL, an Arabic letter mark, a soft hyphen, a word joiner, a
/// tag character and a variation selector, and a CR LF followed by a line that would look like
/// the plugin's own.
const HOSTILE: &str = "pwn\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mred\u{9b}1m\u{202e}rtl\u{200b}\u{7f}\u{61c}\u{ad}\u{2060}\u{e0041}\u{fe0f}\r\nerror: forged line";

/// The line the hostile text would start if printed raw.
const FORGED: &str = "error: forged line";

/// Whether `text`, meant for a terminal, is safe there: the first offence, if any.
fn offence(text: &str) -> Option<String> {
    control(text)
        .or_else(|| text.lines().find(|l| l.trim_start().starts_with(FORGED)).map(|l| format!("a forged line: {l:?}")))
}

/// The first control, bidi or invisible character (the sanitizer's set) in `text` but line
/// breaks and tabs.
fn control(text: &str) -> Option<String> {
    for (i, c) in text.char_indices() {
        let bad = kubectl_dispatch::text::sanitize::needs_escape(c) && c != '\n' && c != '\t';
        if bad {
            let from = text[..i].char_indices().rev().nth(20).map_or(0, |(j, _)| j);
            return Some(format!("raw {c:?} at byte {i}, after {:?}", &text[from..i]));
        }
    }
    None
}

fn screened(run: &Run, what: &str) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if let Some(o) = offence(text) {
            panic!("{what}: {stream}: {o}\n--- stdout:\n{}\n--- stderr:\n{}", run.stdout, run.stderr);
        }
    }
    assert!(!run.stderr.contains("panicked"), "{what}: a panic:\n{}", run.stderr);
}

/// Every string anywhere in a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out)
        }),
        _ => {}
    }
}

/// A data format holds the hostile text exactly somewhere (whole, or inside a longer value);
/// its stderr is screened.
fn exact(run: &Run, what: &str, docs: Vec<Value>) {
    let mut all = Vec::new();
    docs.iter().for_each(|d| strings(d, &mut all));
    assert!(all.iter().any(|s| s.contains(HOSTILE)), "{what}: the hostile text is not kept exactly:\n{}", run.stdout);
    if let Some(o) = offence(&run.stderr) {
        panic!("{what}: stderr: {o}\n{}", run.stderr);
    }
}

/// Prometheus' text format keeps a label's value exact but for its three escapes (backslash,
/// double quote, line feed), so the text adds no line; stderr is screened.
fn prometheus(run: &Run, what: &str, in_a_label: bool) {
    let label = HOSTILE.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    if in_a_label {
        assert!(run.stdout.contains(&label), "{what}: not in a label, escaped as the format says:\n{}", run.stdout);
    }
    assert!(!run.stdout.lines().any(|l| l.starts_with(FORGED)), "{what}: a forged line:\n{}", run.stdout);
    if let Some(o) = offence(&run.stderr) {
        panic!("{what}: stderr: {o}\n{}", run.stderr);
    }
}

fn json_docs(run: &Run, what: &str) -> Vec<Value> {
    let docs: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(&run.stdout).into_iter::<Value>().collect();
    docs.unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{}", run.stdout))
}

fn yaml_docs(run: &Run, what: &str) -> Vec<Value> {
    run.stdout
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{what}: not YAML ({e}):\n{d}")))
        .collect()
}

/// The scenario's flags for `verb` (doctor takes no --controller-name).
fn call<'a>(s: &'a Scenario, verb: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    if verb != "doctor" {
        return s.args(verb, extra);
    }
    let mut v = vec!["doctor", "--lease", s.lease.as_str()];
    v.extend_from_slice(extra);
    v
}

struct Setup {
    c: &'static Cluster,
    s: Scenario,
}

/// Stands in for [`HOSTILE`] in the fixtures' YAML, which no YAML decoder would take with
/// control characters in it; [`apply_hostile`] puts the real text in, as JSON.
const MARK: &str = "HOSTILE-TEXT";

/// Every string that is [`MARK`] becomes [`HOSTILE`].
fn mark_to_hostile(v: &mut Value) {
    match v {
        Value::String(s) if s == MARK => *s = HOSTILE.into(),
        Value::Array(a) => a.iter_mut().for_each(mark_to_hostile),
        Value::Object(o) => o.values_mut().for_each(mark_to_hostile),
        _ => {}
    }
}

/// Applies fixture YAML with [`MARK`] in it as JSON objects with [`HOSTILE`] in their place,
/// then their status through /status. Not server-side apply, as [`Cluster::apply`] does it:
/// its YAML decoder refuses DEL and C1 controls even inside a JSON string, while a JSON
/// body (a client-side apply, a merge patch) keeps them.
fn apply_hostile(c: &Cluster, yaml: &str) {
    for doc in yaml.split("---\n").filter(|d| !d.trim().is_empty()) {
        let mut v: Value = serde_saphyr::from_str(doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
        mark_to_hostile(&mut v);
        let status = v.as_object_mut().unwrap().remove("status");
        c.kubectl_ok(&["apply", "-f", "-"], Some(&v.to_string()));
        if let Some(status) = status {
            let (kind, name) = (v["kind"].as_str().unwrap(), v["metadata"]["name"].as_str().unwrap());
            let resource =
                format!("{}.{}", kind.to_lowercase(), v["apiVersion"].as_str().unwrap().split('/').next().unwrap());
            let mut args = vec!["patch", resource.as_str(), name, "--subresource=status", "--type=merge"];
            let ns = v["metadata"]["namespace"].as_str().map(str::to_string);
            if let Some(ns) = &ns {
                args.extend(["-n", ns.as_str()]);
            }
            let patch = json!({ "status": status }).to_string();
            args.extend(["-p", patch.as_str()]);
            c.kubectl_ok(&args, None);
        }
    }
}

/// The scenario with hostile text in every free-text field the plugin shows: the check is
/// inactive with a hostile message, the Lease's holder is hostile, and a Workload waits at
/// dispatch's check with a hostile message.
fn setup(tag: &str) -> Setup {
    let c = Cluster::shared();
    let s = Scenario::new(tag);
    c.apply(&s.healthy_yaml());
    let check = fixtures::admission_check(&s.check, &s.controller, Some(false)).replace("The controller stopped", MARK);
    apply_hostile(c, &check);
    apply_hostile(c, &fixtures::lease(&s.lease_ns, &s.lease_name, Some(MARK), Some(2), Some(15)));
    apply_hostile(c, &fixtures::workload(&s.ns, "stuck", &s.lq, Some(&s.cq), &[(&s.check, "Pending", MARK, 30)]));
    let stored = c.kubectl_ok(&["get", "lease", "-n", &s.lease_ns, &s.lease_name, "-o", "json"], None);
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["spec"]["holderIdentity"], HOSTILE, "the server keeps the text as given");
    Setup { c, s }
}

#[test]
fn cluster_text_is_screened_in_every_verb_and_kept_exact_in_every_data_format() {
    let Setup { c, s } = setup("esc");
    let ns = s.ns.clone();
    let one_shot: Vec<(&str, Vec<&str>)> = vec![
        ("gate", vec!["-n", &ns]),
        ("gate", vec!["-A"]),
        ("gate", vec!["-A", "--all-states"]),
        ("lease", vec![]),
        ("workload", vec!["stuck", "-n", &ns]),
        ("doctor", vec!["-n", &ns]),
    ];
    for (verb, extra) in &one_shot {
        let formats: &[&str] = if *verb == "gate" {
            &["table", "wide", "json", "yaml", "prometheus"]
        } else {
            &["table", "wide", "json", "yaml"]
        };
        let mut json = None;
        for format in formats {
            let mut args = extra.clone();
            if *format != "table" {
                args.extend(["-o", format]);
            }
            let run = c.dispatch(&call(&s, verb, &args));
            check_format(&run, format, &format!("{verb} {}", args.join(" ")));
            if *format == "json" {
                json = Some(json_docs(&run, verb).remove(0));
            }
        }
        // kubectl's printers over the same document: a JSONPath template to the hostile value
        // prints it byte for byte (data, as kubectl's does); a custom column and -o name are
        // text for a terminal.
        let json = json.unwrap();
        let path = path_to(&json, "").unwrap_or_else(|| panic!("{verb}: no hostile value in {json:#}"));
        let jsonpath = format!("jsonpath={{{path}}}");
        let run = c.dispatch(&call(&s, verb, &[extra.as_slice(), &["-o", &jsonpath]].concat()));
        assert!(run.stdout.contains(HOSTILE), "{verb} -o {jsonpath}: not byte for byte:\n{:?}", run.stdout);
        assert!(offence(&run.stderr).is_none(), "{verb} -o {jsonpath}:\n{}", run.stderr);
        if *verb != "doctor" {
            let columns = format!("custom-columns=TEXT:{path}");
            for printer in [columns.as_str(), "name"] {
                let run = c.dispatch(&call(&s, verb, &[extra.as_slice(), &["-o", printer]].concat()));
                check_format(&run, "text", &format!("{verb} -o {printer}"));
            }
        }
    }
    // The live modes, for a bounded while, in every format they take.
    for (verb, extra) in
        [("lease", vec!["--watch"]), ("gate", vec!["--watch", "-n", &ns]), ("gate", vec!["--wait", "-n", &ns])]
    {
        for format in ["table", "json", "yaml"] {
            let mut args = extra.clone();
            args.extend(["--timeout", "3s"]);
            if format != "table" {
                args.extend(["-o", format]);
            }
            let run = c.dispatch(&call(&s, verb, &args));
            check_format(&run, format, &format!("{verb} {}", args.join(" ")));
        }
    }
}

/// The checks for one run in `format`.
fn check_format(run: &Run, format: &str, what: &str) {
    match format {
        "json" => exact(run, what, json_docs(run, what)),
        "yaml" => exact(run, what, yaml_docs(run, what)),
        // The gate's metrics carry names only (no holder, no message).
        "prometheus" => prometheus(run, what, false),
        "table" | "wide" => {
            screened(run, what);
            // The text is shown, escaped, not dropped.
            assert!(run.stdout.contains("pwn") || run.stderr.contains("pwn"), "{what}: shown nowhere:\n{}", run.stdout);
        }
        _ => screened(run, what),
    }
}

/// A JSONPath (`.a.b[0].c`) to the first string in `v` that holds [`HOSTILE`], below `at`.
fn path_to(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::String(s) if s.contains(HOSTILE) => Some(at.to_string()),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| path_to(x, &format!("{at}[{i}]"))),
        Value::Object(o) => o.iter().find_map(|(k, x)| path_to(x, &format!("{at}.{k}"))),
        _ => None,
    }
}

/// A username is the server's word (here impersonated, as `doctor --as` asks): the table and
/// the RBAC YAML that an admin pipes into `kubectl apply -f -` stay what they claim to be. An
/// HTTP header cannot carry ASCII controls, so the name holds what one can: YAML's line and
/// paragraph separators, a C1 CSI and a right-to-left override; one with an ESC is refused
/// before anything is sent, by kubectl and by the plugin.
#[test]
fn a_hostile_username_reaches_doctor_and_its_rbac_as_text() {
    let Setup { c, s } = setup("escuser");
    let user = "eve\u{2028}kind: ClusterRoleBinding\u{2029}\u{9b}2J\u{202e}x";
    let table = c.dispatch(&call(&s, "doctor", &["--as", user]));
    screened(&table, "doctor --as");
    assert!(table.stdout.contains("eve\\u{2028}kind"), "{}", table.stdout);
    let rbac = c.dispatch(&call(&s, "doctor", &["--as", user, "--rbac"]));
    // YAML is data, exact as the serializer quotes it; the comment lines above it are text.
    let comments: String = rbac.stdout.lines().take_while(|l| l.starts_with('#')).collect::<Vec<_>>().join("\n");
    assert!(control(&comments).is_none() && offence(&rbac.stderr).is_none(), "{comments}\n{}", rbac.stderr);
    let objects: Vec<Value> = rbac.stdout.split("\n---\n").map(|d| serde_saphyr::from_str(d).unwrap()).collect();
    let kinds: Vec<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap_or("none")).collect();
    assert!(
        kinds.iter().all(|k| ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].contains(k)),
        "{kinds:?}\n{}\n{}",
        rbac.stdout,
        rbac.stderr
    );
    assert!(
        objects.iter().filter(|o| o["subjects"].is_array()).all(|o| o["subjects"][0]["name"] == user),
        "{}",
        rbac.stdout
    );
    // kubectl reads it as the same objects (a dry run: the plugin's tests write nothing here).
    let dry = c.kubectl(&["apply", "--dry-run=client", "-o", "name", "-f", "-"], Some(&rbac.stdout));
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    assert_eq!(String::from_utf8_lossy(&dry.stdout).lines().count(), objects.len());

    let escaped = c.dispatch(&call(&s, "doctor", &["--as", HOSTILE]));
    screened(&escaped, "doctor --as with an ESC");
    assert_eq!(escaped.stderr.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{}", escaped.stderr);
    let kubectl = c.kubectl(&["get", "lease", "--as", HOSTILE], None);
    assert!(!kubectl.status.success(), "kubectl sent the header");
}

/// Context names are the kubeconfig's words: in the fleet's table, JSON and Prometheus, and
/// in the error for a context that does not exist.
#[test]
fn a_hostile_context_name_in_the_fleet_and_in_errors() {
    let Setup { c, s } = setup("escctx");
    let text = c.kubectl_ok(&["config", "view", "--raw", "--minify", "--context", "admin", "-o", "json"], None);
    let mut kc: Value = serde_json::from_str(&text).unwrap();
    let mut hostile = kc["contexts"][0].clone();
    hostile["name"] = json!(HOSTILE);
    kc["contexts"].as_array_mut().unwrap().push(hostile);
    let kc = kc.to_string();
    for format in ["table", "json", "prometheus"] {
        let mut args = vec!["--context", HOSTILE, "--context", "admin"];
        if format != "table" {
            args.extend(["-o", format]);
        }
        let run = with_kubeconfig(&kc, &s.args("gate", &args));
        let what = format!("fleet -o {format}");
        match format {
            "json" => exact(&run, &what, json_docs(&run, &what)),
            "prometheus" => prometheus(&run, &what, true),
            _ => screened(&run, &what),
        }
    }
    let missing = format!("{HOSTILE}-missing");
    let run = with_kubeconfig(&kc, &s.args("gate", &["--context", &missing]));
    screened(&run, "an unknown context");
    assert_eq!(run.stderr.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{}", run.stderr);
    let kubectl = c.kubectl(&["get", "lease", "--context", &missing], None);
    assert!(!kubectl.status.success(), "kubectl found the context");
}

/// An exec plugin's stderr, passed on, and its failure, said in one error line.
#[test]
fn a_hostile_exec_plugin_stderr_is_passed_on_screened() {
    let c = Cluster::shared();
    let shapes = Shapes::new(c);
    let script: PathBuf = shapes.dir.join("exec-hostile");
    std::fs::write(&script, format!("#!/usr/bin/env bash\nprintf '%s\\n' $'{}' >&2\nexit 3\n", bash_quoted(HOSTILE)))
        .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let user = format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        script.display()
    );
    let kc = shapes.kubeconfig("exec-hostile", &shapes.cluster(), &user);
    let kc = kc.to_str().unwrap();
    for verb in [vec!["lease"], vec!["gate"], vec!["lease", "--watch", "--timeout", "3s"]] {
        let mut args = vec!["dispatch", "--kubeconfig", kc];
        args.extend(verb.iter().copied());
        let run = shapes.kubectl(&args, &[]);
        // The plugin's stderr is passed on line by line, as kubectl passes it: its second
        // line is its own (the user's own plugin wrote it), so only its controls are checked.
        if let Some(o) = control(&run.stderr).or_else(|| control(&run.stdout)) {
            panic!("{}: {o}\n{}", verb.join(" "), run.stderr);
        }
        assert!(run.stderr.contains("exited with status 3"), "{}", run.stderr);
    }
    // kubectl passes the plugin's stderr on raw: where the plugin differs (docs/output.md).
    let k = shapes.kubectl(&["--kubeconfig", kc, "get", "lease"], &[]);
    assert_ne!(k.code, 0, "kubectl ran with a failing plugin");
    assert!(k.stderr.contains("\u{1b}]0;owned\u{7}"), "kubectl escaped it after all:\n{}", k.stderr);
}

/// `$'...'` body for bash: every byte as `\xNN`.
fn bash_quoted(s: &str) -> String {
    s.bytes().map(|b| format!("\\x{b:02x}")).collect()
}

/// A server's Status message with escape sequences and a second line, through each verb's
/// error path.
#[test]
fn a_hostile_status_message_is_one_screened_error_line_in_every_verb() {
    let server = Hostile::start("status-escape");
    let url = server.url();
    for verb in [
        vec!["lease"],
        vec!["gate"],
        vec!["workload", "x", "-n", "default"],
        vec!["doctor"],
        vec!["lease", "--watch", "--timeout", "5s"],
    ] {
        let mut args = vec!["-s", url.as_str(), "--request-timeout", "10s"];
        args.extend(verb.iter().copied());
        let run = support::with_kubeconfig(support::UNREACHABLE_KUBECONFIG, &args);
        let what = verb.join(" ");
        screened(&run, &what);
        assert_eq!(run.stderr.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{what}:\n{}", run.stderr);
        assert_ne!(run.code, 0, "{what}");
    }
}

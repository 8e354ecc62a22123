//! `-o jsonpath=` and `-o custom-columns=` against kubectl's own printers: each template of the
//! table is evaluated by the plugin and by `testcluster printcheck` (client-go's
//! `k8s.io/client-go/util/jsonpath` and kubectl's `CustomColumnsPrinter`, on the same JSON
//! document decoded as kubectl decodes an object), and the two outputs must be the same bytes;
//! a template that must fail must fail in both, with client-go's message.
//!
//! `-o jsonpath` prints the document's bytes as client-go does, control characters and all.
//! A custom-columns cell is terminal text, and goes through the plugin's one sanitizer
//! (`text::sanitize::escape`, as the tables' cells): so the plugin's columns over a document are
//! compared with kubectl's over that document with each of its texts escaped first.

mod support;

use kubectl_dispatch::invocation::{PrinterKind, PrinterSpec};
use kubectl_dispatch::render::jsonpath::Template;
use kubectl_dispatch::render::printer::Printer;
use kubectl_dispatch::text::sanitize::escape;
use serde_json::Value;
use support::printcheck::oracle;
use support::repo;

fn ours_jsonpath(doc: &Value, template: &str, allow_missing: bool) -> Result<String, String> {
    let t = Template::parse(template).map_err(|e| format!("parse: {e}"))?;
    t.execute(doc, allow_missing).map_err(|e| format!("execute: {e}"))
}

const DOC: &str = r#"{
  "kind": "Example",
  "name": "a<b>&c",
  "count": 3,
  "ratio": 0.5,
  "big": 1000000.0,
  "tiny": 0.00001,
  "none": null,
  "yes": true,
  "empty": [],
  "emptyObj": {},
  "labels": {"app.kubernetes.io/name": "dispatch", "team": "ml"},
  "items": [
    {"name": "wl-1", "n": 1, "state": "Pending", "tags": ["x", "y"]},
    {"name": "wl-2", "n": 2, "state": "Ready", "tags": []},
    {"name": "wl-10", "n": 10, "state": "Pending", "extra": {"k": "v"}, "maybe": null}
  ],
  "nested": {"a": {"b": {"c": "deep"}}},
  "unicode": "héllo ✓",
  "quote": "say \"hi\"\n",
  "ctl": "red\u001b[31m\ttab\r\u202eback\u0007"
}"#;

/// The document with every text in it (keys too) escaped as the plugin escapes terminal text.
fn sanitized(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(escape(s)),
        Value::Array(a) => Value::Array(a.iter().map(sanitized).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (escape(k), sanitized(v))).collect()),
        other => other.clone(),
    }
}

/// Templates whose output kubectl prints in a random order (Go's map order): compared as
/// sorted words.
const UNORDERED: &[&str] = &["{.labels.*}", "{..name}", "{.nested.*}"];

const TEMPLATES: &[&str] = &[
    // fields, literals, text around actions
    "{.name}",
    "{.count}",
    "{.ratio}",
    "{.big}",
    "{.tiny}",
    "{.none}",
    "{.yes}",
    "{.empty}",
    "{.emptyObj}",
    "{.labels}",
    "{.nested}",
    "{.items[0]}",
    "{.quote}",
    "{.ctl}",
    "{.unicode}",
    "{$.name}",
    "{@.count}",
    "{}",
    "{.}",
    "{@}",
    "hello",
    "name: {.name} count: {.count}\n",
    "{.count}{.count}",
    "{\"literal\"}",
    "{'single'}",
    "{\"tab\\there\"}",
    "{true}",
    "{1}",
    "{1.5}",
    "{.labels.app\\.kubernetes\\.io/name}",
    "{.labels['team']}",
    "{.labels.*}",
    // arrays: *, indexes, slices, unions
    "{.items[*].name}",
    "{.items[0].name}",
    "{.items[-1].name}",
    "{.items[1:].name}",
    "{.items[:2].name}",
    "{.items[::2].name}",
    "{.items[1:1].name}",
    "{.items[0,2].name}",
    "{.items[*]['name','n']}",
    "{.items[*].tags[*]}",
    "{.items[*].tags}",
    "{.items[*].extra.k}",
    "{.items[*].maybe}",
    "{.empty[*]}",
    "{.name.*}",
    // filters
    "{.items[?(@.state==\"Pending\")].name}",
    "{.items[?(@.state=='Ready')].name}",
    "{.items[?(@.n>1)].name}",
    "{.items[?(@.n<2)].name}",
    "{.items[?(@.n<=2)].name}",
    "{.items[?(@.n>=2)].name}",
    "{.items[?(@.n!=2)].name}",
    "{.items[?(@.extra)].name}",
    "{.items[?(@.extra.k==\"v\")].n}",
    "{.items[?(@.name==@.name)].n}",
    // range / end
    "{range .items[*]}{.name}{\"\\t\"}{.state}{\"\\n\"}{end}",
    "{range .items[*]}[{.name}]{end}",
    "{range .items[*]}{range .tags[*]}{@}-{end};{end}",
    "{range .empty[*]}{.x}{end}after",
    "{range .items[*]}{.name}{end} and {.count}",
    "{range .items[*]}{.name}",
    // recursive descent
    "{.nested..c}",
    "{..c}",
    "{..name}",
    "{.nested.*}",
    // missing keys
    "{.items[0].missing}",
    "{.missing.deeper}",
    "{.items[*].missing}",
    // must not parse
    "{.a[}",
    "{.name",
    "{.items[?(@.n>1]}",
    "{\"unterminated}",
    "{.items[x]}",
    "{....a}",
    "{#}",
    "{\t.name}",
    "{.items[1:x]}",
    "{.items[?(@.n>1)}",
    "{\"bad\\q\"}",
    "{.a\n}",
    "{1.2.3}",
    // parse, then fail on the document
    "{end}",
    "{foo}",
    "{.items[5]}",
    "{.items[-5]}",
    "{.items[2:1].name}",
    "{.items[::0]}",
    "{.name[0]}",
    "{.count[?(@.a)]}",
    "{.items[?(@.n==\"1\")].name}",
    "{.items[?(@.tags>1)].name}",
    "{.items[?(@.yes<true)].name}",
    "{.items[*].tags[?(@==\"x\")]}",
];

#[test]
fn jsonpath_prints_what_client_go_prints() {
    let doc: Value = serde_json::from_str(DOC).unwrap();
    let gate = std::fs::read_to_string(repo().join("tests/golden/gate-healthy.json")).unwrap();
    let gate_doc: Value = serde_json::from_str(&gate).unwrap();
    let gate_templates = [
        "{.verdict}",
        "{range .chains[*]}{.clusterQueue}={.verdict}{\"\\n\"}{end}",
        "{.chains[*].checks[?(@.result==\"pass\")].id}",
        "{.lease.holder}",
        "{.waiting[*].name}",
        "{.chains[0].checks[*].title}",
    ];
    let mut cases: Vec<(&str, &Value, &str)> = TEMPLATES.iter().map(|t| (DOC, &doc, *t)).collect();
    cases.extend(gate_templates.iter().map(|t| (gate.as_str(), &gate_doc, *t)));
    let mut wrong = Vec::new();
    let mut failing = 0;
    for (text, doc, template) in cases {
        for allow in [true, false] {
            let flag = format!("--allow-missing-template-keys={allow}");
            let want = oracle(text, &format!("jsonpath={template}"), &[&flag]);
            let got = ours_jsonpath(doc, template, allow);
            failing += usize::from(want.is_err());
            let same = match (&want, &got) {
                (Ok(w), Ok(g)) if UNORDERED.contains(&template) => {
                    let words = |s: &str| {
                        let mut v: Vec<String> = s.split(' ').map(str::to_string).collect();
                        v.sort();
                        v
                    };
                    words(w) == words(g)
                }
                (w, g) => w == g,
            };
            if !same {
                wrong.push(format!(
                    "{template:?} (allow missing: {allow}):\n  client-go: {want:?}\n  plugin:    {got:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{} of the templates differ:\n{}", wrong.len(), wrong.join("\n"));
    assert!(failing >= 40, "the table must hold templates that fail ({failing} do)");
}

#[test]
fn custom_columns_print_what_kubectl_prints() {
    let gate = std::fs::read_to_string(repo().join("tests/golden/gate-healthy.json")).unwrap();
    let specs = [
        "NAME:.name,COUNT:.count",
        "N:.rows[*].name,M:.missing,NONE:.none",
        "L:.labels,E:.empty,O:.emptyObj",
        "F:.ratio,B:.big,T:.tiny,Y:.yes",
        "LONG-HEADER-NAME:{.name},X:rows[0].n",
        "Q:.quote,U:.unicode",
        "C:.ctl,L:.labels",
        "ONLY:.count",
        "P:.rows[?(@.state==\"Pending\")].name",
        "A:.rows[0].tags,B:.nested",
        // must fail
        "NAME",
        "",
        "A:{.a}{.b}",
        "A:.a[",
        "A:.name,B",
    ];
    // An object with `items` is a list to kubectl (a row per item); the plugin's documents
    // have none, so this one has none either.
    let text = DOC.replace("\"items\"", "\"rows\"");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let gate_doc: Value = serde_json::from_str(&gate).unwrap();
    let escaped = serde_json::to_string(&sanitized(&doc)).unwrap();
    let mut cases: Vec<(&str, &Value, String, PrinterKind)> =
        specs.iter().map(|s| (escaped.as_str(), &doc, s.to_string(), PrinterKind::CustomColumns)).collect();
    let gate_escaped = serde_json::to_string(&sanitized(&gate_doc)).unwrap();
    cases.push((
        gate_escaped.as_str(),
        &gate_doc,
        "CQ:.chains[*].clusterQueue,VERDICT:.verdict,HOLDER:.lease.holder".into(),
        PrinterKind::CustomColumns,
    ));
    let dir = std::env::temp_dir().join(format!("dispatch-columns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, file) in ["NAME   COUNT  N\n.name  {.count} rows[*].n\n", "NAME\n", "A B\n.a\n", ""].iter().enumerate() {
        let path = dir.join(format!("columns-{i}.txt"));
        std::fs::write(&path, file).unwrap();
        cases.push((escaped.as_str(), &doc, path.to_string_lossy().to_string(), PrinterKind::CustomColumnsFile));
    }
    let mut wrong = Vec::new();
    for (text, doc, spec, kind) in &cases {
        for no_headers in [false, true] {
            let name = if *kind == PrinterKind::CustomColumns { "custom-columns" } else { "custom-columns-file" };
            let flag = format!("--no-headers={no_headers}");
            let want = oracle(text, &format!("{name}={spec}"), &[&flag]);
            // The plugin reads a -file= form's file as it resolves the command line.
            let template = match kind {
                PrinterKind::CustomColumnsFile => std::fs::read_to_string(spec).unwrap(),
                _ => spec.clone(),
            };
            let printer = PrinterSpec { kind: *kind, template, allow_missing_keys: true, no_headers };
            let got = Printer::new(&printer).map_err(|e| format!("parse: {e}")).and_then(|p| {
                let mut out = Vec::new();
                p.print(doc, &mut out).map_err(|e| format!("execute: {e}"))?;
                Ok(String::from_utf8(out).unwrap())
            });
            // kubectl parses a column's JSONPath only when it prints (an `execute` error); the
            // plugin before it connects: the message is the same.
            let message = |r: &Result<String, String>| match r {
                Ok(s) => Ok(s.clone()),
                Err(e) => Err(e.trim_start_matches("parse: ").trim_start_matches("execute: ").to_string()),
            };
            if message(&want) != message(&got) {
                wrong.push(format!(
                    "{name}={spec:?} (no headers: {no_headers}):\n  kubectl: {want:?}\n  plugin:  {got:?}"
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{} of the specs differ:\n{}", wrong.len(), wrong.join("\n"));
}

/// A list's custom columns, all its rows through one tab writer: the golden files of
/// `workloads -A -o custom-columns=...` (rendered by tests/render_golden.rs, names of different
/// lengths in one column) are what kubectl's own printer prints over the same items, as a list
/// (`kubectl get` prints a list it read that way).
#[test]
fn a_lists_custom_columns_align_as_kubectls() {
    const WORKLOAD_COLUMNS: &str = "NAMESPACE:.namespace,NAME:.name,QUEUE:.localQueue,STAGE:.stage,GATE:.gate";
    let golden = |file: &str| std::fs::read_to_string(repo().join("tests/golden").join(file)).unwrap();
    let document: Value = serde_json::from_str(&golden("workloads-all.json")).unwrap();
    let names: Vec<usize> =
        document["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().len()).collect();
    assert!(names.iter().min() < names.iter().max(), "names of different lengths: {names:?}");
    let list = serde_json::json!({"kind": "List", "apiVersion": "v1", "items": document["items"]}).to_string();
    for (flag, file) in [
        ("--no-headers=false", "workloads-all-custom-columns.txt"),
        ("--no-headers=true", "workloads-all-custom-columns-no-headers.txt"),
    ] {
        let kubectls = oracle(&list, &format!("custom-columns={WORKLOAD_COLUMNS}"), &[flag]).unwrap();
        assert_eq!(golden(file), kubectls, "{file}");
    }
}

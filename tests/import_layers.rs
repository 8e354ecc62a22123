//! The house's plan, held against the code: every `crate::`, `super::` and `self::` path in
//! src/ (and `kubectl_dispatch::` in main.rs) is an arrow from its file to the file that defines
//! the module it names. No arrows may form a circle, and none may run from a lower layer to a
//! higher one. Nothing below `cli/` mentions clap. Comments are not read: a doc link is no
//! import.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use support::src_files as files;

/// The layers from the ground up: each entry a layer, each layer the files and folders (under
/// src/) in it. A file may import its own layer and those below it, never one above.
const LAYERS: &[(&str, &[&str])] = &[
    ("text and clock", &["text/", "clock.rs"]),
    ("core", &["core/"]),
    ("plain settings, errors, exit codes, log", &["invocation.rs", "exit.rs", "error.rs", "log.rs"]),
    ("report", &["report.rs", "report/"]),
    ("render", &["render/"]),
    ("cluster: connecting", &["cluster/mod.rs", "cluster/connecting/"]),
    ("cluster: reading", &["cluster/reading/"]),
    ("cluster: watching", &["cluster/watching/"]),
    ("commands", &["commands/"]),
    ("app", &["app.rs"]),
    ("cli", &["cli/"]),
    ("lib", &["lib.rs"]),
    ("main", &["main.rs"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module path a file defines: "cluster/reading/fetch.rs" is cluster::reading::fetch,
/// "cluster/mod.rs" cluster, lib.rs and main.rs the crate root.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").expect(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code without its comments (line comments, doc comments and block comments); string
/// literals are kept as they are, except that `//` inside one does not start a comment.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut in_string) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            in_string = c != '"';
            i += 1;
            continue;
        }
        if c == '"' && (i == 0 || chars[i - 1] != '\'') {
            in_string = true;
            out.push(c);
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
            continue;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// The paths written in `code`, from `crate::`, `super::`, `self::` (and `root::`, e.g.
/// `kubectl_dispatch::`), with use-trees (`a::{b, c::{d}}`) expanded. `base` is the module the
/// code is in; the paths come back absolute, from the crate root.
fn paths(code: &str, base: &[String], root: Option<&str>) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let head = match word.as_str() {
            "crate" => Vec::new(),
            w if Some(w) == root => Vec::new(),
            "self" | "super" => base.to_vec(),
            _ => continue,
        };
        if !(chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':')) {
            continue;
        }
        let mut prefix = head;
        if word == "super" {
            prefix.pop();
        }
        let (tree, end) = tree(&chars, i, prefix);
        out.extend(tree);
        i = end;
    }
    out
}

/// Reads `::a::b`, `::{x, y::z}` or `::*` after a path head at `i`; returns the full paths and
/// where reading stopped.
fn tree(chars: &[char], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    loop {
        if !(chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':')) {
            return (vec![prefix], i);
        }
        i += 2;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        match chars.get(i) {
            Some('{') => {
                i += 1;
                let mut all = Vec::new();
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => return (all, i),
                        Some('}') => return (all, i + 1),
                        _ => {}
                    }
                    let start = i;
                    while chars.get(i).is_some_and(|c| ident(*c) || *c == '*') {
                        i += 1;
                    }
                    let word: String = chars[start..i].iter().collect();
                    if word.is_empty() {
                        i += 1;
                        continue;
                    }
                    let mut p = prefix.clone();
                    match word.as_str() {
                        "self" | "*" => {}
                        "super" => {
                            p.pop();
                        }
                        w => p.push(w.to_string()),
                    }
                    let (sub, end) = tree(chars, i, p);
                    all.extend(sub);
                    i = end;
                    // `x as y`
                    while chars.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                        i += 1;
                    }
                }
            }
            Some('*') => return (vec![prefix], i + 1),
            _ => {
                let start = i;
                while chars.get(i).is_some_and(|c| ident(*c)) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                match word.as_str() {
                    "" => return (vec![prefix], i),
                    "super" => {
                        prefix.pop();
                    }
                    "self" => {}
                    w => prefix.push(w.to_string()),
                }
            }
        }
    }
}

/// The file that defines the longest module prefix of `path`.
fn file_of(path: &[String], modules: &BTreeMap<Vec<String>, String>) -> Option<String> {
    (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]).cloned())
}

/// file -> the files it imports, and for each arrow the first path that makes it.
fn arrows() -> BTreeMap<String, BTreeMap<String, String>> {
    let files = files();
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().filter(|f| *f != "main.rs").map(|f| (module_of(f), f.clone())).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(src().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let text = code(&text);
        let module = module_of(file);
        // Inline `mod tests { ... }`: `super::` there is the file's own module.
        let tests_at = text.find("mod tests {").unwrap_or(text.len());
        let root = (file == "main.rs").then_some("kubectl_dispatch");
        let mut to: BTreeMap<String, String> = BTreeMap::new();
        for (part, base) in [
            (&text[..tests_at], module.clone()),
            (&text[tests_at..], {
                let mut m = module.clone();
                m.push("tests".into());
                m
            }),
        ] {
            for path in paths(part, &base, root) {
                if let Some(target) = file_of(&path, &modules)
                    && &target != file
                {
                    to.entry(target).or_insert_with(|| path.join("::"));
                }
            }
        }
        graph.insert(file.clone(), to);
    }
    graph
}

fn layer_of(file: &str) -> usize {
    LAYERS
        .iter()
        .position(|(_, places)| places.iter().any(|p| if p.ends_with('/') { file.starts_with(p) } else { file == *p }))
        .unwrap_or_else(|| panic!("src/{file} is in no layer: add it to LAYERS in tests/import_layers.rs"))
}

#[test]
fn the_reader_sees_the_imports() {
    // The parser itself, on the shapes the code uses.
    let base: Vec<String> = vec!["cluster".into(), "reading".into(), "fetch".into()];
    let got = paths(
        &code(
            "use super::{failure::{self, Failure}, wire};\nuse crate::core::lease::LeaseRef; // crate::cli\nlet x = crate::error::first_line(\"//\");",
        ),
        &base,
        None,
    );
    let got: Vec<String> = got.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "cluster::reading::failure",
            "cluster::reading::failure::Failure",
            "cluster::reading::wire",
            "core::lease::LeaseRef",
            "error::first_line"
        ]
    );
    let graph = arrows();
    assert!(graph["cluster/reading/fetch.rs"].contains_key("cluster/connecting/connect.rs"), "{graph:#?}");
    assert!(graph["main.rs"].contains_key("cli/mod.rs"), "{:?}", graph["main.rs"]);
    assert!(graph.len() > 50, "only {} files read", graph.len());
}

#[test]
fn no_import_circle() {
    let graph = arrows();
    // Tarjan's strongly connected components: a component of more than one file is a circle.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        circles: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph[v].keys() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.circles.push(component);
            }
        }
    }
    let mut s = State {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let described: Vec<String> = s
        .circles
        .iter()
        .map(|c| {
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[*a]
                        .iter()
                        .filter(|(b, _)| c.contains(&b.as_str()))
                        .map(move |(b, p)| format!("{a} -> {b} ({p})"))
                })
                .collect();
            arrows.join("; ")
        })
        .collect();
    assert!(described.is_empty(), "import circles:\n{}", described.join("\n"));
}

#[test]
fn no_arrow_runs_back_up() {
    let mut up = Vec::new();
    for (from, to) in arrows() {
        for (target, path) in to {
            let (a, b) = (layer_of(&from), layer_of(&target));
            if b > a {
                up.push(format!("src/{from} ({}) -> src/{target} ({}): {path}", LAYERS[a].0, LAYERS[b].0));
            }
        }
    }
    assert!(up.is_empty(), "arrows from a lower layer to a higher one:\n{}", up.join("\n"));
}

#[test]
fn nothing_below_cli_mentions_clap() {
    let mut found = Vec::new();
    for file in files() {
        if file.starts_with("cli/") || file == "main.rs" || file == "lib.rs" {
            continue;
        }
        let text = code(&std::fs::read_to_string(src().join(&file)).expect("read"));
        for (n, line) in text.lines().enumerate() {
            let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.clone().any(|w| w == "clap" || w == "clap_complete" || w == "ValueEnum")
                || line.contains("#[arg(")
                || line.contains("#[command(")
            {
                found.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "clap below cli/:\n{}", found.join("\n"));
}

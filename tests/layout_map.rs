//! The layout map of docs/development.md, held against the tree: the lines between
//! `<!-- layout map -->` and `<!-- end layout map -->` name every .rs file under src/, one
//! line each (``- `src/PATH`: what it owns.``), and name no file that does not exist. A
//! failure says which lines to add and which to remove.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

const BEGIN: &str = "<!-- layout map -->";
const END: &str = "<!-- end layout map -->";

/// The files the map names, in its order (a file named twice appears twice).
fn mapped(doc: &str) -> Vec<String> {
    let begin = doc.find(BEGIN).unwrap_or_else(|| panic!("docs/development.md has no {BEGIN:?} line"));
    let end = doc.find(END).unwrap_or_else(|| panic!("docs/development.md has no {END:?} line"));
    assert!(begin < end, "{BEGIN:?} must come before {END:?}");
    let mut out = Vec::new();
    for line in doc[begin + BEGIN.len()..end].lines().filter(|l| !l.trim().is_empty()) {
        let path = line
            .strip_prefix("- `")
            .and_then(|rest| rest.split_once("`: "))
            .map(|(path, what)| (path, what.trim()))
            .filter(|(path, what)| path.starts_with("src/") && path.ends_with(".rs") && !what.is_empty());
        match path {
            Some((path, _)) => out.push(path.to_string()),
            None => panic!("not a layout line (``- `src/PATH.rs`: what it owns.``): {line:?}"),
        }
    }
    out
}

#[test]
fn the_layout_map_names_every_file_under_src_once() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/development.md");
    let doc = std::fs::read_to_string(&doc_path).expect("read docs/development.md");
    let named = mapped(&doc);
    let files: BTreeSet<String> = support::src_files().into_iter().map(|f| format!("src/{f}")).collect();
    let mut problems = Vec::new();
    let missing: Vec<&String> = files.iter().filter(|f| !named.contains(f)).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "add a line for each file the map lacks, between {BEGIN:?} and {END:?}:\n{}",
            missing.iter().map(|f| format!("- `{f}`: (what it owns, in one line)")).collect::<Vec<_>>().join("\n")
        ));
    }
    let gone: Vec<&String> = named.iter().filter(|f| !files.contains(*f)).collect();
    if !gone.is_empty() {
        problems.push(format!(
            "remove (or correct) the lines naming files that do not exist:\n{}",
            gone.iter().map(|f| format!("- `{f}`")).collect::<Vec<_>>().join("\n")
        ));
    }
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = named.iter().filter(|f| !seen.insert(*f)).collect();
    if !twice.is_empty() {
        problems.push(format!("name each file once; named more than once: {twice:?}"));
    }
    assert!(problems.is_empty(), "docs/development.md's layout map is out of date:\n\n{}", problems.join("\n\n"));
}

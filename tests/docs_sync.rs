//! The README and the pages of `docs/` must not drift from the code: their usage blocks are the
//! real `--help`, their examples are the golden files, and docs/rbac.md's RBAC is
//! deploy/rbac.yaml. Each block is found by its `<!-- marker -->` in whichever of README.md and
//! docs/*.md holds it (exactly one must). Every `docs/` page the README links to exists, and so
//! does every local page and heading the README and the docs link to.
//! `UPDATE_README=1 cargo test --test docs_sync` rewrites the blocks.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::repo;

/// README.md and every docs/*.md, in name order.
fn pages() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    let mut all = vec![repo().join("README.md")];
    all.extend(docs);
    all
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(repo()).unwrap_or(path).display().to_string()
}

/// The one page holding `<!-- marker -->`, and its text.
fn page_with(marker: &str) -> (PathBuf, String) {
    let tag = format!("<!-- {marker} -->");
    let mut found: Vec<(PathBuf, String)> =
        pages().into_iter().map(|p| (read(&p), p)).filter(|(t, _)| t.contains(&tag)).map(|(t, p)| (p, t)).collect();
    match found.len() {
        1 => found.remove(0),
        0 => panic!("neither README.md nor docs/*.md has {tag}"),
        _ => panic!("{tag} is in several pages: {:?}", found.iter().map(|(p, _)| shown(p)).collect::<Vec<_>>()),
    }
}

/// The byte range of the fenced block right after `<!-- marker -->`.
fn block_after(text: &str, marker: &str) -> std::ops::Range<usize> {
    let start = text.find(&format!("<!-- {marker} -->")).unwrap_or_else(|| panic!("no <!-- {marker} -->"));
    let fence = start + text[start..].find("```").expect("a fenced block");
    let open = fence + text[fence..].find('\n').expect("the fence's line") + 1;
    let close = open + text[open..].find("```\n").expect("the block's end");
    open..close
}

/// Compares the block after `marker` with `want`, or rewrites it with UPDATE_README=1.
fn check_block(marker: &str, want: &str) {
    let (path, mut text) = page_with(marker);
    let range = block_after(&text, marker);
    if text[range.clone()] == *want {
        return;
    }
    if std::env::var_os("UPDATE_README").is_some() {
        text.replace_range(range, want);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        return;
    }
    panic!(
        "{} block {marker} differs; run UPDATE_README=1 cargo test --test docs_sync\n--- {}\n{}\n--- want\n{want}",
        shown(&path),
        shown(&path),
        &text[range]
    );
}

#[test]
fn readme_usage_is_the_help() {
    for args in [
        vec!["--help"],
        vec!["gate", "--help"],
        vec!["lease", "--help"],
        vec!["workload", "--help"],
        vec!["doctor", "--help"],
        vec!["options"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-dispatch")).args(&args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        check_block(&format!("help:kubectl dispatch {}", args.join(" ")), &help);
    }
    // docs/usage.md keeps the usage summary; each verb's page, its own --help.
    assert_eq!(page_with("help:kubectl dispatch --help").0, repo().join("docs/usage.md"));
}

#[test]
fn readme_example_is_the_golden_file() {
    for file in ["gate-stuck.txt", "workload-stale.txt", "workloads-all.txt", "doctor-all-well.txt"] {
        let golden = std::fs::read_to_string(format!("{}/tests/golden/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        check_block(&format!("golden:{file}"), &golden);
    }
    // The README keeps the short example.
    assert_eq!(page_with("golden:gate-stuck.txt").0, repo().join("README.md"));
}

#[test]
fn readme_rbac_is_deploy_rbac() {
    let rbac = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/rbac.yaml")).unwrap();
    check_block("file:deploy/rbac.yaml", &rbac);
    assert_eq!(page_with("file:deploy/rbac.yaml").0, repo().join("docs/rbac.md"), "docs/rbac.md keeps the RBAC");
}

/// The targets of a page's Markdown links `[text](target)`, outside fenced blocks.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    found
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, outside fenced blocks.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let level = line.len() - line.trim_start_matches('#').len();
        if !fenced && level > 0 && line[level..].starts_with(' ') {
            found.push(anchor(line[level..].trim()));
        }
    }
    found
}

#[test]
fn every_docs_page_the_readme_links_to_exists() {
    let readme = read(&repo().join("README.md"));
    let linked: Vec<String> = links(&readme).into_iter().filter(|l| l.starts_with("docs/")).collect();
    // The verbs' pages, at least, are linked from the README.
    for page in ["docs/gate.md", "docs/lease.md", "docs/workload.md", "docs/doctor.md", "docs/design.md"] {
        assert!(linked.iter().any(|l| l.split('#').next() == Some(page)), "the README does not link to {page}");
    }
    for link in &linked {
        let path = link.split('#').next().unwrap();
        assert!(repo().join(path).is_file(), "README.md links to {link}, and {path} does not exist");
    }
}

#[test]
fn every_local_link_of_the_readme_and_the_docs_finds_its_page_and_heading() {
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = link.split_once('#').map_or((link.as_str(), None), |(p, f)| (p, Some(f)));
            let target = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            assert!(target.exists(), "{} links to {link}: {} does not exist", shown(&page), shown(&target));
            if let Some(fragment) = fragment {
                let headings = anchors(&read(&target));
                assert!(
                    headings.iter().any(|a| a == fragment),
                    "{} links to {link}: {} has no heading #{fragment} (it has {headings:?})",
                    shown(&page),
                    shown(&target)
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} local links checked");
}

//! kubectl's own printers on a JSON document: `tests/cluster/testcluster printcheck`.

use std::process::{Command, Stdio};

use super::repo;

/// What kubectl's printer `-o FORMAT` makes of `doc`: its output, or its one-line error,
/// `parse: ...` or `execute: ...`.
pub fn oracle(doc: &str, format: &str, args: &[&str]) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new(repo().join("tests/cluster/testcluster"))
        .arg("printcheck")
        .arg("-o")
        .arg(format)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start tests/cluster/testcluster printcheck");
    child.stdin.take().unwrap().write_all(doc.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // The harness may say first that it builds the checker.
    let last = stderr.lines().last().unwrap_or_default();
    match out.status.code() {
        Some(0) => Ok(String::from_utf8(out.stdout).expect("printcheck prints UTF-8")),
        Some(1) if last.starts_with("parse: ") || last.starts_with("execute: ") => Err(last.to_string()),
        _ => panic!("testcluster printcheck -o {format} failed to run: {stderr}"),
    }
}

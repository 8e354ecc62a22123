//! The harness's hostile server on loopback for the trust tests: `tests/cluster/testcluster
//! hostile --mode MODE`, plain HTTP with answers no kube-apiserver gives (`headers`: 401 to
//! everything; `status-escape`, `retry-after`, `endless`, `drip`, `odd-times`, and more;
//! `endless-watch`, `closing-watch`: Leases, then a watch whose line never ends, or that
//! closes at once; `gone-list`: a Lease GET answered, every Lease list and watch 410 Gone),
//! logging the headers of each request it receives, a CONNECT's tunnel included.
//!
//! The server ends when this value drops, and by itself when this test process dies (its
//! standard input, a pipe held here, closes).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

use super::{repo, unique};

pub struct Hostile {
    /// `127.0.0.1:PORT`
    pub addr: String,
    log: PathBuf,
    stderr: PathBuf,
    child: Child,
    _stdout: BufReader<ChildStdout>,
}

/// One request the server received.
#[derive(Debug, serde::Deserialize)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub host: String,
    pub headers: std::collections::HashMap<String, Vec<String>>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.first()).map(String::as_str)
    }

    /// Whether the plugin sent it (by its User-Agent), rather than kubectl.
    pub fn by_plugin(&self) -> bool {
        self.header("User-Agent").is_some_and(|a| a.starts_with("kubectl-dispatch/"))
    }
}

impl Hostile {
    pub fn start(mode: &str) -> Hostile {
        let base = std::env::temp_dir().join(unique("dispatch-hostile"));
        let log = base.with_extension("log");
        let stderr = base.with_extension("stderr");
        let err = std::fs::File::create(&stderr).expect("create the hostile server's stderr file");
        let mut child = Command::new(repo().join("tests/cluster/testcluster"))
            .args(["hostile", "--mode", mode, "--log"])
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run tests/cluster/testcluster hostile: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let Some(addr) = line.trim_end().strip_prefix("listening on ").map(str::to_string) else {
            let _ = child.kill();
            let status = child.wait();
            panic!(
                "the hostile server did not start ({status:?}, read {read:?}, stdout {line:?}):\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        Hostile { addr, log, stderr, child, _stdout: stdout }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("log line {l:?}: {e}")))
            .collect()
    }

    /// Forgets the requests received so far.
    pub fn clear(&self) {
        std::fs::write(&self.log, "").expect("truncate the hostile server's log");
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_file(&self.stderr);
    }
}

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

/// `kubectl ARGS` with no kubeconfig (and `env`), the plugin on PATH, calling `sample` with
/// kubectl's process id every `every` while it runs (kubectl execs the plugin in its own
/// process), and ended by force if it is still running after `limit`: a generous watchdog, so
/// that a hang fails with its reason rather than holding the suite.
pub fn kubectl_watched(
    args: &[&str],
    env: &[(&str, &str)],
    limit: std::time::Duration,
    every: std::time::Duration,
    sample: &mut dyn FnMut(u32),
) -> super::Run {
    let mut cmd = Command::new("kubectl");
    cmd.args(args).env("PATH", super::plugin_path()).env("KUBECONFIG", "/dev/null").stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let path = std::env::temp_dir().join(unique("dispatch-hostile-run"));
    let (out, err) = (path.with_extension("out"), path.with_extension("err"));
    cmd.stdout(std::fs::File::create(&out).unwrap()).stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().expect("start kubectl");
    let started = std::time::Instant::now();
    let status = loop {
        sample(child.id());
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "kubectl {args:?} did not end within {limit:?}:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(every);
    };
    let run = super::Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    };
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(err);
    run
}

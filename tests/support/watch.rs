//! A live `kubectl dispatch ... --watch` process, read line by line as it runs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use super::{Cluster, eventually, try_eventually};

/// A `-o json` watch line's `event` and the whole line, or None for a line that is not one.
pub fn json_event(line: &str) -> Option<(String, serde_json::Value)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some((v["event"].as_str()?.to_string(), v))
}

/// Whether a line is a `-o json` watch line of this `event`.
pub fn is_event(event: &str) -> impl Fn(&str) -> bool + '_ {
    move |l| json_event(l).is_some_and(|(e, _)| e == event)
}

pub struct Watch {
    child: Child,
    lines: Receiver<String>,
    errors: Receiver<String>,
    pub seen: Vec<String>,
    pub stderr: Vec<String>,
}

impl Watch {
    /// Starts `kubectl dispatch ARGS` through the real kubectl.
    pub fn start(c: &Cluster, args: &[&str]) -> Watch {
        let mut full = vec!["dispatch"];
        full.extend_from_slice(args);
        Watch::spawn(c.command("kubectl", &full))
    }

    /// Starts a command (one that runs `kubectl dispatch ...`) to be read as it runs.
    pub fn spawn(mut command: std::process::Command) -> Watch {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kubectl dispatch");
        let lines = pipe(child.stdout.take().unwrap());
        let errors = pipe(child.stderr.take().unwrap());
        Watch { child, lines, errors, seen: Vec::new(), stderr: Vec::new() }
    }

    /// Waits for a stdout line that `pred` accepts; panics with everything seen after `limit`.
    pub fn wait_for(&mut self, what: &str, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            self.drain_stderr();
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) if Instant::now() >= deadline => panic!(
                    "no {what} within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                    self.seen.join("\n"),
                    self.stderr.join("\n")
                ),
                Err(_) => {}
            }
        }
    }

    /// Waits for a new stderr line equal to `line`.
    pub fn wait_for_stderr(&mut self, line: &str, limit: Duration) {
        self.wait_for_stderr_where(line, limit, |l| l == line)
    }

    /// Waits for a new stderr line starting with `prefix`.
    pub fn wait_for_stderr_prefix(&mut self, prefix: &str, limit: Duration) {
        self.wait_for_stderr_where(prefix, limit, |l| l.starts_with(prefix))
    }

    /// Waits until a stderr line, one already read or a new one, satisfies `pred`.
    pub fn wait_for_stderr_any(&mut self, what: &str, limit: Duration, pred: impl Fn(&str) -> bool) {
        self.wait_for_stderr_from(0, what, limit, pred)
    }

    /// Waits until `n` stderr lines, read already or new, equal `line`.
    pub fn wait_for_stderr_count(&mut self, line: &str, n: usize, limit: Duration) {
        eventually(&format!("{n} stderr lines {line:?}"), limit, || {
            self.drain_stderr();
            match self.stderr.iter().filter(|l| *l == line).count() >= n {
                true => Ok(()),
                false => Err(self.stderr.join("\n")),
            }
        })
    }

    fn wait_for_stderr_where(&mut self, what: &str, limit: Duration, pred: impl Fn(&str) -> bool) {
        self.wait_for_stderr_from(self.stderr.len(), what, limit, pred)
    }

    fn wait_for_stderr_from(&mut self, start: usize, what: &str, limit: Duration, pred: impl Fn(&str) -> bool) {
        eventually(&format!("a stderr line {what:?}"), limit, || {
            self.drain_stderr();
            if self.stderr[start..].iter().any(|l| pred(l)) { Ok(()) } else { Err(self.stderr.join("\n")) }
        })
    }

    fn drain_stderr(&mut self) {
        while let Ok(l) = self.errors.try_recv() {
            self.stderr.push(l);
        }
    }

    /// The JSON events seen so far.
    pub fn events(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["event"].as_str().map(String::from))
            .collect()
    }

    /// Sends SIGTERM and returns the exit code.
    pub fn stop(mut self) -> (i32, Vec<String>, Vec<String>) {
        let _ = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let code = self.finish(Duration::from_secs(10));
        (code, std::mem::take(&mut self.seen), std::mem::take(&mut self.stderr))
    }

    /// Waits for the process to end by itself; returns its exit code.
    pub fn finish(&mut self, limit: Duration) -> i32 {
        let Ok(status) = try_eventually(limit, || self.child.try_wait().unwrap().ok_or(())) else {
            let _ = self.child.kill();
            panic!(
                "still running after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                self.seen.join("\n"),
                self.stderr.join("\n")
            );
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100)) {
            self.seen.push(l);
        }
        std::thread::sleep(Duration::from_millis(50));
        self.drain_stderr();
        status.code().unwrap_or(-1)
    }

    /// Whether the process is still running (it has not exited, with any code).
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stderr lines about the connection, in order: `interrupted`, `resumed`, `expired`.
pub fn connection_lines(stderr: &[String]) -> Vec<&'static str> {
    stderr
        .iter()
        .filter_map(|l| {
            if l.starts_with("watch interrupted: ") && l.ends_with("; reconnecting") {
                Some("interrupted")
            } else if l == "watch resumed" {
                Some("resumed")
            } else if l.starts_with("watch expired: ") {
                Some("expired")
            } else {
                None
            }
        })
        .collect()
}

fn pipe(r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

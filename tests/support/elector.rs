//! A real leader-election candidate for a test: `tests/cluster/testcluster elector`, client-go's
//! own leader election (LeaseLock) as dispatch-admission runs it, campaigning for one Lease of
//! a test cluster. Its stdout lines (`leader ID`, `leading ID`, `stopped leading`,
//! `exit: CAUSE`) are read as they come; client-go's klog messages go to a file, shown when a
//! wait fails.
//!
//! [`Elector::stop`] sends SIGTERM (the Lease is released only with ReleaseOnCancel);
//! [`Elector::kill`] sends SIGKILL (nothing is written). The elector also ends by itself when
//! this test process dies (its standard input, a pipe held here, closes), and is killed when
//! this value drops.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use super::{Cluster, repo, try_eventually, unique};

pub struct Elector {
    pub identity: String,
    child: Child,
    lines: Receiver<String>,
    /// The stdout lines read so far.
    pub seen: Vec<String>,
    stderr: PathBuf,
}

/// How a candidate campaigns.
#[derive(Debug, Clone, Copy)]
pub struct Campaign<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// `--lease-duration`, a Go duration such as `4s`.
    pub duration: &'a str,
    pub release_on_cancel: bool,
}

impl Elector {
    /// Starts a candidate for `campaign`'s Lease as `identity` (`<pod name>_<uid>`).
    pub fn start(c: &Cluster, campaign: Campaign<'_>, identity: &str) -> Elector {
        let stderr = std::env::temp_dir().join(unique("dispatch-elector")).with_extension("stderr");
        let mut cmd = Command::new(repo().join("tests/cluster/testcluster"));
        cmd.args(["elector", "--kubeconfig", c.kubeconfig(), "--namespace", campaign.namespace]).args([
            "--name",
            campaign.name,
            "--identity",
            identity,
            "--lease-duration",
            campaign.duration,
        ]);
        if campaign.release_on_cancel {
            cmd.arg("--release-on-cancel");
        }
        let err = std::fs::File::create(&stderr).expect("create the elector's stderr file");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run tests/cluster/testcluster elector: {e}"));
        let (tx, lines) = channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Elector { identity: identity.to_string(), child, lines, seen: Vec::new(), stderr }
    }

    /// Waits until this candidate leads (its `leading ID` line); panics with what it said.
    pub fn wait_leading(&mut self, limit: Duration) {
        let want = format!("leading {}", self.identity);
        self.wait_for(&want, limit);
    }

    /// Whether it has said it leads, without waiting.
    pub fn leads(&mut self) -> bool {
        self.drain();
        self.seen.iter().any(|l| *l == format!("leading {}", self.identity))
    }

    /// Waits for the stdout line `line`.
    pub fn wait_for(&mut self, line: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.seen.iter().any(|l| l == line) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(l) => self.seen.push(l),
                Err(_) if Instant::now() >= deadline => {
                    let report = self.report();
                    panic!("elector {}: no line {line:?} within {limit:?}\n{report}", self.identity)
                }
                Err(_) => {}
            }
        }
    }

    fn drain(&mut self) {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
    }

    /// What it said on stdout and stderr, for a failure message.
    pub fn report(&mut self) -> String {
        self.drain();
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.seen.join("\n"),
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        )
    }

    /// SIGTERM, as a rolling restart stops a pod; returns its exit code once it has exited (it
    /// releases the Lease first with ReleaseOnCancel).
    pub fn stop(mut self) -> i32 {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let code = self.exit_code(Duration::from_secs(15));
        self.wait_for("exit: terminated", Duration::from_secs(2));
        code
    }

    /// SIGKILL: the process ends at once and writes nothing more.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the elector");
        self.child.wait().expect("reap the elector");
    }

    fn exit_code(&mut self, limit: Duration) -> i32 {
        match try_eventually(limit, || self.child.try_wait().expect("wait").ok_or(())) {
            Ok(status) => status.code().unwrap_or(-1),
            Err(()) => {
                let _ = self.child.kill();
                let report = self.report();
                panic!("elector {} still running {limit:?} after SIGTERM\n{report}", self.identity);
            }
        }
    }
}

impl Drop for Elector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

//! A real forward proxy on loopback for the proxy tests: `tests/cluster/testcluster proxy`, an
//! HTTP CONNECT proxy (goproxy) or a SOCKS5 server (go-socks5), optionally requiring
//! credentials, that logs one line per connection it carried or refused:
//! `CONNECT 127.0.0.1:PORT`, `SOCKS5 127.0.0.1:PORT`, `DENIED ...`, `REFUSED ...`, `FAILED ...`.
//!
//! The proxy ends when this value drops, and by itself when this test process dies (its
//! standard input, a pipe held here, closes).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

use super::{repo, unique};

pub struct Proxy {
    /// `127.0.0.1:PORT`
    pub addr: String,
    kind: String,
    log: PathBuf,
    stderr: PathBuf,
    /// Holds its stdin (in `child`) and stdout open while it runs.
    child: Child,
    _stdout: BufReader<ChildStdout>,
}

impl Proxy {
    /// Starts a proxy of `kind` (`http` or `socks5`), requiring `auth` (user, password) if given.
    pub fn start(kind: &str, auth: Option<(&str, &str)>) -> Proxy {
        let base = std::env::temp_dir().join(unique("dispatch-proxy"));
        let log = base.with_extension("log");
        let stderr = base.with_extension("stderr");
        let mut cmd = Command::new(repo().join("tests/cluster/testcluster"));
        cmd.args(["proxy", "--kind", kind, "--log"]).arg(&log);
        if let Some((user, password)) = auth {
            cmd.args(["--user", user, "--password", password]);
        }
        let err = std::fs::File::create(&stderr).expect("create the proxy's stderr file");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run tests/cluster/testcluster proxy: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let Some(addr) = line.trim_end().strip_prefix("listening on ").map(str::to_string) else {
            let _ = child.kill();
            let status = child.wait();
            panic!(
                "the {kind} proxy did not start ({status:?}, read {read:?}, stdout {line:?}):\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        Proxy { addr, kind: kind.to_string(), log, stderr, child, _stdout: stdout }
    }

    /// `http://127.0.0.1:PORT` or `socks5://127.0.0.1:PORT`, for a kubeconfig's `proxy-url`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.kind, self.addr)
    }

    /// The URL with credentials in it (`http://USER:PASSWORD@127.0.0.1:PORT`), right or wrong.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        format!("{}://{user}:{password}@{}", self.kind, self.addr)
    }

    /// The log's lines so far, oldest first.
    pub fn carried(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(str::to_string).collect()
    }

    /// What the proxy wrote on stderr (goproxy's and go-socks5's own messages), for failures.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// `127.0.0.1:PORT` of a port that refuses connections (a listener bound, then dropped).
pub fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address").to_string();
    drop(listener);
    addr
}

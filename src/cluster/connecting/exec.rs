//! Exec credential plugins (`client.authentication.k8s.io` v1 and v1beta1), run as kubectl runs
//! them, with three differences that the plugin's modes need:
//! - every run is bounded (`--request-timeout`, else [`DEFAULT_BOUND`], or
//!   [`INTERACTIVE_BOUND`] when it has the terminal) and the child is killed when the bound or
//!   the caller gives up;
//! - live and fleet modes and completion never hand it the terminal;
//! - its stderr is read line by line: passed on to ours as kubectl does (a device-code login
//!   prints its URL there), except in fleet mode and completion, and its last line kept, so a
//!   failure can say it.
//!
//! kube's own exec support runs the command synchronously on each client build, unbounded,
//! and reports a missing command as a bare `No such file or directory`.

use std::io::IsTerminal;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::config::{ExecAuthCluster, ExecConfig, ExecInteractiveMode};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::bounds::{EXEC_STDERR_LINE_LIMIT, EXEC_STDOUT_LIMIT};

pub use crate::error::ExecError;
use crate::text::terminal::LineSink;

/// The bound on one run of a credential plugin when `--request-timeout` is not set. Long enough
/// for a login that opens a browser, short enough that TAB or a fleet never hangs on one.
pub const DEFAULT_BOUND: Duration = Duration::from_secs(60);

/// The bound when the plugin has the terminal: a person may be typing a password.
pub const INTERACTIVE_BOUND: Duration = Duration::from_secs(300);

/// A credential plugin as the kubeconfig's user names it.
#[derive(Debug, Clone)]
pub struct ExecPlugin {
    pub config: ExecConfig,
    /// The kubeconfig user, for messages.
    pub user: String,
    pub cluster: Option<ExecAuthCluster>,
    /// Whether this run may hand the plugin the terminal (one-shot commands only); also
    /// whether its stderr is passed on (not in fleet mode or completion, where lines from
    /// several plugins, or any at all, would garble the output).
    pub may_interact: bool,
    /// Where its stderr is passed on, line by line and escaped: the run's injected stderr;
    /// `None`: not passed on.
    pub stderr: Option<LineSink>,
    /// `--request-timeout`; without it, [`DEFAULT_BOUND`] or [`INTERACTIVE_BOUND`].
    pub bound: Option<Duration>,
}

/// What a plugin returned.
#[derive(Clone)]
pub struct Credential {
    pub token: Option<String>,
    /// PEM certificate and PEM key.
    pub identity: Option<(String, String)>,
    pub expires: Option<Timestamp>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("identity", &self.identity.as_ref().map(|_| "<redacted>"))
            .field("expires", &self.expires)
            .finish()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExecInfo<'a> {
    api_version: &'a str,
    kind: &'static str,
    spec: ExecInfoSpec<'a>,
}

#[derive(Serialize)]
struct ExecInfoSpec<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a ExecAuthCluster>,
    interactive: bool,
}

impl ExecPlugin {
    pub fn command(&self) -> String {
        self.config.command.clone().unwrap_or_default()
    }

    fn api_version(&self) -> &str {
        self.config.api_version.as_deref().unwrap_or("client.authentication.k8s.io/v1beta1")
    }

    /// Checks what kubectl checks before it runs a plugin.
    pub fn validate(&self) -> Result<(), ExecError> {
        let fail = |cause: &str| Err(ExecError::Config { user: self.user.clone(), cause: cause.into() });
        if self.config.command.as_deref().is_none_or(str::is_empty) {
            return fail("exec.command is empty");
        }
        if self.config.api_version.as_deref().is_none_or(str::is_empty) {
            return fail("exec plugin: invalid apiVersion \"\"");
        }
        match self.api_version() {
            "client.authentication.k8s.io/v1" if self.config.interactive_mode.is_none() => {
                fail("interactiveMode must be specified to use exec authentication plugin")
            }
            "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1" => Ok(()),
            other => Err(ExecError::Config {
                user: self.user.clone(),
                cause: format!(
                    "exec plugin apiVersion {other:?} is not supported (client.authentication.k8s.io/v1 and v1beta1 are)"
                ),
            }),
        }
    }

    /// Whether this run hands the plugin the terminal, as client-go decides, within what
    /// this mode allows.
    fn interactive(&self) -> Result<bool, ExecError> {
        let terminal = std::io::stdin().is_terminal();
        match self.config.interactive_mode {
            Some(ExecInteractiveMode::Never) => Ok(false),
            Some(ExecInteractiveMode::Always) if !self.may_interact => Err(ExecError::NeedsTerminal {
                command: self.command(),
                why: "and this mode never gives it one (--watch, --wait, several contexts, completion)",
            }),
            Some(ExecInteractiveMode::Always) if !terminal => {
                Err(ExecError::NeedsTerminal { command: self.command(), why: "and standard input is not a terminal" })
            }
            _ => Ok(self.may_interact && terminal),
        }
    }

    /// The plugin's command as kubectl starts it: its args and env, `KUBERNETES_EXEC_INFO`,
    /// stdout piped, and stdin and stderr the terminal's only when it may interact.
    fn command_line(&self, command: &str, interactive: bool) -> tokio::process::Command {
        let info = ExecInfo {
            api_version: self.api_version(),
            kind: "ExecCredential",
            spec: ExecInfoSpec {
                cluster: self.config.provide_cluster_info.then_some(self.cluster.as_ref()).flatten(),
                interactive,
            },
        };
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(self.config.args.iter().flatten());
        for pair in self.config.env.iter().flatten() {
            if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
                cmd.env(name, value);
            }
        }
        cmd.env("KUBERNETES_EXEC_INFO", serde_json::to_string(&info).unwrap_or_default());
        cmd.stdout(Stdio::piped()).kill_on_drop(true);
        if interactive {
            cmd.stdin(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        }
        cmd
    }

    /// Runs the plugin once, within its bound.
    pub async fn run(&self) -> Result<Credential, ExecError> {
        self.validate()?;
        let command = self.command();
        let interactive = self.interactive()?;
        let bound = self.bound.unwrap_or(if interactive { INTERACTIVE_BOUND } else { DEFAULT_BOUND });
        let mut cmd = self.command_line(&command, interactive);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ExecError::NotFound {
                command: command.clone(),
                user: self.user.clone(),
                install_hint: self.config.install_hint.clone().filter(|h| !h.trim().is_empty()),
            },
            _ => ExecError::Start { command: command.clone(), cause: e.to_string() },
        })?;
        let (mut stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let last = std::sync::Mutex::new(None::<String>);
        let finished = async {
            let mut out = Vec::new();
            let read_out = async {
                if let Some(s) = stdout.as_mut() {
                    let _ = s.take(EXEC_STDOUT_LIMIT + 1).read_to_end(&mut out).await;
                }
                if out.len() as u64 > EXEC_STDOUT_LIMIT {
                    return Err(("standard output", EXEC_STDOUT_LIMIT));
                }
                Ok(())
            };
            let read_err = async {
                let Some(s) = stderr else { return Ok(()) };
                let mut reader = tokio::io::BufReader::new(s);
                loop {
                    let mut bytes = Vec::new();
                    match (&mut reader).take(EXEC_STDERR_LINE_LIMIT + 1).read_until(b'\n', &mut bytes).await {
                        Ok(0) | Err(_) => return Ok(()),
                        Ok(_) if bytes.len() as u64 > EXEC_STDERR_LINE_LIMIT => {
                            return Err(("standard error line", EXEC_STDERR_LINE_LIMIT));
                        }
                        Ok(_) => {}
                    }
                    let line = String::from_utf8_lossy(&bytes);
                    let line = line.trim_end_matches(['\n', '\r']);
                    if let Some(passed) = &self.stderr {
                        passed.foreign(line);
                    }
                    if !line.trim().is_empty() {
                        *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(line.to_string());
                    }
                }
            };
            tokio::try_join!(read_out, read_err)?;
            Ok((child.wait().await, out))
        };
        let said = || last.lock().unwrap_or_else(|p| p.into_inner()).as_deref().map(one_line);
        let ended = tokio::time::timeout(bound, finished).await;
        let (status, out) = match ended {
            Ok(Ok(done)) => done,
            Ok(Err((what, limit))) => {
                let _ = child.kill().await;
                return Err(ExecError::TooMuch { command, what, limit });
            }
            Err(_) => {
                // Kill it and reap it before going on: kill_on_drop only signals, and a plugin
                // still dying after the command has ended is one that outlived it.
                let _ = child.kill().await;
                return Err(ExecError::Timeout { command, after: bound, last_line: said() });
            }
        };
        let status = status.map_err(|e| ExecError::Start { command: command.clone(), cause: e.to_string() })?;
        if !status.success() {
            return Err(ExecError::Failed { command, status: describe(status), last_line: said() });
        }
        parse(&out, self.api_version()).map_err(|cause| ExecError::NoCredential { command, cause })
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                if let Some(sig) = status.signal() {
                    return format!("was killed by signal {sig}");
                }
            }
            "ended abnormally".into()
        }
    }
}

/// A line of the plugin's stderr as an error may quote it: trimmed and escaped.
fn one_line(line: &str) -> String {
    crate::text::sanitize::escape(line.trim())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    expiration_timestamp: Option<String>,
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
}

/// The plugin's stdout, checked as client-go checks it.
pub fn parse(stdout: &[u8], api_version: &str) -> Result<Credential, String> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err("it printed nothing".into());
    }
    let cred: ExecCredential = serde_saphyr::from_slice(stdout).map_err(|e| {
        format!("its output is not an ExecCredential: {}", e.to_string().lines().next().unwrap_or_default())
    })?;
    if cred.kind.as_deref() != Some("ExecCredential") {
        return Err(format!("it returned kind {:?}, not ExecCredential", cred.kind.unwrap_or_default()));
    }
    if cred.api_version.as_deref() != Some(api_version) {
        return Err(format!(
            "it returned apiVersion {:?}, but the kubeconfig asks for {api_version:?}",
            cred.api_version.unwrap_or_default()
        ));
    }
    let status = cred.status.ok_or("its ExecCredential has no status")?;
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let (cert, key) = (nonempty(status.client_certificate_data), nonempty(status.client_key_data));
    let identity = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        (Some(_), None) => return Err("it returned clientCertificateData without clientKeyData".into()),
        (None, Some(_)) => return Err("it returned clientKeyData without clientCertificateData".into()),
    };
    let token = nonempty(status.token);
    if let Some(token) = &token {
        super::headers::token_sendable(token)?;
    }
    if token.is_none() && identity.is_none() {
        return Err("it returned neither a token nor a client certificate and key".into());
    }
    let expires = nonempty(status.expiration_timestamp)
        // As a Lease's times: one in the last day of year 9999 reads as the last instant.
        .map(|t| crate::core::time::parse_time(&t).map_err(|e| format!("expirationTimestamp: {e}")))
        .transpose()?;
    Ok(Credential { token, identity, expires })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "client.authentication.k8s.io/v1";

    #[test]
    fn a_token_with_expiry() {
        let out = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#;
        let c = parse(out, V1).unwrap();
        assert_eq!(c.token.as_deref(), Some("t"));
        assert_eq!(c.expires.unwrap().to_string(), "2030-01-01T00:00:00Z");
        assert!(c.identity.is_none());
        assert!(!format!("{c:?}").contains("\"t\""), "Debug must not show the token");
    }

    #[test]
    fn a_certificate_and_yaml() {
        let out = b"apiVersion: client.authentication.k8s.io/v1beta1\nkind: ExecCredential\nstatus:\n  clientCertificateData: C\n  clientKeyData: K\n";
        let c = parse(out, "client.authentication.k8s.io/v1beta1").unwrap();
        assert_eq!(c.identity, Some(("C".into(), "K".into())));
        assert!(c.expires.is_none());
    }

    #[test]
    fn what_client_go_refuses() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "printed nothing"),
            (b"not: [json", "not an ExecCredential"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}"#, "asks for"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"Other","status":{"token":"t"}}"#, "kind"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#, "no status"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}"#, "neither"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"C"}}"#, "without clientKeyData"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"soon"}}"#, "expirationTimestamp"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t\n"}}"#, "its token holds a line break"),
        ];
        for (out, expected) in cases {
            let e = parse(out, V1).unwrap_err();
            assert!(e.contains(expected), "{e:?} should contain {expected:?}");
        }
    }

    #[test]
    fn a_stderr_line_is_quoted_trimmed_and_escaped() {
        assert_eq!(one_line("  login failed: expired \r"), "login failed: expired");
        assert_eq!(one_line("red \x1b[31m"), "red \\u{1b}[31m");
    }

    #[test]
    fn install_hints_read_on_one_line() {
        let e = ExecError::NotFound {
            command: "aws".into(),
            user: "u".into(),
            install_hint: Some("Install the AWS CLI:\n  brew install awscli\n".into()),
        };
        assert_eq!(e.to_string(), r#"the exec credential plugin "aws" for user "u" was not found"#);
        assert_eq!(e.hint().as_deref(), Some("Install the AWS CLI: brew install awscli"));
    }

    #[test]
    fn v1_needs_an_interactive_mode() {
        let plugin = |version: &str, mode: Option<ExecInteractiveMode>| ExecPlugin {
            config: ExecConfig {
                api_version: Some(version.into()),
                command: Some("x".into()),
                interactive_mode: mode,
                ..ExecConfig::default()
            },
            user: "u".into(),
            cluster: None,
            may_interact: false,
            stderr: None,
            bound: None,
        };
        assert!(plugin(V1, None).validate().unwrap_err().to_string().contains("interactiveMode must be specified"));
        assert!(plugin(V1, Some(ExecInteractiveMode::Never)).validate().is_ok());
        assert!(plugin("client.authentication.k8s.io/v1beta1", None).validate().is_ok());
        assert!(plugin("client.authentication.k8s.io/v1alpha1", None).validate().is_err());
        let always = plugin(V1, Some(ExecInteractiveMode::Always));
        assert!(matches!(always.interactive(), Err(ExecError::NeedsTerminal { .. })));
        assert!(!plugin(V1, Some(ExecInteractiveMode::IfAvailable)).interactive().unwrap());
    }
}

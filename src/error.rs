//! Errors that stop a run before a verdict. Display is the one sentence the user reads after
//! `error: `; [`Error::hint`] is at most one line suggesting the next step. A missing or
//! forbidden object is not an error: it is a fact the gate judges.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no kubeconfig found: set KUBECONFIG or pass --kubeconfig, or run inside a cluster")]
    NoKubeconfig,

    #[error("cannot read kubeconfig {path}: {cause}")]
    ReadKubeconfig { path: PathBuf, cause: String },

    #[error("invalid kubeconfig: {0}")]
    Kubeconfig(String),

    #[error("context {0:?} not found in the kubeconfig")]
    UnknownContext(String),

    #[error("no current context is set in the kubeconfig")]
    NoCurrentContext,

    #[error("cannot reach the API server at {server}: {cause}")]
    Unreachable { server: String, cause: String },

    #[error("TLS with the API server at {server} failed: {cause}")]
    Tls { server: String, cause: String },

    #[error("the API server at {server} rejected the credentials (401 Unauthorized)")]
    Unauthorized { server: String },

    #[error("no answer from the API server at {server} within {}", crate::core::duration::go_duration(*timeout))]
    Timeout { server: String, timeout: Duration },

    #[error("cannot reach the API server at {server} through the proxy {proxy}: {cause}")]
    Proxy { server: String, proxy: String, cause: String },

    #[error(transparent)]
    Exec(#[from] ExecError),

    /// A credential or impersonation value no HTTP header can carry, refused before sending
    /// with the words of Go's `net/http`, which kubectl prints.
    #[error("net/http: invalid header field value for {header:?}: {cause}")]
    Header { header: String, cause: String },

    /// The gcp or azure auth-provider, which kubectl 1.26 and later refuse with these words.
    #[error("The {name} auth plugin has been removed.")]
    AuthProviderRemoved { name: String, hint: String },

    /// An answer past one of the bounds on what a server may send (`cluster::connecting::bounds`).
    #[error("{0}")]
    Bound(String),

    /// A 3xx answer: the plugin follows no redirect (nor does client-go with a bearer token).
    #[error("the API server answered {status}{} for {path}; kubectl-dispatch does not follow redirects", location.as_ref().map(|l| format!(" (to {l})")).unwrap_or_default())]
    Redirect { status: u16, location: Option<String>, path: String },

    #[error("Kueue is not installed: the API server does not serve the API group kueue.x-k8s.io")]
    KueueMissing,

    #[error("Kueue's webhook is down: the API server cannot return {what} as {versions}: {cause}")]
    KueueWebhook { what: String, versions: String, cause: String },

    #[error("Kueue's {resource} API is not served ({group_version})")]
    KueueResourceMissing { resource: String, group_version: String },

    /// The API server's own words, as kubectl prints them after `Error from server (NotFound): `.
    #[error("{message}")]
    WorkloadNotFound { message: String, namespace: String },

    /// A read that decides refused (403) with nothing else to read instead (a live mode's first
    /// list, `workloads`' list, `workload NAME`'s get): the server's words, as kubectl prints
    /// them after `Error from server (Forbidden): `, then the `missing RBAC:` rule.
    #[error("{message}")]
    Forbidden { message: String, rule: String },

    /// A live mode's `--timeout` came while the connection was down (the cause, in plain
    /// words), or before the API server first answered (`None`).
    #[error("{}", timed_out_down(*timeout, cause.as_deref()))]
    DownAtTimeout { timeout: Duration, cause: Option<String> },

    #[error("the API server refused to {action}: {message}")]
    Api { action: String, message: String },

    #[error("cannot decode {what}: {cause}")]
    Malformed { what: String, cause: String },

    #[error("cannot read config file {path}: {cause}")]
    ConfigFile { path: PathBuf, cause: String },

    #[error("{0}")]
    Usage(String),

    /// A printer's template that parsed but failed on the document (`-o jsonpath={.nope}
    /// --allow-missing-template-keys=false`): kubectl's first line, exit 1 as kubectl's.
    #[error("{0}")]
    Print(String),

    /// An exec credential plugin that failed while a live mode was following (when the
    /// credential was fetched anew): the plugin's own error, as the one-shot says it.
    #[error("{message}")]
    ExecLater { message: String },

    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),
}

impl Error {
    /// One line that suggests what to do next.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::UnknownContext(_) | Error::NoCurrentContext => {
                Some("list the contexts with 'kubectl config get-contexts'".into())
            }
            Error::Forbidden { rule, .. } => Some(format!("missing RBAC: {rule}")),
            Error::Unreachable { .. } | Error::Timeout { .. } | Error::DownAtTimeout { .. } => {
                Some("check that the cluster is running and that --context points at it".into())
            }
            Error::Tls { .. } => {
                Some("check certificate-authority-data and tls-server-name for this cluster in the kubeconfig".into())
            }
            Error::Proxy { .. } => {
                Some("check proxy-url for this cluster in the kubeconfig, or HTTPS_PROXY and NO_PROXY".into())
            }
            Error::Exec(e) => e.hint(),
            Error::AuthProviderRemoved { hint, .. } => Some(hint.clone()),
            Error::Redirect { .. } => Some("point --server (or the kubeconfig's server) at where it redirects".into()),
            Error::Unauthorized { .. } => {
                Some("log in again, or check the user entry of this context in the kubeconfig".into())
            }
            Error::KueueWebhook { .. } => Some(
                "Kueue's controller manager serves that webhook: check that it runs and that the API server reaches it"
                    .into(),
            ),
            Error::KueueMissing | Error::KueueResourceMissing { .. } => {
                Some("install Kueue (its CRDs), or choose the cluster that runs it with --context".into())
            }
            Error::WorkloadNotFound { namespace, .. } => Some(format!(
                "no such Workload in namespace {namespace}; list them with 'kubectl dispatch workloads -n {namespace}'"
            )),
            _ => None,
        }
    }

    /// The exit code this error ends the run with: 2 for usage, 4 when a read that decides
    /// was forbidden, else 1.
    pub fn exit(&self) -> crate::exit::Exit {
        match self {
            Error::Usage(_) => crate::exit::Exit::Usage,
            Error::Forbidden { .. } => crate::exit::Exit::Unknown,
            _ => crate::exit::Exit::Failed,
        }
    }

    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}

/// Why a plugin gave no credential. Display is the sentence after `error: `.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    #[error("the exec credential plugin {command:?} for user {user:?} was not found")]
    NotFound { command: String, user: String, install_hint: Option<String> },
    #[error("the exec credential plugin {command:?} could not be started: {cause}")]
    Start { command: String, cause: String },
    #[error("the exec credential plugin {command:?} {status}{}", last_line.as_ref().map(|l| format!(": {l}")).unwrap_or_default())]
    Failed { command: String, status: String, last_line: Option<String> },
    #[error("the exec credential plugin {command:?} produced no credential: {cause}")]
    NoCredential { command: String, cause: String },
    #[error("the exec credential plugin {command:?} did not finish within {}{}", crate::core::duration::go_duration(*after), last_line.as_ref().map(|l| format!(" (its last words: {l})")).unwrap_or_default())]
    Timeout { command: String, after: Duration, last_line: Option<String> },
    #[error("the exec credential plugin {command:?} was stopped: its {what} passed {}, the bound on it", size(*limit))]
    TooMuch { command: String, what: &'static str, limit: u64 },
    #[error("the exec credential plugin {command:?} needs a terminal (interactiveMode: Always), {why}")]
    NeedsTerminal { command: String, why: &'static str },
    #[error("user {user:?}: {cause}")]
    Config { user: String, cause: String },
}

impl ExecError {
    /// The kubeconfig's `installHint`, on one line, for a plugin that is not installed.
    pub fn hint(&self) -> Option<String> {
        match self {
            ExecError::NotFound { install_hint: Some(h), .. } => {
                Some(h.split_whitespace().collect::<Vec<_>>().join(" "))
            }
            ExecError::NotFound { .. } => {
                Some("install it, or check exec.command for this user in the kubeconfig".into())
            }
            _ => None,
        }
    }
}

fn timed_out_down(timeout: Duration, cause: Option<&str>) -> String {
    let timeout = crate::core::duration::go_duration(timeout);
    match cause {
        // The cause may carry the server's words: escaped, it reaches a terminal.
        Some(cause) => {
            format!("--timeout {timeout} came while the connection was down: {}", crate::text::sanitize::escape(cause))
        }
        None => format!("--timeout {timeout} came before the API server answered"),
    }
}

/// A URL for messages as kubectl's errors print it (Go's `net/http` client, `stripPassword`):
/// a password in its user information replaced by `***` (a user name alone is kept). Text
/// that is no URL is returned as it is.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some((info, host)) = authority.rsplit_once('@') else { return url.to_string() };
    let Some((user, _password)) = info.split_once(':') else { return url.to_string() };
    format!("{scheme}://{user}:***@{host}{tail}")
}

/// A size for messages: `64 MiB`, `64 KiB`, or bytes.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The first line of a message, trimmed: kube's and serde's errors can run to several.
pub fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_string()
}

/// The innermost cause's message, on one line.
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    first_line(&current.to_string())
}

impl From<std::io::Error> for Error {
    /// Writing the output failed (other than a closed pipe, which main treats as success).
    fn from(e: std::io::Error) -> Self {
        Error::Output(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_a_url_is_redacted_as_kubectl_redacts_it() {
        assert_eq!(redact_url("https://admin:S3CRET@127.0.0.1:1"), "https://admin:***@127.0.0.1:1");
        assert_eq!(redact_url("https://admin:@h/p?q=a:b@c"), "https://admin:***@h/p?q=a:b@c");
        assert_eq!(redact_url("https://a:b:c@d@h:6443/x"), "https://a:***@h:6443/x");
        assert_eq!(redact_url("https://admin@h"), "https://admin@h");
        assert_eq!(redact_url("https://h:6443/a@b:c"), "https://h:6443/a@b:c");
        assert_eq!(redact_url("not a url"), "not a url");
    }
}

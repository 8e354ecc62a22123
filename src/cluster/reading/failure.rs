//! Sorting kube's errors into what they mean to the user: a fact (404, 403) or a failure that
//! stops the run, with a sentence that names the server and the cause, never kube's Debug text.
//!
//! The one home for the wording of a failed request: a kube or transport error becomes a
//! [`Cause`] once; the one-shot reads map it to their `error:` line ([`Cause::error`]), the
//! live streams say it in `watch interrupted: CAUSE; reconnecting` ([`Cause::plain`]), so a TLS
//! failure reads the same in a watch as in `gate`.

use std::error::Error as StdError;

use crate::cluster::connecting::bounds::{self, Redirected, TooLarge};
use crate::cluster::connecting::deadline::RequestTimedOut;
use crate::cluster::connecting::exec::ExecError;
use crate::cluster::connecting::tls::ConnectTimedOut;
use crate::error::{Error, first_line, root_cause};

/// Where a read went, for the messages of its failure: the server, and the proxy on the way
/// (without its credentials).
pub trait Endpoint {
    fn server(&self) -> &str;
    fn proxy(&self) -> Option<&str>;
}

/// What a failed read means.
#[derive(Debug)]
pub enum Failure {
    NotFound,
    /// A 403, with the first line of the server's words for it (`leases.coordination.k8s.io
    /// "..." is forbidden: User "..." cannot get ...`), as kubectl prints them.
    Forbidden(String),
    /// The apiserver could not convert the stored objects to the version asked for: the CRD's
    /// conversion webhook (Kueue's) did not answer. The apiserver's message.
    Conversion(String),
    Stop(Error),
}

/// Classifies a failed read of `what` (e.g. "the ClusterQueue list").
pub fn classify(e: kube::Error, conn: &dyn Endpoint, what: &str) -> Failure {
    let server = conn.server();
    match e {
        kube::Error::Api(status) => match status.code {
            404 => Failure::NotFound,
            403 => Failure::Forbidden(first_line(&status.message)),
            401 => Failure::Stop(Error::Unauthorized { server: server.into() }),
            _ if is_conversion_failure(&status.message) => Failure::Conversion(first_line(&status.message)),
            code => Failure::Stop(Error::Api {
                action: format!("return {what}"),
                message: format!("{} ({code})", first_line(&status.message)),
            }),
        },
        kube::Error::SerdeError(e) => Failure::Stop(Error::Malformed { what: what.into(), cause: e.to_string() }),
        other => Failure::Stop(transport(&other, conn)),
    }
}

/// The apiserver's words when a CRD's conversion webhook fails: "conversion webhook for
/// kueue.x-k8s.io/v1beta1, Kind=ClusterQueue failed: Post ...: connection refused".
fn is_conversion_failure(message: &str) -> bool {
    message.contains("conversion webhook for")
}

/// Why a request failed, decided once from kube's error.
#[derive(Debug, Clone)]
pub enum Cause {
    /// The server answered with an error status.
    Status(Box<kube::core::Status>),
    /// The exec credential plugin gave no credential.
    Exec(ExecError),
    /// An answer past the plugin's bounds.
    Bound(String),
    Redirect(Redirected),
    /// `--request-timeout` passed.
    TimedOut(std::time::Duration),
    /// No connection, or no TLS handshake, within kubectl's bounds.
    Slow(ConnectTimedOut),
    /// The proxy on the way failed: what went wrong there.
    Proxy(String),
    /// TLS failed: the root cause.
    Tls(String),
    /// The server could not be reached, or the connection broke: the root cause, and the
    /// whole chain of causes (for the plain words).
    Unreachable {
        root: String,
        chain: String,
    },
    /// A watch stream that cannot be read: our own words, naming the limit and the path.
    Unreadable(String),
}

impl Cause {
    /// The cause of `e`.
    pub fn of(e: &kube::Error) -> Cause {
        match e {
            kube::Error::Api(status) => return Cause::Status(status.clone()),
            other if unreadable(other).is_some() => {
                let text = unreadable(other).map(ToString::to_string);
                return Cause::Unreadable(text.unwrap_or_default());
            }
            _ => {}
        }
        Cause::of_transport(e)
    }

    /// The cause of a failure below HTTP.
    pub fn of_transport(e: &(dyn StdError + 'static)) -> Cause {
        if let Some(exec) = find::<ExecError>(e) {
            return Cause::Exec(exec.clone());
        }
        if let Some(big) = find::<TooLarge>(e) {
            return Cause::Bound(big.to_string());
        }
        if let Some(r) = find::<Redirected>(e) {
            return Cause::Redirect(r.clone());
        }
        if let Some(RequestTimedOut(timeout)) = find::<RequestTimedOut>(e) {
            return Cause::TimedOut(*timeout);
        }
        if let Some(slow) = find::<ConnectTimedOut>(e) {
            return Cause::Slow(*slow);
        }
        let root = root_cause(e);
        let chain = chain_text(e);
        let lower = chain.to_lowercase();
        if let Some(cause) = proxy_cause(&lower, &root) {
            return Cause::Proxy(cause);
        }
        if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
            return Cause::Tls(root);
        }
        Cause::Unreachable { root, chain }
    }

    /// The one-shot's error for it.
    pub fn error(self, conn: &dyn Endpoint) -> Error {
        let server = conn.server().to_string();
        match self {
            Cause::Status(s) if s.code == 401 => Error::Unauthorized { server },
            Cause::Status(s) => {
                Error::Api { action: "answer".into(), message: format!("{} ({})", first_line(&s.message), s.code) }
            }
            Cause::Exec(exec) => Error::Exec(exec),
            Cause::Bound(text) | Cause::Unreadable(text) => Error::Bound(text),
            Cause::Redirect(r) => Error::Redirect { status: r.status, location: r.location, path: r.path },
            Cause::TimedOut(timeout) => Error::Timeout { server, timeout },
            Cause::Slow(slow @ ConnectTimedOut::Dial(_)) => Error::Unreachable { server, cause: slow.to_string() },
            Cause::Slow(slow) => Error::Tls { server, cause: slow.to_string() },
            Cause::Proxy(cause) => match conn.proxy() {
                Some(proxy) => Error::Proxy { server, proxy: proxy.to_string(), cause },
                None => Error::Unreachable { server, cause },
            },
            Cause::Tls(cause) => Error::Tls { server, cause },
            Cause::Unreachable { root, .. } => Error::Unreachable { server, cause: root },
        }
    }

    /// One plain line for `watch interrupted: ...`: the same words as the one-shot's error,
    /// less the server's URL (said once already), and a broken connection in plain words.
    pub fn plain(&self) -> String {
        match self {
            Cause::Status(s) => plain_status(s),
            Cause::Exec(exec) => exec.to_string(),
            Cause::Bound(text) | Cause::Unreadable(text) => text.clone(),
            Cause::Redirect(r) => format!("the API server answered {} for {}", r.status, r.path),
            Cause::TimedOut(d) => format!(
                "the API server did not answer in time (no answer within {})",
                crate::core::duration::go_duration(*d)
            ),
            Cause::Slow(slow) => format!("the API server did not answer in time ({slow})"),
            Cause::Proxy(cause) => format!("the proxy failed: {cause}"),
            // A connection the server closed mid-stream, though rustls names TLS in it.
            Cause::Tls(cause) if cause.contains("close_notify") || cause.to_lowercase().contains("unexpected eof") => {
                "the API server closed the connection".into()
            }
            Cause::Tls(cause) => format!("TLS with the API server failed: {cause}"),
            Cause::Unreachable { chain, .. } => plain_transport(chain),
        }
    }
}

/// An error status the server sent, in plain words.
pub fn plain_status(s: &kube::core::Status) -> String {
    // The server's words reach a terminal in `watch interrupted: ...`: escaped.
    let message = crate::text::sanitize::escape(&first_line(&s.message));
    match s.code {
        401 => "the API server rejected the credentials (401 Unauthorized)".into(),
        429 => format!("the API server asks to retry later (429: {message})"),
        500..=599 => format!("the API server failed ({}: {message})", s.code),
        code => format!("{message} ({code})"),
    }
}

/// A failure below HTTP, from the text of its whole chain of causes, in plain words: the raw
/// rustls or hyper text ("peer closed connection without sending TLS close_notify: https://...")
/// reads as a bug to a user.
pub fn plain_transport(chain: &str) -> String {
    let lower = chain.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["connection refused"]) {
        "the API server refuses connections (connection refused)".into()
    } else if has(&[
        "close_notify",
        "unexpected eof",
        "connection reset",
        "broken pipe",
        "connection closed",
        "incomplete message",
        "channel closed",
        "keep-alive timed out",
    ]) {
        "the API server closed the connection".into()
    } else if has(&["timed out", "deadline has elapsed", "did not complete within"]) {
        "the API server did not answer in time".into()
    } else if has(&["no route to host", "network is unreachable", "host is unreachable"]) {
        "the API server cannot be reached (no route)".into()
    } else if has(&["dns error", "failed to lookup", "name or service not known"]) {
        "the API server's name does not resolve".into()
    } else {
        let last = chain.rsplit(": ").next().unwrap_or(chain);
        first_line(last)
    }
}

/// A failure to talk to the server at all: no credential from the exec plugin, the request's
/// time was up, the proxy, TLS, or not reachable.
pub fn transport(e: &(dyn StdError + 'static), conn: &dyn Endpoint) -> Error {
    Cause::of_transport(e).error(conn)
}

/// What went wrong at the proxy, from hyper-util's tunnel and SOCKS errors; `None` when the
/// proxy is not where it failed.
fn proxy_cause(chain: &str, root: &str) -> Option<String> {
    let cause = if chain.contains("proxy authorization required") {
        "the proxy demands credentials it was not given or did not accept (407 Proxy Authentication Required)".into()
    } else if chain.contains("credentials not accepted") {
        "the SOCKS5 proxy did not accept the credentials".into()
    } else if chain.contains("server does not support user/pass") {
        "the SOCKS5 proxy does not take a user name and password".into()
    } else if chain.contains("tunnel error: unsuccessful") {
        "the proxy refused to open a tunnel to the API server".into()
    } else if chain.contains("tunnel error") || chain.contains("socks error") {
        if chain.contains("failed to create underlying connection") {
            format!("cannot connect to the proxy: {root}")
        } else {
            format!("the proxy failed: {root}")
        }
    } else {
        return None;
    };
    Some(cause)
}

/// The first error of type `T` in the chain.
fn find<'a, T: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<T>() {
            return Some(found);
        }
        current = err.source();
    }
    None
}

/// An error and each of its sources, joined with ": ".
pub(crate) fn chain_text(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut current = e;
    while let Some(next) = current.source() {
        text.push_str(": ");
        text.push_str(&next.to_string());
        current = next;
    }
    text
}

/// A watch whose stream cannot be read: an outage, not an answer (made by
/// `cluster/watching/bounded_watch.rs`; named here, where a failed request is put in words).
#[derive(Debug)]
pub struct Unreadable {
    /// The request's path (without its query).
    pub path: String,
    pub why: Broken,
}

#[derive(Debug)]
pub enum Broken {
    /// A line longer than the bound on one object ([`bounds::OBJECT_LIMIT`]).
    TooLong,
    /// A line that is neither an event nor a Status: the decoder's words.
    NotAnEvent(String),
    /// An event whose object cannot be read (a `renewTime` that is not a time): the
    /// decoder's words. Passed over: the watch goes on.
    Object(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            Broken::TooLong => write!(
                f,
                "the API server sent a watch event line longer than the {} MiB limit (watch of {})",
                bounds::OBJECT_LIMIT >> 20,
                self.path
            ),
            Broken::NotAnEvent(why) => {
                write!(
                    f,
                    "the API server sent a watch event line that is not an event ({why}) (watch of {})",
                    self.path
                )
            }
            Broken::Object(why) => write!(
                f,
                "passed over a watch event whose object cannot be read ({why}) (watch of {}); the watch goes on",
                self.path
            ),
        }
    }
}

impl std::error::Error for Unreadable {}

/// The unreadable stream behind a failed watch, if that is what failed.
pub fn unreadable(e: &kube::Error) -> Option<&Unreadable> {
    match e {
        kube::Error::ReadEvents(io) => io.get_ref().and_then(|inner| inner.downcast_ref::<Unreadable>()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct At;

    impl Endpoint for At {
        fn server(&self) -> &str {
            "https://k:6443"
        }
        fn proxy(&self) -> Option<&str> {
            None
        }
    }

    #[test]
    fn transport_failures_in_plain_words() {
        assert_eq!(
            plain_transport(
                "error reading a body from connection: peer closed connection without sending TLS close_notify: \
                 https://docs.rs/rustls/latest/rustls/manual/_03_howto/index.html#unexpected-eof"
            ),
            "the API server closed the connection"
        );
        assert_eq!(
            plain_transport("client error (Connect): tcp connect error: Connection refused (os error 111)"),
            "the API server refuses connections (connection refused)"
        );
        assert_eq!(
            plain_transport("request: the request did not complete within 30s"),
            "the API server did not answer in time"
        );
        assert_eq!(plain_transport("something: odd thing happened"), "odd thing happened");
    }

    #[test]
    fn a_servers_words_in_an_interruption_are_escaped() {
        let status =
            |code: u16, message: &str| kube::core::Status { code, message: message.into(), ..Default::default() };
        assert_eq!(
            plain_status(&status(503, "down \u{1b}]0;owned\u{7}\u{1b}[2J for now\nsecond line")),
            "the API server failed (503: down \\u{1b}]0;owned\\u{7}\\u{1b}[2J for now)"
        );
        assert_eq!(
            plain_status(&status(401, "\u{1b}[31m")),
            "the API server rejected the credentials (401 Unauthorized)"
        );
    }

    #[test]
    fn a_tls_failure_reads_the_same_in_a_watch_as_in_a_one_shot() {
        let e = kube::Error::Service("invalid peer certificate: UnknownIssuer".into());
        let cause = Cause::of(&e);
        assert_eq!(cause.plain(), "TLS with the API server failed: invalid peer certificate: UnknownIssuer");
        assert_eq!(
            cause.error(&At).to_string(),
            "TLS with the API server at https://k:6443 failed: invalid peer certificate: UnknownIssuer"
        );
        let closed = kube::Error::Service("peer closed connection without sending TLS close_notify".into());
        assert_eq!(Cause::of(&closed).plain(), "the API server closed the connection", "a cut, not TLS");
        let slow = kube::Error::Service(Box::new(RequestTimedOut(std::time::Duration::from_secs(30))));
        assert_eq!(Cause::of(&slow).plain(), "the API server did not answer in time (no answer within 30s)");
        assert_eq!(
            Cause::of(&slow).error(&At).to_string(),
            "no answer from the API server at https://k:6443 within 30s"
        );
    }
}

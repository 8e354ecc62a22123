//! Sorting kube's errors into what they mean to the user: a fact (404, 403) or a failure that
//! stops the run, with a sentence that names the server and the cause, never kube's Debug text.

use std::error::Error as StdError;

use crate::cluster::connecting::bounds::{Redirected, TooLarge};
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

/// A failure to talk to the server at all: no credential from the exec plugin, the request's
/// time was up, the proxy, TLS, or not reachable.
pub fn transport(e: &(dyn StdError + 'static), conn: &dyn Endpoint) -> Error {
    let server = conn.server().to_string();
    if let Some(exec) = find::<ExecError>(e) {
        return Error::Exec(exec.clone());
    }
    if let Some(big) = find::<TooLarge>(e) {
        return Error::Bound(big.to_string());
    }
    if let Some(r) = find::<Redirected>(e) {
        return Error::Redirect { status: r.status, location: r.location.clone(), path: r.path.clone() };
    }
    if let Some(RequestTimedOut(timeout)) = find::<RequestTimedOut>(e) {
        return Error::Timeout { server, timeout: *timeout };
    }
    if let Some(slow) = find::<ConnectTimedOut>(e) {
        return match slow {
            ConnectTimedOut::Dial(_) => Error::Unreachable { server, cause: slow.to_string() },
            ConnectTimedOut::Handshake(_) => Error::Tls { server, cause: slow.to_string() },
        };
    }
    let cause = root_cause(e);
    let lower = chain_text(e).to_lowercase();
    if let Some(proxy) = conn.proxy()
        && let Some(cause) = proxy_cause(&lower, &cause)
    {
        return Error::Proxy { server, proxy: proxy.to_string(), cause };
    }
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        Error::Tls { server, cause }
    } else {
        Error::Unreachable { server, cause }
    }
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

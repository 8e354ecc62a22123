//! Sorting kube's errors into what they mean to the user: a fact (404, 403) or a failure that
//! stops the run, with a sentence that names the server and the cause, never kube's Debug text.

use std::error::Error as StdError;

use crate::error::Error;

/// What a failed read means.
#[derive(Debug)]
pub enum Failure {
    NotFound,
    Forbidden,
    Stop(Error),
}

/// Classifies a failed read of `what` (e.g. "the ClusterQueue list").
pub fn classify(e: kube::Error, server: &str, what: &str) -> Failure {
    match e {
        kube::Error::Api(status) => match status.code {
            404 => Failure::NotFound,
            403 => Failure::Forbidden,
            401 => Failure::Stop(Error::Unauthorized { server: server.into() }),
            code => Failure::Stop(Error::Api {
                action: format!("return {what}"),
                message: format!("{} ({code})", first_line(&status.message)),
            }),
        },
        kube::Error::SerdeError(e) => Failure::Stop(Error::Malformed { what: what.into(), cause: e.to_string() }),
        other => Failure::Stop(transport(&other, server)),
    }
}

/// A failure to talk to the server at all: TLS, or not reachable.
pub fn transport(e: &(dyn StdError + 'static), server: &str) -> Error {
    let cause = root_cause(e);
    let lower = chain_text(e).to_lowercase();
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        Error::Tls { server: server.into(), cause }
    } else {
        Error::Unreachable { server: server.into(), cause }
    }
}

/// The innermost cause's message, on one line.
pub fn root_cause(e: &(dyn StdError + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    first_line(&current.to_string())
}

fn chain_text(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut current = e;
    while let Some(next) = current.source() {
        text.push_str(": ");
        text.push_str(&next.to_string());
        current = next;
    }
    text
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_string()
}

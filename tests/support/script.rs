//! A script of API answers, as `tests/recorded/*.json` keeps them: for each request the plugin
//! made (method, path and query, and a POST's body), the status, headers and body the real
//! kube-apiserver gave, and for a watch each event line with the time it came, and how the
//! stream ended. [`super::record`] writes them from an end-to-end run; [`super::replay`]
//! serves them in process. Hostile answers no real server gives are scripts too, made in the
//! test that needs them (a chunk delayed, a stream held open in silence, a connection cut).
//!
//! Times in a recording are moved so that the command started at [`EPOCH`]: a replay runs
//! with its clock there and sees every age as the real run saw it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The moment every recorded command started, once its times are moved.
pub const EPOCH: &str = "2026-06-01T12:00:00Z";

pub fn epoch() -> Timestamp {
    EPOCH.parse().expect("EPOCH is a timestamp")
}

/// One command's answers.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Script {
    /// The arguments after `kubectl dispatch` when it was recorded.
    pub command: Vec<String>,
    /// The kubeconfig context it ran in (the test cluster's users: admin, viewer, no-lease...).
    pub context: String,
    pub exchanges: Vec<Exchange>,
}

/// One request and its answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub method: String,
    /// The path and query as the plugin sent them.
    pub uri: String,
    /// A POST's body (an access review), as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// Silence before the status line, in milliseconds (scripted; 0 when recorded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub headers_after_ms: u64,
    pub status: u16,
    /// The headers the plugin reads (Content-Type, Warning, Retry-After), names lower-case.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The whole body, when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The whole body, when it is not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A watch's event lines (or any body sent in pieces), each with its time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<Chunk>,
    #[serde(default, skip_serializing_if = "End::is_close")]
    pub end: End,
}

/// A piece of a body: a JSON line (a watch event, sent with its newline) or raw text.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// Milliseconds after the status line.
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How a body ends after its last chunk.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum End {
    /// The body ends as HTTP ends a body.
    #[default]
    Close,
    /// The connection stays open and says nothing more, until the client goes (a watch the
    /// client left while the server still held it; or a partition).
    Hold,
    /// The connection is cut mid-body (no final chunk).
    Cut,
}

impl End {
    fn is_close(&self) -> bool {
        *self == End::Close
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Exchange {
    /// What a request is matched by: method, path, the query with its volatile values
    /// (resourceVersion, continue) starred, and a POST's body.
    pub fn key(&self) -> String {
        key(&self.method, &self.uri, self.request.as_ref())
    }

    /// A watch (`watch=true` or `watch=1` in the query).
    pub fn is_watch(&self) -> bool {
        is_watch(&self.uri)
    }
}

pub fn is_watch(uri: &str) -> bool {
    let query = uri.split_once('?').map(|(_, q)| q).unwrap_or_default();
    query.split('&').any(|p| p == "watch=true" || p == "watch=1")
}

pub fn key(method: &str, uri: &str, request: Option<&Value>) -> String {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k @ ("resourceVersion" | "continue"), _)) => format!("{k}=*"),
            _ => p.to_string(),
        })
        .collect();
    params.sort();
    let mut key = format!("{method} {path}?{}", params.join("&"));
    if let Some(body) = request {
        key += &format!(" {}", comparable(body));
    }
    key
}

impl Script {
    pub fn path(name: &str) -> PathBuf {
        super::repo().join("tests/recorded").join(format!("{name}.json"))
    }

    /// `tests/recorded/NAME.json`; panics naming the file and how to make it.
    pub fn load(name: &str) -> Script {
        let path = Script::path(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (recorded by `DISPATCH_RECORD=1 cargo test --test e2e_recorded`)", path.display())
        });
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a script: {e}", path.display()))
    }

    pub fn save(&self, name: &str) {
        let path = Script::path(name);
        std::fs::create_dir_all(path.parent().unwrap()).expect("tests/recorded");
        let text = serde_json::to_string_pretty(self).expect("script as JSON") + "\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    /// The exchanges with `key`, in order.
    pub fn answers(&self, key: &str) -> Vec<&Exchange> {
        self.exchanges.iter().filter(|e| e.key() == key).collect()
    }

    /// The one exchange whose key contains `part`, to change in a scripted variant.
    pub fn exchange_mut(&mut self, part: &str) -> &mut Exchange {
        let mut found = self.exchanges.iter_mut().filter(|e| e.key().contains(part));
        found.next().unwrap_or_else(|| panic!("no exchange whose key contains {part:?}"))
    }

    /// What must stay equal between two recordings of the same scenario: every exchange in key
    /// order with its volatile values (resourceVersion, uid, creationTimestamp, continue tokens,
    /// a client certificate's id, every time) replaced by a mark, watch bookmarks left out, and chunk times dropped.
    pub fn comparable(&self) -> Vec<Value> {
        let mut out: Vec<(String, Value)> = self
            .exchanges
            .iter()
            .map(|e| {
                let lines: Vec<Value> = e
                    .chunks
                    .iter()
                    .filter(|c| c.line.as_ref().is_none_or(|l| l["type"] != "BOOKMARK"))
                    .map(|c| c.line.as_ref().map(comparable).unwrap_or_else(|| Value::from(c.text.clone())))
                    .collect();
                let v = serde_json::json!({
                    "key": e.key(),
                    "status": e.status,
                    "headers": e.headers,
                    "body": e.body.as_ref().map(comparable),
                    "text": e.text,
                    "lines": lines,
                });
                (e.key(), v)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, v)| v).collect()
    }
}

/// Fields whose values differ from one cluster, or one write, to the next: each cluster's own
/// client certificates give each user another credential id.
const VOLATILE: [&str; 5] =
    ["resourceVersion", "uid", "creationTimestamp", "continue", "authentication.kubernetes.io/credential-id"];

/// `value` with its volatile fields marked (see [`Script::comparable`]).
pub fn comparable(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let volatile = VOLATILE.contains(&k.as_str());
                    (k.clone(), if volatile && !v.is_null() { Value::from("<volatile>") } else { comparable(v) })
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        Value::String(s) if as_time(s).is_some() => Value::from("<time>"),
        other => other.clone(),
    }
}

/// `s` as a timestamp, when it is one the API writes (RFC 3339 in UTC, seconds or micro).
fn as_time(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    s.parse().ok()
}

/// `value` with every timestamp moved by `by`, written back at its own precision; and the
/// fields no command reads and every write changes (managedFields) left out.
pub fn shifted(value: &Value, by: SignedDuration) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| *k != "managedFields").map(|(k, v)| (k.clone(), shifted(v, by))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| shifted(v, by)).collect()),
        Value::String(s) => match as_time(s) {
            Some(t) => {
                let moved = t + by;
                let format = if s.contains('.') { "%Y-%m-%dT%H:%M:%S%.6fZ" } else { "%Y-%m-%dT%H:%M:%SZ" };
                Value::from(moved.strftime(format).to_string())
            }
            None => value.clone(),
        },
        other => other.clone(),
    }
}

//! One watch request, read line by line with a bound. kube's `Api::watch` reads its event
//! lines with no limit, so a server whose event line never ends makes it grow until memory
//! runs out (seen: 7 GB in 15 s) while the watch looks healthy. The live modes send the same
//! request through the kube `Client` themselves and read it with a bounded `LinesCodec`; the
//! rest is as kube does it (an error status as `kube::Error::Api`, an `ERROR` event's Status,
//! an incomplete last line and an EOF in the body ending the stream quietly).

use futures::{Stream, StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use kube::api::{Api, WatchEvent, WatchParams};
use kube::core::Status;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::io::StreamReader;

/// The longest watch event line read. An event is one object as JSON on one line, and etcd
/// refuses objects over 1.5 MiB, so any real event fits many times over (JSON escaping, a
/// newer server's larger limit); a line that never ends is cut here, long before memory
/// runs out.
pub const MAX_EVENT_LINE: usize = 16 * 1024 * 1024;
/// The most read of a failed watch's answer (a Status is a few hundred bytes).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// A watch whose stream cannot be read: an outage, not an answer.
#[derive(Debug)]
pub struct Unreadable {
    /// The request's path (without its query).
    pub path: String,
    pub why: Broken,
}

#[derive(Debug)]
pub enum Broken {
    /// A line longer than [`MAX_EVENT_LINE`].
    TooLong,
    /// A line that is neither an event nor a Status: the decoder's words.
    NotAnEvent(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            Broken::TooLong => write!(
                f,
                "the API server sent a watch event line longer than the {} MiB limit (watch of {})",
                MAX_EVENT_LINE / (1024 * 1024),
                self.path
            ),
            Broken::NotAnEvent(why) => {
                write!(
                    f,
                    "the API server sent a watch event line that is not an event ({why}) (watch of {})",
                    self.path
                )
            }
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

fn broken(path: &str, why: Broken) -> kube::Error {
    let unreadable = Unreadable { path: path.to_string(), why };
    kube::Error::ReadEvents(std::io::Error::new(std::io::ErrorKind::InvalidData, unreadable))
}

/// `api.watch(params, version)`, with its lines bounded by [`MAX_EVENT_LINE`] and its error
/// answer by [`MAX_ERROR_BODY`].
pub async fn watch<K>(
    api: &Api<K>,
    params: &WatchParams,
    version: &str,
) -> Result<impl Stream<Item = Result<WatchEvent<K>, kube::Error>> + Send + use<K>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + Send + 'static,
{
    let mut request =
        kube::core::Request::new(api.resource_url()).watch(params, version).map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("watch");
    // As kube does: a gzipped watch stream is not decoded past its first member.
    request.headers_mut().insert(http::header::ACCEPT_ENCODING, http::HeaderValue::from_static("identity"));
    let path = request.uri().path().to_string();
    let client = api.clone().into_client();
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let code = response.status();
    if code.is_client_error() || code.is_server_error() {
        return Err(error_status(code.as_u16(), response.into_body()).await);
    }
    let body = response.into_body().into_data_stream().map_err(io_error);
    let lines = FramedRead::new(StreamReader::new(body), LinesCodec::new_with_max_length(MAX_EVENT_LINE));
    Ok(lines.filter_map(move |line| futures::future::ready(event(line, &path))))
}

/// One line as an event, as kube reads it, but for a line too long or not JSON at all.
fn event<K: serde::de::DeserializeOwned>(
    line: Result<String, LinesCodecError>,
    path: &str,
) -> Option<Result<WatchEvent<K>, kube::Error>> {
    match line {
        Ok(line) => match serde_json::from_str::<WatchEvent<K>>(&line) {
            Ok(event) => Some(Ok(event)),
            // An incomplete last line (the body ended mid-line): the watch ended.
            Err(e) if e.is_eof() => None,
            Err(e) => match serde_json::from_str::<Status>(&line) {
                Ok(status) => Some(Err(kube::Error::Api(status.boxed()))),
                Err(_) => Some(Err(broken(path, Broken::NotAnEvent(e.to_string())))),
            },
        },
        Err(LinesCodecError::MaxLineLengthExceeded) => Some(Err(broken(path, Broken::TooLong))),
        Err(LinesCodecError::Io(e)) => match e.kind() {
            // Kube's own: the client's timeout, and the end of a long watch's body.
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::UnexpectedEof => None,
            _ => Some(Err(kube::Error::ReadEvents(e))),
        },
    }
}

/// A body's failure, an `UnexpectedEof` when the stream merely ended early (as kube says it).
fn io_error(e: kube::Error) -> std::io::Error {
    let mut eof = e.to_string().contains("unexpected EOF during chunk");
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    // Bounded, in case a chain of causes loops.
    for _ in 0..16 {
        let Some(c) = cause else { break };
        eof |= c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof);
        cause = c.source();
    }
    match eof {
        true => std::io::Error::new(std::io::ErrorKind::UnexpectedEof, e),
        false => std::io::Error::other(e),
    }
}

/// A failed watch's answer as kube gives it: its Status, or its text as one; read up to
/// [`MAX_ERROR_BODY`].
async fn error_status(code: u16, body: kube::client::Body) -> kube::Error {
    let text = match http_body_util::Limited::new(body, MAX_ERROR_BODY).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(e) => match e.downcast::<kube::Error>() {
            Ok(transport) => return *transport,
            Err(_) => format!("an error answer longer than {} KiB", MAX_ERROR_BODY / 1024),
        },
    };
    match serde_json::from_str::<Status>(&text) {
        Ok(status) => kube::Error::Api(status.boxed()),
        Err(_) => kube::Error::Api(Status::failure(text.trim(), "Failed to parse error data").with_code(code).boxed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::reading::wire::WireLease;

    fn read(line: Result<String, LinesCodecError>) -> Option<Result<WatchEvent<WireLease>, kube::Error>> {
        event(line, "/apis/coordination.k8s.io/v1/namespaces/ns/leases")
    }

    #[test]
    fn a_line_too_long_names_the_limit_and_the_path() {
        let e = read(Err(LinesCodecError::MaxLineLengthExceeded)).unwrap().unwrap_err();
        assert_eq!(
            unreadable(&e).expect("unreadable").to_string(),
            "the API server sent a watch event line longer than the 16 MiB limit \
             (watch of /apis/coordination.k8s.io/v1/namespaces/ns/leases)"
        );
    }

    #[test]
    fn lines_are_read_as_kube_reads_them() {
        let bookmark = r#"{"type":"BOOKMARK","object":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"7"}}}"#;
        assert!(matches!(read(Ok(bookmark.into())), Some(Ok(WatchEvent::Bookmark(_)))));
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}"#;
        assert!(matches!(read(Ok(gone.into())), Some(Ok(WatchEvent::Error(s))) if s.code == 410));
        assert!(read(Ok(r#"{"type":"MODIFIED","object":{"#.into())).is_none(), "an incomplete last line");
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"boom"}"#;
        assert!(matches!(read(Ok(status.into())), Some(Err(kube::Error::Api(s))) if s.code == 500));
        let e = read(Ok("<html>".into())).unwrap().unwrap_err();
        assert!(unreadable(&e).expect("unreadable").to_string().contains("not an event"));
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert!(read(Err(LinesCodecError::Io(eof))).is_none());
    }
}

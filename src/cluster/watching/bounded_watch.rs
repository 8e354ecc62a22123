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

use super::event::{self, Change};
use crate::cluster::connecting::bounds;

/// The longest watch event line read. An event is one object as JSON on one line, and etcd
/// refuses objects over 1.5 MiB, so any real event fits many times over (JSON escaping, a
/// newer server's larger limit); a line that never ends is cut here, long before memory
/// runs out.
pub const MAX_EVENT_LINE: usize = bounds::OBJECT_LIMIT as usize;
/// The most read of a failed watch's answer (a Status is a few hundred bytes).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

pub use crate::cluster::reading::failure::{Broken, Unreadable, unreadable};

fn broken(path: &str, why: Broken) -> kube::Error {
    let unreadable = Unreadable { path: path.to_string(), why };
    kube::Error::ReadEvents(std::io::Error::new(std::io::ErrorKind::InvalidData, unreadable))
}

/// What a follower keeps of each object of a watch (the same as of its list's items).
pub type Keep<K, T> = std::sync::Arc<dyn Fn(K) -> T + Send + Sync>;

/// `api.watch(params, version)`, with its lines bounded by [`MAX_EVENT_LINE`] and its error
/// answer by [`MAX_ERROR_BODY`], each event's object read straight into what `keep` makes of
/// it ([`event::read`]).
pub async fn watch<K, T>(
    api: &Api<K>,
    params: &WatchParams,
    (version, fresh): (&str, bool),
    keep: Keep<K, T>,
) -> Result<impl Stream<Item = Result<Change<T>, kube::Error>> + Send + use<K, T>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + Send + 'static,
    T: Send + 'static,
{
    let mut request =
        kube::core::Request::new(api.resource_url()).watch(params, version).map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("watch");
    if fresh {
        request.extensions_mut().insert(crate::cluster::connecting::credentials::FreshConnection);
    }
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
    Ok(lines.filter_map(move |line| futures::future::ready(event(line, &path, &*keep))))
}

/// One line as an event: read straight into its fact ([`event::read`]); a line that does not
/// read so is read as kube reads it (an envelope whose keys come in another order), or said
/// in kube's words as a failure, but for a line too long or not JSON at all.
fn event<K, T>(
    line: Result<String, LinesCodecError>,
    path: &str,
    keep: &dyn Fn(K) -> T,
) -> Option<Result<Change<T>, kube::Error>>
where
    K: kube::Resource + serde::de::DeserializeOwned,
{
    let versioned = |k: K| (k.meta().resource_version.clone(), keep(k));
    match line {
        Ok(line) => match event::read(&line, &versioned) {
            Ok(change) => Some(Ok(change)),
            Err(_) => slow(&line, path, &versioned),
        },
        Err(LinesCodecError::MaxLineLengthExceeded) => Some(Err(broken(path, Broken::TooLong))),
        Err(LinesCodecError::Io(e)) => match e.kind() {
            // Kube's own: the client's timeout, and the end of a long watch's body.
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::UnexpectedEof => None,
            _ => Some(Err(kube::Error::ReadEvents(e))),
        },
    }
}

/// A line read as kube reads it (`WatchEvent`), its failure said in kube's words.
fn slow<K: serde::de::DeserializeOwned, T>(
    line: &str,
    path: &str,
    versioned: &dyn Fn(K) -> (Option<String>, T),
) -> Option<Result<Change<T>, kube::Error>> {
    let applied = |k| {
        let (version, fact) = versioned(k);
        Change::Applied { version, fact }
    };
    match serde_json::from_str::<WatchEvent<K>>(line) {
        Ok(WatchEvent::Added(k) | WatchEvent::Modified(k)) => Some(Ok(applied(k))),
        Ok(WatchEvent::Deleted(k)) => {
            let (version, fact) = versioned(k);
            Some(Ok(Change::Deleted { version, fact }))
        }
        Ok(WatchEvent::Bookmark(b)) => Some(Ok(Change::Bookmark(b.metadata.resource_version))),
        Ok(WatchEvent::Error(s)) => Some(Ok(Change::Error(s))),
        // An incomplete last line (the body ended mid-line): the watch ended.
        Err(e) if e.is_eof() => None,
        Err(e) if is_envelope(line) => Some(Err(broken(path, Broken::Object(e.to_string())))),
        Err(e) => match serde_json::from_str::<Status>(line) {
            Ok(status) => Some(Err(kube::Error::Api(status.boxed()))),
            Err(_) => Some(Err(broken(path, Broken::NotAnEvent(e.to_string())))),
        },
    }
}

/// Whether a line is a watch event's envelope (a known `type` and an `object`), whatever
/// its object holds.
fn is_envelope(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(rename = "type")]
        kind: String,
        #[allow(dead_code)]
        object: serde::de::IgnoredAny,
    }
    serde_json::from_str::<Envelope>(line).is_ok_and(|e| matches!(e.kind.as_str(), "ADDED" | "MODIFIED" | "DELETED"))
}

/// Whether a failed watch item is an event passed over (its object cannot be read), not a
/// failure of the watch.
pub fn passed_over(e: &kube::Error) -> bool {
    unreadable(e).is_some_and(|u| matches!(u.why, Broken::Object(_)))
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
    use crate::cluster::reading::wire::{self, WireLease, WireWorkload};

    fn read(line: Result<String, LinesCodecError>) -> Option<Result<Change<WireLease>, kube::Error>> {
        event(line, "/apis/coordination.k8s.io/v1/namespaces/ns/leases", &|l: WireLease| l)
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
        assert!(matches!(read(Ok(bookmark.into())), Some(Ok(Change::Bookmark(v))) if v == "7"));
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}"#;
        assert!(matches!(read(Ok(gone.into())), Some(Ok(Change::Error(s))) if s.code == 410));
        assert!(read(Ok(r#"{"type":"MODIFIED","object":{"#.into())).is_none(), "an incomplete last line");
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"boom"}"#;
        assert!(matches!(read(Ok(status.into())), Some(Err(kube::Error::Api(s))) if s.code == 500));
        let e = read(Ok("<html>".into())).unwrap().unwrap_err();
        assert!(unreadable(&e).expect("unreadable").to_string().contains("not an event"));
        assert!(!passed_over(&e), "a line that is no event breaks the watch");
        let odd = r#"{"type":"MODIFIED","object":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"l","resourceVersion":"8"},"spec":{"renewTime":"not a time"}}}"#;
        let e = read(Ok(odd.into())).unwrap().unwrap_err();
        assert!(passed_over(&e), "{e}");
        assert!(
            unreadable(&e).unwrap().to_string().starts_with("passed over a watch event whose object cannot be read (")
        );
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert!(read(Err(LinesCodecError::Io(eof))).is_none());
    }

    #[test]
    fn an_event_read_into_its_fact_is_said_and_passed_over_in_kubes_words() {
        let path = "/apis/kueue.x-k8s.io/v1beta2/workloads";
        let keep = |w: WireWorkload| wire::workload(&w);
        let line = |kind: &str, spec: &str| {
            format!(
                r#"{{"type":"{kind}","object":{{"kind":"Workload","apiVersion":"kueue.x-k8s.io/v1beta2","metadata":{{"name":"w","namespace":"ml","resourceVersion":"9"}},"spec":{spec}}}}}"#
            )
        };
        let applied = event(Ok(line("ADDED", r#"{"queueName":"lq"}"#)), path, &keep).unwrap().unwrap();
        assert!(matches!(applied, Change::Applied { version: Some(v), fact } if v == "9" && fact.name == "w"));
        // Keys in another order than kube-apiserver's: read as kube reads them.
        let turned = r#"{"object":{"metadata":{"name":"t","resourceVersion":"10"}},"type":"DELETED"}"#;
        let deleted = event(Ok(turned.into()), path, &keep).unwrap().unwrap();
        assert!(matches!(deleted, Change::Deleted { version: Some(v), fact } if v == "10" && fact.name == "t"));
        // An object that cannot be read: passed over, in the words kube's reading gives.
        let odd = line("MODIFIED", r#"{"queueName":["not","text"]}"#);
        let kubes = serde_json::from_str::<WatchEvent<WireWorkload>>(&odd).unwrap_err().to_string();
        let e = event(Ok(odd), path, &keep).unwrap().unwrap_err();
        assert!(passed_over(&e));
        assert_eq!(
            unreadable(&e).unwrap().to_string(),
            format!(
                "passed over a watch event whose object cannot be read ({kubes}) (watch of {path}); the watch goes on"
            )
        );
    }
}

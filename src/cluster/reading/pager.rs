//! The one pager of every list the plugin reads: the one-shot reads (`fetch.rs`) and the
//! live modes' list before each watch (`cluster::watching::reflector`) alike. Pages of 500, as
//! kubectl asks. Each page is decoded as it arrives ([`super::items`]): the body's frames go
//! from the runtime to a blocking thread that walks the page's objects one at a time and hands
//! on, in batches, only what the caller keeps of each (`keep`), so a page is never held whole,
//! neither as text nor as values, and its size is not bounded: one object is
//! ([`bounds::OBJECT_LIMIT`]), and one list's objects are ([`bounds::MAX_OBJECTS`]). The next
//! page is asked for the moment the continue token is read (kube-apiserver writes a custom
//! resource's list with `metadata` last), while the caller still works on the last batch. A
//! continue token that expired (410 Gone) starts the list over from its first page, once, as
//! client-go's pager does. A list that does not end is an error: a continue token given twice,
//! or more than [`bounds::MAX_PAGES`] pages. Dropping the pager cancels the page being read.

use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::items::{self, Decoding, Ended, Event, Stopped};
use crate::cluster::connecting::bounds;
use crate::error::size;
use crate::log::Log;

/// Objects a page: kubectl's `--chunk-size` default.
pub const PAGE: u32 = 500;

/// The most read of a failed list's answer (a Status is a few hundred bytes).
const MAX_ERROR_BODY: usize = 64 << 10;

/// Bytes of a body held between the runtime and the decoder. A page of 500 ordinary Workloads
/// (a few MB) is thus read off the connection at the network's pace, so `--request-timeout`
/// bounds its transfer as kubectl's does, not the plugin's decoding; past it (a page of heavy
/// objects), the body is read at the decoder's pace (HTTP/2 flow control, TCP's window).
const BODY_AHEAD: usize = 16 << 20;

/// A batch of what a list's objects kept, in the server's order. A page comes as one or
/// more batches ([`items::BATCH`] objects each); the last one of a page has its version.
pub struct Page<T> {
    /// What the caller keeps of the objects that read. One that could not be read is left
    /// out, and said on stderr (`Warning: cannot read KIND NS/NAME, left out: ...`, the first
    /// [`items::WARNED`] of a list; then `Warning: ... and N more unreadable KINDs left out`).
    pub items: Vec<T>,
    /// The list started over from its first page (the continue token expired): whatever the
    /// earlier pages gave is to be dropped.
    pub restarted: bool,
    /// The list's resourceVersion, on the last batch of each page: a watch goes on from the
    /// last one's.
    pub resource_version: Option<String>,
}

/// Why a list stopped.
#[derive(Debug)]
pub enum Failed {
    /// A request or its answer failed (an error status, the transport, a page that is no
    /// list): what that means is the caller's to say.
    Request(kube::Error),
    /// The list does not end ([`bounds::MAX_PAGES`], a continue token given twice), or holds
    /// an object or a number of objects past its bound: the error's text, naming the bound
    /// and the list's path.
    Bound(String),
}

/// What one page's reading hands on, in order.
enum Said<T> {
    Event(Event<T>),
    Ended(Ended<T>),
    /// The request or its body failed.
    Failed(kube::Error),
    Stopped(Stopped),
}

type Keep<K, T> = Arc<dyn Fn(K) -> T + Send + Sync>;

/// A page's request under way on the runtime, its body decoded on a blocking thread.
/// Dropping it (the list ended early, or failed) cancels the request, and with it the decoder
/// (its frames stop, or nobody takes its facts), so no read outlives the pager that asked.
struct PendingPage<T> {
    params: ListParams,
    started: Instant,
    said: mpsc::Receiver<Said<T>>,
    task: tokio::task::JoinHandle<()>,
}

impl<T> Drop for PendingPage<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One list, read page by page.
pub struct Pager<K, T = K> {
    api: Api<K>,
    keep: Keep<K, T>,
    /// The objects listed, as errors name them ("Workloads", "Leases").
    what: String,
    /// The page to ask for next, when it has not been asked for yet.
    next: Option<ListParams>,
    /// The page being read.
    reading: Option<PendingPage<T>>,
    /// Whether to ask for the next page (off for a probe, which reads one page only).
    ahead: bool,
    /// The list already started over once, after its continue token expired.
    restarted: bool,
    /// The continue tokens given so far (hashed): a token given twice, or more than
    /// [`bounds::MAX_PAGES`] of them, is a list that does not end.
    tokens: HashSet<u64>,
    /// Objects of the pages read whole ([`bounds::MAX_OBJECTS`]).
    seen: usize,
    /// Unreadable objects said one by one, and those only counted.
    said: usize,
    unsaid: usize,
}

impl<K> Pager<K, K>
where
    K: kube::Resource + Clone + DeserializeOwned + Send + 'static,
{
    /// Every page of `api` as `params` (its selectors) ask, [`PAGE`] objects a page, each
    /// object kept whole.
    pub fn new(api: Api<K>, what: &str, params: ListParams) -> Self {
        Pager::keeping(api, what, params, |k| k)
    }

    /// The first page of `limit` objects and nothing after it (a server that sends more is
    /// read as it sends them).
    pub fn first_page(api: Api<K>, what: &str, limit: u32) -> Self {
        Pager {
            next: Some(ListParams::default().limit(limit)),
            ahead: false,
            ..Pager::new(api, what, ListParams::default())
        }
    }
}

impl<K, T> Pager<K, T>
where
    K: kube::Resource + Clone + DeserializeOwned + Send + 'static,
    T: Send + 'static,
{
    /// Every page of `api` as `params` ask, keeping what `keep` makes of each object.
    pub fn keeping(api: Api<K>, what: &str, params: ListParams, keep: impl Fn(K) -> T + Send + Sync + 'static) -> Self {
        Pager {
            api,
            keep: Arc::new(keep),
            what: what.to_string(),
            next: Some(params.limit(PAGE)),
            reading: None,
            ahead: true,
            restarted: false,
            tokens: HashSet::new(),
            seen: 0,
            said: 0,
            unsaid: 0,
        }
    }

    /// The list's path, for messages.
    pub fn path(&self) -> String {
        self.api.resource_url().to_string()
    }

    /// The objects' kind, as warnings name them.
    fn kind(&self) -> String {
        self.what.strip_suffix('s').unwrap_or(&self.what).to_string()
    }

    /// Sends the request for one page on the runtime; its body's frames go to a decoder on a
    /// blocking thread as they arrive.
    fn ask(&self, params: ListParams) -> PendingPage<T> {
        let client = self.api.clone().into_client();
        let request = kube::core::Request::new(self.api.resource_url()).list(&params);
        let (tx, said) = mpsc::channel(4);
        let (keep, kind, seen, already) = (self.keep.clone(), self.kind(), self.seen, self.said);
        let task = tokio::spawn(async move {
            let body = match request {
                Ok(mut request) => {
                    request.extensions_mut().insert(bounds::Streamed);
                    answer(&client, request).await
                }
                Err(e) => Err(kube::Error::BuildRequest(e)),
            };
            let body = match body {
                Ok(body) => body,
                Err(e) => return drop(tx.send(Said::Failed(e)).await),
            };
            let (frames, arriving) = mpsc::unbounded_channel();
            let room = Arc::new(tokio::sync::Semaphore::new(BODY_AHEAD));
            let (decoder, freed) = (tx.clone(), room.clone());
            // Detached: it ends when its frames end or nobody takes what it says.
            drop(tokio::task::spawn_blocking(move || {
                let reader = Frames { arriving, chunk: Bytes::new(), room: freed };
                let decoding = Decoding { kind: &kind, seen, said: already, keep: &*keep };
                let ended = items::decode(reader, &decoding, &mut |e| decoder.blocking_send(Said::Event(e)).is_ok());
                let _ = decoder.blocking_send(match ended {
                    Ok(ended) => Said::Ended(ended),
                    Err(stopped) => Said::Stopped(stopped),
                });
            }));
            pump(body, frames, &room, &tx).await;
        });
        PendingPage { params, started: Instant::now(), said, task }
    }

    /// The next batch; `None` once the list is done. After a failure the list is over. Each
    /// page's request is logged at `-v 6` as `LIST URL CODE in Nms` once its body is read.
    pub async fn next(&mut self, log: &Log) -> Result<Option<Page<T>>, Failed> {
        let mut restarted = false;
        loop {
            if self.reading.is_none() {
                let Some(params) = self.next.take() else { return Ok(None) };
                self.reading = Some(self.ask(params));
            }
            let said = match self.reading.as_mut() {
                Some(reading) => reading.said.recv().await,
                None => None,
            };
            match said {
                Some(Said::Event(Event::Items(items))) => {
                    return Ok(Some(Page { items, restarted, resource_version: None }));
                }
                Some(Said::Event(Event::Unreadable(line))) => {
                    self.said += 1;
                    log.stderr().ours(&format!("Warning: {}", crate::text::sanitize::escape(&line)));
                }
                Some(Said::Ended(ended)) => return self.ended(ended, restarted, log).map(Some),
                Some(Said::Failed(e)) => {
                    let reading = self.reading.take().expect("a page was being read");
                    self.logged(log, &reading.params, &code(&e), reading.started.elapsed());
                    if !self.restart(&e, &reading.params, log) {
                        return Err(Failed::Request(e));
                    }
                    restarted = true;
                }
                Some(Said::Stopped(stopped)) => {
                    self.reading = None;
                    return Err(self.stopped(stopped));
                }
                None => {
                    self.reading = None;
                    let gone = std::io::Error::other(format!("the reading of the {} list stopped", self.what));
                    return Err(Failed::Request(kube::Error::ReadEvents(gone)));
                }
            }
        }
    }

    /// A continue token that expired (410 Gone) starts the list over from its first page,
    /// once: whether this failure did.
    fn restart(&mut self, e: &kube::Error, params: &ListParams, log: &Log) -> bool {
        let expired = matches!(e, kube::Error::Api(s) if s.code == 410);
        if !expired || params.continue_token.is_none() || self.restarted {
            return false;
        }
        log.info(
            1,
            &format!("the {} list's continue token expired (410 Gone); listing again from the first page", self.what),
        );
        self.restarted = true;
        self.tokens.clear();
        self.seen = 0;
        self.next = Some(ListParams { continue_token: None, ..params.clone() });
        true
    }

    /// A page read to its end: the next one asked for, or the list's last said.
    fn ended(&mut self, ended: Ended<T>, restarted: bool, log: &Log) -> Result<Page<T>, Failed> {
        let reading = self.reading.take().expect("a page was being read");
        self.logged(log, &reading.params, "200", reading.started.elapsed());
        self.seen += ended.count;
        self.unsaid += ended.unsaid;
        match &ended.head.token {
            Some(token) if self.ahead => {
                self.endless(token)?;
                self.reading = Some(self.ask(reading.params.clone().continue_token(token)));
            }
            _ if self.unsaid > 0 => {
                let line = format!("... and {} more unreadable {} left out", self.unsaid, self.what);
                log.stderr().ours(&format!("Warning: {line}"));
            }
            _ => {}
        }
        Ok(Page { items: ended.items, restarted, resource_version: ended.head.resource_version })
    }

    fn stopped(&self, stopped: Stopped) -> Failed {
        let path = self.api.resource_url();
        match stopped {
            Stopped::Json(e) => Failed::Request(kube::Error::SerdeError(e)),
            Stopped::ObjectTooLarge => Failed::Bound(format!(
                "the API server's {} list at {path} holds an object larger than {}, the bound on one object (after decompression); kubectl-dispatch stopped reading it",
                self.what,
                size(bounds::OBJECT_LIMIT)
            )),
            Stopped::TooMany => Failed::Bound(format!(
                "the API server's {} list at {path} holds more than {} objects, the bound on one list",
                self.what,
                bounds::MAX_OBJECTS
            )),
            Stopped::Cancelled => {
                Failed::Bound(format!("the reading of the {} list at {path} was cancelled", self.what))
            }
        }
    }

    fn logged(&self, log: &Log, params: &ListParams, code: &str, took: Duration) {
        log.info(
            6,
            &format!(
                "LIST {}?limit={}{} {code} in {}ms",
                self.api.resource_url(),
                params.limit.unwrap_or(PAGE),
                if params.continue_token.is_some() { "&continue=..." } else { "" },
                took.as_millis()
            ),
        );
    }

    /// Refuses a continue token given before (the list would go round for ever) and a list
    /// past [`bounds::MAX_PAGES`] pages.
    fn endless(&mut self, token: &str) -> Result<(), Failed> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let hash = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(token);
        let path = self.api.resource_url();
        if !self.tokens.insert(hash) {
            return Err(Failed::Bound(format!(
                "the API server's {} list at {path} does not end: page {} gave the same continue token as an earlier page",
                self.what,
                self.tokens.len() + 1
            )));
        }
        if self.tokens.len() >= bounds::MAX_PAGES {
            return Err(Failed::Bound(format!(
                "the API server's {} list at {path} did not end within {} pages, the bound on one list",
                self.what,
                bounds::MAX_PAGES
            )));
        }
        Ok(())
    }
}

fn code(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.code.to_string(),
        _ => "failed".to_string(),
    }
}

/// The list's answer: its body to read, or the error it is (a Status, as kube reads one).
async fn answer(client: &kube::Client, request: http::Request<Vec<u8>>) -> Result<kube::client::Body, kube::Error> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status();
    if !status.is_client_error() && !status.is_server_error() {
        return Ok(response.into_body());
    }
    let text = match http_body_util::Limited::new(response.into_body(), MAX_ERROR_BODY).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(e) => match e.downcast::<kube::Error>() {
            Ok(transport) => return Err(*transport),
            Err(_) => format!("an error answer longer than {}", size(MAX_ERROR_BODY as u64)),
        },
    };
    let status = match serde_json::from_str::<kube::core::Status>(&text) {
        Ok(s) => s,
        Err(_) => kube::core::Status::failure(text.trim(), "Failed to parse error data").with_code(status.as_u16()),
    };
    Err(kube::Error::Api(status.boxed()))
}

/// Passes a body's frames on to the decoder as they arrive, at most [`BODY_AHEAD`] bytes
/// ahead of it; a failure is said ahead of whatever the decoder makes of the body cut short.
async fn pump<T>(
    mut body: kube::client::Body,
    frames: mpsc::UnboundedSender<Bytes>,
    room: &tokio::sync::Semaphore,
    said: &mpsc::Sender<Said<T>>,
) {
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else { continue };
                let Ok(taken) = room.acquire_many(held(data.len())).await else { return };
                taken.forget();
                if frames.send(data).is_err() {
                    return;
                }
            }
            Some(Err(e)) => return drop(said.send(Said::Failed(e)).await),
            None => return,
        }
    }
}

/// The room a chunk of `len` bytes takes (a chunk larger than the whole room takes it all).
fn held(len: usize) -> u32 {
    u32::try_from(len.min(BODY_AHEAD)).unwrap_or(u32::MAX)
}

/// A body's frames as a blocking reader: its end is the channel's. Each chunk read whole
/// gives its room back.
struct Frames {
    arriving: mpsc::UnboundedReceiver<Bytes>,
    chunk: Bytes,
    room: Arc<tokio::sync::Semaphore>,
}

impl Read for Frames {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.arriving.blocking_recv() {
                Some(chunk) => {
                    self.room.add_permits(held(chunk.len()) as usize);
                    self.chunk = chunk;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk.advance(n);
        Ok(n)
    }
}

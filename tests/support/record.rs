//! Recording the real kube-apiserver's answers for the fast tier: a loopback proxy in the test
//! process, between the plugin and `kubectl proxy --context CONTEXT` (which talks to the test
//! cluster as that context's user), that passes each request on and keeps it with its answer:
//! status, the headers the plugin reads, and the body frame by frame with the time each came.
//! The plugin is unchanged: it is pointed at the proxy by its kubeconfig, like any server.
//!
//! `Accept-Encoding` is not passed on, so bodies are kept as the server wrote them.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::jiff::Timestamp;

use super::Cluster;
use super::script::{self, Chunk, End, Exchange, Script};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// The headers a recording keeps: the ones the plugin reads.
const KEPT_HEADERS: [&str; 3] = ["content-type", "warning", "retry-after"];

pub struct Recorder {
    /// `127.0.0.1:PORT`
    pub addr: String,
    context: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    proxy: Child,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One request and its answer as it streams.
struct Seen {
    method: String,
    uri: String,
    request: Option<serde_json::Value>,
    status: u16,
    headers: BTreeMap<String, String>,
    frames: Vec<(u64, Bytes)>,
    end: Option<End>,
}

impl Recorder {
    /// A recorder for the cluster's `context`, through its own `kubectl proxy`.
    pub fn start(c: &Cluster, context: &str) -> Recorder {
        let mut proxy = c
            .command("kubectl", &["proxy", "--port=0", "--address=127.0.0.1", "--context", context])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kubectl proxy");
        let upstream = super::forward::read_serving(proxy.stdout.take().unwrap());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let addr = listener.local_addr().unwrap().to_string();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let kept = seen.clone();
        let thread = std::thread::spawn(move || serve(listener, upstream, kept, stopped));
        Recorder { addr, context: context.to_string(), seen, proxy, stop: Some(stop), thread: Some(thread) }
    }

    /// A kubeconfig whose one context, named as the recorded one, talks to the recorder.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {ctx}\nclusters:\n- name: recorder\n  cluster:\n    server: http://{}\n\
             users:\n- name: recorder\n  user: {{}}\ncontexts:\n- name: {ctx}\n  context:\n    cluster: recorder\n    user: recorder\n",
            self.addr,
            ctx = self.context
        )
    }

    /// How many watches have been answered so far.
    pub fn watches(&self) -> usize {
        self.seen.lock().unwrap().iter().filter(|s| script::is_watch(&s.uri)).count()
    }

    /// Forgets what was seen so far.
    pub fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }

    /// What was seen so far as a script of `command`, begun at `started`: times moved so it
    /// began at [`script::EPOCH`], watch bodies split into event lines, anything still open
    /// when the client left ending in [`End::Hold`]; a request made again (by a second run of
    /// the command in another format) kept once, as first answered.
    pub fn script(&self, command: &[&str], started: Timestamp) -> Script {
        let by = script::epoch().duration_since(started);
        let seen = self.seen.lock().unwrap();
        let mut keys = std::collections::HashSet::new();
        let exchanges = seen.iter().map(|s| exchange(s, by)).filter(|e| e.is_watch() || keys.insert(e.key())).collect();
        Script { command: command.iter().map(|s| s.to_string()).collect(), context: self.context.clone(), exchanges }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = self.proxy.kill();
        let _ = self.proxy.wait();
    }
}

fn exchange(s: &Seen, by: k8s_openapi::jiff::SignedDuration) -> Exchange {
    let mut e = Exchange {
        method: s.method.clone(),
        uri: s.uri.clone(),
        request: s.request.clone(),
        status: s.status,
        headers: s.headers.clone(),
        end: s.end.unwrap_or(End::Hold),
        ..Exchange::default()
    };
    let whole: Vec<u8> = s.frames.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    if !script::is_watch(&s.uri) || s.status != 200 {
        match serde_json::from_slice::<serde_json::Value>(&whole) {
            Ok(json) => e.body = Some(script::shifted(&json, by)),
            Err(_) if whole.is_empty() => {}
            Err(_) => e.text = Some(String::from_utf8_lossy(&whole).into_owned()),
        }
        return e;
    }
    // A watch: each line at the time of the frame that ended it.
    let mut pending: Vec<u8> = Vec::new();
    for (at, frame) in &s.frames {
        pending.extend_from_slice(frame);
        while let Some(nl) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            let chunk = match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(json) => Chunk { at_ms: *at, line: Some(script::shifted(&json, by)), text: None },
                Err(_) => Chunk { at_ms: *at, line: None, text: Some(String::from_utf8_lossy(&line).into_owned()) },
            };
            e.chunks.push(chunk);
        }
    }
    if !pending.is_empty() {
        e.chunks.push(Chunk {
            at_ms: s.frames.last().map_or(0, |f| f.0),
            line: None,
            text: Some(String::from_utf8_lossy(&pending).into_owned()),
        });
    }
    e
}

fn serve(
    listener: std::net::TcpListener,
    upstream: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("recorder runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        loop {
            let stream = tokio::select! {
                _ = &mut stopped => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let (seen, client, upstream) = (seen.clone(), client.clone(), upstream.clone());
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req| pass_on(req, upstream.clone(), client.clone(), seen.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    runtime.shutdown_background();
}

type Upstream = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn pass_on(
    req: Request<Incoming>,
    upstream: String,
    client: Upstream,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let uri = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let mut out = Request::builder().method(parts.method.clone()).uri(format!("http://{upstream}{uri}"));
    for (name, value) in &parts.headers {
        if name != "host" && name != "accept-encoding" {
            out = out.header(name, value);
        }
    }
    let answer = match client.request(out.body(Full::new(body.clone())).unwrap()).await {
        Ok(answer) => answer,
        Err(e) => {
            let body =
                Full::new(Bytes::from(format!("recorder: {e}"))).map_err(|n: Infallible| match n {}).boxed_unsync();
            return Ok(Response::builder().status(502).body(body).unwrap());
        }
    };
    let started = Instant::now();
    let headers: BTreeMap<String, String> = answer
        .headers()
        .iter()
        .filter(|(n, _)| KEPT_HEADERS.contains(&n.as_str()))
        .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let request = (!body.is_empty())
        .then(|| serde_json::from_slice(&body).unwrap_or_else(|_| String::from_utf8_lossy(&body).into()));
    let index = {
        let mut list = seen.lock().unwrap();
        list.push(Seen {
            method: parts.method.to_string(),
            uri,
            request,
            status: answer.status().as_u16(),
            headers,
            frames: Vec::new(),
            end: None,
        });
        list.len() - 1
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            response = response.header(name, value);
        }
    }
    let body = answer.into_body();
    let stream = futures::stream::unfold((body, seen, false), move |(mut body, seen, done)| async move {
        if done {
            return None;
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    seen.lock().unwrap()[index].frames.push((started.elapsed().as_millis() as u64, data.clone()));
                }
                Some((Ok(frame), (body, seen, false)))
            }
            Some(Err(e)) => {
                seen.lock().unwrap()[index].end = Some(End::Cut);
                Some((Err(std::io::Error::other(e)), (body, seen, true)))
            }
            None => {
                seen.lock().unwrap()[index].end = Some(End::Close);
                None
            }
        }
    });
    Ok(response.body(BodyExt::boxed_unsync(StreamBody::new(stream))).unwrap())
}

//! The fast tier's API: a hyper server on 127.0.0.1 inside the test process, answering from a
//! [`Script`] (recorded from the real kube-apiserver by [`super::record`], or a recording
//! changed by the test into an answer no real server gives: silence, a cut, a delay).
//!
//! A request is matched by [`super::script::key`]; a key asked again gets its next recorded
//! answer, then the last one again. A request the script has no answer for gets a 404 and is
//! kept, so [`Replay::expect_all_answered`] fails naming it: a recording that no longer covers
//! what the plugin asks must be recorded again, not guessed.
//!
//! The server runs on a thread of its own (its own runtime) and stops when this value drops.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};

use super::script::{self, End, Exchange, Script};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

pub struct Replay {
    /// `127.0.0.1:PORT`
    pub addr: String,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// Each key's answers, and how many times it was asked.
    answers: Mutex<HashMap<String, (Vec<Exchange>, usize)>>,
    seen: Mutex<Vec<String>>,
    misses: Mutex<Vec<String>>,
}

impl Replay {
    pub fn start(script: &Script) -> Replay {
        let state = Arc::new(State::default());
        {
            let mut answers = state.answers.lock().unwrap();
            for e in &script.exchanges {
                answers.entry(e.key()).or_default().0.push(e.clone());
            }
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the replay server");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let served = state.clone();
        let thread = std::thread::spawn(move || serve(listener, served, stopped));
        Replay { addr, state, stop: Some(stop), thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig whose one context, `context` (the current one), talks to this server.
    pub fn kubeconfig(&self, context: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: replay\n  cluster:\n    server: {}\n\
             users:\n- name: replay\n  user: {{}}\ncontexts:\n- name: {context}\n  context:\n    cluster: replay\n    user: replay\n",
            self.url()
        )
    }

    /// The keys of the requests received so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.state.seen.lock().unwrap().clone()
    }

    /// Panics naming every request the script had no answer for.
    pub fn expect_all_answered(&self) {
        let misses = self.state.misses.lock().unwrap();
        assert!(
            misses.is_empty(),
            "the recording has no answer for:\n  {}\n(record again: DISPATCH_RECORD=1 cargo test --test e2e_recorded)",
            misses.join("\n  ")
        );
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: std::net::TcpListener, state: Arc<State>, mut stopped: tokio::sync::oneshot::Receiver<()>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("replay runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        loop {
            let stream = tokio::select! {
                _ = &mut stopped => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let state = state.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| answer(state.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    // Connections still held open (a silent watch) end with the runtime.
    runtime.shutdown_background();
}

async fn answer(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let method = req.method().to_string();
    let uri = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let request = (!body.is_empty())
        .then(|| serde_json::from_slice(&body).unwrap_or_else(|_| String::from_utf8_lossy(&body).into()));
    let key = script::key(&method, &uri, request.as_ref());
    state.seen.lock().unwrap().push(key.clone());
    let found = {
        let mut answers = state.answers.lock().unwrap();
        answers.get_mut(&key).map(|(list, asked)| {
            let e = list[(*asked).min(list.len() - 1)].clone();
            *asked += 1;
            e
        })
    };
    let Some(exchange) = found else {
        state.misses.lock().unwrap().push(key.clone());
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": format!("no recorded answer for {key}"), "reason": "NotFound", "code": 404});
        let body = Full::new(Bytes::from(status.to_string())).map_err(|e: Infallible| match e {}).boxed_unsync();
        return Ok(Response::builder().status(404).header("content-type", "application/json").body(body).unwrap());
    };
    if exchange.headers_after_ms > 0 {
        tokio::time::sleep(Duration::from_millis(exchange.headers_after_ms)).await;
    }
    let mut response = Response::builder().status(exchange.status);
    for (name, value) in &exchange.headers {
        response = response.header(name, value);
    }
    Ok(response.body(body_of(&exchange)).unwrap())
}

/// The exchange's body: whole, or its chunks at their times, then its end.
fn body_of(e: &Exchange) -> Body {
    let whole = match (&e.body, &e.text) {
        (Some(json), _) => Some(Bytes::from(json.to_string())),
        (None, Some(text)) => Some(Bytes::from(text.clone())),
        (None, None) => None,
    };
    if e.chunks.is_empty() && e.end == End::Close {
        return Full::new(whole.unwrap_or_default()).map_err(|never: Infallible| match never {}).boxed_unsync();
    }
    let mut pieces: Vec<(u64, Bytes)> = whole.into_iter().map(|b| (0, b)).collect();
    for c in &e.chunks {
        let bytes = match (&c.line, &c.text) {
            (Some(line), _) => Bytes::from(format!("{line}\n")),
            (None, Some(text)) => Bytes::from(text.clone()),
            (None, None) => Bytes::new(),
        };
        pieces.push((c.at_ms, bytes));
    }
    let end = e.end;
    let start = tokio::time::Instant::now();
    let stream = futures::stream::unfold((pieces.into_iter(), false), move |(mut rest, ended)| async move {
        if ended {
            return None;
        }
        if let Some((at, bytes)) = rest.next() {
            tokio::time::sleep_until(start + Duration::from_millis(at)).await;
            return Some((Ok(Frame::data(bytes)), (rest, false)));
        }
        match end {
            End::Close => None,
            End::Hold => std::future::pending().await,
            End::Cut => {
                // Time for the chunks before it to leave, as a network that fails after them.
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((Err(std::io::Error::other("the script cuts the connection here")), (rest, true)))
            }
        }
    });
    BodyExt::boxed_unsync(StreamBody::new(stream))
}

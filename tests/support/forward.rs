//! Two small loopback forwarders a test puts between the plugin and the test cluster, to break
//! or pace the plugin's connections at chosen moments (no mock: the real API server answers).
//!
//! [`Cutter`] passes TLS through untouched and can cut every open connection at once, as a
//! network that drops them does, while the API server keeps running; or silence them
//! ([`Cutter::freeze`]): no byte passes either way and neither socket closes, as with a dropped
//! NAT entry or a dead load-balancer backend, while new connections pass.
//! [`Pager`] sits in front of `kubectl proxy` (plain HTTP), sees each request line, and runs a
//! hook once, before the first request that carries a list's `continue` token (or, with
//! [`Pager::start_before`], the first request a test chooses) is passed on.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Cluster;

/// A TLS pass-through to `target` (`127.0.0.1:PORT`) whose connections can be cut.
pub struct Cutter {
    pub addr: String,
    open: Arc<Mutex<Vec<TcpStream>>>,
    /// While set, every new connection is closed at once: the network is down.
    down: Arc<std::sync::atomic::AtomicBool>,
    /// Connections numbered below this pass no byte any more (and stay open).
    frozen_below: Arc<std::sync::atomic::AtomicU64>,
    /// How many connections were accepted.
    accepted: Arc<std::sync::atomic::AtomicU64>,
}

impl Cutter {
    pub fn start(target: &str) -> Cutter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the forwarder");
        let addr = listener.local_addr().unwrap().to_string();
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let down: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let frozen_below: Arc<std::sync::atomic::AtomicU64> = Arc::default();
        let accepted: Arc<std::sync::atomic::AtomicU64> = Arc::default();
        let (target, kept, cut_off) = (target.to_string(), open.clone(), down.clone());
        let (frozen, count) = (frozen_below.clone(), accepted.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                if cut_off.load(std::sync::atomic::Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else { continue };
                let id = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut list = kept.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                drop(list);
                let silenced = Silenced { id, below: frozen.clone() };
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap(), silenced.clone());
                pipe(server, client, silenced);
            }
        });
        Cutter { addr, open, down, frozen_below, accepted }
    }

    /// Silences every connection open now: from here on none of them passes a byte either way,
    /// and none is closed. Connections made later pass as before.
    pub fn freeze(&self) {
        let n = self.accepted.load(std::sync::atomic::Ordering::SeqCst);
        self.frozen_below.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// `https://127.0.0.1:PORT`: the API server through this forwarder (its certificate names
    /// 127.0.0.1, so any port verifies).
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Cuts every connection and closes each new one at once until [`Cutter::restore`]: an
    /// outage of the network while the API server (and whoever renews the Lease) goes on.
    pub fn cut_off(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cut();
    }

    pub fn restore(&self) {
        self.down.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Closes every connection open now; new ones are still accepted.
    pub fn cut(&self) -> usize {
        let mut open = self.open.lock().unwrap();
        for s in open.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let n = open.len() / 2;
        open.clear();
        n
    }
}

/// Whether a connection was silenced by [`Cutter::freeze`].
#[derive(Clone)]
struct Silenced {
    id: u64,
    below: Arc<std::sync::atomic::AtomicU64>,
}

impl Silenced {
    fn now(&self) -> bool {
        self.id < self.below.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream, silenced: Silenced) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        let _ = from.set_read_timeout(Some(Duration::from_millis(200)));
        loop {
            if silenced.now() {
                // Nothing passes and nothing closes: both sockets are held until the test ends.
                let _keep = (from, to);
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
                Ok(n) => {
                    if silenced.now() {
                        continue;
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// `kubectl proxy` on loopback (plain HTTP, as the cluster's admin), and a forwarder in front
/// of it that sees every request line and runs `before_continue` once, just before the first
/// request carrying a `continue` token goes on.
pub struct Pager {
    proxy: Child,
    pub addr: String,
    /// Every request line seen, in order (`GET /apis/...?limit=500 HTTP/1.1`).
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl Pager {
    pub fn start(c: &Cluster, before_continue: impl FnOnce() + Send + 'static) -> Pager {
        Pager::start_before(c, |request| request.contains("continue="), before_continue)
    }

    /// As [`Pager::start`], with `hook` run once just before the first request whose request
    /// line `chosen` picks goes on (a hook that sleeps makes that one answer slow).
    pub fn start_before(
        c: &Cluster,
        chosen: impl Fn(&str) -> bool + Send + Sync + 'static,
        hook: impl FnOnce() + Send + 'static,
    ) -> Pager {
        let mut proxy = c
            .command("kubectl", &["proxy", "--port=0", "--address=127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kubectl proxy");
        let upstream = read_serving(proxy.stdout.take().unwrap());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the forwarder");
        let addr = listener.local_addr().unwrap().to_string();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = requests.clone();
        let hook: Hook = Arc::new(Mutex::new(Some(Box::new(hook))));
        let chosen: Chosen = Arc::new(chosen);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let (upstream, seen, hook, chosen) = (upstream.clone(), seen.clone(), hook.clone(), chosen.clone());
                std::thread::spawn(move || serve(client, &upstream, &seen, (&*chosen, &hook)));
            }
        });
        Pager { proxy, addr, requests }
    }

    /// A kubeconfig (written to `path`) whose one context talks to the cluster through here.
    pub fn kubeconfig(&self, path: &std::path::Path) {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: paced\n  cluster:\n    server: http://{}\n\
             users:\n- name: paced\n  user: {{}}\ncontexts:\n- name: paced\n  context:\n    cluster: paced\n    user: paced\n\
             current-context: paced\n",
            self.addr
        );
        std::fs::write(path, text).expect("write the kubeconfig");
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = self.proxy.kill();
        let _ = self.proxy.wait();
    }
}

/// `127.0.0.1:PORT` from kubectl proxy's "Starting to serve on 127.0.0.1:PORT".
pub fn read_serving(stdout: std::process::ChildStdout) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut reader = std::io::BufReader::new(stdout);
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(addr) = line.trim().strip_prefix("Starting to serve on ") {
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
            return addr.to_string();
        }
    }
    panic!("kubectl proxy did not say where it serves: {line:?}");
}

type Hook = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;
type ChosenFn = dyn Fn(&str) -> bool + Send + Sync;
type Chosen = Arc<ChosenFn>;

/// One connection: one request (asked to close after its response), passed on whole.
fn serve(mut client: TcpStream, upstream: &str, seen: &Mutex<Vec<String>>, (chosen, hook): (&ChosenFn, &Hook)) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or_default().to_string();
    if chosen(&request)
        && let Some(run) = hook.lock().unwrap().take()
    {
        run();
    }
    seen.lock().unwrap().push(request.clone());
    let mut out = format!("{request}\r\n");
    for l in lines.filter(|l| !l.is_empty() && !l.to_lowercase().starts_with("connection:")) {
        out.push_str(l);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    let Ok(mut server) = TcpStream::connect(upstream) else { return };
    if server.write_all(out.as_bytes()).is_err() {
        return;
    }
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(Shutdown::Both);
}

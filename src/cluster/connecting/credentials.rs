//! The transport at the bottom of the stack: one HTTP client, or, for a user whose credential
//! comes from an exec plugin, the client and the credential of the moment. A credential with an
//! `expirationTimestamp` is fetched again before it lapses; a new client certificate gets a new
//! HTTP client (the old connections were made with the old certificate and go with it, as
//! client-go closes them); a 401 makes the next request fetch a new one.
//!
//! A `tokenFile` (a kubeconfig's, or the in-cluster service account's, which the kubelet
//! rotates) is read as client-go's `NewCachedFileTokenSource` reads it: trimmed, an empty or
//! unreadable file refused at the start, re-read once the token read is 50 s old (client-go's
//! one-minute period less its ten seconds of leeway), and the last token kept when a re-read
//! fails or finds the file empty. Beyond client-go, a 401 makes the next request read it
//! again at once rather than up to 50 s later: a live mode retries a later 401 once, and that
//! retry carries a token rotated since (client-go's `kubectl get -w` ends at the 401).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::header::{AUTHORIZATION, HeaderValue};
use http::{Request, Response};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Config;
use kube::client::{Body, ConfigExt};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceExt};

use super::deadline::Deadline;
use super::exec::{Credential, ExecError, ExecPlugin};
use super::local_file;
use crate::error::Error;

/// One HTTP client, ready to send: hyper's, behind the per-request bound.
pub type HttpService =
    BoxCloneSyncService<http::Request<kube::client::Body>, http::Response<Deadline<hyper::body::Incoming>>, BoxError>;

/// Builds an [`HttpService`] for a TLS client configuration (a new one when an exec plugin
/// hands out a new client certificate).
pub type MakeHttp = Arc<dyn Fn(rustls::ClientConfig) -> HttpService + Send + Sync>;

#[derive(Clone)]
pub struct Transport(Arc<Inner>);

/// A request extension: send this request on a new connection, and every later request too
/// (the HTTP client of the moment, and its pool of connections, is replaced). The live modes
/// mark the read that confirms a stale Lease and the watch started again after a silent one,
/// since the connection a watch held may be the dead one, and HTTP/2 sends every request over it.
#[derive(Debug, Clone, Copy)]
pub struct FreshConnection;

enum Inner {
    Fixed(Pool),
    Exec(Box<ExecState>),
    TokenFile(Pool, TokenFile),
}

/// The HTTP client of the moment, and how to make another ([`FreshConnection`]).
struct Pool {
    make: MakeHttp,
    tls: rustls::ClientConfig,
    http: std::sync::Mutex<HttpService>,
}

impl Pool {
    fn new(make: MakeHttp, tls: rustls::ClientConfig) -> Pool {
        let http = std::sync::Mutex::new(make(tls.clone()));
        Pool { make, tls, http }
    }

    /// The client to send on: a new one first when `fresh`.
    fn take(&self, fresh: bool) -> HttpService {
        let mut http = self.http.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if fresh {
            *http = (self.make)(self.tls.clone());
        }
        http.clone()
    }
}

fn fresh<B>(req: &Request<B>) -> bool {
    req.extensions().get::<FreshConnection>().is_some()
}

struct ExecState {
    plugin: ExecPlugin,
    config: Config,
    make: MakeHttp,
    current: tokio::sync::Mutex<Current>,
}

struct Current {
    credential: Credential,
    obtained: Timestamp,
    http: HttpService,
    /// The server said 401 to this credential: fetch anew before the next request.
    rejected: bool,
    /// Counts the credentials fetched, so a 401 to an older one changes nothing.
    generation: u64,
}

impl Transport {
    pub fn fixed(make: MakeHttp, tls: rustls::ClientConfig) -> Transport {
        Transport(Arc::new(Inner::Fixed(Pool::new(make, tls))))
    }

    /// A client that sends the token of `file`, read as client-go reads it.
    pub fn token_file(make: MakeHttp, tls: rustls::ClientConfig, file: TokenFile) -> Transport {
        Transport(Arc::new(Inner::TokenFile(Pool::new(make, tls), file)))
    }

    pub fn exec(plugin: ExecPlugin, first: Credential, config: Config, make: MakeHttp) -> Result<Transport, Error> {
        let http = make(tls_for(&config, &first, &plugin.command())?);
        let current = Current { credential: first, obtained: Timestamp::now(), http, rejected: false, generation: 0 };
        Ok(Transport(Arc::new(Inner::Exec(Box::new(ExecState {
            plugin,
            config,
            make,
            current: tokio::sync::Mutex::new(current),
        })))))
    }
}

/// kube's TLS configuration, with the plugin's client certificate when it gave one.
fn tls_for(config: &Config, credential: &Credential, command: &str) -> Result<rustls::ClientConfig, ExecError> {
    use base64::Engine;
    let mut config = config.clone();
    if let Some((cert, key)) = &credential.identity {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        config.auth_info.client_certificate_data = Some(b64(cert));
        config.auth_info.client_key_data = Some(b64(key).into());
    }
    config.rustls_client_config().map_err(|e| ExecError::NoCredential {
        command: command.to_string(),
        cause: format!("its client certificate cannot be used: {}", crate::error::root_cause(&e)),
    })
}

/// Whether a credential obtained at `obtained` should be fetched again at `now`: when it has
/// an expiry and less than a fifth of its life (at most a minute) is left.
pub fn due(expires: Option<Timestamp>, obtained: Timestamp, now: Timestamp) -> bool {
    let Some(expires) = expires else { return false };
    let life = expires.duration_since(obtained);
    let margin = (life / 5).clamp(SignedDuration::ZERO, SignedDuration::from_secs(60));
    // An expiry so early that the margin cannot be taken from it is due already.
    expires.checked_sub(margin).map_or(true, |refresh_at| now >= refresh_at)
}

impl ExecState {
    /// The HTTP client, bearer token and credential generation to use now, fetching a new
    /// credential when due.
    async fn current(&self, new_connection: bool) -> Result<(HttpService, Option<String>, u64), BoxError> {
        let mut current = self.current.lock().await;
        if new_connection {
            current.http = (self.make)(tls_for(&self.config, &current.credential, &self.plugin.command())?);
        }
        if current.rejected || due(current.credential.expires, current.obtained, Timestamp::now()) {
            let fresh = self.plugin.run().await?;
            if fresh.identity != current.credential.identity {
                current.http = (self.make)(tls_for(&self.config, &fresh, &self.plugin.command())?);
            }
            current.credential = fresh;
            current.obtained = Timestamp::now();
            current.rejected = false;
            current.generation += 1;
        }
        Ok((current.http.clone(), current.credential.token.clone(), current.generation))
    }

    /// The server refused credential `generation`; a later one is not affected.
    async fn rejected(&self, generation: u64) {
        let mut current = self.current.lock().await;
        if current.generation == generation {
            current.rejected = true;
        }
    }
}

/// How long a token read from a file is used before the file is read again: client-go's
/// period (a minute, half the time between the kubelet's refresh of a projected service account
/// token and its expiry) less its leeway (ten seconds).
pub const TOKEN_FILE_REREAD: Duration = Duration::from_secs(50);

/// A bearer token file, and the token last read from it.
pub struct TokenFile {
    path: PathBuf,
    last: std::sync::Mutex<Read>,
}

struct Read {
    header: HeaderValue,
    at: Instant,
    /// The server said 401 to a request sent after this read: read again before the next.
    rejected: bool,
}

impl TokenFile {
    /// Reads the file a first time; unreadable, empty or not a header value is refused, as
    /// client-go refuses it before the first request.
    pub fn open(path: &Path) -> Result<TokenFile, Error> {
        let header = read_token(path).map_err(Error::Kubeconfig)?;
        Ok(TokenFile {
            path: path.to_path_buf(),
            last: std::sync::Mutex::new(Read { header, at: Instant::now(), rejected: false }),
        })
    }

    /// The `Authorization` value to send at `now`: the file read again when the last read is
    /// [`TOKEN_FILE_REREAD`] old or was refused; the last token when that read fails.
    /// The file is read on a thread of its own, bounded ([`local_file`]), never on the
    /// runtime's.
    pub async fn header(&self, now: Instant) -> HeaderValue {
        let stale = {
            let last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            last.rejected || now.saturating_duration_since(last.at) >= TOKEN_FILE_REREAD
        };
        let read = match stale {
            true => Some(local_file::read_async(&self.path, local_file::TOKEN_FILE_LIMIT).await),
            false => None,
        };
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(read) = read {
            if let Ok(header) = read.map_err(|_| String::new()).and_then(|bytes| token_header(&bytes, &self.path)) {
                last.header = header;
            }
            last.at = now;
            last.rejected = false;
        }
        last.header.clone()
    }

    /// The server said 401 to a request sent at `sent`: a token read before it is read anew
    /// (one read for it or after it is kept, as client-go's `ResetTokenOlderThan` keeps it).
    pub fn rejected(&self, sent: Instant) {
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.at < sent {
            last.rejected = true;
        }
    }
}

/// The file's token as client-go reads it (`fileTokenSource`): white space trimmed, empty
/// refused; as a sensitive `Bearer` header value.
fn read_token(path: &Path) -> Result<HeaderValue, String> {
    let bytes = local_file::read(path, local_file::TOKEN_FILE_LIMIT).map_err(|e| e.text(path, "token file"))?;
    token_header(&bytes, path)
}

fn token_header(bytes: &[u8], path: &Path) -> Result<HeaderValue, String> {
    let token = bytes.trim_ascii();
    if token.is_empty() {
        return Err(format!("read empty token from file {:?}", path.display()));
    }
    let mut value = HeaderValue::from_bytes(&[b"Bearer ", token].concat())
        .map_err(|_| format!("token file {:?} holds a character a header cannot carry", path.display()))?;
    value.set_sensitive(true);
    Ok(value)
}

impl Service<Request<Body>> for Transport {
    type Response = Response<Deadline<hyper::body::Incoming>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // hyper's client is always ready; each call clones the one it uses.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let inner = self.0.clone();
        let new_connection = fresh(&req);
        Box::pin(async move {
            match &*inner {
                Inner::Fixed(pool) => pool.take(new_connection).oneshot(req).await,
                Inner::TokenFile(pool, file) => {
                    let http = pool.take(new_connection);
                    // A header set already (none is, today) is left, as client-go leaves it.
                    if req.headers().contains_key(AUTHORIZATION) {
                        return http.oneshot(req).await;
                    }
                    let sent = Instant::now();
                    req.headers_mut().insert(AUTHORIZATION, file.header(sent).await);
                    let response = http.oneshot(req).await?;
                    if response.status() == http::StatusCode::UNAUTHORIZED {
                        file.rejected(sent);
                    }
                    Ok(response)
                }
                Inner::Exec(state) => {
                    let (http, token, generation) = state.current(new_connection).await?;
                    if let Some(token) = token {
                        let mut value = HeaderValue::try_from(format!("Bearer {token}"))?;
                        value.set_sensitive(true);
                        req.headers_mut().insert(AUTHORIZATION, value);
                    }
                    let response = http.oneshot(req).await?;
                    if response.status() == http::StatusCode::UNAUTHORIZED {
                        state.rejected(generation).await;
                    }
                    Ok(response)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn refreshed_before_it_lapses() {
        let obtained = at("2026-12-01T10:00:00Z");
        // ten minutes of life: fetched again in its last minute
        let expires = Some(at("2026-12-01T10:10:00Z"));
        assert!(!due(expires, obtained, at("2026-12-01T10:08:59Z")));
        assert!(due(expires, obtained, at("2026-12-01T10:09:00Z")));
        // ten seconds of life: in its last two
        let expires = Some(at("2026-12-01T10:00:10Z"));
        assert!(!due(expires, obtained, at("2026-12-01T10:00:07Z")));
        assert!(due(expires, obtained, at("2026-12-01T10:00:08Z")));
        // already expired when it came, or no expiry at all
        assert!(due(Some(at("2026-12-01T09:00:00Z")), obtained, obtained));
        assert!(!due(None, obtained, at("2030-01-01T00:00:00Z")));
    }

    #[test]
    fn a_token_file_is_read_as_client_go_reads_it() {
        let dir = std::env::temp_dir().join(format!("dispatch-token-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let open_error = |path: &Path| match TokenFile::open(path) {
            Err(Error::Kubeconfig(e)) => e,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened"),
        };
        let _ = std::fs::remove_file(&path);
        assert!(open_error(&path).starts_with(&format!("failed to read token file {:?}: ", path.display())));
        std::fs::write(&path, " \n\t").unwrap();
        assert_eq!(open_error(&path), format!("read empty token from file {:?}", path.display()));
        std::fs::write(&path, "a\nb").unwrap();
        assert!(open_error(&path).ends_with("holds a character a header cannot carry"));

        let s = Duration::from_secs(1);
        std::fs::write(&path, "first\n").unwrap();
        let file = TokenFile::open(&path).unwrap();
        let t0 = Instant::now();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let sent = |at: Instant| {
            let h = runtime.block_on(file.header(at));
            assert!(h.is_sensitive());
            h.to_str().unwrap().to_string()
        };
        assert_eq!(sent(t0), "Bearer first", "trimmed");
        std::fs::write(&path, "second").unwrap();
        assert_eq!(sent(t0 + 49 * s), "Bearer first", "read less than 50 s ago");
        assert_eq!(sent(t0 + 50 * s), "Bearer second", "50 s after the read");
        std::fs::write(&path, "third").unwrap();
        file.rejected(t0 + 51 * s);
        assert_eq!(sent(t0 + 52 * s), "Bearer third", "a 401 to a request after the read: read at once");
        std::fs::write(&path, "fourth").unwrap();
        file.rejected(t0 + 51 * s);
        file.rejected(t0 + 52 * s);
        assert_eq!(sent(t0 + 53 * s), "Bearer third", "a 401 to the request that read it, or one before: kept");
        file.rejected(t0 + 54 * s);
        std::fs::write(&path, "").unwrap();
        assert_eq!(sent(t0 + 55 * s), "Bearer third", "an empty file later: the last token");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(sent(t0 + 200 * s), "Bearer third", "a file gone later: the last token");
        std::fs::write(&path, "fifth").unwrap();
        assert_eq!(sent(t0 + 250 * s), "Bearer fifth");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

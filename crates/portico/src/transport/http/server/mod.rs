//! The Streamable HTTP server: one endpoint for both eras.
//!
//! ```no_run
//! # async fn run(server: portico::server::Server) -> std::io::Result<()> {
//! use portico::transport::http::server::StreamableHttp;
//! // Standalone, on loopback:
//! StreamableHttp::new(server.clone()).serve("127.0.0.1:8080").await?;
//! // Or mounted in an existing axum app:
//! let app = axum::Router::new().merge(StreamableHttp::new(server).router("/mcp"));
//! # Ok(()) }
//! ```
//!
//! - **Handshake era** (2025-03-26 … 2025-11-25): `initialize` opens a session
//!   (`Mcp-Session-Id`); later requests carry it (400 without, 404 when unknown or ended).
//!   Requests are answered with JSON, or with an SSE stream as soon as the handler sends a
//!   notification or a request first; SSE streams are resumable with `Last-Event-ID`; `GET`
//!   opens the stream of server-initiated messages; `DELETE` ends the session.
//! - **Stateless era** (2026-07-28): no session; `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name` and `Mcp-Param-*` must mirror the body (`-32020`); closing a response stream
//!   cancels its request; `subscriptions/listen` is a long-lived SSE response.
//! - **Security**: `Host` and `Origin` are checked against an allow-list (loopback by default;
//!   403 otherwise), bodies are limited (413), sessions are capped and reaped when idle.
//!   [`serve_app`] (behind `serve` and `serve_with_shutdown`) closes a connection whose request
//!   head is not complete within a timeout (slowloris) and caps open connections.
//! - **Speed**: `serve` hands a request for `/mcp` to the endpoint directly; a router from
//!   [`HttpEndpoint::router`] mounted in an app pays axum's routing on every request (about as
//!   much CPU as the endpoint's own header checks; see docs/benchmarks.md).

mod headers;
mod legacy;
mod listen;
mod post;
mod respond;
mod security;
mod sessions;
mod sse;
mod threads;

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::header::{ACCEPT, ALLOW, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use portico_schema::{ErrorObject, ProtocolVersion};
use tokio::net::{TcpListener, ToSocketAddrs};

pub use listen::{ServeOptions, serve_app};
pub use sessions::{EventStore, MemoryEventStore};
pub use threads::ConnectionThreads;

use crate::rpc::link::{self, Link};
use crate::server::Server;
use security::HostPolicy;
use sessions::{Busy, GET_STREAM, SessionStore};
use sse::{CancelOnDrop, OnDrop, SseItem};

/// `Mcp-Session-Id` (a `HeaderName`, so lookups do not parse the name again).
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// A Streamable HTTP endpoint serving a [`Server`]. Configure it, then mount it with
/// [`router`](Self::router) or run it with [`serve`](Self::serve).
#[must_use]
pub struct StreamableHttp {
    server: Server,
    config: Config,
    store: Arc<dyn EventStore>,
}

#[derive(Clone)]
struct Config {
    hosts: HostPolicy,
    max_body: usize,
    idle: Duration,
    max_sessions: usize,
    keep_alive: Duration,
    retry_ms: Option<u64>,
    stream_buffer: usize,
    stream_buffer_bytes: usize,
    legacy: Option<LegacyPaths>,
    #[cfg(feature = "auth-server")]
    auth: Option<crate::auth::server::ResourceServer>,
}

/// Where the 2024-11-05 HTTP+SSE transport is served.
#[derive(Clone)]
struct LegacyPaths {
    sse_path: String,
    post_path: String,
}

pub(crate) struct Shared {
    server: Server,
    config: Config,
    sessions: SessionStore,
    /// The era layer for requests outside any session (2026-07-28).
    stateless: Link,
    legacy: legacy::LegacySessions,
}

impl StreamableHttp {
    /// An endpoint for `server` with safe defaults: loopback `Host`/`Origin` only, 4 MiB
    /// bodies, at most 10 000 sessions, reaped after 30 minutes idle.
    pub fn new(server: Server) -> Self {
        StreamableHttp {
            server,
            config: Config {
                hosts: HostPolicy::localhost(),
                max_body: 4 * 1024 * 1024,
                idle: Duration::from_secs(30 * 60),
                max_sessions: 10_000,
                keep_alive: Duration::from_secs(15),
                retry_ms: Some(1000),
                stream_buffer: 256,
                stream_buffer_bytes: 4 * 1024 * 1024,
                legacy: Some(LegacyPaths { sse_path: "/sse".into(), post_path: "/messages".into() }),
                #[cfg(feature = "auth-server")]
                auth: None,
            },
            store: Arc::new(MemoryEventStore::default()),
        }
    }

    /// Host names (without port) that `Host` and `Origin` may name, replacing the loopback
    /// default. An empty list allows any host: only behind a proxy that checks it.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config.hosts.hosts = hosts.into_iter().map(|h| h.into().to_ascii_lowercase()).collect();
        self
    }

    /// Extra origins (`scheme://host[:port]`) browsers may call from.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config.hosts.origins = origins.into_iter().map(|o| o.into().to_ascii_lowercase()).collect();
        self
    }

    /// The largest request body accepted (default 4 MiB); larger ones get 413.
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.config.max_body = n;
        self
    }

    /// How long a session may stay idle (no request, no open stream) before it is ended.
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.config.idle = idle;
        self
    }

    /// The most sessions at once (default 10 000); `initialize` beyond gets 503.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.config.max_sessions = n.max(1);
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.config.keep_alive = every;
        self
    }

    /// The `retry` advertised on resumable SSE streams (default 1000 ms; `None` omits it).
    pub fn sse_retry(mut self, ms: Option<u64>) -> Self {
        self.config.retry_ms = ms;
        self
    }

    /// Messages buffered for one SSE client before it is disconnected as too slow (it may
    /// resume with `Last-Event-ID`); default 256. See also
    /// [`stream_buffer_bytes`](Self::stream_buffer_bytes).
    pub fn stream_buffer(mut self, n: usize) -> Self {
        self.config.stream_buffer = n.max(1);
        self
    }

    /// Bytes of messages buffered for one SSE client (default 4 MiB): past it, a client is
    /// disconnected as too slow (it may resume), or, for the final answer of a request and the
    /// legacy transport, the server waits for it to read. A single message larger than this is
    /// sent alone.
    pub fn stream_buffer_bytes(mut self, n: usize) -> Self {
        self.config.stream_buffer_bytes = n.max(1);
        self
    }

    /// Where the legacy HTTP+SSE transport (2024-11-05) is served beside the endpoint:
    /// `GET sse_path` opens a session, messages are POSTed to `post_path` (default `/sse` and
    /// `/messages`). Mounted by [`HttpEndpoint::router`] and [`serve`](Self::serve).
    pub fn legacy_sse(mut self, sse_path: impl Into<String>, post_path: impl Into<String>) -> Self {
        self.config.legacy = Some(LegacyPaths { sse_path: sse_path.into(), post_path: post_path.into() });
        self
    }

    /// Does not serve the legacy HTTP+SSE transport.
    pub fn without_legacy_sse(mut self) -> Self {
        self.config.legacy = None;
        self
    }

    /// Protects the endpoint with OAuth 2.1 bearer tokens (feature `auth-server`):
    /// [`HttpEndpoint::router`] (and so [`serve`](Self::serve)) puts the resource server's
    /// layer in front of the endpoint and the legacy paths, and serves its protected-resource
    /// metadata beside them without authentication. See [`crate::auth::server`].
    #[cfg(feature = "auth-server")]
    pub fn authorization(mut self, resource_server: crate::auth::server::ResourceServer) -> Self {
        self.config.auth = Some(resource_server);
        self
    }

    /// Where resumable streams are logged (default: [`MemoryEventStore`]).
    pub fn event_store(mut self, store: impl EventStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Builds the endpoint (starts the idle-session reaper).
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn build(self) -> HttpEndpoint {
        HttpEndpoint { shared: self.into_shared() }
    }

    fn into_shared(self) -> Arc<Shared> {
        let stateless = Link::stateless(self.server.endpoint());
        let shared = Arc::new(Shared {
            sessions: SessionStore::new(self.config.max_sessions, self.config.idle, self.store),
            server: self.server,
            config: self.config,
            stateless,
            legacy: legacy::LegacySessions::default(),
        });
        spawn_reaper(Arc::downgrade(&shared));
        shared
    }

    /// An axum router serving the endpoint at `path` (e.g. `"/mcp"`), to merge into an app.
    ///
    /// # Panics
    /// Outside a Tokio runtime (a background task reaps idle sessions).
    pub fn router(self, path: &str) -> axum::Router {
        self.build().router(path)
    }

    /// Binds `addr` and serves the endpoint at `/mcp` until the process ends.
    ///
    /// # Errors
    /// When binding fails.
    pub async fn serve(self, addr: impl ToSocketAddrs) -> std::io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.build().serve_with_shutdown(listener, std::future::pending()).await
    }
}

/// A built endpoint: cheap to clone, mount it as often as needed.
#[derive(Clone)]
pub struct HttpEndpoint {
    shared: Arc<Shared>,
}

impl HttpEndpoint {
    /// An axum router serving the endpoint at `path`, and the legacy HTTP+SSE paths when
    /// enabled. With [`authorization`](StreamableHttp::authorization), they are behind the
    /// bearer layer and the protected-resource metadata is served beside them.
    pub fn router(&self, path: &str) -> axum::Router {
        let mut r = axum::Router::new().route(path, axum::routing::any(endpoint));
        if let Some(l) = &self.shared.config.legacy {
            r = r
                .route(&l.sse_path, axum::routing::get(legacy::open))
                .route(&l.post_path, axum::routing::post(legacy::message));
        }
        let r = r.with_state(self.shared.clone());
        #[cfg(feature = "auth-server")]
        if let Some(auth) = &self.shared.config.auth {
            return r.layer(auth.layer()).merge(auth.metadata_router());
        }
        r
    }

    /// The endpoint as a service answering every path, for `Router::route_service`. With
    /// [`authorization`](StreamableHttp::authorization) it is behind the bearer layer; mount
    /// the resource server's `metadata_router()` yourself.
    pub fn service(&self) -> axum::Router {
        let r = axum::Router::new().fallback(endpoint).with_state(self.shared.clone());
        #[cfg(feature = "auth-server")]
        if let Some(auth) = &self.shared.config.auth {
            return r.layer(auth.layer());
        }
        r
    }

    /// Live handshake-era sessions (Streamable HTTP and legacy HTTP+SSE).
    pub fn session_count(&self) -> usize {
        self.shared.sessions.len() + self.shared.legacy.len()
    }

    /// Serves on `listener` at `/mcp` until `shutdown` completes, then finishes the requests
    /// in progress, with the default [`ServeOptions`] (a 30 s header read timeout, at most
    /// 10,000 connections). Every accepted socket gets `TCP_NODELAY`.
    ///
    /// # Errors
    /// When accepting fails fatally.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with_options(listener, shutdown, ServeOptions::default()).await
    }

    /// [`serve_with_shutdown`](Self::serve_with_shutdown) with limits of your choosing.
    ///
    /// # Errors
    /// When accepting fails fatally.
    pub async fn serve_with_options(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
        options: ServeOptions,
    ) -> std::io::Result<()> {
        let rest = self.router(MCP_PATH);
        #[cfg(feature = "auth-server")]
        if self.shared.config.auth.is_some() {
            // Every request goes through the bearer layer, which is on the router.
            return serve_app(listener, rest, shutdown, options).await;
        }
        listen::serve_service(listener, direct(self.shared, rest), shutdown, options).await
    }
}

/// The path `serve` answers at.
const MCP_PATH: &str = "/mcp";

/// What `serve` runs: a request for `/mcp` goes straight to the endpoint, any other through the
/// router (the legacy HTTP+SSE paths, and 404 for the rest). axum's routing costs about as much
/// per request as the endpoint's own header checks (callgrind), and one path needs no table.
///
/// The future is a named type (not boxed), so hyper keeps it in the one slot each connection
/// allocates for its request in flight: no allocation per request for it. A boxed endpoint
/// future was about 3 KiB, past glibc's per-thread cache, so each request paid the allocator's
/// slow path (and its consolidation of freed chunks) twice.
fn direct(
    shared: Arc<Shared>,
    rest: axum::Router,
) -> impl hyper::service::Service<
    Request<hyper::body::Incoming>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<Response, std::convert::Infallible>> + Send + 'static,
> + Clone
+ Send
+ 'static {
    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        if req.uri().path() == MCP_PATH {
            futures_util::future::Either::Left(answer_direct(shared.clone(), req))
        } else {
            let req = req.map(axum::body::Body::new);
            futures_util::future::Either::Right(tower::ServiceExt::oneshot(rest.clone(), req))
        }
    })
}

async fn answer_direct(
    shared: Arc<Shared>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response, std::convert::Infallible> {
    Ok(answer(shared, req).await)
}

/// Why a request body could not be read.
pub(super) enum BodyError {
    /// It is longer than the limit.
    TooLarge,
    /// The connection failed while it was read.
    Unreadable,
}

impl BodyError {
    /// The response refusing the request (413 or 400).
    pub(super) fn response(&self, limit: usize) -> Response {
        let (status, e) = match self {
            BodyError::TooLarge => {
                (StatusCode::PAYLOAD_TOO_LARGE, ErrorObject::invalid_request(format!("body exceeds {limit} bytes")))
            }
            BodyError::Unreadable => (StatusCode::BAD_REQUEST, ErrorObject::invalid_request("could not read the body")),
        };
        error_response(status, None, &e)
    }
}

/// Reads a request body of at most `limit` bytes. A body in one chunk (the usual case: it came
/// in with the request's head) is kept as that chunk, without a list of chunks around it;
/// more chunks are joined. Trailers are ignored.
pub(super) async fn read_body<B>(body: B, limit: usize) -> Result<bytes::Bytes, BodyError>
where
    B: http_body::Body<Data = bytes::Bytes>,
{
    use http_body_util::BodyExt;
    let mut body = std::pin::pin!(body);
    let mut first = bytes::Bytes::new();
    let mut joined: Option<Vec<u8>> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyError::Unreadable)?.into_data() else { continue };
        let len = joined.as_ref().map_or(first.len(), Vec::len);
        if data.len() > limit.saturating_sub(len) {
            return Err(BodyError::TooLarge);
        }
        match &mut joined {
            Some(all) => all.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut all = Vec::with_capacity(len + data.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&data);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, bytes::Bytes::from))
}

fn spawn_reaper(shared: Weak<Shared>) {
    let Some(s) = shared.upgrade() else { return };
    let every = (s.config.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    drop(s);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let Some(s) = shared.upgrade() else { return };
            let n = s.sessions.reap();
            if n > 0 {
                tracing::debug!(reaped = n, "idle sessions ended");
            }
        }
    });
}

/// A JSON-RPC error as an HTTP response.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<&portico_schema::RequestId>,
    error: &ErrorObject,
) -> Response {
    let body = link::encode_error(id, error);
    (status, [(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

/// Whether the `Accept` header (absent: anything) admits the media type `what` (`type/subtype`),
/// by name, `type/*` or `*/*`; media types compare case-insensitively.
fn accepts(headers: &HeaderMap, what: &str) -> bool {
    let Some(accept) = headers.get(ACCEPT) else { return true };
    let what = what.as_bytes();
    let main_type = what.split(|&b| b == b'/').next().unwrap_or(what);
    // Byte slices: `str::split` sets up a searcher per call, which costs more than this scan.
    media_ranges(accept.as_bytes()).any(|p| admits(p, what, main_type))
}

/// The media ranges of an `Accept` value, parameters cut off.
fn media_ranges(accept: &[u8]) -> impl Iterator<Item = &[u8]> {
    accept.split(|&b| b == b',').map(|p| p.split(|&b| b == b';').next().unwrap_or(p).trim_ascii())
}

fn admits(range: &[u8], what: &[u8], main_type: &[u8]) -> bool {
    range.eq_ignore_ascii_case(what)
        || range == b"*/*"
        || range.strip_suffix(b"/*").is_some_and(|t| t.eq_ignore_ascii_case(main_type))
}

/// What a POST's `Accept` admits of the two answers, read in one pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Accepted {
    /// `application/json`.
    pub json: bool,
    /// `text/event-stream`.
    pub sse: bool,
}

impl Accepted {
    fn of(accept: Option<&HeaderValue>) -> Accepted {
        let Some(accept) = accept else { return Accepted { json: true, sse: true } };
        // What the SDKs' clients send, as the spec words it: no need to split it.
        if accept.as_bytes() == b"application/json, text/event-stream" {
            return Accepted { json: true, sse: true };
        }
        let mut a = Accepted { json: false, sse: false };
        for range in media_ranges(accept.as_bytes()) {
            a.json |= admits(range, b"application/json", b"application");
            a.sse |= admits(range, b"text/event-stream", b"text");
            if a.json && a.sse {
                break;
            }
        }
        a
    }
}

async fn endpoint(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    answer(shared, req).await
}

/// The endpoint for any request body: [`direct`] hands hyper's body over as it is, unboxed.
async fn answer<B>(shared: Arc<Shared>, req: http::Request<B>) -> Response
where
    B: http_body::Body<Data = bytes::Bytes>,
{
    let (mut parts, body) = req.into_parts();
    // Handed to the handlers (e.g. the principal an authorization layer put there).
    let ext = std::mem::take(&mut parts.extensions);
    let found = headers::Found::of(&parts.headers);
    if let Err(refused) = security::check(&shared.config.hosts, found.host, found.origin) {
        tracing::warn!(?refused, "request refused by the host/origin policy");
        let what = match refused {
            security::Refused::Host => "Host",
            security::Refused::Origin => "Origin",
        };
        return error_response(
            StatusCode::FORBIDDEN,
            None,
            &ErrorObject::invalid_request(format!("{what} not allowed")),
        );
    }
    match parts.method {
        Method::POST => post::post(shared, &found, ext, body).await,
        Method::GET => get(shared, &found, principal(&ext)).await,
        Method::DELETE => delete(&shared, found.session_id, principal(&ext)),
        _ => method_not_allowed(),
    }
}

/// Who the request was authorized for (`issuer`, `subject`, `client_id` of the
/// [`AuthInfo`](crate::auth::server::AuthInfo) the bearer layer inserted), to bind sessions to.
fn principal(ext: &http::Extensions) -> Option<Arc<str>> {
    #[cfg(feature = "auth-server")]
    if let Some(a) = ext.get::<crate::auth::server::AuthInfo>() {
        let part = |p: Option<&str>| p.unwrap_or("").replace('\n', " ");
        return Some(format!("{}\n{}\n{}", part(a.issuer()), part(a.subject()), part(a.client_id())).into());
    }
    let _ = ext;
    None
}

fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(ALLOW, HeaderValue::from_static("GET, POST, DELETE"))]).into_response()
}

fn session_header(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

/// `GET`: the session's stream of server-initiated messages, or the resumption of any of its
/// streams with `Last-Event-ID`.
async fn get(shared: Arc<Shared>, found: &headers::Found<'_>, caller: Option<Arc<str>>) -> Response {
    let Some(id) = session_header(found.session_id) else {
        // Stateless clients have no GET stream.
        return method_not_allowed();
    };
    if !accepts(found.map, "text/event-stream") {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &ErrorObject::invalid_request("GET needs Accept: text/event-stream"),
        );
    }
    let Some(session) = shared.sessions.get(id, caller.as_deref()) else {
        return error_response(
            StatusCode::NOT_FOUND,
            None,
            &ErrorObject::invalid_request("unknown or expired session"),
        );
    };
    let resume = found.map.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(parse_event_id);
    let (tx, rx) = sse::channel(shared.config.stream_buffer, shared.config.stream_buffer_bytes);
    let (stream, after) = match resume {
        Some((stream, seq)) => (stream, Some(seq)),
        None => (GET_STREAM, None),
    };
    let version = session.link.negotiated_version();
    if after.is_none() && version.is_some_and(|v| v >= ProtocolVersion::V2025_11_25) {
        let _ = tx.try_send(SseItem::Prime { id: format!("{GET_STREAM}-0"), retry_ms: shared.config.retry_ms });
    }
    if !session.attach(stream, after, tx) {
        return error_response(
            StatusCode::NOT_FOUND,
            None,
            &ErrorObject::invalid_request("the stream cannot be resumed from that event"),
        );
    }
    let busy = Busy::new(session.clone());
    let on_drop = OnDrop(Some(Box::new(move || {
        busy.0.forget_stream(stream);
        drop(busy);
    })));
    sse_response(sse::body(rx, shared.config.keep_alive, CancelOnDrop(None), on_drop), None)
}

pub(crate) fn parse_event_id(s: &str) -> Option<(u64, u64)> {
    let (stream, seq) = s.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

fn delete(shared: &Shared, session_id: Option<&HeaderValue>, caller: Option<Arc<str>>) -> Response {
    let Some(id) = session_header(session_id) else {
        return error_response(StatusCode::BAD_REQUEST, None, &ErrorObject::invalid_request("missing Mcp-Session-Id"));
    };
    if shared.sessions.get(id, caller.as_deref()).is_some() && shared.sessions.remove(id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        error_response(StatusCode::NOT_FOUND, None, &ErrorObject::invalid_request("unknown or expired session"))
    }
}

pub(crate) fn sse_response(body: axum::body::Body, session: Option<&str>) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(SESSION_ID, id);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_str(v).expect("valid header"));
        h
    }

    #[test]
    fn accept_admits_by_name_wildcards_and_case() {
        assert!(accepts(&HeaderMap::new(), "application/json"));
        let both = with_accept("application/json, text/event-stream");
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        let json_only = with_accept("Application/JSON;q=0.9");
        assert!(accepts(&json_only, "application/json"));
        assert!(!accepts(&json_only, "text/event-stream"));
        assert!(accepts(&with_accept("text/*"), "text/event-stream"));
        assert!(!accepts(&with_accept("text/*"), "application/json"));
        assert!(!accepts(&with_accept("application/*json"), "application/json"));
        assert!(accepts(&with_accept("image/png, */*;q=0.1"), "application/json"));
        assert!(!accepts(&with_accept("image/png"), "application/json"));
    }

    #[test]
    fn one_pass_over_accept_agrees_with_asking_twice() {
        for v in [
            "application/json, text/event-stream",
            "Application/JSON;q=0.9",
            "text/*",
            "application/*json",
            "image/png, */*;q=0.1",
            "image/png",
            "text/event-stream",
            "",
            " , ;",
        ] {
            let h = with_accept(v);
            let want = Accepted { json: accepts(&h, "application/json"), sse: accepts(&h, "text/event-stream") };
            assert_eq!(Accepted::of(h.get(ACCEPT)), want, "Accept: {v:?}");
        }
        assert_eq!(Accepted::of(None), Accepted { json: true, sse: true });
    }
}

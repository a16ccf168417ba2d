//! The HTTP client transport: Streamable HTTP in both eras, with a fallback to the legacy
//! HTTP+SSE transport (2024-11-05).
//!
//! ```no_run
//! use portico::client::Client;
//! use portico::schema::Implementation;
//! use portico::transport::http::client::HttpClientTransport;
//!
//! # async fn run() -> Result<(), portico::Error> {
//! let transport = HttpClientTransport::new("http://127.0.0.1:8080/mcp").header("x-api-key", "secret");
//! let client = Client::builder(Implementation::new("my-host", "1.0.0")).connect(transport).await?;
//! let tools = client.list_all_tools().await?;
//! client.close().await; // ends the session (DELETE)
//! # Ok(()) }
//! ```
//!
//! The engine and [`Client`](crate::client::Client) are unchanged: this transport POSTs every
//! message the client writes, and hands up everything that comes back — JSON bodies, SSE
//! events of POST responses and of the `GET` stream. Unlike the byte-stream transports it looks
//! inside the messages it carries, because HTTP needs to know what each one is:
//!
//! - **Handshake era** (2025-03-26 … 2025-11-25): the `initialize` response gives the
//!   `Mcp-Session-Id` and the negotiated version, sent on every later request
//!   (`MCP-Protocol-Version`); after `notifications/initialized` the `GET` stream of
//!   server-initiated messages is opened (a 405 means there is none). A request answered 404
//!   has lost its session: the transport initializes a new one with the same `initialize`
//!   and retries the request once, unseen by the client. A response stream that breaks is
//!   resumed with `GET` + `Last-Event-ID`. Closing sends `DELETE`.
//! - **Stateless era** (2026-07-28): each request mirrors `MCP-Protocol-Version`,
//!   `Mcp-Method`, `Mcp-Name` (the task's id on the tasks extension's methods) and the
//!   `Mcp-Param-*` its tool's `x-mcp-header` annotations ask for (learned from the
//!   `tools/list` results that pass by; tools with invalid annotations are dropped from those
//!   results, as the spec requires). Cancelling a request closes its
//!   response stream instead of posting `notifications/cancelled`.
//! - **Legacy HTTP+SSE**: when `initialize` is refused with 400, 404 or 405 and no JSON-RPC
//!   error, the URL is opened as an SSE stream; if its first event is `endpoint`, every message
//!   is posted there and answers arrive on the stream.
//! - **Authorization** (feature `auth-client`): with `HttpClientTransport::auth`, every HTTP
//!   request carries the OAuth client's token, and a `401` or a `403 insufficient_scope` runs
//!   the flow of `portico::auth` before the request is sent again (a bounded number of times).
//!
//! HTTP failures never leave a call hanging: a request whose HTTP exchange fails is answered
//! with a JSON-RPC error naming the cause (the HTTP status is in `data.httpStatus`). Request
//! timeouts are the client's (`ClientBuilder::request_timeout`), not the transport's.

#[cfg(feature = "auth-client")]
mod authorized;
mod direct;
mod frame;
mod legacy;
mod mirror;
mod reply;
mod request;
mod session;
mod shared;
mod sse;
#[cfg(feature = "fuzzing")]
pub(crate) use sse::fuzz_events;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use portico_schema::{ErrorCode, RequestId, methods};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::super::{DEFAULT_MAX_MESSAGE_SIZE, FrameReader, FrameWriter, ReadError, Transport};
use frame::{OutRequest, Outgoing};
use shared::{Ends, Shared, Status};

/// How many received messages wait for the client before HTTP reading pauses.
const DEFAULT_READ_AHEAD: usize = 256;
/// Messages without an answer body (notifications, responses) queued for posting in order.
const ORDERED_QUEUE: usize = 64;
/// The longest wait for the last notifications and the `DELETE` when closing.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// The longest time later messages wait for `notifications/initialized` to be posted.
const HANDSHAKE_END_WAIT: Duration = Duration::from_secs(10);

/// How a dead SSE stream (the `GET` stream, or a response stream to resume) is reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// Attempts in a row that bring no message before giving up.
    pub max_retries: u32,
    /// The delay before the first attempt, doubled for each further one (at most 30 s); a
    /// `retry` the server sent takes precedence.
    pub base_delay: Duration,
}

impl ReconnectPolicy {
    /// A policy with `max_retries` attempts, the first after `base_delay`.
    pub fn new(max_retries: u32, base_delay: Duration) -> Self {
        ReconnectPolicy { max_retries, base_delay }
    }

    /// The delay before attempt `n` (1-based) when the server said nothing.
    pub(crate) fn delay(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
        self.base_delay.saturating_mul(factor).min(Duration::from_secs(30))
    }
}

impl Default for ReconnectPolicy {
    /// 5 attempts, from 1 s.
    fn default() -> Self {
        ReconnectPolicy::new(5, Duration::from_secs(1))
    }
}

/// A Streamable HTTP connection to one MCP endpoint. Configure it, then give it to
/// [`ClientBuilder::connect`](crate::client::ClientBuilder::connect).
#[must_use]
pub struct HttpClientTransport {
    url: String,
    headers: HeaderMap,
    config_error: Option<String>,
    http: Option<reqwest::Client>,
    reconnect: ReconnectPolicy,
    max_message: usize,
    read_ahead: usize,
    status: Arc<Status>,
    #[cfg(feature = "auth-client")]
    auth: Option<crate::auth::OAuthClient>,
}

impl std::fmt::Debug for HttpClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientTransport").field("url", &self.url).finish_non_exhaustive()
    }
}

impl HttpClientTransport {
    /// A transport for the MCP endpoint at `url` (e.g. `http://127.0.0.1:8080/mcp`).
    ///
    /// An invalid URL is reported when connecting, like an unreachable server.
    pub fn new(url: impl Into<String>) -> Self {
        HttpClientTransport {
            url: url.into(),
            headers: HeaderMap::new(),
            config_error: None,
            http: None,
            reconnect: ReconnectPolicy::default(),
            max_message: DEFAULT_MAX_MESSAGE_SIZE,
            read_ahead: DEFAULT_READ_AHEAD,
            status: Arc::new(Status::default()),
            #[cfg(feature = "auth-client")]
            auth: None,
        }
    }

    /// Authorizes every request with `client` (feature `auth-client`): `Authorization:
    /// Bearer` on each HTTP request, the OAuth flow on `401`, step-up on `403
    /// insufficient_scope`, then the request once more. See [`crate::auth`].
    #[cfg(feature = "auth-client")]
    pub fn auth(mut self, client: crate::auth::OAuthClient) -> Self {
        self.auth = Some(client);
        self
    }

    /// A header sent on every HTTP request (an API key, a tenant…). Protocol headers
    /// (`Mcp-Session-Id`, `MCP-Protocol-Version`, …) are the transport's and win over these.
    /// An invalid name or value is reported when connecting.
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        K: TryInto<HeaderName>,
        K::Error: std::fmt::Display,
        V: TryInto<HeaderValue>,
        V::Error: std::fmt::Display,
    {
        match (name.try_into(), value.try_into()) {
            (Ok(k), Ok(v)) => {
                self.headers.append(k, v);
            }
            (Err(e), _) => self.config_error = Some(format!("invalid header name: {e}")),
            (_, Err(e)) => self.config_error = Some(format!("invalid header value: {e}")),
        }
        self
    }

    /// How a dead SSE stream is reopened (default: 5 attempts from 1 s).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// The largest message accepted from the server (default 16 MiB); a larger answer fails
    /// its request.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message = bytes.max(1);
        self
    }

    /// Received messages waiting for the client before reading pauses (default 256).
    pub fn read_ahead(mut self, messages: usize) -> Self {
        self.read_ahead = messages.max(1);
        self
    }

    /// The HTTP client to use (proxies, TLS roots, timeouts of your own). By default one is
    /// built with `TCP_NODELAY`; it pools and reuses connections, follows only
    /// [same-origin `307`/`308` redirects](redirect_policy), and leaves retries to the
    /// transport (a reused connection that closes before answering).
    ///
    /// Without a client of your own, the POSTs of the client's messages to a plain `http://`
    /// URL go out through hyper's pooled client instead of reqwest's layers, unless the URL has
    /// a user or password, a proxy is set in the environment (`HTTP_PROXY`, `ALL_PROXY`), an
    /// OAuth client authorizes them, or the system is macOS or Windows; a redirect is then sent
    /// again through reqwest. With this method, every request goes through `client`.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// A handle that tells what the transport negotiated, usable after the transport has
    /// been given to the client.
    pub fn handle(&self) -> HttpClientHandle {
        HttpClientHandle { status: self.status.clone() }
    }

    fn build(self, inbound: mpsc::Sender<Bytes>, ends: Arc<Ends>) -> Result<Arc<Shared>, String> {
        if let Some(e) = self.config_error {
            return Err(e);
        }
        let url =
            reqwest::Url::parse(&self.url).map_err(|e| format!("invalid MCP endpoint URL {:?}: {e}", self.url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("the MCP endpoint URL must be http or https, not {:?}", url.scheme()));
        }
        // The endpoint's POSTs skip reqwest when the transport builds its own client.
        let direct = if self.http.is_none() { direct::Direct::for_url(&url) } else { None };
        let http = match self.http {
            Some(h) => h,
            // No retries of reqwest's own: they are for HTTP/2's refused streams, which this
            // HTTP/1.1 client never sees, yet its retry layer cloned every request (headers and
            // all) in case. A reused connection closed before the answer is retried here
            // (`shared::execute`).
            None => reqwest::Client::builder()
                .tcp_nodelay(true)
                .redirect(redirect_policy())
                .retry(reqwest::retry::never().max_retries_per_request(0))
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))?,
        };
        let mut shared =
            Shared::new(http, url, self.headers, self.reconnect, self.max_message, inbound, ends, self.status);
        shared.direct = direct;
        #[cfg(feature = "auth-client")]
        {
            shared.auth = self.auth;
        }
        Ok(Arc::new(shared))
    }
}

/// What an [`HttpClientTransport`] negotiated; see [`HttpClientTransport::handle`].
#[derive(Debug, Clone)]
pub struct HttpClientHandle {
    status: Arc<Status>,
}

impl HttpClientHandle {
    /// The current `Mcp-Session-Id` (handshake era), if the server gave one.
    pub fn session_id(&self) -> Option<String> {
        self.status.get().session_id
    }

    /// The handshake-era protocol version the server chose in `initialize`.
    pub fn protocol_version(&self) -> Option<String> {
        self.status.get().version
    }

    /// True when the server only spoke the legacy HTTP+SSE transport (2024-11-05) and the
    /// connection fell back to it.
    pub fn is_legacy_sse(&self) -> bool {
        self.status.get().legacy.is_some()
    }

    /// How many times an expired session was replaced by a new one.
    pub fn reinitializations(&self) -> u64 {
        self.status.get().reinitializations
    }
}

impl Transport for HttpClientTransport {
    type Reader = HttpClientReader;
    type Writer = HttpClientWriter;

    fn network_transport(&self) -> Option<&'static str> {
        Some("tcp")
    }

    fn split(self) -> (HttpClientReader, HttpClientWriter) {
        let (tx, rx) = mpsc::channel(self.read_ahead);
        let ends = Arc::new(Ends::default());
        let shared = self.build(tx.clone(), ends.clone()).map_err(|e| Misconfigured { error: e, inbound: tx });
        (HttpClientReader { rx, ends }, HttpClientWriter { shared, queue: None })
    }
}

/// The receiving half of an [`HttpClientTransport`]: every message the server sent, in the
/// order it arrived on each HTTP response.
#[derive(Debug)]
pub struct HttpClientReader {
    rx: mpsc::Receiver<Bytes>,
    ends: Arc<Ends>,
}

impl FrameReader for HttpClientReader {
    /// # Cancel safety
    /// Cancel safe: a message is taken only when the future completes.
    async fn read_frame(&mut self) -> Result<Option<Bytes>, ReadError> {
        tokio::select! {
            biased;
            m = self.rx.recv() => Ok(m),
            _ = self.ends.closed.cancelled() => Ok(None),
            _ = self.ends.dead.cancelled() => {
                let reason = self.ends.reason().unwrap_or_else(|| "the HTTP connection failed".into());
                Err(ReadError::Io(io::Error::new(io::ErrorKind::ConnectionAborted, reason)))
            }
        }
    }
}

/// The writer's way to send requests from their callers' own tasks, when `writer` is an
/// [`HttpClientWriter`] that could be set up; the engine calls this when it starts a
/// connection.
///
/// Each request is an HTTP exchange of its own, so nothing orders it behind the writer's
/// queue. Started from the caller's task, the exchange runs on the caller's thread: on a
/// connection thread of the HTTP server (`ConnectionThreads`), with that thread's pool of
/// connections, the whole call stays on it. A plain answer is handed straight to the caller
/// through `completer`, not through the reader.
pub(crate) fn direct_link<W: FrameWriter>(
    writer: &W,
    completer: crate::rpc::Completer,
) -> Option<Arc<dyn crate::rpc::DirectSend>> {
    let writer = (writer as &dyn std::any::Any).downcast_ref::<HttpClientWriter>()?;
    let shared = writer.shared.as_ref().ok()?.clone();
    let _ = shared.completer.set(completer);
    Some(Arc::new(DirectRequests(shared)))
}

/// See [`direct_link`].
struct DirectRequests(Arc<Shared>);

impl crate::rpc::DirectSend for DirectRequests {
    fn send_request(
        &self,
        frame: Bytes,
        id: &RequestId,
        method: &str,
        routing: Option<&crate::rpc::Routing>,
    ) -> Result<(), Bytes> {
        let shared = &self.0;
        // Before the handshake has ended, requests wait behind `notifications/initialized` in
        // the writer; the legacy transport posts everything in order. The era's probe and the
        // handshake itself always go through the writer.
        if method == methods::SERVER_DISCOVER
            || method == methods::INITIALIZE
            || !shared.direct_ready.load(std::sync::atomic::Ordering::Acquire)
            || shared.ends.closed.is_cancelled()
        {
            return Err(frame);
        }
        let (legacy, in_session) = shared.era();
        if legacy {
            return Err(frame);
        }
        let known = |stateless: Option<String>, name: Option<String>| OutRequest {
            id: id.clone(),
            method: method.to_owned(),
            stateless,
            name,
            arguments: None,
        };
        let req = match routing {
            // A session's requests get no header from their params (those are the stateless
            // era's): what the engine says is all, and the frame need not be read again.
            _ if in_session => known(None, None),
            // What the sender says is enough unless the tool has arguments to mirror in headers.
            Some(r) if routed_by(shared, method, r) => known(r.stateless.clone(), r.name.clone()),
            _ => match frame::classify(&frame) {
                Outgoing::Request(req) => req,
                _ => return Err(frame),
            },
        };
        request::spawn(shared.clone(), frame, req);
        Ok(())
    }
}

/// True when `routing` gives all the headers of a request of `method`: it names what the
/// method names, and no argument of it is mirrored in a header.
fn routed_by(shared: &Shared, method: &str, routing: &crate::rpc::Routing) -> bool {
    match &routing.name {
        None => !frame::names_target(method),
        Some(tool) if method == methods::TOOLS_CALL => crate::sync::lock(&shared.mirrors).of(tool).is_empty(),
        Some(_) => frame::names_target(method),
    }
}

/// A message posted in order, with what it is, and who to tell once it has been posted.
type Ordered = (Bytes, Outgoing, Option<oneshot::Sender<()>>);

/// A transport that could not be set up: every request is answered with the reason.
struct Misconfigured {
    error: String,
    inbound: mpsc::Sender<Bytes>,
}

/// The sending half of an [`HttpClientTransport`]: posts every message.
pub struct HttpClientWriter {
    shared: Result<Arc<Shared>, Misconfigured>,
    /// Notifications and responses, posted one after the other in order.
    queue: Option<(mpsc::Sender<Ordered>, JoinHandle<()>)>,
}

impl std::fmt::Debug for HttpClientWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientWriter").finish_non_exhaustive()
    }
}

impl HttpClientWriter {
    async fn enqueue(&mut self, shared: Arc<Shared>, frame: Bytes, what: Outgoing) -> io::Result<()> {
        // `notifications/initialized` ends the handshake: what follows waits until the server
        // has taken it, or a server that refuses requests before it could see them first
        // (each message is its own HTTP exchange, and nothing else orders them).
        let ends_handshake =
            matches!(&what, Outgoing::Notification { method, .. } if method == methods::NOTIFICATION_INITIALIZED);
        let (posted_tx, posted) = if ends_handshake {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let (tx, _) = self.queue.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel(ORDERED_QUEUE);
            let task = tokio::spawn(session::post_in_order(shared, rx));
            (tx, task)
        });
        tx.send((frame, what, posted_tx))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the HTTP transport stopped"))?;
        if let Some(posted) = posted {
            // Bounded: a server that never answers the notification must not stall the client.
            let _ = tokio::time::timeout(HANDSHAKE_END_WAIT, posted).await;
            shared_ready(&self.shared);
        }
        Ok(())
    }
}

/// Lets requests go out from their callers' tasks from now on (see [`direct_link`]).
fn shared_ready(shared: &Result<Arc<Shared>, Misconfigured>) {
    if let Ok(s) = shared {
        s.direct_ready.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl FrameWriter for HttpClientWriter {
    /// Starts the HTTP exchange of one message and returns: answers arrive through the
    /// reader, or go straight to the waiting call when nothing of their exchange went ahead of
    /// them (see `direct_link`). Notifications and responses are posted in the order written.
    ///
    /// # Cancel safety
    /// Not cancel safe: a message may be sent or not when the future is dropped.
    async fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        let shared = match &self.shared {
            Ok(s) => s.clone(),
            Err(bad) => {
                // Answer requests with the reason, so that it reaches the caller.
                if let Outgoing::Request(req) = frame::classify(frame) {
                    let msg = format!("{} failed: {}", req.method, bad.error);
                    let answer = frame::error_response(&req.id, ErrorCode::INVALID_REQUEST, msg, None);
                    let _ = bad.inbound.send(answer).await;
                }
                return Ok(());
            }
        };
        let bytes = Bytes::copy_from_slice(frame);
        match frame::classify(frame) {
            Outgoing::Request(req) if !shared.is_legacy() => {
                if req.method == methods::INITIALIZE {
                    // A handshake (after a `server/discover` probe the server did not take):
                    // what follows waits for it again.
                    shared.direct_ready.store(false, std::sync::atomic::Ordering::Release);
                } else if req.stateless.is_some() && req.method != methods::SERVER_DISCOVER {
                    // The stateless era has no handshake to wait for. The probe does not say
                    // the era: a server that does not take it gets a handshake next.
                    shared_ready(&self.shared);
                }
                request::spawn(shared, bytes, req);
                Ok(())
            }
            Outgoing::Notification { cancels: Some(id), .. } if shared.abort(&id) => Ok(()),
            other => self.enqueue(shared, bytes, other).await,
        }
    }

    /// # Cancel safety
    /// Cancel safe: there is nothing to flush; every message is already on its way.
    async fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Posts what is still queued, stops every stream and ends the session (`DELETE`),
    /// waiting at most a few seconds for the server.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future may leave the session open on the server.
    async fn close(&mut self) -> io::Result<()> {
        let Ok(shared) = self.shared.as_ref() else { return Ok(()) };
        let shared = shared.clone();
        if let Some((tx, task)) = self.queue.take() {
            drop(tx);
            let _ = tokio::time::timeout(CLOSE_GRACE, task).await;
        }
        session::close(&shared, CLOSE_GRACE).await;
        Ok(())
    }
}

impl Drop for HttpClientWriter {
    fn drop(&mut self) {
        if let Ok(shared) = &self.shared {
            shared.ends.closed.cancel();
        }
    }
}

/// The default client's redirects: at most 5, only `307` and `308` (which keep the method and
/// the body: a `POST` stays a `POST`) and only to the same origin (scheme, host and port), such
/// as a server that moves `/mcp` to `/mcp/`. Any other redirect is not followed: the request
/// fails with an error that names the status and the `Location`, so a moved server is
/// reported instead of being followed to another host with the request and its headers.
pub fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let status = attempt.status().as_u16();
        let Some(first) = attempt.previous().first() else { return attempt.stop() };
        let same_origin = first.origin() == attempt.url().origin();
        if matches!(status, 307 | 308) && same_origin && attempt.previous().len() <= 5 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

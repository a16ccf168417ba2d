//! The state both halves and every HTTP exchange share: the session, what was learned of the
//! tools, the requests in flight, and how to build each HTTP request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue};
use portico_schema::RequestId;
use reqwest::Url;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ReconnectPolicy;
use super::direct::{self, Direct};
use super::frame::OutRequest;
use super::mirror::{self, Mirrors};
use super::reply::Reply;
use crate::sync::lock;

pub(super) const SESSION_ID: &str = "mcp-session-id";
pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub(super) const LAST_EVENT_ID: &str = "last-event-id";
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "mcp-param-";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";

/// How the connection ends: closed by the client, or dead (the legacy stream ended).
#[derive(Debug, Default)]
pub(super) struct Ends {
    pub closed: CancellationToken,
    pub dead: CancellationToken,
    reason: Mutex<Option<String>>,
}

impl Ends {
    pub(super) fn reason(&self) -> Option<String> {
        lock(&self.reason).clone()
    }
}

/// What was negotiated, readable through the public handle.
#[derive(Debug, Default)]
pub(crate) struct Status(Mutex<Negotiated>);

#[derive(Debug, Default, Clone)]
pub(crate) struct Negotiated {
    pub session_id: Option<String>,
    pub version: Option<String>,
    /// The POST endpoint of the legacy HTTP+SSE transport, once fallen back to it.
    pub legacy: Option<Url>,
    pub reinitializations: u64,
}

impl Status {
    pub(crate) fn get(&self) -> Negotiated {
        lock(&self.0).clone()
    }
    pub(super) fn update(&self, f: impl FnOnce(&mut Negotiated)) {
        f(&mut lock(&self.0))
    }
}

/// A request being answered, so a cancellation can stop it.
struct InFlight {
    abort: CancellationToken,
    stateless: bool,
}

pub(super) struct Shared {
    pub http: reqwest::Client,
    /// The endpoint's POSTs without reqwest, when nothing it adds applies ([`direct`]).
    pub direct: Option<Direct>,
    pub url: Url,
    headers: HeaderMap,
    pub policy: ReconnectPolicy,
    pub max_message: usize,
    inbound: mpsc::Sender<Bytes>,
    pub ends: Arc<Ends>,
    pub status: Arc<Status>,
    /// The `initialize` request, repeated when the session expires.
    pub init: Mutex<Option<(RequestId, Bytes)>>,
    /// Held while a new session replaces an expired one.
    pub reinit: tokio::sync::Mutex<()>,
    pub mirrors: Mutex<Mirrors>,
    in_flight: Mutex<HashMap<RequestId, InFlight>>,
    /// Stops the current `GET` stream.
    pub get_stream: Mutex<Option<CancellationToken>>,
    /// Authorizes every request (feature `auth-client`).
    #[cfg(feature = "auth-client")]
    pub auth: Option<crate::auth::OAuthClient>,
    /// Hands an answer straight to its waiting caller (see [`super::direct_link`]).
    pub completer: std::sync::OnceLock<crate::rpc::Completer>,
    /// Set once requests may be sent from their callers' tasks: the handshake has ended (or
    /// there is none, in the stateless era).
    pub direct_ready: std::sync::atomic::AtomicBool,
}

/// Why an HTTP exchange did not happen.
#[derive(Debug)]
pub(super) enum SendError {
    /// The server could not be reached.
    Http(reqwest::Error),
    /// The server could not be reached on the direct path.
    Direct(direct::Error),
    /// Authorization failed (feature `auth-client`).
    #[cfg_attr(not(feature = "auth-client"), allow(dead_code))]
    Auth(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Http(e) => {
                // reqwest's own text ("error sending request for url (…)") hides the cause (a
                // refused connection, an untrusted certificate) in its sources, and repeats the
                // URL, which the caller's message already names: the kind, then every cause.
                let kind = if e.is_timeout() {
                    "timed out"
                } else if e.is_connect() {
                    "cannot connect"
                } else if e.is_body() || e.is_decode() {
                    "the response broke off"
                } else {
                    "the request failed"
                };
                causes(f, kind, e)
            }
            SendError::Direct(e) => causes(f, if e.is_connect() { "cannot connect" } else { "the request failed" }, e),
            SendError::Auth(e) => write!(f, "authorization failed: {e}"),
        }
    }
}

/// `kind`, then every cause of `e`: the client's own text hides the cause (a refused
/// connection, an untrusted certificate) in its sources.
fn causes(f: &mut std::fmt::Formatter<'_>, kind: &str, e: &dyn std::error::Error) -> std::fmt::Result {
    f.write_str(kind)?;
    let mut next = e.source();
    while let Some(cause) = next {
        write!(f, ": {cause}")?;
        next = cause.source();
    }
    Ok(())
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        http: reqwest::Client,
        url: Url,
        headers: HeaderMap,
        policy: ReconnectPolicy,
        max_message: usize,
        inbound: mpsc::Sender<Bytes>,
        ends: Arc<Ends>,
        status: Arc<Status>,
    ) -> Self {
        Shared {
            http,
            direct: None,
            url,
            headers,
            policy,
            max_message,
            inbound,
            ends,
            status,
            init: Mutex::new(None),
            reinit: tokio::sync::Mutex::new(()),
            mirrors: Mutex::new(Mirrors::default()),
            in_flight: Mutex::new(HashMap::new()),
            get_stream: Mutex::new(None),
            #[cfg(feature = "auth-client")]
            auth: None,
            completer: std::sync::OnceLock::new(),
            direct_ready: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Sends one HTTP request; with an OAuth client, authorized (and authorized again on
    /// `401` or `403 insufficient_scope`, then retried).
    pub(super) async fn send(&self, rb: reqwest::RequestBuilder) -> Result<Reply, SendError> {
        #[cfg(feature = "auth-client")]
        if let Some(auth) = &self.auth {
            return super::authorized::send(self, auth, rb).await.map(Reply::from);
        }
        let request = rb.build().map_err(SendError::Http)?;
        execute(&self.http, request).await.map(Reply::from)
    }

    /// Sends a message to the endpoint: on the direct path when there is one (and no
    /// OAuth client), otherwise as [`post`](Self::post) builds it. A redirect on the direct path
    /// is sent again through reqwest, whose policy decides whether to follow it.
    pub(super) async fn send_message(
        &self,
        body: &Bytes,
        req: Option<&OutRequest>,
        with_session: bool,
    ) -> Result<Reply, SendError> {
        #[cfg(feature = "auth-client")]
        let direct = self.direct.as_ref().filter(|_| self.auth.is_none());
        #[cfg(not(feature = "auth-client"))]
        let direct = self.direct.as_ref();
        if let Some(direct) = direct {
            let resp = direct.post(|| self.post_headers(req, with_session), body).await.map_err(SendError::Direct)?;
            if !resp.status().is_redirection() {
                return Ok(Reply::Direct(resp));
            }
        }
        self.send(self.post(&self.url, body.clone(), req, with_session)).await
    }

    /// Hands `frame`, the answer to the request `id`, straight to its waiting caller; false
    /// when it is not that answer, or there is no such caller or no way to, and it must be
    /// [delivered](Self::deliver).
    pub(super) fn complete_directly(&self, frame: &[u8], id: &RequestId) -> bool {
        self.completer.get().is_some_and(|c| c.complete(frame, id))
    }

    /// Hands a message to the reader (waits while the client is behind: backpressure).
    pub(super) async fn deliver(&self, frame: Bytes) {
        if self.inbound.send(frame).await.is_err() {
            tracing::debug!("message dropped: the client stopped reading");
        }
    }

    /// Ends the connection: the reader fails with `reason`.
    pub(super) fn die(&self, reason: impl Into<String>) {
        let mut r = lock(&self.ends.reason);
        if r.is_none() {
            *r = Some(reason.into());
        }
        drop(r);
        self.ends.dead.cancel();
    }

    /// Whether the legacy transport is in use, and whether a handshake-era session is (one
    /// lock for both).
    pub(super) fn era(&self) -> (bool, bool) {
        let status = lock(&self.status.0);
        (status.legacy.is_some(), status.version.is_some())
    }

    pub(super) fn is_legacy(&self) -> bool {
        lock(&self.status.0).legacy.is_some()
    }

    pub(super) fn session_id(&self) -> Option<String> {
        lock(&self.status.0).session_id.clone()
    }

    /// Registers a request in flight; its token stops the exchange.
    pub(super) fn track(&self, id: &RequestId, stateless: bool) -> CancellationToken {
        let abort = self.ends.closed.child_token();
        lock(&self.in_flight).insert(id.clone(), InFlight { abort: abort.clone(), stateless });
        abort
    }

    pub(super) fn untrack(&self, id: &RequestId) {
        lock(&self.in_flight).remove(id);
    }

    /// The client cancelled request `id`: stops its exchange. True when the cancellation must
    /// not be posted (a stateless request: closing its stream is how it is cancelled).
    pub(super) fn abort(&self, id: &RequestId) -> bool {
        match lock(&self.in_flight).remove(id) {
            Some(f) => {
                f.abort.cancel();
                f.stateless
            }
            // Unknown: posted only on a handshake-era connection.
            None => lock(&self.init).is_none() && !self.is_legacy(),
        }
    }

    /// The headers of every HTTP request: the user's, then the session's (handshake era).
    pub(super) fn base_headers(&self, with_session: bool) -> HeaderMap {
        let mut h = self.headers.clone();
        if with_session {
            let n = lock(&self.status.0);
            if let Some(v) = n.session_id.as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
                h.insert(SESSION_ID, v);
            }
            // 2025-03-26 had no such header; later revisions require it.
            if let Some(v) = n.version.as_deref().filter(|v| *v >= "2025-06-18")
                && let Ok(v) = HeaderValue::from_str(v)
            {
                h.insert(PROTOCOL_VERSION, v);
            }
        }
        h
    }

    /// A POST of one message to `url` with the headers its era needs (the session's when
    /// `with_session`, unless the request is stateless).
    pub(super) fn post(
        &self,
        url: &Url,
        body: Bytes,
        req: Option<&OutRequest>,
        with_session: bool,
    ) -> reqwest::RequestBuilder {
        self.http.post(url.clone()).headers(self.post_headers(req, with_session)).body(body)
    }

    /// The headers of a POST of one message.
    fn post_headers(&self, req: Option<&OutRequest>, with_session: bool) -> HeaderMap {
        let stateless = req.and_then(|r| r.stateless.as_deref());
        let mut h = self.base_headers(with_session && stateless.is_none());
        h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let (Some(version), Some(req)) = (stateless, req) {
            self.stateless_headers(&mut h, version, req);
        }
        h
    }

    /// A GET of an SSE stream (the `GET` stream, or a resumption after `last_event_id`).
    pub(super) fn get(&self, last_event_id: Option<&str>, with_session: bool) -> reqwest::RequestBuilder {
        let mut h = self.base_headers(with_session);
        h.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
        if let Some(v) = last_event_id.and_then(|v| HeaderValue::from_str(v).ok()) {
            h.insert(LAST_EVENT_ID, v);
        }
        self.http.get(self.url.clone()).headers(h)
    }

    /// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (2026-07-28).
    fn stateless_headers(&self, h: &mut HeaderMap, version: &str, req: &OutRequest) {
        let mut put = |name: HeaderName, value: &str| match HeaderValue::from_str(value) {
            Ok(v) => {
                h.insert(name, v);
            }
            Err(_) => tracing::warn!(header = %name, "header value not sendable; omitted"),
        };
        put(HeaderName::from_static(PROTOCOL_VERSION), version);
        put(HeaderName::from_static(METHOD), &mirror::encode_value(&req.method));
        if let Some(name) = &req.name {
            put(HeaderName::from_static(NAME), &mirror::encode_value(name));
        }
        let (Some(tool), Some(raw)) = (&req.name, &req.arguments) else { return };
        let mirrors = lock(&self.mirrors).of(tool).to_vec();
        if mirrors.is_empty() {
            return;
        }
        let Ok(args) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get()) else {
            return;
        };
        for m in mirrors {
            let Some(value) = mirror::param_value(&args, &m.path) else { continue };
            match HeaderName::from_bytes(format!("{PARAM_PREFIX}{}", m.header).as_bytes()) {
                Ok(name) => put(name, &value),
                Err(_) => tracing::warn!(header = %m.header, "invalid Mcp-Param header name; omitted"),
            }
        }
    }
}

/// True when the response body is an SSE stream.
pub(super) fn is_event_stream(resp: &Reply) -> bool {
    content_type(resp).is_some_and(|t| t.eq_ignore_ascii_case(EVENT_STREAM))
}

/// The media type of the response, without parameters.
pub(super) fn content_type(resp: &Reply) -> Option<&str> {
    resp.headers().get(CONTENT_TYPE)?.to_str().ok()?.split(';').next().map(str::trim)
}

/// Reads a body of at most `limit` bytes (`Err` past it, or when reading fails).
pub(super) async fn read_body(mut resp: Reply, limit: usize) -> Result<Bytes, String> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(format!("the answer exceeds the {limit}-byte limit"));
    }
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading the answer failed: {e}"))? {
        if out.len() + chunk.len() > limit {
            return Err(format!("the answer exceeds the {limit}-byte limit"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// Reads and discards a (small) body so the connection can be reused.
pub(super) async fn drain(resp: impl Into<Reply>) {
    let resp = resp.into();
    let _ = read_body(resp, 64 * 1024).await;
}

/// Sends `request`, and sends it once more when the connection it went out on was closed by the
/// server before any answer began (hyper's "connection closed before message completed", or a
/// reset while writing it).
///
/// That is the keep-alive race: the pool hands out an idle connection the server has just
/// closed (it restarted, or timed the connection out), and the request is written into a socket
/// no handler reads. Browsers resend any request, a `POST` included, in that case when the
/// connection was a reused one, and so does this client; reqwest does not say whether a
/// connection was reused, so the rule here is "once, at once". A connection that could not be
/// made at all is not retried (the server is down; the caller's backoff handles it).
pub(super) async fn execute(http: &reqwest::Client, request: reqwest::Request) -> Result<reqwest::Response, SendError> {
    let again = request.try_clone();
    match http.execute(request).await {
        Err(e) if closed_before_answer(&e) => match again {
            Some(again) => {
                tracing::debug!("the connection was closed before an answer began: sending once more ({e})");
                http.execute(again).await.map_err(SendError::Http)
            }
            None => Err(SendError::Http(e)),
        },
        other => other.map_err(SendError::Http),
    }
}

/// Whether `e` is a connection that closed before any of the answer arrived (not a timeout, not a
/// connection that could not be made).
fn closed_before_answer(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_connect() || e.is_body() || e.is_decode() || e.is_status() {
        return false;
    }
    closed_early(e)
}

/// Whether a cause of `e` is hyper's "connection closed before message completed", or a reset
/// or broken pipe while the request was written.
pub(super) fn closed_early(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = e.source();
    while let Some(cause) = next {
        if let Some(h) = cause.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && matches!(io.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = cause.source();
    }
    false
}

//! `POST`: one JSON-RPC message (or a 2025-03-26 batch) in, JSON or SSE out.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use portico_schema::{ErrorObject, JsonObject, ProtocolVersion, RequestId, methods};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::sessions::{Busy, Full, GET_STREAM, HttpSession};
use super::sse::{self, CancelOnDrop, OnDrop, SseItem};
use super::{SESSION_ID, Shared, accepts, error_response, headers, session_header, sse_response};
use crate::rpc::envelope::{self, Frame, Incoming, Invalid};
use crate::rpc::{
    Cancel, InFlight, Outgoing, Peer, Queued, Started, register, route_notification, run_request, start_request,
};
use crate::server::session::{PeekMeta, ResolvedEra, Session};

pub(super) async fn post(shared: Arc<Shared>, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    // Handed to the handlers (e.g. the principal an authorization layer put there).
    let ext = std::mem::take(&mut parts.extensions);
    let headers = &parts.headers;
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &ErrorObject::invalid_request("Content-Type must be application/json"),
        );
    }
    if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &ErrorObject::invalid_request("Accept must allow application/json or text/event-stream"),
        );
    }
    let limit = shared.config.max_body;
    let too_large = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            &ErrorObject::invalid_request(format!("body exceeds {limit} bytes")),
        )
    };
    if headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > limit)
    {
        return too_large();
    }
    let bytes = match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Err(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                &ErrorObject::invalid_request("could not read the body"),
            );
        }
    };
    match envelope::decode(&bytes) {
        Frame::Single(Err(Invalid { id, error })) => error_response(StatusCode::BAD_REQUEST, id.as_ref(), &error),
        Frame::Single(Ok(msg)) => single(shared, headers, ext, msg).await,
        Frame::Batch(items) => batch(shared, headers, ext, items).await,
    }
}

/// The 403 refusing a request whose token lacks the scopes its method or tool needs (feature
/// `auth-server`; the bearer layer leaves the rules in the extensions).
pub(super) fn scope_refusal(ext: &http::Extensions, method: &str, params: Option<&RawValue>) -> Option<Response> {
    #[cfg(feature = "auth-server")]
    return crate::auth::server::scope_refusal(ext, method, params);
    #[cfg(not(feature = "auth-server"))]
    {
        let _ = (ext, method, params);
        None
    }
}

/// A request's `_meta` when it is the stateless era's (it names a protocol version): what the
/// transport checks, and what the era layer needs to resolve the request's era (which
/// [`ModernMeta::resolve`] does through it, so that it does not decode `_meta` again).
struct ModernMeta<'a> {
    version: String,
    /// The rest of `_meta` the era layer reads, still raw.
    head: MetaHead<'a>,
    /// What the header check needs from the params, found in the same pass, still raw.
    target: RawTarget<'a>,
}

impl<'a> ModernMeta<'a> {
    /// `clientCapabilities`, present and an object.
    fn has_caps(&self) -> bool {
        self.head.client_capabilities.is_some_and(|c| c.get().starts_with('{'))
    }

    /// The request's era, resolved here so that the era layer need not decode `_meta` again.
    /// `None` when anything is amiss: the era layer then decodes it and answers the error.
    fn resolve(self, session: &Session) -> Option<ResolvedEra> {
        fn decode<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<Option<T>> {
            match raw {
                None => Some(None),
                Some(raw) => serde_json::from_str(raw.get()).ok(),
            }
        }
        let meta = PeekMeta {
            progress_token: decode(self.head.progress_token)?,
            protocol_version: Some(Cow::Owned(self.version)),
            client_capabilities: self.head.client_capabilities,
            client_info: self.head.client_info,
            log_level: decode(self.head.log_level)?,
        };
        session.modern_era(meta).ok().map(ResolvedEra)
    }
}

/// The params members that `Mcp-Name` and `Mcp-Param-*` mirror, undecoded.
#[derive(Default, Clone, Copy)]
struct RawTarget<'a> {
    name: Option<&'a RawValue>,
    uri: Option<&'a RawValue>,
    task_id: Option<&'a RawValue>,
    arguments: Option<&'a RawValue>,
}

/// The params' `_meta`, decoded, and the members of [`RawTarget`], borrowed: one pass over the
/// params. Other members are skipped; of those kept raw the last one wins, as they are only
/// decoded for a stateless request (where the session's own decoding rejects duplicates).
struct Peek<'a> {
    meta: Option<MetaHead<'a>>,
    target: RawTarget<'a>,
}

/// The members of `_meta` the transport and the era layer need; all but the version raw.
#[derive(Deserialize)]
struct MetaHead<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    protocol_version: Option<String>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    client_info: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow, default)]
    log_level: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Peek<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Peek<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("params")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Peek<'de>, A::Error> {
                let mut meta = None;
                let mut target = RawTarget::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "_meta" if meta.is_some() => return Err(de::Error::duplicate_field("_meta")),
                        "_meta" => meta = Some(map.next_value::<Option<MetaHead<'de>>>()?),
                        "name" => target.name = Some(map.next_value()?),
                        "uri" => target.uri = Some(map.next_value()?),
                        "taskId" => target.task_id = Some(map.next_value()?),
                        "arguments" => target.arguments = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Peek { meta: meta.flatten(), target })
            }
            // As a derived one-member struct would: `[meta]`.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Peek<'de>, A::Error> {
                let meta =
                    seq.next_element::<Option<MetaHead<'de>>>()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                Ok(Peek { meta, target: RawTarget::default() })
            }
        }
        d.deserialize_struct("Peek", &["_meta"], V)
    }
}

fn peek_meta(params: Option<&RawValue>) -> Result<Option<ModernMeta<'_>>, ErrorObject> {
    let Some(p) = params else { return Ok(None) };
    // An object without `_meta` decodes to no `_meta` whatever else it holds: skip the pass.
    if p.get().starts_with('{') && !crate::server::session::may_hold_meta(p.get()) {
        return Ok(None);
    }
    let peek: Peek<'_> =
        serde_json::from_str(p.get()).map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))?;
    let target = peek.target;
    Ok(peek.meta.and_then(|mut head| head.protocol_version.take().map(|version| ModernMeta { version, head, target })))
}

/// A handshake-era request may name any known revision in `MCP-Protocol-Version` (or none:
/// 2025-03-26 is assumed); anything else is 400.
fn handshake_version_refused(headers: &HeaderMap) -> Option<Response> {
    match headers.get(headers::PROTOCOL_VERSION).map(|v| v.to_str().ok().and_then(ProtocolVersion::parse)) {
        None | Some(Some(_)) => None,
        Some(None) => {
            let e = ErrorObject::invalid_request("unsupported MCP-Protocol-Version");
            Some(error_response(StatusCode::BAD_REQUEST, None, &e))
        }
    }
}

fn unknown_session() -> Response {
    error_response(StatusCode::NOT_FOUND, None, &ErrorObject::invalid_request("unknown or expired session"))
}

fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

async fn single(shared: Arc<Shared>, headers: &HeaderMap, ext: http::Extensions, msg: Incoming<'_>) -> Response {
    let sid = session_header(headers);
    let owner = super::principal(&ext);
    let session = sid.and_then(|id| shared.sessions.get(id, owner.as_deref()));
    match msg {
        Incoming::Request { id, method, params } => {
            if let Some(refused) = scope_refusal(&ext, &method, params) {
                return refused;
            }
            let meta = match peek_meta(params) {
                Ok(m) => m,
                // Whatever is wrong with it, a handshake request's `_meta` is for initialize
                // to judge.
                Err(_) if method == methods::INITIALIZE => None,
                Err(e) => return error_response(StatusCode::BAD_REQUEST, Some(&id), &e),
            };
            // The dual-era rule: a request carrying the stateless `_meta` is a 2026-07-28
            // request, whatever its method (`initialize` included, which that revision lacks).
            if let Some(meta) = meta {
                return stateless(&shared, headers, ext, id, &method, params, meta).await;
            }
            if method == methods::INITIALIZE {
                return initialize(&shared, headers, ext, id, params).await;
            }
            match (sid, session) {
                (Some(_), Some(s)) => {
                    if let Some(r) = handshake_version_refused(headers) {
                        return r;
                    }
                    let ctx = Run::session(&shared, headers, ext, s);
                    ctx.run(id, &method, params).await.0
                }
                (Some(_), None) => unknown_session(),
                (None, _) => error_response(
                    StatusCode::BAD_REQUEST,
                    Some(&id),
                    &ErrorObject::invalid_params(
                        "missing Mcp-Session-Id (send initialize first) or the _meta of 2026-07-28 (io.modelcontextprotocol/protocolVersion)",
                    ),
                ),
            }
        }
        Incoming::Notification { method, params } => match (sid, session) {
            (Some(_), Some(s)) => {
                route_notification(&*s.service, &s.peer, &s.in_flight, &method, params);
                accepted()
            }
            (Some(_), None) => unknown_session(),
            // Stateless notifications carry nothing the server must act on over HTTP (closing
            // a response stream is how requests are cancelled).
            (None, _) => accepted(),
        },
        Incoming::Response { id, outcome } => match (sid, session) {
            (Some(_), Some(s)) => {
                s.peer.complete(&id, outcome);
                accepted()
            }
            (Some(_), None) => unknown_session(),
            (None, _) => error_response(
                StatusCode::BAD_REQUEST,
                None,
                &ErrorObject::invalid_request("responses are only accepted within a session"),
            ),
        },
    }
}

async fn initialize(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    ext: http::Extensions,
    id: RequestId,
    params: Option<&RawValue>,
) -> Response {
    let service = Arc::new(Session::new(shared.server.clone()));
    let (tx, mut rx) = mpsc::channel::<Outgoing>(shared.config.stream_buffer);
    let peer = Peer::new(tx);
    service.attach(peer.clone());
    let session = match shared.sessions.create(service, peer, super::principal(&ext)) {
        Ok(s) => s,
        Err(Full) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&id),
                &ErrorObject::internal_error("too many sessions; try again later"),
            );
        }
    };
    // Server-initiated messages of the session go to its GET stream.
    let weak = Arc::downgrade(&session);
    tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            let Some(s) = weak.upgrade() else { return };
            s.emit(GET_STREAM, m.into_bytes());
        }
    });
    let ctx = Run::session(shared, headers, ext, session.clone());
    let (mut response, outcome) = ctx.run(id, methods::INITIALIZE, params).await;
    if outcome == Outcome::Ok {
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            response.headers_mut().insert(SESSION_ID, v);
        }
    } else {
        // A rejected initialize leaves no session behind.
        shared.sessions.remove(&session.id);
    }
    response
}

async fn stateless(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    mut ext: http::Extensions,
    id: RequestId,
    method: &str,
    params: Option<&RawValue>,
    meta: ModernMeta<'_>,
) -> Response {
    if !meta.has_caps() {
        let e = ErrorObject::invalid_params("missing required _meta field io.modelcontextprotocol/clientCapabilities");
        return error_response(StatusCode::BAD_REQUEST, Some(&id), &e);
    }
    if let Err(e) = check_mirrored(shared, headers, &meta.version, method, meta.target) {
        return error_response(StatusCode::BAD_REQUEST, Some(&id), &e);
    }
    if let Some(era) = meta.resolve(&shared.stateless) {
        ext.insert(era);
    }
    let ctx = Run::stateless(shared, headers, ext);
    ctx.run(id, method, params).await.0
}

fn check_mirrored(
    shared: &Shared,
    headers: &HeaderMap,
    version: &str,
    method: &str,
    raw: RawTarget<'_>,
) -> Result<(), ErrorObject> {
    struct Target<'a> {
        name: Option<Cow<'a, str>>,
        uri: Option<Cow<'a, str>>,
        task_id: Option<Cow<'a, str>>,
        arguments: Option<&'a RawValue>,
    }
    fn text(v: Option<&RawValue>) -> Result<Option<Cow<'_, str>>, ErrorObject> {
        match v {
            None => Ok(None),
            Some(v) => serde_json::from_str::<Option<Cow<'_, str>>>(v.get())
                .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}"))),
        }
    }
    // The tasks extension names the task in Mcp-Name on its methods (when the server has it;
    // otherwise they are unknown methods).
    let task_method = matches!(method, methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL)
        && shared.server.offers().tasks.load(std::sync::atomic::Ordering::Relaxed);
    let named = matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ);
    let target = if named || task_method {
        Target {
            name: text(raw.name)?,
            uri: text(raw.uri)?,
            task_id: text(raw.task_id)?,
            arguments: raw.arguments.filter(|a| a.get() != "null"),
        }
    } else {
        Target { name: None, uri: None, task_id: None, arguments: None }
    };
    // `arguments` must be an object (or null) whatever the tool, as when it was decoded here.
    if let Some(a) = target.arguments
        && !a.get().starts_with('{')
    {
        return Err(ErrorObject::invalid_params("invalid params: arguments must be an object"));
    }
    let name = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => target.name.as_deref(),
        methods::RESOURCES_READ => target.uri.as_deref(),
        _ if task_method => target.task_id.as_deref(),
        _ => None,
    };
    let registry;
    // The arguments are decoded only for a tool that mirrors some of them in headers.
    let arguments: Option<JsonObject>;
    let tool = if method == methods::TOOLS_CALL {
        registry = shared.server.registry();
        match name.and_then(|n| registry.tools.get(n)).map(|e| &e.def.input_schema) {
            Some(schema) if headers::mirrors_params(schema) => {
                arguments = match target.arguments {
                    Some(a) => Some(
                        serde_json::from_str(a.get())
                            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))?,
                    ),
                    None => None,
                };
                Some((arguments.as_ref(), schema))
            }
            _ => None,
        }
    } else {
        None
    };
    headers::validate(headers, &headers::BodyFacts { version, method, name, tool })
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Outcome {
    Ok,
    Error,
    Streamed,
    Cancelled,
}

/// How one request is run and answered.
struct Run {
    service: Arc<Session>,
    root: Peer,
    in_flight: InFlight,
    session: Option<Arc<HttpSession>>,
    allow_sse: bool,
    allow_json: bool,
    retry_ms: Option<u64>,
    keep_alive: std::time::Duration,
    buffer: usize,
    extensions: http::Extensions,
}

impl Run {
    fn session(shared: &Shared, headers: &HeaderMap, extensions: http::Extensions, s: Arc<HttpSession>) -> Run {
        Run {
            service: s.service.clone(),
            root: s.peer.clone(),
            in_flight: s.in_flight.clone(),
            session: Some(s),
            allow_sse: accepts(headers, "text/event-stream"),
            allow_json: accepts(headers, "application/json"),
            retry_ms: shared.config.retry_ms,
            keep_alive: shared.config.keep_alive,
            buffer: shared.config.stream_buffer,
            extensions,
        }
    }

    fn stateless(shared: &Shared, headers: &HeaderMap, extensions: http::Extensions) -> Run {
        Run {
            service: shared.stateless.clone(),
            root: shared.stateless_peer.clone(),
            in_flight: InFlight::default(),
            session: None,
            allow_sse: accepts(headers, "text/event-stream"),
            allow_json: accepts(headers, "application/json"),
            retry_ms: None,
            keep_alive: shared.config.keep_alive,
            buffer: shared.config.stream_buffer,
            extensions,
        }
    }

    /// Runs the request; answers JSON when the result comes before anything else (and JSON is
    /// acceptable), SSE otherwise.
    async fn run(mut self, id: RequestId, method: &str, params: Option<&RawValue>) -> (Response, Outcome) {
        let (tx, mut rx) = mpsc::channel::<Outgoing>(self.buffer);
        let peer = self.root.with_out(tx);
        // A session's requests end with it (a child of its token). A stateless request is
        // cancelled only by its response stream going away (`CancelOnDrop` below): a plain token,
        // not a child of the endpoint-wide stateless peer's, whose tree would be one mutex shared
        // by every stateless request on every worker.
        let token = match &self.session {
            Some(_) => Cancel::from_token(self.root.closed_token().child_token()),
            None => Cancel::new(),
        };
        // Handlers may end a session stream early; the client resumes it with Last-Event-ID.
        let close = self.session.as_ref().map(|_| Arc::new(tokio::sync::Notify::new()));
        let q = Queued {
            id: id.clone(),
            method: method.into(),
            params: params.map(|p| p.to_owned()),
            close_stream: close.clone(),
            extensions: std::mem::take(&mut self.extensions),
        };
        let (fin_tx, mut fin_rx) = oneshot::channel();
        let busy = self.session.clone().map(Busy::new);
        match start_request(self.service.clone(), peer, q, token.clone()) {
            Started::Done(out) => {
                let _ = fin_tx.send(Some(out));
                drop(busy);
            }
            Started::Waiting(waiting) => {
                waiting.register(&self.in_flight);
                let in_flight = self.in_flight.clone();
                tokio::spawn(async move {
                    let _ = fin_tx.send(waiting.finish(&in_flight).await);
                    drop(busy);
                });
            }
        }
        // In 2026-07-28 a response stream that goes away cancels the request.
        let mut guard = CancelOnDrop(self.session.is_none().then(|| token.clone()));

        let close_signal = close.clone();
        let close_requested = async move {
            match close_signal {
                Some(c) => c.notified().await,
                None => std::future::pending().await,
            }
        };
        let first = if self.allow_sse {
            tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => First::Message(Some(m)),
                    // The request's sender is gone: its result is on the way.
                    None => First::Final((&mut fin_rx).await.ok().flatten()),
                },
                f = &mut fin_rx => First::Final(f.ok().flatten()),
                // The handler ends its stream before anything was sent: prime it, then end it.
                _ = close_requested => First::Closed,
            }
        } else {
            // JSON only: messages before the result cannot be delivered.
            loop {
                tokio::select! {
                    biased;
                    f = &mut fin_rx => break First::Final(f.ok().flatten()),
                    m = rx.recv() => if m.is_none() { break First::Final((&mut fin_rx).await.ok().flatten()) },
                }
            }
        };
        let queued = match &first {
            First::Final(_) => rx.try_recv().ok(),
            First::Message(_) | First::Closed => None,
        };
        match (first, queued) {
            (First::Final(None), _) => {
                guard.disarm();
                (StatusCode::ACCEPTED.into_response(), Outcome::Cancelled)
            }
            (First::Final(Some(result)), None) if self.allow_json => {
                guard.disarm();
                let (status, outcome) = match &result {
                    // Only results are split (see `envelope::encode_result`).
                    Outgoing::Result(_) => (StatusCode::OK, Outcome::Ok),
                    Outgoing::Frame(body) => status_of(body, self.session.is_none()),
                };
                let mut r = (status, [(CONTENT_TYPE, HeaderValue::from_static("application/json"))], json_body(result))
                    .into_response();
                if let Some(s) = &self.session {
                    r.headers_mut()
                        .insert(SESSION_ID, HeaderValue::from_str(&s.id).unwrap_or(HeaderValue::from_static("")));
                }
                (r, outcome)
            }
            (first, queued) => {
                let mut pending: Vec<Bytes> = Vec::new();
                let mut fin = None;
                let closed_early = matches!(first, First::Closed);
                match first {
                    First::Message(Some(m)) => pending.push(m.into_bytes()),
                    First::Message(None) | First::Closed => {}
                    First::Final(f) => fin = f.map(Outgoing::into_bytes),
                }
                if let Some(q) = queued {
                    pending.push(q.into_bytes());
                    while let Ok(m) = rx.try_recv() {
                        pending.push(m.into_bytes());
                    }
                }
                let close = match (closed_early, close) {
                    (true, _) => CloseStream::Now,
                    (false, Some(n)) => CloseStream::OnRequest(n),
                    (false, None) => CloseStream::Never,
                };
                let (body, session_id) = self.stream(pending, fin, rx, fin_rx, guard, close);
                (sse_response(body, session_id.as_deref()), Outcome::Streamed)
            }
        }
    }

    /// Streams messages, then the result, as SSE.
    fn stream(
        &self,
        pending: Vec<Bytes>,
        fin: Option<Bytes>,
        mut rx: mpsc::Receiver<Outgoing>,
        fin_rx: oneshot::Receiver<Option<Outgoing>>,
        guard: CancelOnDrop,
        close: CloseStream,
    ) -> (axum::body::Body, Option<String>) {
        let (sse_tx, sse_rx) = mpsc::channel(self.buffer.max(pending.len() + 2));
        match &self.session {
            Some(s) => {
                let stream = s.open_stream();
                let version = s.service.negotiated_version();
                if version.is_some_and(|v| v >= ProtocolVersion::V2025_11_25) {
                    let _ = sse_tx.try_send(SseItem::Prime { id: format!("{stream}-0"), retry_ms: self.retry_ms });
                }
                s.attach(stream, None, sse_tx);
                if matches!(close, CloseStream::Now) {
                    s.detach(stream);
                } else if let CloseStream::OnRequest(close) = close {
                    // `notify_one` stores a permit, so a request made before this point counts.
                    let session = s.clone();
                    tokio::spawn(async move {
                        close.notified().await;
                        session.detach(stream);
                    });
                }
                let session = s.clone();
                let busy = Busy::new(s.clone());
                tokio::spawn(async move {
                    for m in pending {
                        session.emit(stream, m);
                    }
                    let fin = match fin {
                        Some(f) => Some(f),
                        None => forward(&mut rx, fin_rx, |m| session.emit(stream, m)).await,
                    };
                    if let Some(f) = fin {
                        session.emit(stream, f);
                    }
                    session.finish(stream);
                    drop(busy);
                });
                let busy = Busy::new(s.clone());
                let on_drop = OnDrop(Some(Box::new(move || {
                    busy.0.forget_stream(stream);
                    drop(busy);
                })));
                (sse::body(sse_rx, self.keep_alive, guard, on_drop), Some(s.id.to_string()))
            }
            None => {
                tokio::spawn(async move {
                    let send = |m: Bytes| {
                        let _ = sse_tx.try_send(SseItem::Message { id: None, data: m });
                    };
                    for m in pending {
                        send(m);
                    }
                    let fin = match fin {
                        Some(f) => Some(f),
                        None => forward(&mut rx, fin_rx, send).await,
                    };
                    if let Some(f) = fin {
                        let _ = sse_tx.send(SseItem::Message { id: None, data: f }).await;
                    }
                    let _ = sse_tx.send(SseItem::End).await;
                });
                (sse::body(sse_rx, self.keep_alive, guard, OnDrop(None)), None)
            }
        }
    }
}

/// Whether the handler ends its (resumable) stream before the result.
enum CloseStream {
    Never,
    /// It already asked, before anything was sent.
    Now,
    /// It may ask later.
    OnRequest(Arc<tokio::sync::Notify>),
}

enum First {
    Message(Option<Outgoing>),
    Final(Option<Outgoing>),
    /// The handler asked to end its stream before sending anything.
    Closed,
}

/// Passes messages to `emit` until the result arrives.
async fn forward(
    rx: &mut mpsc::Receiver<Outgoing>,
    mut fin_rx: oneshot::Receiver<Option<Outgoing>>,
    emit: impl Fn(Bytes),
) -> Option<Bytes> {
    loop {
        tokio::select! {
            biased;
            m = rx.recv() => match m {
                Some(m) => emit(m.into_bytes()),
                None => return fin_rx.await.ok().flatten().map(Outgoing::into_bytes),
            },
            f = &mut fin_rx => {
                while let Ok(m) = rx.try_recv() {
                    emit(m.into_bytes());
                }
                return f.ok().flatten().map(Outgoing::into_bytes);
            }
        }
    }
}

/// The body of a JSON answer; a split result is sent as its three parts (with its exact
/// length, so the response keeps a `Content-Length`), not joined first.
fn json_body(message: Outgoing) -> axum::body::Body {
    match message {
        Outgoing::Frame(v) => axum::body::Body::from(v),
        Outgoing::Result(parts) => {
            let (head, body) = parts.into_parts();
            let chunks = [Bytes::from(head), body, Bytes::from_static(b"}")];
            let len = chunks.iter().map(|c| c.len() as u64).sum();
            axum::body::Body::new(Chunks { chunks: chunks.into_iter(), len })
        }
    }
}

/// A body of a few chunks of known total length.
struct Chunks {
    chunks: std::array::IntoIter<Bytes, 3>,
    len: u64,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let next = self.chunks.next();
        if let Some(c) = &next {
            self.len -= c.len() as u64;
        }
        std::task::Poll::Ready(next.map(|c| Ok(http_body::Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.len == 0 && self.chunks.len() == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.len)
    }
}

/// The HTTP status of a JSON answer: in 2026-07-28, errors about the request itself are 400
/// and unknown methods 404.
fn status_of(body: &[u8], stateless: bool) -> (StatusCode, Outcome) {
    // The usual case, without scanning the whole result: the envelope encoder writes
    // `{"jsonrpc":"2.0","id":ID,"result":…}`.
    if is_result(body) {
        return (StatusCode::OK, Outcome::Ok);
    }
    #[derive(Deserialize)]
    struct Code {
        code: i32,
    }
    #[derive(Deserialize)]
    struct Peek {
        #[serde(default)]
        error: Option<Code>,
    }
    let code = serde_json::from_slice::<Peek>(body).ok().and_then(|p| p.error).map(|e| e.code);
    let Some(code) = code else { return (StatusCode::OK, Outcome::Ok) };
    let status = match code {
        -32601 if stateless => StatusCode::NOT_FOUND,
        -32700 | -32600 | -32020 | -32021 | -32022 if stateless => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    (status, Outcome::Error)
}

/// True when `body` starts as `envelope::encode_result` writes a result response: the id (a
/// number or a string) followed by `"result"`. False means "parse it to know".
fn is_result(body: &[u8]) -> bool {
    let Some(rest) = body.strip_prefix(br#"{"jsonrpc":"2.0","id":"#) else { return false };
    let id_len = match rest.first() {
        Some(b'"') => {
            let mut i = 1;
            loop {
                match rest.get(i) {
                    Some(b'\\') => i += 2,
                    Some(b'"') => break i + 1,
                    Some(_) => i += 1,
                    None => return false,
                }
            }
        }
        _ => rest.iter().take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')).count(),
    };
    id_len > 0 && rest.get(id_len..).is_some_and(|r| r.starts_with(br#","result":"#))
}

/// A 2025-03-26 batch: every request answered in one JSON array.
async fn batch(shared: Arc<Shared>, headers: &HeaderMap, ext: http::Extensions, items: Vec<&RawValue>) -> Response {
    let owner = super::principal(&ext);
    let Some(s) = session_header(headers).and_then(|id| shared.sessions.get(id, owner.as_deref())) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            &ErrorObject::invalid_request("batches are accepted only within a 2025-03-26 session"),
        );
    };
    if s.service.negotiated_version() != Some(ProtocolVersion::V2025_03_26) {
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            &ErrorObject::invalid_request("JSON-RPC batches are not supported by this protocol revision"),
        );
    }
    // Scopes first: a batch runs whole or is refused whole.
    #[cfg(feature = "auth-server")]
    for raw in &items {
        if let Ok(Incoming::Request { method, params, .. }) = envelope::decode_one(raw.get())
            && let Some(refused) = scope_refusal(&ext, &method, params)
        {
            return refused;
        }
    }
    let mut replies = Vec::new();
    let mut requests = Vec::new();
    for raw in items {
        match envelope::decode_one(raw.get()) {
            Err(Invalid { id, error }) => replies.push(envelope::encode_error(id.as_ref(), &error)),
            Ok(Incoming::Response { id, outcome }) => {
                s.peer.complete(&id, outcome);
            }
            Ok(Incoming::Notification { method, params }) => {
                route_notification(&*s.service, &s.peer, &s.in_flight, &method, params)
            }
            Ok(Incoming::Request { id, method, .. }) if method == methods::INITIALIZE => {
                replies.push(envelope::encode_error(
                    Some(&id),
                    &ErrorObject::invalid_request("initialize must not be part of a batch"),
                ));
            }
            Ok(Incoming::Request { id, method, params }) => {
                let token = Cancel::from_token(s.peer.closed_token().child_token());
                register(&s.in_flight, id.clone(), &token);
                let mut q = Queued::new(id, &method, params);
                q.extensions = ext.clone();
                // Messages a batched request sends before its result cannot be delivered.
                let (tx, _rx) = mpsc::channel(1);
                requests.push(run_request(s.service.clone(), s.peer.with_out(tx), s.in_flight.clone(), q, token));
            }
        }
    }
    let _busy = Busy::new(s.clone());
    replies.extend(futures_util::future::join_all(requests).await.into_iter().flatten().map(|(_, b)| b.into_vec()));
    if replies.is_empty() {
        return accepted();
    }
    let body = envelope::encode_batch(&replies);
    (StatusCode::OK, [(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_told_from_errors_without_a_parse() {
        for (body, result) in [
            (&br#"{"jsonrpc":"2.0","id":7,"result":{}}"#[..], true),
            (br#"{"jsonrpc":"2.0","id":-7,"result":{"error":1}}"#, true),
            (br#"{"jsonrpc":"2.0","id":"a\",\"result\":","error":{"code":1,"message":""}}"#, false),
            (br#"{"jsonrpc":"2.0","id":"x","result":[]}"#, true),
            (br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#, false),
            (br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"no"}}"#, false),
            (br#"{"jsonrpc":"2.0","id":"unterminated"#, false),
        ] {
            assert_eq!(is_result(body), result, "{}", String::from_utf8_lossy(body));
        }
        let (status, outcome) = status_of(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#, true);
        assert_eq!((status, outcome), (StatusCode::NOT_FOUND, Outcome::Error));
        assert_eq!(status_of(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#, true), (StatusCode::OK, Outcome::Ok));
    }
}

//! `POST`: one JSON-RPC message (or a 2025-03-26 batch) in, JSON or SSE out ([`respond`](super::respond)).
//!
//! What the endpoint checks itself (media types, the body's size, sessions, scopes, the
//! headers that mirror a stateless request's params) is here; the request then runs behind the
//! engine's seam ([`Link`]), which resolves a stateless request's era through its hook from the
//! params read here (and keeps what they say of a tool call), so that the era layer does not
//! read them again.

use std::borrow::Cow;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use portico_schema::{ErrorObject, JsonObject, ProtocolVersion, RequestId, methods};
use serde_json::value::RawValue;

use super::headers::{self, Found};
use super::respond::{Outcome, Run};
use super::sessions::{Busy, Full, GET_STREAM};
use super::{Accepted, BodyError, SESSION_ID, Shared, error_response, read_body, session_header};
use crate::peek::{ParamsPeek, RequestMeta, may_hold_meta};
use crate::rpc::link::{self, Frame, Incoming, Invalid, Link, Outgoing};

pub(super) async fn post<B>(shared: Arc<Shared>, found: &Found<'_>, ext: http::Extensions, body: B) -> Response
where
    B: http_body::Body<Data = bytes::Bytes>,
{
    let json = found
        .content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &ErrorObject::invalid_request("Content-Type must be application/json"),
        );
    }
    let accept = Accepted::of(found.accept);
    if !accept.json && !accept.sse {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &ErrorObject::invalid_request("Accept must allow application/json or text/event-stream"),
        );
    }
    let limit = shared.config.max_body;
    // A declared length past the limit is refused unread (hyper's body knows its
    // `Content-Length`).
    if usize::try_from(body.size_hint().lower()).map_or(true, |n| n > limit) {
        return BodyError::TooLarge.response(limit);
    }
    let bytes = match read_body(body, limit).await {
        Ok(b) => b,
        Err(e) => return e.response(limit),
    };
    match link::decode(&bytes) {
        Frame::Single(Err(Invalid { id, error })) => error_response(StatusCode::BAD_REQUEST, id.as_ref(), &error),
        Frame::Single(Ok(msg)) => single(shared, found, accept, ext, msg).await,
        Frame::Batch(items) => batch(shared, found, ext, items).await,
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

/// The params members that `Mcp-Name` and `Mcp-Param-*` mirror, undecoded.
#[derive(Clone, Copy)]
struct Target<'a> {
    name: Option<&'a str>,
    uri: Option<&'a str>,
    task_id: Option<&'a str>,
    arguments: Option<&'a RawValue>,
}

/// The params read once, when their `_meta` names a protocol version (a stateless request):
/// the `_meta`, what the headers mirror, and what a tool call carries, for the era layer.
fn peek_stateless(params: Option<&RawValue>) -> Result<Option<(RequestMeta<'_>, ParamsPeek<'_>)>, ErrorObject> {
    let Some(p) = params else { return Ok(None) };
    // An object without `_meta` decodes to no `_meta` whatever else it holds: skip the pass.
    if p.get().starts_with('{') && !may_hold_meta(p.get()) {
        return Ok(None);
    }
    let mut peek = ParamsPeek::read(params)?;
    Ok(peek.meta.take().filter(RequestMeta::is_stateless).map(|meta| (meta, peek)))
}

/// A handshake-era request may name any known revision in `MCP-Protocol-Version` (or none:
/// 2025-03-26 is assumed); anything else is 400.
fn handshake_version_refused(protocol_version: Option<&HeaderValue>) -> Option<Response> {
    match protocol_version.map(|v| v.to_str().ok().and_then(ProtocolVersion::parse)) {
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

async fn single(
    shared: Arc<Shared>,
    found: &Found<'_>,
    accept: Accepted,
    ext: http::Extensions,
    msg: Incoming<'_>,
) -> Response {
    let sid = session_header(found.session_id);
    let owner = super::principal(&ext);
    let session = sid.and_then(|id| shared.sessions.get(id, owner.as_deref()));
    match msg {
        Incoming::Request { id, method, params } => {
            if let Some(refused) = scope_refusal(&ext, &method, params) {
                return refused;
            }
            let peek = match peek_stateless(params) {
                Ok(p) => p,
                // Whatever is wrong with it, a handshake request's `_meta` is for initialize
                // to judge.
                Err(_) if method == methods::INITIALIZE => None,
                Err(e) => return error_response(StatusCode::BAD_REQUEST, Some(&id), &e),
            };
            // The dual-era rule: a request carrying the stateless `_meta` is a 2026-07-28
            // request, whatever its method (`initialize` included, which that revision lacks).
            if let Some(peek) = peek {
                let (meta, peek) = peek;
                let req = StatelessRequest { id, method: &method, params, meta, peek };
                return stateless(&shared, found, accept, ext, req).await;
            }
            if method == methods::INITIALIZE {
                return initialize(&shared, accept, ext, id, params).await;
            }
            match (sid, session) {
                (Some(_), Some(s)) => {
                    if let Some(r) = handshake_version_refused(found.protocol_version) {
                        return r;
                    }
                    let ctx = Run::session(&shared, accept, ext, s);
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
                s.link.notify(&method, params);
                accepted()
            }
            (Some(_), None) => unknown_session(),
            // Stateless notifications carry nothing the server must act on over HTTP (closing
            // a response stream is how requests are cancelled).
            (None, _) => accepted(),
        },
        Incoming::Response { id, outcome } => match (sid, session) {
            (Some(_), Some(s)) => {
                s.link.respond(&id, outcome);
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
    accept: Accepted,
    ext: http::Extensions,
    id: RequestId,
    params: Option<&RawValue>,
) -> Response {
    let (link, mut rx) = Link::session(shared.server.endpoint(), shared.config.stream_buffer);
    let session = match shared.sessions.create(link, super::principal(&ext)) {
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
    let ctx = Run::session(shared, accept, ext, session.clone());
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

/// A stateless request as the endpoint decoded it, with what it read of the params.
struct StatelessRequest<'a> {
    id: RequestId,
    method: &'a str,
    params: Option<&'a RawValue>,
    meta: RequestMeta<'a>,
    peek: ParamsPeek<'a>,
}

async fn stateless(
    shared: &Arc<Shared>,
    found: &Found<'_>,
    accept: Accepted,
    mut ext: http::Extensions,
    req: StatelessRequest<'_>,
) -> Response {
    let StatelessRequest { id, method, params, meta, mut peek } = req;
    if !meta.has_capabilities() {
        let e = ErrorObject::invalid_params("missing required _meta field io.modelcontextprotocol/clientCapabilities");
        return error_response(StatusCode::BAD_REQUEST, Some(&id), &e);
    }
    let version = meta.protocol_version.as_deref().unwrap_or_default();
    let target = Target { name: peek.name, uri: peek.uri, task_id: peek.task_id, arguments: peek.arguments };
    if let Err(e) = check_mirrored(shared, found, version, method, target) {
        return error_response(StatusCode::BAD_REQUEST, Some(&id), &e);
    }
    peek.meta = Some(meta);
    shared.stateless.resolve_ahead(method, peek, &mut ext);
    let ctx = Run::stateless(shared, accept, ext);
    ctx.run(id, method, params).await.0
}

fn check_mirrored(
    shared: &Shared,
    found: &Found<'_>,
    version: &str,
    method: &str,
    raw: Target<'_>,
) -> Result<(), ErrorObject> {
    struct Decoded<'a> {
        name: Option<Cow<'a, str>>,
        uri: Option<Cow<'a, str>>,
        task_id: Option<Cow<'a, str>>,
        arguments: Option<&'a RawValue>,
    }
    fn text(v: Option<&str>) -> Result<Option<Cow<'_, str>>, ErrorObject> {
        match v {
            None => Ok(None),
            // A plain string (the usual case) is its own text.
            Some(v) if let Some(t) = ParamsPeek::string(v) => Ok(Some(t)),
            Some(v) => serde_json::from_str::<Option<Cow<'_, str>>>(v)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}"))),
        }
    }
    // The tasks extension names the task in Mcp-Name on its methods (when the server has it;
    // otherwise they are unknown methods).
    let task_method = matches!(method, methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL)
        && shared.server.offers_tasks();
    let named = matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ);
    let target = if named || task_method {
        Decoded {
            name: text(raw.name)?,
            uri: text(raw.uri)?,
            task_id: text(raw.task_id)?,
            arguments: raw.arguments.filter(|a| a.get() != "null"),
        }
    } else {
        Decoded { name: None, uri: None, task_id: None, arguments: None }
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
    let schema;
    // The arguments are decoded only for a tool that mirrors some of them in headers.
    let arguments: Option<JsonObject>;
    let tool = if method == methods::TOOLS_CALL {
        schema = name.and_then(|n| shared.server.mirroring_input_schema(n));
        match schema.as_deref() {
            Some(schema) => {
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
    headers::validate(found, &headers::BodyFacts { version, method, name, tool })
}

/// A 2025-03-26 batch: every request answered in one JSON array.
async fn batch(shared: Arc<Shared>, found: &Found<'_>, ext: http::Extensions, items: Vec<&RawValue>) -> Response {
    let owner = super::principal(&ext);
    let Some(s) = session_header(found.session_id).and_then(|id| shared.sessions.get(id, owner.as_deref())) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            &ErrorObject::invalid_request("batches are accepted only within a 2025-03-26 session"),
        );
    };
    if s.link.negotiated_version() != Some(ProtocolVersion::V2025_03_26) {
        return error_response(
            StatusCode::BAD_REQUEST,
            None,
            &ErrorObject::invalid_request("JSON-RPC batches are not supported by this protocol revision"),
        );
    }
    // Scopes first: a batch runs whole or is refused whole.
    #[cfg(feature = "auth-server")]
    for raw in &items {
        if let Ok(Incoming::Request { method, params, .. }) = link::decode_one(raw.get())
            && let Some(refused) = scope_refusal(&ext, &method, params)
        {
            return refused;
        }
    }
    let mut replies = Vec::new();
    let mut requests = Vec::new();
    for raw in items {
        match link::decode_one(raw.get()) {
            Err(Invalid { id, error }) => replies.push(link::encode_error(id.as_ref(), &error)),
            Ok(Incoming::Response { id, outcome }) => s.link.respond(&id, outcome),
            Ok(Incoming::Notification { method, params }) => s.link.notify(&method, params),
            Ok(Incoming::Request { id, method, .. }) if method == methods::INITIALIZE => {
                replies.push(link::encode_error(
                    Some(&id),
                    &ErrorObject::invalid_request("initialize must not be part of a batch"),
                ));
            }
            Ok(Incoming::Request { id, method, params }) => {
                let buffer = 1;
                let req =
                    link::Request { id, method: &method, params, extensions: ext.clone(), close_stream: None, buffer };
                requests.push(s.link.run_batched(req));
            }
        }
    }
    let _busy = Busy::new(s.clone());
    replies.extend(futures_util::future::join_all(requests).await.into_iter().flatten().map(Outgoing::into_vec));
    if replies.is_empty() {
        return accepted();
    }
    let body = link::encode_batch(&replies);
    (StatusCode::OK, [(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

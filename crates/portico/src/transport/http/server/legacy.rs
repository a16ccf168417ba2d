//! The HTTP+SSE transport of 2024-11-05, served beside the Streamable HTTP endpoint: `GET` on
//! the SSE path opens a session whose first event (`endpoint`) names the URL to POST messages
//! to; every answer and server message arrives on that SSE stream.
//!
//! Each session is an in-memory connection served by the same engine as stdio, so everything
//! (concurrency, cancellation, the handshake era) behaves identically.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use portico_schema::ErrorObject;
use rand::RngCore;

use super::sse::{self, CancelOnDrop, OnDrop, SseItem};
use super::{Shared, accepts, error_response, security, sse_response};
use crate::sync::lock;
use crate::transport::memory::{self, MemoryWriter};
use crate::transport::{FrameReader, FrameWriter, Transport};

/// Live legacy sessions: their id, who opened them (with `auth-server`), and where POSTed
/// messages go.
#[derive(Default)]
pub(crate) struct LegacySessions {
    inner: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    /// The principal that opened the session (with `auth-server`).
    owner: Option<Arc<str>>,
    /// Where POSTed messages are written, one at a time.
    writer: Arc<tokio::sync::Mutex<MemoryWriter>>,
}

impl LegacySessions {
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).len()
    }
}

/// `GET {sse path}`: a new session.
pub(crate) async fn open(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    if let Some(r) = refused(&shared, &req) {
        return r;
    }
    if !accepts(req.headers(), "text/event-stream") {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &ErrorObject::invalid_request("Accept must allow text/event-stream"),
        );
    }
    let Some(legacy) = &shared.config.legacy else { return StatusCode::NOT_FOUND.into_response() };
    if shared.legacy.len() >= shared.config.max_sessions {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            &ErrorObject::internal_error("too many sessions"),
        );
    }
    let mut raw = [0u8; 16];
    rand::rng().fill_bytes(&mut raw);
    let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let (ours, theirs) = memory::pair_with_capacity(shared.config.stream_buffer);
    shared.server.connect(theirs);
    let (mut reader, writer) = ours.split();
    let owner = super::principal(req.extensions());
    lock(&shared.legacy.inner).insert(id.clone(), Entry { owner, writer: Arc::new(tokio::sync::Mutex::new(writer)) });

    let (tx, rx) = sse::channel(shared.config.stream_buffer, shared.config.stream_buffer_bytes);
    let endpoint = format!("{}?sessionId={id}", legacy.post_path);
    let _ = tx.try_send(SseItem::Endpoint(endpoint));
    tokio::spawn(async move {
        // Server → client: every frame becomes a `message` event, until either side goes.
        while let Ok(Some(frame)) = reader.read_frame().await {
            if tx.send(SseItem::Message { id: None, data: frame }).await.is_err() {
                break;
            }
        }
        let _ = tx.send(SseItem::End).await;
    });
    let weak = Arc::downgrade(&shared);
    let on_drop = OnDrop(Some(Box::new(move || {
        // The client went away: dropping the writer ends the server's connection.
        if let Some(shared) = weak.upgrade() {
            lock(&shared.legacy.inner).remove(&id);
        }
    })));
    sse_response(sse::body(rx, shared.config.keep_alive, CancelOnDrop(None), on_drop), None)
}

/// `POST {post path}?sessionId=…`: a message from the client; answers arrive on its stream.
pub(crate) async fn message(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    if let Some(r) = refused(&shared, &req) {
        return r;
    }
    let session_id =
        req.uri().query().and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("sessionId="))).map(str::to_owned);
    let Some(id) = session_id else {
        return error_response(StatusCode::BAD_REQUEST, None, &ErrorObject::invalid_request("missing sessionId"));
    };
    // A session opened by an authorized principal is unknown to anyone else.
    let caller = super::principal(req.extensions());
    let writer = lock(&shared.legacy.inner)
        .get(&id)
        .filter(|e| e.owner.is_none() || e.owner == caller)
        .map(|e| e.writer.clone());
    let Some(writer) = writer else {
        return error_response(StatusCode::NOT_FOUND, None, &ErrorObject::invalid_request("unknown session"));
    };
    let limit = shared.config.max_body;
    #[cfg_attr(not(feature = "auth-server"), allow(unused_variables))]
    let (parts, body) = req.into_parts();
    let frame = match super::read_body(body, limit).await {
        Ok(b) => b,
        Err(e) => return e.response(limit),
    };
    #[cfg(feature = "auth-server")]
    if let Ok(crate::rpc::link::Incoming::Request { method, params, .. }) =
        crate::rpc::link::decode_one(std::str::from_utf8(&frame).unwrap_or(""))
        && let Some(refused) = super::post::scope_refusal(&parts.extensions, &method, params)
    {
        return refused;
    }
    // Waiting for room here is the backpressure on a client that sends faster than it reads.
    if writer.lock().await.write_frame(&frame).await.is_err() {
        return error_response(StatusCode::NOT_FOUND, None, &ErrorObject::invalid_request("the session has ended"));
    }
    StatusCode::ACCEPTED.into_response()
}

fn refused(shared: &Shared, req: &Request) -> Option<Response> {
    let h = req.headers();
    security::check(&shared.config.hosts, h.get(http::header::HOST), h.get(http::header::ORIGIN)).err().map(|_| {
        error_response(StatusCode::FORBIDDEN, None, &ErrorObject::invalid_request("Host or Origin not allowed"))
    })
}

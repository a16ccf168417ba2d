//! How one request of a POST is answered: JSON when its result comes before anything else
//! (and the client accepts JSON), SSE otherwise; a session's SSE streams are resumable. The
//! request itself runs behind the engine's seam ([`Link::run`]).

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use portico_schema::{ProtocolVersion, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc};

use super::sessions::{Busy, HttpSession};
use super::sse::{self, CancelOnDrop, OnDrop, SseItem};
use super::{Accepted, SESSION_ID, Shared, sse_response};
use crate::rpc::link::{self, Answer, Exchange, Link, Outgoing};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Outcome {
    Ok,
    Error,
    Streamed,
    Cancelled,
}

/// How one request is run and answered.
pub(super) struct Run<'a> {
    shared: &'a Shared,
    /// `None` for a stateless request.
    session: Option<Arc<HttpSession>>,
    /// The answers the client's `Accept` admits.
    accepted: Accepted,
    extensions: http::Extensions,
}

impl<'a> Run<'a> {
    pub(super) fn session(
        shared: &'a Shared,
        accepted: Accepted,
        extensions: http::Extensions,
        s: Arc<HttpSession>,
    ) -> Self {
        Run { shared, session: Some(s), accepted, extensions }
    }

    pub(super) fn stateless(shared: &'a Shared, accepted: Accepted, extensions: http::Extensions) -> Self {
        Run { shared, session: None, accepted, extensions }
    }

    fn link(&self) -> &Link {
        self.session.as_ref().map_or(&self.shared.stateless, |s| &s.link)
    }

    /// Runs the request, then answers it with what comes back first.
    pub(super) async fn run(mut self, id: RequestId, method: &str, params: Option<&RawValue>) -> (Response, Outcome) {
        // Handlers may end a session stream early; the client resumes it with Last-Event-ID.
        let close = self.session.as_ref().map(|_| Arc::new(Notify::new()));
        let request = link::Request {
            id,
            method,
            params,
            extensions: std::mem::take(&mut self.extensions),
            close_stream: close.clone(),
            buffer: self.shared.config.stream_buffer,
        };
        let busy = self.session.clone().map(Busy::new);
        let mut exchange = self.link().run(request, busy);
        // In 2026-07-28 a response stream that goes away cancels the request.
        let guard = CancelOnDrop(self.session.is_none().then(|| exchange.cancel.clone()));
        let first = self.first(&mut exchange, close.clone()).await;
        self.answer(first, exchange, guard, close)
    }

    /// What the request sends first: a message (only when SSE is acceptable), its result, or
    /// the end of its stream.
    async fn first(&self, exchange: &mut Exchange, close: Option<Arc<Notify>>) -> First {
        let Exchange { messages: rx, result: fin_rx, .. } = exchange;
        let close_requested = async move {
            match close {
                Some(c) => c.notified().await,
                None => std::future::pending().await,
            }
        };
        // A request that ended having sent nothing first: its result is there.
        let Some(rx) = rx else { return First::Final((&mut *fin_rx).await) };
        if self.accepted.sse {
            tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => First::Message(Some(m)),
                    // The request's sender is gone: its result is on the way.
                    None => First::Final((&mut *fin_rx).await),
                },
                f = &mut *fin_rx => First::Final(f),
                // The handler ends its stream before anything was sent: prime it, then end it.
                _ = close_requested => First::Closed,
            }
        } else {
            // JSON only: messages before the result cannot be delivered.
            loop {
                tokio::select! {
                    biased;
                    f = &mut *fin_rx => break First::Final(f),
                    m = rx.recv() => if m.is_none() { break First::Final((&mut *fin_rx).await) },
                }
            }
        }
    }

    /// The response: 202 for a cancelled request, JSON for a result that came alone, SSE for
    /// the rest.
    fn answer(
        &self,
        first: First,
        exchange: Exchange,
        mut guard: CancelOnDrop,
        close: Option<Arc<Notify>>,
    ) -> (Response, Outcome) {
        let Exchange { messages: mut rx, result: fin_rx, .. } = exchange;
        let queued = match (&first, &mut rx) {
            (First::Final(_), Some(rx)) => rx.try_recv().ok(),
            _ => None,
        };
        match (first, queued) {
            (First::Final(None), _) => {
                guard.disarm();
                (StatusCode::ACCEPTED.into_response(), Outcome::Cancelled)
            }
            (First::Final(Some(result)), None) if self.accepted.json => {
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
                if let (Some(q), Some(rx)) = (queued, &mut rx) {
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
        mut rx: Option<mpsc::Receiver<Outgoing>>,
        fin_rx: Answer,
        guard: CancelOnDrop,
        close: CloseStream,
    ) -> (axum::body::Body, Option<String>) {
        let config = &self.shared.config;
        let (sse_tx, sse_rx) = sse::channel(config.stream_buffer.max(pending.len() + 2), config.stream_buffer_bytes);
        match &self.session {
            Some(s) => {
                let stream = s.open_stream();
                let version = s.link.negotiated_version();
                if version.is_some_and(|v| v >= ProtocolVersion::V2025_11_25) {
                    let _ = sse_tx.try_send(SseItem::Prime { id: format!("{stream}-0"), retry_ms: config.retry_ms });
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
                (sse::body(sse_rx, config.keep_alive, guard, on_drop), Some(s.id.to_string()))
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
                (sse::body(sse_rx, config.keep_alive, guard, OnDrop(None)), None)
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
async fn forward(rx: &mut Option<mpsc::Receiver<Outgoing>>, mut fin_rx: Answer, emit: impl Fn(Bytes)) -> Option<Bytes> {
    let Some(rx) = rx else { return fin_rx.await.map(Outgoing::into_bytes) };
    loop {
        tokio::select! {
            biased;
            m = rx.recv() => match m {
                Some(m) => emit(m.into_bytes()),
                None => return fin_rx.await.map(Outgoing::into_bytes),
            },
            f = &mut fin_rx => {
                while let Ok(m) = rx.try_recv() {
                    emit(m.into_bytes());
                }
                return f.map(Outgoing::into_bytes);
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

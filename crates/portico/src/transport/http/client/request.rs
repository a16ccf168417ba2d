//! One request's HTTP exchange: POST, then its answer as JSON or as an SSE stream (resumed
//! with `GET` + `Last-Event-ID` when it breaks), with a new session when the old one expired.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use portico_schema::{ErrorCode, RequestId, methods};
use tracing::debug;

use super::frame::{self, OutRequest};
use super::reply::Reply;
use super::shared::{self, Shared, content_type, drain, is_event_stream, read_body};
use super::sse::{Cursor, Event, Events};
use super::{legacy, session};
use crate::sync::lock;

/// Starts the exchange of one request in its own task.
pub(super) fn spawn(shared: Arc<Shared>, frame: Bytes, req: OutRequest) {
    if req.method == methods::INITIALIZE {
        *lock(&shared.init) = Some((req.id.clone(), frame.clone()));
    }
    let abort = shared.track(&req.id, req.stateless.is_some());
    // Boxed before it is spawned: the exchange's future is large, and the task's cell and the
    // runtime's hand-offs would each copy it whole.
    tokio::spawn(Box::pin(async move {
        tokio::select! {
            biased;
            _ = abort.cancelled() => debug!(id = %req.id, "request cancelled; its HTTP exchange is dropped"),
            _ = exchange(&shared, &frame, &req) => {}
        }
        shared.untrack(&req.id);
    }));
}

/// What is expected on an answer: which request it answers, and what to learn from it.
pub(super) struct Answer {
    pub id: RequestId,
    method: String,
    stateless: bool,
    /// Keep the answer instead of handing it up (a repeated `initialize`).
    capture: bool,
    pub answered: Option<Bytes>,
    /// Set once another message of this exchange went to the reader: the answer then follows
    /// it the same way, so that the caller sees them in order.
    relayed: bool,
}

impl Answer {
    pub(super) fn to(req: &OutRequest) -> Self {
        Answer {
            id: req.id.clone(),
            method: req.method.clone(),
            stateless: req.stateless.is_some(),
            capture: false,
            answered: None,
            relayed: false,
        }
    }

    /// An answer kept for the transport itself.
    pub(super) fn captured(id: RequestId, method: &str) -> Self {
        Answer { id, method: method.to_owned(), stateless: false, capture: true, answered: None, relayed: false }
    }

    fn is_answered(&self) -> bool {
        self.answered.is_some()
    }

    /// Hands one received message up, learning from it on the way.
    pub(super) async fn deliver(&mut self, shared: &Shared, frame: Bytes) {
        let response_to = frame::response_id(&frame);
        self.deliver_read(shared, frame, response_to).await;
    }

    /// [`deliver`](Self::deliver) of a frame already read: `response_to` is the id of the
    /// response it is.
    async fn deliver_read(&mut self, shared: &Shared, frame: Bytes, response_to: Option<RequestId>) {
        if response_to.as_ref() != Some(&self.id) {
            self.relayed = true;
            shared.deliver(frame).await;
            return;
        }
        let mut frame = frame;
        if self.method == methods::INITIALIZE
            && let Some(v) = frame::negotiated_version(&frame)
        {
            shared.status.update(|n| n.version = Some(v));
        }
        if self.stateless
            && self.method == methods::TOOLS_LIST
            && let Some(rewritten) = lock(&shared.mirrors).observe_tools_list(&frame)
        {
            frame = Bytes::from(rewritten);
        }
        self.answered = Some(frame.clone());
        self.hand_up(shared, frame).await;
    }

    /// Hands the answer to the caller: straight to it when nothing of this exchange went
    /// through the reader before, else through the reader too.
    async fn hand_up(&self, shared: &Shared, frame: Bytes) {
        if self.capture || (!self.relayed && shared.complete_directly(&frame, &self.id)) {
            return;
        }
        shared.deliver(frame).await;
    }

    /// Completes the caller's request with `frame` when it is this exchange's answer and there
    /// is nothing to learn from it: read once, not first for its id and then for the caller.
    fn completes_directly(&mut self, shared: &Shared, frame: &Bytes) -> bool {
        let learns = self.method == methods::INITIALIZE || (self.stateless && self.method == methods::TOOLS_LIST);
        if self.capture || self.relayed || learns || !shared.complete_directly(frame, &self.id) {
            return false;
        }
        self.answered = Some(frame.clone());
        true
    }

    /// Answers the request with an error (unless it was answered already).
    pub(super) async fn fail(&mut self, shared: &Shared, frame: Bytes) {
        if self.is_answered() {
            return;
        }
        self.answered = Some(frame.clone());
        self.hand_up(shared, frame).await;
    }

    async fn fail_with(&mut self, shared: &Shared, code: ErrorCode, message: String) {
        let f = frame::error_response(&self.id, code, message, None);
        self.fail(shared, f).await
    }
}

/// POSTs the request and hands up its answer, whatever happens.
async fn exchange(shared: &Arc<Shared>, frame: &Bytes, req: &OutRequest) {
    let mut answer = Answer::to(req);
    let mut may_renew = true;
    let mut may_refetch = true;
    // The request as read from `frame` again, when the sender's routing left out arguments a
    // header now turns out to need.
    let mut reread: Option<OutRequest> = None;
    loop {
        let req = reread.as_ref().unwrap_or(req);
        let with_session = req.stateless.is_none() && req.method != methods::INITIALIZE;
        let sid = if with_session { shared.session_id() } else { None };
        let resp = match shared.send_message(frame, Some(req), with_session).await {
            Ok(r) => r,
            Err(e @ shared::SendError::Auth(_)) => {
                // Not authorized: the answer says why, with `data.httpStatus` 401.
                let msg = format!("{} failed: {e}", req.method);
                let f = frame::error_response(&answer.id, ErrorCode::INTERNAL_ERROR, msg, Some(401));
                return answer.fail(shared, f).await;
            }
            Err(e) => {
                let msg = format!("{} failed: cannot reach the MCP server at {}: {e}", req.method, shared.url);
                return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
            }
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND
            && may_renew
            && req.method != methods::INITIALIZE
            && let Some(sid) = sid
        {
            // The session expired: a new one, then this request once more.
            drain(resp).await;
            may_renew = false;
            match session::renew(shared, &sid).await {
                Ok(()) => continue,
                Err(e) => {
                    let msg =
                        format!("{} failed: the session expired and a new one could not be opened: {e}", req.method);
                    return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
                }
            }
        }
        if status == StatusCode::BAD_REQUEST
            && may_refetch
            && req.stateless.is_some()
            && req.method == methods::TOOLS_CALL
        {
            // -32020 on a call: perhaps the tool's mirrored headers are not known yet (the
            // client never listed the tools) or changed. Learn them, then try once more.
            let body = read_body(resp, shared.max_message).await.unwrap_or_default();
            if frame::error_code(&body) == Some(ErrorCode::HEADER_MISMATCH.0) {
                may_refetch = false;
                if refetch_tools(shared, frame).await {
                    if req.arguments.is_none()
                        && let frame::Outgoing::Request(r) = frame::classify(frame)
                    {
                        reread = Some(r);
                    }
                    continue;
                }
            }
            return answer_error(shared, &mut answer, status, &body).await;
        }
        if req.method == methods::INITIALIZE && matches!(status.as_u16(), 400 | 404 | 405) {
            let body = read_body(resp, shared.max_message).await.unwrap_or_default();
            if !frame::is_jsonrpc_error(&body) {
                debug!(%status, "initialize refused without a JSON-RPC error; trying the legacy HTTP+SSE transport");
                return legacy::fall_back(shared, frame, &mut answer, status).await;
            }
            return answer_error(shared, &mut answer, status, &body).await;
        }
        if req.method == methods::INITIALIZE && status.is_success() {
            remember_session(shared, &resp);
        }
        return read_answer(shared, resp, &mut answer).await;
    }
}

/// Keeps the `Mcp-Session-Id` of an `initialize` response.
pub(super) fn remember_session(shared: &Shared, resp: &Reply) {
    let sid = resp
        .headers()
        .get(shared::SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        .map(str::to_owned);
    shared.status.update(|n| n.session_id = sid);
}

/// Hands up the answer in `resp`, or an error saying why there is none.
pub(super) async fn read_answer(shared: &Shared, resp: Reply, answer: &mut Answer) {
    let status = resp.status();
    if status.is_redirection() {
        // Not followed (see `redirect_policy`): say where the server points.
        // Without its query, which may carry a secret.
        let location = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("");
        let location = location.split('?').next().unwrap_or("");
        let msg = format!(
            "{} failed: the server redirected (HTTP {status}) to {location:?}; only same-origin 307/308 \
             redirects are followed: use the new URL",
            answer.method
        );
        let f = frame::error_response(&answer.id, ErrorCode::INTERNAL_ERROR, msg, Some(status.as_u16()));
        return answer.fail(shared, f).await;
    }
    if !status.is_success() {
        let body = read_body(resp, shared.max_message).await.unwrap_or_default();
        return answer_error(shared, answer, status, &body).await;
    }
    if is_event_stream(&resp) {
        return read_stream(shared, resp, answer).await;
    }
    let json = content_type(&resp).is_some_and(|t| t.eq_ignore_ascii_case("application/json"));
    let body = match read_body(resp, shared.max_message).await {
        Ok(b) => b,
        Err(e) => return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, format!("{}: {e}", answer.method)).await,
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        deliver_json(shared, answer, &body, json).await;
    }
    if !answer.is_answered() {
        let msg = format!("{} failed: the server answered HTTP {status} without a response", answer.method);
        answer
            .fail(shared, frame::error_response(&answer.id, ErrorCode::INTERNAL_ERROR, msg, Some(status.as_u16())))
            .await;
    }
}

/// Hands up a JSON body: one message, or an array of them.
async fn deliver_json(shared: &Shared, answer: &mut Answer, body: &Bytes, declared_json: bool) {
    // Only a body that opens with `[` is read as an array (a failed attempt builds an error).
    let array = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let items = if array { serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(body).ok() } else { None };
    match items {
        Some(items) => {
            for item in items {
                answer.deliver(shared, Bytes::copy_from_slice(item.get().as_bytes())).await;
            }
        }
        // One message, most often this request's answer.
        None if answer.completes_directly(shared, body) => {}
        // Else read once, both to know it is JSON and whose response it is.
        None => match frame::read_incoming(body) {
            Some(response_to) => answer.deliver_read(shared, body.clone(), response_to).await,
            None if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
                answer.deliver(shared, body.clone()).await;
            }
            None => {
                let what = if declared_json { "malformed JSON" } else { "a body that is not JSON" };
                let msg = format!("{} failed: the server answered with {what}", answer.method);
                answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
            }
        },
    }
}

/// An HTTP error: the JSON-RPC error in its body, or one naming the status.
pub(super) async fn answer_error(shared: &Shared, answer: &mut Answer, status: StatusCode, body: &[u8]) {
    let f = match frame::jsonrpc_error(body, &answer.id) {
        Some(Ok(f)) => f,
        _ => frame::status_error(&answer.id, &answer.method, status),
    };
    answer.fail(shared, f).await;
}

/// Reads an SSE answer, resuming it when it breaks before the answer (handshake era, when the
/// server gave event ids).
async fn read_stream(shared: &Shared, resp: Reply, answer: &mut Answer) {
    let mut cursor = Cursor::default();
    let mut events = Events::new(resp, shared.max_message);
    let mut attempts = 0;
    loop {
        let mut progressed = false;
        let broke = loop {
            match events.next(&mut cursor).await {
                None => break None,
                Some(Err(e)) => break Some(e),
                Some(Ok(Event::Message(m))) => {
                    progressed = true;
                    answer.deliver(shared, m).await;
                    if answer.is_answered() {
                        return finish(shared, events, &mut cursor).await;
                    }
                }
                Some(Ok(_)) => {}
            }
        };
        if progressed {
            attempts = 0;
        }
        let why = broke.unwrap_or_else(|| "the event stream ended".into());
        // Past the size limit, the same answer would come again: no resumption.
        let resumable = !answer.stateless && !events.overflowed();
        let Some(last_id) = cursor.last_id.clone().filter(|_| resumable) else {
            let msg = format!("{} failed: {why} before the response", answer.method);
            return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
        };
        attempts += 1;
        if attempts > shared.policy.max_retries {
            let msg = format!("{} failed: {why} before the response, and resuming it failed", answer.method);
            return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
        }
        tokio::time::sleep(cursor.retry.unwrap_or_else(|| shared.policy.delay(attempts))).await;
        debug!(id = %answer.id, last_id, "resuming a response stream");
        match shared.send(shared.get(Some(&last_id), true)).await {
            Ok(r) if r.status().is_success() && is_event_stream(&r) => events = Events::new(r, shared.max_message),
            Ok(r) => {
                let status = r.status();
                drain(r).await;
                if status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED {
                    let msg =
                        format!("{} failed: {why}, and the server cannot resume it (HTTP {status})", answer.method);
                    return answer.fail_with(shared, ErrorCode::INTERNAL_ERROR, msg).await;
                }
            }
            Err(e) => debug!(error = %e, "resuming a response stream failed"),
        }
    }
}

/// After the answer: reads what is left of the stream for a moment (the server should end
/// it), so the connection can be reused; messages still arriving are handed up.
async fn finish(shared: &Shared, mut events: Events, cursor: &mut Cursor) {
    let rest = async {
        while let Some(Ok(e)) = events.next(cursor).await {
            if let Event::Message(m) = e {
                shared.deliver(m).await;
            }
        }
    };
    let _ = tokio::time::timeout(AFTER_ANSWER, rest).await;
}

/// How long a response stream is read after its answer.
const AFTER_ANSWER: std::time::Duration = std::time::Duration::from_secs(1);

/// Most `tools/list` pages fetched to learn mirrored headers.
const MAX_TOOL_PAGES: usize = 100;

/// Lists the tools with the `_meta` of the stateless request `frame`, to learn their
/// mirrored headers. True when every page was read.
async fn refetch_tools(shared: &Shared, frame: &[u8]) -> bool {
    let Some(meta) = frame::request_meta(frame) else { return false };
    let mut cursor: Option<String> = None;
    for page in 0..MAX_TOOL_PAGES {
        let id = RequestId::from(format!("portico-http-tools-{page}"));
        let mut params = serde_json::json!({ "_meta": meta });
        if let Some(c) = cursor.take() {
            params["cursor"] = serde_json::Value::String(c);
        }
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": methods::TOOLS_LIST, "params": params});
        let req = OutRequest {
            id: id.clone(),
            method: methods::TOOLS_LIST.to_owned(),
            stateless: meta.get(portico_schema::META_PROTOCOL_VERSION).and_then(|v| v.as_str()).map(str::to_owned),
            name: None,
            arguments: None,
        };
        let Ok(resp) = shared.send_message(&Bytes::from(body.to_string()), Some(&req), false).await else {
            return false;
        };
        let mut answer = Answer::captured(id, methods::TOOLS_LIST);
        answer.stateless = true;
        read_answer(shared, resp, &mut answer).await;
        match answer.answered.as_deref().and_then(frame::next_cursor) {
            Some(Some(next)) => cursor = Some(next),
            Some(None) => return true,
            None => return false,
        }
    }
    false
}

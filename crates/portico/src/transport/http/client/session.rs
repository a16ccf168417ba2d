//! The handshake-era session: messages without an answer posted in order, the `GET` stream,
//! a new session when the old one expired, and `DELETE` at the end.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use portico_schema::methods;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::Ordered;
use super::frame::{self, Outgoing};
use super::reply::Reply;
use super::request::{self, Answer};
use super::shared::{Shared, drain, is_event_stream, read_body};
use super::sse::{Cursor, Event, Events};
use crate::sync::lock;

/// Posts notifications and responses one after the other, in the order written (and every
/// message of a legacy HTTP+SSE connection).
pub(super) async fn post_in_order(shared: Arc<Shared>, mut rx: mpsc::Receiver<Ordered>) {
    let closed = shared.ends.closed.clone();
    loop {
        let (frame, what, posted) = tokio::select! {
            biased;
            _ = closed.cancelled() => return,
            m = rx.recv() => match m {
                Some(m) => m,
                None => return,
            },
        };
        if let Some(endpoint) = shared.status.get().legacy {
            tokio::select! {
                _ = closed.cancelled() => return,
                _ = super::legacy::post(&shared, &endpoint, frame, what) => {}
            }
            continue;
        }
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = post_one(&shared, frame, &what) => {}
        }
        if let Some(posted) = posted {
            let _ = posted.send(());
        }
    }
}

/// Posts one message that expects no answer.
async fn post_one(shared: &Arc<Shared>, frame: Bytes, what: &Outgoing) {
    let sid = shared.session_id();
    let resp = match shared.send_message(&frame, None, true).await {
        Ok(r) => r,
        Err(e) => return warn!(error = %e, "posting a message failed"),
    };
    let status = resp.status();
    let is_initialized =
        matches!(what, Outgoing::Notification { method, .. } if method == methods::NOTIFICATION_INITIALIZED);
    if status.is_success() {
        if is_event_stream(&resp) {
            // Unusual, but allowed: messages in answer to a notification.
            forward_stream(shared, resp, &mut Cursor::default()).await;
        } else {
            drain(resp).await;
        }
        if is_initialized {
            // Servers may send their requests only on the GET stream and drop them while it
            // is not open: the next requests wait (a little) until the server has answered it.
            let ready = open_get_stream(shared);
            let _ = tokio::time::timeout(GET_STREAM_WAIT, ready).await;
        }
        return;
    }
    let body = read_body(resp, 64 * 1024).await.unwrap_or_default();
    match sid {
        Some(sid) if status == StatusCode::NOT_FOUND => {
            debug!("a message was refused with 404: the session expired");
            if let Err(e) = renew(shared, &sid).await {
                warn!(error = %e, "the session expired and a new one could not be opened");
            }
        }
        _ => warn!(%status, body = %String::from_utf8_lossy(&body), "the server refused a message"),
    }
}

/// Hands up every message of an SSE stream until it ends.
async fn forward_stream(shared: &Shared, resp: Reply, cursor: &mut Cursor) -> usize {
    let mut events = Events::new(resp, shared.max_message);
    let mut n = 0;
    while let Some(e) = events.next(cursor).await {
        match e {
            Ok(Event::Message(m)) => {
                n += 1;
                shared.deliver(m).await;
            }
            Ok(_) => {}
            Err(e) => {
                debug!(error = %e, "server stream broke");
                break;
            }
        }
    }
    n
}

/// The longest the handshake waits for the server to answer the first GET.
const GET_STREAM_WAIT: Duration = Duration::from_secs(3);

/// Opens (or reopens) the stream of server-initiated messages. The receiver completes once
/// the server has answered the first GET (whatever its answer), or the attempt failed.
pub(super) fn open_get_stream(shared: &Arc<Shared>) -> oneshot::Receiver<()> {
    let (answered, ready) = oneshot::channel();
    let token = shared.ends.closed.child_token();
    if let Some(old) = lock(&shared.get_stream).replace(token.clone()) {
        old.cancel();
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = token.cancelled() => {}
            _ = get_stream(&shared, answered) => {}
        }
    });
    ready
}

async fn get_stream(shared: &Arc<Shared>, answered: oneshot::Sender<()>) {
    let mut answered = Some(answered);
    let mut cursor = Cursor::default();
    let mut failures = 0u32;
    let mut opened = false;
    loop {
        let sid = shared.session_id();
        let response = shared.send(shared.get(cursor.last_id.as_deref(), true)).await;
        if let Some(a) = answered.take() {
            let _ = a.send(());
        }
        match response {
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                drain(r).await;
                return debug!("the server offers no GET stream");
            }
            // A 404 before the stream ever opened may just mean "no GET here": a request's
            // 404 will tell. After it was open, the session expired.
            Ok(r) if r.status() == StatusCode::NOT_FOUND && !opened => {
                drain(r).await;
                return debug!("the GET stream was refused with 404; assuming the server offers none");
            }
            Ok(r) if r.status() == StatusCode::NOT_FOUND && sid.is_some() => {
                drain(r).await;
                debug!("the GET stream was refused with 404: the session expired");
                let shared = shared.clone();
                // Renewing reopens this stream: not from inside it.
                tokio::spawn(async move {
                    if let Some(sid) = sid
                        && let Err(e) = renew(&shared, &sid).await
                    {
                        warn!(error = %e, "the session expired and a new one could not be opened");
                    }
                });
                return;
            }
            Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                opened = true;
                if forward_stream(shared, r, &mut cursor).await > 0 {
                    failures = 0;
                }
            }
            Ok(r) => {
                debug!(status = %r.status(), "the GET stream was refused");
                drain(r).await;
            }
            Err(e) => debug!(error = %e, "the GET stream failed"),
        }
        failures += 1;
        if failures > shared.policy.max_retries {
            return warn!("the GET stream could not be reopened; server-initiated messages are lost");
        }
        tokio::time::sleep(cursor.retry.unwrap_or_else(|| shared.policy.delay(failures))).await;
    }
}

/// Replaces the expired session `expired` with a new one: the remembered `initialize` again
/// (without a session id), then `notifications/initialized`. Concurrent callers wait for the
/// one that does it.
pub(super) async fn renew(shared: &Arc<Shared>, expired: &str) -> Result<(), String> {
    let _one_at_a_time = shared.reinit.lock().await;
    match shared.session_id() {
        Some(current) if current != expired => return Ok(()), // already renewed
        None => return Err("there is no session to renew".into()),
        Some(_) => {}
    }
    let Some((id, init)) = lock(&shared.init).clone() else {
        return Err("no initialize request to repeat".into());
    };
    if let Some(old) = lock(&shared.get_stream).take() {
        old.cancel();
    }
    let resp = shared.send_message(&init, None, false).await.map_err(|e| format!("initialize failed: {e}"))?;
    if !resp.status().is_success() {
        let status = resp.status();
        drain(resp).await;
        return Err(format!("initialize was refused with HTTP {status}"));
    }
    request::remember_session(shared, &resp);
    let mut answer = Answer::captured(id, methods::INITIALIZE);
    request::read_answer(shared, resp, &mut answer).await;
    let version = answer.answered.as_deref().and_then(frame::negotiated_version);
    if version.is_none() {
        return Err("initialize was answered with an error".into());
    }
    let note = Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let resp = shared.send_message(&note, None, true).await.map_err(|e| format!("initialized failed: {e}"))?;
    let status = resp.status();
    drain(resp).await;
    if !status.is_success() {
        return Err(format!("notifications/initialized was refused with HTTP {status}"));
    }
    shared.status.update(|n| n.reinitializations += 1);
    debug!(session = ?shared.session_id(), "new session opened in place of an expired one");
    drop(open_get_stream(shared));
    Ok(())
}

/// Stops every exchange and ends the session with `DELETE` (a 405 is fine).
pub(super) async fn close(shared: &Arc<Shared>, grace: Duration) {
    shared.ends.closed.cancel();
    let Some(sid) = shared.session_id() else { return };
    if shared.is_legacy() {
        return;
    }
    let h = shared.base_headers(true);
    match tokio::time::timeout(grace, shared.send(shared.http.delete(shared.url.clone()).headers(h))).await {
        Ok(Ok(r)) => {
            debug!(session = sid, status = %r.status(), "session ended");
            drain(r).await;
        }
        Ok(Err(e)) => debug!(error = %e, "DELETE failed"),
        Err(_) => debug!("DELETE timed out"),
    }
}

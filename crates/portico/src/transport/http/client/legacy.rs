//! The legacy HTTP+SSE transport (2024-11-05): an SSE stream whose first event names the URL
//! to POST every message to; answers arrive on the stream as `message` events.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use portico_schema::ErrorCode;
use reqwest::Url;
use tracing::{debug, warn};

use super::frame::{self, Outgoing};
use super::request::Answer;
use super::shared::{Shared, drain, is_event_stream};
use super::sse::{Cursor, Event, Events};

/// `initialize` was refused with `refused` (400, 404 or 405, no JSON-RPC error): tries the
/// legacy transport at the same URL, and posts `initialize` there if it answers.
pub(super) async fn fall_back(shared: &Arc<Shared>, init: &Bytes, answer: &mut Answer, refused: StatusCode) {
    let failed = |why: String| {
        format!("initialize failed: the server refused it with HTTP {refused}, and the legacy HTTP+SSE transport {why}")
    };
    let resp = match shared.send(shared.get(None, false)).await {
        Ok(r) => r,
        Err(e) => return fail(shared, answer, failed(format!("could not be reached: {e}")), refused).await,
    };
    if !resp.status().is_success() || !is_event_stream(&resp) {
        let status = resp.status();
        drain(resp).await;
        return fail(shared, answer, failed(format!("is not offered either (GET answered HTTP {status})")), refused)
            .await;
    }
    let mut events = Events::new(resp, shared.max_message);
    let mut cursor = Cursor::default();
    let endpoint = loop {
        match events.next(&mut cursor).await {
            Some(Ok(Event::Empty)) => continue,
            Some(Ok(Event::Other { event, data })) if event == "endpoint" => break data,
            Some(Ok(_)) => {
                return fail(shared, answer, failed("stream did not start with an endpoint event".into()), refused)
                    .await;
            }
            Some(Err(e)) => return fail(shared, answer, failed(format!("stream broke: {e}")), refused).await,
            None => return fail(shared, answer, failed("stream ended at once".into()), refused).await,
        }
    };
    let endpoint = match resolve(&shared.url, endpoint.trim()) {
        Ok(u) => u,
        Err(e) => return fail(shared, answer, failed(e), refused).await,
    };
    debug!(%endpoint, "using the legacy HTTP+SSE transport");
    shared.status.update(|n| n.legacy = Some(endpoint.clone()));
    let reader = shared.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = reader.ends.closed.cancelled() => {}
            _ = read_stream(&reader, events, cursor) => {}
        }
    });
    if let Err(e) = send(shared, &endpoint, init.clone()).await {
        fail(shared, answer, format!("initialize failed on the legacy HTTP+SSE transport: {e}"), refused).await;
    }
}

async fn fail(shared: &Shared, answer: &mut Answer, message: String, status: StatusCode) {
    let f = frame::error_response(&answer.id, ErrorCode::INTERNAL_ERROR, message, Some(status.as_u16()));
    answer.fail(shared, f).await
}

/// The POST endpoint the `endpoint` event names: on the same origin as the SSE stream.
fn resolve(base: &Url, data: &str) -> Result<Url, String> {
    let url = base.join(data).map_err(|e| format!("named an invalid endpoint {data:?}: {e}"))?;
    if url.origin() != base.origin() {
        return Err(format!("named an endpoint on another origin ({url}), which is refused"));
    }
    Ok(url)
}

/// Hands up every message of the legacy stream; its end ends the connection.
async fn read_stream(shared: &Shared, mut events: Events, mut cursor: Cursor) {
    let why = loop {
        match events.next(&mut cursor).await {
            Some(Ok(Event::Message(m))) => shared.deliver(m).await,
            Some(Ok(Event::Other { event, .. })) => debug!(event, "legacy SSE event ignored"),
            Some(Ok(Event::Empty)) => {}
            Some(Err(e)) => break e,
            None => break "the server closed the legacy SSE stream".into(),
        }
    };
    warn!(reason = %why, "legacy HTTP+SSE connection lost");
    shared.die(why);
}

/// POSTs one message to the legacy endpoint.
async fn send(shared: &Shared, endpoint: &Url, frame: Bytes) -> Result<(), String> {
    let resp = shared.send(shared.post(endpoint, frame, None, false)).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    drain(resp).await;
    if status.is_success() { Ok(()) } else { Err(format!("the server refused it with HTTP {status}")) }
}

/// Posts one message on a legacy connection; a request that cannot be posted is answered
/// with an error.
pub(super) async fn post(shared: &Shared, endpoint: &Url, frame: Bytes, what: Outgoing) {
    if let Err(e) = send(shared, endpoint, frame).await {
        match what {
            Outgoing::Request(req) => {
                let msg = format!("{} failed: {e}", req.method);
                shared.deliver(frame::error_response(&req.id, ErrorCode::INTERNAL_ERROR, msg, None)).await;
            }
            _ => warn!(error = %e, "posting a message on the legacy transport failed"),
        }
    }
}

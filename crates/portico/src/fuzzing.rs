//! Thin entry points into private parsers, for the fuzz targets in `fuzz/` and their stable
//! regression test. Feature `fuzzing`, off by default; hidden and not a stable API.

use portico_schema::{ErrorObject, RequestId};
use serde_json::value::RawValue;

use crate::rpc::envelope;

/// One message of a frame as the engine decoded it, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A request: id, method, raw params.
    Request {
        /// The id.
        id: RequestId,
        /// The method.
        method: String,
        /// The params' JSON text.
        params: Option<String>,
    },
    /// A notification: method, raw params.
    Notification {
        /// The method.
        method: String,
        /// The params' JSON text.
        params: Option<String>,
    },
    /// A response: id, and the result's JSON text or the error.
    Response {
        /// The id.
        id: RequestId,
        /// The result's JSON text, or the error object.
        outcome: Result<String, ErrorObject>,
    },
    /// Not a usable message: the id when one was read, and the error the engine answers with.
    Invalid {
        /// The id, when it could be read.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
}

fn owned(r: Result<envelope::Incoming<'_>, envelope::Invalid>) -> Decoded {
    match r {
        Ok(envelope::Incoming::Request { id, method, params }) => {
            Decoded::Request { id, method: method.into_owned(), params: params.map(|p| p.get().to_owned()) }
        }
        Ok(envelope::Incoming::Notification { method, params }) => {
            Decoded::Notification { method: method.into_owned(), params: params.map(|p| p.get().to_owned()) }
        }
        Ok(envelope::Incoming::Response { id, outcome }) => {
            Decoded::Response { id, outcome: outcome.map(|r| r.get().to_owned()) }
        }
        Err(envelope::Invalid { id, error }) => Decoded::Invalid { id, error },
    }
}

/// Decodes one frame as the engine does: one message, or each element of a batch; `None` for
/// a batch the engine reads as an invalid frame.
pub fn decode_frame(frame: &[u8]) -> (bool, Vec<Decoded>) {
    match envelope::decode(frame) {
        envelope::Frame::Single(r) => (false, vec![owned(r)]),
        envelope::Frame::Batch(items) => {
            (true, items.into_iter().map(|i| owned(envelope::decode_one(i.get()))).collect())
        }
    }
}

/// Encodes a decoded message as the engine writes one (an invalid one as its error response).
///
/// # Errors
/// When params or a result are not valid JSON text (they always are after [`decode_frame`]).
pub fn encode(d: &Decoded) -> serde_json::Result<Vec<u8>> {
    let raw = |s: &Option<String>| s.as_deref().map(|p| RawValue::from_string(p.to_owned())).transpose();
    Ok(match d {
        Decoded::Request { id, method, params } => envelope::encode_request(id, method, raw(params)?.as_deref())?,
        Decoded::Notification { method, params } => envelope::encode_notification(method, raw(params)?.as_deref())?,
        Decoded::Response { id, outcome: Ok(result) } => {
            envelope::encode_result(id, result.clone().into_bytes().into()).into_vec()
        }
        Decoded::Response { id, outcome: Err(error) } => envelope::encode_error(Some(id), error),
        Decoded::Invalid { id, error } => envelope::encode_error(id.as_ref(), error),
    })
}

/// Whether the server reads request params (valid JSON text) the same by its fast scan as by
/// serde, where the scan reads them: the difference, if any.
///
/// # Errors
/// The two readings, when they differ.
pub fn peek_agrees(params: &str) -> Result<(), String> {
    crate::peek::scan_agrees(params)
}

/// Joins encoded messages into a batch as the engine does.
pub fn encode_batch(items: &[Vec<u8>]) -> Vec<u8> {
    envelope::encode_batch(items)
}

/// What the client made of one SSE event.
#[cfg(feature = "http-client")]
#[derive(Debug, Clone, PartialEq)]
pub enum SseEvent {
    /// A JSON-RPC message's bytes.
    Message(Vec<u8>),
    /// Another event type.
    Other {
        /// The event type.
        event: String,
        /// Its data.
        data: String,
    },
    /// Metadata only.
    Empty,
}

/// One step of reading an SSE body: the event (or the error ending the stream) and the
/// resumption cursor after it.
#[cfg(feature = "http-client")]
#[derive(Debug, Clone, PartialEq)]
pub struct SseStep {
    /// The event, or why the stream ended.
    pub event: Result<SseEvent, String>,
    /// The `Last-Event-ID` a resumption would send.
    pub last_id: Option<String>,
    /// The reconnection delay the server asked for.
    pub retry: Option<std::time::Duration>,
}

/// Reads an SSE body delivered in `chunks` (each a read from the network) with the client's
/// event reader, `limit` bytes per event at most.
#[cfg(feature = "http-client")]
pub async fn sse_events(chunks: Vec<bytes::Bytes>, limit: usize) -> Vec<SseStep> {
    crate::transport::http::client::fuzz_events(chunks, limit).await
}

/// The server's reading of a `Last-Event-ID` header: (stream, sequence number).
#[cfg(feature = "http-server")]
pub fn parse_event_id(s: &str) -> Option<(u64, u64)> {
    crate::transport::http::server::parse_event_id(s)
}

/// Opens a `requestState` (if any) and merges `inputResponses` (JSON text, if any) as the
/// server does before running a handler: the answer keys known, or the error.
///
/// # Errors
/// The error the server answers with.
#[cfg(feature = "server")]
pub fn open_request_state(
    sealer: &crate::server::sealed::StateSealer,
    binding: &[u8],
    request_state: Option<&str>,
    responses: Option<&str>,
) -> Result<Vec<String>, ErrorObject> {
    crate::server::fuzz_open_input(sealer, binding, request_state, responses)
}

/// Whether the client sees a `DPoP` challenge in a `WWW-Authenticate` value.
#[cfg(feature = "auth-client")]
pub fn offers_dpop(header: &str) -> bool {
    crate::auth::offers_dpop(header)
}

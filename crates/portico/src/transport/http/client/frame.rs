//! Looking inside frames: unlike a byte stream, HTTP needs to know what each message is (a
//! request gets a response body, a notification gets 202, `initialize` opens a session, a
//! stateless request mirrors its method and name into headers).

use std::borrow::Cow;

use bytes::Bytes;
use portico_schema::{ErrorCode, ErrorObject, META_PROTOCOL_VERSION, RequestId, methods};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::rpc::envelope;

/// An outgoing message, as far as HTTP cares.
#[derive(Debug)]
pub(super) enum Outgoing {
    /// A request: it gets an answer in its response body.
    Request(OutRequest),
    /// A notification; `cancels` is the request a `notifications/cancelled` names.
    Notification { method: String, cancels: Option<RequestId> },
    /// Anything else (a response to a server request, a batch): posted as is.
    Other,
}

/// What the transport needs to know of an outgoing request.
#[derive(Debug, Clone)]
pub(super) struct OutRequest {
    pub id: RequestId,
    pub method: String,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`: a stateless-era request.
    pub stateless: Option<String>,
    /// `params.name` (tools/call, prompts/get), `params.uri` (resources/read) or
    /// `params.taskId` (tasks/get, tasks/update, tasks/cancel): what `Mcp-Name` carries.
    pub name: Option<String>,
    /// `params.arguments` of a tools/call, kept raw until a mirrored header needs it.
    pub arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(rename = "_meta", default)]
    meta: Option<MetaPeek>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "taskId", default, borrow)]
    task_id: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", default)]
    request_id: Option<RequestId>,
}

#[derive(Deserialize)]
struct MetaPeek {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    version: Option<String>,
}

/// Classifies a frame the engine wrote.
pub(super) fn classify(frame: &[u8]) -> Outgoing {
    let Ok(env) = serde_json::from_slice::<Envelope<'_>>(frame) else { return Outgoing::Other };
    let Some(method) = env.method else { return Outgoing::Other };
    let params: Params<'_> = env.params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or_default();
    let Some(id) = env.id else {
        let cancels = if method == methods::NOTIFICATION_CANCELLED { params.request_id } else { None };
        return Outgoing::Notification { method: method.into_owned(), cancels };
    };
    let name = match &*method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => params.name.map(Cow::into_owned),
        methods::RESOURCES_READ => params.uri.map(Cow::into_owned),
        // The tasks extension names the task.
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => params.task_id.map(Cow::into_owned),
        _ => None,
    };
    let arguments = if method == methods::TOOLS_CALL { params.arguments.map(RawValue::to_owned) } else { None };
    Outgoing::Request(OutRequest {
        id,
        method: method.into_owned(),
        stateless: params.meta.and_then(|m| m.version),
        name,
        arguments,
    })
}

/// The `_meta` of a request frame, to reuse on a request the transport makes itself.
pub(super) fn request_meta(frame: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(frame).ok()?;
    let meta = v.get("params")?.get("_meta")?;
    meta.get(META_PROTOCOL_VERSION)?;
    Some(meta.clone())
}

/// What an incoming message is, as far as correlation cares.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// The id of the response `frame` is, if it is a response.
pub(super) fn response_id(frame: &[u8]) -> Option<RequestId> {
    let m: Incoming = serde_json::from_slice(frame).ok()?;
    if m.method.is_some() || (m.result.is_none() && m.error.is_none()) {
        return None;
    }
    m.id
}

/// The `result.protocolVersion` of an `initialize` response, or `None` for an error.
pub(super) fn negotiated_version(frame: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct R {
        result: Option<V>,
    }
    #[derive(Deserialize)]
    struct V {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    serde_json::from_slice::<R>(frame).ok()?.result.map(|v| v.protocol_version)
}

/// A JSON-RPC error response synthesized for a request HTTP could not complete.
pub(super) fn error_response(id: &RequestId, code: ErrorCode, message: String, status: Option<u16>) -> Bytes {
    let mut error = ErrorObject::new(code, message);
    if let Some(s) = status {
        error = error.with_data(serde_json::json!({ "httpStatus": s }));
    }
    Bytes::from(envelope::encode_error(Some(id), &error))
}

/// The error an HTTP status means for a request whose body carried no JSON-RPC error.
pub(super) fn status_error(id: &RequestId, method: &str, status: reqwest::StatusCode) -> Bytes {
    let code = match status.as_u16() {
        400 | 404 | 405 | 406 | 413 | 415 => ErrorCode::INVALID_REQUEST,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    error_response(id, code, format!("{method} failed: the server answered HTTP {status}"), Some(status.as_u16()))
}

/// If `body` is a JSON-RPC error response (a recognised one: an `error` with an integer
/// `code`), the frame to hand up: with `id` filled in when it has none. `Err(())` when it
/// is an error for another request.
pub(super) fn jsonrpc_error(body: &[u8], id: &RequestId) -> Option<Result<Bytes, ()>> {
    let mut m: Map<String, Value> = serde_json::from_slice(body).ok()?;
    let error = m.get("error")?.as_object()?;
    error.get("code")?.as_i64()?;
    if !error.get("message").is_some_and(Value::is_string) {
        return None;
    }
    match m.get("id") {
        None | Some(Value::Null) => {
            m.insert("id".into(), serde_json::to_value(id).ok()?);
        }
        Some(other) => {
            if serde_json::from_value::<RequestId>(other.clone()).ok().as_ref() != Some(id) {
                return Some(Err(()));
            }
        }
    }
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    Some(serde_json::to_vec(&m).map(Bytes::from).map_err(|_| ()))
}

/// The `error.code` of a JSON-RPC error response.
pub(super) fn error_code(body: &[u8]) -> Option<i32> {
    #[derive(Deserialize)]
    struct E {
        error: C,
    }
    #[derive(Deserialize)]
    struct C {
        code: i32,
    }
    serde_json::from_slice::<E>(body).ok().map(|e| e.error.code)
}

/// Of a list result: `Some(nextCursor)`; `None` when `frame` is not a result.
pub(super) fn next_cursor(frame: &[u8]) -> Option<Option<String>> {
    #[derive(Deserialize)]
    struct R {
        result: P,
    }
    #[derive(Deserialize)]
    struct P {
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    serde_json::from_slice::<R>(frame).ok().map(|r| r.result.next_cursor)
}

/// True when `body` is a recognised JSON-RPC error (whatever its id).
pub(super) fn is_jsonrpc_error(body: &[u8]) -> bool {
    jsonrpc_error(body, &RequestId::Number(0)).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_classified() {
        let f = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hi"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        }});
        let Outgoing::Request(r) = classify(f.to_string().as_bytes()) else { panic!("a request") };
        assert_eq!(r.id, RequestId::Number(7));
        assert_eq!(r.stateless.as_deref(), Some("2026-07-28"));
        assert_eq!(r.name.as_deref(), Some("echo"));
        assert_eq!(r.arguments.map(|a| a.get().to_owned()).as_deref(), Some(r#"{"text":"hi"}"#));

        let f = json!({"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {"uri": "test://x"}});
        let Outgoing::Request(r) = classify(f.to_string().as_bytes()) else { panic!("a request") };
        assert_eq!((r.stateless, r.name.as_deref()), (None, Some("test://x")));

        let f = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"taskId": "t-1"}});
        let Outgoing::Request(r) = classify(f.to_string().as_bytes()) else { panic!("a request") };
        assert_eq!(r.name.as_deref(), Some("t-1"), "Mcp-Name carries the task id");

        let f = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
        assert!(matches!(
            classify(f.to_string().as_bytes()),
            Outgoing::Notification { cancels: Some(RequestId::Number(3)), .. }
        ));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Outgoing::Other));
        assert!(matches!(classify(b"[1,2]"), Outgoing::Other));
    }

    #[test]
    fn error_bodies_get_the_request_id() {
        let id = RequestId::Number(5);
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no session"}}"#;
        let out = jsonrpc_error(body, &id).and_then(Result::ok).expect("an error");
        let v: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["id"], 5);
        assert!(
            jsonrpc_error(br#"{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"x"}}"#, &id)
                .is_some_and(|r| r.is_err())
        );
        assert!(jsonrpc_error(b"<html>Not found</html>", &id).is_none());
        assert!(jsonrpc_error(br#"{"error":"text"}"#, &id).is_none());
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#), Some(id));
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#), None);
    }
}

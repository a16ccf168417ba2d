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

use crate::peek::{Member, ParamsPeek};
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
    params: Option<Params<'a>>,
}

/// The params members HTTP looks at, read in the envelope's one pass, each kept raw and read
/// after: params (or a `_meta`) of any shape classify, what is not understood reads as absent.
/// A `_meta` is read as params are: its `protocol_version` is the one that counts.
#[derive(Default)]
struct Params<'a> {
    /// `_meta["io.modelcontextprotocol/protocolVersion"]`.
    meta_version: Option<&'a RawValue>,
    /// This object's own `io.modelcontextprotocol/protocolVersion` (when it is the `_meta`).
    protocol_version: Option<&'a RawValue>,
    name: Option<&'a RawValue>,
    uri: Option<&'a RawValue>,
    arguments: Option<&'a RawValue>,
    task_id: Option<&'a RawValue>,
    request_id: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Params<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, SeqAccess, Visitor};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Params<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'a>, A::Error> {
                let mut p = Params::default();
                while let Some(key) = map.next_key::<Member>()? {
                    let slot = match key {
                        Member::Meta => {
                            p.meta_version = map.next_value::<Params<'a>>()?.protocol_version;
                            continue;
                        }
                        Member::ProtocolVersion => &mut p.protocol_version,
                        Member::Name => &mut p.name,
                        Member::Uri => &mut p.uri,
                        Member::Arguments => &mut p.arguments,
                        Member::TaskId => &mut p.task_id,
                        Member::RequestId => &mut p.request_id,
                        Member::InputResponses | Member::RequestState | Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(p)
            }
            // Anything but an object reads as no members.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Params::default())
            }
            fn visit_bool<E: Error>(self, _: bool) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
            fn visit_i64<E: Error>(self, _: i64) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
            fn visit_u64<E: Error>(self, _: u64) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
            fn visit_f64<E: Error>(self, _: f64) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
            fn visit_str<E: Error>(self, _: &str) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
            fn visit_unit<E: Error>(self) -> Result<Params<'a>, E> {
                Ok(Params::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A raw member that is a JSON string, owned; `None` for anything else.
fn text(raw: Option<&RawValue>) -> Option<String> {
    raw.map(RawValue::get).and_then(ParamsPeek::string).map(Cow::into_owned)
}

/// True for the methods whose requests name something (`classify` reads the name): a tool,
/// a prompt, a resource, a task.
pub(super) fn names_target(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL
            | methods::PROMPTS_GET
            | methods::RESOURCES_READ
            | methods::TASKS_GET
            | methods::TASKS_UPDATE
            | methods::TASKS_CANCEL
    )
}

/// Classifies a frame the engine wrote, in one pass over it.
pub(super) fn classify(frame: &[u8]) -> Outgoing {
    let Ok(env) = serde_json::from_slice::<Envelope<'_>>(frame) else { return Outgoing::Other };
    let Some(method) = env.method else { return Outgoing::Other };
    let params = env.params.unwrap_or_default();
    let Some(id) = env.id else {
        let cancels = if method == methods::NOTIFICATION_CANCELLED {
            params.request_id.and_then(|r| serde_json::from_str(r.get()).ok())
        } else {
            None
        };
        return Outgoing::Notification { method: method.into_owned(), cancels };
    };
    let name = match &*method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => text(params.name),
        methods::RESOURCES_READ => text(params.uri),
        // The tasks extension names the task.
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => text(params.task_id),
        _ => None,
    };
    let arguments = if method == methods::TOOLS_CALL { params.arguments.map(RawValue::to_owned) } else { None };
    Outgoing::Request(OutRequest {
        id,
        method: method.into_owned(),
        stateless: text(params.meta_version),
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
    read_incoming(frame).flatten()
}

/// `frame` read in one pass: `None` unless it is a JSON-RPC message (an object whose `id` is
/// absent or a valid id), else the id of the response it is (`Some(None)` for anything but a
/// response). A frame this reads is valid JSON.
pub(super) fn read_incoming(frame: &[u8]) -> Option<Option<RequestId>> {
    let m: Incoming = serde_json::from_slice(frame).ok()?;
    if m.method.is_some() || (m.result.is_none() && m.error.is_none()) {
        return Some(None);
    }
    Some(m.id)
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
    fn params_of_any_shape_classify_in_one_pass() {
        let request = |params: Value| {
            let f = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
            match classify(f.to_string().as_bytes()) {
                Outgoing::Request(r) => r,
                other => panic!("a request, got {other:?}"),
            }
        };
        // What is understood is read; what is not reads as absent, and the rest still counts.
        let r = request(json!({"_meta": 5, "name": "echo"}));
        assert_eq!((r.stateless, r.name.as_deref()), (None, Some("echo")));
        let r = request(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 7}, "name": 3}));
        assert_eq!((r.stateless, r.name), (None, None));
        let r = request(json!(["echo", {"text": "hi"}]));
        assert_eq!((r.name, r.arguments.is_none()), (None, true));
        let r = request(json!("echo"));
        assert!(r.name.is_none());
        // Only the `_meta`'s protocol version counts, not a member of the params of that name.
        let r = request(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "_meta": {}}));
        assert_eq!(r.stateless, None);
        // Escapes are read; nested members of the same name are not the params' own.
        let f = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"name":"inner","_meta":{}},"n\u0061me":"e\"cho","_meta":{"x":[1,{"y":null}],"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let Outgoing::Request(r) = classify(f) else { panic!("a request") };
        assert_eq!(r.name.as_deref(), Some("e\"cho"));
        assert_eq!(r.stateless.as_deref(), Some("2026-07-28"));
        assert_eq!(r.arguments.map(|a| a.get().to_owned()).as_deref(), Some(r#"{"name":"inner","_meta":{}}"#));
        // A cancellation's request id, and one that is not an id.
        let f = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"x"}}"#;
        assert!(matches!(
            classify(f),
            Outgoing::Notification { cancels: Some(RequestId::String(ref s)), .. } if &**s == "a"
        ));
        let f = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}"#;
        assert!(matches!(classify(f), Outgoing::Notification { cancels: None, .. }));
        // Not JSON, or not all of it: not classified.
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":}}"#), Outgoing::Other));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#), Outgoing::Other));
    }

    #[test]
    fn incoming_frames_are_read_once() {
        assert_eq!(read_incoming(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#), Some(Some(RequestId::Number(5))));
        assert_eq!(
            read_incoming(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}"#).flatten(),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(read_incoming(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#), Some(None));
        assert_eq!(read_incoming(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#), Some(None));
        // Not a message: left to the caller (valid JSON or not).
        assert_eq!(read_incoming(b"5"), None);
        assert_eq!(read_incoming(br#"{"id":{"x":1},"result":{}}"#), None);
        assert_eq!(read_incoming(br#"{"id":5,"result":{}"#), None);
        assert_eq!(read_incoming(br#"{"id":5,"result":{}} trailing"#), None);
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

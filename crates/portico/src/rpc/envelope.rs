//! Decoding incoming messages without building a `serde_json::Value`, and encoding outgoing
//! ones straight into bytes.

use std::borrow::Cow;

use bytes::Bytes;
use portico_schema::{ErrorObject, RequestId};

use crate::transport::FrameWriter;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One decoded message, borrowing from the frame.
#[derive(Debug)]
pub(crate) enum Incoming<'a> {
    Request { id: RequestId, method: Cow<'a, str>, params: Option<&'a RawValue> },
    Notification { method: Cow<'a, str>, params: Option<&'a RawValue> },
    Response { id: RequestId, outcome: Result<&'a RawValue, ErrorObject> },
}

/// Why a frame is not a usable message; carries the id when one could be read.
#[derive(Debug)]
pub(crate) struct Invalid {
    pub(crate) id: Option<RequestId>,
    pub(crate) error: ErrorObject,
}

/// The `id` member: absent, `null`, or a valid id (anything else is an invalid request).
#[derive(Debug, Default)]
enum IdField {
    #[default]
    Absent,
    Null,
    Valid(RequestId),
    Bad,
}

struct Envelope<'a> {
    jsonrpc_ok: Option<bool>,
    id: IdField,
    method: Option<Cow<'a, str>>,
    method_ok: bool,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

// The envelope's decoding is one pass on every message: `#[inline]` keeps it one function
// wherever the crate's codegen units put its parts.
impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            #[inline]
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'a>, A::Error> {
                let mut env = Envelope {
                    jsonrpc_ok: None,
                    id: IdField::Absent,
                    method: None,
                    method_ok: true,
                    params: None,
                    result: None,
                    error: None,
                };
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::JsonRpc => env.jsonrpc_ok = Some(map.next_value::<Scalar<'a>>()?.is_str("2.0")),
                        Key::Id => {
                            env.id = match map.next_value::<Scalar<'a>>()? {
                                Scalar::Null => IdField::Null,
                                Scalar::Int(n) => IdField::Valid(RequestId::Number(n)),
                                Scalar::Str(s) => IdField::Valid(RequestId::String(s.as_ref().into())),
                                Scalar::Other => IdField::Bad,
                            }
                        }
                        Key::Method => match map.next_value::<Scalar<'a>>()? {
                            Scalar::Str(m) => env.method = Some(m),
                            _ => env.method_ok = false,
                        },
                        Key::Params => env.params = Some(map.next_value()?),
                        Key::Result => env.result = Some(map.next_value()?),
                        Key::Error => env.error = Some(map.next_value()?),
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(env)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// An envelope member name, recognised without allocating.
enum Key {
    JsonRpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            #[inline]
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "jsonrpc" => Key::JsonRpc,
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A member decoded in one pass: a string (borrowed when unescaped), an integer id, null, or
/// anything else (skipped).
enum Scalar<'a> {
    Null,
    Int(i64),
    Str(Cow<'a, str>),
    Other,
}

impl Scalar<'_> {
    fn is_str(&self, want: &str) -> bool {
        matches!(self, Scalar::Str(s) if s == want)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'a>, E> {
                Ok(i64::try_from(v).map(Scalar::Int).unwrap_or(Scalar::Other))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar<'a>, E> {
                // `1.0` is an integer written oddly; `1.5` is not an id.
                if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
                    Ok(Scalar::Int(v as i64))
                } else {
                    Ok(Scalar::Other)
                }
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Other)
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// What a frame holds: one message, or a batch (a JSON array) to decode element by element.
pub(crate) enum Frame<'a> {
    Single(Result<Incoming<'a>, Invalid>),
    Batch(Vec<&'a RawValue>),
}

/// Decodes one frame.
pub(crate) fn decode(frame: &[u8]) -> Frame<'_> {
    let Ok(text) = std::str::from_utf8(frame) else {
        return Frame::Single(Err(Invalid { id: None, error: ErrorObject::parse_error("message is not UTF-8") }));
    };
    let first = text.trim_start().as_bytes().first().copied();
    if first == Some(b'[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) => Frame::Batch(items),
            Err(e) => {
                Frame::Single(Err(Invalid { id: None, error: ErrorObject::parse_error(format!("invalid JSON: {e}")) }))
            }
        };
    }
    Frame::Single(decode_one(text))
}

/// Decodes one message (an element of a batch, or a whole frame).
pub(crate) fn decode_one(text: &str) -> Result<Incoming<'_>, Invalid> {
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return Err(Invalid { id: None, error: ErrorObject::parse_error(format!("invalid JSON: {e}")) });
        }
        Err(e) => {
            return Err(Invalid {
                id: None,
                error: ErrorObject::invalid_request(format!("not a JSON-RPC message: {e}")),
            });
        }
    };
    let id = match env.id {
        IdField::Valid(id) => Some(id),
        IdField::Absent => None,
        IdField::Null | IdField::Bad => {
            return Err(Invalid { id: None, error: ErrorObject::invalid_request("id must be a string or an integer") });
        }
    };
    if env.jsonrpc_ok != Some(true) {
        return Err(Invalid { id, error: ErrorObject::invalid_request("jsonrpc must be \"2.0\"") });
    }
    if !env.method_ok {
        return Err(Invalid { id, error: ErrorObject::invalid_request("method must be a string") });
    }
    match (env.method, id) {
        (Some(method), Some(id)) => Ok(Incoming::Request { id, method, params: env.params }),
        (Some(method), None) => Ok(Incoming::Notification { method, params: env.params }),
        (None, Some(id)) => match (env.result, env.error) {
            (Some(result), None) => Ok(Incoming::Response { id, outcome: Ok(result) }),
            (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
                Ok(error) => Ok(Incoming::Response { id, outcome: Err(error) }),
                Err(_) => Err(Invalid { id: Some(id), error: ErrorObject::invalid_request("malformed error object") }),
            },
            _ => Err(Invalid {
                id: Some(id),
                error: ErrorObject::invalid_request("a response has exactly one of result and error"),
            }),
        },
        (None, None) => {
            Err(Invalid { id: None, error: ErrorObject::invalid_request("message has neither method nor id") })
        }
    }
}

fn push_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        // itoa, not `write!`: every response writes an id, and the formatting machinery is not
        // free on that path (design/design.md, "Concurrency and backpressure").
        RequestId::Number(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        RequestId::String(s) => {
            // Strings need escaping; serde_json writes them correctly.
            let _ = serde_json::to_writer(&mut *out, &**s);
        }
    }
}

/// Results at least this long are not copied into their envelope: the envelope's head, the
/// result and the closing brace go to the transport as three parts.
const SPLIT_RESULT: usize = 16 * 1024;

/// One encoded message on its way to the transport.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// The whole message.
    Frame(Vec<u8>),
    /// A result response in parts: the head (up to `"result":`), the result, then `}`. Boxed:
    /// every queue slot of every connection is as large as this enum.
    Result(Box<SplitResult>),
}

/// The parts of [`Outgoing::Result`].
#[derive(Debug)]
pub(crate) struct SplitResult {
    head: Vec<u8>,
    body: Bytes,
}

impl SplitResult {
    /// The head (up to `"result":`) and the result; the message ends with `}` after them.
    #[cfg(feature = "http-server")]
    pub(crate) fn into_parts(self) -> (Vec<u8>, Bytes) {
        (self.head, self.body)
    }
}

impl Outgoing {
    /// The message as one buffer (parts are joined).
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            Outgoing::Frame(v) => v,
            Outgoing::Result(parts) => {
                let SplitResult { mut head, body } = *parts;
                head.reserve_exact(body.len() + 1);
                head.extend_from_slice(&body);
                head.push(b'}');
                head
            }
        }
    }

    /// The message as [`Bytes`] (parts are joined).
    #[cfg(feature = "http-server")]
    pub(crate) fn into_bytes(self) -> Bytes {
        Bytes::from(self.into_vec())
    }

    /// Writes the message as one frame, a result's parts without joining them.
    pub(crate) async fn write_to<W: FrameWriter>(&self, writer: &mut W) -> std::io::Result<()> {
        match self {
            Outgoing::Frame(v) => writer.write_frame(v).await,
            Outgoing::Result(parts) => writer.write_frame_parts(&[&parts.head, &parts.body, b"}"]).await,
        }
    }
}

impl From<Vec<u8>> for Outgoing {
    fn from(v: Vec<u8>) -> Self {
        Outgoing::Frame(v)
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` around an already serialized result; a long result
/// is not copied (see [`Outgoing::Result`]).
pub(crate) fn encode_result(id: &RequestId, result: ResultBytes) -> Outgoing {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    let small = result.len() < SPLIT_RESULT;
    // The exact length when the id's is known: a buffer as long as its contents becomes
    // `Bytes` (HTTP's body) without the shared header `Bytes` allocates for a longer one.
    let mut digits = itoa::Buffer::new();
    let plain = plain_id(id, &mut digits);
    let exact =
        plain.map(|(text, quoted)| HEAD.len() + text.len() + 2 * usize::from(quoted) + RESULT.len() + result.len() + 1);
    let mut out = Vec::with_capacity(match (small, exact) {
        (true, Some(n)) => n,
        (true, None) => result.len() + 40,
        (false, _) => 40,
    });
    out.extend_from_slice(HEAD);
    match plain {
        Some((text, false)) => out.extend_from_slice(text),
        Some((text, true)) => {
            out.push(b'"');
            out.extend_from_slice(text);
            out.push(b'"');
        }
        None => push_id(&mut out, id),
    }
    out.extend_from_slice(RESULT);
    if !small {
        return Outgoing::Result(Box::new(SplitResult { head: out, body: result.into_bytes() }));
    }
    out.extend_from_slice(&result);
    out.push(b'}');
    debug_assert!(exact.is_none_or(|n| n == out.len()), "the envelope's length was miscounted");
    Outgoing::Frame(out)
}

/// An id's text as [`push_id`] writes it, and whether it goes between quotes, when it needs no
/// escape: a number (formatted once, into `digits`), or a string with no `"`, `\` or control
/// character.
fn plain_id<'a>(id: &'a RequestId, digits: &'a mut itoa::Buffer) -> Option<(&'a [u8], bool)> {
    match id {
        RequestId::Number(n) => Some((digits.format(*n).as_bytes(), false)),
        RequestId::String(s) => s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\').then_some((s.as_bytes(), true)),
    }
}

/// An error response; without an id when the request's id could not be read.
pub(crate) fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        push_id(&mut out, id);
        out.push(b',');
    }
    out.extend_from_slice(br#""error":"#);
    if serde_json::to_writer(&mut out, error).is_err() {
        out.extend_from_slice(br#"{"code":-32603,"message":"unserializable error"}"#);
    }
    out.push(b'}');
    out
}

/// A request with typed params.
pub(crate) fn encode_request<P: Serialize + ?Sized>(
    id: &RequestId,
    method: &str,
    params: Option<&P>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    push_id(&mut out, id);
    out.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut out, method)?;
    if let Some(p) = params {
        out.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut out, p)?;
    }
    out.push(b'}');
    Ok(out)
}

/// A notification with typed params.
pub(crate) fn encode_notification<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    serde_json::to_writer(&mut out, method)?;
    if let Some(p) = params {
        out.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut out, p)?;
    }
    out.push(b'}');
    Ok(out)
}

/// Joins encoded messages into one batch array.
pub(crate) fn encode_batch(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    out
}

/// A serialized result: encoded for this request, or shared (cached results are not
/// re-encoded).
///
/// Not always [`Bytes`]: a buffer a result was just encoded into is usually longer than the
/// result, and `Bytes` takes such a buffer over only with a second allocation (its shared
/// header), although the envelope copies a short result out of it anyway.
#[derive(Debug, Clone)]
pub(crate) enum ResultBytes {
    /// Encoded for this request.
    Owned(Vec<u8>),
    /// Shared with others.
    Shared(Bytes),
}

impl ResultBytes {
    /// The result as [`Bytes`] (an owned buffer is taken over).
    pub(crate) fn into_bytes(self) -> Bytes {
        match self {
            ResultBytes::Owned(v) => Bytes::from(v),
            ResultBytes::Shared(b) => b,
        }
    }
}

impl std::ops::Deref for ResultBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ResultBytes::Owned(v) => v,
            ResultBytes::Shared(b) => b,
        }
    }
}

impl From<Vec<u8>> for ResultBytes {
    fn from(v: Vec<u8>) -> Self {
        ResultBytes::Owned(v)
    }
}

impl From<Bytes> for ResultBytes {
    fn from(b: Bytes) -> Self {
        ResultBytes::Shared(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Result<Incoming<'_>, Invalid> {
        match decode(s.as_bytes()) {
            Frame::Single(r) => r,
            Frame::Batch(_) => panic!("unexpected batch"),
        }
    }

    #[test]
    fn classifies_messages() {
        assert!(matches!(one(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Ok(Incoming::Request { .. })));
        assert!(matches!(one(r#"{"jsonrpc":"2.0","method":"n","params":{}}"#), Ok(Incoming::Notification { .. })));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}"#),
            Ok(Incoming::Response { outcome: Err(_), .. })
        ));
    }

    #[test]
    fn escaped_method_names_decode() {
        match one(r#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#) {
            Ok(Incoming::Request { method, .. }) => assert_eq!(method, "tools/list"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_input_maps_to_the_right_codes() {
        let code = |s: &str| one(s).err().map(|e| e.error.code.0);
        assert_eq!(code("{not json"), Some(-32700));
        assert_eq!(code(""), Some(-32700));
        assert_eq!(code("42"), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), Some(-32600));
        assert_eq!(code(r#"{"id":1,"method":"x"}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0"}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#), Some(-32600));
        // The id is echoed when it could be read.
        assert_eq!(
            one(r#"{"jsonrpc":"1.0","id":9,"method":"x"}"#).err().and_then(|e| e.id),
            Some(RequestId::Number(9))
        );
    }

    #[test]
    fn batches_are_split() {
        match decode(br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#) {
            Frame::Batch(items) => assert_eq!(items.len(), 2),
            Frame::Single(_) => panic!("expected a batch"),
        }
    }

    #[test]
    fn encodes_compact_messages() {
        let id = RequestId::from("x\"y");
        let r = encode_result(&id, Bytes::from_static(br#"{"a":1}"#).into());
        assert!(matches!(r, Outgoing::Frame(_)), "a short result is copied into its envelope");
        let v: serde_json::Value = serde_json::from_slice(&r.into_vec()).expect("valid json");
        assert_eq!(v["id"], "x\"y");
        assert_eq!(v["result"]["a"], 1);
        // A long one stays apart, and joins to the same message.
        let long = format!(r#"{{"s":"{}"}}"#, "z".repeat(SPLIT_RESULT));
        let r = encode_result(&RequestId::Number(7), Bytes::from(long.clone()).into());
        assert!(matches!(&r, Outgoing::Result(parts) if parts.body.len() == long.len()));
        assert_eq!(std::mem::size_of::<Outgoing>(), std::mem::size_of::<Vec<u8>>(), "queue slots stay small");
        let joined = r.into_vec();
        assert_eq!(joined, format!(r#"{{"jsonrpc":"2.0","id":7,"result":{long}}}"#).into_bytes());
        let e = encode_error(None, &ErrorObject::parse_error("bad"));
        let v: serde_json::Value = serde_json::from_slice(&e).expect("valid json");
        assert!(v.get("id").is_none());
        assert_eq!(v["error"]["code"], -32700);
        assert!(!joined.contains(&b'\n') && !e.contains(&b'\n'));
    }

    #[test]
    fn a_short_result_fills_its_buffer_exactly_when_the_id_needs_no_escape() {
        let ids = [
            (RequestId::Number(0), true),
            (RequestId::Number(-9_007_199_254_740_991), true),
            (RequestId::from("plain-ä-\u{7f}"), true),
            (RequestId::from("quote\"d"), false),
            (RequestId::from("back\\slash"), false),
            (RequestId::from("tab\t"), false),
        ];
        for (id, exact) in ids {
            let Outgoing::Frame(out) = encode_result(&id, br#"{"a":[1,"b"]}"#.to_vec().into()) else {
                panic!("a short result is one frame");
            };
            let v: serde_json::Value = serde_json::from_slice(&out).expect("valid json");
            assert_eq!(serde_json::from_value::<RequestId>(v["id"].clone()).ok(), Some(id.clone()));
            assert_eq!(v["result"], serde_json::json!({"a": [1, "b"]}));
            // Exact, the buffer becomes `Bytes` without a second allocation.
            if exact {
                assert_eq!(out.capacity(), out.len(), "{id:?}");
            }
            assert_eq!(plain_id(&id, &mut itoa::Buffer::new()).is_some(), exact, "{id:?}");
        }
    }
}

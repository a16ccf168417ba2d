//! The JSON-RPC 2.0 envelope shared by every MCP revision.
//!
//! These types describe whole messages for users who need them (proxies, inspectors, tests).
//! Portico's engine decodes incoming bytes with its own borrowed envelope and never builds a
//! [`serde_json::Value`] for a message it only routes.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The literal `"2.0"` every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.into())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s.into())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or integer request id")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v).map(RequestId::Number).map_err(|_| E::custom("request id out of range"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RequestId, E> {
                // JSON has one number type; `1.0` is an integer written oddly, `1.5` is not an id.
                if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
                    Ok(RequestId::Number(v as i64))
                } else {
                    Err(E::custom("request id must be an integer or a string"))
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A progress token: a string or an integer chosen by the requester.
pub type ProgressToken = RequestId;

/// A JSON-RPC error code.
///
/// The constants are the codes MCP defines; any other integer is carried as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available (also: capability not declared).
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters (in 2026-07-28 also: missing `_meta`, resource not found).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Resource not found (2024-11-05 … 2025-11-25 only).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
    /// HTTP headers do not match the body (2026-07-28).
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// The request needs a client capability the client did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of an error response: data on the wire, not a Rust error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Additional information defined by the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }
    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }
    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}"))
    }
    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }
    /// -32603.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request: expects a response with the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JSONRPCRequest {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// Parameters, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl JSONRPCRequest {
    /// A request.
    pub fn new(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        JSONRPCRequest { jsonrpc: JsonRpcVersion, id, method: method.into(), params }
    }
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JSONRPCNotification {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method name.
    pub method: String,
    /// Parameters, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl JSONRPCNotification {
    /// A notification.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        JSONRPCNotification { jsonrpc: JsonRpcVersion, method: method.into(), params }
    }
}

/// A successful response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JSONRPCResultResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered.
    pub id: RequestId,
    /// The result object.
    pub result: Value,
}

impl JSONRPCResultResponse {
    /// A result response.
    pub fn new(id: RequestId, result: Value) -> Self {
        JSONRPCResultResponse { jsonrpc: JsonRpcVersion, id, result }
    }
}

/// An error response; `id` is absent when the request's id could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JSONRPCErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl JSONRPCErrorResponse {
    /// An error response.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JSONRPCErrorResponse { jsonrpc: JsonRpcVersion, id, error }
    }
}

/// Any single JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum JSONRPCMessage {
    /// A request.
    Request(JSONRPCRequest),
    /// A notification.
    Notification(JSONRPCNotification),
    /// A result response.
    Result(JSONRPCResultResponse),
    /// An error response.
    Error(JSONRPCErrorResponse),
}

/// The `jsonrpc` member: serializes as `"2.0"` and refuses anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        if s == JSONRPC_VERSION { Ok(JsonRpcVersion) } else { Err(serde::de::Error::custom("jsonrpc must be \"2.0\"")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_strings_or_integers_never_null() {
        assert_eq!(serde_json::from_str::<RequestId>("7").ok(), Some(RequestId::Number(7)));
        assert_eq!(serde_json::from_str::<RequestId>("\"a\"").ok(), Some(RequestId::from("a")));
        assert!(serde_json::from_str::<RequestId>("null").is_err());
        assert!(serde_json::from_str::<RequestId>("1.5").is_err());
        assert!(serde_json::from_str::<RequestId>("{}").is_err());
    }

    #[test]
    fn messages_classify() {
        let m: JSONRPCMessage = serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).expect("request");
        assert!(matches!(m, JSONRPCMessage::Request(_)));
        let m: JSONRPCMessage = serde_json::from_str(r#"{"jsonrpc":"2.0","method":"x"}"#).expect("notification");
        assert!(matches!(m, JSONRPCMessage::Notification(_)));
        let m: JSONRPCMessage = serde_json::from_str(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"p"}}"#)
            .expect("error without id");
        assert!(matches!(m, JSONRPCMessage::Error(JSONRPCErrorResponse { id: None, .. })));
        assert!(serde_json::from_str::<JSONRPCMessage>(r#"{"jsonrpc":"1.0","method":"x"}"#).is_err());
    }
}

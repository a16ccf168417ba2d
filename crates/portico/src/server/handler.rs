//! What handlers return, and how it becomes a result or a wire error.

use std::fmt;

use portico_schema::{CallToolResult, ContentBlock, ErrorCode, ErrorObject, ProtocolVersion};
use serde::Serialize;

use crate::RelayedToolResult;

/// The error a resource, prompt or completion handler returns: a protocol error on the wire.
///
/// Tool handlers rarely need it: a tool's `Err` becomes a tool execution error (`isError`) that
/// the model sees, which is what the spec asks for failures of the tool itself.
#[derive(Debug, Clone)]
pub struct HandlerError {
    kind: HandlerErrorKind,
}

#[derive(Debug, Clone)]
enum HandlerErrorKind {
    ResourceNotFound(String),
    Wire(ErrorObject),
}

impl HandlerError {
    /// The resource `uri` does not exist: `-32002` before 2026-07-28, `-32602` from it on.
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        HandlerError { kind: HandlerErrorKind::ResourceNotFound(uri.into()) }
    }
    /// Invalid parameters (`-32602`).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError { kind: HandlerErrorKind::Wire(ErrorObject::invalid_params(message)) }
    }
    /// An internal error (`-32603`). The message is sent to the peer: keep secrets out of it.
    pub fn internal(message: impl Into<String>) -> Self {
        HandlerError { kind: HandlerErrorKind::Wire(ErrorObject::internal_error(message)) }
    }
    /// Any JSON-RPC error.
    pub fn wire(error: ErrorObject) -> Self {
        HandlerError { kind: HandlerErrorKind::Wire(error) }
    }

    /// The wire error for a peer speaking `version`.
    pub(crate) fn into_error_object(self, version: ProtocolVersion) -> ErrorObject {
        match self.kind {
            HandlerErrorKind::Wire(e) => e,
            HandlerErrorKind::ResourceNotFound(uri) => {
                let code = if version.resource_not_found_is_invalid_params() {
                    ErrorCode::INVALID_PARAMS
                } else {
                    ErrorCode::RESOURCE_NOT_FOUND
                };
                ErrorObject::new(code, format!("resource not found: {uri}"))
                    .with_data(serde_json::json!({ "uri": uri }))
            }
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            HandlerErrorKind::ResourceNotFound(uri) => write!(f, "resource not found: {uri}"),
            HandlerErrorKind::Wire(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HandlerError {}

impl From<ErrorObject> for HandlerError {
    fn from(e: ErrorObject) -> Self {
        HandlerError::wire(e)
    }
}

impl From<crate::Error> for HandlerError {
    fn from(e: crate::Error) -> Self {
        match e.peer_error() {
            Some(p) => HandlerError::wire(p.clone()),
            None => HandlerError::internal(e.to_string()),
        }
    }
}

/// Converts what a tool handler returns into a [`CallToolResult`].
///
/// Implemented for [`CallToolResult`], `String`, `&'static str`, [`ContentBlock`],
/// `Vec<ContentBlock>`, [`Json<T>`] (structured content) and `Result<T, E>` where the error
/// becomes a tool execution error (`isError: true`) carrying `E`'s message.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool handler",
    note = "return a `CallToolResult`, a `String`, `Vec<ContentBlock>`, `Json<T>`, or a `Result` of one of these"
)]
pub trait IntoCallToolResult {
    /// The result.
    fn into_call_tool_result(self) -> CallToolResult;

    /// The call's answer: a result (with the JSON it came as, [`ToolReply::Relayed`] only), or
    /// a JSON-RPC error ([`ToolReply::Error`] only).
    #[doc(hidden)]
    fn into_tool_reply(self) -> Result<RelayedToolResult, HandlerError>
    where
        Self: Sized,
    {
        Ok(self.into_call_tool_result().into())
    }
}

/// A tool's answer that may be a JSON-RPC error instead of a result.
///
/// A tool's own failures belong in the result (`isError`, so the model sees them, as the spec
/// asks); return `Err` for those. `ToolReply::Error` is for a handler that relays another
/// server's answer, such as a gateway passing on an upstream's `-32602`: the caller gets the
/// same error object, code and data included.
///
/// ```
/// use portico::schema::{CallToolResult, ErrorObject};
/// use portico::server::{HandlerError, ToolReply};
///
/// fn relay(upstream: Result<CallToolResult, ErrorObject>) -> ToolReply {
///     match upstream {
///         Ok(result) => ToolReply::Result(result),
///         Err(error) => ToolReply::Error(HandlerError::wire(error)),
///     }
/// }
/// # let _ = relay(Ok(CallToolResult::text("ok")));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ToolReply {
    /// A result (which may itself be a tool error, `isError`).
    Result(CallToolResult),
    /// A JSON-RPC error in place of a result.
    Error(HandlerError),
    /// A result relayed from another server, answered with the JSON it came as where the
    /// client's revision reads it the same ([`RelayedToolResult`]).
    Relayed(RelayedToolResult),
}

impl From<RelayedToolResult> for ToolReply {
    fn from(r: RelayedToolResult) -> Self {
        ToolReply::Relayed(r)
    }
}

impl From<CallToolResult> for ToolReply {
    fn from(r: CallToolResult) -> Self {
        ToolReply::Result(r)
    }
}

impl From<HandlerError> for ToolReply {
    fn from(e: HandlerError) -> Self {
        ToolReply::Error(e)
    }
}

impl IntoCallToolResult for ToolReply {
    /// The result; an error becomes a tool error carrying its message.
    fn into_call_tool_result(self) -> CallToolResult {
        match self {
            ToolReply::Result(r) => r,
            ToolReply::Error(e) => CallToolResult::error(e.to_string()),
            ToolReply::Relayed(r) => r.into_result(),
        }
    }

    fn into_tool_reply(self) -> Result<RelayedToolResult, HandlerError> {
        match self {
            ToolReply::Result(r) => Ok(r.into()),
            ToolReply::Error(e) => Err(e),
            ToolReply::Relayed(r) => Ok(r),
        }
    }
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoCallToolResult for ContentBlock {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::new(vec![self])
    }
}

impl IntoCallToolResult for Vec<ContentBlock> {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::new(self)
    }
}

/// A typed value returned as `structuredContent`, with a text copy for older clients.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => CallToolResult::error(format!("the tool's result could not be serialized: {e}")),
        }
    }
}

impl<T: IntoCallToolResult, E: fmt::Display> IntoCallToolResult for Result<T, E> {
    fn into_call_tool_result(self) -> CallToolResult {
        match self {
            Ok(t) => t.into_call_tool_result(),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }

    fn into_tool_reply(self) -> Result<RelayedToolResult, HandlerError> {
        match self {
            Ok(t) => t.into_tool_reply(),
            Err(e) => Ok(CallToolResult::error(e.to_string()).into()),
        }
    }
}

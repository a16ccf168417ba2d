//! Roots: the directories a client exposes to a server.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::serde_util::tags;

/// A root directory or file the server may operate on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Root {
    /// The root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Root { uri: uri.into(), ..Default::default() }
    }
    /// Sets the name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// Params of `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListRootsRequestParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListRootsRequestParams {
    /// Empty params.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A `roots/list` request as embedded in an [`InputRequiredResult`](crate::InputRequiredResult)
/// (2026-07-28): `{"method": "roots/list", "params"?: …}`.
///
/// In the handshake era the same method travels as a JSON-RPC request; `jsonrpc` and `id` are
/// then kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListRootsRequest {
    #[serde(default)]
    method: tags::RootsList,
    /// Params, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<ListRootsRequestParams>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListRootsRequest {
    /// A request without params.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the params.
    pub fn with_params(mut self, params: ListRootsRequestParams) -> Self {
        self.params = Some(params);
        self
    }
}

/// Result of `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListRootsResult {
    /// `resultType`; never sent as an input response, kept for symmetry with other results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The roots.
    pub roots: Vec<Root>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListRootsResult {
    /// A result listing `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult { roots, ..Default::default() }
    }
}

crate::impl_result_envelope!(ListRootsResult);

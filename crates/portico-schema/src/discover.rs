//! `server/discover` (2026-07-28): what a server supports, without a handshake.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ServerCapabilities;
use crate::meta::{Meta, RequestMeta};
use crate::result::{CacheScope, ResultType};

/// Params of `server/discover`: only `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverRequestParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverRequestParams {
    /// Params carrying `meta`.
    pub fn new(meta: RequestMeta) -> Self {
        DiscoverRequestParams { meta: Some(meta), extra: Map::new() }
    }
}

/// Result of `server/discover` (cacheable).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Every revision the server speaks, e.g. `["2026-07-28", "2025-11-25"]`.
    pub supported_versions: Vec<String>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta` (SHOULD carry `io.modelcontextprotocol/serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// A result listing `supported_versions` and `capabilities`.
    pub fn new<I>(supported_versions: I, capabilities: ServerCapabilities) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        DiscoverResult {
            supported_versions: supported_versions.into_iter().map(Into::into).collect(),
            capabilities,
            ..Default::default()
        }
    }
    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
    /// Sets the cache hints.
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self.cache_scope = Some(scope);
        self
    }
}

crate::impl_result_envelope!(cacheable: DiscoverResult);

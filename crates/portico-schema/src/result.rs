//! Members every result shares: `resultType`, cache hints, pagination, the empty result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};

/// `resultType` (2026-07-28): what kind of result this is. Absent means `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultType {
    /// The final result.
    Complete,
    /// The server needs input from the client first ([`crate::InputRequiredResult`]).
    InputRequired,
    /// A task was created (tasks extension).
    Task,
}

/// `cacheScope` (2026-07-28): who may share a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any client may reuse it.
    Public,
    /// Only the same authorization context may reuse it.
    Private,
}

/// Implemented by every result type: lets the era layer stamp `resultType`, `_meta` and cache
/// hints without knowing the concrete result.
pub trait ResultEnvelope {
    /// `resultType`.
    fn result_type_mut(&mut self) -> &mut Option<ResultType>;
    /// `_meta`.
    fn meta_mut(&mut self) -> &mut Option<Meta>;
    /// `ttlMs` and `cacheScope`, for the cacheable results only.
    fn cache_mut(&mut self) -> Option<(&mut Option<u64>, &mut Option<CacheScope>)> {
        None
    }
}

/// Implements [`ResultEnvelope`] for a struct with `result_type` and `meta` fields, and also
/// `ttl_ms` / `cache_scope` when marked `cacheable`.
#[macro_export]
#[doc(hidden)]
macro_rules! impl_result_envelope {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::result::ResultEnvelope for $t {
            fn result_type_mut(&mut self) -> &mut Option<$crate::result::ResultType> { &mut self.result_type }
            fn meta_mut(&mut self) -> &mut Option<$crate::meta::Meta> { &mut self.meta }
        }
    )*};
    (cacheable: $($t:ty),* $(,)?) => {$(
        impl $crate::result::ResultEnvelope for $t {
            fn result_type_mut(&mut self) -> &mut Option<$crate::result::ResultType> { &mut self.result_type }
            fn meta_mut(&mut self) -> &mut Option<$crate::meta::Meta> { &mut self.meta }
            fn cache_mut(&mut self) -> Option<(&mut Option<u64>, &mut Option<$crate::result::CacheScope>)> {
                Some((&mut self.ttl_ms, &mut self.cache_scope))
            }
        }
    )*};
}

/// A result with no members of its own (`ping`, `logging/setLevel`, `resources/subscribe`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmptyResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EmptyResult {
    /// `{}`.
    pub fn new() -> Self {
        Self::default()
    }
}

impl_result_envelope!(EmptyResult);

/// Params of the paginated list requests (`tools/list`, `prompts/list`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PaginatedRequestParams {
    /// Where to continue; from a previous result's `nextCursor`. Opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PaginatedRequestParams {
    /// The first page.
    pub fn new() -> Self {
        Self::default()
    }
    /// The page at `cursor`.
    pub fn with_cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: RequestMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

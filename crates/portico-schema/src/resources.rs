//! Resources: listing, templates, reading and (handshake era) subscriptions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{Annotations, ResourceContents};
use crate::lifecycle::Icon;
use crate::meta::{Meta, RequestMeta};
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// A resource the server can read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, before any encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Resource {
    /// The resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource { uri: uri.into(), name: name.into(), ..Default::default() }
    }
    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
    /// Sets the size in bytes.
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }
}

/// A family of resources named by an RFC 6570 URI template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of every matching resource, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceTemplate {
    /// The template `uri_template` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate { uri_template: uri_template.into(), name: name.into(), ..Default::default() }
    }
    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }
}

/// Result of `resources/list` (cacheable in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// One page of resources.
    pub resources: Vec<Resource>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListResourcesResult {
    /// A page of `resources`.
    pub fn new(resources: Vec<Resource>) -> Self {
        ListResourcesResult { resources, ..Default::default() }
    }
    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<String>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
    /// Sets the cache hints.
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self.cache_scope = Some(scope);
        self
    }
}

/// Result of `resources/templates/list` (cacheable in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// One page of templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListResourceTemplatesResult {
    /// A page of `resource_templates`.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        ListResourceTemplatesResult { resource_templates, ..Default::default() }
    }
    /// Sets the cursor of the next page.
    pub fn with_next_cursor(mut self, cursor: impl Into<String>) -> Self {
        self.next_cursor = Some(cursor.into());
        self
    }
    /// Sets the cache hints.
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self.cache_scope = Some(scope);
        self
    }
}

/// Params of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceRequestParams {
    /// The URI to read.
    pub uri: String,
    /// Answers to the server's input requests, on a retry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The server's `requestState`, echoed verbatim on a retry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReadResourceRequestParams {
    /// Read `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceRequestParams { uri: uri.into(), ..Default::default() }
    }
    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: RequestMeta) -> Self {
        self.meta = Some(meta);
        self
    }
    /// Sets the input responses of a retry.
    pub fn with_input_responses(mut self, responses: InputResponses) -> Self {
        self.input_responses = Some(responses);
        self
    }
    /// Sets the echoed request state of a retry.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

/// Result of `resources/read` (cacheable in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The contents; one read may return several.
    pub contents: Vec<ResourceContents>,
    /// How long the result may be cached, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReadResourceResult {
    /// A result with `contents`.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult { contents, ..Default::default() }
    }
    /// Sets the cache hints.
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self.cache_scope = Some(scope);
        self
    }
}

/// Params of `resources/subscribe` (handshake era).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscribeRequestParams {
    /// The URI to watch.
    pub uri: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SubscribeRequestParams {
    /// Subscribe to `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        SubscribeRequestParams { uri: uri.into(), ..Default::default() }
    }
}

/// Params of `resources/unsubscribe` (handshake era).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UnsubscribeRequestParams {
    /// The URI to stop watching.
    pub uri: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UnsubscribeRequestParams {
    /// Unsubscribe from `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        UnsubscribeRequestParams { uri: uri.into(), ..Default::default() }
    }
}

/// Params of `notifications/resources/updated`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceUpdatedNotificationParams {
    /// The URI that changed (may be a sub-resource of the one subscribed to).
    pub uri: String,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId` on a 2026-07-28 listen stream).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceUpdatedNotificationParams {
    /// `uri` changed.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams { uri: uri.into(), ..Default::default() }
    }
}

crate::impl_result_envelope!(cacheable: ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult);

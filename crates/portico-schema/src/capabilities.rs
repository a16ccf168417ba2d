//! What each side declares it supports.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object with no fixed members, as used for `{}`-valued capabilities.
pub type JsonObject = Map<String, Value>;

/// The identifier of the tasks extension (2026-07-28), under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Capabilities a client declares (in `initialize`, or per request in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// The client answers `roots/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client answers `sampling/createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client answers `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Extensions by identifier (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Task support (2025-11-25, experimental); kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ClientCapabilities {
    /// No capabilities.
    pub fn new() -> Self {
        Self::default()
    }
    /// Declares `roots` (with `listChanged` in the handshake era when `list_changed`).
    pub fn with_roots(mut self, list_changed: bool) -> Self {
        self.roots = Some(RootsCapability { list_changed: list_changed.then_some(true), ..Default::default() });
        self
    }
    /// Declares `sampling` (with `sampling.tools` when `tools`).
    pub fn with_sampling(mut self, tools: bool) -> Self {
        self.sampling = Some(SamplingCapability { tools: tools.then(JsonObject::new), ..Default::default() });
        self
    }
    /// Declares `elicitation` with the given modes.
    pub fn with_elicitation(mut self, form: bool, url: bool) -> Self {
        self.elicitation = Some(ElicitationCapability {
            form: form.then(JsonObject::new),
            url: url.then(JsonObject::new),
            ..Default::default()
        });
        self
    }
    /// True when `roots/list` may be sent to this client.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }
    /// True when `sampling/createMessage` may be sent to this client.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }
    /// True when sampling requests may carry `tools`.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }
    /// True when form-mode elicitation may be sent (`elicitation: {}` means form only).
    pub fn supports_elicitation_form(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.form.is_some() || e.url.is_none())
    }
    /// True when URL-mode elicitation may be sent.
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }
    /// Declares the tasks extension ([`TASKS_EXTENSION`]): a tool call may be answered with a
    /// task, which the client polls (2026-07-28).
    pub fn with_tasks(mut self) -> Self {
        self.extensions.get_or_insert_with(Map::new).insert(TASKS_EXTENSION.to_owned(), Value::Object(Map::new()));
        self
    }
    /// True when the tasks extension is declared.
    pub fn supports_tasks(&self) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(TASKS_EXTENSION))
    }
}

/// `ClientCapabilities.roots`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RootsCapability {
    /// The client sends `notifications/roots/list_changed` (handshake era).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `ClientCapabilities.sampling`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingCapability {
    /// `includeContext` other than `none` is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Sampling requests may carry tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `ClientCapabilities.elicitation`; `{}` means form mode only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Capabilities a server declares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// The server emits log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// The server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Task support (2025-11-25, experimental); kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Extensions by identifier (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerCapabilities {
    /// No capabilities.
    pub fn new() -> Self {
        Self::default()
    }
    /// Declares `tools` (with `listChanged` when `list_changed`).
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ListChangedCapability::new(list_changed));
        self
    }
    /// Declares `prompts` (with `listChanged` when `list_changed`).
    pub fn with_prompts(mut self, list_changed: bool) -> Self {
        self.prompts = Some(ListChangedCapability::new(list_changed));
        self
    }
    /// Declares `resources` with the given sub-capabilities.
    pub fn with_resources(mut self, subscribe: bool, list_changed: bool) -> Self {
        self.resources = Some(ResourcesCapability::new(subscribe, list_changed));
        self
    }
    /// Declares `logging`.
    pub fn with_logging(mut self) -> Self {
        self.logging = Some(JsonObject::new());
        self
    }
    /// Declares `completions`.
    pub fn with_completions(mut self) -> Self {
        self.completions = Some(JsonObject::new());
        self
    }
}

/// `ServerCapabilities.tools` and `.prompts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListChangedCapability {
    /// The server sends `list_changed` notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListChangedCapability {
    /// The capability, with `listChanged` when `list_changed`.
    pub fn new(list_changed: bool) -> Self {
        ListChangedCapability { list_changed: list_changed.then_some(true), extra: Map::new() }
    }
}

/// `ServerCapabilities.resources`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// The server supports subscriptions to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourcesCapability {
    /// The capability with the given sub-capabilities.
    pub fn new(subscribe: bool, list_changed: bool) -> Self {
        ResourcesCapability {
            subscribe: subscribe.then_some(true),
            list_changed: list_changed.then_some(true),
            extra: Map::new(),
        }
    }
}

/// Turns a JSON object literal (such as `serde_json::json!({...})`) into a [`JsonObject`], e.g.
/// for a tool's input schema.
///
/// # Panics
/// When `value` is not an object: a programming error in a literal, found at startup.
pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(m) => m,
        other => panic!("expected a JSON object, got {other}"),
    }
}

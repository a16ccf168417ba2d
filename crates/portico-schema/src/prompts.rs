//! Prompts: listing and getting.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{ContentBlock, Role};
use crate::lifecycle::Icon;
use crate::meta::{Meta, RequestMeta};
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// A prompt template the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
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

impl Prompt {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt { name: name.into(), ..Default::default() }
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
    /// Adds an argument.
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }
}

/// An argument a prompt takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// True when it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PromptArgument {
    /// An argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), ..Default::default() }
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
    /// Sets `required`.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = Some(required);
        self
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PromptMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<ContentBlock>) -> Self {
        PromptMessage { role, content: content.into(), extra: Map::new() }
    }
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::User, ContentBlock::text(text))
    }
    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// Result of `prompts/list` (cacheable in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// One page of prompts.
    pub prompts: Vec<Prompt>,
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

impl ListPromptsResult {
    /// A page of `prompts`.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        ListPromptsResult { prompts, ..Default::default() }
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

/// Params of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptRequestParams {
    /// The prompt's name.
    pub name: String,
    /// Argument values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
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

impl GetPromptRequestParams {
    /// Get prompt `name`.
    pub fn new(name: impl Into<String>) -> Self {
        GetPromptRequestParams { name: name.into(), ..Default::default() }
    }
    /// Adds an argument value.
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments.get_or_insert_with(BTreeMap::new).insert(name.into(), value.into());
        self
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

/// Result of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GetPromptResult {
    /// A result with `messages`.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult { messages, ..Default::default() }
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

crate::impl_result_envelope!(GetPromptResult);
crate::impl_result_envelope!(cacheable: ListPromptsResult);

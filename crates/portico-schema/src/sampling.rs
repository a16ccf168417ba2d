//! `sampling/createMessage`: the server asks the client's model for a completion.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::JsonObject;
use crate::content::{Role, SamplingMessageContentBlock};
use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::serde_util::{self, tags};
use crate::tools::Tool;

/// Params of `sampling/createMessage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// What kind of model the server would like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include (`thisServer`/`allServers` soft-deprecated since 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: u64,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call (2025-11-25 and later; needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run as a task (2025-11-25, experimental); kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageRequestParams {
    /// Sample at most `max_tokens` after `messages`.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams { messages, max_tokens, ..Default::default() }
    }
    /// Sets the model preferences.
    pub fn with_model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.model_preferences = Some(preferences);
        self
    }
    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }
    /// Sets `includeContext`.
    pub fn with_include_context(mut self, include_context: IncludeContext) -> Self {
        self.include_context = Some(include_context);
        self
    }
    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }
    /// Sets the stop sequences.
    pub fn with_stop_sequences(mut self, stop_sequences: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop_sequences = Some(stop_sequences.into_iter().map(Into::into).collect());
        self
    }
    /// Offers `tools` to the model.
    pub fn with_tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = Some(tools);
        self
    }
    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }
}

/// A `sampling/createMessage` request as embedded in an
/// [`InputRequiredResult`](crate::InputRequiredResult) (2026-07-28):
/// `{"method": "sampling/createMessage", "params": …}`.
///
/// In the handshake era the same method travels as a JSON-RPC request; `jsonrpc` and `id` are
/// then kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageRequest {
    #[serde(default)]
    method: tags::SamplingCreateMessage,
    /// The params.
    pub params: CreateMessageRequestParams,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageRequest {
    /// A request with `params`.
    pub fn new(params: CreateMessageRequestParams) -> Self {
        CreateMessageRequest { params, ..Default::default() }
    }
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said: one block or (2025-11-25 and later) several.
    pub content: SamplingContent,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SamplingMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<SamplingContent>) -> Self {
        SamplingMessage { role, content: content.into(), meta: None, extra: Map::new() }
    }
    /// A text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::User, SamplingMessageContentBlock::text(text))
    }
    /// A text message from the assistant.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(text))
    }
}

/// The `content` of a sampling message or result: a single block or an array of blocks.
///
/// The two forms are kept apart so a message round-trips in the form it arrived in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// A single block (every revision).
    Single(SamplingMessageContentBlock),
    /// Several blocks (2025-11-25 and later).
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever the form.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl From<SamplingMessageContentBlock> for SamplingContent {
    fn from(b: SamplingMessageContentBlock) -> Self {
        SamplingContent::Single(b)
    }
}

impl From<Vec<SamplingMessageContentBlock>> for SamplingContent {
    fn from(v: Vec<SamplingMessageContentBlock>) -> Self {
        SamplingContent::Multiple(v)
    }
}

/// What kind of model the server would like; all advisory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelPreferences {
    /// Model names to prefer, in order (substring matches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub intelligence_priority: Option<f64>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ModelPreferences {
    /// No preferences.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a model-name hint.
    pub fn with_hint(mut self, name: impl Into<String>) -> Self {
        self.hints.get_or_insert_with(Vec::new).push(ModelHint::new(name));
        self
    }
    /// Sets the cost priority.
    pub fn with_cost_priority(mut self, priority: f64) -> Self {
        self.cost_priority = Some(priority);
        self
    }
    /// Sets the speed priority.
    pub fn with_speed_priority(mut self, priority: f64) -> Self {
        self.speed_priority = Some(priority);
        self
    }
    /// Sets the intelligence priority.
    pub fn with_intelligence_priority(mut self, priority: f64) -> Self {
        self.intelligence_priority = Some(priority);
        self
    }
}

/// A model-name hint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelHint {
    /// A (partial) model name, e.g. `"claude-3-5-sonnet"` or `"sonnet"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ModelHint {
    /// A hint naming `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ModelHint { name: Some(name.into()), extra: Map::new() }
    }
}

/// Which MCP servers' context the client should add to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// None.
    None,
    /// The requesting server's (soft-deprecated).
    ThisServer,
    /// Every connected server's (soft-deprecated).
    AllServers,
}

/// How the model may use the offered tools (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolChoice {
    /// The mode; absent means `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolChoice {
    /// A choice with `mode`.
    pub fn new(mode: ToolChoiceMode) -> Self {
        ToolChoice { mode: Some(mode), extra: Map::new() }
    }
}

/// `ToolChoice.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call a tool.
    None,
}

/// Result of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// `resultType`; never sent as an input response, kept for symmetry with other results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Who produced the content (normally the assistant).
    pub role: Role,
    /// The generated content.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped: `endTurn`, `stopSequence`, `maxTokens`, `toolUse` or other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageResult {
    /// `content` from the assistant, produced by `model`.
    pub fn new(content: impl Into<SamplingContent>, model: impl Into<String>) -> Self {
        CreateMessageResult {
            result_type: None,
            role: Role::Assistant,
            content: content.into(),
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: Map::new(),
        }
    }
    /// Sets the stop reason.
    pub fn with_stop_reason(mut self, stop_reason: impl Into<String>) -> Self {
        self.stop_reason = Some(stop_reason.into());
        self
    }
}

crate::impl_result_envelope!(CreateMessageResult);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ToolUseContent;
    use serde_json::json;

    #[test]
    fn content_keeps_its_form() {
        let single = json!({"role": "user", "content": {"type": "text", "text": "hi"}});
        let m: SamplingMessage = serde_json::from_value(single.clone()).expect("single");
        assert!(matches!(m.content, SamplingContent::Single(_)));
        assert_eq!(serde_json::to_value(&m).expect("ser"), single);

        let many = json!({"role": "assistant", "content": [
            {"type": "text", "text": "calling"},
            {"type": "tool_use", "id": "c1", "name": "w", "input": {"city": "Paris"}}
        ]});
        let m: SamplingMessage = serde_json::from_value(many.clone()).expect("many");
        assert_eq!(m.content.blocks().len(), 2);
        assert!(matches!(m.content.blocks()[1], SamplingMessageContentBlock::ToolUse(ToolUseContent { .. })));
        assert_eq!(serde_json::to_value(&m).expect("ser"), many);
    }

    #[test]
    fn enums_use_the_wire_spelling() {
        assert_eq!(serde_json::to_value(IncludeContext::ThisServer).expect("ser"), json!("thisServer"));
        assert_eq!(
            serde_json::to_value(ToolChoice::new(ToolChoiceMode::Required)).expect("ser"),
            json!({"mode": "required"})
        );
    }
}

//! Tools: listing and calling.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::JsonObject;
use crate::content::ContentBlock;
use crate::lifecycle::Icon;
use crate::meta::{Meta, RequestMeta};
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// A tool the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Programmatic name (SHOULD be 1–128 characters of `[A-Za-z0-9_.-]`).
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// JSON Schema of the arguments; its `type` is `"object"`.
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent` (2025-06-18 and later; any schema in 2026-07-28,
    /// an object schema before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints; untrusted unless the server is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution properties such as `taskSupport` (2025-11-25); kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A tool `name` taking arguments described by `input_schema`.
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Tool { name: name.into(), input_schema, ..Default::default() }
    }
    /// A tool that takes no arguments: `{"type":"object","additionalProperties":false}`.
    pub fn without_arguments(name: impl Into<String>) -> Self {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::from("object"));
        schema.insert("additionalProperties".into(), Value::Bool(false));
        Tool::new(name, schema)
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
    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }
    /// Sets the output schema.
    pub fn with_output_schema(mut self, output_schema: JsonObject) -> Self {
        self.output_schema = Some(output_schema);
        self
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// Hints about a tool's behaviour. Clients MUST treat them as untrusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default true; meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolAnnotations {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets `readOnlyHint`.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only_hint = Some(read_only);
        self
    }
    /// Sets `destructiveHint`.
    pub fn with_destructive(mut self, destructive: bool) -> Self {
        self.destructive_hint = Some(destructive);
        self
    }
    /// Sets `idempotentHint`.
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent_hint = Some(idempotent);
        self
    }
    /// Sets `openWorldHint`.
    pub fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world_hint = Some(open_world);
        self
    }
}

/// Params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Run as a task (2025-11-25, experimental); kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
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

impl CallToolRequestParams {
    /// Call tool `name`.
    pub fn new(name: impl Into<String>) -> Self {
        CallToolRequestParams { name: name.into(), ..Default::default() }
    }
    /// Sets the arguments.
    pub fn with_arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = Some(arguments);
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

/// Result of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result (2025-06-18 and later; an object before 2026-07-28, any value since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed (a tool execution error, not a protocol error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Read member by member, straight from the decoder: a derived `Deserialize` with a flattened
/// `extra` would first copy the whole result into serde's buffer, content included, and then
/// decode every member from that copy. A tool result is on every call's path.
impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CallToolResult;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tool result (a JSON object)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
                use serde::de::Error;
                fn once<T, E: Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
                    match slot.replace(value) {
                        Some(_) => Err(E::duplicate_field(name)),
                        None => Ok(()),
                    }
                }
                let mut r = CallToolResult::default();
                let (mut result_type, mut content, mut structured, mut is_error, mut meta) =
                    (None, None, None, None, None);
                while let Some(key) = map.next_key::<ResultMember>()? {
                    match key {
                        ResultMember::ResultType => {
                            once(&mut result_type, map.next_value::<Option<ResultType>>()?, "resultType")?;
                        }
                        ResultMember::Content => once(&mut content, map.next_value::<Vec<ContentBlock>>()?, "content")?,
                        ResultMember::StructuredContent => {
                            once(&mut structured, map.next_value::<Option<Value>>()?, "structuredContent")?;
                        }
                        ResultMember::IsError => once(&mut is_error, map.next_value::<Option<bool>>()?, "isError")?,
                        ResultMember::Meta => once(&mut meta, map.next_value::<Option<Meta>>()?, "_meta")?,
                        ResultMember::Other(name) => {
                            let value = map.next_value::<Value>()?;
                            r.extra.insert(name, value);
                        }
                    }
                }
                r.content = content.ok_or_else(|| A::Error::missing_field("content"))?;
                r.result_type = result_type.flatten();
                r.structured_content = structured.flatten();
                r.is_error = is_error.flatten();
                r.meta = meta.flatten();
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

crate::serde_util::member_names! {
    /// A member name of a tool result.
    enum ResultMember {
        ResultType = "resultType",
        Content = "content",
        StructuredContent = "structuredContent",
        IsError = "isError",
        Meta = "_meta",
    }
}

impl CallToolResult {
    /// A result with `content`.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult { content, ..Default::default() }
    }
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult::new(vec![ContentBlock::text(text)])
    }
    /// A tool execution error: `isError: true` and the message as text.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult { is_error: Some(true), ..CallToolResult::text(message) }
    }
    /// A structured result, with its compact JSON also as a text block for older clients.
    pub fn structured(value: Value) -> Self {
        CallToolResult { structured_content: Some(value.clone()), ..CallToolResult::text(value.to_string()) }
    }
    /// Sets `isError`.
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }
    /// Sets the structured result (without touching `content`).
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }
    /// True when `isError` is set.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

/// Result of `tools/list` (cacheable in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// One page of tools.
    pub tools: Vec<Tool>,
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

impl ListToolsResult {
    /// A page of `tools`.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult { tools, ..Default::default() }
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

crate::impl_result_envelope!(CallToolResult);
crate::impl_result_envelope!(cacheable: ListToolsResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_result_is_read_member_by_member() {
        let text = r#"{"x-vendor":{"a":[1]},"isError":null,"\u005fmeta":{"k":1},"content":[{"type":"text","text":"hi"}],"structuredContent":{"t":1},"resultType":"complete"}"#;
        let r: CallToolResult = serde_json::from_str(text).expect("a tool result");
        assert_eq!(r.content, vec![ContentBlock::text("hi")]);
        assert_eq!(r.is_error, None);
        assert_eq!(r.structured_content, Some(json!({"t": 1})));
        assert_eq!(r.result_type, Some(ResultType::Complete));
        assert_eq!(r.meta.as_ref().and_then(|m| m.get("k")), Some(&json!(1)));
        assert_eq!(r.extra.get("x-vendor"), Some(&json!({"a": [1]})));
        assert_eq!(r.extra.len(), 1);
        // The same from a value as from text.
        let from_value: CallToolResult = serde_json::from_value(serde_json::from_str(text).expect("json")).expect("ok");
        assert_eq!(from_value, r);

        for (bad, why) in [
            (r#"{"isError":false}"#, "missing field `content`"),
            (r#"{"content":[],"content":[]}"#, "duplicate field `content`"),
            (r#"{"content":[],"isError":true,"isError":false}"#, "duplicate field `isError`"),
            (r#"{"content":[],"isError":"yes"}"#, "invalid type"),
            (r#"[]"#, "a tool result"),
        ] {
            let e = serde_json::from_str::<CallToolResult>(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn result_constructors() {
        let r = CallToolResult::error("boom");
        assert!(r.is_error());
        assert_eq!(
            serde_json::to_value(&r).expect("ser"),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        );

        let r = CallToolResult::structured(json!({"t": 22.5}));
        assert_eq!(r.content[0].as_text(), Some(r#"{"t":22.5}"#));
        assert_eq!(r.structured_content, Some(json!({"t": 22.5})));
        assert!(!r.is_error());
    }

    #[test]
    fn unknown_members_survive_at_every_level() {
        let wire = json!({
            "resultType": "complete",
            "tools": [{
                "name": "t",
                "inputSchema": {"type": "object", "x-schema": 1},
                "annotations": {"readOnlyHint": true, "x-hint": "h"},
                "x-tool": [1, 2]
            }],
            "ttlMs": 5,
            "cacheScope": "private",
            "x-result": {"nested": true}
        });
        let r: ListToolsResult = serde_json::from_value(wire.clone()).expect("decode");
        assert_eq!(r.extra.get("x-result"), Some(&json!({"nested": true})));
        assert_eq!(r.tools[0].extra.get("x-tool"), Some(&json!([1, 2])));
        assert_eq!(r.tools[0].annotations.as_ref().and_then(|a| a.extra.get("x-hint")), Some(&json!("h")));
        assert_eq!(r.tools[0].annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        assert_eq!((r.ttl_ms, r.cache_scope), (Some(5), Some(CacheScope::Private)));
        assert_eq!(serde_json::to_value(&r).expect("encode"), wire);
    }

    #[test]
    fn tool_without_arguments_has_a_closed_object_schema() {
        let t = Tool::without_arguments("now");
        assert_eq!(
            serde_json::to_value(t).expect("ser"),
            json!({"name": "now", "inputSchema": {"type": "object", "additionalProperties": false}})
        );
    }
}

//! Adapting results for peers of older revisions: fields a revision lacks are removed, content
//! kinds it lacks become text. Only used below 2025-11-25, so the newest revisions stay on the
//! fast path (typed values serialized straight to bytes).

use portico_schema::{CallToolResult, ContentBlock, ProtocolVersion};
use serde_json::{Map, Value};

/// A rewrite of an encoded result for an older revision.
pub(crate) type Downgrade = fn(&mut Value, ProtocolVersion);

const V0618: ProtocolVersion = ProtocolVersion::V2025_06_18;
const V1125: ProtocolVersion = ProtocolVersion::V2025_11_25;
const V0326: ProtocolVersion = ProtocolVersion::V2025_03_26;

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn each(v: &mut Value, key: &str, f: impl Fn(&mut Value, ProtocolVersion), version: ProtocolVersion) {
    if let Some(items) = v.get_mut(key).and_then(Value::as_array_mut) {
        for item in items {
            f(item, version);
        }
    }
}

/// Icons and `title` on named things (tools, resources, templates, prompts, implementations).
fn named(v: &mut Value, version: ProtocolVersion) {
    let Some(o) = obj(v) else { return };
    if version < V1125 {
        o.remove("icons");
    }
    if version < V0618 {
        o.remove("title");
    }
}

fn implementation(v: &mut Value, version: ProtocolVersion) {
    named(v, version);
    if let Some(o) = obj(v)
        && version < V1125
    {
        o.remove("description");
        o.remove("websiteUrl");
    }
}

pub(crate) fn initialize_result(v: &mut Value, version: ProtocolVersion) {
    if let Some(info) = v.get_mut("serverInfo") {
        implementation(info, version);
    }
    if version < V0326
        && let Some(caps) = v.get_mut("capabilities").and_then(Value::as_object_mut)
    {
        caps.remove("completions");
    }
}

fn tool(v: &mut Value, version: ProtocolVersion) {
    named(v, version);
    let Some(o) = obj(v) else { return };
    if version < V1125 {
        o.remove("execution");
    }
    if version < V0618 {
        o.remove("outputSchema");
    }
    if version < V0326 {
        o.remove("annotations");
    }
}

pub(crate) fn list_tools(v: &mut Value, version: ProtocolVersion) {
    each(v, "tools", tool, version);
}

pub(crate) fn list_resources(v: &mut Value, version: ProtocolVersion) {
    each(v, "resources", named, version);
}

pub(crate) fn list_templates(v: &mut Value, version: ProtocolVersion) {
    each(v, "resourceTemplates", named, version);
}

pub(crate) fn list_prompts(v: &mut Value, version: ProtocolVersion) {
    each(
        v,
        "prompts",
        |p, version| {
            named(p, version);
            each(p, "arguments", named, version);
        },
        version,
    );
}

/// A content block a revision cannot carry becomes text saying what it was.
fn content_block(v: &mut Value, version: ProtocolVersion) {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let replacement = match kind.as_str() {
        "resource_link" if version < V0618 => {
            let uri = v.get("uri").and_then(Value::as_str).unwrap_or_default();
            Some(format!("resource: {uri}"))
        }
        "audio" if version < V0326 => {
            let mime = v.get("mimeType").and_then(Value::as_str).unwrap_or("audio");
            Some(format!("[{mime} content not supported by protocol revision {version}]"))
        }
        _ => None,
    };
    if let Some(text) = replacement {
        *v = serde_json::json!({ "type": "text", "text": text });
        return;
    }
    if version < V0618
        && let Some(a) = v.get_mut("annotations").and_then(Value::as_object_mut)
    {
        a.remove("lastModified");
    }
}

/// The rewrite a tool result needs for `version`, if any. Most results of most revisions need
/// none (2025-06-18 never does), and are then encoded straight from the typed value instead of
/// through a `serde_json::Value`. Errs towards rewriting: the rewrite of an unchanged result is
/// only slower.
pub(crate) fn for_call_tool_result(r: &CallToolResult, version: ProtocolVersion) -> Option<Downgrade> {
    if version >= V0618 {
        return None;
    }
    let changes = r.structured_content.is_some()
        || r.content.iter().any(|block| match block {
            ContentBlock::Text(t) => t.annotations.is_some(),
            ContentBlock::Image(i) => i.annotations.is_some(),
            ContentBlock::Resource(e) => e.annotations.is_some(),
            _ => true,
        });
    changes.then_some(call_tool_result as Downgrade)
}

pub(crate) fn call_tool_result(v: &mut Value, version: ProtocolVersion) {
    each(v, "content", content_block, version);
    if version < V0618
        && let Some(o) = obj(v)
    {
        o.remove("structuredContent");
    }
}

pub(crate) fn get_prompt_result(v: &mut Value, version: ProtocolVersion) {
    each(
        v,
        "messages",
        |m, version| {
            if let Some(c) = m.get_mut("content") {
                content_block(c, version);
            }
        },
        version,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn older_revisions_lose_newer_fields() {
        let mut v = json!({"tools":[{"name":"t","title":"T","icons":[],"inputSchema":{},"outputSchema":{},"annotations":{},"execution":{}}]});
        list_tools(&mut v, ProtocolVersion::V2024_11_05);
        assert_eq!(v, json!({"tools":[{"name":"t","inputSchema":{}}]}));
        let mut v = json!({"tools":[{"name":"t","title":"T","icons":[],"inputSchema":{},"outputSchema":{}}]});
        list_tools(&mut v, ProtocolVersion::V2025_06_18);
        assert_eq!(v, json!({"tools":[{"name":"t","title":"T","inputSchema":{},"outputSchema":{}}]}));
    }

    #[test]
    fn a_tool_result_is_rewritten_only_when_the_rewrite_changes_it() {
        use portico_schema::{Annotations, TextContent};
        let changed = |r: &CallToolResult, version: ProtocolVersion| {
            let mut v = serde_json::to_value(r).expect("encodes");
            let before = v.clone();
            call_tool_result(&mut v, version);
            v != before
        };
        let plain = CallToolResult::text("hi");
        let mut structured = CallToolResult::text("hi");
        structured.structured_content = Some(json!({"x": 1}));
        let annotated = CallToolResult::new(vec![ContentBlock::Text(
            TextContent::new("hi").with_annotations(Annotations::default().with_last_modified("2025-01-01T00:00:00Z")),
        )]);
        let link: CallToolResult =
            serde_json::from_value(json!({"content":[{"type":"resource_link","uri":"a://b","name":"b"}]}))
                .expect("decodes");
        for version in [ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_03_26, ProtocolVersion::V2025_06_18] {
            for r in [&plain, &structured, &annotated, &link] {
                // Skipping the rewrite is only allowed where it would change nothing.
                if for_call_tool_result(r, version).is_none() {
                    assert!(!changed(r, version), "{version}: {r:?}");
                }
            }
        }
        assert!(for_call_tool_result(&plain, ProtocolVersion::V2024_11_05).is_none(), "the common case is direct");
        assert!(for_call_tool_result(&structured, ProtocolVersion::V2025_06_18).is_none());
        assert!(for_call_tool_result(&structured, ProtocolVersion::V2025_03_26).is_some());
        assert!(for_call_tool_result(&link, ProtocolVersion::V2024_11_05).is_some());
    }

    #[test]
    fn unknown_content_kinds_become_text() {
        let mut v = json!({"content":[{"type":"resource_link","uri":"a://b","name":"b"},{"type":"audio","data":"","mimeType":"audio/wav"}],"structuredContent":{"x":1}});
        call_tool_result(&mut v, ProtocolVersion::V2024_11_05);
        assert_eq!(v["content"][0], json!({"type":"text","text":"resource: a://b"}));
        assert_eq!(v["content"][1]["type"], "text");
        assert!(v.get("structuredContent").is_none());
    }
}

//! Results checked before the model sees them: `structuredContent` against the tool's
//! `outputSchema`, and results over the size cap truncated and marked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use portico::schema::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};

/// The `_meta` key a truncated result carries: `{"originalBytes", "limit"}`.
pub const TRUNCATED_META: &str = "dev.portico/truncated";

/// How many schema violations one error lists.
const MAX_REPORTED: usize = 3;

/// Refuses every `$ref` outside the schema: nothing is fetched.
struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not dereferenced").into())
    }
}

/// Compiled output schemas, by exposed tool name and schema (recompiled when either changes).
#[derive(Default)]
pub(crate) struct OutputSchemas {
    compiled: Mutex<HashMap<String, Compiled>>,
}

/// A schema as last seen, and its validator (`None`: it did not compile).
type Compiled = (Value, Option<Arc<jsonschema::Validator>>);

impl OutputSchemas {
    /// `Some(message)` when `result`'s structured content does not match `tool`'s output
    /// schema, or is missing although the tool declares one (the spec requires it then).
    pub(crate) fn check(&self, tool: &Tool, result: &CallToolResult) -> Option<String> {
        let schema = tool.output_schema.as_ref()?;
        if result.is_error == Some(true) {
            return None;
        }
        let Some(structured) = &result.structured_content else {
            return Some("the tool declares an outputSchema but its result has no structuredContent".to_owned());
        };
        let validator = self.validator(&tool.name, schema)?;
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .take(MAX_REPORTED)
            .map(|e| format!("{} at `{}`", e, e.instance_path))
            .collect();
        (!errors.is_empty())
            .then(|| format!("its structuredContent does not match the tool's outputSchema: {}", errors.join("; ")))
    }

    fn validator(&self, name: &str, schema: &portico::schema::JsonObject) -> Option<Arc<jsonschema::Validator>> {
        let schema = Value::Object(schema.clone());
        let mut compiled = self.compiled.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((known, v)) = compiled.get(name)
            && *known == schema
        {
            return v.clone();
        }
        let mut options = jsonschema::options().with_retriever(NoRetrieval);
        if schema.get("$schema").is_none() {
            options = options.with_draft(jsonschema::Draft::Draft202012);
        }
        let v = match options.build(&schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(target: "portico::host", tool = %name, "outputSchema not compiled, results not checked: {e}");
                None
            }
        };
        compiled.insert(name.to_owned(), (schema, v.clone()));
        v
    }
}

/// Cuts `result` to about `limit` bytes of JSON: text blocks are shortened, other blocks
/// (images, audio, embedded resources) are replaced by a note, structured content is dropped
/// when it alone is too large; a last text block and `_meta[TRUNCATED_META]` say so.
pub(crate) fn truncate(mut result: CallToolResult, size: usize, limit: usize) -> CallToolResult {
    let budget = limit.saturating_sub(1024).max(256);
    let mut used = 0usize;
    let mut blocks = Vec::with_capacity(result.content.len() + 1);
    for block in result.content {
        match block {
            ContentBlock::Text(mut t) => {
                let room = budget.saturating_sub(used);
                if t.text.len() > room {
                    let mut cut = room;
                    while !t.text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    t.text.truncate(cut);
                }
                used += t.text.len();
                if !t.text.is_empty() {
                    blocks.push(ContentBlock::Text(t));
                }
            }
            other => {
                let kind = match &other {
                    ContentBlock::Image(_) => "an image",
                    ContentBlock::Audio(_) => "audio",
                    ContentBlock::Resource(_) => "an embedded resource",
                    _ => "a content block",
                };
                let size = serde_json::to_vec(&other).map_or(0, |v| v.len());
                if used + size <= budget {
                    used += size;
                    blocks.push(other);
                } else {
                    blocks.push(ContentBlock::text(format!("[{kind} of {size} bytes left out]")));
                }
            }
        }
    }
    if let Some(structured) = &result.structured_content
        && serde_json::to_vec(structured).map_or(0, |v| v.len()) + used > budget
    {
        result.structured_content = None;
    }
    blocks
        .push(ContentBlock::text(format!("[truncated by Portico: the result had {size} bytes, the limit is {limit}]")));
    result.content = blocks;
    result
        .meta
        .get_or_insert_with(Default::default)
        .insert(TRUNCATED_META.to_owned(), json!({ "originalBytes": size, "limit": limit }));
    result
}

/// The `_meta` key a stateless-era result names its server under; an upstream's must not reach
/// the gateway's clients as if it were the gateway's.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// Whether [`strip_meta`] would change `meta`.
pub(crate) fn has_meta_to_strip(meta: &Option<portico::schema::Meta>) -> bool {
    meta.as_ref().is_some_and(|m| m.contains_key(SERVER_INFO_META))
}

/// Drops what belongs to the upstream's connection, not to the answer, from a result's `_meta`.
pub(crate) fn strip_meta(meta: &mut Option<portico::schema::Meta>) {
    if let Some(m) = meta {
        m.remove(SERVER_INFO_META);
        if m.is_empty() {
            *meta = None;
        }
    }
}

/// Rewrites the URIs in `contents` read from `server` to what the gateway offers: a URI the
/// registry scopes (`portico:<server>/<uri>`) is given that way, so a client can read it again.
pub(crate) fn expose_contents(
    registry: &crate::registry::Registry,
    server: &str,
    contents: &mut [portico::schema::ResourceContents],
) {
    use portico::schema::ResourceContents;
    for c in contents {
        let uri = match c {
            ResourceContents::Text(t) => &mut t.uri,
            ResourceContents::Blob(b) => &mut b.uri,
            #[allow(unreachable_patterns)]
            _ => continue,
        };
        if let Some(exposed) = registry.exposed_uri(server, uri) {
            *uri = exposed;
        }
    }
}

/// Whether [`expose_blocks`] would change `blocks`: whether one names a URI the registry
/// scopes.
pub(crate) fn blocks_to_expose(registry: &crate::registry::Registry, server: &str, blocks: &[ContentBlock]) -> bool {
    blocks.iter().any(|block| match block {
        ContentBlock::ResourceLink(l) => registry.exposed_uri(server, &l.uri).is_some(),
        ContentBlock::Resource(r) => registry.exposed_uri(server, r.resource.uri()).is_some(),
        _ => false,
    })
}

/// Rewrites resource links and embedded resources in a tool result from `server` the same way.
pub(crate) fn expose_blocks(registry: &crate::registry::Registry, server: &str, blocks: &mut [ContentBlock]) {
    for block in blocks {
        match block {
            ContentBlock::ResourceLink(l) => {
                if let Some(exposed) = registry.exposed_uri(server, &l.uri) {
                    l.uri = exposed;
                }
            }
            ContentBlock::Resource(r) => expose_contents(registry, server, std::slice::from_mut(&mut r.resource)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_is_checked_against_the_output_schema() {
        let schemas = OutputSchemas::default();
        let mut tool = Tool::without_arguments("t");
        tool.output_schema = serde_json::from_value(
            json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}),
        )
        .ok();
        let mut ok = CallToolResult::new(vec![ContentBlock::text("42")]);
        ok.structured_content = Some(json!({"sum": 42}));
        assert_eq!(schemas.check(&tool, &ok), None);
        let mut bad = ok.clone();
        bad.structured_content = Some(json!({"sum": "forty-two"}));
        let msg = schemas.check(&tool, &bad).expect("mismatch");
        assert!(msg.contains("/sum"), "{msg}");
        let mut missing = ok.clone();
        missing.structured_content = None;
        assert!(schemas.check(&tool, &missing).is_some());
        let mut err = missing.clone();
        err.is_error = Some(true);
        assert_eq!(schemas.check(&tool, &err), None, "a tool error needs no structured content");
        assert_eq!(schemas.check(&Tool::without_arguments("plain"), &bad), None, "no schema, no check");
    }

    #[test]
    fn oversized_results_are_cut_and_marked() {
        let big = "x".repeat(100_000);
        let r = CallToolResult::new(vec![ContentBlock::text(big.clone()), ContentBlock::text(big)]);
        let cut = truncate(r, 200_100, 10_000);
        let len = serde_json::to_vec(&cut).map(|v| v.len()).unwrap_or(usize::MAX);
        assert!(len <= 10_000, "{len}");
        let meta = cut.meta.as_ref().and_then(|m| m.get(TRUNCATED_META)).expect("marked");
        assert_eq!(meta["originalBytes"], 200_100);
        let last = match cut.content.last() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        assert!(last.contains("truncated by Portico"), "{last}");
    }
}

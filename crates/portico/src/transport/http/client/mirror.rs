//! Stateless-era (2026-07-28) mirrored headers: `Mcp-Name` values and the `Mcp-Param-*`
//! headers a tool's `x-mcp-header` annotations ask for.
//!
//! The annotations are learned from the `tools/list` results the transport carries. A tool
//! whose annotations break the spec's rules is dropped from that result before the client
//! sees it, as the spec requires of HTTP clients.

use std::borrow::Cow;
use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// The annotation keyword.
const ANNOTATION: &str = "x-mcp-header";
/// The prefix of an encoded header value (and of values that must be encoded).
const SENTINEL: &str = "=?base64?";

/// One mirrored argument: where its value is in `arguments`, and the header suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mirror {
    /// Property names from the root of `arguments` (a `properties` chain).
    pub path: Vec<String>,
    /// `{Name}` of `Mcp-Param-{Name}`, as annotated.
    pub header: String,
}

/// What the transport knows of each tool's mirrored arguments.
#[derive(Debug, Default)]
pub(super) struct Mirrors {
    tools: HashMap<String, Vec<Mirror>>,
}

impl Mirrors {
    /// The mirrored arguments of `tool` (empty when it has none or is unknown).
    pub(super) fn of(&self, tool: &str) -> &[Mirror] {
        self.tools.get(tool).map(Vec::as_slice).unwrap_or_default()
    }

    /// True when `tool` appeared in a `tools/list` result.
    #[cfg(test)]
    pub(super) fn knows(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// Learns from a `tools/list` response frame; returns the frame to hand up, rewritten
    /// without the tools whose annotations are invalid when there are any.
    pub(super) fn observe_tools_list(&mut self, frame: &[u8]) -> Option<Vec<u8>> {
        let mut msg: Map<String, Value> = serde_json::from_slice(frame).ok()?;
        let tools = msg.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
        let before = tools.len();
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { return true };
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match annotations(schema) {
                Ok(mirrors) => {
                    self.tools.insert(name.to_owned(), mirrors);
                    true
                }
                Err(why) => {
                    tracing::warn!(tool = name, reason = %why, "tool dropped from tools/list: invalid x-mcp-header");
                    self.tools.remove(name);
                    false
                }
            }
        });
        if tools.len() == before {
            return None;
        }
        serde_json::to_vec(&msg).ok()
    }
}

/// The mirrored arguments a tool's input schema declares, or why the declaration is invalid.
pub(super) fn annotations(schema: &Value) -> Result<Vec<Mirror>, String> {
    let mut out = Vec::new();
    let Some(root) = schema.as_object() else { return Ok(out) };
    if root.contains_key(ANNOTATION) {
        return Err("the input schema itself is annotated, not a property".into());
    }
    walk(root, &mut Vec::new(), &mut out)?;
    let mut seen = std::collections::HashSet::new();
    for m in &out {
        if !seen.insert(m.header.to_ascii_lowercase()) {
            return Err(format!("header name {:?} is declared twice", m.header));
        }
    }
    Ok(out)
}

/// Walks one schema object reachable from the root through `properties` only.
fn walk(schema: &Map<String, Value>, path: &mut Vec<String>, out: &mut Vec<Mirror>) -> Result<(), String> {
    for (key, value) in schema {
        if key == "properties" {
            let Some(props) = value.as_object() else { continue };
            for (name, sub) in props {
                let Some(sub) = sub.as_object() else { continue };
                path.push(name.clone());
                if let Some(header) = sub.get(ANNOTATION) {
                    out.push(Mirror { path: path.clone(), header: check_declaration(header, sub)? });
                }
                walk(sub, path, out)?;
                path.pop();
            }
        } else if key != ANNOTATION && is_schema_keyword(key) && mentions_annotation(value) {
            return Err(format!("an x-mcp-header under {key:?} is not reachable through properties alone"));
        }
    }
    Ok(())
}

/// Keys whose values are data, not schemas: an annotation-like key there means nothing.
fn is_schema_keyword(key: &str) -> bool {
    !matches!(key, "const" | "enum" | "default" | "examples" | "example" | "description" | "title")
}

/// Keywords whose value maps names to schemas.
fn is_schema_map(key: &str) -> bool {
    matches!(key, "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas")
}

/// True when an annotation appears anywhere inside a subschema (or list of them).
fn mentions_annotation(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(mentions_annotation),
        Value::Object(o) => {
            o.contains_key(ANNOTATION)
                || o.iter().any(|(k, v)| {
                    if is_schema_map(k) {
                        v.as_object().is_some_and(|m| m.values().any(mentions_annotation))
                    } else {
                        is_schema_keyword(k) && mentions_annotation(v)
                    }
                })
        }
        _ => false,
    }
}

/// Checks one annotation: a token naming a string, integer or boolean property.
fn check_declaration(header: &Value, property: &Map<String, Value>) -> Result<String, String> {
    let Some(name) = header.as_str() else { return Err("x-mcp-header must be a string".into()) };
    if !is_token(name) {
        return Err(format!("header name {name:?} is not an HTTP token"));
    }
    let primitive = |t: &str| matches!(t, "string" | "integer" | "boolean");
    let ok = match property.get("type") {
        Some(Value::String(t)) => primitive(t),
        // A nullable primitive: `["string", "null"]`.
        Some(Value::Array(ts)) => {
            let named: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            named.len() == 1 && primitive(named[0]) && ts.iter().all(Value::is_string)
        }
        _ => false,
    };
    if !ok {
        return Err(format!("header {name:?} is on a property that is not a string, integer or boolean"));
    }
    Ok(name.to_owned())
}

/// RFC 9110 `token`: one or more `tchar`.
pub(super) fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The header value of one argument, `None` when absent or null (no header then).
pub(super) fn param_value(arguments: &Map<String, Value>, path: &[String]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let mut v = arguments.get(first)?;
    for p in rest {
        v = v.get(p)?;
    }
    match v {
        Value::String(s) => Some(encode_value(s).into_owned()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A header value as sent: as is when safe, else `=?base64?{base64 of UTF-8}?=`.
/// Borrowed when sent as is (a method's name always is).
pub(super) fn encode_value(s: &str) -> Cow<'_, str> {
    if is_safe(s) { Cow::Borrowed(s) } else { Cow::Owned(format!("{SENTINEL}{}?=", STANDARD.encode(s.as_bytes()))) }
}

/// Visible ASCII with inner spaces, not looking like an encoded value. A tab is a control
/// character: it is encoded wherever it is.
fn is_safe(s: &str) -> bool {
    let b = s.as_bytes();
    let edge_ok = |c: Option<&u8>| c.is_none_or(|c| *c != b' ');
    edge_ok(b.first()) && edge_ok(b.last()) && b.iter().all(|c| (0x20..=0x7e).contains(c)) && !s.starts_with(SENTINEL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(schema: Value) -> Result<Vec<(String, String)>, String> {
        annotations(&schema).map(|v| v.into_iter().map(|m| (m.path.join("."), m.header)).collect())
    }

    #[test]
    fn valid_annotations_are_learned() {
        let s = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "opt": {"type": ["boolean", "null"], "x-mcp-header": "Dry-Run"},
            "plain": {"type": "string"},
            "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "tagged": {"type": "string", "default": {"x-mcp-header": "not an annotation"}}
        }});
        let mut got = headers(s).expect("valid");
        got.sort();
        assert_eq!(
            got,
            vec![
                ("n".into(), "Count".into()),
                ("nested.zone".into(), "Zone".into()),
                ("opt".into(), "Dry-Run".into()),
                ("region".into(), "Region".into()),
            ]
        );
        assert_eq!(headers(json!({"type": "object"})), Ok(vec![]));
        assert_eq!(headers(Value::Null), Ok(vec![]));
    }

    #[test]
    fn invalid_annotations_are_refused() {
        let bad = [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Has Space"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ré"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"x-mcp-header": "A"}}}),
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "sAME"}
            }}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"$defs": {"x": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ];
        for s in bad {
            assert!(headers(s.clone()).is_err(), "accepted {s}");
        }
    }

    #[test]
    fn values_are_encoded_when_unsafe() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("a b"), "a b");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encode_value(" lead"), format!("=?base64?{}?=", STANDARD.encode(" lead")));
        assert_eq!(encode_value("trail\t"), format!("=?base64?{}?=", STANDARD.encode("trail\t")));
        assert_eq!(encode_value("in\tside"), format!("=?base64?{}?=", STANDARD.encode("in\tside")));
        assert_eq!(encode_value("trail "), format!("=?base64?{}?=", STANDARD.encode("trail ")));
        assert_eq!(encode_value("a\nb"), format!("=?base64?{}?=", STANDARD.encode("a\nb")));
        assert_eq!(encode_value("=?base64?x?="), format!("=?base64?{}?=", STANDARD.encode("=?base64?x?=")));
    }

    #[test]
    fn argument_values_by_type() {
        let args = json!({"s": "x", "i": -42, "b": false, "n": null, "o": {"z": "deep"}});
        let args = args.as_object().expect("object");
        let p = |s: &str| s.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(param_value(args, &p("s")).as_deref(), Some("x"));
        assert_eq!(param_value(args, &p("i")).as_deref(), Some("-42"));
        assert_eq!(param_value(args, &p("b")).as_deref(), Some("false"));
        assert_eq!(param_value(args, &p("n")), None);
        assert_eq!(param_value(args, &p("absent")), None);
        assert_eq!(param_value(args, &p("o.z")).as_deref(), Some("deep"));
    }

    #[test]
    fn tools_list_results_lose_invalid_tools_only() {
        let frame = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}}
        ]}});
        let mut m = Mirrors::default();
        let out = m.observe_tools_list(frame.to_string().as_bytes()).expect("rewritten");
        let v: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["result"]["tools"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["id"], 3);
        assert_eq!(m.of("good").len(), 1);
        assert!(!m.knows("bad"));
        let clean = json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [{"name": "t", "inputSchema": {}}]}});
        assert!(m.observe_tools_list(clean.to_string().as_bytes()).is_none(), "untouched when all are valid");
        assert!(m.knows("t"));
    }
}

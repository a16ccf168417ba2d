//! Example arguments for a tool, made up from its input schema: what a model would fill in.

use portico::schema::JsonObject;
use serde_json::{Map, Value, json};

/// How deep nested object schemas are followed.
const MAX_DEPTH: usize = 8;

/// An arguments object with a value for every required property of `schema`.
pub fn example(schema: &JsonObject) -> Value {
    object(schema, 0)
}

fn object(schema: &JsonObject, depth: usize) -> Value {
    let mut out = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    for name in required(schema) {
        let sub = props.and_then(|p| p.get(name)).and_then(Value::as_object);
        out.insert(name.to_owned(), sub.map_or(json!("example"), |s| value(s, depth + 1)));
    }
    Value::Object(out)
}

/// The properties `schema` requires: its own `required`, those of the first branch of each
/// `allOf` member's `anyOf`/`oneOf` (or of the member itself), and those of `else` — an
/// example sets none of the properties an `if` tests unless they are required anyway.
fn required(schema: &JsonObject) -> Vec<&str> {
    let mut out = list(schema);
    for member in schema.get("allOf").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object) {
        out.extend(list(member));
        let first = ["anyOf", "oneOf"].iter().find_map(|k| member.get(*k).and_then(Value::as_array)?.first());
        out.extend(first.and_then(Value::as_object).map(list).unwrap_or_default());
    }
    if schema.contains_key("if") {
        out.extend(schema.get("else").and_then(Value::as_object).map(list).unwrap_or_default());
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|n| seen.insert(*n));
    out
}

fn list(s: &JsonObject) -> Vec<&str> {
    s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

fn value(schema: &JsonObject, depth: usize) -> Value {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return v.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ => "string",
    };
    match kind {
        "integer" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "number" => schema.get("minimum").cloned().unwrap_or(json!(1.5)),
        "boolean" => json!(true),
        "null" => Value::Null,
        "array" => json!([]),
        "object" if depth < MAX_DEPTH => object(schema, depth),
        "object" => json!({}),
        _ => json!("example"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_properties_get_values_of_their_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"}, "n": {"type": "integer", "minimum": 3}, "s": {"type": "string"},
                "e": {"type": "string", "enum": ["x", "y"]}, "b": {"type": "boolean"},
                "o": {"type": "object", "properties": {"z": {"type": "string", "default": "d"}}, "required": ["z"]},
                "optional": {"type": "string"}
            },
            "required": ["a", "n", "s", "e", "b", "o"]
        });
        let got = example(schema.as_object().expect("object"));
        assert_eq!(got, json!({"a": 1.5, "n": 3, "s": "example", "e": "x", "b": true, "o": {"z": "d"}}));
    }

    #[test]
    fn conditional_requirements_are_met() {
        let schema = json!({
            "type": "object",
            "properties": {"phone": {"type": "string"}, "email": {"type": "string"}, "how": {"enum": ["phone"]}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"how": {"const": "phone"}}, "required": ["how"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]}
        });
        let got = example(schema.as_object().expect("object"));
        assert_eq!(got, json!({"phone": "example", "email": "example"}));
    }
}

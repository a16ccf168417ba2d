use serde::Deserialize;
use serde_json::json;

use super::*;

/// Arguments.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Search {
    /// What to look for.
    query: String,
    /// How many at most.
    #[serde(default = "ten")]
    limit: u32,
    page: Option<u32>,
}

fn ten() -> u32 {
    10
}

#[test]
fn input_schemas_have_the_mcp_shape() {
    let schema = Value::Object(input_schema::<Search>().clone());
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "description": "Arguments.",
            "properties": {
                "query": { "type": "string", "description": "What to look for." },
                "limit": { "type": "integer", "format": "uint32", "minimum": 0, "default": 10, "description": "How many at most." },
                "page": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 }
            },
            "required": ["query"]
        })
    );
}

#[test]
fn schemas_are_cached_per_type_and_direction() {
    assert!(std::ptr::eq(input_schema::<Search>(), input_schema::<Search>()));
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Both {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        x: Option<u8>,
    }
    assert!(std::ptr::eq(output_schema::<Both>(), output_schema::<Both>()));
    assert!(
        !std::ptr::eq(input_schema::<Both>(), output_schema::<Both>()),
        "deserialize and serialize contracts differ"
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct Tree {
    name: String,
    children: Vec<Tree>,
    leaf: Option<Leaf>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct Leaf {
    weight: f32,
}

#[test]
fn subschemas_stay_local() {
    let schema = Value::Object(input_schema::<Tree>().clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["$defs"]["Leaf"]["properties"]["weight"]["type"], "number");
    let text = schema.to_string();
    for r in text.match_indices("\"$ref\":\"").map(|(i, m)| &text[i + m.len()..]) {
        assert!(r.starts_with('#'), "a $ref points inside the schema: {r}");
    }
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none(), "{schema}");
    let output = Value::Object(output_schema::<Tree>().clone());
    assert!(output.get("$schema").is_none() && output.get("title").is_none(), "{output}");
}

#[test]
fn schemas_without_a_type_become_objects() {
    assert_eq!(Value::Object(input_schema::<Value>().clone()), json!({ "type": "object" }));

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "op", rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Op {
        Add { a: i64, b: i64 },
        Neg { a: i64 },
    }
    let schema = input_schema::<Op>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["oneOf"].as_array().map(Vec::len), Some(2));
}

#[test]
#[should_panic(expected = "must be a JSON object")]
fn non_object_arguments_are_refused() {
    let _ = input_schema::<Vec<String>>();
}

#[test]
fn output_schemas_describe_what_is_serialized() {
    /// A sum.
    #[derive(Serialize, JsonSchema)]
    struct Sum {
        sum: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    }
    assert_eq!(
        Value::Object(output_schema::<Sum>().clone()),
        json!({
            "type": "object",
            "description": "A sum.",
            "properties": { "sum": { "type": "integer", "format": "int64" }, "note": { "type": ["string", "null"] } },
            "required": ["sum"]
        })
    );
    assert_eq!(Value::Object(output_schema::<u8>().clone())["type"], "integer", "any type, as 2026-07-28 allows");
}

#[test]
fn resource_outputs() {
    let r = "hi".to_owned().into_resource_result("a://b", Some("text/plain")).expect("text");
    assert_eq!(
        serde_json::to_value(&r).expect("json"),
        json!({ "contents": [{ "uri": "a://b", "mimeType": "text/plain", "text": "hi" }] })
    );
    let r = Json(json!({ "x": 1 })).into_resource_result("a://b", None).expect("json");
    let ResourceContents::Text(t) = &r.contents[0] else { panic!("text") };
    assert_eq!((t.text.as_str(), t.mime_type.as_deref()), (r#"{"x":1}"#, Some("application/json")));
    let e = Err::<String, _>(HandlerError::invalid_params("bad")).into_resource_result("a://b", None);
    assert_eq!(e.expect_err("error").to_string(), "bad (code -32602)");
}

#[test]
fn prompt_and_completion_outputs() {
    let r = "Say hi".into_prompt_result().expect("prompt");
    assert_eq!(r.messages, vec![PromptMessage::user("Say hi")]);
    assert!(Err::<String, _>(HandlerError::internal("no")).into_prompt_result().is_err());
    let r = vec!["a", "b"].into_complete_result().expect("values");
    assert_eq!(r.completion.values, ["a", "b"]);
    let r = (0..150).map(|i| i.to_string()).collect::<Vec<_>>().into_complete_result().expect("values");
    assert_eq!((r.completion.values.len(), r.completion.has_more), (100, Some(true)));
}

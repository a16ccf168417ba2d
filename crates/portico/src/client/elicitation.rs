//! Helpers for answering form elicitations: the schema's default values (SEP-1034).
//!
//! A form field may carry a `default` (2025-11-25 and later). A client pre-fills its form
//! with them, so a user who accepts without touching a field submits its default:
//!
//! ```
//! use portico::client::elicitation::accept_with_defaults;
//! use portico::schema::{ElicitAction, NumberSchema, NumberSchemaType, RequestedSchema, StringSchema};
//!
//! let schema = RequestedSchema::new()
//!     .with_property("name", StringSchema::new().with_default("Ada"))
//!     .with_property("age", NumberSchema::new(NumberSchemaType::Integer).with_default(36.0));
//! // The user typed a name and left the age alone.
//! let typed = serde_json::json!({ "name": "Grace" }).as_object().cloned().unwrap_or_default();
//! let result = accept_with_defaults(&schema, typed);
//! assert_eq!(result.action, ElicitAction::Accept);
//! assert_eq!(serde_json::Value::Object(result.content.unwrap_or_default()),
//!            serde_json::json!({ "name": "Grace", "age": 36 }));
//! ```

use portico_schema::{ElicitResult, JsonObject, NumberSchemaType, PrimitiveSchemaDefinition, RequestedSchema};
use serde_json::Value;

/// The default value of every field of `schema` that has one, as the form would be
/// pre-filled. An `integer` field's default is a JSON integer when it is a whole number.
pub fn form_defaults(schema: &RequestedSchema) -> JsonObject {
    schema.properties.iter().filter_map(|(name, field)| Some((name.clone(), field_default(field)?))).collect()
}

/// `accept` with `content`, every field the user left out filled in with its default.
/// Fields the user did fill in are kept as they are, even when they differ from the default.
pub fn accept_with_defaults(schema: &RequestedSchema, content: JsonObject) -> ElicitResult {
    let mut filled = form_defaults(schema);
    filled.extend(content);
    ElicitResult::accept(filled)
}

/// The default of one field, as a JSON value of the field's type.
pub fn field_default(field: &PrimitiveSchemaDefinition) -> Option<Value> {
    use PrimitiveSchemaDefinition as P;
    let strings = |v: &Vec<String>| Value::Array(v.iter().cloned().map(Value::String).collect());
    match field {
        P::String(s) => s.default.clone().map(Value::String),
        P::Number(n) => {
            let d = n.default?;
            let whole = d.fract() == 0.0 && d.abs() < 9.0e15;
            Some(match n.kind {
                NumberSchemaType::Integer if whole => Value::from(d as i64),
                _ => serde_json::Number::from_f64(d).map(Value::Number)?,
            })
        }
        P::Boolean(b) => b.default.map(Value::Bool),
        P::UntitledSingleSelectEnum(e) => e.default.clone().map(Value::String),
        P::TitledSingleSelectEnum(e) => e.default.clone().map(Value::String),
        P::LegacyTitledEnum(e) => e.default.clone().map(Value::String),
        P::UntitledMultiSelectEnum(e) => e.default.as_ref().map(strings),
        P::TitledMultiSelectEnum(e) => e.default.as_ref().map(strings),
        _ => None,
    }
}

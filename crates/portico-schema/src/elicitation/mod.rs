//! `elicitation/create`: the server asks the user for input, through a form or a URL.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::serde_util::{self, tags};

mod form;
pub use form::*;

/// Params of `elicitation/create`: form mode or (2025-11-25 and later) URL mode, by `mode`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// `mode` absent or `"form"`.
    Form(ElicitRequestFormParams),
    /// `"mode": "url"`.
    Url(ElicitRequestURLParams),
}

impl ElicitRequestParams {
    /// The message shown to the user, whichever the mode.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(p) => &p.message,
            ElicitRequestParams::Url(p) => &p.message,
        }
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(p)
    }
}

impl From<ElicitRequestURLParams> for ElicitRequestParams {
    fn from(p: ElicitRequestURLParams) -> Self {
        ElicitRequestParams::Url(p)
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = serde_util::object(d)?;
        match obj.get("mode") {
            None => serde_util::decode(obj).map(ElicitRequestParams::Form),
            Some(Value::String(m)) if m == tags::Form::VALUE => serde_util::decode(obj).map(ElicitRequestParams::Form),
            Some(Value::String(m)) if m == tags::Url::VALUE => serde_util::decode(obj).map(ElicitRequestParams::Url),
            Some(other) => Err(serde_util::unknown_variant(
                "elicitation",
                "mode",
                Some(other.as_str().unwrap_or("<not a string>")),
                &["form", "url"],
            )),
        }
    }
}

/// Form-mode params: a message and a flat schema of primitive fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequestFormParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<tags::Form>,
    /// What the user is asked.
    pub message: String,
    /// The fields to fill in.
    pub requested_schema: RequestedSchema,
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

impl ElicitRequestFormParams {
    /// Ask `message` with the fields of `requested_schema`. `mode` is left out (it means form).
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams { message: message.into(), requested_schema, ..Default::default() }
    }
    /// Writes `"mode": "form"` explicitly (2025-11-25 and later) or leaves it out.
    pub fn with_explicit_mode(mut self, explicit: bool) -> Self {
        self.mode = explicit.then_some(tags::Form);
        self
    }
    /// True when `"mode": "form"` is written.
    pub fn has_explicit_mode(&self) -> bool {
        self.mode.is_some()
    }
}

/// URL-mode params (2025-11-25 and later): the user continues out of band at `url`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequestURLParams {
    #[serde(default)]
    mode: tags::Url,
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Identifies this elicitation (required in 2025-11-25, removed in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
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

impl ElicitRequestURLParams {
    /// Ask the user to open `url`, explained by `message`.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams { message: message.into(), url: url.into(), ..Default::default() }
    }
    /// Sets the elicitation id (2025-11-25).
    pub fn with_elicitation_id(mut self, id: impl Into<String>) -> Self {
        self.elicitation_id = Some(id.into());
        self
    }
}

/// An `elicitation/create` request as embedded in an
/// [`InputRequiredResult`](crate::InputRequiredResult) (2026-07-28):
/// `{"method": "elicitation/create", "params": …}`.
///
/// In the handshake era the same method travels as a JSON-RPC request; `jsonrpc` and `id` are
/// then kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequest {
    #[serde(default)]
    method: tags::ElicitationCreate,
    /// The params.
    pub params: ElicitRequestParams,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitRequest {
    /// A request with `params`.
    pub fn new(params: impl Into<ElicitRequestParams>) -> Self {
        ElicitRequest { method: tags::ElicitationCreate, params: params.into(), extra: Map::new() }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitResult {
    /// `resultType`; never sent as an input response, kept for symmetry with other results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values (form mode, `accept` only): strings, numbers, booleans or string arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    /// A result with `action` and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult { result_type: None, action, content: None, meta: None, extra: Map::new() }
    }
    /// `accept` with the submitted form values.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult { content: Some(content), ..ElicitResult::new(ElicitAction::Accept) }
    }
    /// `decline`.
    pub fn decline() -> Self {
        ElicitResult::new(ElicitAction::Decline)
    }
    /// `cancel`.
    pub fn cancel() -> Self {
        ElicitResult::new(ElicitAction::Cancel)
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitationCompleteNotificationParams {
    /// The URL-mode elicitation that completed.
    pub elicitation_id: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitationCompleteNotificationParams {
    /// Elicitation `elicitation_id` completed.
    pub fn new(elicitation_id: impl Into<String>) -> Self {
        ElicitationCompleteNotificationParams { elicitation_id: elicitation_id.into(), ..Default::default() }
    }
}

crate::impl_result_envelope!(ElicitResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_follow_mode() {
        let form: ElicitRequestParams =
            serde_json::from_value(json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}}))
                .expect("form without mode");
        assert!(matches!(form, ElicitRequestParams::Form(ref f) if !f.has_explicit_mode()));
        let url: ElicitRequestParams =
            serde_json::from_value(json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e1"}))
                .expect("url");
        assert!(matches!(url, ElicitRequestParams::Url(ref u) if u.elicitation_id.as_deref() == Some("e1")));
        assert!(serde_json::from_value::<ElicitRequestParams>(json!({"mode": "voice", "message": "m"})).is_err());
    }

    #[test]
    fn primitive_schemas_dispatch_on_type_and_members() {
        use PrimitiveSchemaDefinition as P;
        let cases = [
            (json!({"type": "string"}), "String"),
            (json!({"type": "integer", "minimum": 1}), "Number"),
            (json!({"type": "boolean"}), "Boolean"),
            (json!({"type": "string", "enum": ["a"]}), "UntitledSingle"),
            (json!({"type": "string", "enum": ["a"], "enumNames": ["A"]}), "Legacy"),
            (json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}), "TitledSingle"),
            (json!({"type": "array", "items": {"type": "string", "enum": ["a"]}}), "UntitledMulti"),
            (json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}), "TitledMulti"),
        ];
        for (wire, want) in cases {
            let p: P = serde_json::from_value(wire.clone()).expect("decode");
            let got = match p {
                P::String(_) => "String",
                P::Number(_) => "Number",
                P::Boolean(_) => "Boolean",
                P::UntitledSingleSelectEnum(_) => "UntitledSingle",
                P::TitledSingleSelectEnum(_) => "TitledSingle",
                P::UntitledMultiSelectEnum(_) => "UntitledMulti",
                P::TitledMultiSelectEnum(_) => "TitledMulti",
                P::LegacyTitledEnum(_) => "Legacy",
            };
            assert_eq!(got, want, "{wire}");
            assert_eq!(serde_json::to_value(&p).expect("ser"), wire);
        }
        assert!(serde_json::from_value::<P>(json!({"type": "object"})).is_err());
    }

    #[test]
    fn builders_produce_the_wire_shape() {
        let schema = RequestedSchema::new()
            .with_required_property("name", StringSchema::new().with_title("Name"))
            .with_property("age", NumberSchema::new(NumberSchemaType::Integer).with_range(Some(18.0), None));
        assert_eq!(
            serde_json::to_value(ElicitRequestFormParams::new("Who?", schema)).expect("ser"),
            json!({
                "message": "Who?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "title": "Name"}, "age": {"type": "integer", "minimum": 18}},
                    "required": ["name"]
                }
            })
        );
    }
}

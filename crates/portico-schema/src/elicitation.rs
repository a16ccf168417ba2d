//! `elicitation/create`: the server asks the user for input, through a form or a URL.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::serde_util::{self, tags};

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

/// `ElicitRequestFormParams.requestedSchema`: an object schema whose properties are primitives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RequestedSchema {
    /// `$schema`: the JSON Schema dialect.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(rename = "type", default)]
    kind: tags::Object,
    /// The fields, by name.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// The names of the fields that must be filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RequestedSchema {
    /// A schema without fields.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds an optional field.
    pub fn with_property(mut self, name: impl Into<String>, schema: impl Into<PrimitiveSchemaDefinition>) -> Self {
        self.properties.insert(name.into(), schema.into());
        self
    }
    /// Adds a field that must be filled in.
    pub fn with_required_property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        let name = name.into();
        self.required.get_or_insert_with(Vec::new).push(name.clone());
        self.properties.insert(name, schema.into());
        self
    }
}

/// The schema of one form field.
///
/// Chosen from `type` and, for strings and arrays, from which enum members are present.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum PrimitiveSchemaDefinition {
    /// Free text.
    String(StringSchema),
    /// A number or integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// One of plain values (`enum`).
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// One of titled values (`oneOf` of `{const, title}`).
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Several of plain values (`items.enum`).
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Several of titled values (`items.anyOf` of `{const, title}`).
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// One of values titled by a parallel `enumNames` (legacy).
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        let obj = serde_util::object(d)?;
        match serde_util::str_member(&obj, "type") {
            Some("string") if obj.contains_key("oneOf") => serde_util::decode(obj).map(P::TitledSingleSelectEnum),
            Some("string") if obj.contains_key("enum") && obj.contains_key("enumNames") => {
                serde_util::decode(obj).map(P::LegacyTitledEnum)
            }
            Some("string") if obj.contains_key("enum") => serde_util::decode(obj).map(P::UntitledSingleSelectEnum),
            Some("string") => serde_util::decode(obj).map(P::String),
            Some("number" | "integer") => serde_util::decode(obj).map(P::Number),
            Some("boolean") => serde_util::decode(obj).map(P::Boolean),
            Some("array") => {
                let titled = obj.get("items").and_then(Value::as_object).is_some_and(|i| i.contains_key("anyOf"));
                if titled {
                    serde_util::decode(obj).map(P::TitledMultiSelectEnum)
                } else {
                    serde_util::decode(obj).map(P::UntitledMultiSelectEnum)
                }
            }
            other => Err(serde_util::unknown_variant(
                "primitive schema",
                "type",
                other,
                &["string", "number", "integer", "boolean", "array"],
            )),
        }
    }
}

macro_rules! into_primitive {
    ($($variant:ident($t:ty)),* $(,)?) => {$(
        impl From<$t> for PrimitiveSchemaDefinition {
            fn from(s: $t) -> Self {
                PrimitiveSchemaDefinition::$variant(s)
            }
        }
    )*};
}

into_primitive!(
    String(StringSchema),
    Number(NumberSchema),
    Boolean(BooleanSchema),
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    LegacyTitledEnum(LegacyTitledEnumSchema),
);

/// A text field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StringSchema {
    #[serde(rename = "type", default)]
    kind: tags::String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Shortest allowed length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Longest allowed length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Pre-filled value (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StringSchema {
    /// A text field.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the help text.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the length bounds.
    pub fn with_length(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_length = min;
        self.max_length = max;
        self
    }
    /// Sets the format (`email`, `uri`, `date`, `date-time`).
    pub fn with_format(mut self, format: impl Into<String>) -> Self {
        self.format = Some(format.into());
        self
    }
    /// Sets the pre-filled value.
    pub fn with_default(mut self, default: impl Into<String>) -> Self {
        self.default = Some(default.into());
        self
    }
}

/// `NumberSchema.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberSchemaType {
    /// Any number.
    #[default]
    Number,
    /// Whole numbers only.
    Integer,
}

/// A numeric field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub kind: NumberSchemaType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Smallest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub minimum: Option<f64>,
    /// Largest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub maximum: Option<f64>,
    /// Pre-filled value (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub default: Option<f64>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NumberSchema {
    /// A field of `kind`.
    pub fn new(kind: NumberSchemaType) -> Self {
        NumberSchema { kind, ..Default::default() }
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the help text.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the bounds.
    pub fn with_range(mut self, minimum: Option<f64>, maximum: Option<f64>) -> Self {
        self.minimum = minimum;
        self.maximum = maximum;
        self
    }
    /// Sets the pre-filled value.
    pub fn with_default(mut self, default: f64) -> Self {
        self.default = Some(default);
        self
    }
}

/// A checkbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BooleanSchema {
    #[serde(rename = "type", default)]
    kind: tags::Boolean,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BooleanSchema {
    /// A checkbox.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the help text.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the pre-filled value.
    pub fn with_default(mut self, default: bool) -> Self {
        self.default = Some(default);
        self
    }
}

/// A value with a display title: `{"const": …, "title": …}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledEnumOption {
    /// The value.
    pub r#const: String,
    /// What the user sees.
    pub title: String,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TitledEnumOption {
    /// `value` shown as `title`.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        TitledEnumOption { r#const: value.into(), title: title.into(), extra: Map::new() }
    }
}

/// Pick one of plain values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledSingleSelectEnumSchema {
    #[serde(rename = "type", default)]
    kind: tags::String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    pub r#enum: Vec<String>,
    /// Pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UntitledSingleSelectEnumSchema {
    /// A choice among `values`.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledSingleSelectEnumSchema { r#enum: values.into_iter().map(Into::into).collect(), ..Default::default() }
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the pre-selected value.
    pub fn with_default(mut self, default: impl Into<String>) -> Self {
        self.default = Some(default.into());
        self
    }
}

/// Pick one of titled values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledSingleSelectEnumSchema {
    #[serde(rename = "type", default)]
    kind: tags::String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<TitledEnumOption>,
    /// Pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TitledSingleSelectEnumSchema {
    /// A choice among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        TitledSingleSelectEnumSchema { one_of: options, ..Default::default() }
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the pre-selected value.
    pub fn with_default(mut self, default: impl Into<String>) -> Self {
        self.default = Some(default.into());
        self
    }
}

/// `UntitledMultiSelectEnumSchema.items`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledEnumItems {
    #[serde(rename = "type", default)]
    kind: tags::String,
    /// The values.
    pub r#enum: Vec<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Pick several of plain values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UntitledMultiSelectEnumSchema {
    #[serde(rename = "type", default)]
    kind: tags::Array,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The values.
    pub items: UntitledEnumItems,
    /// Pre-selected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UntitledMultiSelectEnumSchema {
    /// Several among `values`.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        UntitledMultiSelectEnumSchema {
            items: UntitledEnumItems { r#enum: values.into_iter().map(Into::into).collect(), ..Default::default() },
            ..Default::default()
        }
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the selection-count bounds.
    pub fn with_items(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_items = min;
        self.max_items = max;
        self
    }
    /// Sets the pre-selected values.
    pub fn with_default(mut self, default: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.default = Some(default.into_iter().map(Into::into).collect());
        self
    }
}

/// `TitledMultiSelectEnumSchema.items`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<TitledEnumOption>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Pick several of titled values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TitledMultiSelectEnumSchema {
    #[serde(rename = "type", default)]
    kind: tags::Array,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: TitledEnumItems,
    /// Pre-selected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TitledMultiSelectEnumSchema {
    /// Several among `options`.
    pub fn new(options: Vec<TitledEnumOption>) -> Self {
        TitledMultiSelectEnumSchema {
            items: TitledEnumItems { any_of: options, extra: Map::new() },
            ..Default::default()
        }
    }
    /// Sets the label.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the selection-count bounds.
    pub fn with_items(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_items = min;
        self.max_items = max;
        self
    }
    /// Sets the pre-selected values.
    pub fn with_default(mut self, default: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.default = Some(default.into_iter().map(Into::into).collect());
        self
    }
}

/// Pick one of values titled by a parallel `enumNames` array (pre-2025-11-25 style).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LegacyTitledEnumSchema {
    #[serde(rename = "type", default)]
    kind: tags::String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    pub r#enum: Vec<String>,
    /// Display names, one per value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LegacyTitledEnumSchema {
    /// A choice among `values`, shown as `names`.
    pub fn new(
        values: impl IntoIterator<Item = impl Into<String>>,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        LegacyTitledEnumSchema {
            r#enum: values.into_iter().map(Into::into).collect(),
            enum_names: Some(names.into_iter().map(Into::into).collect()),
            ..Default::default()
        }
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

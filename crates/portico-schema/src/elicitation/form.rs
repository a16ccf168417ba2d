//! The form an `elicitation/create` asks to fill in: a flat object schema whose properties are
//! primitives (string, number, boolean) and enums (single or multiple choice, with or without
//! titles, and the legacy `enumNames` form).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::serde_util::{self, tags};

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

//! `completion/complete`: argument autocompletion for prompts and resource templates.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::serde_util::{self, tags};

/// The most values one completion may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteRequestParams {
    /// What is being completed.
    pub r#ref: CompletionReference,
    /// The argument being completed and its partial value.
    pub argument: CompleteArgument,
    /// Values of arguments already filled in (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CompleteRequestParams {
    /// Complete `argument` of `reference`.
    pub fn new(reference: impl Into<CompletionReference>, argument: CompleteArgument) -> Self {
        CompleteRequestParams { r#ref: reference.into(), argument, context: None, meta: None, extra: Map::new() }
    }
    /// Adds the value of an argument already filled in.
    pub fn with_context_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let context = self.context.get_or_insert_with(CompleteContext::default);
        context.arguments.get_or_insert_with(BTreeMap::new).insert(name.into(), value.into());
        self
    }
    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: RequestMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// `CompleteRequestParams.argument`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CompleteArgument {
    /// Argument `name` with partial `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompleteArgument { name: name.into(), value: value.into(), extra: Map::new() }
    }
}

/// `CompleteRequestParams.context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteContext {
    /// Values of arguments already filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a completion is for, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CompletionReference {
    /// `"type": "ref/prompt"`.
    Prompt(PromptReference),
    /// `"type": "ref/resource"`.
    ResourceTemplate(ResourceTemplateReference),
}

impl CompletionReference {
    /// A reference to prompt `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionReference::Prompt(PromptReference::new(name))
    }
    /// A reference to the resource template (or, in 2026-07-28, resource) `uri`.
    pub fn resource(uri: impl Into<String>) -> Self {
        CompletionReference::ResourceTemplate(ResourceTemplateReference::new(uri))
    }
}

impl From<PromptReference> for CompletionReference {
    fn from(r: PromptReference) -> Self {
        CompletionReference::Prompt(r)
    }
}

impl From<ResourceTemplateReference> for CompletionReference {
    fn from(r: ResourceTemplateReference) -> Self {
        CompletionReference::ResourceTemplate(r)
    }
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = serde_util::object(d)?;
        match serde_util::str_member(&obj, "type") {
            Some(tags::RefPrompt::VALUE) => serde_util::decode(obj).map(CompletionReference::Prompt),
            Some(tags::RefResource::VALUE) => serde_util::decode(obj).map(CompletionReference::ResourceTemplate),
            other => {
                Err(serde_util::unknown_variant("completion reference", "type", other, &["ref/prompt", "ref/resource"]))
            }
        }
    }
}

/// A prompt, as the target of a completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptReference {
    #[serde(rename = "type", default)]
    kind: tags::RefPrompt,
    /// The prompt's name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PromptReference {
    /// Prompt `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptReference { name: name.into(), ..Default::default() }
    }
}

/// A resource template (or resource), as the target of a completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplateReference {
    #[serde(rename = "type", default)]
    kind: tags::RefResource,
    /// The URI template (or URI).
    pub uri: String,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceTemplateReference {
    /// Template `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceTemplateReference { uri: uri.into(), ..Default::default() }
    }
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The suggestions.
    pub completion: Completion,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CompleteResult {
    /// A result suggesting `values`, capped at [`MAX_COMPLETION_VALUES`] (see [`Completion::new`]).
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        CompleteResult { completion: Completion::new(values), ..Default::default() }
    }
}

/// `CompleteResult.completion`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// At most 100 suggestions, best first.
    pub values: Vec<String>,
    /// How many suggestions exist in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// True when more suggestions exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Completion {
    /// Suggests `values`. Beyond [`MAX_COMPLETION_VALUES`] the rest is dropped, `total` is the
    /// full count and `hasMore` is true; otherwise both are left unset.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let mut c = Completion::default();
        if values.len() > MAX_COMPLETION_VALUES {
            c.total = Some(values.len() as u64);
            c.has_more = Some(true);
            values.truncate(MAX_COMPLETION_VALUES);
        }
        c.values = values;
        c
    }
    /// Sets `total`.
    pub fn with_total(mut self, total: u64) -> Self {
        self.total = Some(total);
        self
    }
    /// Sets `hasMore`.
    pub fn with_has_more(mut self, has_more: bool) -> Self {
        self.has_more = Some(has_more);
        self
    }
}

crate::impl_result_envelope!(CompleteResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_capped_at_one_hundred() {
        let c = Completion::new((0..250).map(|i| i.to_string()));
        assert_eq!(c.values.len(), MAX_COMPLETION_VALUES);
        assert_eq!(c.values[99], "99");
        assert_eq!((c.total, c.has_more), (Some(250), Some(true)));
        let c = Completion::new(["a", "b"]);
        assert_eq!((c.values.len(), c.total, c.has_more), (2, None, None));
    }

    #[test]
    fn references_dispatch_on_type() {
        let p: CompleteRequestParams = serde_json::from_value(json!({
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": "sr"}
        }))
        .expect("params");
        assert_eq!(p.r#ref, CompletionReference::resource("file:///{path}"));
        let v = serde_json::to_value(&p).expect("ser");
        assert_eq!(v["ref"], json!({"type": "ref/resource", "uri": "file:///{path}"}));
        assert!(serde_json::from_value::<CompletionReference>(json!({"type": "ref/tool", "name": "x"})).is_err());
    }
}

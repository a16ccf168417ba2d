//! Multi round-trip requests (2026-07-28): a server that needs input from the client answers
//! with an [`InputRequiredResult`]; the client fulfils the embedded requests and retries with
//! `inputResponses` and the echoed `requestState`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::elicitation::{ElicitRequest, ElicitRequestParams, ElicitResult};
use crate::meta::{Meta, RequestMeta};
use crate::result::ResultType;
use crate::roots::{ListRootsRequest, ListRootsResult};
use crate::sampling::{CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult};
use crate::serde_util::{self, tags};

/// A request the server embeds in an [`InputRequiredResult`], by `method`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicitation(ElicitRequest),
    /// `sampling/createMessage`.
    Sampling(CreateMessageRequest),
    /// `roots/list`.
    ListRoots(ListRootsRequest),
}

impl InputRequest {
    /// An `elicitation/create` input request.
    pub fn elicit(params: impl Into<ElicitRequestParams>) -> Self {
        InputRequest::Elicitation(ElicitRequest::new(params))
    }
    /// A `sampling/createMessage` input request.
    pub fn sampling(params: CreateMessageRequestParams) -> Self {
        InputRequest::Sampling(CreateMessageRequest::new(params))
    }
    /// A `roots/list` input request.
    pub fn list_roots() -> Self {
        InputRequest::ListRoots(ListRootsRequest::new())
    }
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicitation(_) => tags::ElicitationCreate::VALUE,
            InputRequest::Sampling(_) => tags::SamplingCreateMessage::VALUE,
            InputRequest::ListRoots(_) => tags::RootsList::VALUE,
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = serde_util::object(d)?;
        match serde_util::str_member(&obj, "method") {
            Some(tags::ElicitationCreate::VALUE) => serde_util::decode(obj).map(InputRequest::Elicitation),
            Some(tags::SamplingCreateMessage::VALUE) => serde_util::decode(obj).map(InputRequest::Sampling),
            Some(tags::RootsList::VALUE) => serde_util::decode(obj).map(InputRequest::ListRoots),
            other => Err(serde_util::unknown_variant(
                "input request",
                "method",
                other,
                &[tags::ElicitationCreate::VALUE, tags::SamplingCreateMessage::VALUE, tags::RootsList::VALUE],
            )),
        }
    }
}

impl From<ElicitRequest> for InputRequest {
    fn from(r: ElicitRequest) -> Self {
        InputRequest::Elicitation(r)
    }
}

impl From<CreateMessageRequest> for InputRequest {
    fn from(r: CreateMessageRequest) -> Self {
        InputRequest::Sampling(r)
    }
}

impl From<ListRootsRequest> for InputRequest {
    fn from(r: ListRootsRequest) -> Self {
        InputRequest::ListRoots(r)
    }
}

/// `inputRequests`: input requests by a key the server chooses.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`].
///
/// Untagged on the wire; the variant is the first whose required members are present:
/// `role`/`content`/`model` (sampling), then `roots`, then `action` (elicitation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
// The variants are plain results matched by value; boxing one would only make matching clumsier.
#[allow(clippy::large_enum_variant)]
pub enum InputResponse {
    /// Answer to `sampling/createMessage`.
    Sampling(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// Answer to `elicitation/create`.
    Elicitation(ElicitResult),
}

impl From<CreateMessageResult> for InputResponse {
    fn from(r: CreateMessageResult) -> Self {
        InputResponse::Sampling(r)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(r: ListRootsResult) -> Self {
        InputResponse::ListRoots(r)
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(r: ElicitResult) -> Self {
        InputResponse::Elicitation(r)
    }
}

/// `inputResponses`: answers by the key of the request they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// A result saying the server needs input before it can complete the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputRequiredResult {
    /// `resultType`: `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// What the client must fulfil before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes verbatim on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult::new()
    }
}

impl InputRequiredResult {
    /// `{"resultType": "input_required"}`; add requests and/or state (at least one is required).
    pub fn new() -> Self {
        InputRequiredResult {
            result_type: Some(ResultType::InputRequired),
            input_requests: None,
            request_state: None,
            meta: None,
            extra: Map::new(),
        }
    }
    /// Adds an input request under `key`.
    pub fn with_input_request(mut self, key: impl Into<String>, request: impl Into<InputRequest>) -> Self {
        self.input_requests.get_or_insert_with(BTreeMap::new).insert(key.into(), request.into());
        self
    }
    /// Sets the request state.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

/// The members a retried request adds: `inputResponses` and `requestState`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputResponseRequestParams {
    /// Answers to the server's input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The server's `requestState`, echoed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

crate::impl_result_envelope!(InputRequiredResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_responses_pick_the_right_variant() {
        let responses: InputResponses = serde_json::from_value(json!({
            "a": {"action": "decline"},
            "b": {"roots": [{"uri": "file:///r"}]},
            "c": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
            // An elicitation answer whose content happens to hold `roots`/`model` keys.
            "d": {"action": "accept", "content": {"roots": "x", "model": "y"}}
        }))
        .expect("decode");
        assert!(matches!(responses["a"], InputResponse::Elicitation(_)));
        assert!(matches!(responses["b"], InputResponse::ListRoots(_)));
        assert!(matches!(responses["c"], InputResponse::Sampling(_)));
        assert!(matches!(responses["d"], InputResponse::Elicitation(_)));
        assert!(serde_json::from_value::<InputResponse>(json!({"something": "else"})).is_err());
    }

    #[test]
    fn input_requests_follow_method_and_allow_missing_roots_params() {
        let reqs: InputRequests = serde_json::from_value(json!({
            "r": {"method": "roots/list"},
            "e": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}}
        }))
        .expect("decode");
        assert_eq!(reqs["r"], InputRequest::list_roots());
        assert_eq!(reqs["e"].method(), "elicitation/create");
        assert_eq!(serde_json::to_value(&reqs["r"]).expect("ser"), json!({"method": "roots/list"}));
        assert!(serde_json::from_value::<InputRequest>(json!({"method": "tools/call", "params": {}})).is_err());
    }

    #[test]
    fn new_result_is_input_required() {
        let r = InputRequiredResult::new().with_request_state("s").with_input_request("k", InputRequest::list_roots());
        assert_eq!(
            serde_json::to_value(r).expect("ser"),
            json!({"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}, "requestState": "s"})
        );
    }
}

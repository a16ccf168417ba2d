//! `subscriptions/listen` (2026-07-28): a long-lived request on which the server delivers the
//! change notifications the client asked for.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::RequestId;
use crate::meta::{META_SUBSCRIPTION_ID, Meta, RequestMeta};
use crate::result::ResultType;

/// Which notifications a listen request asks for (and the server acknowledges).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SubscriptionFilter {
    /// Nothing.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks for tool list changes.
    pub fn with_tools_list_changed(mut self) -> Self {
        self.tools_list_changed = Some(true);
        self
    }
    /// Asks for prompt list changes.
    pub fn with_prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = Some(true);
        self
    }
    /// Asks for resource list changes.
    pub fn with_resources_list_changed(mut self) -> Self {
        self.resources_list_changed = Some(true);
        self
    }
    /// Asks for updates of the resource at `uri`.
    pub fn with_resource_subscription(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions.get_or_insert_with(Vec::new).push(uri.into());
        self
    }
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsListenRequestParams {
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SubscriptionsListenRequestParams {
    /// Listen for `notifications`.
    pub fn new(notifications: SubscriptionFilter) -> Self {
        SubscriptionsListenRequestParams { notifications, ..Default::default() }
    }
    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: RequestMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Params of `notifications/subscriptions/acknowledged`: the subset the server will honour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// What will be delivered.
    pub notifications: SubscriptionFilter,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// Acknowledges `notifications` for the subscription `subscription_id`.
    pub fn new(subscription_id: RequestId, notifications: SubscriptionFilter) -> Self {
        SubscriptionsAcknowledgedNotificationParams {
            notifications,
            meta: Some(subscription_meta(subscription_id)),
            extra: Map::new(),
        }
    }
}

/// The result that closes a listen stream gracefully.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionsListenResult {
    /// `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SubscriptionsListenResult {
    /// Closes the subscription `subscription_id` (the listen request's id).
    pub fn new(subscription_id: RequestId) -> Self {
        SubscriptionsListenResult { meta: Some(subscription_meta(subscription_id)), ..Default::default() }
    }
    /// The subscription id in `_meta`, if present and well-formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id_of(self.meta.as_ref())
    }
}

/// A `_meta` carrying `io.modelcontextprotocol/subscriptionId`.
pub fn subscription_meta(subscription_id: RequestId) -> Meta {
    let mut meta = Meta::new();
    let id = match subscription_id {
        RequestId::Number(n) => Value::from(n),
        RequestId::String(s) => Value::from(&*s),
    };
    meta.insert(META_SUBSCRIPTION_ID.to_owned(), id);
    meta
}

/// The `io.modelcontextprotocol/subscriptionId` of a `_meta`, if present and well-formed.
pub fn subscription_id_of(meta: Option<&Meta>) -> Option<RequestId> {
    match meta?.get(META_SUBSCRIPTION_ID)? {
        Value::String(s) => Some(RequestId::from(s.as_str())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

crate::impl_result_envelope!(SubscriptionsListenResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listen_result_carries_the_subscription_id() {
        let r = SubscriptionsListenResult::new(RequestId::from("listen-1"));
        assert_eq!(
            serde_json::to_value(&r).expect("ser"),
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}})
        );
        assert_eq!(r.subscription_id(), Some(RequestId::from("listen-1")));
        assert_eq!(subscription_id_of(Some(&subscription_meta(RequestId::Number(7)))), Some(RequestId::Number(7)));
    }
}

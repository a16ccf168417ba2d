//! Params of the notifications shared by several features: cancellation, progress and the
//! `_meta`-only ones (`initialized`, `*/list_changed`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::{ProgressToken, RequestId};
use crate::meta::Meta;
use crate::serde_util;
use crate::subscriptions::subscription_meta;

/// Params of `notifications/cancelled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelledNotificationParams {
    /// The request to cancel (optional only in 2025-11-25, for tasks; required otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`.
    pub fn new(request_id: Option<RequestId>) -> Self {
        CancelledNotificationParams { request_id, ..Default::default() }
    }
    /// Sets the reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// Params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    #[serde(serialize_with = "serde_util::f64_compact")]
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub total: Option<f64>,
    /// What is happening (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProgressNotificationParams {
    /// `progress` for the request holding `progress_token`.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: f64) -> Self {
        ProgressNotificationParams {
            progress_token: progress_token.into(),
            progress,
            total: None,
            message: None,
            meta: None,
            extra: Map::new(),
        }
    }
    /// Sets the total.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }
    /// Sets the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Params of a notification that carries only `_meta` (`notifications/initialized`,
/// `notifications/*/list_changed`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NotificationParams {
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId` on a 2026-07-28 listen stream).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NotificationParams {
    /// Empty params.
    pub fn new() -> Self {
        Self::default()
    }
    /// Params for a notification delivered on the listen stream `subscription_id`.
    pub fn for_subscription(subscription_id: RequestId) -> Self {
        NotificationParams { meta: Some(subscription_meta(subscription_id)), extra: Map::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_numbers_keep_their_form() {
        let p: ProgressNotificationParams =
            serde_json::from_value(json!({"progressToken": 3, "progress": 50, "total": 100})).expect("de");
        assert_eq!(serde_json::to_string(&p).expect("ser"), r#"{"progressToken":3,"progress":50,"total":100}"#);
        let p = ProgressNotificationParams::new("t", 0.5);
        assert_eq!(serde_json::to_string(&p).expect("ser"), r#"{"progressToken":"t","progress":0.5}"#);
    }
}

//! (temporary; replaced by the schema work)
#![allow(missing_docs)]
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use crate::jsonrpc::{ProgressToken, RequestId};
use crate::meta::Meta;
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelledNotificationParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
impl CancelledNotificationParams {
    pub fn new(request_id: Option<RequestId>) -> Self { Self { request_id, reason: None, meta: None, extra: Map::new() } }
    pub fn with_reason(mut self, r: impl Into<String>) -> Self { self.reason = Some(r.into()); self }
}
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProgressNotificationParams {
    pub progress_token: ProgressToken,
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
impl ProgressNotificationParams {
    pub fn new(progress_token: ProgressToken, progress: f64) -> Self { Self { progress_token, progress, total: None, message: None, meta: None, extra: Map::new() } }
}

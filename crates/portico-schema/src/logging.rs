//! Log levels and log messages.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Meta, RequestMeta};

/// Syslog severity (RFC 5424), least severe first, so `level >= LoggingLevel::Warning` works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug.
    Debug,
    /// Info.
    Info,
    /// Notice.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical.
    Critical,
    /// Alert.
    Alert,
    /// Emergency.
    Emergency,
}

/// Params of `logging/setLevel` (handshake era).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SetLevelRequestParams {
    /// The minimum level the client wants.
    pub level: LoggingLevel,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SetLevelRequestParams {
    /// Params for `level`.
    pub fn new(level: LoggingLevel) -> Self {
        SetLevelRequestParams { level, meta: None, extra: Map::new() }
    }
}

/// Params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Which logger emitted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON value.
    pub data: Value,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LoggingMessageNotificationParams {
    /// A message at `level` carrying `data`.
    pub fn new(level: LoggingLevel, data: impl Into<Value>) -> Self {
        LoggingMessageNotificationParams { level, logger: None, data: data.into(), meta: None, extra: Map::new() }
    }
    /// Names the logger.
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

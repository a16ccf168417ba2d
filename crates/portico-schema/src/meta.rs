//! `_meta` objects: free-form metadata, plus the typed per-request `_meta` of 2026-07-28.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::ProgressToken;
use crate::lifecycle::Implementation;
use crate::logging::LoggingLevel;

/// A free-form `_meta` object.
pub type Meta = Map<String, Value>;

/// `io.modelcontextprotocol/protocolVersion`.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `io.modelcontextprotocol/clientCapabilities`.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `io.modelcontextprotocol/clientInfo`.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `io.modelcontextprotocol/logLevel`.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `io.modelcontextprotocol/serverInfo` (on results).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `io.modelcontextprotocol/subscriptionId` (on listen-stream notifications).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `_meta` of a request's params.
///
/// In 2026-07-28 every request carries the protocol version and client capabilities here; in
/// the handshake era only `progressToken` is defined. Other keys are kept in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The token progress notifications for this request refer to.
    #[serde(rename = "progressToken", default, skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// The revision this request speaks (2026-07-28, required).
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The client's capabilities for this request (2026-07-28, required).
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default, skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<ClientCapabilities>,
    /// Who the client says it is (2026-07-28, should).
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// The minimum log level the client wants for this request (2026-07-28, opt-in).
    #[serde(rename = "io.modelcontextprotocol/logLevel", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// Any other key, kept verbatim.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl RequestMeta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the progress token.
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }

    /// Sets the protocol version (2026-07-28).
    pub fn with_protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Sets the client capabilities (2026-07-28).
    pub fn with_client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.client_capabilities = Some(capabilities);
        self
    }

    /// Sets the client info (2026-07-28).
    pub fn with_client_info(mut self, client_info: Implementation) -> Self {
        self.client_info = Some(client_info);
        self
    }

    /// Sets the per-request log level (2026-07-28).
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.progress_token.is_none()
            && self.protocol_version.is_none()
            && self.client_capabilities.is_none()
            && self.client_info.is_none()
            && self.log_level.is_none()
            && self.other.is_empty()
    }
}

/// Decoded by hand rather than with `#[serde(flatten)]`: flattening buffers every member in a
/// generic tree first, and this object is on every 2026-07-28 request.
impl<'de> Deserialize<'de> for RequestMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RequestMeta;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a _meta object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta, A::Error> {
                let mut m = RequestMeta::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "progressToken" => m.progress_token = map.next_value()?,
                        META_PROTOCOL_VERSION => m.protocol_version = map.next_value()?,
                        META_CLIENT_CAPABILITIES => m.client_capabilities = map.next_value()?,
                        META_CLIENT_INFO => m.client_info = map.next_value()?,
                        META_LOG_LEVEL => m.log_level = map.next_value()?,
                        _ => {
                            let v: Value = map.next_value()?;
                            m.other.insert(key.into_owned(), v);
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_meta_keeps_unknown_keys_and_types_known_ones() {
        let json = serde_json::json!({
            "progressToken": 7,
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/logLevel": "warning",
            "com.example/trace": {"a": [1, 2]}
        });
        let m: RequestMeta = serde_json::from_value(json.clone()).expect("meta");
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert!(m.client_capabilities.as_ref().is_some_and(|c| c.supports_sampling()));
        assert_eq!(m.log_level, Some(LoggingLevel::Warning));
        assert_eq!(m.other["com.example/trace"], serde_json::json!({"a": [1, 2]}));
        assert_eq!(serde_json::to_value(&m).expect("ser"), json);
        assert!(serde_json::from_value::<RequestMeta>(serde_json::json!({"progressToken": null})).is_ok());
        assert!(serde_json::from_value::<RequestMeta>(serde_json::json!([])).is_err());
    }
}

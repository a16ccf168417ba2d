//! Typed `data` of the errors that define one, and constructors for MCP's own error codes.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ClientCapabilities;
use crate::elicitation::ElicitRequestURLParams;
use crate::jsonrpc::{ErrorCode, ErrorObject};
use crate::version::ProtocolVersion;

/// `data` of `UnsupportedProtocolVersionError` (-32022, 2026-07-28), and of the handshake-era
/// `initialize` version error (-32602).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UnsupportedProtocolVersionData {
    /// The revisions the server speaks.
    pub supported: Vec<String>,
    /// The revision the client asked for.
    pub requested: String,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UnsupportedProtocolVersionData {
    /// `requested` is not among `supported`.
    pub fn new<I>(requested: impl Into<String>, supported: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        UnsupportedProtocolVersionData {
            supported: supported.into_iter().map(Into::into).collect(),
            requested: requested.into(),
            extra: Map::new(),
        }
    }
}

/// `data` of `MissingRequiredClientCapabilityError` (-32021, 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs and the client did not declare.
    pub required_capabilities: ClientCapabilities,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MissingRequiredClientCapabilityData {
    /// The client lacks `required_capabilities`.
    pub fn new(required_capabilities: ClientCapabilities) -> Self {
        MissingRequiredClientCapabilityData { required_capabilities, extra: Map::new() }
    }
}

/// `data` of `URLElicitationRequiredError` (-32042, 2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct URLElicitationRequiredData {
    /// The URL-mode elicitations the user must complete first.
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl URLElicitationRequiredData {
    /// The user must complete `elicitations`.
    pub fn new(elicitations: Vec<ElicitRequestURLParams>) -> Self {
        URLElicitationRequiredData { elicitations, extra: Map::new() }
    }
}

/// `data` of a resource-not-found error (-32002 before 2026-07-28, -32602 since).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceNotFoundData {
    /// The URI that was not found.
    pub uri: String,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceNotFoundData {
    /// `uri` was not found.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceNotFoundData { uri: uri.into(), extra: Map::new() }
    }
}

/// Serializes typed `data`. These types hold only strings, maps and arrays, so this cannot fail;
/// `Null` stands in if it ever did.
fn to_data<T: Serialize>(data: &T) -> Value {
    serde_json::to_value(data).unwrap_or(Value::Null)
}

impl ErrorObject {
    /// -32022: `requested` is not a revision the server speaks (2026-07-28).
    pub fn unsupported_protocol_version<I>(requested: impl Into<String>, supported: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let data = UnsupportedProtocolVersionData::new(requested, supported);
        Self::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version").with_data(to_data(&data))
    }

    /// -32021: the request needs client capabilities the client did not declare (2026-07-28).
    pub fn missing_client_capability(required_capabilities: ClientCapabilities) -> Self {
        let data = MissingRequiredClientCapabilityData::new(required_capabilities);
        Self::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability")
            .with_data(to_data(&data))
    }

    /// -32020: an HTTP header does not match the body (2026-07-28). The schema defines no `data`.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// Resource `uri` not found, in the code `version` uses: -32002 up to 2025-11-25, -32602 in
    /// 2026-07-28. `data` is `{"uri": …}` in both.
    pub fn resource_not_found(uri: impl Into<String>, version: ProtocolVersion) -> Self {
        let code = if version.resource_not_found_is_invalid_params() {
            ErrorCode::INVALID_PARAMS
        } else {
            ErrorCode::RESOURCE_NOT_FOUND
        };
        Self::new(code, "Resource not found").with_data(to_data(&ResourceNotFoundData::new(uri)))
    }

    /// -32042: the user must complete URL-mode elicitations first (2025-11-25 only).
    pub fn url_elicitation_required(elicitations: Vec<ElicitRequestURLParams>) -> Self {
        let data = URLElicitationRequiredData::new(elicitations);
        Self::new(ErrorCode::URL_ELICITATION_REQUIRED, "URL elicitation required").with_data(to_data(&data))
    }

    /// Decodes `data` as `T`; `None` when there is no `data`.
    pub fn data_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.data.as_ref().map(|d| T::deserialize(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::ALL_VERSIONS;
    use serde_json::json;

    #[test]
    fn unsupported_version_lists_what_is_supported() {
        let e = ErrorObject::unsupported_protocol_version("1900-01-01", ALL_VERSIONS);
        assert_eq!(e.code, ErrorCode(-32022));
        let data: UnsupportedProtocolVersionData = e.data_as().expect("data").expect("typed");
        assert_eq!(data.requested, "1900-01-01");
        assert_eq!(data.supported.len(), ALL_VERSIONS.len());
        assert_eq!(data.supported[0], "2024-11-05");
    }

    #[test]
    fn resource_not_found_code_depends_on_version() {
        let old = ErrorObject::resource_not_found("file:///x", ProtocolVersion::V2025_11_25);
        assert_eq!(old.code, ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(old.data, Some(json!({"uri": "file:///x"})));
        let new = ErrorObject::resource_not_found("file:///x", ProtocolVersion::V2026_07_28);
        assert_eq!(new.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(new.data, Some(json!({"uri": "file:///x"})));
    }

    #[test]
    fn missing_capability_names_it() {
        let e = ErrorObject::missing_client_capability(ClientCapabilities::new().with_elicitation(true, false));
        assert_eq!(e.code.0, -32021);
        assert_eq!(e.data, Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
        assert!(ErrorObject::header_mismatch("x").data_as::<Value>().is_none());
    }
}

//! Identification and the handshake-era `initialize` exchange.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::meta::{Meta, RequestMeta};

/// Name and version of an MCP implementation (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version string.
    pub version: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation { name: name.into(), version: version.into(), ..Default::default() }
    }
    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// An icon for an implementation, tool, resource, template or prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// `https:` or `data:` URI of the image.
    pub src: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Icon { src: src.into(), ..Default::default() }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the sizes, e.g. `["48x48"]` or `["any"]`.
    pub fn with_sizes(mut self, sizes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.sizes = Some(sizes.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the theme (`"light"` or `"dark"`).
    pub fn with_theme(mut self, theme: impl Into<String>) -> Self {
        self.theme = Some(theme.into());
        self
    }

    /// True when `src` uses a scheme consumers may load: `https:` or `data:` only.
    ///
    /// The spec requires consumers to refuse every other scheme (`javascript:`, `file:`,
    /// `http:`, `ftp:`, `ws:`, …).
    pub fn has_safe_uri(&self) -> bool {
        let scheme = self.src.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("https") => self.src.len() > "https://".len() && self.src[6..].starts_with("//"),
            Some("data") => true,
            _ => false,
        }
    }
}

/// Params of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeRequestParams {
    /// The revision the client wants.
    pub protocol_version: String,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InitializeRequestParams {
    /// Params asking for `protocol_version`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        InitializeRequestParams {
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
            ..Default::default()
        }
    }
}

/// Result of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InitializeResult {
    /// A result choosing `protocol_version`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult { protocol_version: protocol_version.into(), capabilities, server_info, ..Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icon_schemes_are_restricted() {
        assert!(Icon::new("https://example.com/a.png").has_safe_uri());
        assert!(Icon::new("data:image/png;base64,AAAA").has_safe_uri());
        assert!(Icon::new("HTTPS://example.com/a.png").has_safe_uri());
        for bad in
            ["javascript:alert(1)", "file:///etc/passwd", "http://x/a.png", "ftp://x", "ws://x", "a.png", "https:"]
        {
            assert!(!Icon::new(bad).has_safe_uri(), "{bad}");
        }
    }
}

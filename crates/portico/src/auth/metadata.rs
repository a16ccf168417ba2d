//! Metadata documents (RFC 9728, RFC 8414, OpenID Connect Discovery), the `WWW-Authenticate`
//! challenge (RFC 6750), and the well-known URLs to look them up at. Pure functions, no I/O.

use reqwest::Url;
use serde::{Deserialize, Serialize};

/// Protected Resource Metadata (RFC 9728): what the MCP server says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource identifier, sent as the RFC 8707 `resource` parameter exactly as written.
    pub resource: String,
    /// Issuers of the authorization servers that protect it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Ways to present a bearer token (`header`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
}

/// Authorization Server Metadata (RFC 8414, or an OpenID Connect configuration).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// The authorization endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The Dynamic Client Registration endpoint (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Response types (`code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// Grant types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods of the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Signing algorithms for `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// PKCE methods (`S256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents are accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// The authorization response carries `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Algorithms of DPoP proofs the server accepts (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// Metadata with the 2025-03-26 default endpoints (`/authorize`, `/token`, `/register`)
    /// at `base`, for servers that publish none. PKCE `S256` is assumed: 2025-03-26 makes
    /// PKCE mandatory for every client and server.
    pub fn fallback(base: &Url) -> Self {
        let at = |p: &str| base.join(p).map(String::from).unwrap_or_default();
        AuthorizationServerMetadata {
            issuer: issuer_of_origin(base),
            authorization_endpoint: Some(at("/authorize")),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..Default::default()
        }
    }

    /// True when `method` is an advertised token endpoint auth method; when none are
    /// advertised, RFC 8414's default `client_secret_basic` is.
    pub(crate) fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(m) => m.iter().any(|x| x == method),
            None => method == "client_secret_basic",
        }
    }

    /// True when the server binds tokens to `ES256` DPoP proofs (the only kind this client
    /// makes).
    pub(crate) fn supports_dpop(&self) -> bool {
        self.dpop_signing_alg_values_supported.iter().flatten().any(|a| a == "ES256")
    }

    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported.iter().flatten().any(|s| s == scope)
    }
}

/// A `WWW-Authenticate: Bearer …` (or `DPoP …`, RFC 9449 §7.1) challenge (RFC 6750 §3,
/// RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
    /// `scope`: the scopes needed, space separated.
    pub scope: Option<String>,
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
}

impl BearerChallenge {
    /// Parses the `Bearer` challenge of a `WWW-Authenticate` value, else its `DPoP` one;
    /// `None` when there is neither.
    pub fn parse(header: &str) -> Option<Self> {
        let (start, scheme) = find_scheme(header, "bearer")
            .map(|i| (i, "bearer"))
            .or_else(|| find_scheme(header, "dpop").map(|i| (i, "dpop")))?;
        let mut rest = header[start + scheme.len()..].trim_start();
        let mut c = BearerChallenge::default();
        while !rest.is_empty() {
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim().to_ascii_lowercase();
            if name.contains(' ') {
                break; // the next challenge's scheme
            }
            rest = rest[eq + 1..].trim_start();
            let value;
            if let Some(quoted) = rest.strip_prefix('"') {
                let mut out = String::new();
                let mut end = quoted.len();
                let mut chars = quoted.char_indices();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        _ => out.push(ch),
                    }
                }
                value = out;
                rest = &quoted[end.min(quoted.len())..];
            } else {
                let end = rest.find(',').unwrap_or(rest.len());
                value = rest[..end].trim().to_owned();
                rest = &rest[end..];
            }
            rest = rest.trim_start().strip_prefix(',').unwrap_or(rest).trim_start();
            match name.as_str() {
                "error" => c.error = Some(value),
                "error_description" => c.error_description = Some(value),
                "scope" => c.scope = Some(value),
                "resource_metadata" => c.resource_metadata = Some(value),
                _ => {}
            }
        }
        Some(c)
    }

    /// True for `error="insufficient_scope"`.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Where the scheme `scheme` (lower case) starts in a `WWW-Authenticate` value.
pub(crate) fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',');
        let after = lower.as_bytes().get(at + scheme.len());
        if before_ok && after.is_none_or(|b| *b == b' ') {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

/// The canonical URI of an MCP server (RFC 8707 / MCP): scheme and host lower case (the URL
/// parser does that), no fragment, no trailing slashes after a path (all of them, as
/// [`resource_matches`] compares paths, so that the result is canonical itself).
pub fn canonical_resource(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    let s = String::from(u);
    match s.trim_end_matches('/') {
        t if t.len() < s.len() && server.query().is_none() => t.to_owned(),
        _ => s,
    }
}

/// True when the metadata's `resource` may stand for the MCP server at `server`: same
/// origin, and its path is the server's path or a parent of it (segment-wise).
pub fn resource_matches(advertised: &str, server: &Url) -> bool {
    let Ok(adv) = Url::parse(advertised) else { return false };
    if adv.origin() != server.origin() || adv.fragment().is_some() {
        return false;
    }
    let a = adv.path().trim_end_matches('/');
    let s = server.path().trim_end_matches('/');
    s == a || s.starts_with(&format!("{a}/"))
}

/// The issuer identifier of an origin: `scheme://host[:port]`, no trailing slash.
pub(crate) fn issuer_of_origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// RFC 9728 well-known URLs of the protected resource metadata of `server`, in the order to
/// try them: path-inserted, then root.
pub fn protected_resource_metadata_urls(server: &Url) -> Vec<Url> {
    let root = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let mut out = Vec::with_capacity(2);
    if !path.is_empty() {
        out.extend(Url::parse(&format!("{root}/.well-known/oauth-protected-resource{path}")).ok());
    }
    out.extend(Url::parse(&format!("{root}/.well-known/oauth-protected-resource")).ok());
    out
}

/// The URLs of the metadata of the authorization server `issuer`, in the order MCP requires:
/// with a path, RFC 8414 path-inserted, OIDC path-inserted, OIDC path-appended; without, RFC
/// 8414 then OIDC.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let root = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{root}/.well-known/oauth-authorization-server"),
            format!("{root}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{root}/.well-known/oauth-authorization-server{path}"),
            format!("{root}/.well-known/openid-configuration{path}"),
            format!("{root}{path}/.well-known/openid-configuration"),
        ]
    };
    candidates.iter().filter_map(|c| Url::parse(c).ok()).collect()
}

/// Space-separated scopes, each once, in first-seen order.
pub(crate) fn union_scopes<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in parts {
        for s in part.split_whitespace() {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn parses_bearer_challenges() {
        let c = BearerChallenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/.well-known/x", error_description="no \"way\"""#,
        )
        .expect("challenge");
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.resource_metadata.as_deref(), Some("http://h/.well-known/x"));
        assert_eq!(c.error_description.as_deref(), Some("no \"way\""));
        let c = BearerChallenge::parse(r#"Basic realm="x", Bearer realm=mcp, scope=read"#).expect("challenge");
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(BearerChallenge::parse("Basic realm=x"), None);
        let c = BearerChallenge::parse(r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/x""#).expect("dpop");
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(BearerChallenge::parse("Bearer"), Some(BearerChallenge::default()));
    }

    #[test]
    fn well_known_orders() {
        let prm = protected_resource_metadata_urls(&url("http://h:1/mcp"));
        assert_eq!(
            prm.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["http://h:1/.well-known/oauth-protected-resource/mcp", "http://h:1/.well-known/oauth-protected-resource"]
        );
        let asm = authorization_server_metadata_urls(&url("http://a/t1"));
        assert_eq!(
            asm.iter().map(Url::as_str).collect::<Vec<_>>(),
            [
                "http://a/.well-known/oauth-authorization-server/t1",
                "http://a/.well-known/openid-configuration/t1",
                "http://a/t1/.well-known/openid-configuration"
            ]
        );
        let asm = authorization_server_metadata_urls(&url("http://a/"));
        assert_eq!(
            asm.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["http://a/.well-known/oauth-authorization-server", "http://a/.well-known/openid-configuration"]
        );
    }

    #[test]
    fn resources_match_by_origin_and_path_prefix() {
        let server = url("http://LocalHost:8/mcp");
        assert_eq!(canonical_resource(&server), "http://localhost:8/mcp");
        assert_eq!(canonical_resource(&url("http://h/mcp/#x")), "http://h/mcp");
        assert!(resource_matches("http://localhost:8/mcp", &server));
        assert!(resource_matches("http://localhost:8", &server));
        assert!(!resource_matches("http://localhost:8/mcp2", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert!(!resource_matches("http://localhost:9/mcp", &server));
    }

    #[test]
    fn scope_union_keeps_order() {
        assert_eq!(union_scopes(["a b", "b c"]).as_deref(), Some("a b c"));
        assert_eq!(union_scopes([""]), None);
    }
}

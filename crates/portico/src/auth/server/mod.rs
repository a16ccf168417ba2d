//! The resource-server side of MCP authorization: OAuth 2.1 bearer tokens checked in front of
//! the Streamable HTTP endpoint (feature `auth-server`).
//!
//! ```no_run
//! # async fn run(server: portico::server::Server) -> Result<(), Box<dyn std::error::Error>> {
//! use portico::auth::server::{JwtValidator, ResourceServer};
//! use portico::transport::http::server::StreamableHttp;
//!
//! let auth = ResourceServer::builder("https://mcp.example.com/mcp")
//!     .authorization_server("https://auth.example.com")
//!     .scopes_supported(["mcp:read", "mcp:admin"])
//!     .required_scopes(["mcp:read"])
//!     .tool_scopes("delete_everything", ["mcp:admin"])
//!     .validator(JwtValidator::builder("https://auth.example.com").build()?)
//!     .build()?;
//! // The endpoint at /mcp behind the bearer check, and the metadata documents beside it:
//! let app = StreamableHttp::new(server).authorization(auth).router("/mcp");
//! # let _ = app; Ok(()) }
//! ```
//!
//! A handler reads the validated principal from the request's extensions:
//!
//! ```
//! use portico::auth::server::AuthInfo;
//! use portico::server::RequestContext;
//!
//! async fn whoami(cx: RequestContext) -> String {
//!     match cx.extensions().get::<AuthInfo>() {
//!         Some(who) => format!("{} with {:?}", who.subject().unwrap_or("?"), who.scopes()),
//!         None => "anonymous".into(),
//!     }
//! }
//! ```
//!
//! # What happens to a request
//!
//! 1. [`BearerAuth`] (the tower layer, [`ResourceServer::layer`]) reads `Authorization:
//!    Bearer …`. No token: **401** with `WWW-Authenticate: Bearer resource_metadata="…",
//!    scope="…"`. The [`TokenValidator`] checks it — [`JwtValidator`] (signature with the
//!    issuer's JWKS, `iss`, `exp`, `nbf`) or [`IntrospectionValidator`] (RFC 7662) or your own.
//!    Then the resource server checks that the token's audience is this server's resource URI
//!    (RFC 8707: tokens issued for other resources are refused) and that it has the
//!    [required scopes](ResourceServerBuilder::required_scopes). A bad token: **401**
//!    `error="invalid_token"`; missing scopes: **403** `error="insufficient_scope"` with the
//!    scopes needed; the authorization server unreachable: **503**.
//! 2. The layer removes the `Authorization` header and inserts the [`AuthInfo`] into the
//!    request's extensions. The token itself goes no further: nothing behind the layer, the
//!    handlers included, can pass the client's token on (the spec forbids token passthrough).
//! 3. The endpoint parses the JSON-RPC body — once, as it always does — and, before running
//!    the request, applies the per-method and per-tool scopes
//!    ([`method_scopes`](ResourceServerBuilder::method_scopes),
//!    [`tool_scopes`](ResourceServerBuilder::tool_scopes)): the layer left the rules in the
//!    extensions, so the refusal is still a real HTTP **403** with the challenge, without a
//!    second parse of the body in the layer or a JSON-RPC middleware that could only answer a
//!    JSON-RPC error. Finer rules (per argument, per resource) belong in the handler, which
//!    has the [`AuthInfo`].
//!
//! The protected-resource metadata (RFC 9728) is served without a token at
//! `/.well-known/oauth-protected-resource` and at the path-inserted
//! `/.well-known/oauth-protected-resource/<path of the resource URI>`
//! ([`ResourceServer::metadata_router`]; mounted by
//! [`StreamableHttp::authorization`](crate::transport::http::server::StreamableHttp::authorization)).
//!
//! Mounting it by hand, e.g. in front of your own routes:
//!
//! ```no_run
//! # fn f(auth: portico::auth::server::ResourceServer, endpoint: portico::transport::http::server::HttpEndpoint) {
//! let app = endpoint.router("/mcp").layer(auth.layer()).merge(auth.metadata_router());
//! # let _ = app; }
//! ```
//!
//! Sessions (handshake era, and legacy HTTP+SSE) belong to the principal (issuer, subject,
//! client) whose token opened them: requests of anyone else naming the session are answered as
//! for an unknown session (404), so a leaked session id is worth nothing without the owner's
//! token.
//!
//! Over the legacy HTTP+SSE transport (2024-11-05) every request is checked the same way and
//! the per-method scopes apply to POSTed messages, but handlers of such sessions do not see
//! the [`AuthInfo`] (its messages reach the server outside any HTTP request). Its sessions
//! are bound to their principal too.

mod error;
mod fetch;
mod info;
mod introspection;
mod jwks;
mod jwt;
mod layer;
mod metadata;
mod scopes;
mod validator;

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;

pub use error::{ConfigError, RejectionKind, TokenRejection};
pub use info::{AuthInfo, Claims};
pub use introspection::{IntrospectionValidator, IntrospectionValidatorBuilder};
pub use jwt::{JwtValidator, JwtValidatorBuilder};
pub use layer::{BearerAuth, BearerAuthLayer};
pub use validator::{TokenValidator, ValidateFuture};

pub(crate) use layer::scope_refusal;

use scopes::ScopePolicy;

/// This MCP server as an OAuth 2.1 resource server: its resource URI, its authorization
/// servers, its scopes and how tokens are validated. Cheap to clone.
///
/// Build it with [`ResourceServer::builder`]; use it with
/// [`StreamableHttp::authorization`](crate::transport::http::server::StreamableHttp::authorization),
/// or as a tower layer ([`layer`](Self::layer)) plus [`metadata_router`](Self::metadata_router).
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

struct Inner {
    resource: String,
    /// The canonical forms of the audiences accepted: the resource URI and any extra ones.
    audiences: Vec<String>,
    metadata_url: String,
    metadata_paths: Vec<String>,
    metadata: Bytes,
    scopes_supported: Vec<String>,
    required: Vec<String>,
    policy: ScopePolicy,
    validator: Arc<dyn TokenValidator>,
    implies: Vec<(String, Vec<String>)>,
}

/// Configures a [`ResourceServer`].
#[must_use]
pub struct ResourceServerBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required: Vec<String>,
    policy: ScopePolicy,
    audiences: Vec<String>,
    resource_name: Option<String>,
    validator: Option<Arc<dyn TokenValidator>>,
    implies: Vec<(String, Vec<String>)>,
}

impl ResourceServer {
    /// A resource server whose canonical URI is `resource`: the URL clients use for the MCP
    /// endpoint (e.g. `https://mcp.example.com/mcp`), which tokens must name as audience.
    pub fn builder(resource: impl Into<String>) -> ResourceServerBuilder {
        ResourceServerBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required: Vec::new(),
            policy: ScopePolicy::default(),
            audiences: Vec::new(),
            resource_name: None,
            validator: None,
            implies: Vec::new(),
        }
    }

    /// The resource URI, as configured.
    pub fn resource(&self) -> &str {
        &self.inner.resource
    }

    /// The URL of the metadata document the challenges name (`resource_metadata`).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The protected-resource metadata document (RFC 9728) as JSON.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::from_slice(&self.inner.metadata).unwrap_or_default()
    }

    /// The bearer-token layer to put in front of the MCP endpoint.
    pub fn layer(&self) -> BearerAuthLayer {
        BearerAuthLayer::new(self.clone())
    }

    /// An axum router serving the metadata document, without authentication, at
    /// `/.well-known/oauth-protected-resource` and at the path-inserted location.
    pub fn metadata_router(&self) -> axum::Router {
        metadata::router(&self.inner.metadata_paths, self.inner.metadata.clone())
    }

    /// Checks the request's bearer token: validator, audience, required scopes. What the
    /// layer does; useful on its own for other frameworks.
    ///
    /// # Errors
    /// Why the request is refused; [`refusal`](Self::refusal) turns it into the HTTP answer.
    ///
    /// # Cancel safety
    /// Cancel safe if the validator is.
    pub async fn authorize(&self, headers: &HeaderMap) -> Result<AuthInfo, TokenRejection> {
        let token = layer::bearer_token(headers)?;
        let info = self.inner.validator.validate(token).await?;
        let info = self.with_implied_scopes(info);
        if !info.audience().iter().any(|a| self.inner.audiences.contains(&canonical(a))) {
            return Err(TokenRejection::invalid_token(format!(
                "the token is for another resource (aud {:?}), not {}",
                info.audience(),
                self.inner.resource
            )));
        }
        let missing = info.missing_scopes(self.inner.required.iter().map(String::as_str));
        if !missing.is_empty() {
            return Err(TokenRejection::insufficient_scope(self.scopes_to_ask(&info, &missing)));
        }
        Ok(info)
    }

    /// The HTTP answer refusing a request: 401, 403, 400 or 503 with `WWW-Authenticate`.
    pub fn refusal(&self, error: &TokenRejection) -> http::Response<axum::body::Body> {
        layer::refusal(self, error)
    }

    /// Adds the scopes the granted ones imply ([`scope_implies`](ResourceServerBuilder::scope_implies)).
    fn with_implied_scopes(&self, info: AuthInfo) -> AuthInfo {
        if self.inner.implies.is_empty() {
            return info;
        }
        let mut scopes = info.scopes().clone();
        // Each pass adds what the scopes so far imply; a chain is at most `implies.len()` long.
        for _ in 0..self.inner.implies.len() {
            let before = scopes.len();
            for (scope, implied) in &self.inner.implies {
                if scopes.contains(scope) {
                    scopes.extend(implied.iter().cloned());
                }
            }
            if scopes.len() == before {
                break;
            }
        }
        info.with_scopes(scopes)
    }

    /// The scopes a 403 asks for: what the request needs, plus what the token already has
    /// (so a client re-authorizing does not lose them), limited to this server's scopes.
    fn scopes_to_ask(&self, info: &AuthInfo, missing: &[&str]) -> Vec<String> {
        let i = &self.inner;
        let ours = |s: &str| {
            i.scopes_supported.iter().any(|x| x == s) || i.required.iter().any(|x| x == s) || i.policy.mentions(s)
        };
        let mut all: BTreeSet<String> = info.scopes().iter().filter(|s| ours(s)).cloned().collect();
        all.extend(i.required.iter().cloned());
        all.extend(missing.iter().map(|s| s.to_string()));
        all.into_iter().collect()
    }

    /// The scopes a 401 challenge names: the required ones, else those supported.
    fn challenge_scopes(&self) -> &[String] {
        if self.inner.required.is_empty() { &self.inner.scopes_supported } else { &self.inner.required }
    }
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.inner.resource)
            .field("metadata_url", &self.inner.metadata_url)
            .finish_non_exhaustive()
    }
}

impl ResourceServerBuilder {
    /// Adds an authorization server (its issuer URL) to the metadata's
    /// `authorization_servers`; at least one is required.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes this server understands (`scopes_supported` in the metadata; the 401
    /// challenge names them when no scope is required).
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every request needs (403 `insufficient_scope` otherwise).
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes a JSON-RPC method needs, e.g. `("tools/call", ["mcp:tools"])`, on top of the
    /// required ones.
    pub fn method_scopes(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.policy.add_method(method.into(), scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Scopes calling one tool needs (`tools/call` with that `name`), on top of the required
    /// and the `tools/call` ones.
    pub fn tool_scopes(mut self, tool: impl Into<String>, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.policy.add_tool(tool.into(), scopes.into_iter().map(Into::into).collect());
        self
    }

    /// A scope hierarchy: a token granted `scope` also has `implied` (e.g. `mcp:admin`
    /// implies `mcp:read`). Chains are followed. The [`AuthInfo`] handlers see lists the
    /// implied scopes too.
    pub fn scope_implies(
        mut self,
        scope: impl Into<String>,
        implied: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.implies.push((scope.into(), implied.into_iter().map(Into::into).collect()));
        self
    }

    /// Also accepts tokens whose audience is `audience` (e.g. the server's URI as a gateway
    /// in front of it publishes it). The resource URI is always accepted.
    pub fn accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// A human-readable name for the metadata's `resource_name`.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// How tokens are validated (required).
    pub fn validator(mut self, validator: impl TokenValidator) -> Self {
        self.validator = Some(Arc::new(validator));
        self
    }

    /// Builds the resource server.
    ///
    /// # Errors
    /// When the resource URI is not an absolute `https` URL without fragment (plain `http` is
    /// accepted on loopback only), no authorization server or no validator is set.
    pub fn build(self) -> Result<ResourceServer, ConfigError> {
        let url = fetch::check_url("resource", &self.resource)?;
        if url.fragment().is_some() {
            return Err(ConfigError(format!("resource {:?} must not have a fragment", self.resource)));
        }
        if self.authorization_servers.is_empty() {
            return Err(ConfigError("at least one authorization server is required".into()));
        }
        for a in &self.authorization_servers {
            fetch::check_url("authorization server", a)?;
        }
        let validator = self.validator.ok_or_else(|| ConfigError("no token validator".into()))?;
        let (metadata_paths, metadata_url) = metadata::locations(&url);
        let doc = metadata::document(
            &self.resource,
            &self.authorization_servers,
            &self.scopes_supported,
            self.resource_name.as_deref(),
        );
        let metadata = Bytes::from(serde_json::to_vec(&doc).map_err(|e| ConfigError(e.to_string()))?);
        let mut audiences = vec![canonical(&self.resource)];
        audiences.extend(self.audiences.iter().map(|a| canonical(a)));
        Ok(ResourceServer {
            inner: Arc::new(Inner {
                resource: self.resource,
                audiences,
                metadata_url,
                metadata_paths,
                metadata,
                scopes_supported: self.scopes_supported,
                required: self.required,
                policy: self.policy,
                validator,
                implies: self.implies,
            }),
        })
    }
}

/// A resource URI in the form compared: lower-case scheme and host, no default port, no
/// fragment, no trailing slash. Anything that is not a URL is compared as is.
fn canonical(uri: &str) -> String {
    match reqwest::Url::parse(uri) {
        Ok(mut u) => {
            u.set_fragment(None);
            let s = u.to_string();
            s.strip_suffix('/').map(str::to_owned).unwrap_or(s)
        }
        Err(_) => uri.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_compare_canonically() {
        assert_eq!(canonical("HTTPS://MCP.Example.com:443/mcp/"), "https://mcp.example.com/mcp");
        assert_eq!(canonical("https://mcp.example.com"), "https://mcp.example.com");
        assert_ne!(canonical("https://mcp.example.com/mcp"), canonical("https://mcp.example.com/MCP"));
        assert_eq!(canonical("urn:x"), "urn:x");
    }
}

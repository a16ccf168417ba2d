//! `[auth]`: OAuth 2.1 in front of the gateway, through the SDK's resource server.
//!
//! The gateway's Streamable HTTP endpoint takes access tokens from the configured issuer,
//! checked by the issuer's published keys (signature, expiry, audience, scopes); the token's
//! subject is the call's principal for policy, approvals and the log. The admin listener takes
//! such a token too, when it carries the admin scopes, in place of the admin token. Tokens are
//! never passed on to upstreams: each upstream has its own credentials (`[servers.NAME.oauth]`).

use portico::auth::server::{AuthInfo, JwtValidator, ResourceServer};

use crate::config::AuthConfig;

/// The resource server for the gateway's endpoint at `endpoint` (its URL as clients address
/// it, unless `[auth] resource` says otherwise).
///
/// # Errors
/// The issuer or resource is not usable.
pub fn resource_server(config: &AuthConfig, endpoint: &str) -> Result<ResourceServer, String> {
    let resource = config.resource.clone().unwrap_or_else(|| endpoint.to_owned());
    let mut builder = ResourceServer::builder(resource)
        .authorization_server(&config.issuer)
        .validator(validator(config)?)
        .resource_name("Portico");
    if !config.scopes.is_empty() {
        builder = builder.scopes_supported(config.scopes.clone()).required_scopes(config.scopes.clone());
    }
    builder.build().map_err(|e| format!("[auth]: {e}"))
}

/// The validator of tokens from `[auth] issuer`.
///
/// # Errors
/// The issuer is not usable.
pub fn validator(config: &AuthConfig) -> Result<JwtValidator, String> {
    JwtValidator::builder(&config.issuer).build().map_err(|e| format!("[auth] issuer: {e}"))
}

/// The resource server of the admin listener at `admin` (its URL): tokens whose audience is
/// that URL (or `[auth] resource`) and that carry every admin scope.
///
/// # Errors
/// The issuer or URL is not usable.
pub fn admin_resource_server(config: &AuthConfig, admin: &str) -> Result<ResourceServer, String> {
    let mut builder = ResourceServer::builder(admin)
        .authorization_server(&config.issuer)
        .validator(validator(config)?)
        .resource_name("Portico admin")
        .scopes_supported(config.admin_scopes.clone())
        .required_scopes(config.admin_scopes.clone());
    if let Some(resource) = &config.resource {
        builder = builder.accept_audience(resource.clone());
    }
    builder.build().map_err(|e| format!("[auth]: {e}"))
}

/// Who a token stands for: its subject, else its client.
pub fn principal_of(info: &AuthInfo) -> String {
    info.subject().or(info.client_id()).unwrap_or("unknown").to_owned()
}

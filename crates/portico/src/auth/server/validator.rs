//! The pluggable token check.

use std::future::Future;
use std::pin::Pin;

use super::error::TokenRejection;
use super::info::AuthInfo;

/// What [`TokenValidator::validate`] returns.
pub type ValidateFuture<'a> = Pin<Box<dyn Future<Output = Result<AuthInfo, TokenRejection>> + Send + 'a>>;

/// Checks a bearer token and says who it belongs to.
///
/// A validator answers for the token's authenticity and lifetime (signature or introspection,
/// issuer, expiry, revocation) and reports what the token grants in an [`AuthInfo`]; the
/// [`ResourceServer`](super::ResourceServer) then checks the audience and the scopes, so a
/// validator must fill [`AuthInfo::with_audience`] and [`AuthInfo::with_scopes`].
///
/// Errors: [`TokenRejection::invalid_token`] for a bad token (401), [`TokenRejection::unavailable`]
/// when it cannot be checked now (503).
///
/// Built in: [`JwtValidator`](super::JwtValidator), [`IntrospectionValidator`](super::IntrospectionValidator).
///
/// ```
/// use portico::auth::server::{TokenRejection, AuthInfo, TokenValidator, ValidateFuture};
///
/// /// Accepts one static token (tests, local tools).
/// struct Static;
///
/// impl TokenValidator for Static {
///     fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
///         Box::pin(async move {
///             if token != "let-me-in" {
///                 return Err(TokenRejection::invalid_token("unknown token"));
///             }
///             Ok(AuthInfo::new()
///                 .with_subject("dev")
///                 .with_scopes(["mcp"])
///                 .with_audience(["http://127.0.0.1:8080/mcp"]))
///         })
///     }
/// }
/// ```
pub trait TokenValidator: Send + Sync + 'static {
    /// Validates `token` (the credentials of `Authorization: Bearer`, as sent).
    ///
    /// # Cancel safety
    /// The future may be dropped at any point (the client went away); it must leave shared
    /// state (caches) consistent.
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a>;
}

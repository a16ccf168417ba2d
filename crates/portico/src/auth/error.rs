//! What can go wrong while authorizing, and whose fault it was.

use thiserror::Error;

/// An error of the OAuth client: discovery, registration, the authorization code flow, or a
/// token request.
///
/// The client side's error; the server side refuses a request's token with
/// `auth::server::TokenRejection` (feature `auth-server`). Both say whose fault it was.
///
/// Every message names the URL or the field at fault. Errors whose name starts with `Peer`
/// or that mention metadata are the servers' fault; [`AuthError::NotConfigured`] and
/// [`AuthError::Config`] are the caller's.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AuthError {
    /// An HTTP exchange with a metadata, registration, authorization or token endpoint failed.
    #[error("HTTP request to {url} failed: {source}")]
    Http {
        /// The URL requested.
        url: String,
        /// What reqwest said.
        #[source]
        source: reqwest::Error,
    },
    /// A URL from discovery leads to an address the [`AddressPolicy`](super::AddressPolicy)
    /// does not allow (a server pointing the client at a cloud metadata service or at the
    /// user's network: server-side request forgery).
    #[error("refused to connect to {host}: a {kind} address, not allowed by the OAuth client's address policy")]
    AddressRefused {
        /// The host in the URL.
        host: String,
        /// What kind of address it is.
        kind: &'static str,
    },
    /// An endpoint answered with a status or body the flow cannot use.
    #[error("{url} answered HTTP {status}: {detail}")]
    PeerStatus {
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` / `error_description`, or what was wrong with the body.
        detail: String,
    },
    /// A metadata document was malformed, missing a required field, or failed validation.
    #[error("invalid metadata at {url}: {reason}")]
    InvalidMetadata {
        /// Where the document came from.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// No protected-resource or authorization-server metadata could be found.
    #[error("no authorization server metadata found for {what}; tried {tried}")]
    DiscoveryFailed {
        /// The resource or issuer looked up.
        what: String,
        /// The URLs tried, in order.
        tried: String,
    },
    /// The protected-resource metadata names a resource other than this MCP server.
    #[error(
        "the protected resource metadata names resource {advertised}, which does not match the MCP server {server}"
    )]
    ResourceMismatch {
        /// The `resource` of the metadata.
        advertised: String,
        /// The canonical URI of the MCP server.
        server: String,
    },
    /// The authorization server does not advertise PKCE with `S256`.
    #[error(
        "the authorization server {issuer} does not advertise PKCE S256 (code_challenge_methods_supported); refusing to authorize without it"
    )]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// The authorization response failed validation (state, `iss`, missing code).
    #[error("authorization response rejected: {0}")]
    InvalidAuthorizationResponse(String),
    /// The authorization server answered the authorization request with an error.
    #[error("authorization denied: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    AuthorizationDenied {
        /// The OAuth `error` code.
        error: String,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// No way to obtain client credentials for this authorization server.
    #[error(
        "cannot register a client with {issuer}: it supports neither Client ID Metadata Documents nor Dynamic Client Registration; configure pre-registered credentials with OAuthClientBuilder::client_credentials or a client metadata document URL with OAuthClientBuilder::client_metadata_url"
    )]
    NotConfigured {
        /// The issuer that needs a client.
        issuer: String,
    },
    /// The configuration is unusable (a bad URL, an unreadable key).
    #[error("OAuth client misconfigured: {0}")]
    Config(String),
    /// The server still refuses after the allowed number of authorizations.
    #[error("the server still refuses access after {attempts} authorization attempts{}", scope.as_deref().map(|s| format!(" (required scope: {s})")).unwrap_or_default())]
    RetryLimit {
        /// How many authorizations were made for the request.
        attempts: u32,
        /// The scope the server asked for last.
        scope: Option<String>,
    },
    /// The redirect handler could not obtain the authorization response.
    #[error("redirect handling failed: {0}")]
    Redirect(String),
    /// Reading or writing the token store failed.
    #[error("token store failed: {0}")]
    Store(#[source] std::io::Error),
    /// Signing a JWT (client assertion or DPoP proof) failed.
    #[error("signing a JWT failed: {0}")]
    Signing(String),
}

impl AuthError {
    /// True when the error is the configuration's (not the servers').
    pub fn is_config(&self) -> bool {
        matches!(self, AuthError::NotConfigured { .. } | AuthError::Config(_))
    }

    pub(crate) fn http(url: &str, source: reqwest::Error) -> Self {
        // The resolver's refusal travels inside reqwest's connect error: bring it out.
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&source);
        while let Some(e) = next {
            if let Some(AuthError::AddressRefused { host, kind }) = e.downcast_ref::<AuthError>() {
                return AuthError::AddressRefused { host: host.clone(), kind };
            }
            next = e.source();
        }
        AuthError::Http { url: url.to_owned(), source: source.without_url() }
    }

    pub(crate) fn metadata(url: &str, reason: impl Into<String>) -> Self {
        AuthError::InvalidMetadata { url: url.to_owned(), reason: reason.into() }
    }
}

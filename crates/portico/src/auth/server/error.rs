//! Why a token was refused, and whose fault it was.

use std::fmt;

/// Why the server refused a request's token. Opaque: ask [`kind`](Self::kind).
///
/// The server side's error; the client side's is `auth::AuthError` (feature `auth-client`:
/// the client could not get or keep a token). Both say whose fault it was: here, the client's
/// (a missing, malformed, invalid or under-scoped token) or the authorization server's
/// ([`RejectionKind::Unavailable`]).
///
/// The message is for logs (it never contains the token); the HTTP answer only says
/// `invalid_token`, `insufficient_scope` or that the server could not check.
#[derive(Debug, Clone)]
pub struct TokenRejection {
    kind: RejectionKind,
    message: String,
    scopes: Vec<String>,
}

/// What an [`TokenRejection`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionKind {
    /// No bearer token was presented (401 with a challenge, no `error`).
    Missing,
    /// The request is malformed, e.g. two `Authorization` headers (400 `invalid_request`).
    Malformed,
    /// The token is expired, revoked, malformed, signed by an unknown key or issuer, or for
    /// another audience: the client's fault (401 `invalid_token`).
    InvalidToken,
    /// The token is valid but lacks scopes (403 `insufficient_scope`).
    InsufficientScope,
    /// The token could not be checked: the authorization server or its keys are unreachable
    /// or misbehaving (503; the client may retry).
    Unavailable,
}

impl TokenRejection {
    fn new(kind: RejectionKind, message: impl Into<String>) -> Self {
        TokenRejection { kind, message: message.into(), scopes: Vec::new() }
    }

    /// No token was presented.
    pub fn missing() -> Self {
        TokenRejection::new(RejectionKind::Missing, "no bearer token")
    }

    /// The request was malformed.
    pub fn malformed(message: impl Into<String>) -> Self {
        TokenRejection::new(RejectionKind::Malformed, message)
    }

    /// The token is not valid for this server.
    pub fn invalid_token(message: impl Into<String>) -> Self {
        TokenRejection::new(RejectionKind::InvalidToken, message)
    }

    /// The token lacks `needed` scopes (all the scopes the request needs).
    pub fn insufficient_scope(needed: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let scopes: Vec<String> = needed.into_iter().map(Into::into).collect();
        let message = format!("insufficient scope: needs {}", scopes.join(" "));
        TokenRejection { kind: RejectionKind::InsufficientScope, message, scopes }
    }

    /// The token could not be checked (the authorization server is unreachable, …).
    pub fn unavailable(message: impl Into<String>) -> Self {
        TokenRejection::new(RejectionKind::Unavailable, message)
    }

    /// What this error is about.
    pub fn kind(&self) -> RejectionKind {
        self.kind
    }

    /// The scopes the request needs, for [`RejectionKind::InsufficientScope`].
    pub fn needed_scopes(&self) -> &[String] {
        &self.scopes
    }

    /// True when the client presented a bad token.
    pub fn is_invalid_token(&self) -> bool {
        self.kind == RejectionKind::InvalidToken
    }
}

impl fmt::Display for TokenRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenRejection {}

/// A configuration mistake found when building a resource server or a validator.
#[derive(Debug, Clone)]
pub struct ConfigError(pub(crate) String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid authorization configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

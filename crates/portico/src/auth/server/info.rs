//! The validated principal handed to handlers.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The claims of a token as the validator saw them: the JWT payload, or the introspection
/// response.
pub type Claims = Map<String, Value>;

/// Who a request was authorized for: what a [`TokenValidator`](super::TokenValidator) learned
/// from a valid token. The bearer layer puts it into the request's extensions, where handlers
/// read it with `cx.extensions().get::<AuthInfo>()`.
///
/// It never holds the token itself: a handler cannot pass the client's token on to another
/// service (the spec forbids token passthrough; call upstream services with their own tokens).
///
/// Validators build one with [`AuthInfo::new`] and the `with_*` setters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthInfo {
    subject: Option<String>,
    client_id: Option<String>,
    issuer: Option<String>,
    scopes: BTreeSet<String>,
    audience: Vec<String>,
    expires_at: Option<SystemTime>,
    claims: Claims,
}

impl AuthInfo {
    /// An empty principal (no subject, no scopes, no audience).
    pub fn new() -> Self {
        AuthInfo::default()
    }

    /// Sets the subject (`sub`).
    #[must_use]
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Sets the OAuth client the token was issued to (`client_id`, or `azp`).
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the issuer (`iss`).
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the granted scopes.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the audiences (`aud`): the resources the token was issued for.
    #[must_use]
    pub fn with_audience(mut self, audience: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.audience = audience.into_iter().map(Into::into).collect();
        self
    }

    /// Sets when the token expires.
    #[must_use]
    pub fn with_expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// Sets the raw claims.
    #[must_use]
    pub fn with_claims(mut self, claims: Claims) -> Self {
        self.claims = claims;
        self
    }

    /// The subject (`sub`): the user, or for client-credentials tokens usually the client.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The OAuth client the token was issued to.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The issuer (`iss`).
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &BTreeSet<String> {
        &self.scopes
    }

    /// True when `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The scopes of `needed` that were not granted (empty when all were).
    pub fn missing_scopes<'a>(&self, needed: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        needed.into_iter().filter(|s| !self.scopes.contains(*s)).collect()
    }

    /// The audiences (`aud`) the token was issued for.
    pub fn audience(&self) -> &[String] {
        &self.audience
    }

    /// When the token expires, if it says.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// The raw claims (JWT payload or introspection response).
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    /// One claim decoded as `T`; `None` when absent or of another shape.
    pub fn claim<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.claims.get(name).and_then(|v| T::deserialize(v).ok())
    }

    /// Fills subject, client, issuer, scopes, audience and expiry from standard claims (`sub`,
    /// `client_id` or `azp`, `iss`, `scope` or `scp`, `aud`, `exp`), and keeps the claims.
    pub fn from_claims(claims: Claims) -> Self {
        let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
        let scopes: BTreeSet<String> = match claims.get("scope").or_else(|| claims.get("scp")) {
            Some(Value::String(s)) => s.split_ascii_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => BTreeSet::new(),
        };
        let audience = match claims.get("aud") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let expires_at =
            claims.get("exp").and_then(Value::as_u64).and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)));
        AuthInfo {
            subject: text("sub"),
            client_id: text("client_id").or_else(|| text("azp")),
            issuer: text("iss"),
            scopes,
            audience,
            expires_at,
            claims,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn standard_claims_are_read_leniently() {
        let Value::Object(c) = json!({"sub": "u1", "azp": "c1", "iss": "https://as", "scope": "a  b",
            "aud": ["r1", 5, "r2"], "exp": 10, "tenant": "acme"})
        else {
            unreachable!()
        };
        let info = AuthInfo::from_claims(c);
        assert_eq!(info.subject(), Some("u1"));
        assert_eq!(info.client_id(), Some("c1"));
        assert_eq!(info.issuer(), Some("https://as"));
        assert!(info.has_scope("a") && info.has_scope("b") && info.scopes().len() == 2);
        assert_eq!(info.audience(), ["r1", "r2"]);
        assert_eq!(info.expires_at(), Some(UNIX_EPOCH + Duration::from_secs(10)));
        assert_eq!(info.claim::<String>("tenant").as_deref(), Some("acme"));
        assert_eq!(info.claim::<u32>("tenant"), None);
        assert_eq!(info.missing_scopes(["a", "c"]), ["c"]);
        // Out-of-range or wrongly typed claims are ignored, never a panic.
        let Value::Object(c) = json!({"exp": u64::MAX, "scope": 3, "aud": {"x": 1}}) else { unreachable!() };
        let info = AuthInfo::from_claims(c);
        assert!(info.scopes().is_empty() && info.audience().is_empty());
        let _ = info.expires_at();
    }
}

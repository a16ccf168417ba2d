//! RFC 7662 token introspection, with a small bounded cache.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::{ConfigError, TokenRejection};
use super::fetch;
use super::info::{AuthInfo, Claims};
use super::validator::{TokenValidator, ValidateFuture};

/// Validates opaque (or any) tokens by asking the authorization server (RFC 7662): a POST to
/// its introspection endpoint, authenticated as this resource server's own client
/// (`client_secret_basic`). Active answers are cached (by a SHA-256 of the token, never the
/// token itself) for at most [`cache_ttl`](IntrospectionValidatorBuilder::cache_ttl) and never
/// past the token's `exp`; the cache holds at most
/// [`cache_size`](IntrospectionValidatorBuilder::cache_size) entries.
///
/// ```no_run
/// use portico::auth::server::IntrospectionValidator;
/// let v = IntrospectionValidator::builder("https://auth.example.com", "mcp-server", "s3cret")
///     .build()?;
/// # Ok::<(), portico::auth::server::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct IntrospectionValidator {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    endpoint: Option<reqwest::Url>,
    discovered: Mutex<Option<reqwest::Url>>,
    client: reqwest::Client,
    client_id: String,
    client_secret: String,
    cache: Mutex<Cache>,
    ttl: Duration,
}

/// Configures an [`IntrospectionValidator`].
#[must_use]
pub struct IntrospectionValidatorBuilder {
    issuer: String,
    endpoint: Option<String>,
    client_id: String,
    client_secret: String,
    ttl: Duration,
    size: usize,
    timeout: Duration,
}

impl std::fmt::Debug for IntrospectionValidatorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("IntrospectionValidatorBuilder")
            .field("issuer", &self.issuer)
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl IntrospectionValidator {
    /// A validator asking `issuer` (its metadata's `introspection_endpoint`, unless
    /// [`endpoint`](IntrospectionValidatorBuilder::endpoint) is set), authenticating as
    /// `client_id` / `client_secret`.
    pub fn builder(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionValidatorBuilder {
        IntrospectionValidatorBuilder {
            issuer: issuer.into(),
            endpoint: None,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            ttl: Duration::from_secs(60),
            size: 1024,
            timeout: Duration::from_secs(10),
        }
    }

    async fn endpoint(&self) -> Result<reqwest::Url, TokenRejection> {
        let i = &self.inner;
        if let Some(u) = &i.endpoint {
            return Ok(u.clone());
        }
        if let Some(u) = i.discovered.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(u);
        }
        let m = fetch::discover(&i.client, &i.issuer).await?;
        let raw = m.introspection_endpoint.ok_or_else(|| {
            TokenRejection::unavailable(format!("the metadata of {} has no introspection_endpoint", i.issuer))
        })?;
        let u =
            fetch::check_url("introspection_endpoint", &raw).map_err(|e| TokenRejection::unavailable(e.to_string()))?;
        *i.discovered.lock().unwrap_or_else(|p| p.into_inner()) = Some(u.clone());
        Ok(u)
    }

    async fn check(&self, token: &str) -> Result<AuthInfo, TokenRejection> {
        let i = &self.inner;
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = i.cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key, Instant::now()) {
            return Ok(hit);
        }
        let endpoint = self.endpoint().await?;
        let basic = format!("{}:{}", form_encode(&i.client_id), form_encode(&i.client_secret));
        let authorization = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(basic));
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let r = i
            .client
            .post(endpoint.clone())
            .header("authorization", authorization)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                TokenRejection::unavailable(format!("introspection at {endpoint} failed: {}", e.without_url()))
            })?;
        if !r.status().is_success() {
            return Err(TokenRejection::unavailable(format!("introspection at {endpoint}: HTTP {}", r.status())));
        }
        let claims: Claims = fetch::read_json("the introspection response", r).await?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenRejection::invalid_token("the token is not active"));
        }
        let info = AuthInfo::from_claims(claims);
        let now = SystemTime::now();
        if info.expires_at().is_some_and(|exp| exp <= now) {
            return Err(TokenRejection::invalid_token("the token has expired"));
        }
        if let Some(iss) = info.issuer().filter(|iss| *iss != i.issuer) {
            return Err(TokenRejection::invalid_token(format!("the token is from another issuer ({iss})")));
        }
        let mut ttl = i.ttl;
        if let Some(left) = info.expires_at().and_then(|exp| exp.duration_since(now).ok()) {
            ttl = ttl.min(left);
        }
        i.cache.lock().unwrap_or_else(|p| p.into_inner()).put(key, info.clone(), Instant::now() + ttl);
        Ok(info)
    }
}

impl TokenValidator for IntrospectionValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        Box::pin(self.check(token))
    }
}

impl IntrospectionValidatorBuilder {
    /// Uses this introspection endpoint instead of discovering it.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// How long an active answer is reused (default 60 s; never past the token's `exp`).
    /// `Duration::ZERO` disables the cache: revocation then takes effect at once.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The most cached answers (default 1024).
    pub fn cache_size(mut self, n: usize) -> Self {
        self.size = n;
        self
    }

    /// The timeout of each request to the authorization server (default 10 s).
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Builds the validator; nothing is fetched until the first token arrives.
    ///
    /// # Errors
    /// When a URL is not https (plain http is accepted on loopback only).
    pub fn build(self) -> Result<IntrospectionValidator, ConfigError> {
        fetch::check_url("issuer", &self.issuer)?;
        let endpoint = self.endpoint.as_deref().map(|u| fetch::check_url("introspection endpoint", u)).transpose()?;
        Ok(IntrospectionValidator {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                endpoint,
                discovered: Mutex::new(None),
                client: fetch::client(self.timeout)?,
                client_id: self.client_id,
                client_secret: self.client_secret,
                cache: Mutex::new(Cache::new(self.size)),
                ttl: self.ttl,
            }),
        })
    }
}

/// `application/x-www-form-urlencoded` (also what RFC 6749 §2.3.1 applies to client
/// credentials before Basic encoding).
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Active introspection answers by token hash, oldest evicted first.
struct Cache {
    max: usize,
    entries: HashMap<[u8; 32], (AuthInfo, Instant)>,
    order: VecDeque<[u8; 32]>,
}

impl Cache {
    fn new(max: usize) -> Self {
        Cache { max, entries: HashMap::new(), order: VecDeque::new() }
    }

    fn get(&mut self, key: &[u8; 32], now: Instant) -> Option<AuthInfo> {
        match self.entries.get(key) {
            Some((info, until)) if *until > now => Some(info.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&mut self, key: [u8; 32], info: AuthInfo, until: Instant) {
        if self.max == 0 || until <= Instant::now() {
            return;
        }
        if self.entries.insert(key, (info, until)).is_none() {
            self.order.push_back(key);
        }
        while self.entries.len() > self.max {
            let Some(old) = self.order.pop_front() else { break };
            self.entries.remove(&old);
        }
        // Keys expired through `get` linger in `order`; drop them now and then.
        if self.order.len() > self.max.saturating_mul(2) {
            let entries = &self.entries;
            self.order.retain(|k| entries.contains_key(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_bounded_and_expires() {
        let mut c = Cache::new(2);
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        for k in 0..5u8 {
            c.put([k; 32], AuthInfo::new().with_subject(k.to_string()), later);
        }
        assert_eq!(c.entries.len(), 2);
        assert!(c.get(&[0; 32], now).is_none());
        assert_eq!(c.get(&[4; 32], now).and_then(|i| i.subject().map(str::to_owned)).as_deref(), Some("4"));
        assert!(c.get(&[4; 32], later + Duration::from_secs(1)).is_none(), "expired");
        assert!(c.order.len() <= 4);
    }

    #[test]
    fn credentials_are_form_encoded() {
        assert_eq!(form_encode("a b+c/é"), "a+b%2Bc%2F%C3%A9");
    }
}

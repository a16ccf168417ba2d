//! JWT access tokens (RFC 9068) checked against the issuer's published keys.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Validation};

use super::error::{ConfigError, TokenRejection};
use super::fetch;
use super::info::{AuthInfo, Claims};
use super::jwks::{KeyCache, Source};
use super::validator::{TokenValidator, ValidateFuture};

/// Validates JWT access tokens: signature with the issuer's JWKS, `iss`, `exp` and `nbf`
/// (with a small leeway). Audience and scopes are the resource server's to check (see
/// [`ResourceServer`](super::ResourceServer)).
///
/// The JWKS is found through the issuer's metadata (`jwks_uri`, RFC 8414 or OpenID Connect
/// Discovery) unless configured, cached for [`jwks_ttl`](JwtValidatorBuilder::jwks_ttl), and
/// fetched again when a token names an unknown key — at most once per
/// [`min_refetch_interval`](JwtValidatorBuilder::min_refetch_interval), so forged `kid`s
/// cannot make the server hammer the issuer.
///
/// ```no_run
/// use portico::auth::server::JwtValidator;
/// let jwt = JwtValidator::builder("https://auth.example.com").build()?;
/// # Ok::<(), portico::auth::server::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct JwtValidator {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    keys: KeyCache,
    allowed: Vec<Algorithm>,
    leeway: Duration,
    typ: Option<String>,
}

/// Configures a [`JwtValidator`].
#[must_use]
pub struct JwtValidatorBuilder {
    issuer: String,
    jwks_uri: Option<String>,
    algorithms: Vec<String>,
    leeway: Duration,
    ttl: Duration,
    min_refetch: Duration,
    timeout: Duration,
    typ: Option<String>,
}

/// Asymmetric algorithms only: a symmetric `alg` with a public key is the classic JWT
/// algorithm-confusion attack, and `none` is never accepted.
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

impl JwtValidator {
    /// A validator for tokens whose `iss` is exactly `issuer`.
    pub fn builder(issuer: impl Into<String>) -> JwtValidatorBuilder {
        JwtValidatorBuilder {
            issuer: issuer.into(),
            jwks_uri: None,
            algorithms: vec!["RS256".into(), "ES256".into()],
            leeway: Duration::from_secs(30),
            ttl: Duration::from_secs(10 * 60),
            min_refetch: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            typ: None,
        }
    }

    async fn check(&self, token: &str) -> Result<AuthInfo, TokenRejection> {
        let i = &self.inner;
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| TokenRejection::invalid_token(format!("not a JWT: {e}")))?;
        if !i.allowed.contains(&header.alg) {
            return Err(TokenRejection::invalid_token(format!("algorithm {:?} is not accepted", header.alg)));
        }
        if let Some(want) = &i.typ {
            let typ = header.typ.as_deref().unwrap_or("");
            let typ = typ.strip_prefix("application/").unwrap_or(typ);
            if !typ.eq_ignore_ascii_case(want) {
                return Err(TokenRejection::invalid_token(format!("the token's type is {typ:?}, not {want:?}")));
            }
        }
        let key = i.keys.key(header.kid.as_deref()).await?;
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(TokenRejection::invalid_token("the token's algorithm differs from its key's"));
        }
        let mut v = Validation::new(header.alg);
        v.leeway = i.leeway.as_secs();
        v.validate_nbf = true;
        v.validate_aud = false;
        v.set_issuer(&[&i.issuer]);
        v.set_required_spec_claims(&["exp", "iss"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, &v).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            TokenRejection::invalid_token(match e.kind() {
                K::ExpiredSignature => "the token has expired".to_string(),
                K::ImmatureSignature => "the token is not valid yet (nbf)".to_string(),
                K::InvalidIssuer => "the token is from another issuer".to_string(),
                K::InvalidSignature => "bad signature".to_string(),
                other => format!("invalid token: {other:?}"),
            })
        })?;
        Ok(AuthInfo::from_claims(data.claims))
    }
}

impl TokenValidator for JwtValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        Box::pin(self.check(token))
    }
}

impl JwtValidatorBuilder {
    /// Uses this JWKS URL instead of discovering it from the issuer's metadata.
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.jwks_uri = Some(url.into());
        self
    }

    /// The accepted signature algorithms (default `RS256`, `ES256`); asymmetric only:
    /// `RS256`/`384`/`512`, `PS256`/`384`/`512`, `ES256`, `ES384`, `EdDSA`.
    pub fn algorithms(mut self, algs: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.algorithms = algs.into_iter().map(Into::into).collect();
        self
    }

    /// Requires the JOSE header's `typ` (e.g. `"at+jwt"`, RFC 9068 §4, which keeps ID tokens
    /// and other JWTs of the same issuer from being used as access tokens; compared without
    /// case and without an `application/` prefix). Off by default: many providers still
    /// issue access tokens typed `JWT` (their audience check refuses ID tokens anyway).
    pub fn require_typ(mut self, typ: impl Into<String>) -> Self {
        self.typ = Some(typ.into());
        self
    }

    /// Clock skew tolerated on `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How long fetched keys are trusted before they are fetched again (default 10 minutes).
    pub fn jwks_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The least time between two JWKS fetches triggered by unknown keys (default 30 s).
    pub fn min_refetch_interval(mut self, every: Duration) -> Self {
        self.min_refetch = every;
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
    /// When the issuer or JWKS URL is not https (plain http is accepted on loopback only), or
    /// an algorithm is unknown or symmetric.
    pub fn build(self) -> Result<JwtValidator, ConfigError> {
        fetch::check_url("issuer", &self.issuer)?;
        let mut allowed = Vec::new();
        for name in &self.algorithms {
            let alg: Algorithm = name.parse().map_err(|_| ConfigError(format!("unknown JWT algorithm {name:?}")))?;
            if !ASYMMETRIC.contains(&alg) {
                return Err(ConfigError(format!("JWT algorithm {name:?} is not an asymmetric signature")));
            }
            allowed.push(alg);
        }
        if allowed.is_empty() {
            return Err(ConfigError("no JWT algorithm allowed".into()));
        }
        let source = match &self.jwks_uri {
            Some(u) => Source::Uri(fetch::check_url("jwks_uri", u)?),
            None => Source::Discover(self.issuer.clone()),
        };
        let client = fetch::client(self.timeout)?;
        let keys = KeyCache::new(source, client, self.ttl, self.min_refetch, allowed.clone());
        Ok(JwtValidator {
            inner: Arc::new(Inner { issuer: self.issuer, keys, allowed, leeway: self.leeway, typ: self.typ }),
        })
    }
}

/// For the fuzz targets: a validator whose keys come from `jwks` (a JWKS document) and are
/// never fetched again; the number of usable keys.
#[cfg(feature = "fuzzing")]
impl JwtValidatorBuilder {
    /// [`build`](Self::build), then the keys of `jwks` loaded as if fetched.
    #[doc(hidden)]
    pub fn build_with_jwks(self, jwks: &serde_json::Value) -> Result<(JwtValidator, usize), ConfigError> {
        let never = Duration::from_secs(100 * 365 * 24 * 3600);
        let v = self.jwks_ttl(never).min_refetch_interval(never).build()?;
        let n = v.inner.keys.fuzz_preload(jwks);
        Ok((v, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_mistakes_are_refused() {
        let ok = JwtValidator::builder("https://as.example").algorithms(["ES256", "RS256", "EdDSA"]).build();
        assert!(ok.is_ok());
        for (issuer, algs) in [
            ("https://as.example", vec!["HS256"]),
            ("https://as.example", vec!["none"]),
            ("https://as.example", vec![]),
            ("http://as.example", vec!["RS256"]),
        ] {
            let r = JwtValidator::builder(issuer).algorithms(algs.clone()).build();
            assert!(r.is_err(), "{issuer} {algs:?}");
        }
        assert!(JwtValidator::builder("https://as.example").jwks_uri("http://keys.example/jwks").build().is_err());
    }

    #[tokio::test]
    async fn a_token_of_the_wrong_type_or_algorithm_is_refused_before_any_fetch() {
        // The JWKS URL is unreachable: reaching it would be `unavailable`, not `invalid_token`.
        let v = JwtValidator::builder("https://as.example")
            .jwks_uri("https://127.0.0.1:1/jwks")
            .require_typ("at+jwt")
            .build()
            .expect("validator");
        let b64 = |s: &str| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
        };
        for header in [r#"{"alg":"ES256","typ":"JWT"}"#, r#"{"alg":"HS256","typ":"at+jwt"}"#, r#"{"alg":"none"}"#] {
            let token = format!("{}.{}.c2ln", b64(header), b64(r#"{"iss":"https://as.example"}"#));
            let e = v.validate(&token).await.expect_err(header);
            assert!(e.is_invalid_token(), "{header}: {e}");
        }
    }
}

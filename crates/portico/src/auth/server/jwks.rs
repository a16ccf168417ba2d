//! The issuer's signing keys (JWKS): fetched on first use, cached for a TTL, refetched when a
//! token names an unknown key (rotation), at most once per `min_refetch` interval.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::error::TokenRejection;
use super::fetch;

/// The most keys kept from one JWKS document; the rest are ignored.
pub(crate) const MAX_KEYS: usize = 64;

/// One usable verification key.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The `alg` the JWK pins, if any.
    pub(crate) alg: Option<Algorithm>,
}

/// Where the JWKS lives.
pub(crate) enum Source {
    /// `jwks_uri` from the issuer's metadata, discovered on first use.
    Discover(String),
    /// A configured `jwks_uri`.
    Uri(reqwest::Url),
}

#[derive(Default)]
struct State {
    /// Keys by `kid`; keys without a `kid` under "".
    keys: HashMap<String, Arc<Key>>,
    /// When the keys were last fetched successfully.
    fetched: Option<Instant>,
    /// When a fetch was last tried (successful or not): the refetch rate limit.
    attempted: Option<Instant>,
    /// The discovered `jwks_uri`.
    uri: Option<reqwest::Url>,
}

pub(crate) struct KeyCache {
    source: Source,
    client: reqwest::Client,
    ttl: Duration,
    min_refetch: Duration,
    allowed: Vec<Algorithm>,
    state: RwLock<State>,
    /// One fetch at a time; others wait for it and reuse its result.
    fetching: tokio::sync::Mutex<()>,
}

enum Lookup {
    Found(Arc<Key>),
    /// Not in the cache; fetching again is allowed.
    Refetch,
    /// Not in the cache, and it was refreshed too recently to try again.
    Unknown,
}

impl KeyCache {
    pub(crate) fn new(
        source: Source,
        client: reqwest::Client,
        ttl: Duration,
        min_refetch: Duration,
        allowed: Vec<Algorithm>,
    ) -> Self {
        KeyCache {
            source,
            client,
            ttl,
            min_refetch,
            allowed,
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    fn lookup(&self, kid: &str, now: Instant) -> Lookup {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        let fresh = s.fetched.is_some_and(|t| now.duration_since(t) < self.ttl);
        let may_refetch = s.attempted.is_none_or(|t| now.duration_since(t) >= self.min_refetch);
        match s.keys.get(kid) {
            // Stale but rate-limited: keep using what we have.
            Some(k) if fresh || !may_refetch => Lookup::Found(k.clone()),
            _ if may_refetch => Lookup::Refetch,
            _ => Lookup::Unknown,
        }
    }

    /// The key a token's header names (`kid`; a token without one may use the only key).
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Arc<Key>, TokenRejection> {
        let kid = kid.unwrap_or("");
        match self.lookup(kid, Instant::now()) {
            Lookup::Found(k) => return Ok(k),
            Lookup::Unknown => return Err(unknown(kid)),
            Lookup::Refetch => {}
        }
        let _one = self.fetching.lock().await;
        // Another task may have fetched while this one waited.
        match self.lookup(kid, Instant::now()) {
            Lookup::Found(k) => return Ok(k),
            Lookup::Unknown => return Err(unknown(kid)),
            Lookup::Refetch => {}
        }
        let fetched = self.fetch().await;
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        s.attempted = Some(Instant::now());
        match fetched {
            Ok((uri, keys)) => {
                s.keys = keys;
                s.uri = Some(uri);
                s.fetched = s.attempted;
                s.keys.get(kid).cloned().ok_or_else(|| unknown(kid))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot refresh the JWKS");
                // Keep serving keys we already had (the issuer may be briefly down).
                s.keys.get(kid).cloned().ok_or(e)
            }
        }
    }

    async fn fetch(&self) -> Result<(reqwest::Url, HashMap<String, Arc<Key>>), TokenRejection> {
        let uri = match &self.source {
            Source::Uri(u) => u.clone(),
            Source::Discover(issuer) => {
                let known = self.state.read().unwrap_or_else(|p| p.into_inner()).uri.clone();
                match known {
                    Some(u) => u,
                    None => {
                        let m = fetch::discover(&self.client, issuer).await?;
                        let raw = m.jwks_uri.ok_or_else(|| {
                            TokenRejection::unavailable(format!("the metadata of {issuer} has no jwks_uri"))
                        })?;
                        fetch::check_url("jwks_uri", &raw).map_err(|e| TokenRejection::unavailable(e.to_string()))?
                    }
                }
            }
        };
        #[derive(Deserialize)]
        struct Set {
            keys: Vec<serde_json::Value>,
        }
        let set: Set = fetch::get_json(&self.client, "JWKS", &uri).await?;
        let keys = parse_keys(set.keys, &self.allowed);
        tracing::debug!(keys = keys.len(), %uri, "JWKS fetched");
        Ok((uri, keys))
    }
}

/// Fills the cache from a JWKS document as a fetch would, for the fuzz targets; the number of
/// usable keys.
#[cfg(feature = "fuzzing")]
impl KeyCache {
    pub(crate) fn fuzz_preload(&self, jwks: &serde_json::Value) -> usize {
        let raw = jwks.get("keys").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
        let keys = parse_keys(raw, &self.allowed);
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        s.keys = keys;
        s.fetched = Some(now);
        s.attempted = Some(now);
        s.keys.len()
    }
}

fn unknown(kid: &str) -> TokenRejection {
    if kid.is_empty() {
        TokenRejection::invalid_token("the token names no key (kid) and the issuer has no single key without one")
    } else {
        TokenRejection::invalid_token(format!("the token is signed with an unknown key (kid {kid:?})"))
    }
}

/// The usable signature keys of a JWKS: skips encryption keys, symmetric keys, keys pinned to
/// an algorithm not allowed, and anything unparsable. A lone key without `kid` is also filed
/// under "" (tokens without `kid` use it).
fn parse_keys(raw: Vec<serde_json::Value>, allowed: &[Algorithm]) -> HashMap<String, Arc<Key>> {
    let mut keys = HashMap::new();
    let mut without_kid = Vec::new();
    for v in raw.into_iter().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(v) else { continue };
        if matches!(jwk.common.public_key_use, Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)) {
            continue;
        }
        if matches!(jwk.algorithm, jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)) {
            continue;
        }
        let alg = match jwk.common.key_algorithm.map(|a| a.to_string().parse::<Algorithm>()) {
            None => None,
            Some(Ok(a)) if allowed.contains(&a) => Some(a),
            Some(_) => continue,
        };
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
        let key = Arc::new(Key { decoding, alg });
        match jwk.common.key_id {
            Some(kid) if !kid.is_empty() => {
                keys.insert(kid, key);
            }
            _ => without_kid.push(key),
        }
    }
    if without_kid.len() == 1 {
        keys.extend(without_kid.pop().map(|k| (String::new(), k)));
    } else if keys.len() == 1 && without_kid.is_empty() {
        let only = keys.values().next().cloned();
        keys.extend(only.map(|k| (String::new(), k)));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unusable_keys_are_skipped() {
        let ec = json!({"kty": "EC", "crv": "P-256", "kid": "ec1", "alg": "ES256",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let raw = vec![
            ec.clone(),
            json!({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}),
            json!({"kty": "EC", "kid": "enc", "use": "enc", "crv": "P-256", "x": ec["x"], "y": ec["y"]}),
            json!({"kty": "EC", "kid": "hs", "alg": "HS256", "crv": "P-256", "x": ec["x"], "y": ec["y"]}),
            json!({"kty": "nonsense"}),
            json!(42),
        ];
        let keys = parse_keys(raw, &[Algorithm::ES256, Algorithm::RS256]);
        let mut kids: Vec<_> = keys.keys().cloned().collect();
        kids.sort();
        // The only key also serves tokens without a kid.
        assert_eq!(kids, ["", "ec1"]);
        assert_eq!(keys["ec1"].alg, Some(Algorithm::ES256));
    }
}

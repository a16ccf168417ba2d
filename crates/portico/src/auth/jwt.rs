//! Signed JWTs for `private_key_jwt` client authentication (RFC 7523), with ring.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::AuthError;
use super::store::now_secs;

/// A private key that signs client assertions: `ES256` (P-256) or `RS256`.
pub struct SigningKey {
    kind: Kind,
    key_id: Option<String>,
}

enum Kind {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("alg", &self.alg()).field("key_id", &self.key_id).finish()
    }
}

impl SigningKey {
    /// A key from a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) for `alg` (`ES256` or `RS256`).
    ///
    /// # Errors
    /// An unknown algorithm, or a PEM that is not a PKCS#8 key of that algorithm.
    pub fn from_pkcs8_pem(pem: &str, alg: &str) -> Result<Self, AuthError> {
        let der = pem_to_der(pem)?;
        let kind = match alg {
            "ES256" => Kind::Es256(
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
                    .map_err(|e| AuthError::Config(format!("not a PKCS#8 P-256 private key: {e}")))?,
            ),
            "RS256" => Kind::Rs256(
                RsaKeyPair::from_pkcs8(&der)
                    .map_err(|e| AuthError::Config(format!("not a PKCS#8 RSA private key: {e}")))?,
            ),
            other => {
                return Err(AuthError::Config(format!("unsupported signing algorithm {other:?} (ES256 or RS256)")));
            }
        };
        Ok(SigningKey { kind, key_id: None })
    }

    /// Sets the `kid` header of the JWTs.
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.key_id = Some(kid.into());
        self
    }

    /// `ES256` or `RS256`.
    pub fn alg(&self) -> &'static str {
        match self.kind {
            Kind::Es256(_) => "ES256",
            Kind::Rs256(_) => "RS256",
        }
    }

    /// A compact JWS of `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, AuthError> {
        let mut header = json!({ "alg": self.alg(), "typ": "JWT" });
        if let Some(kid) = &self.key_id {
            header["kid"] = Value::String(kid.clone());
        }
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = SystemRandom::new();
        let sig = match &self.kind {
            Kind::Es256(k) => {
                k.sign(&rng, input.as_bytes()).map_err(|e| AuthError::Signing(e.to_string()))?.as_ref().to_vec()
            }
            Kind::Rs256(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut sig)
                    .map_err(|e| AuthError::Signing(e.to_string()))?;
                sig
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    /// A client assertion (RFC 7523 §3): `iss` and `sub` the client, `aud` the authorization
    /// server, valid for five minutes.
    pub(crate) fn client_assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let now = now_secs();
        self.sign(&json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": super::flow::random_token(16),
        }))
    }
}

/// `header.claims.signature`, each base64url.
fn compact(
    header: &Value,
    claims: &Value,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, AuthError>,
) -> Result<String, AuthError> {
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let sig = sign(input.as_bytes())?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
}

/// The P-256 key that proves possession of DPoP-bound tokens (RFC 9449), made per client.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`).
    jwk: Value,
}

impl DpopKey {
    /// A new random key.
    pub(crate) fn generate() -> Result<Self, AuthError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| AuthError::Signing(format!("cannot make a DPoP key: {e}")))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .map_err(|e| AuthError::Signing(format!("cannot load the DPoP key: {e}")))?;
        // Uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        let point = pair.public_key().as_ref();
        if point.len() != 65 {
            return Err(AuthError::Signing("unexpected P-256 public key length".into()));
        }
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(DpopKey { pair, jwk })
    }

    /// A proof for one HTTP request (RFC 9449 §4.2): `htu` without query or fragment, `ath`
    /// when an access token is presented, the server's `nonce` when it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &reqwest::Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut claims = json!({
            "jti": super::flow::random_token(16),
            "htm": method,
            "htu": htu.as_str(),
            "iat": now_secs(),
        });
        if let Some(t) = access_token {
            claims["ath"] = Value::String(URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())));
        }
        if let Some(n) = nonce {
            claims["nonce"] = Value::String(n.to_owned());
        }
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
        compact(&header, &claims, |input| {
            let sig = self.pair.sign(&SystemRandom::new(), input).map_err(|e| AuthError::Signing(e.to_string()))?;
            Ok(sig.as_ref().to_vec())
        })
    }
}

/// The DER bytes of a PEM block.
fn pem_to_der(pem: &str) -> Result<Vec<u8>, AuthError> {
    let body: String = pem.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("-----")).collect();
    if !pem.contains("-----BEGIN PRIVATE KEY-----") {
        return Err(AuthError::Config("the private key must be a PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)".into()));
    }
    STANDARD.decode(body).map_err(|e| AuthError::Config(format!("the private key PEM is not base64: {e}")))
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    use super::*;

    /// Splits a compact JWS, checks its signature with `public` and returns header and claims.
    fn open(jws: &str, public: &[u8]) -> (Value, Value) {
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts.len(), 3, "{jws}");
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature");
        let input = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(input.as_bytes(), &sig)
            .expect("valid signature");
        let decode = |p: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).expect("b64")).expect("json");
        (decode(parts[0]), decode(parts[1]))
    }

    #[test]
    fn es256_client_assertion_verifies() {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let public = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .expect("pair")
            .public_key()
            .as_ref()
            .to_vec();
        let pem =
            format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", STANDARD.encode(doc.as_ref()));
        let key = SigningKey::from_pkcs8_pem(&pem, "ES256").expect("PEM key").with_key_id("k1");
        let jwt = key.client_assertion("client-1", "http://as.test").expect("assertion");
        let (header, claims) = open(&jwt, &public);
        assert_eq!(header, json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }));
        assert_eq!((claims["iss"].as_str(), claims["sub"].as_str()), (Some("client-1"), Some("client-1")));
        assert_eq!(claims["aud"], "http://as.test");
        let (iat, exp) = (claims["iat"].as_u64().expect("iat"), claims["exp"].as_u64().expect("exp"));
        assert_eq!(exp - iat, 300);
        assert!(SigningKey::from_pkcs8_pem(&pem, "HS256").is_err());
        assert!(SigningKey::from_pkcs8_pem("not a pem", "ES256").is_err());
    }

    #[test]
    fn dpop_proofs_carry_method_url_hash_and_nonce() {
        let key = DpopKey::generate().expect("key");
        let url = reqwest::Url::parse("http://rs.test/mcp?x=1#f").expect("url");
        let proof = key.proof("POST", &url, Some("tok"), Some("n-1")).expect("proof");
        let jwk = key.jwk.clone();
        let point = [
            vec![4u8],
            URL_SAFE_NO_PAD.decode(jwk["x"].as_str().expect("x")).expect("x"),
            URL_SAFE_NO_PAD.decode(jwk["y"].as_str().expect("y")).expect("y"),
        ]
        .concat();
        let (header, claims) = open(&proof, &point);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private key in the proof");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://rs.test/mcp", "no query or fragment");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")));
        assert_eq!(claims["nonce"], "n-1");
        let again = key.proof("POST", &url, None, None).expect("proof");
        let (_, claims2) = open(&again, &point);
        assert_ne!(claims["jti"], claims2["jti"], "a fresh jti per proof");
        assert!(claims2.get("ath").is_none() && claims2.get("nonce").is_none());
    }
}

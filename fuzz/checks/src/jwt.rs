//! JWT access tokens (`portico::auth::server::JwtValidator`), the header and claims handling
//! before and after the signature check: any token string is refused unless the key signed it;
//! any header and claims signed with the key are accepted only when they name an accepted
//! algorithm, the issuer and an unexpired `exp`, and the `AuthInfo` then reflects the claims.

use std::sync::OnceLock;
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey};
use portico::auth::server::{AuthInfo, JwtValidator, TokenValidator};
use serde_json::{Value, json};

const ISSUER: &str = "https://issuer.example";
const KEY_PEM: &[u8] = include_bytes!("../keys/es256.pem");

fn validator() -> &'static JwtValidator {
    static V: OnceLock<JwtValidator> = OnceLock::new();
    V.get_or_init(|| {
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
            "x": "j5PzfOez7zatYAn-vwf90vKmQKqaZlNhhyi9VeQ2_og",
            "y": "kvSdd348DJ_JHx8NLa2BplCeh0NKCwwjjSiFRgsLtPM",
        }]});
        let (v, n) = JwtValidator::builder(ISSUER).build_with_jwks(&jwks).expect("validator builds");
        // The lone key is filed under its kid and under "" (for tokens without one).
        assert_eq!(n, 2, "the test key is usable");
        v
    })
}

fn sign(header: &[u8], claims: &[u8]) -> String {
    let key = EncodingKey::from_ec_pem(KEY_PEM).expect("test key");
    let message = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(claims));
    let sig = jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::ES256).expect("signs");
    format!("{message}.{sig}")
}

/// The check.
pub fn check(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else { return };
    let v = validator();
    match mode % 3 {
        0 => {
            let token = String::from_utf8_lossy(rest);
            assert!(crate::block_on(v.validate(&token)).is_err(), "an unsigned token was accepted");
        }
        1 => {
            let (header, claims) = crate::split2(rest);
            let token = sign(header, claims);
            let Ok(info) = crate::block_on(v.validate(&token)) else { return };
            let h: Value = serde_json::from_slice(header).expect("an accepted header is JSON");
            assert_eq!(h["alg"], "ES256", "accepted with alg {}", h["alg"]);
            let c: Value = serde_json::from_slice(claims).expect("accepted claims are JSON");
            assert_eq!(c["iss"], ISSUER);
            let exp = c["exp"].as_f64().expect("an accepted token has a numeric exp");
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).expect("clock").as_secs_f64();
            assert!(exp + 60.0 >= now, "an expired token was accepted");
            assert_eq!(info.issuer(), Some(ISSUER));
            assert_eq!(info.subject(), c["sub"].as_str());
        }
        _ => {
            if let Ok(Value::Object(claims)) = serde_json::from_slice(rest) {
                let info = AuthInfo::from_claims(claims.clone());
                assert_eq!(info.claims(), &claims);
                assert_eq!(info.subject(), claims.get("sub").and_then(Value::as_str));
                if claims.get("scope").or_else(|| claims.get("scp")).is_some_and(Value::is_string) {
                    for s in info.scopes() {
                        assert!(!s.is_empty() && !s.contains(char::is_whitespace), "scope {s:?}");
                    }
                }
            }
        }
    }
}

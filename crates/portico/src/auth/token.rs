//! Requests to the token and registration endpoints: grants, client authentication
//! (`client_secret_basic`, `client_secret_post`, `none`, `private_key_jwt`) and Dynamic
//! Client Registration (RFC 7591).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde::{Deserialize, Serialize};

use super::AuthError;
use super::jwt::{DpopKey, SigningKey};
use super::metadata::AuthorizationServerMetadata;
use super::store::{ClientInfo, TokenSet, now_secs};

/// `client_assertion_type` of a JWT assertion.
const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The largest metadata, registration or token response read.
pub(crate) const MAX_BODY: usize = 256 * 1024;

/// The DPoP proof header (RFC 9449 §4.1).
pub(crate) const DPOP: &str = "dpop";
/// A server's DPoP nonce (RFC 9449 §8, §9).
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_seconds")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// `expires_in` as a number, or as a string of digits (some servers send one).
fn lenient_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seconds {
        Number(u64),
        Text(String),
        Float(f64),
    }
    Ok(match Option::<Seconds>::deserialize(d)? {
        Some(Seconds::Number(n)) => Some(n),
        Some(Seconds::Text(t)) => t.trim().parse().ok(),
        Some(Seconds::Float(f)) if f.is_finite() && f >= 0.0 => Some(f as u64),
        _ => None,
    })
}

/// An OAuth error body (RFC 6749 §5.2).
#[derive(Debug, Deserialize)]
struct OAuthErrorBody {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// How the client authenticates at the token endpoint.
pub(crate) enum ClientAuth<'a> {
    /// `client_id` in the body only.
    None,
    /// HTTP Basic with the secret.
    Basic(&'a str),
    /// The secret in the body.
    Post(&'a str),
    /// A signed client assertion.
    PrivateKeyJwt(&'a SigningKey),
}

/// Picks the client authentication for `client` at the server described by `meta`.
pub(crate) fn choose_auth<'a>(
    client: &'a ClientInfo,
    key: Option<&'a SigningKey>,
    meta: &AuthorizationServerMetadata,
) -> ClientAuth<'a> {
    if let Some(key) = key
        && (client.client_secret.is_none() || meta.supports_auth_method("private_key_jwt"))
    {
        return ClientAuth::PrivateKeyJwt(key);
    }
    let Some(secret) = client.client_secret.as_deref() else { return ClientAuth::None };
    match client.token_endpoint_auth_method.as_deref() {
        Some("client_secret_post") => return ClientAuth::Post(secret),
        Some("client_secret_basic") => return ClientAuth::Basic(secret),
        Some("none") => return ClientAuth::None,
        _ => {}
    }
    if meta.supports_auth_method("client_secret_basic") {
        ClientAuth::Basic(secret)
    } else if meta.supports_auth_method("client_secret_post") {
        ClientAuth::Post(secret)
    } else if meta.supports_auth_method("none") {
        ClientAuth::None
    } else {
        ClientAuth::Basic(secret)
    }
}

/// DPoP for one token request: the key, and the authorization server's nonce (updated from
/// its answers).
pub(crate) struct Dpop<'a> {
    pub key: &'a DpopKey,
    pub nonce: &'a mut Option<String>,
}

/// A token request: `form` is the grant's parameters; the client's authentication is added,
/// and a DPoP proof when `dpop` is given (retried once with the server's nonce on
/// `use_dpop_nonce`, RFC 9449 §8).
pub(crate) async fn request_token(
    http: &reqwest::Client,
    meta: &AuthorizationServerMetadata,
    client: &ClientInfo,
    auth: ClientAuth<'_>,
    mut form: Vec<(&str, String)>,
    mut dpop: Option<Dpop<'_>>,
) -> Result<TokenSet, AuthError> {
    let url = meta.token_endpoint.as_str();
    let mut basic = None;
    match auth {
        ClientAuth::None => form.push(("client_id", client.client_id.clone())),
        ClientAuth::Basic(secret) => {
            let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
            basic = Some(format!("Basic {}", STANDARD.encode(pair)));
        }
        ClientAuth::Post(secret) => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", secret.to_owned()));
        }
        ClientAuth::PrivateKeyJwt(key) => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()));
            form.push(("client_assertion", key.client_assertion(&client.client_id, &meta.issuer)?));
        }
    }
    let requested_scope = form.iter().find(|(k, _)| *k == "scope").map(|(_, v)| v.clone());
    let endpoint = reqwest::Url::parse(url)
        .map_err(|e| AuthError::metadata(&meta.issuer, format!("invalid token_endpoint: {e}")))?;
    let mut nonce_retry = true;
    let (status, body) = loop {
        let mut req = http.post(endpoint.clone()).header(ACCEPT, "application/json");
        if let Some(b) = &basic {
            req = req.header(AUTHORIZATION, b);
        }
        if let Some(d) = &dpop {
            req = req.header(DPOP, d.key.proof("POST", &endpoint, None, d.nonce.as_deref())?);
        }
        let resp = req.form(&form).send().await.map_err(|e| AuthError::http(url, e))?;
        let status = resp.status();
        let new_nonce = resp.headers().get(DPOP_NONCE).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = read_limited(resp, url).await?;
        if let (Some(d), Some(n)) = (dpop.as_mut(), new_nonce) {
            *d.nonce = Some(n);
            let asked = serde_json::from_slice::<OAuthErrorBody>(&body).is_ok_and(|e| e.error == "use_dpop_nonce");
            if status == reqwest::StatusCode::BAD_REQUEST && asked && nonce_retry {
                nonce_retry = false;
                continue;
            }
        }
        break (status, body);
    };
    if !status.is_success() {
        return Err(peer_error(url, status.as_u16(), &body));
    }
    let t: TokenResponse = serde_json::from_slice(&body).map_err(|e| AuthError::PeerStatus {
        url: url.to_owned(),
        status: status.as_u16(),
        detail: format!("not a token response: {e}"),
    })?;
    if t.access_token.is_empty() {
        return Err(AuthError::PeerStatus {
            url: url.to_owned(),
            status: status.as_u16(),
            detail: "empty access_token".into(),
        });
    }
    Ok(TokenSet {
        access_token: t.access_token,
        token_type: t.token_type.unwrap_or_else(|| "Bearer".into()),
        refresh_token: t.refresh_token,
        expires_at: t.expires_in.map(|s| now_secs().saturating_add(s)),
        scope: t.scope.or(requested_scope),
    })
}

/// The `application/x-www-form-urlencoded` form of a credential (RFC 6749 §2.3.1).
fn form_encode(s: &str) -> String {
    reqwest::Url::parse_with_params("x:", [("v", s)])
        .ok()
        .and_then(|u| u.query().map(|q| q.trim_start_matches("v=").to_owned()))
        .unwrap_or_else(|| s.to_owned())
}

/// Reads a response body of at most [`MAX_BODY`] bytes.
pub(crate) async fn read_limited(mut resp: reqwest::Response, url: &str) -> Result<Vec<u8>, AuthError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| AuthError::http(url, e))? {
        if out.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::PeerStatus {
                url: url.to_owned(),
                status: 200,
                detail: format!("the body exceeds {MAX_BODY} bytes"),
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The error of a refused request, from its OAuth error body when it has one.
pub(crate) fn peer_error(url: &str, status: u16, body: &[u8]) -> AuthError {
    let detail = match serde_json::from_slice::<OAuthErrorBody>(body) {
        Ok(e) => match e.error_description {
            Some(d) => format!("{} ({d})", e.error),
            None => e.error,
        },
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
    };
    AuthError::PeerStatus { url: url.to_owned(), status, detail }
}

/// The metadata sent in a Dynamic Client Registration request (RFC 7591 §2).
#[derive(Debug, Serialize)]
pub(crate) struct RegistrationRequest<'a> {
    pub client_name: &'a str,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<&'a str>,
    pub response_types: Vec<&'a str>,
    pub token_endpoint_auth_method: &'a str,
    pub application_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'a str>,
}

#[derive(Debug, Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Registers a client at `endpoint` (RFC 7591).
pub(crate) async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    req: &RegistrationRequest<'_>,
) -> Result<ClientInfo, AuthError> {
    let resp = http
        .post(endpoint)
        .header(ACCEPT, "application/json")
        .json(req)
        .send()
        .await
        .map_err(|e| AuthError::http(endpoint, e))?;
    let status = resp.status();
    let body = read_limited(resp, endpoint).await?;
    if !status.is_success() {
        return Err(peer_error(endpoint, status.as_u16(), &body));
    }
    let r: RegistrationResponse = serde_json::from_slice(&body).map_err(|e| AuthError::PeerStatus {
        url: endpoint.to_owned(),
        status: status.as_u16(),
        detail: format!("not a registration response: {e}"),
    })?;
    Ok(ClientInfo {
        client_id: r.client_id,
        client_secret: r.client_secret.filter(|s| !s.is_empty()),
        token_endpoint_auth_method: r.token_endpoint_auth_method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_responses_with_odd_expiries_parse() {
        for (body, want) in [
            (r#"{"access_token":"a","expires_in":60}"#, Some(60)),
            (r#"{"access_token":"a","expires_in":"60"}"#, Some(60)),
            (r#"{"access_token":"a","expires_in":60.0}"#, Some(60)),
            (r#"{"access_token":"a","expires_in":null}"#, None),
            (r#"{"access_token":"a"}"#, None),
        ] {
            let t: TokenResponse = serde_json::from_str(body).expect(body);
            assert_eq!(t.expires_in, want, "{body}");
        }
    }

    #[test]
    fn credentials_are_form_encoded_for_basic_auth() {
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
        assert_eq!(form_encode("plain"), "plain");
    }

    #[test]
    fn oauth_error_bodies_name_the_error() {
        let e = peer_error("http://as/token", 400, br#"{"error":"invalid_grant","error_description":"expired"}"#);
        assert_eq!(e.to_string(), "http://as/token answered HTTP 400: invalid_grant (expired)");
        let e = peer_error("http://as/token", 500, b"boom");
        assert!(e.to_string().ends_with("HTTP 500: boom"), "{e}");
    }
}

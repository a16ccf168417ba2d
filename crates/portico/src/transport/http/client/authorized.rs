//! The transport's side of authorization: a bearer token on every request, and the OAuth
//! client's flow when the server answers `401` or `403 insufficient_scope`. Everything
//! OAuth is in [`crate::auth`]; this file only asks it.

use http::StatusCode;
use http::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use tracing::debug;

use super::shared::{SendError, Shared, drain};

/// The DPoP proof header, and the server's nonce (RFC 9449).
const DPOP: &str = "dpop";
const DPOP_NONCE: &str = "dpop-nonce";
use crate::auth::{BearerChallenge, Challenge, OAuthClient};

/// Sends `rb` with the current access token (and its DPoP proof); on a challenge, lets `auth` obtain another and
/// sends it again, up to the client's limit of authorizations.
pub(super) async fn send(
    shared: &Shared,
    auth: &OAuthClient,
    rb: reqwest::RequestBuilder,
) -> Result<reqwest::Response, SendError> {
    let request = rb.build().map_err(SendError::Http)?;
    let mut attempt = 0;
    loop {
        let mut req =
            request.try_clone().ok_or_else(|| SendError::Auth("the request body cannot be sent twice".into()))?;
        let method = req.method().as_str().to_owned();
        let credentials = auth.authorization(&shared.url, &method, req.url()).await;
        let token = credentials.as_ref().map(|c| c.token.clone());
        if let Some(c) = credentials {
            let mut value = HeaderValue::from_str(&c.authorization)
                .map_err(|_| SendError::Auth("the access token is not a valid header value".into()))?;
            value.set_sensitive(true);
            req.headers_mut().insert(AUTHORIZATION, value);
            if let Some(proof) = c.dpop.and_then(|p| HeaderValue::from_str(&p).ok()) {
                req.headers_mut().insert(DPOP, proof);
            }
        }
        let resp = super::shared::execute(&shared.http, req).await?;
        if let Some(nonce) = resp.headers().get(DPOP_NONCE).and_then(|v| v.to_str().ok()) {
            auth.resource_nonce(nonce.to_owned()).await;
        }
        let Some(bearer) = challenge(&resp) else { return Ok(resp) };
        attempt += 1;
        let status = resp.status().as_u16();
        if attempt > auth.max_authorizations() {
            let scope = bearer.as_ref().and_then(|b| b.scope.clone());
            drain(resp).await;
            let e = crate::auth::AuthError::RetryLimit { attempts: attempt - 1, scope };
            return Err(SendError::Auth(e.to_string()));
        }
        let dpop_offered = resp
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(crate::auth::offers_dpop);
        drain(resp).await;
        debug!(status, attempt, "the MCP server asks for authorization");
        let ch = Challenge { status, bearer, sent: token, attempt, dpop_offered };
        auth.challenged(&shared.url, ch).await.map_err(|e| SendError::Auth(e.to_string()))?;
    }
}

/// The challenge of a `401`, or of a `403` with `error="insufficient_scope"`; `None` for any
/// other answer (`Some(None)`: a `401` without a `Bearer` challenge).
fn challenge(resp: &reqwest::Response) -> Option<Option<BearerChallenge>> {
    let parsed = resp
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(BearerChallenge::parse);
    match resp.status() {
        StatusCode::UNAUTHORIZED => Some(parsed),
        StatusCode::FORBIDDEN if parsed.as_ref().is_some_and(BearerChallenge::is_insufficient_scope) => Some(parsed),
        _ => None,
    }
}

//! The tower layer checking bearer tokens, and the challenges it answers with.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use serde_json::value::RawValue;

use super::error::{RejectionKind, TokenRejection};
use super::info::AuthInfo;
use super::{ResourceServer, metadata};

/// The tower [`Layer`](tower::Layer) of a [`ResourceServer`]: wraps a service (the MCP
/// endpoint) in [`BearerAuth`]. Made by [`ResourceServer::layer`].
#[derive(Clone, Debug)]
pub struct BearerAuthLayer {
    rs: ResourceServer,
}

impl BearerAuthLayer {
    pub(crate) fn new(rs: ResourceServer) -> Self {
        BearerAuthLayer { rs }
    }
}

impl<S> tower::Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> BearerAuth<S> {
        BearerAuth { inner, rs: self.rs.clone() }
    }
}

/// A service that lets through only requests with a valid bearer token, with the validated
/// [`AuthInfo`] in their extensions and without their `Authorization` header; it answers the
/// others with 401/403 and a `WWW-Authenticate` challenge. `OPTIONS` (CORS preflight) and
/// requests for the protected-resource metadata pass unchecked.
#[derive(Clone, Debug)]
pub struct BearerAuth<S> {
    inner: S,
    rs: ResourceServer,
}

/// The scope rules and granted scopes of an authorized request, left in its extensions for
/// the endpoint, which applies them once it knows the method ([`scope_refusal`]). Private, so
/// nobody else can insert one.
#[derive(Clone)]
pub(crate) struct ScopeGate {
    rs: ResourceServer,
    info: AuthInfo,
}

impl<S, B> tower::Service<Request<B>> for BearerAuth<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        // The clone that was made ready is the one that serves this request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let rs = self.rs.clone();
        Box::pin(async move {
            if req.method() == Method::OPTIONS || metadata::is_metadata_path(req.uri().path()) {
                return inner.call(req).await;
            }
            match rs.authorize(req.headers()).await {
                Ok(info) => {
                    req.headers_mut().remove(AUTHORIZATION);
                    if !rs.inner.policy.is_empty() {
                        req.extensions_mut().insert(ScopeGate { rs: rs.clone(), info: info.clone() });
                    }
                    req.extensions_mut().insert(info);
                    inner.call(req).await
                }
                Err(e) => {
                    tracing::debug!(error = %e, kind = ?e.kind(), "request refused by the bearer check");
                    Ok(refusal(&rs, &e))
                }
            }
        })
    }
}

/// The credentials of the one `Authorization: Bearer` header.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&str, TokenRejection> {
    let mut all = headers.get_all(AUTHORIZATION).iter();
    let Some(value) = all.next() else { return Err(TokenRejection::missing()) };
    if all.next().is_some() {
        return Err(TokenRejection::malformed("more than one Authorization header"));
    }
    let value = value.to_str().map_err(|_| TokenRejection::malformed("Authorization is not visible ASCII"))?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme carries no bearer token: the client is not authenticated (for us).
        return Err(TokenRejection::missing());
    }
    let token = token.trim_matches(' ');
    // RFC 6750 b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=" padding.
    let body = token.trim_end_matches('=');
    let valid = !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'));
    if !valid {
        return Err(TokenRejection::malformed("the bearer token is empty or malformed"));
    }
    Ok(token)
}

/// Applies the per-method and per-tool scopes of the request's [`ScopeGate`] (if the bearer
/// layer left one): `Some(403)` when the token lacks some.
pub(crate) fn scope_refusal(ext: &http::Extensions, method: &str, params: Option<&RawValue>) -> Option<Response<Body>> {
    let gate = ext.get::<ScopeGate>()?;
    let policy = &gate.rs.inner.policy;
    let tool = match method {
        portico_schema::methods::TOOLS_CALL if policy.has_tool_rules() => crate::middleware::tool_name_in(params),
        _ => None,
    };
    let missing = gate.info.missing_scopes(policy.needed(method, tool.as_deref()));
    if missing.is_empty() {
        return None;
    }
    let mut needed: BTreeSet<&str> = policy.needed(method, tool.as_deref()).collect();
    needed.extend(missing);
    let needed: Vec<&str> = needed.into_iter().collect();
    let e = TokenRejection::insufficient_scope(gate.rs.scopes_to_ask(&gate.info, &needed));
    tracing::debug!(method, tool = tool.as_deref(), error = %e, "request refused for its scopes");
    Some(refusal(&gate.rs, &e))
}

/// The HTTP answer for `e`, with its challenge.
pub(crate) fn refusal(rs: &ResourceServer, e: &TokenRejection) -> Response<Body> {
    let (status, error, description) = match e.kind() {
        RejectionKind::Missing => (StatusCode::UNAUTHORIZED, None, None),
        RejectionKind::Malformed => (StatusCode::BAD_REQUEST, Some("invalid_request"), Some(e.to_string())),
        RejectionKind::InsufficientScope => (StatusCode::FORBIDDEN, Some("insufficient_scope"), Some(e.to_string())),
        RejectionKind::Unavailable => {
            let mut r = json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the access token cannot be checked now",
            );
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("5"));
            return r;
        }
        // InvalidToken and anything newer.
        _ => (StatusCode::UNAUTHORIZED, Some("invalid_token"), Some(e.to_string())),
    };
    let scopes = match e.kind() {
        RejectionKind::InsufficientScope => e.needed_scopes(),
        _ => rs.challenge_scopes(),
    };
    // Refresh tokens are the client's business: challenges do not ask for them (2026-07-28).
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).filter(|s| *s != "offline_access").collect();
    let mut challenge = String::from("Bearer ");
    let mut params = Vec::new();
    if let Some(error) = error {
        params.push(format!("error=\"{error}\""));
    }
    if let Some(d) = &description {
        params.push(format!("error_description=\"{}\"", quoted(d)));
    }
    if !scopes.is_empty() {
        params.push(format!("scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    params.push(format!("resource_metadata=\"{}\"", quoted(rs.metadata_url())));
    challenge.push_str(&params.join(", "));
    let mut r = json_response(status, error.unwrap_or("unauthorized"), description.as_deref().unwrap_or(""));
    match HeaderValue::from_str(&challenge) {
        Ok(v) => {
            r.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        Err(_) => {
            r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
    }
    r
}

/// The text of an RFC 9110 quoted-string: printable ASCII without `"` and `\`.
fn quoted(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').filter(|c| *c != '"' && *c != '\\').take(300).collect()
}

fn json_response(status: StatusCode, error: &str, description: &str) -> Response<Body> {
    let body = serde_json::json!({ "error": error, "error_description": description });
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        assert_eq!(bearer_token(&headers(&["Bearer abc.DEF-_~+/=="])).ok(), Some("abc.DEF-_~+/=="));
        assert_eq!(bearer_token(&headers(&["bearer x"])).ok(), Some("x"));
        assert_eq!(bearer_token(&headers(&[])).map_err(|e| e.kind()), Err(RejectionKind::Missing));
        assert_eq!(bearer_token(&headers(&["Basic Zm9vOmJhcg=="])).map_err(|e| e.kind()), Err(RejectionKind::Missing));
        for bad in ["Bearer", "Bearer ", "Bearer a b", "Bearer ===", "Bearer a\"b"] {
            assert_eq!(bearer_token(&headers(&[bad])).map_err(|e| e.kind()), Err(RejectionKind::Malformed), "{bad}");
        }
        assert_eq!(
            bearer_token(&headers(&["Bearer a", "Bearer b"])).map_err(|e| e.kind()),
            Err(RejectionKind::Malformed)
        );
    }

    struct Never;

    impl super::super::TokenValidator for Never {
        fn validate<'a>(&'a self, _: &'a str) -> super::super::ValidateFuture<'a> {
            Box::pin(async { Err(TokenRejection::invalid_token("never")) })
        }
    }

    fn challenge(e: &TokenRejection) -> (StatusCode, String) {
        let rs = ResourceServer::builder("https://mcp.example.com/mcp")
            .authorization_server("https://as.example")
            .scopes_supported(["mcp", "offline_access"])
            .validator(Never)
            .build()
            .expect("rs");
        let r = refusal(&rs, e);
        let c = r.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        (r.status(), c)
    }

    #[test]
    fn challenges_follow_rfc_6750_and_9728() {
        let meta = "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            challenge(&TokenRejection::missing()),
            (StatusCode::UNAUTHORIZED, format!("Bearer scope=\"mcp\", {meta}"))
        );
        assert_eq!(
            challenge(&TokenRejection::invalid_token("bad \"one\"")),
            (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", error_description=\"bad one\", scope=\"mcp\", {meta}")
            )
        );
        let (status, c) = challenge(&TokenRejection::insufficient_scope(["a", "offline_access"]));
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            c.starts_with("Bearer error=\"insufficient_scope\"") && c.contains("scope=\"a\", ") && c.ends_with(&meta),
            "{c}"
        );
        assert_eq!(challenge(&TokenRejection::malformed("x")).0, StatusCode::BAD_REQUEST);
        assert_eq!(challenge(&TokenRejection::unavailable("x")), (StatusCode::SERVICE_UNAVAILABLE, String::new()));
    }

    #[test]
    fn challenge_text_is_sanitized() {
        assert_eq!(quoted("a \"b\"\\c\u{7f}é"), "a bc");
    }
}

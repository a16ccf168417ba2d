//! The protected-resource metadata document (RFC 9728) and where it is served.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

/// The well-known prefix of RFC 9728.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document describing this resource server.
pub(crate) fn document(
    resource: &str,
    authorization_servers: &[String],
    scopes_supported: &[String],
    resource_name: Option<&str>,
) -> Value {
    let mut doc = json!({
        "resource": resource,
        "authorization_servers": authorization_servers,
        "bearer_methods_supported": ["header"],
    });
    if !scopes_supported.is_empty() {
        doc["scopes_supported"] = json!(scopes_supported);
    }
    if let Some(name) = resource_name {
        doc["resource_name"] = json!(name);
    }
    doc
}

/// Where the document is served for `resource`: the path-inserted URL (`/.well-known/…/mcp`)
/// first, which is also the one the challenges name, then the root one; and the full URL of
/// the first.
pub(crate) fn locations(resource: &reqwest::Url) -> (Vec<String>, String) {
    let path = resource.path().trim_end_matches('/');
    let mut paths = Vec::new();
    if !path.is_empty() {
        paths.push(format!("{WELL_KNOWN}{path}"));
    }
    paths.push(WELL_KNOWN.to_string());
    let mut url = resource.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&paths[0]);
    (paths, url.to_string())
}

/// True for a request of the metadata document, which is served without a token.
pub(crate) fn is_metadata_path(path: &str) -> bool {
    path == WELL_KNOWN || path.strip_prefix(WELL_KNOWN).is_some_and(|rest| rest.starts_with('/'))
}

/// The router serving `body` at `paths`.
pub(crate) fn router(paths: &[String], body: Bytes) -> axum::Router {
    let mut r = axum::Router::new();
    for p in paths {
        let body = body.clone();
        r = r.route(p, axum::routing::get(move || async move { serve(body) }));
    }
    r
}

fn serve(body: Bytes) -> Response {
    (
        StatusCode::OK,
        [
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            // Browser-based clients read it cross-origin; it holds nothing secret.
            (ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_insert_the_well_known_prefix() {
        let u = reqwest::Url::parse("https://mcp.example.com/api/mcp/").expect("url");
        let (paths, url) = locations(&u);
        assert_eq!(paths, ["/.well-known/oauth-protected-resource/api/mcp", "/.well-known/oauth-protected-resource"]);
        assert_eq!(url, "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp");
        let u = reqwest::Url::parse("https://mcp.example.com").expect("url");
        assert_eq!(locations(&u).0, ["/.well-known/oauth-protected-resource"]);
        assert!(is_metadata_path("/.well-known/oauth-protected-resource/mcp"));
        assert!(!is_metadata_path("/.well-known/oauth-protected-resourcex"));
    }
}

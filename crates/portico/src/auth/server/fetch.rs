//! Talking to the authorization server: bounded JSON fetches, and metadata discovery
//! (RFC 8414 / OpenID Connect Discovery).

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::{ConfigError, TokenRejection};

/// The largest metadata, JWKS or introspection document read (1 MiB).
pub(crate) const MAX_DOCUMENT: usize = 1024 * 1024;

/// The HTTP client for the authorization server: no redirects, a timeout, https (or plain
/// http to loopback only, for development and tests).
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, ConfigError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .map_err(|e| ConfigError(format!("cannot build the HTTP client: {e}")))
}

/// Checks that `url` is absolute https, or http on a loopback host.
pub(crate) fn check_url(what: &str, url: &str) -> Result<reqwest::Url, ConfigError> {
    let u = reqwest::Url::parse(url).map_err(|e| ConfigError(format!("{what} {url:?} is not a URL: {e}")))?;
    let host = u.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match u.scheme() {
        "https" => Ok(u),
        "http" if loopback => Ok(u),
        _ => Err(ConfigError(format!("{what} {url:?} must use https (plain http only on loopback)"))),
    }
}

/// Reads a response body of at most [`MAX_DOCUMENT`] bytes and decodes it as JSON.
pub(crate) async fn read_json<T: DeserializeOwned>(what: &str, mut r: reqwest::Response) -> Result<T, TokenRejection> {
    if r.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
        return Err(TokenRejection::unavailable(format!("{what} is larger than {MAX_DOCUMENT} bytes")));
    }
    let mut body = Vec::new();
    while let Some(chunk) =
        r.chunk().await.map_err(|e| TokenRejection::unavailable(format!("reading {what} failed: {e}")))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(TokenRejection::unavailable(format!("{what} is larger than {MAX_DOCUMENT} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| TokenRejection::unavailable(format!("{what} is not valid JSON: {e}")))
}

/// GETs a JSON document; a non-2xx answer is an error.
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    what: &str,
    url: &reqwest::Url,
) -> Result<T, TokenRejection> {
    let r =
        client.get(url.clone()).header("accept", "application/json").send().await.map_err(|e| {
            TokenRejection::unavailable(format!("fetching {what} from {url} failed: {}", e.without_url()))
        })?;
    if !r.status().is_success() {
        return Err(TokenRejection::unavailable(format!("fetching {what} from {url}: HTTP {}", r.status())));
    }
    read_json(what, r).await
}

/// What the resource server needs from the authorization server's metadata.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AsMetadata {
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) jwks_uri: Option<String>,
    #[serde(default)]
    pub(crate) introspection_endpoint: Option<String>,
}

/// The well-known metadata URLs of `issuer`, in the order the MCP spec gives (RFC 8414 first,
/// then OpenID Connect Discovery, path-inserted and then path-appended).
pub(crate) fn metadata_urls(issuer: &reqwest::Url) -> Vec<reqwest::Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut base = issuer.clone();
    base.set_query(None);
    base.set_fragment(None);
    let at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u
    };
    if path.is_empty() {
        vec![at("/.well-known/oauth-authorization-server".into()), at("/.well-known/openid-configuration".into())]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Fetches the metadata of `issuer`, trying each well-known URL in turn; the document's
/// `issuer` must be exactly `issuer` (RFC 8414 §3.3), or it is not used.
pub(crate) async fn discover(client: &reqwest::Client, issuer: &str) -> Result<AsMetadata, TokenRejection> {
    let url = reqwest::Url::parse(issuer).map_err(|e| TokenRejection::unavailable(format!("bad issuer URL: {e}")))?;
    let mut last = TokenRejection::unavailable(format!("no metadata found for {issuer}"));
    for candidate in metadata_urls(&url) {
        match get_json::<AsMetadata>(client, "authorization server metadata", &candidate).await {
            Ok(m) if m.issuer == issuer => return Ok(m),
            Ok(m) => {
                last = TokenRejection::unavailable(format!(
                    "metadata at {candidate} names issuer {:?}, not {issuer:?}",
                    m.issuer
                ));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        metadata_urls(&reqwest::Url::parse(issuer).expect("url")).into_iter().map(String::from).collect()
    }

    #[test]
    fn discovery_order_follows_the_spec() {
        assert_eq!(
            urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://as.example/tenant1/"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("x", "https://as.example").is_ok());
        assert!(check_url("x", "http://127.0.0.1:9/").is_ok());
        assert!(check_url("x", "http://localhost/").is_ok());
        assert!(check_url("x", "http://[::1]:80/").is_ok());
        assert!(check_url("x", "http://as.example").is_err());
        assert!(check_url("x", "ftp://127.0.0.1").is_err());
        assert!(check_url("x", "not a url").is_err());
    }
}

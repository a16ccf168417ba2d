//! The POSTs of the client's messages to a plain `http://` endpoint, sent by hyper's pooled
//! client without reqwest's layers.
//!
//! reqwest wraps each request in its redirect and retry layers: the redirect layer prints and
//! parses the URL again on every request, whatever the policy, and a `reqwest::Response` parses
//! one more URL when it is made from anything else. Through a gateway that was about a sixth of
//! the instructions an upstream call costs. The POSTs that carry the client's messages to the
//! endpoint (its requests, notifications and answers: the hot path) go out here instead when
//! nothing reqwest adds applies to them:
//!
//! - the URL is `http://` (no TLS to configure) without a user or password (which reqwest sends
//!   as basic authorization);
//! - the transport builds its own client (the user gave no `reqwest::Client` of their own);
//! - no proxy is set in the environment (`HTTP_PROXY`, `ALL_PROXY`, either case), and the
//!   system is not macOS or Windows, whose own proxy settings reqwest may read;
//! - no OAuth client authorizes the requests.
//!
//! Otherwise, and for every `GET`, `DELETE` and legacy `POST`, reqwest sends them. A redirect
//! answered here is sent again through reqwest, whose policy decides whether to follow it.
//! Pooling, and sending again a request whose reused connection the server had closed before it
//! was written, are hyper's ([`Client`]); a connection that closed after the request was
//! written and before any answer is retried once here, as [`super::shared::execute`] does.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{HOST, HeaderMap, HeaderValue};
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::Url;

use super::shared;
use crate::sync::lock;
use crate::transport::pinned;

/// The environment variables that give reqwest a proxy for `http://` URLs.
const PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// TCP keepalive's idle time and probe interval, as reqwest sets them.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(15);

type Pooled = Client<HttpConnector, Full<Bytes>>;

/// A pooled HTTP/1.1 client for one endpoint.
pub(super) struct Direct {
    client: Pooled,
    /// A pool for each pinned thread that posted (`transport::pinned`), by its mark: its
    /// connections' tasks run on that thread.
    per_thread: std::sync::Mutex<Vec<(u64, Pooled)>>,
    /// What each pool connects with.
    connector: HttpConnector,
    uri: Uri,
    /// `Host`, made once: hyper would format it for every request.
    host: HeaderValue,
}

/// Why a direct exchange did not happen.
pub(super) type Error = hyper_util::client::legacy::Error;

impl Direct {
    /// A client for `url`, when nothing reqwest would add applies to it (see the module's
    /// documentation); `None` otherwise.
    pub(super) fn for_url(url: &Url) -> Option<Direct> {
        // There reqwest may also read the system's proxy settings.
        if cfg!(any(target_os = "macos", target_os = "windows")) {
            return None;
        }
        let uri = eligible(url, |name| std::env::var_os(name))?;
        let host = host_header(&uri)?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        // reqwest's TCP keepalive, so a pooled connection to a host that vanished is found out
        // the same way on both paths.
        connector.set_keepalive(Some(KEEPALIVE));
        connector.set_keepalive_interval(Some(KEEPALIVE));
        connector.set_keepalive_retries(Some(3));
        Some(Direct { client: pool(connector.clone()), connector, per_thread: Default::default(), uri, host })
    }

    /// POSTs `body` with `headers`; once more when the connection closed before any answer
    /// began.
    pub(super) async fn post(
        &self,
        headers: impl Fn() -> HeaderMap,
        body: &Bytes,
    ) -> Result<Response<Incoming>, Error> {
        let client = self.client();
        match client.request(self.request(headers(), body)).await {
            Err(e) if !e.is_connect() && shared::closed_early(&e) => {
                tracing::debug!("the connection was closed before an answer began: sending once more ({e})");
                client.request(self.request(headers(), body)).await
            }
            other => other,
        }
    }

    /// The pool of the calling thread: its own on a pinned thread, else the shared one.
    fn client(&self) -> Cow<'_, Pooled> {
        let Some(mark) = pinned::this_thread() else { return Cow::Borrowed(&self.client) };
        let mut pools = lock(&self.per_thread);
        if let Some((_, pool)) = pools.iter().find(|(m, _)| *m == mark) {
            return Cow::Owned(pool.clone());
        }
        let pool = pool(self.connector.clone());
        pools.push((mark, pool.clone()));
        Cow::Owned(pool)
    }

    fn request(&self, headers: HeaderMap, body: &Bytes) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body.clone()));
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = headers;
        // A `Host` of the user's own (a `header` of the builder) stays, as hyper would keep it.
        req.headers_mut().entry(HOST).or_insert_with(|| self.host.clone());
        req
    }
}

/// A pool of connections made by `connector`, their tasks spawned on the runtime that makes them.
fn pool(connector: HttpConnector) -> Pooled {
    Client::builder(TokioExecutor::new()).timer(TokioTimer::new()).pool_timer(TokioTimer::new()).build(connector)
}

/// The URI to send to when `url` may go out on the direct path, with `env` the process's
/// environment.
fn eligible(url: &Url, env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<Uri> {
    let proxied = PROXY_VARS.iter().any(|v| env(v).is_some_and(|v| !v.is_empty()));
    // reqwest sends a URL's user and password as basic authorization.
    let credentials = !url.username().is_empty() || url.password().is_some();
    if url.scheme() != "http" || proxied || credentials {
        return None;
    }
    url.as_str().parse().ok()
}

/// `Host` as hyper writes it: the host, and the port unless it is the scheme's default.
fn host_header(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let value = match uri.port_u16().filter(|p| *p != 80) {
        Some(port) => HeaderValue::from_str(&format!("{host}:{port}")),
        None => HeaderValue::from_str(host),
    };
    value.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn only_plain_http_without_a_proxy_goes_direct() {
        let none = |_: &str| None;
        let uri = eligible(&url("http://127.0.0.1:8080/mcp?x=1"), none).expect("plain http goes direct");
        assert_eq!(uri.to_string(), "http://127.0.0.1:8080/mcp?x=1");
        assert_eq!(eligible(&url("https://example.com/mcp"), none), None, "TLS stays with reqwest");
        assert_eq!(eligible(&url("http://me:secret@127.0.0.1/mcp"), none), None, "basic auth stays with reqwest");
        assert_eq!(eligible(&url("http://me@127.0.0.1/mcp"), none), None, "a user name too");
        assert!(eligible(&url("http://[::1]:8080/mcp"), none).is_some(), "IPv6 loopback");
        for var in PROXY_VARS {
            let set = |name: &str| (name == var).then(|| "http://proxy:3128".into());
            assert_eq!(eligible(&url("http://127.0.0.1/mcp"), set), None, "{var} set: reqwest's proxy applies");
            let empty = |name: &str| (name == var).then(std::ffi::OsString::new);
            assert!(eligible(&url("http://127.0.0.1/mcp"), empty).is_some(), "{var} empty: no proxy");
        }
        let other = |name: &str| (name == "HTTPS_PROXY").then(|| "http://proxy:3128".into());
        assert!(eligible(&url("http://127.0.0.1/mcp"), other).is_some(), "an https proxy is not for http");
    }

    #[cfg(feature = "http-server")]
    #[test]
    fn a_pinned_thread_gets_a_pool_of_its_own_once() {
        let direct = Direct {
            client: pool(HttpConnector::new()),
            per_thread: Default::default(),
            connector: HttpConnector::new(),
            uri: Uri::from_static("http://127.0.0.1/mcp"),
            host: HeaderValue::from_static("127.0.0.1"),
        };
        assert!(matches!(direct.client(), Cow::Borrowed(_)), "a thread that is not pinned shares the pool");
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    pinned::pin_this_thread();
                    assert!(matches!(direct.client(), Cow::Owned(_)), "a pinned thread has its own");
                    let _ = direct.client();
                });
            }
        });
        assert_eq!(lock(&direct.per_thread).len(), 2, "one pool per pinned thread, each made once");
        assert!(matches!(direct.client(), Cow::Borrowed(_)), "and this thread still shares the pool");
    }

    #[test]
    fn the_host_header_is_what_hyper_would_write() {
        let host = |s: &str| {
            let uri = eligible(&url(s), |_: &str| None).expect("direct");
            host_header(&uri).map(|v| v.to_str().expect("ascii").to_owned())
        };
        assert_eq!(host("http://127.0.0.1:8080/mcp").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(host("http://example.com/mcp").as_deref(), Some("example.com"));
        assert_eq!(host("http://example.com:80/mcp").as_deref(), Some("example.com"), "the default port is left out");
        assert_eq!(host("http://[::1]:8080/mcp").as_deref(), Some("[::1]:8080"));
    }
}

//! How the user's agent gets to the authorization endpoint and back: the
//! [`RedirectHandler`] trait, a headless handler (tests, conformance) and a loopback listener
//! for command-line programs (RFC 8252 §7.3).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use reqwest::Url;
use reqwest::header::LOCATION;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::AuthError;

/// Takes the user to the authorization URL and returns the URL the authorization server
/// redirected back to (carrying `code`, `state`, `iss` or `error`).
pub trait RedirectHandler: Send + Sync + 'static {
    /// The `redirect_uri` registered and sent in authorization requests.
    fn redirect_uri(&self) -> String;

    /// Sends the user to `authorization_url` and waits for the redirect back. `http` is a
    /// client that does not follow redirects.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the authorization.
    fn authorize<'a>(
        &'a self,
        http: &'a reqwest::Client,
        authorization_url: Url,
    ) -> BoxFuture<'a, Result<Url, AuthError>>;
}

/// Follows the authorization URL itself and reads the `Location` of the redirect: for
/// authorization servers that approve without a user (tests, the conformance suite).
#[derive(Debug, Clone)]
pub struct HeadlessRedirect {
    redirect_uri: String,
}

impl HeadlessRedirect {
    /// A handler announcing `redirect_uri` (never contacted).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        HeadlessRedirect { redirect_uri: redirect_uri.into() }
    }
}

impl Default for HeadlessRedirect {
    /// `http://localhost:3000/callback`.
    fn default() -> Self {
        HeadlessRedirect::new("http://localhost:3000/callback")
    }
}

impl RedirectHandler for HeadlessRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(&'a self, http: &'a reqwest::Client, url: Url) -> BoxFuture<'a, Result<Url, AuthError>> {
        Box::pin(async move {
            let resp = http.get(url.clone()).send().await.map_err(|e| AuthError::http(url.as_str(), e))?;
            let status = resp.status();
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| AuthError::Redirect(format!("{url} answered HTTP {status} without a Location")))?;
            url.join(location).map_err(|e| AuthError::Redirect(format!("{url} redirected to an invalid URL: {e}")))
        })
    }
}

/// Callback given the authorization URL to show or open for the user.
pub type OpenUrl = Arc<dyn Fn(&Url) + Send + Sync>;

/// Listens on `127.0.0.1` for the redirect back: the authorization URL is handed to a
/// callback (print it, or open a browser), and the first request to the callback path ends
/// the wait.
pub struct LoopbackRedirect {
    listener: tokio::sync::Mutex<TcpListener>,
    port: u16,
    open: OpenUrl,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect").field("port", &self.port).finish_non_exhaustive()
    }
}

/// The path of the loopback redirect URI.
const CALLBACK_PATH: &str = "/callback";
/// The largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

impl LoopbackRedirect {
    /// Binds `127.0.0.1:port` (`0` for any free port). `open` is called with each
    /// authorization URL.
    ///
    /// # Errors
    /// When the port cannot be bound.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped future binds nothing.
    pub async fn bind(port: u16, open: impl Fn(&Url) + Send + Sync + 'static) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackRedirect {
            listener: tokio::sync::Mutex::new(listener),
            port,
            open: Arc::new(open),
            timeout: Duration::from_secs(300),
        })
    }

    /// The longest wait for the user (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    async fn wait(&self) -> Result<Url, AuthError> {
        let listener = self.listener.lock().await;
        loop {
            let (mut sock, _) = listener.accept().await.map_err(|e| AuthError::Redirect(e.to_string()))?;
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
                match sock.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
            let target = line.split(' ').nth(1).unwrap_or_default();
            let Ok(url) = Url::parse(&format!("http://127.0.0.1:{}{target}", self.port)) else { continue };
            if url.path() != CALLBACK_PATH {
                let _ =
                    sock.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                continue;
            }
            let body = "Authorization complete. You can close this window.";
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
            return Ok(url);
        }
    }
}

impl RedirectHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    fn authorize<'a>(&'a self, _http: &'a reqwest::Client, url: Url) -> BoxFuture<'a, Result<Url, AuthError>> {
        Box::pin(async move {
            (self.open)(&url);
            tokio::time::timeout(self.timeout, self.wait())
                .await
                .map_err(|_| AuthError::Redirect(format!("no redirect back within {:?}", self.timeout)))?
        })
    }
}

//! The admin listener: the approvals API, the host's servers, tools, calls in progress, the
//! activity log and the policy, and (with [`Admin::with_ui`]) the web UI. Separate from the
//! MCP endpoint, on loopback by default, and never without a token.
//!
//! Every endpoint, its request, answer and errors: `docs/admin-api.md`. In short:
//!
//! | method and path | what |
//! |---|---|
//! | `GET /approvals`, `GET /approvals/events`, `POST /approvals/{id}` | pending approvals, live, answered |
//! | `GET /servers`, `POST /servers/{name}/restart`, `POST /servers/{name}/enable`, `…/disable` | upstreams |
//! | `GET /tools`, `POST /tools/{name}/call`, `POST /tools/{name}/enabled` | the registry's tools |
//! | `GET /sessions` | the downstream client sessions |
//! | `GET /calls`, `GET /calls/events`, `POST /calls/{id}/cancel` | calls in progress |
//! | `GET /log`, `GET /log/events`, `GET /log/{id}`, `POST /log/verify` | the activity log |
//! | `GET /policy`, `POST /policy/explain`, `GET /policy/always`, `DELETE /policy/always/{id}` | policy |
//! | `GET /ui/…`, `GET /ui/login`, `GET /ui/session`, `POST /ui/logout`, `POST /ui/login-links` | the web UI |
//!
//! A request is let in by `Authorization: Bearer <token>` (the `[admin] token` of the config,
//! or the one generated into the state directory's `admin-token`, mode 0600), or, with the UI
//! on, by the session cookie a one-time login link set; a state-changing request on a session
//! must also carry the session's CSRF token in `X-Portico-CSRF` and an `Origin` that is the
//! listener. `Host` must name the listener itself (loopback names only) and a browser's
//! `Origin` must be it too: a web page elsewhere cannot reach the API through DNS rebinding.

mod approvals;
mod calls;
mod log;
mod policy;
mod servers;
mod session;
mod ui;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::Stream;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::Host;
use crate::approvals::Approvals;
use crate::config::{Config, Secret};
use crate::oversight::Supervisor;
use session::Sessions;

/// The header a browser session's state-changing requests carry their CSRF token in.
pub const CSRF_HEADER: &str = "x-portico-csrf";

/// The Content-Security-Policy of every answer: this origin's own files only, no inline
/// script or style, no framing; images and audio in results come as `data:` URLs.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       media-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; \
                       form-action 'self'; frame-ancestors 'none'";

/// What the admin routes need.
#[derive(Clone)]
pub struct Admin {
    host: Host,
    approvals: Approvals,
    token: Secret,
    listen: SocketAddr,
    supervisor: Option<Arc<Supervisor>>,
    sessions: Option<Sessions>,
    /// `[auth]`: OAuth tokens this resource server accepts are taken in place of the admin
    /// token.
    oauth: Option<portico::auth::server::ResourceServer>,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin")
            .field("listen", &self.listen)
            .field("ui", &self.sessions.is_some())
            .finish_non_exhaustive()
    }
}

/// The admin token: the config's, or the one kept in the state directory (made at first use,
/// 32 random bytes as hex, mode 0600).
///
/// # Errors
/// When the state directory cannot be written or the file read.
pub fn token(config: &Config) -> std::io::Result<Secret> {
    if let Some(t) = &config.admin.token {
        return Ok(t.clone());
    }
    token_file(&config.gateway.state_dir)
}

/// 32 random bytes as hex.
pub(crate) fn random_hex() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn token_file(state_dir: &Path) -> std::io::Result<Secret> {
    let path = state_dir.join("admin-token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        let t = t.trim();
        if t.len() >= 16 {
            return Ok(Secret::new(t));
        }
    }
    std::fs::create_dir_all(state_dir)?;
    let t = random_hex();
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&tmp)?.write_all(t.as_bytes())?;
    }
    std::fs::rename(&tmp, &path)?;
    Ok(Secret::new(t))
}

/// Who made a request, as the guard found out: the bearer token's holder (`admin`, channel
/// `http`) or a browser session (`ui:<id>`, channel `ui`).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) principal: String,
    pub(crate) channel: &'static str,
}

impl Admin {
    /// The admin routes for `host` and its `approvals`, listening on `listen`, with `token`.
    pub fn new(host: Host, approvals: Approvals, token: Secret, listen: SocketAddr) -> Admin {
        Admin { host, approvals, token, listen, supervisor: None, sessions: None, oauth: None }
    }

    /// Serves the policy and the activity log of `supervisor` too (`/policy`, `/log`).
    #[must_use]
    pub fn with_supervisor(mut self, supervisor: Arc<Supervisor>) -> Admin {
        self.supervisor = Some(supervisor);
        self
    }

    /// Also takes OAuth access tokens that `server` accepts (audience, signature, the admin
    /// scopes: [`crate::auth::admin_resource_server`]) in place of the admin token; the
    /// token's subject is the caller.
    #[must_use]
    pub fn with_oauth(mut self, server: portico::auth::server::ResourceServer) -> Admin {
        self.oauth = Some(server);
        self
    }

    /// Serves the web UI at `/ui/`, with browser sessions started by one-time login links
    /// ([`login_link`](Self::login_link)).
    #[must_use]
    pub fn with_ui(mut self) -> Admin {
        self.sessions = Some(Sessions::default());
        self
    }

    /// A new one-time login link for the web UI (`None` when the UI is off): opening it starts
    /// a browser session. Each link works once.
    pub fn login_link(&self) -> Option<String> {
        self.login_link_for(None)
    }

    /// A login link whose session stands for `principal` (`None`: a principal of its own).
    fn login_link_for(&self, principal: Option<String>) -> Option<String> {
        let token = self.sessions.as_ref()?.new_login_for(principal);
        Some(format!("http://{}/ui/login?token={token}", self.base_host()))
    }

    /// `host:port` as a browser should write it.
    fn base_host(&self) -> String {
        if self.listen.ip().is_unspecified() {
            format!("127.0.0.1:{}", self.listen.port())
        } else {
            self.listen.to_string()
        }
    }

    /// The routes, behind the token (or session) and Host/Origin checks.
    pub fn router(&self) -> axum::Router {
        use axum::routing::{delete, get, post};
        let mut router = axum::Router::new()
            .route("/approvals", get(approvals::list))
            .route("/approvals/events", get(approvals::events))
            .route("/approvals/{id}", post(approvals::answer))
            .route("/servers", get(servers::list))
            .route("/servers/{name}/restart", post(servers::restart))
            .route("/servers/{name}/enable", post(servers::enable))
            .route("/servers/{name}/disable", post(servers::disable))
            .route("/tools", get(servers::tools))
            .route("/tools/{name}/call", post(servers::call))
            .route("/tools/{name}/enabled", post(servers::switch))
            .route("/sessions", get(servers::sessions))
            .route("/calls", get(calls::list))
            .route("/calls/events", get(calls::events))
            .route("/calls/{id}/cancel", post(calls::cancel))
            .route("/log", get(log::list))
            .route("/log/events", get(log::events))
            .route("/log/verify", post(log::verify))
            .route("/log/{id}", get(log::show))
            .route("/policy", get(policy::rules))
            .route("/policy/explain", post(policy::explain))
            .route("/policy/always", get(policy::always))
            .route("/policy/always/{id}", delete(policy::revoke))
            .route("/metrics", get(metrics));
        if self.sessions.is_some() {
            router = router
                .route("/", get(ui::to_ui))
                .route("/ui", get(ui::to_ui))
                .route("/ui/", get(ui::index))
                .route("/ui/assets/{file}", get(ui::asset))
                .route("/ui/login", get(session::login))
                .route("/ui/session", get(session::info))
                .route("/ui/logout", post(session::logout))
                .route("/ui/login-links", post(session::new_link));
        }
        router.layer(axum::middleware::from_fn_with_state(self.clone(), guard)).with_state(self.clone())
    }

    /// Serves the routes on `listener` until `shutdown` completes.
    ///
    /// # Errors
    /// When accepting fails fatally.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        // The SDK's accept loop: a header read timeout and a connection cap (slow peers).
        portico::transport::http::server::serve_app(listener, self.router(), shutdown, Default::default()).await
    }
}

/// Equal without saying where they differ: both are hashed first, then compared whole.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An error answer to be: `{"error": why}` with its status.
#[derive(Debug)]
pub(crate) struct Refusal(StatusCode, String);

impl Refusal {
    pub(crate) fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal(status, why.into())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        refuse(self.0, &self.1)
    }
}

/// An error answer: `{"error": why}` with `status`.
pub(crate) fn refuse(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "error": why }))).into_response()
}

/// The listener's own names: what `Host` and `Origin` may say.
fn allowed_host(host: &str, port: u16) -> bool {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")].iter().any(|h| h == host)
}

async fn guard(State(admin): State<Admin>, headers: HeaderMap, mut request: Request, next: Next) -> Response {
    let port = admin.listen.port();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !(allowed_host(host, port) || admin.listen.ip().is_unspecified() || host == admin.listen.to_string()) {
        return refuse(StatusCode::FORBIDDEN, "Host is not this listener");
    }
    let origin = headers.get(header::ORIGIN).map(|o| o.to_str().unwrap_or(""));
    if let Some(origin) = origin {
        let ok = origin.strip_prefix("http://").is_some_and(|o| allowed_host(o, port) || o == admin.listen.to_string());
        if !ok {
            return refuse(StatusCode::FORBIDDEN, "Origin is not this listener");
        }
    }
    let caller = match oauth_caller(&admin, &headers).await {
        Some(Ok(caller)) => Some(caller),
        Some(Err(why)) => {
            let mut r = refuse(StatusCode::UNAUTHORIZED, &format!("the access token was refused: {why}"));
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        None => match authenticate(&admin, &headers, request.method(), request.uri().path()) {
            Ok(caller) => caller,
            Err(refusal) => return *refusal,
        },
    };
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    let mut response = next.run(request).await;
    secure(response.headers_mut());
    response
}

/// A bearer token that is not the admin token, checked as an OAuth access token when
/// `[auth]` is on; `None` when there is none to check.
async fn oauth_caller(admin: &Admin, headers: &HeaderMap) -> Option<Result<Caller, String>> {
    let server = admin.oauth.as_ref()?;
    let given =
        headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer "))?;
    if same_secret(given, admin.token.expose()) {
        return None;
    }
    Some(
        server
            .authorize(headers)
            .await
            .map(|info| Caller { principal: crate::auth::principal_of(&info), channel: "http" })
            .map_err(|e| e.to_string()),
    )
}

/// Who is asking: `Ok(None)` for the login link (its handler checks the token), a refusal when
/// nobody is.
fn authenticate(
    admin: &Admin,
    headers: &HeaderMap,
    method: &Method,
    path: &str,
) -> Result<Option<Caller>, Box<Response>> {
    // The login link checks its own token; the UI's static files hold nothing secret (the
    // page that asks to log in uses the stylesheet).
    if admin.sessions.is_some() && (path == "/ui/login" || (method == Method::GET && path.starts_with("/ui/assets/"))) {
        return Ok(None);
    }
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer "));
    if let Some(given) = bearer {
        if same_secret(given, admin.token.expose()) {
            return Ok(Some(Caller { principal: "admin".to_owned(), channel: "http" }));
        }
        return Err(Box::new(unauthorized(admin, path)));
    }
    let Some(sessions) = &admin.sessions else { return Err(Box::new(unauthorized(admin, path))) };
    let Some(session) = sessions.find(headers) else { return Err(Box::new(unauthorized(admin, path))) };
    if !(method == Method::GET || method == Method::HEAD) {
        // A form or script elsewhere cannot make these: the cookie is SameSite=Strict, the
        // token is only readable by this origin's script, and the Origin must be this one.
        if headers.get(header::ORIGIN).is_none() {
            return Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                "a state-changing request from a browser must carry Origin",
            )));
        }
        let site = headers.get("sec-fetch-site").and_then(|h| h.to_str().ok());
        if site.is_some_and(|s| s != "same-origin") {
            return Err(Box::new(refuse(StatusCode::FORBIDDEN, "the request does not come from this origin")));
        }
        let csrf = headers.get(CSRF_HEADER).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !same_secret(csrf, &session.csrf) {
            return Err(Box::new(refuse(StatusCode::FORBIDDEN, "the CSRF token is missing or wrong")));
        }
    }
    Ok(Some(Caller { principal: session.principal, channel: "ui" }))
}

fn unauthorized(admin: &Admin, path: &str) -> Response {
    if admin.sessions.is_some() && (path == "/" || path.starts_with("/ui")) {
        return ui::login_needed();
    }
    let mut r = refuse(StatusCode::UNAUTHORIZED, "a bearer token is required (see admin-token in the state directory)");
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The headers every answer carries.
fn secure(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// A stream fed by a task: events as JSON `data:` lines. The task ends when the client goes.
pub(crate) fn sse<F, Fut>(f: F) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<serde_json::Value>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let value = rx.recv().await?;
        Some((Ok(SseEvent::default().data(value.to_string())), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// Forwards `rx`'s events to an SSE stream until the client goes; a watcher that fell behind
/// is told to reload (`{"event": "lagged"}`).
pub(crate) async fn forward<T: serde::Serialize + Clone>(
    mut rx: tokio::sync::broadcast::Receiver<T>,
    tx: tokio::sync::mpsc::Sender<serde_json::Value>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let value = match rx.recv().await {
            Ok(event) => serde_json::to_value(&event).unwrap_or_default(),
            Err(RecvError::Lagged(_)) => json!({ "event": "lagged" }),
            Err(RecvError::Closed) => return,
        };
        if tx.send(value).await.is_err() {
            return;
        }
    }
}

/// The host's metrics, in the OpenMetrics text format Prometheus scrapes.
async fn metrics(State(admin): State<Admin>) -> Response {
    let body = admin.host.metrics(admin.approvals.list().len());
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body).into_response()
}

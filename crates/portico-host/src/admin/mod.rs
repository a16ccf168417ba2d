//! The admin listener: the approvals API (and, later, the web UI), separate from the MCP
//! endpoint, on loopback by default, and never without a token.
//!
//! | method and path | what |
//! |---|---|
//! | `GET /approvals` | the pending approvals, oldest first |
//! | `POST /approvals/{id}` | `{"decision": "allow_once" \| "allow_session" \| "allow_always" \| "deny"}`; 404 when not pending (answered already, expired) |
//! | `GET /approvals/events` | the same, live, as server-sent events |
//! | `GET /servers` | every upstream's status |
//! | `POST /servers/{name}/restart` | restarts one upstream |
//! | `GET /tools` | the registry's tools |
//!
//! Every request needs `Authorization: Bearer <token>`: the `[admin] token` of the config, or
//! the one generated into the state directory (`admin-token`, mode 0600) at first start.
//! `Host` must name the listener itself (loopback names only) and a browser's `Origin` must be
//! it too: a web page elsewhere cannot reach the API through DNS rebinding.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;

use axum::Json;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Host;
use crate::approvals::{Answer, AnswerError, Approvals, Choice};
use crate::config::{Config, Secret};

/// What the admin routes need.
#[derive(Clone)]
pub struct Admin {
    host: Host,
    approvals: Approvals,
    token: Secret,
    listen: SocketAddr,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").field("listen", &self.listen).finish_non_exhaustive()
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

fn token_file(state_dir: &Path) -> std::io::Result<Secret> {
    let path = state_dir.join("admin-token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        let t = t.trim();
        if t.len() >= 16 {
            return Ok(Secret::new(t));
        }
    }
    std::fs::create_dir_all(state_dir)?;
    let bytes: [u8; 32] = rand::random();
    let t: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
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

impl Admin {
    /// The admin routes for `host` and its `approvals`, listening on `listen`, with `token`.
    pub fn new(host: Host, approvals: Approvals, token: Secret, listen: SocketAddr) -> Admin {
        Admin { host, approvals, token, listen }
    }

    /// The routes, behind the token and Host/Origin checks.
    pub fn router(&self) -> axum::Router {
        use axum::routing::{get, post};
        axum::Router::new()
            .route("/approvals", get(list_approvals))
            .route("/approvals/events", get(approval_events))
            .route("/approvals/{id}", post(answer_approval))
            .route("/servers", get(servers))
            .route("/servers/{name}/restart", post(restart))
            .route("/tools", get(tools))
            .route("/metrics", get(metrics))
            .layer(axum::middleware::from_fn_with_state(self.clone(), guard))
            .with_state(self.clone())
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
        axum::serve(listener, self.router()).with_graceful_shutdown(shutdown).await
    }
}

/// Equal without saying where they differ: both are hashed first, then compared whole.
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "error": why }))).into_response()
}

/// The listener's own names: what `Host` and `Origin` may say.
fn allowed_host(host: &str, port: u16) -> bool {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")].iter().any(|h| h == host)
}

async fn guard(State(admin): State<Admin>, headers: HeaderMap, request: Request, next: Next) -> Response {
    let port = admin.listen.port();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !(allowed_host(host, port) || admin.listen.ip().is_unspecified() || host == admin.listen.to_string()) {
        return refuse(StatusCode::FORBIDDEN, "Host is not this listener");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let ok = origin.strip_prefix("http://").is_some_and(|o| allowed_host(o, port) || o == admin.listen.to_string());
        if !ok {
            return refuse(StatusCode::FORBIDDEN, "Origin is not this listener");
        }
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("");
    if !same_secret(given, admin.token.expose()) {
        let mut r =
            refuse(StatusCode::UNAUTHORIZED, "a bearer token is required (see admin-token in the state directory)");
        r.headers_mut().insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        return r;
    }
    next.run(request).await
}

/// The host's metrics, in the OpenMetrics text format Prometheus scrapes.
async fn metrics(State(admin): State<Admin>) -> Response {
    let body = admin.host.metrics(admin.approvals.list().len());
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body).into_response()
}

async fn list_approvals(State(admin): State<Admin>) -> Response {
    Json(admin.approvals.list()).into_response()
}

#[derive(Deserialize)]
struct Decision {
    decision: String,
    #[serde(default)]
    who: Option<String>,
    /// A sampling request's params as the person edited them.
    #[serde(default)]
    params: Option<Value>,
}

async fn answer_approval(
    State(admin): State<Admin>,
    UrlPath(id): UrlPath<String>,
    Json(d): Json<Decision>,
) -> Response {
    let Some(choice) = Choice::parse(&d.decision) else {
        return refuse(StatusCode::BAD_REQUEST, "decision must be allow_once, allow_session, allow_always or deny");
    };
    let mut answer = Answer::now(choice, "http", d.who.unwrap_or_else(|| "admin".to_owned()));
    if let Some(params) = d.params {
        answer = answer.with_edited(params);
    }
    match admin.approvals.answer(&id, answer) {
        Ok(()) => Json(json!({ "id": id, "decision": choice.as_str() })).into_response(),
        Err(e @ AnswerError::NotEditable(_)) => refuse(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => refuse(StatusCode::NOT_FOUND, &e.to_string()),
    }
}

async fn approval_events(State(admin): State<Admin>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let mut rx = admin.approvals.subscribe();
    let current = admin.approvals.list();
    let stream = async_stream(move |tx| async move {
        for p in current {
            if tx.send(json!({ "event": "requested", "approval": p })).await.is_err() {
                return;
            }
        }
        loop {
            match rx.recv().await {
                Ok(event) => {
                    if tx.send(serde_json::to_value(&event).unwrap_or_default()).await.is_err() {
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// A stream fed by a task: events as JSON `data:` lines.
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<SseEvent, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<serde_json::Value>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(rx, |mut rx| async move {
        let value = rx.recv().await?;
        Some((Ok(SseEvent::default().data(value.to_string())), rx))
    })
}

async fn servers(State(admin): State<Admin>) -> Response {
    Json(admin.host.statuses()).into_response()
}

async fn restart(State(admin): State<Admin>, UrlPath(name): UrlPath<String>) -> Response {
    match admin.host.upstream(&name) {
        Some(up) => {
            up.restart();
            Json(json!({ "restarting": name })).into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such server"),
    }
}

async fn tools(State(admin): State<Admin>) -> Response {
    let registry = admin.host.registry();
    let list: Vec<_> = registry
        .tools
        .values()
        .map(|e| json!({ "name": e.tool.name, "server": e.origin.server, "original": e.origin.name, "tool": e.tool }))
        .collect();
    Json(list).into_response()
}

//! Browser sessions of the web UI: one-time login links, the session cookie, and each
//! session's CSRF token.
//!
//! `portico serve --ui` prints a link with a one-time token. Opening it sets a cookie
//! (`HttpOnly; SameSite=Strict; Path=/`) and redirects to `/ui/`, so the token leaves the
//! address bar at once and works only once. The page reads its CSRF token from
//! `GET /ui/session` (same-origin only: no CORS) and sends it in `X-Portico-CSRF` with every
//! state-changing request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::{Admin, Caller, random_hex, refuse, same_secret};

/// The session cookie's name.
const COOKIE: &str = "portico_session";
/// How long a login link works, unused.
const LOGIN_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a session lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Unused login links kept; older ones stop working.
const MAX_LOGINS: usize = 16;
/// Sessions kept; the oldest ends when one more starts.
const MAX_SESSIONS: usize = 64;

/// One browser session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Sent back in `X-Portico-CSRF`.
    pub(crate) csrf: String,
    /// `ui:<8 hex digits>`: who the session's calls and answers are by.
    pub(crate) principal: String,
    started: Instant,
}

#[derive(Debug, Default)]
struct Book {
    /// Unused login tokens, when made, and whom the session they start stands for (`None`: a
    /// session principal of its own).
    logins: VecDeque<(String, Instant, Option<String>)>,
    sessions: HashMap<String, Session>,
}

/// The login links and sessions of one admin listener. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sessions {
    book: Arc<Mutex<Book>>,
}

impl Sessions {
    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new one-time login token whose session stands for `principal` (an OAuth subject).
    pub(crate) fn new_login_for(&self, principal: Option<String>) -> String {
        let token = random_hex();
        let mut book = self.book();
        if book.logins.len() == MAX_LOGINS {
            book.logins.pop_front();
        }
        book.logins.push_back((token.clone(), Instant::now(), principal));
        token
    }

    /// Uses up the login token `given`, starting a session: its id (the cookie's value).
    fn login(&self, given: &str) -> Option<String> {
        let mut book = self.book();
        let at = book.logins.iter().position(|(t, made, _)| same_secret(t, given) && made.elapsed() < LOGIN_TTL)?;
        let (_, _, who) = book.logins.remove(at)?;
        book.sessions.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        if book.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = book.sessions.iter().min_by_key(|(_, s)| s.started).map(|(id, _)| id.clone())
        {
            book.sessions.remove(&oldest);
        }
        let id = random_hex();
        let principal = who.unwrap_or_else(|| format!("ui:{}", &random_hex()[..8]));
        book.sessions.insert(id.clone(), Session { csrf: random_hex(), principal, started: Instant::now() });
        Some(id)
    }

    /// The live session the request's cookie names.
    pub(crate) fn find(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers)?;
        let book = self.book();
        book.sessions.get(id).filter(|s| s.started.elapsed() < SESSION_TTL).cloned()
    }

    fn end(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers) {
            self.book().sessions.remove(id);
        }
    }
}

/// The session id in the `Cookie` header, if any.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .filter(|v| !v.is_empty())
}

#[derive(Deserialize)]
pub(super) struct Login {
    #[serde(default)]
    token: String,
}

/// `GET /ui/login?token=…`: the token is used up, the session cookie set, and the browser
/// sent on to `/ui/` (so the token leaves the address bar and history keeps no working link).
pub(super) async fn login(State(admin): State<Admin>, Query(q): Query<Login>) -> Response {
    let Some(sessions) = &admin.sessions else { return refuse(StatusCode::NOT_FOUND, "the web UI is off") };
    let Some(id) = sessions.login(&q.token) else {
        return super::ui::login_needed();
    };
    let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", SESSION_TTL.as_secs());
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/ui/")]).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `GET /ui/session`: who this session is and its CSRF token.
pub(super) async fn info(
    State(admin): State<Admin>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    let csrf = admin.sessions.as_ref().and_then(|s| s.find(&headers)).map(|s| s.csrf);
    Json(json!({ "principal": caller.principal, "channel": caller.channel, "csrf": csrf })).into_response()
}

/// `POST /ui/logout`: ends the session.
pub(super) async fn logout(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if let Some(sessions) = &admin.sessions {
        sessions.end(&headers);
    }
    let mut r = Json(json!({ "logged_out": true })).into_response();
    let gone = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    if let Ok(v) = HeaderValue::from_str(&gone) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `POST /ui/login-links` (bearer token only): a new one-time login link.
pub(super) async fn new_link(State(admin): State<Admin>, Extension(caller): Extension<Caller>) -> Response {
    if caller.channel != "http" {
        return refuse(StatusCode::FORBIDDEN, "login links are made with the admin token, not from a browser session");
    }
    // A link asked for with an OAuth token starts a session that stands for its subject; the
    // admin token's, a session of its own.
    let who = (caller.principal != "admin").then_some(caller.principal);
    match admin.login_link_for(who) {
        Some(url) => Json(json!({ "url": url })).into_response(),
        None => refuse(StatusCode::NOT_FOUND, "the web UI is off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_token_works_once_and_the_cookie_finds_the_session() {
        let sessions = Sessions::default();
        let token = sessions.new_login_for(None);
        assert!(sessions.login("not-it").is_none());
        let id = sessions.login(&token).expect("first use");
        assert!(sessions.login(&token).is_none(), "second use");
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(&format!("a=b; {COOKIE}={id}")).expect("header"));
        let s = sessions.find(&headers).expect("session");
        assert!(s.principal.starts_with("ui:") && s.csrf.len() == 64);
        sessions.end(&headers);
        assert!(sessions.find(&headers).is_none());
    }

    #[test]
    fn old_login_links_stop_working() {
        let sessions = Sessions::default();
        let first = sessions.new_login_for(None);
        for _ in 0..MAX_LOGINS {
            sessions.new_login_for(None);
        }
        assert!(sessions.login(&first).is_none());
    }
}

//! The admin listener with the web UI on, over real HTTP: the one-time login link, the
//! session cookie, CSRF and Origin checks on state-changing requests, the security headers,
//! and the bearer token still working beside them. (The UI itself is tested in a browser by
//! `crates/portico-cli/tests/ui.rs`.)

mod common;

use std::sync::Arc;

use portico_host::Host;
use portico_host::admin::{Admin, CSRF_HEADER};
use portico_host::config::Secret;
use portico_host::oversight::Supervisor;
use serde_json::{Value, json};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

async fn start(dir: &std::path::Path) -> (String, Admin, Host) {
    let config = common::config_in(dir, "");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor"));
    let host = Host::with_oversight(config, supervisor.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let admin = Admin::new(host.clone(), supervisor.approvals().clone(), Secret::new(TOKEN), addr)
        .with_supervisor(supervisor)
        .with_ui();
    tokio::spawn(admin.clone().serve(listener, std::future::pending()));
    (format!("http://{addr}"), admin, host)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_link_starts_a_session_whose_changes_need_the_csrf_token() {
    let dir = tempfile::tempdir().expect("tmp");
    let (base, admin, host) = start(dir.path()).await;
    let http = http();

    let r = http.get(format!("{base}/ui/")).send().await.expect("send");
    assert_eq!(r.status(), 401, "no session, no page");
    let link = admin.login_link().expect("the UI is on");
    assert!(link.starts_with(&format!("{base}/ui/login?token=")), "{link}");
    let r = http.get(&link).send().await.expect("send");
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/ui/");
    let cookie = r.headers()["set-cookie"].to_str().expect("ascii").to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let session = cookie.split(';').next().expect("name=value").to_owned();
    assert_eq!(http.get(&link).send().await.expect("send").status(), 401, "the link works once");

    let r = http.get(format!("{base}/ui/")).header("cookie", &session).send().await.expect("send");
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"].to_str().expect("ascii").to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"));
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let me: Value = http
        .get(format!("{base}/ui/session"))
        .header("cookie", &session)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let csrf = me["csrf"].as_str().expect("a CSRF token").to_owned();
    assert!(me["principal"].as_str().is_some_and(|p| p.starts_with("ui:")), "{me}");

    let post = |origin: Option<&str>, token: Option<&str>| {
        let mut req = http.post(format!("{base}/ui/logout")).header("cookie", &session);
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if let Some(t) = token {
            req = req.header(CSRF_HEADER, t);
        }
        req.send()
    };
    assert_eq!(post(Some(&base), None).await.expect("send").status(), 403, "no CSRF token");
    assert_eq!(post(None, Some(&csrf)).await.expect("send").status(), 403, "no Origin");
    assert_eq!(post(Some("http://evil.example"), Some(&csrf)).await.expect("send").status(), 403, "another Origin");
    assert_eq!(post(Some(&base), Some("0000")).await.expect("send").status(), 403, "a wrong token");
    assert_eq!(post(Some(&base), Some(&csrf)).await.expect("send").status(), 200, "the right one");
    let r = http.get(format!("{base}/servers")).header("cookie", &session).send().await.expect("send");
    assert_eq!(r.status(), 401, "logged out");

    // The bearer token keeps working, and only it makes new login links.
    let r = http.post(format!("{base}/ui/login-links")).bearer_auth(TOKEN).send().await.expect("send");
    assert_eq!(r.status(), 200);
    let fresh: Value = r.json().await.expect("json");
    assert!(fresh["url"].as_str().is_some_and(|u| u.contains("/ui/login?token=")), "{fresh}");
    let policy: Value =
        http.get(format!("{base}/policy")).bearer_auth(TOKEN).send().await.expect("send").json().await.expect("json");
    assert_eq!(policy["defaults"]["tools"], json!("ask"));
    let r = http.get(format!("{base}/log")).bearer_auth(TOKEN).send().await.expect("send");
    assert_eq!(r.status(), 404, "no activity log was opened here");
    host.shutdown().await;
}

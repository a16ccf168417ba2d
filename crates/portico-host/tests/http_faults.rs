//! HTTP upstreams that misbehave: a server that lost its sessions (restarted: 404 for the old
//! session id) is re-initialized without the caller noticing; a server answering 500 is
//! reported and does not disturb the others.

mod common;

use std::time::Duration;

use portico::schema::{Implementation, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use portico_host::upstream::State;
use serde_json::json;

fn server() -> Server {
    Server::builder(Implementation::new("http-upstream", "1.0.0"))
        .tool(Tool::new("ping", object(json!({"type": "object"}))), |_: serde_json::Value| async { "pong" })
        .build()
}

async fn serve_on(listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
    let endpoint = StreamableHttp::new(server()).build();
    tokio::spawn(async move {
        let _ = endpoint.serve_with_shutdown(listener, std::future::pending()).await;
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_lost_its_session_is_reinitialized_transparently() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let first = serve_on(listener).await;
    let dir = tempfile::tempdir().expect("tmp");
    // The handshake era keeps a session on the server (2025-11-25 has Mcp-Session-Id).
    let cfg = format!("[servers.web]\nurl = \"http://{addr}/mcp\"\nshared = true\nprotocol_version = \"2025-11-25\"\n");
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(20)).await;
    let r = host.call_tool("web__ping", json!({}), None).await;
    assert_eq!(common::text(&r), "pong");

    // The server restarts: its sessions are gone, the port is the same.
    first.abort();
    let _ = first.await;
    let listener = tokio::net::TcpListener::bind(addr).await.expect("rebind");
    let second = serve_on(listener).await;
    let r = host.call_tool("web__ping", json!({}), None).await;
    assert_eq!(common::text(&r), "pong", "{r:?}");
    assert_eq!(r.is_error, None);
    let status = host.upstream("web").expect("web").status();
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"), "a session-keeping revision");
    assert_eq!(
        (status.restarts, status.state),
        (0, State::Ready),
        "re-initialized in place, not restarted: {status:?}"
    );
    second.abort();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_answering_500_is_reported_and_the_others_carry_on() {
    let app = axum::Router::new().fallback(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let broken = tokio::spawn(async move { axum::serve(listener, app).await });
    let good = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let good_addr = good.local_addr().expect("addr");
    let good_task = serve_on(good).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!(
        "[servers.broken]\nurl = \"http://{addr}/mcp\"\nstartup_timeout = 5\n[servers.broken.restart]\ninitial_backoff = 0.05\nmax_restarts = 2\n\n[servers.good]\nurl = \"http://{good_addr}/mcp\"\nshared = true\n"
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(20)).await;
    let r = host.call_tool("good__ping", json!({}), None).await;
    assert_eq!(common::text(&r), "pong");
    let up = host.upstream("broken").expect("broken");
    let status = common::eventually(Duration::from_secs(30), || {
        let s = up.status();
        (s.state == State::Failed).then_some(s)
    })
    .await
    .unwrap_or_else(|| panic!("never failed: {:?}", up.status()));
    assert!(status.last_error.as_deref().is_some_and(|e| e.contains("500")), "{status:?}");
    broken.abort();
    good_task.abort();
    host.shutdown().await;
}

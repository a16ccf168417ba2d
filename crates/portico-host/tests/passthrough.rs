//! Token passthrough and confused deputy: a downstream client's bearer token is never
//! forwarded to an upstream, and each upstream is sent only its own configured credentials,
//! never another upstream's. The upstreams record every header they receive.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::schema::{Implementation, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::{Value, json};

const DOWNSTREAM: &str = "downstream-token-4e0c1f7a92b3";

type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTP upstream with one tool `t` that records every request header it is sent.
async fn recording_upstream(name: &str) -> (String, Seen) {
    let server = Server::builder(Implementation::new(name, "1.0.0"))
        .tool(Tool::new("t", object(json!({"type": "object"}))), |_: Value| async { "ok" })
        .build();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let router = StreamableHttp::new(server).build().router("/mcp").layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let record = record.clone();
            async move {
                let headers: Vec<String> = req
                    .headers()
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
                    .collect();
                record.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(headers);
                next.run(req).await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/mcp"), seen)
}

async fn post(http: &reqwest::Client, url: &str, sid: Option<&str>, body: Value) -> (Option<String>, String) {
    let mut req = http
        .post(url)
        .header("authorization", format!("Bearer {DOWNSTREAM}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(sid) = sid {
        req = req.header("mcp-session-id", sid);
    }
    let r = req.body(body.to_string()).send().await.expect("post");
    let sid = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (sid, r.text().await.expect("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_token_never_reaches_an_upstream_and_upstreams_never_get_each_others_credentials() {
    let (a_url, a_seen) = recording_upstream("a").await;
    let (b_url, b_seen) = recording_upstream("b").await;
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(common::config_in(
        dir.path(),
        &format!(
            "[servers.a]\nurl = \"{a_url}\"\nshared = true\nheaders = {{ Authorization = \"Bearer key-for-a\" }}\n\n\
             [servers.b]\nurl = \"{b_url}\"\nshared = true\nheaders = {{ X-Api-Key = \"key-for-b\" }}\n"
        ),
    ));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    let endpoint = StreamableHttp::new(gateway.server().clone()).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let served = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });

    // A downstream client that sends its own bearer token with every request.
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let (sid, _) = post(&http, &url, None, init).await;
    let sid = sid.expect("a session");
    post(&http, &url, Some(&sid), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    for (id, tool) in [(2, "a__t"), (3, "b__t")] {
        let call =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
        let (_, body) = post(&http, &url, Some(&sid), call).await;
        assert!(body.contains("\"ok\""), "{tool}: {body}");
    }

    let a = a_seen.lock().expect("a").clone();
    let b = b_seen.lock().expect("b").clone();
    assert!(a.iter().any(|h| h == "authorization: Bearer key-for-a"), "a gets its own credentials: {a:?}");
    assert!(b.iter().any(|h| h == "x-api-key: key-for-b"), "b gets its own credentials: {b:?}");
    for (name, seen, other) in [("a", &a, "key-for-b"), ("b", &b, "key-for-a")] {
        assert!(!seen.iter().any(|h| h.contains(DOWNSTREAM)), "the downstream token reached {name}: {seen:?}");
        assert!(!seen.iter().any(|h| h.contains(other)), "{name} got another upstream's credentials: {seen:?}");
    }
    assert!(!b.iter().any(|h| h.starts_with("authorization:")), "b has no Authorization of its own: {b:?}");
    host.shutdown().await;
    served.abort();
}

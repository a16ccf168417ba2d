//! The HTTP client transport over real loopback sockets: against Portico's own Streamable HTTP
//! server in every era, against small raw servers that misbehave on purpose, and against the
//! reference TypeScript server (`server-everything`) in Streamable HTTP and legacy SSE modes.
#![cfg(all(feature = "http-client", feature = "http-server"))]

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use common::*;
use portico::client::{CallOptions, Client, ClientBuilder, EraMode};
use portico::schema::*;
use portico::server::Server;
use portico::transport::http::client::{HttpClientHandle, HttpClientTransport};
use portico::transport::http::server::{HttpEndpoint, StreamableHttp};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Headers of interest of every request the server received: (HTTP method, headers).
type Seen = Arc<Mutex<Vec<(String, http::HeaderMap)>>>;

struct Srv {
    url: String,
    endpoint: HttpEndpoint,
    server: Server,
    probes: Arc<Probes>,
    seen: Seen,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Srv {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

#[derive(Deserialize)]
struct Regional {
    region: String,
    #[serde(default)]
    count: Option<i64>,
}

/// The fixture server plus a tool with mirrored arguments and one whose annotation is invalid.
fn server(probes: Arc<Probes>) -> Server {
    let server = fixture_server(probes);
    let regional = object(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"}
    }, "required": ["region"]}));
    server.add_tool(Tool::new("regional", regional), |a: Regional| async move {
        format!("{}:{}", a.region, a.count.unwrap_or(0))
    });
    let invalid = object(json!({"type": "object", "properties": {
        "ratio": {"type": "number", "x-mcp-header": "Ratio"}
    }}));
    server.add_tool(Tool::new("bad_header", invalid), |_: Empty| async move { "unreachable" });
    server
}

async fn start(configure: impl FnOnce(StreamableHttp) -> StreamableHttp) -> Srv {
    let probes = Arc::new(Probes::default());
    let server = server(probes.clone());
    let endpoint = configure(StreamableHttp::new(server.clone())).build();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let app =
        endpoint.router("/mcp").layer(axum::middleware::from_fn(move |req: Request, next: axum::middleware::Next| {
            record.lock().expect("seen").push((req.method().to_string(), req.headers().clone()));
            next.run(req)
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Srv { url, endpoint, server, probes, seen, stop: Some(stop) }
}

impl Srv {
    /// The headers of the POSTs whose `Mcp-Method` was `method`.
    fn posts(&self, method: &str) -> Vec<http::HeaderMap> {
        let seen = self.seen.lock().expect("seen");
        seen.iter()
            .filter(|(m, h)| m == "POST" && h.get("mcp-method").is_some_and(|v| v == method))
            .map(|(_, h)| h.clone())
            .collect()
    }
}

fn builder(mode: EraMode, handler: Handler) -> ClientBuilder {
    Client::builder(Implementation::new("http-client-test", "1.0.0"))
        .era(mode)
        .capabilities(all_caps())
        .handler(handler)
        .request_timeout(Duration::from_secs(20))
}

async fn connect(url: &str, mode: EraMode, handler: Handler) -> (Client, HttpClientHandle) {
    let transport = HttpClientTransport::new(url);
    let handle = transport.handle();
    let client = tokio::time::timeout(Duration::from_secs(20), builder(mode, handler).connect(transport))
        .await
        .expect("connect in time")
        .expect("connect");
    (client, handle)
}

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// A request's answer never overtakes the progress notifications before it on the same event
/// stream, even when they are slow to pass on (a sink that takes its time), in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_comes_after_the_progress_before_it_even_with_a_slow_sink() {
    let srv = start(|h| h).await;
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let (client, _) = connect(&srv.url, mode, Handler::default()).await;
        for _ in 0..3 {
            let progress = Arc::new(Mutex::new(Vec::new()));
            let sink = progress.clone();
            let options = CallOptions::new().with_progress(move |p: ProgressNotificationParams| {
                std::thread::sleep(Duration::from_millis(20));
                sink.lock().expect("p").push(p.progress);
            });
            let r = client.call_tool_with("progress", json!({}), options).await.expect("progress");
            assert_eq!(text(&r), "done");
            assert_eq!(*progress.lock().expect("p"), vec![0.0, 50.0, 100.0], "{mode:?}");
        }
        // Plain answers, many at once, each to its own call.
        let calls = (0..32).map(|i| {
            let client = client.clone();
            async move { client.call_tool("echo", json!({"text": format!("n{i}")})).await }
        });
        for (i, r) in futures_util::future::join_all(calls).await.into_iter().enumerate() {
            assert_eq!(text(&r.expect("echo")), format!("n{i}"), "{mode:?}");
        }
        client.close().await;
    }
}

#[tokio::test]
async fn every_era_lists_calls_reads_and_gets() {
    let srv = start(|h| h).await;
    let modes = [
        (EraMode::Handshake(ProtocolVersion::V2025_11_25), ProtocolVersion::V2025_11_25),
        (EraMode::Handshake(ProtocolVersion::V2025_03_26), ProtocolVersion::V2025_03_26),
        (EraMode::Stateless, ProtocolVersion::V2026_07_28),
        (EraMode::Auto, ProtocolVersion::V2026_07_28),
    ];
    for (mode, expected) in modes {
        let (client, handle) = connect(&srv.url, mode, Handler::default()).await;
        assert_eq!(client.protocol_version(), expected, "{mode:?}");
        assert_eq!(
            handle.session_id().is_some(),
            !expected.is_stateless(),
            "{mode:?}: sessions in the handshake era only"
        );
        assert!(!handle.is_legacy_sse());

        let tools = client.list_all_tools().await.expect("tools");
        assert!(tools.iter().any(|t| t.name == "echo"), "{mode:?}");
        let r = client.call_tool("echo", json!({"text": "hello"})).await.expect("echo");
        assert_eq!(text(&r), "hello");
        let r = client.call_tool("add", json!({"a": 2, "b": 3})).await.expect("add");
        if expected >= ProtocolVersion::V2025_06_18 {
            assert_eq!(r.structured_content.as_ref().and_then(|s| s.get("sum")), Some(&json!(5)));
        }

        let read = client.read_resource("test://items/42").await.expect("read");
        assert_eq!(serde_json::to_value(&read.contents[0]).expect("json")["text"], "item 42");
        let err = client.read_resource("test://items/missing").await.expect_err("missing");
        assert!(err.peer_error().is_some(), "{err}");

        let prompt = client.get_prompt("explain", [("topic".to_owned(), "HTTP".to_owned())]).await.expect("prompt");
        assert_eq!(serde_json::to_value(&prompt.messages[0]).expect("json")["content"]["text"], "Explain HTTP");

        // Progress notifications arrive through the SSE answer.
        let progress = Arc::new(Mutex::new(Vec::new()));
        let sink = progress.clone();
        let options = CallOptions::new()
            .with_progress(move |p: ProgressNotificationParams| sink.lock().expect("p").push(p.progress));
        let r = client.call_tool_with("progress", json!({}), options).await.expect("progress");
        assert_eq!(text(&r), "done");
        assert_eq!(*progress.lock().expect("p"), vec![0.0, 50.0, 100.0], "{mode:?}");

        // Input from the client: server requests (handshake era) or input-required retries;
        // 2025-03-26 has no elicitation, so the server cannot ask.
        let r = client.call_tool("ask", json!({})).await.expect("ask");
        if expected.has_elicitation() {
            assert_eq!(text(&r), "Ada|hi (1)|2", "{mode:?}");
        } else {
            assert_eq!(r.is_error, Some(true), "{mode:?}");
            assert!(text(&r).contains("has no such request"), "{mode:?}: {}", text(&r));
        }

        client.close().await;
        assert_eq!(srv.endpoint.session_count(), 0, "{mode:?}: closing sends DELETE");
    }
    // The stateless era sent the mirrored headers the server checks.
    let calls = srv.posts("tools/call");
    assert!(!calls.is_empty());
    assert!(calls.iter().all(|h| h.get("mcp-name").is_some() && h.get("mcp-protocol-version").is_some()));
}

#[tokio::test]
async fn handshake_era_headers_and_list_changes_on_the_get_stream() {
    let srv = start(|h| h).await;
    let recorder = Arc::new(Recorder::default());
    let (client, handle) =
        connect(&srv.url, EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler(recorder.clone())).await;
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-11-25"));
    let sid = handle.session_id().expect("session");
    client.list_all_tools().await.expect("tools");

    // A tool added at runtime is announced on the GET stream (retried in case the stream was
    // not attached yet when the first change happened).
    let mut announced = false;
    for i in 0..20 {
        srv.server.add_tool(Tool::new(format!("late{i}"), JsonObject::new()), |_: Empty| async move { "late" });
        if eventually_for(Duration::from_secs(1), || recorder.tools_changed.load(Ordering::SeqCst) > 0).await {
            announced = true;
            break;
        }
    }
    assert!(announced, "notifications/tools/list_changed arrived through the GET stream");
    assert!(client.list_all_tools().await.expect("tools").iter().any(|t| t.name.starts_with("late")));

    let seen = srv.seen.lock().expect("seen").clone();
    let gets: Vec<_> = seen.iter().filter(|(m, _)| m == "GET").collect();
    assert!(!gets.is_empty(), "a GET stream was opened");
    for (method, h) in seen.iter().skip(1) {
        assert_eq!(h.get("mcp-session-id").map(|v| v.to_str().unwrap_or("")), Some(sid.as_str()), "{method}");
        assert_eq!(h.get("mcp-protocol-version").map(|v| v.to_str().unwrap_or("")), Some("2025-11-25"), "{method}");
    }
    client.close().await;
    assert_eq!(srv.endpoint.session_count(), 0);
    let seen = srv.seen.lock().expect("seen");
    assert!(seen.iter().any(|(m, h)| m == "DELETE" && h.get("mcp-session-id").is_some_and(|v| v == sid.as_str())));
}

#[tokio::test]
async fn an_ended_session_is_renewed_transparently() {
    let srv = start(|h| h).await;
    let (client, handle) =
        connect(&srv.url, EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler::default()).await;
    let first = handle.session_id().expect("session");
    assert_eq!(text(&client.call_tool("echo", json!({"text": "one"})).await.expect("echo")), "one");

    // The server forgets the session (as after a restart or an idle timeout).
    let r = reqwest::Client::new().delete(&srv.url).header("mcp-session-id", &first).send().await.expect("delete");
    assert_eq!(r.status(), 204);
    assert_eq!(srv.endpoint.session_count(), 0);

    assert_eq!(text(&client.call_tool("echo", json!({"text": "two"})).await.expect("echo after expiry")), "two");
    let second = handle.session_id().expect("a new session");
    assert_ne!(first, second);
    assert!(handle.reinitializations() >= 1);
    assert_eq!(srv.endpoint.session_count(), 1);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    client.close().await;
    assert!(eventually(|| srv.endpoint.session_count() == 0).await);
}

#[tokio::test]
async fn cancelling_a_stateless_call_closes_its_stream_and_drops_the_handler() {
    let srv = start(|h| h).await;
    let (client, _) = connect(&srv.url, EraMode::Stateless, Handler::default()).await;
    let token = CancellationToken::new();
    let c = client.clone();
    let options = CallOptions::new().with_cancel(token.clone());
    let call = tokio::spawn(async move { c.call_tool_with("sleep", json!({"ms": 60_000}), options).await });
    assert!(eventually(|| srv.probes.sleeping.load(Ordering::SeqCst) == 1).await, "the handler started");
    token.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), call).await.expect("in time").expect("task");
    assert!(outcome.expect_err("cancelled").is_cancelled());
    assert!(
        eventually_for(Duration::from_secs(10), || srv.probes.cancelled.load(Ordering::SeqCst) == 1).await,
        "the server dropped the handler"
    );
    // No notifications/cancelled was posted: the stream's end is the cancellation.
    let unmirrored =
        srv.seen.lock().expect("seen").iter().filter(|(m, h)| m == "POST" && h.get("mcp-method").is_none()).count();
    assert_eq!(unmirrored, 0);
    // The connection is still fine.
    assert_eq!(text(&client.call_tool("echo", json!({"text": "after"})).await.expect("echo")), "after");
}

#[tokio::test]
async fn cancelling_a_handshake_call_posts_notifications_cancelled() {
    let srv = start(|h| h).await;
    let (client, _) = connect(&srv.url, EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler::default()).await;
    let token = CancellationToken::new();
    let c = client.clone();
    let options = CallOptions::new().with_cancel(token.clone());
    let call = tokio::spawn(async move { c.call_tool_with("sleep", json!({"ms": 60_000}), options).await });
    assert!(eventually(|| srv.probes.sleeping.load(Ordering::SeqCst) == 1).await, "the handler started");
    token.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), call).await.expect("in time").expect("task");
    assert!(outcome.expect_err("cancelled").is_cancelled());
    assert!(
        eventually_for(Duration::from_secs(10), || srv.probes.cancelled.load(Ordering::SeqCst) == 1).await,
        "notifications/cancelled stopped the handler"
    );
    assert_eq!(text(&client.call_tool("echo", json!({"text": "after"})).await.expect("echo")), "after");
    client.close().await;
}

#[tokio::test]
async fn stateless_listen_streams_list_changes_until_dropped() {
    let srv = start(|h| h).await;
    let recorder = Arc::new(Recorder::default());
    let (client, _) = connect(&srv.url, EraMode::Stateless, Handler(recorder.clone())).await;
    let sub = client.listen(SubscriptionFilter::new().with_tools_list_changed()).await.expect("listen");
    assert!(sub.acknowledged().tools_list_changed.unwrap_or(false));
    srv.server.add_tool(Tool::new("late", JsonObject::new()), |_: Empty| async move { "late" });
    assert!(
        eventually_for(Duration::from_secs(10), || recorder.tools_changed.load(Ordering::SeqCst) > 0).await,
        "the change arrived on the listen stream"
    );
    drop(sub);
    // Dropping the subscription closes its stream; the connection goes on.
    assert_eq!(text(&client.call_tool("echo", json!({"text": "still"})).await.expect("echo")), "still");
    client.close().await;
}

#[tokio::test]
async fn mirrored_param_headers_in_the_stateless_era() {
    let srv = start(|h| h).await;
    let (client, _) = connect(&srv.url, EraMode::Stateless, Handler::default()).await;
    let tools = client.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "regional"));
    assert!(!tools.iter().any(|t| t.name == "bad_header"), "a tool with an invalid x-mcp-header is dropped");

    let r = client.call_tool("regional", json!({"region": "eu-west1", "count": 7})).await.expect("ascii");
    assert_eq!(text(&r), "eu-west1:7");
    let r = client.call_tool("regional", json!({"region": "Zürich"})).await.expect("non-ascii");
    assert_eq!(text(&r), "Zürich:0");
    let r = client.call_tool("regional", json!({"region": " padded ", "count": null})).await.expect("padded");
    if cfg!(feature = "validate") {
        // null is not an integer: the schema refuses what typed decoding lets through.
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
    } else {
        assert_eq!(text(&r), " padded :0");
    }

    let calls = srv.posts("tools/call");
    let region = |h: &http::HeaderMap| h.get("mcp-param-region").map(|v| v.to_str().unwrap_or("?").to_owned());
    let count = |h: &http::HeaderMap| h.get("mcp-param-count").map(|v| v.to_str().unwrap_or("?").to_owned());
    assert_eq!(region(&calls[0]).as_deref(), Some("eu-west1"));
    assert_eq!(count(&calls[0]).as_deref(), Some("7"));
    assert_eq!(region(&calls[1]).as_deref(), Some("=?base64?WsO8cmljaA==?="));
    assert_eq!(count(&calls[1]), None, "absent values send no header");
    assert_eq!(region(&calls[2]).as_deref(), Some("=?base64?IHBhZGRlZCA=?="));
    assert_eq!(count(&calls[2]), None, "null values send no header");
    assert!(calls.iter().all(|h| h.get("mcp-name").is_some_and(|v| v == "regional")));

    // In the handshake era the annotation means nothing: the tool is listed.
    let (old, _) = connect(&srv.url, EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler::default()).await;
    assert!(old.list_all_tools().await.expect("tools").iter().any(|t| t.name == "bad_header"));
    old.close().await;
    client.close().await;
}

#[tokio::test]
async fn a_call_without_listing_first_learns_the_headers() {
    let srv = start(|h| h).await;
    let (client, _) = connect(&srv.url, EraMode::Stateless, Handler::default()).await;
    // A first call opens the direct way: the next goes out from its caller's task, with the
    // routing its sender gave, which names no argument to mirror yet.
    assert_eq!(text(&client.call_tool("echo", json!({"text": "first"})).await.expect("echo")), "first");
    // The server refuses the first attempt (-32020, no Mcp-Param-Region); the transport lists
    // the tools, learns the annotation, and retries.
    let r = client.call_tool("regional", json!({"region": "ap-south"})).await.expect("call");
    assert_eq!(text(&r), "ap-south:0");
    assert!(!srv.posts("tools/list").is_empty(), "the tools were listed by the transport");
    let calls = srv.posts("tools/call");
    assert_eq!(calls.last().and_then(|h| h.get("mcp-param-region")).map(|v| v.as_bytes()), Some(&b"ap-south"[..]));
    // A non-ASCII tool name travels base64-encoded in Mcp-Name, and an unknown tool is an
    // ordinary protocol error, not a header mismatch.
    let err = client.call_tool("ünknown", json!({})).await.expect_err("unknown tool");
    let code = err.peer_error().map(|e| e.code.0);
    assert!(code.is_some_and(|c| c != -32020), "{err}");
    let last = srv.posts("tools/call").pop().expect("posted");
    assert_eq!(last.get("mcp-name").map(|v| v.as_bytes()), Some(&b"=?base64?w7xua25vd24=?="[..]));
    client.close().await;
}

#[tokio::test]
async fn custom_headers_go_everywhere_and_http_errors_keep_their_json_rpc_error() {
    let srv = start(|h| h).await;
    let transport = HttpClientTransport::new(&srv.url).header("x-api-key", "k-123");
    let client = builder(EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler::default())
        .connect(transport)
        .await
        .expect("connect");
    client.list_all_tools().await.expect("tools");
    client.close().await;
    let seen = srv.seen.lock().expect("seen").clone();
    for m in ["POST", "GET", "DELETE"] {
        assert!(seen.iter().any(|(method, _)| method == m), "a {m} was sent");
    }
    assert!(seen.iter().all(|(_, h)| h.get("x-api-key").is_some_and(|v| v == "k-123")));

    // A 403 from the Origin check carries a JSON-RPC error without id: it becomes the answer.
    let transport = HttpClientTransport::new(&srv.url).header("origin", "http://evil.example");
    let err = builder(EraMode::Stateless, Handler::default()).connect(transport).await.expect_err("refused");
    let peer = err.peer_error().expect("the server's own error");
    assert!(peer.message.contains("Origin"), "{err}");
    // An invalid header is reported when connecting.
    let err = builder(EraMode::Stateless, Handler::default())
        .connect(HttpClientTransport::new(&srv.url).header("bad header", "x"))
        .await
        .expect_err("invalid header name");
    assert!(err.to_string().contains("invalid header name"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Raw servers that misbehave on purpose.

/// Serves `app` on loopback; returns its base URL.
async fn serve_raw(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

#[tokio::test]
async fn a_server_that_refuses_every_post_fails_connect_clearly() {
    let app = axum::Router::new().fallback(|req: Request| async move {
        if req.method() == http::Method::POST {
            http::StatusCode::METHOD_NOT_ALLOWED
        } else {
            http::StatusCode::NOT_FOUND
        }
    });
    let url = format!("{}/mcp", serve_raw(app).await);
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        builder(EraMode::Auto, Handler::default()).connect(HttpClientTransport::new(&url)),
    )
    .await
    .expect("no hang");
    let err = outcome.expect_err("nothing to connect to");
    let msg = err.to_string();
    assert!(msg.contains("405") && msg.contains("legacy"), "{msg}");
}

#[tokio::test]
async fn invalid_urls_and_unreachable_servers_fail_connect() {
    let err = builder(EraMode::Stateless, Handler::default())
        .connect(HttpClientTransport::new("not a url"))
        .await
        .expect_err("invalid url");
    assert!(err.to_string().contains("URL") || format!("{err:?}").contains("URL"), "{err:?}");
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        builder(EraMode::Auto, Handler::default())
            .connect(HttpClientTransport::new(format!("http://127.0.0.1:{port}/mcp"))),
    )
    .await
    .expect("no hang")
    .expect_err("unreachable");
    assert!(err.to_string().contains("cannot reach"), "{err}");
}

/// A minimal handshake-era server: `initialize` answered in JSON without a session, no GET
/// stream, `tools/call` of `boom` answered with a non-JSON 500, and `tools/call` of `resume`
/// answered with an SSE stream that breaks after its priming event and must be resumed.
#[derive(Clone, Default)]
struct Raw {
    resumed_with: Arc<Mutex<Vec<String>>>,
}

async fn raw_handler(State(raw): State<Raw>, req: Request) -> Response {
    let method = req.method().clone();
    let last_event_id = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if method == http::Method::GET {
        let Some(last) = last_event_id else { return http::StatusCode::METHOD_NOT_ALLOWED.into_response() };
        raw.resumed_with.lock().expect("resumed").push(last);
        let body = "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":RID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n";
        let rid = RESUME_ID.lock().expect("id").clone();
        return sse(body.replace("RID", &rid));
    }
    if method != http::Method::POST {
        return http::StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 20).await.unwrap_or_default();
    let msg: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    match (msg["method"].as_str(), msg["params"]["name"].as_str()) {
        (Some("initialize"), _) => json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"}
        }})),
        (Some("tools/call"), Some("boom")) => {
            (http::StatusCode::INTERNAL_SERVER_ERROR, "<h1>the server is on fire</h1>").into_response()
        }
        (Some("tools/call"), Some("resume")) => {
            *RESUME_ID.lock().expect("id") = id.to_string();
            sse("id: 1\nretry: 10\ndata: \n\n".to_owned())
        }
        (Some(_), _) if msg.get("id").is_some() => {
            json_response(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "nope"}}))
        }
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

static RESUME_ID: Mutex<String> = Mutex::new(String::new());

fn json_response(v: Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

fn sse(body: String) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(body))
        .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[tokio::test]
async fn http_errors_become_errors_and_broken_streams_are_resumed() {
    let raw = Raw::default();
    let app = axum::Router::new().fallback(raw_handler).with_state(raw.clone());
    let url = format!("{}/mcp", serve_raw(app).await);
    let (client, handle) = connect(&url, EraMode::Handshake(ProtocolVersion::V2025_11_25), Handler::default()).await;
    assert_eq!(handle.session_id(), None, "this server has no sessions");

    let err = tokio::time::timeout(Duration::from_secs(20), client.call_tool("boom", json!({})))
        .await
        .expect("no hang")
        .expect_err("a 500 is an error");
    assert!(err.to_string().contains("500"), "{err}");
    assert_eq!(err.peer_error().and_then(|e| e.data.as_ref()).map(|d| d["httpStatus"].clone()), Some(json!(500)));

    // The answer stream ends after its priming event: resumed with GET + Last-Event-ID.
    let r = tokio::time::timeout(Duration::from_secs(20), client.call_tool("resume", json!({})))
        .await
        .expect("no hang")
        .expect("resumed");
    assert_eq!(text(&r), "resumed");
    assert_eq!(*raw.resumed_with.lock().expect("resumed"), vec!["1".to_owned()]);
    client.close().await;
}

// ---------------------------------------------------------------------------------------------
// Interop with the reference TypeScript server.

/// Starts `mcp-server-everything <mode>` on a free port; `None` (after a loud notice) when it
/// is not installed and not required.
async fn everything(mode: &str) -> Option<(tokio::process::Child, u16)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join(".ci-cache/npm/node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        if std::env::var("PORTICO_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
            panic!("{} is missing: run scripts/install-interop.sh", bin.display());
        }
        eprintln!("\n*** SKIPPED: interop with server-everything ({mode}): run scripts/install-interop.sh ***\n");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let child = tokio::process::Command::new("node")
        .arg(&bin)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Some((child, port));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server-everything ({mode}) did not listen on port {port}");
}

async fn echo_roundtrip(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "echo"), "{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>());
    let r = client.call_tool("echo", json!({"message": "hi from portico"})).await.expect("echo");
    assert!(text(&r).contains("hi from portico"), "{}", text(&r));
}

#[tokio::test]
async fn interop_server_everything_streamable_http() {
    let Some((mut child, port)) = everything("streamableHttp").await else { return };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (client, handle) = connect(&url, EraMode::Auto, Handler::default()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(handle.session_id().is_some(), "a session");
    assert!(!handle.is_legacy_sse());
    echo_roundtrip(&client).await;
    client.close().await;
    let _ = child.kill().await;
}

#[tokio::test]
async fn interop_server_everything_legacy_sse() {
    let Some((mut child, port)) = everything("sse").await else { return };
    let url = format!("http://127.0.0.1:{port}/sse");
    let (client, handle) = connect(&url, EraMode::Auto, Handler::default()).await;
    assert!(handle.is_legacy_sse(), "fell back to HTTP+SSE");
    assert!(!client.protocol_version().is_stateless());
    echo_roundtrip(&client).await;
    client.close().await;
    let _ = child.kill().await;
}

//! JSON-RPC middleware (tower layers) on the server, per tool, and on the client, in both eras;
//! and HTTP request extensions reaching handlers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use portico::client::{Client, EraMode};
use portico::middleware::{McpRequest, McpResponse, McpService};
use portico::schema::{
    CallToolResult, ContentBlock, ErrorCode, ErrorObject, Implementation, ProtocolVersion, Tool, object,
};
use portico::server::{RequestContext, Server, ServerBuilder};
use portico::transport::memory;
use serde::Deserialize;
use serde_json::json;
use tower::layer::layer_fn;
use tower::{Service, ServiceExt};

const MODES: [EraMode; 2] = [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless];

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
}

#[derive(Deserialize)]
struct Empty {}

#[derive(Clone)]
struct Tenant(String);

fn schema() -> portico::schema::JsonObject {
    object(json!({"type": "object"}))
}

/// Tracks how many calls of a tool run at once, and the most seen.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Gauge {
    async fn hold(&self, ms: u64) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        // Counts down when the call ends, or when its future is dropped (cancelled).
        let _running = Running(&self.now);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn builder(gauges: &[Arc<Gauge>; 2]) -> ServerBuilder {
    let (g0, g1) = (gauges[0].clone(), gauges[1].clone());
    Server::builder(Implementation::new("mw", "1.0.0"))
        .tool(Tool::new("whoami", schema()), |_: Empty, cx: RequestContext| async move {
            cx.extensions().get::<Tenant>().map_or("nobody".to_string(), |t| t.0.clone())
        })
        .tool(Tool::new("slow", schema()), move |a: Sleep| {
            let g = g0.clone();
            async move {
                g.hold(a.ms).await;
                "slept".to_string()
            }
        })
        .tool(Tool::new("free", schema()), move |a: Sleep| {
            let g = g1.clone();
            async move {
                g.hold(a.ms).await;
                "slept".to_string()
            }
        })
}

async fn client(server: &Server, mode: EraMode) -> Client {
    let (c, s) = memory::pair();
    server.connect(s);
    Client::builder(Implementation::new("t", "0")).era(mode).connect(c).await.expect("connect")
}

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

/// A layer recording each method it sees, then passing the request on.
fn recording(
    seen: Arc<Mutex<Vec<String>>>,
) -> tower::util::MapRequestLayer<impl Fn(McpRequest) -> McpRequest + Clone + Send + Sync + 'static> {
    tower::util::MapRequestLayer::new(move |req: McpRequest| {
        seen.lock().expect("lock").push(req.method().to_string());
        req
    })
}

#[tokio::test(start_paused = true)]
async fn server_layers_see_every_request_and_feed_handlers() {
    for mode in MODES {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let gauges = [Arc::default(), Arc::default()];
        let server = builder(&gauges)
            .layer(recording(seen.clone()))
            .layer(tower::util::MapRequestLayer::new(|mut req: McpRequest| {
                req.extensions_mut().insert(Tenant("acme".into()));
                req
            }))
            .build();
        let c = client(&server, mode).await;
        let r = c.call_tool("whoami", json!({})).await.expect("call");
        assert_eq!(text(&r), "acme", "{mode:?}: the handler sees what the layer inserted");
        let tools = c.list_all_tools().await.expect("list");
        assert_eq!(tools.len(), 3);
        let seen = seen.lock().expect("lock").clone();
        let first = if mode == EraMode::Stateless { "server/discover" } else { "initialize" };
        assert_eq!(seen.first().map(String::as_str), Some(first), "{mode:?}: {seen:?}");
        assert!(seen.iter().any(|m| m == "tools/call") && seen.iter().any(|m| m == "tools/list"), "{seen:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_layer_can_refuse_a_request_with_its_own_error() {
    for mode in MODES {
        let gauges = [Arc::default(), Arc::default()];
        let server = builder(&gauges)
            .layer(layer_fn(|inner: McpService| {
                tower::service_fn(move |req: McpRequest| {
                    let inner = inner.clone();
                    async move {
                        if req.tool_name().as_deref() == Some("slow") {
                            return Ok(McpResponse::error(ErrorObject::new(ErrorCode(-32001), "forbidden by policy")));
                        }
                        inner.oneshot(req).await
                    }
                    .boxed()
                })
            }))
            .build();
        let c = client(&server, mode).await;
        let e = c.call_tool("slow", json!({"ms": 1})).await.expect_err("refused");
        let obj = e.peer_error().expect("a JSON-RPC error");
        assert_eq!((obj.code.0, obj.message.as_str()), (-32001, "forbidden by policy"), "{mode:?}");
        // Other tools pass.
        assert_eq!(text(&c.call_tool("free", json!({"ms": 1})).await.expect("free")), "slept");
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_layer_answers_an_internal_error_and_the_connection_goes_on() {
    let gauges = [Arc::default(), Arc::default()];
    let server = builder(&gauges).layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(100))).build();
    let c = client(&server, MODES[0]).await;
    let e = c.call_tool("slow", json!({"ms": 5_000})).await.expect_err("timed out");
    let obj = e.peer_error().expect("a JSON-RPC error");
    assert_eq!(obj.code.0, -32603);
    assert!(obj.message.contains("timed out"), "{}", obj.message);
    // The slow handler was dropped with its request.
    assert_eq!(gauges[0].now.load(Ordering::SeqCst), 0);
    assert_eq!(gauges[0].max.load(Ordering::SeqCst), 1, "it did start");
    assert_eq!(text(&c.call_tool("free", json!({"ms": 1})).await.expect("after")), "slept");
}

/// A tool layer keyed by a misspelled name would leave the tool without its layer: the build
/// fails instead, naming the name.
#[test]
#[should_panic(expected = "tool_layer names no tool of this server: slwo")]
fn a_tool_layer_for_an_unknown_tool_fails_the_build() {
    let gauges: [Arc<Gauge>; 2] = [Arc::default(), Arc::default()];
    let _ = builder(&gauges).tool_layer("slwo", tower::limit::ConcurrencyLimitLayer::new(1)).build();
}

#[tokio::test(start_paused = true)]
async fn per_tool_layers_apply_to_their_tool_only() {
    for mode in MODES {
        let gauges: [Arc<Gauge>; 2] = [Arc::default(), Arc::default()];
        let server = builder(&gauges).tool_layer("slow", tower::limit::ConcurrencyLimitLayer::new(1)).build();
        let c = client(&server, mode).await;
        let calls = (0..4).map(|_| c.call_tool("slow", json!({"ms": 30}))).collect::<Vec<_>>();
        let free = (0..4).map(|_| c.call_tool("free", json!({"ms": 30}))).collect::<Vec<_>>();
        let (a, b) = tokio::join!(futures_util::future::join_all(calls), futures_util::future::join_all(free));
        assert!(a.iter().chain(&b).all(Result::is_ok), "{mode:?}");
        assert_eq!(gauges[0].max.load(Ordering::SeqCst), 1, "{mode:?}: the limited tool never ran twice at once");
        assert!(gauges[1].max.load(Ordering::SeqCst) > 1, "{mode:?}: the other tool ran concurrently");
    }
}

#[tokio::test(start_paused = true)]
async fn client_layers_wrap_every_request_and_see_server_errors_as_answers() {
    for mode in MODES {
        let gauges = [Arc::default(), Arc::default()];
        let server = builder(&gauges).build();
        let (cs, ss) = memory::pair();
        server.connect(ss);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(AtomicUsize::new(0));
        let errs = errors.clone();
        let c = Client::builder(Implementation::new("t", "0"))
            .era(mode)
            .layer(recording(seen.clone()))
            .layer(layer_fn(move |inner: McpService| {
                let errs = errs.clone();
                tower::service_fn(move |req: McpRequest| {
                    let (inner, errs) = (inner.clone(), errs.clone());
                    async move {
                        let r = inner.oneshot(req).await?;
                        if r.is_error() {
                            errs.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok::<_, portico::middleware::BoxError>(r)
                    }
                    .boxed()
                })
            }))
            .connect(cs)
            .await
            .expect("connect");
        c.ping().await.expect("ping");
        assert_eq!(text(&c.call_tool("free", json!({"ms": 1})).await.expect("call")), "slept");
        let e = c.request("no/such/method", None).await.expect_err("unknown method");
        assert_eq!(e.peer_error().map(|o| o.code.0), Some(-32601));
        let seen = seen.lock().expect("lock").clone();
        assert!(seen.contains(&"tools/call".to_string()) && seen.contains(&"no/such/method".to_string()), "{seen:?}");
        let ping = if mode == EraMode::Stateless { "server/discover" } else { "ping" };
        assert!(seen.iter().filter(|m| *m == ping).count() >= 1, "{seen:?}");
        assert!(errors.load(Ordering::SeqCst) >= 1, "{mode:?}: the -32601 answer passed through the layer");
    }
}

#[tokio::test(start_paused = true)]
async fn a_client_timeout_layer_fails_the_call() {
    let gauges = [Arc::default(), Arc::default()];
    let server = builder(&gauges).build();
    let (cs, ss) = memory::pair();
    server.connect(ss);
    let c = Client::builder(Implementation::new("t", "0"))
        .era(MODES[0])
        .layer(tower::util::MapRequestLayer::new(|r: McpRequest| r))
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(500)))
        .connect(cs)
        .await
        .expect("connect");
    let e = c.call_tool("slow", json!({"ms": 10_000})).await.expect_err("timed out");
    assert!(e.to_string().contains("timed out"), "{e}");
    assert!(portico::ErrorKind::Local == e.kind(), "{e:?}");
    // Dropping the call cancelled it on the server too.
    let mut idle = false;
    for _ in 0..100 {
        if gauges[0].now.load(Ordering::SeqCst) == 0 {
            idle = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(idle, "the server's handler was cancelled");
}

/// A hand-written service in the stack (what `layer_fn` users write), to check the types line up.
#[derive(Clone)]
struct Counting<S> {
    inner: S,
    n: Arc<AtomicUsize>,
}

impl<S> Service<McpRequest> for Counting<S>
where
    S: Service<McpRequest, Response = McpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> S::Future {
        self.n.fetch_add(1, Ordering::SeqCst);
        self.inner.call(req)
    }
}

#[tokio::test(start_paused = true)]
async fn hand_written_services_compose() {
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    let gauges = [Arc::default(), Arc::default()];
    let server = builder(&gauges).layer(layer_fn(move |inner| Counting { inner, n: n2.clone() })).build();
    let c = client(&server, MODES[1]).await;
    for _ in 0..3 {
        c.call_tool("free", json!({"ms": 0})).await.expect("call");
    }
    // server/discover, then three calls.
    assert_eq!(n.load(Ordering::SeqCst), 4);
}

#[cfg(feature = "http-server")]
#[tokio::test]
async fn http_request_extensions_reach_handlers() {
    use portico::transport::http::server::StreamableHttp;
    let gauges = [Arc::default(), Arc::default()];
    let server = builder(&gauges).build();
    // An axum middleware in front of the endpoint (what an auth layer does).
    let app = StreamableHttp::new(server).router("/mcp").layer(axum::middleware::from_fn(
        |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
            let who = req.headers().get("x-tenant").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            req.extensions_mut().insert(Tenant(who));
            next.run(req).await
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let v = post_stateless_call(&reqwest::Client::new(), &url, "whoami", &[("x-tenant", "globex")], &body).await;
    assert_eq!(v["result"]["content"][0]["text"], "globex", "{v}");
    task.abort();
}

/// Collects what a `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn the_request_log_layer_logs_outcomes_without_arguments() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let gauges = [Arc::default(), Arc::default()];
    let server =
        builder(&gauges).layer(portico::middleware::RequestLogLayer::new().level(tracing::Level::DEBUG)).build();
    let c = client(&server, MODES[0]).await;
    c.call_tool("free", json!({"ms": 0, "secret": "hunter2"})).await.expect("call");
    c.call_tool("nope", json!({})).await.expect_err("unknown tool");
    let log = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
    let done: Vec<&str> = log.lines().filter(|l| l.contains("mcp request")).collect();
    assert!(done.iter().any(|l| l.contains("initialize") && l.contains("mcp request done")), "{log}");
    assert!(done.iter().any(|l| l.contains("tools/call") && l.contains("free") && l.contains("us=")), "{log}");
    assert!(done.iter().any(|l| l.contains("nope") && l.contains("code=-32602") && l.contains("failed")), "{log}");
    assert!(!log.contains("hunter2"), "arguments are never logged");
}

#[tokio::test(start_paused = true)]
async fn shared_limits_compose_through_a_buffer() {
    // `RateLimit` keeps its state per instance: behind a `Buffer`, every request shares one.
    let gauges = [Arc::default(), Arc::default()];
    let limit = tower::ServiceBuilder::new()
        .layer(tower::buffer::BufferLayer::new(16))
        .layer(tower::limit::RateLimitLayer::new(1, Duration::from_secs(30)));
    let server = builder(&gauges).tool_layer("free", limit).build();
    let c = client(&server, MODES[1]).await;
    assert_eq!(text(&c.call_tool("free", json!({"ms": 0})).await.expect("first")), "slept");
    let second = tokio::time::timeout(Duration::from_millis(300), c.call_tool("free", json!({"ms": 0}))).await;
    assert!(second.is_err(), "the second call waits for the next 30 s window");
    // Other tools are not limited.
    assert_eq!(text(&c.call_tool("slow", json!({"ms": 0})).await.expect("other tool")), "slept");
}

/// Over HTTP the transport resolves a stateless request's era from its `_meta` once; a layer
/// that rewrites the params is still obeyed (the era is resolved again from the new `_meta`).
#[cfg(feature = "http-server")]
#[tokio::test]
async fn a_layer_rewriting_meta_over_http_is_obeyed() {
    let server = Server::builder(Implementation::new("meta", "1"))
        .tool(Tool::new("who", schema()), |_: Empty, cx: RequestContext| async move {
            format!("{} {}", cx.client_info().map_or("?", |i| i.name.as_str()), cx.protocol_version())
        })
        .layer(tower::util::MapRequestLayer::new(|mut req: McpRequest| {
            if req.method() == "tools/call" {
                let mut params: serde_json::Value = req.params_as().expect("params");
                if params["arguments"]["rename"] == true {
                    params["_meta"]["io.modelcontextprotocol/clientInfo"] = json!({"name": "renamed", "version": "2"});
                }
                req.set_params(&params).expect("set");
            }
            req
        }))
        .build();
    let (url, task) = serve_http(server).await;
    let http = reqwest::Client::new();
    for (rename, want) in [(false, "original 2026-07-28"), (true, "renamed 2026-07-28"), (false, "original 2026-07-28")]
    {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "who", "arguments": {"rename": rename},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "original", "version": "1"}}}});
        let v = post_stateless_call(&http, &url, "who", &[], &body).await;
        assert_eq!(v["result"]["content"][0]["text"], want, "{v}");
    }
    task.abort();
}

/// Over HTTP the transport also keeps what it read of a stateless tool call (name, arguments)
/// for the call; a layer that rewrites the arguments is obeyed, and not the arguments as sent.
#[cfg(feature = "http-server")]
#[tokio::test]
async fn a_layer_rewriting_arguments_over_http_is_obeyed() {
    #[derive(Deserialize)]
    struct Say {
        text: String,
    }
    let server = Server::builder(Implementation::new("args", "1"))
        .tool(Tool::new("say", schema()), |a: Say| async move { a.text })
        .layer(tower::util::MapRequestLayer::new(|mut req: McpRequest| {
            if req.method() == "tools/call" {
                let mut params: serde_json::Value = req.params_as().expect("params");
                if params["arguments"]["text"] == "quiet" {
                    params["arguments"]["text"] = json!("LOUD");
                    req.set_params(&params).expect("set");
                }
            }
            req
        }))
        .build();
    let (url, task) = serve_http(server).await;
    let http = reqwest::Client::new();
    for (text, want) in [("hello", "hello"), ("quiet", "LOUD"), ("hello", "hello")] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "say", "arguments": {"text": text},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
        let v = post_stateless_call(&http, &url, "say", &[], &body).await;
        assert_eq!(v["result"]["content"][0]["text"], want, "{v}");
    }
    task.abort();
}

/// Serves `server` over Streamable HTTP at `/mcp` on a free loopback port: its URL, and the
/// task to abort.
#[cfg(feature = "http-server")]
async fn serve_http(server: Server) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    use portico::transport::http::server::StreamableHttp;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let app = StreamableHttp::new(server).router("/mcp");
    (url, tokio::spawn(async move { axum::serve(listener, app).await }))
}

/// POSTs a stateless (2026-07-28) `tools/call` of `tool` with its mirrored headers plus `extra`,
/// and returns the JSON answer.
#[cfg(feature = "http-server")]
async fn post_stateless_call(
    http: &reqwest::Client,
    url: &str,
    tool: &str,
    extra: &[(&str, &str)],
    body: &serde_json::Value,
) -> serde_json::Value {
    let mut req = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool);
    for (name, value) in extra {
        req = req.header(*name, *value);
    }
    req.json(body).send().await.expect("post").json().await.expect("json")
}

/// A request pipelined behind an `initialize` that a layer holds up waits for the session it
/// creates, instead of being judged without one ("missing _meta").
#[tokio::test(start_paused = true)]
async fn a_request_pipelined_behind_a_slow_initialize_belongs_to_its_session() {
    use portico::transport::{FrameReader, FrameWriter, Transport};
    let gauges = [Arc::default(), Arc::default()];
    let server = builder(&gauges)
        .layer(layer_fn(|inner: McpService| {
            tower::service_fn(move |req: McpRequest| {
                let inner = inner.clone();
                async move {
                    if req.method() == "initialize" {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    inner.oneshot(req).await
                }
                .boxed()
            })
        }))
        .build();
    let (a, b) = memory::pair();
    server.connect(b);
    let (mut r, mut w) = a.split();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}});
    for msg in [
        init,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":3,"method":"ping"}),
    ] {
        w.write_frame(msg.to_string().as_bytes()).await.expect("write");
    }
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 3 {
        let frame = r.read_frame().await.expect("read").expect("open");
        let v: serde_json::Value = serde_json::from_slice(&frame).expect("json");
        if let Some(id) = v["id"].as_i64() {
            answers.insert(id, v);
        }
    }
    assert_eq!(answers[&1]["result"]["protocolVersion"], "2025-11-25", "{}", answers[&1]);
    let tools = answers[&2]["result"]["tools"].as_array().unwrap_or_else(|| panic!("tools/list: {}", answers[&2]));
    assert_eq!(tools.len(), 3);
    assert!(answers[&3].get("result").is_some(), "ping: {}", answers[&3]);
}

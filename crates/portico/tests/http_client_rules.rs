//! HTTP client transport rules, against raw servers that time and order what they receive:
//! the SSE `retry` field sets the delay before a broken response stream is resumed, and
//! nothing follows `notifications/initialized` until the server has taken it and answered
//! the GET stream; an answer's body of any shape reaches the caller or says what is wrong;
//! every POST names its host, or keeps a `Host` the user set.
#![cfg(all(feature = "http-client", feature = "http-server"))]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use portico::client::{Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion};
use portico::transport::http::client::{HttpClientTransport, ReconnectPolicy};
use serde_json::{Value, json};

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

fn json_response(v: Value) -> Response {
    ([("content-type", "application/json"), ("mcp-session-id", "s-1")], v.to_string()).into_response()
}

fn sse(body: String) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("mcp-session-id", "s-1")
        .body(Body::from(body))
        .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn body(req: Request) -> Value {
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 20).await.unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

fn initialize_result(id: &Value) -> Response {
    json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "raw", "version": "0"}
    }}))
}

async fn connect(url: &str) -> Client {
    // A reconnection policy much faster than the server's `retry`, so only `retry` can
    // explain a long wait.
    let transport = HttpClientTransport::new(url).reconnect(ReconnectPolicy::new(3, Duration::from_millis(10)));
    let connecting = Client::builder(Implementation::new("rules", "1"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .request_timeout(Duration::from_secs(10))
        .connect(transport);
    tokio::time::timeout(Duration::from_secs(10), connecting).await.expect("in time").expect("connected")
}

/// When the answer stream of `tools/call` ended, and when (and with which id) it was resumed.
#[derive(Clone, Default)]
struct Resumption {
    call_id: Arc<Mutex<Value>>,
    ended: Arc<Mutex<Option<Instant>>>,
    resumed: Arc<Mutex<Option<(Instant, String)>>>,
}

const RETRY_MS: u64 = 400;

async fn resuming_server(State(r): State<Resumption>, req: Request) -> Response {
    if req.method() == http::Method::GET {
        let Some(last) = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned) else {
            return http::StatusCode::METHOD_NOT_ALLOWED.into_response();
        };
        *r.resumed.lock().expect("resumed") = Some((Instant::now(), last));
        let id = r.call_id.lock().expect("id").clone();
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "resumed"}]}});
        return sse(format!("id: e-2\ndata: {answer}\n\n"));
    }
    if req.method() == http::Method::DELETE {
        return http::StatusCode::OK.into_response();
    }
    let msg = body(req).await;
    match msg["method"].as_str() {
        Some("initialize") => initialize_result(&msg["id"]),
        Some("tools/call") => {
            *r.call_id.lock().expect("id") = msg["id"].clone();
            // A priming event with `retry`, then the stream ends without the answer.
            let stream = futures_util::stream::once(async move {
                Ok::<_, std::io::Error>(format!("id: e-1\nretry: {RETRY_MS}\ndata: \n\n"))
            });
            let ended = r.ended.clone();
            let stream = futures_util::StreamExt::chain(
                stream,
                futures_util::stream::once(async move {
                    *ended.lock().expect("ended") = Some(Instant::now());
                    Ok(String::new())
                }),
            );
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

#[tokio::test]
async fn the_sse_retry_field_sets_the_delay_before_resuming() {
    let state = Resumption::default();
    let url = serve(axum::Router::new().fallback(resuming_server).with_state(state.clone())).await;
    let client = connect(&url).await;
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("t", json!({})))
        .await
        .expect("in time")
        .expect("resumed");
    assert_eq!(serde_json::to_value(&result.content[0]).expect("json")["text"], "resumed");
    let ended = state.ended.lock().expect("ended").expect("the stream ended");
    let (resumed, last) = state.resumed.lock().expect("resumed").clone().expect("resumed with GET");
    assert_eq!(last, "e-1", "resumed after the last event seen");
    let waited = resumed.duration_since(ended);
    assert!(
        waited >= Duration::from_millis(RETRY_MS - 20),
        "waited {waited:?}, less than the server's retry of {RETRY_MS} ms"
    );
    client.close().await;
}

/// What the server saw, in order.
#[derive(Clone, Default)]
struct Order(Arc<Mutex<Vec<String>>>);

impl Order {
    fn push(&self, what: impl Into<String>) {
        self.0.lock().expect("order").push(what.into());
    }
}

async fn slow_initialized_server(State(order): State<Order>, req: Request) -> Response {
    if req.method() == http::Method::GET {
        // Slow to open, then open for good: the server's requests would travel here.
        tokio::time::sleep(Duration::from_millis(200)).await;
        order.push("GET answered");
        let open = futures_util::stream::pending::<Result<String, std::io::Error>>();
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(open))
            .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    if req.method() != http::Method::POST {
        return http::StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let msg = body(req).await;
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    order.push(format!("{method} received"));
    match method.as_str() {
        "initialize" => initialize_result(&msg["id"]),
        "notifications/initialized" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            order.push("notifications/initialized answered");
            http::StatusCode::ACCEPTED.into_response()
        }
        "tools/list" => json_response(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})),
        // A server of the handshake era only: the probe of the stateless era is refused.
        "server/discover" => json_response(
            json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}),
        ),
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

/// Servers may refuse requests that arrive before `notifications/initialized`, and may drop
/// their own requests while the GET stream is not open: the first request waits for both.
#[tokio::test]
async fn requests_wait_until_initialized_is_taken_and_the_get_stream_is_open() {
    requests_wait_for_the_handshake(false).await;
}

/// The same after the client probed for the stateless era (`server/discover`) and the server
/// refused: the probe, a stateless request, must not let later requests skip the handshake.
#[tokio::test]
async fn after_a_refused_probe_requests_wait_until_initialized_is_taken() {
    requests_wait_for_the_handshake(true).await;
}

async fn requests_wait_for_the_handshake(probe: bool) {
    let order = Order::default();
    let url = serve(axum::Router::new().fallback(slow_initialized_server).with_state(order.clone())).await;
    let client = if probe {
        let transport = HttpClientTransport::new(&url);
        let connecting = Client::builder(Implementation::new("rules", "1"))
            .era(EraMode::Auto)
            .request_timeout(Duration::from_secs(10))
            .connect(transport);
        tokio::time::timeout(Duration::from_secs(10), connecting).await.expect("in time").expect("connected")
    } else {
        connect(&url).await
    };
    client.list_tools(None).await.expect("listed");
    let seen = order.0.lock().expect("order").clone();
    let at = |what: &str| seen.iter().position(|s| s == what).unwrap_or_else(|| panic!("no {what:?} in {seen:?}"));
    assert!(
        at("notifications/initialized answered") < at("tools/list received"),
        "tools/list overtook notifications/initialized: {seen:?}"
    );
    assert!(at("GET answered") < at("tools/list received"), "tools/list overtook the GET stream: {seen:?}");
    if probe {
        assert!(at("server/discover received") < at("initialize received"), "probed first: {seen:?}");
    }
    client.close().await;
}

/// One HTTP/1.1 request off a raw connection: its method and JSON body (`None` at EOF).
async fn read_request(conn: &mut tokio::io::BufReader<tokio::net::TcpStream>) -> Option<(String, Value)> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut line = String::new();
    conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
    let method = line.split(' ').next().unwrap_or_default().to_owned();
    let mut length = 0;
    loop {
        line.clear();
        conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await.ok()?;
    Some((method, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// A raw server that drops the connection a `tools/call` first arrives on without a word (the
/// keep-alive race: the server closed the connection the client's pool handed out), and answers
/// everything else. Counts the `tools/call`s it read.
async fn dropping_server(listener: tokio::net::TcpListener, calls: Arc<Mutex<u32>>) {
    use tokio::io::AsyncWriteExt;
    while let Ok((stream, _)) = listener.accept().await {
        let calls = calls.clone();
        tokio::spawn(async move {
            let mut conn = tokio::io::BufReader::new(stream);
            while let Some((method, msg)) = read_request(&mut conn).await {
                let (status, body) = match (method.as_str(), msg["method"].as_str()) {
                    ("POST", Some("initialize")) => (
                        "200 OK",
                        json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "raw", "version": "0"}}})
                        .to_string(),
                    ),
                    ("POST", Some("tools/call")) => {
                        let first = {
                            let mut n = calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            *n += 1;
                            *n == 1
                        };
                        if first {
                            return; // the connection closes, the request unanswered
                        }
                        let result = json!({"content": [{"type": "text", "text": "answered"}]});
                        ("200 OK", json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string())
                    }
                    ("POST", _) => ("202 Accepted", String::new()),
                    _ => ("405 Method Not Allowed", String::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if conn.get_mut().write_all(format!("{head}{body}").as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[tokio::test]
async fn a_request_on_a_connection_the_server_closed_is_sent_once_more() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let calls = Arc::new(Mutex::new(0));
    let server = tokio::spawn(dropping_server(listener, calls.clone()));
    let client = connect(&url).await;
    let r = tokio::time::timeout(Duration::from_secs(10), client.call_tool("ping", json!({})))
        .await
        .expect("in time")
        .expect("answered on the second try");
    assert_eq!(serde_json::to_value(&r).expect("json")["content"][0]["text"], "answered");
    assert_eq!(*calls.lock().expect("lock"), 2, "sent twice: once into the closed connection, once more");
    server.abort();
}

/// Answers `tools/call` with a body shaped by the tool's name: a one-element array after
/// whitespace, one object, truncated JSON, a JSON string, or text that is not JSON.
async fn shaped_answers(req: Request) -> Response {
    let msg = body(req).await;
    let id = msg["id"].clone();
    match msg["method"].as_str() {
        Some("initialize") => initialize_result(&id),
        Some("tools/call") => {
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}});
            let text = match msg["params"]["name"].as_str() {
                Some("array") => format!(" \n[{result}]"),
                Some("object") => result.to_string(),
                Some("truncated") => result.to_string()[..20].to_owned(),
                Some("string") => "\"ok\"".to_owned(),
                _ => "<html>no</html>".to_owned(),
            };
            ([("content-type", "application/json"), ("mcp-session-id", "s-1")], text).into_response()
        }
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

#[tokio::test]
async fn answer_bodies_of_every_shape_reach_the_caller_or_say_why() {
    let url = serve(axum::Router::new().fallback(shaped_answers)).await;
    let client = connect(&url).await;
    for name in ["array", "object"] {
        let r = client.call_tool(name, json!({})).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(serde_json::to_value(&r.content).expect("json")[0]["text"], "ok", "{name}");
    }
    for (name, says) in [("truncated", "malformed JSON"), ("html", "malformed JSON"), ("string", "without a response")]
    {
        let e = client.call_tool(name, json!({})).await.expect_err(name).to_string();
        assert!(e.contains(says), "{name}: {e}");
    }
}

/// The size of the text `sized_answers` puts in a `tools/call` result, past the client's limit.
const BIG: usize = 64 * 1024;

/// Answers `tools/call` by the tool's name: `declared`, a body past the limit with its
/// `Content-Length`; `chunked`, the same body in chunks without one; `sse`, the same answer as one
/// SSE event with an id; `small`, a short answer.
async fn sized_answers(req: Request) -> Response {
    let msg = body(req).await;
    let id = msg["id"].clone();
    match msg["method"].as_str() {
        Some("initialize") => initialize_result(&id),
        Some("tools/call") => {
            let name = msg["params"]["name"].as_str().unwrap_or_default().to_owned();
            let text = if name == "small" { "ok".to_owned() } else { "x".repeat(BIG) };
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}});
            let answer = answer.to_string();
            match name.as_str() {
                "chunked" => {
                    let parts: Vec<Result<bytes::Bytes, std::io::Error>> =
                        answer.as_bytes().chunks(4096).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
                    Response::builder()
                        .header("content-type", "application/json")
                        .header("mcp-session-id", "s-1")
                        .body(Body::from_stream(futures_util::stream::iter(parts)))
                        .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
                }
                // With an event id: a broken stream would be resumed, but not one past the limit.
                "sse" => sse(format!("id: e-1\ndata: {answer}\n\n")),
                _ => ([("content-type", "application/json"), ("mcp-session-id", "s-1")], answer).into_response(),
            }
        }
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

#[tokio::test]
async fn an_answer_past_the_size_limit_fails_its_call_however_it_comes_and_the_next_call_works() {
    let url = serve(axum::Router::new().fallback(sized_answers)).await;
    let transport = HttpClientTransport::new(&url).max_message_size(16 * 1024);
    let connecting = Client::builder(Implementation::new("rules", "1"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .request_timeout(Duration::from_secs(10))
        .connect(transport);
    let client = tokio::time::timeout(Duration::from_secs(10), connecting).await.expect("in time").expect("connected");
    for (name, says) in [("declared", "16384-byte limit"), ("chunked", "16384-byte limit"), ("sse", "16384 bytes")] {
        let e = tokio::time::timeout(Duration::from_secs(10), client.call_tool(name, json!({})))
            .await
            .unwrap_or_else(|_| panic!("{name}: in time"))
            .expect_err(name)
            .to_string();
        assert!(e.contains(says), "{name}: {e}");
        let r = client.call_tool("small", json!({})).await.unwrap_or_else(|e| panic!("after {name}: {e}"));
        assert_eq!(serde_json::to_value(&r.content).expect("json")[0]["text"], "ok", "after {name}");
    }
}

/// Answers like `shaped_answers`' `object`, and keeps the `Host` of every POST.
async fn host_keeping(State(hosts): State<Arc<Mutex<Vec<String>>>>, req: Request) -> Response {
    let host = req.headers().get("host").and_then(|v| v.to_str().ok()).unwrap_or("(none)").to_owned();
    if req.method() == http::Method::POST {
        hosts.lock().expect("lock").push(host);
    }
    let msg = body(req).await;
    let id = msg["id"].clone();
    match msg["method"].as_str() {
        Some("initialize") => initialize_result(&id),
        Some("tools/call") => json_response(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}})),
        _ => http::StatusCode::ACCEPTED.into_response(),
    }
}

#[tokio::test]
async fn every_post_names_its_host_and_a_host_header_of_the_users_own_is_kept() {
    let hosts = Arc::new(Mutex::new(Vec::new()));
    let url = serve(axum::Router::new().fallback(host_keeping).with_state(hosts.clone())).await;
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let client = connect(&url).await;
    client.call_tool("t", json!({})).await.expect("call");
    client.close().await;
    let seen = std::mem::take(&mut *hosts.lock().expect("lock"));
    assert!(seen.len() >= 3, "initialize, initialized and the call: {seen:?}");
    assert!(seen.iter().all(|h| *h == authority), "each POST names {authority}: {seen:?}");

    let transport = HttpClientTransport::new(&url).header("host", "gateway.example");
    let client = Client::builder(Implementation::new("rules", "1"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .connect(transport)
        .await
        .expect("connected");
    client.call_tool("t", json!({})).await.expect("call");
    client.close().await;
    let seen = std::mem::take(&mut *hosts.lock().expect("lock"));
    assert!(!seen.is_empty() && seen.iter().all(|h| h == "gateway.example"), "the user's Host is kept: {seen:?}");
}

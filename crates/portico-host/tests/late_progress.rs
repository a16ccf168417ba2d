//! Progress that an upstream sends after its call has finished is dropped at the gateway, not
//! forwarded (HOST.md's pitfalls: mcp-proxy dropped `_meta` and its `progressToken`; progress
//! after the end must not pass either). A front on loopback answers the upstream's `tools/call`
//! itself with an event stream: one progress notification, the result, then, after a pause,
//! another progress notification with the same token on the same stream.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use futures_util::StreamExt as _;
use portico::client::{CallOptions, Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// How long after the result the late progress is written.
const LATE: Duration = Duration::from_millis(200);

#[derive(Clone)]
struct Front {
    real: axum::Router,
    /// The progress tokens the upstream's calls carried.
    tokens: Arc<Mutex<Vec<Value>>>,
    /// Whether the late notification was written to a stream someone still read.
    late_written: Arc<AtomicBool>,
}

fn event(v: &Value) -> Result<Bytes, std::io::Error> {
    Ok(Bytes::from(format!("event: message\ndata: {v}\n\n")))
}

async fn handle(State(front): State<Front>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let msg: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if msg["method"] == "tools/call" {
        let token = msg["params"]["_meta"]["progressToken"].clone();
        front.tokens.lock().expect("lock").push(token.clone());
        let progress = |n: u32, message: &str| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": token, "progress": n, "message": message}})
        };
        let result =
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "done"}]}});
        let (early, late) = (progress(1, "early"), progress(2, "late"));
        let written = front.late_written.clone();
        let stream =
            futures_util::stream::iter([event(&early), event(&result)]).chain(futures_util::stream::once(async move {
                tokio::time::sleep(LATE).await;
                written.store(true, Ordering::SeqCst);
                event(&late)
            }));
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(stream))
            .expect("response");
    }
    let req = Request::from_parts(parts, Body::from(bytes));
    match front.real.clone().oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

fn server() -> Server {
    Server::builder(Implementation::new("late", "1.0.0"))
        .tool(Tool::new("work", object(json!({"type": "object"}))), |_: Value| async { "not reached" })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_after_the_result_is_dropped_not_forwarded() {
    let front = Front {
        real: StreamableHttp::new(server()).build().service(),
        tokens: Arc::default(),
        late_written: Arc::default(),
    };
    let app = axum::Router::new().fallback(handle).with_state(front.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!(
        "[policy.defaults]\ntools = \"allow\"\n\n\
         [servers.up]\nurl = \"http://{addr}/mcp\"\nshared = true\nprotocol_version = \"2025-11-25\"\n"
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    for era in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        front.late_written.store(false, Ordering::SeqCst);
        let (end, server_end) = portico::transport::memory::pair();
        gateway.server().connect(server_end);
        let client = Client::builder(Implementation::new("agent", "1")).era(era).connect(end).await.expect("connect");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let options = CallOptions::new().with_progress(move |p| {
            s.lock().expect("lock").push(p.message.unwrap_or_default());
        });
        let result = client.call_tool_with("up__work", json!({}), options).await.expect("call");
        assert_eq!(common::text(&result), "done", "{era:?}");
        // The late notification was written, on a stream the gateway still read, and then had
        // time to arrive.
        let written =
            common::eventually(Duration::from_secs(5), || front.late_written.load(Ordering::SeqCst).then_some(()))
                .await;
        assert!(written.is_some(), "{era:?}: the front wrote the late progress");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(*seen.lock().expect("lock"), ["early"], "{era:?}: only the progress before the result passes");
        client.close().await;
    }
    let tokens = front.tokens.lock().expect("lock").clone();
    assert_eq!(tokens.len(), 2, "one upstream call per era: {tokens:?}");
    assert!(tokens.iter().all(|t| !t.is_null()), "the upstream calls carried a progress token: {tokens:?}");
    host.shutdown().await;
    served.abort();
}

//! `ServeOptions::connection_threads`: each connection is served by one thread, with what its
//! requests spawn, over a real loopback socket.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use portico::schema::{Implementation, JsonObject, Tool};
use portico::server::Server;
use portico::transport::http::server::{ConnectionThreads, ServeOptions, StreamableHttp};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Empty {}

/// A server whose `where` tool names the thread it runs on, then the thread a task it spawns
/// runs on, after the handler has waited once.
fn server() -> Server {
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).expect("schema");
    Server::builder(Implementation::new("threads", "1.0.0"))
        .tool(Tool::new("where", schema), |_: Empty| async move {
            let name = || std::thread::current().name().unwrap_or("?").to_owned();
            let here = name();
            tokio::time::sleep(Duration::from_millis(1)).await;
            let spawned = tokio::spawn(async move { name() }).await.unwrap_or_default();
            format!("{here} {spawned}")
        })
        .build()
}

/// One HTTP/1.1 connection to `addr`, kept alive: every request sent on it uses this socket.
async fn connect(addr: std::net::SocketAddr) -> SendRequest<Full<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.expect("handshake");
    tokio::spawn(conn);
    send
}

/// `where` over a stateless POST on `conn`.
async fn where_(conn: &mut SendRequest<Full<Bytes>>, addr: std::net::SocketAddr) -> String {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"where","arguments":{},"_meta":meta}});
    let req = http::Request::post("/mcp")
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "where")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    conn.ready().await.expect("connection ready");
    let r = conn.send_request(req).await.expect("post");
    assert_eq!(r.status(), 200);
    let bytes = r.into_body().collect().await.expect("body").to_bytes();
    let v: Value = serde_json::from_slice(&bytes).expect("json");
    v["result"]["content"][0]["text"].as_str().expect("text").to_owned()
}

/// Serves `server()` with `options` on a free loopback port; the sender stops it, and the task
/// ends once serving has.
async fn serve(options: ServeOptions) -> (std::net::SocketAddr, Stop) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let endpoint = StreamableHttp::new(server()).build();
    let serving = tokio::spawn(endpoint.serve_with_options(
        listener,
        async move {
            let _ = stopped.await;
        },
        options,
    ));
    (addr, Stop(stop, serving))
}

struct Stop(tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<std::io::Result<()>>);

impl Stop {
    /// Asks serving to end, and waits (at most 10 s) until it has, without an error.
    async fn now(self) {
        let _ = self.0.send(());
        let ended = tokio::time::timeout(Duration::from_secs(10), self.1).await.expect("serving ended");
        ended.expect("task").expect("served");
    }
}

#[tokio::test]
async fn each_connection_stays_on_one_thread_and_connections_take_the_threads_in_turn() {
    let threads = ConnectionThreads::start(2).expect("threads");
    assert_eq!(threads.len(), 2);
    let (addr, stop) = serve(ServeOptions::default().with_connection_threads(threads.clone())).await;

    // Two connections, kept alive.
    let (mut a, mut b) = (connect(addr).await, connect(addr).await);
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(where_(&mut a, addr).await);
    }
    let first = seen[0].clone();
    let (thread, spawned) = first.split_once(' ').expect("two names");
    assert!(thread.starts_with("portico-http-"), "served by a connection thread: {first}");
    assert_eq!(thread, spawned, "what a request spawns runs on its connection's thread");
    assert!(seen.iter().all(|s| *s == first), "one connection, one thread: {seen:?}");
    let other = where_(&mut b, addr).await;
    let (other_thread, _) = other.split_once(' ').expect("two names");
    assert!(other_thread.starts_with("portico-http-") && other_thread != thread, "{first} then {other}");

    // Serving ends when asked; the threads stop when the last handle on them goes.
    drop((a, b));
    stop.now().await;
    if !cfg!(target_os = "linux") {
        return; // the threads are counted in /proc
    }
    let running = || thread_names().into_iter().filter(|n| n.starts_with("portico-http-")).count();
    assert_eq!(running(), 2, "the threads outlive serving while a handle is kept");
    drop(threads);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(running(), 0, "the threads stopped with the last handle");
}

/// The names of this process's threads (Linux's `/proc`); empty elsewhere.
fn thread_names() -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

#[tokio::test]
async fn without_connection_threads_connections_are_tasks_of_the_callers_runtime() {
    let (addr, stop) = serve(ServeOptions::default()).await;
    let here = std::thread::current().name().unwrap_or("?").to_owned();
    let answer = where_(&mut connect(addr).await, addr).await;
    assert_eq!(answer, format!("{here} {here}"), "the test's own current-thread runtime served it");
    stop.now().await;
}

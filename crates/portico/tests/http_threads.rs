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

/// Held by the tests that start connection threads: one counts this process's threads.
static THREADS_OF_ONE_TEST: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn each_connection_stays_on_one_thread_and_connections_take_the_threads_in_turn() {
    let _alone = THREADS_OF_ONE_TEST.lock().await;
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

/// Serves `server()` on a thread and runtime of its own, so that nothing the test blocks holds
/// it up; the sender stops it.
fn serve_elsewhere() -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>) {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("upstream".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let (addr, serving) = serve(ServeOptions::default()).await;
                let _ = addr_tx.send(addr);
                let _ = stopped.await;
                serving.now().await;
            });
        })
        .expect("thread");
    let addr = addr_rx.recv_timeout(Duration::from_secs(10)).expect("the upstream listens");
    (addr, stop, thread)
}

/// One blocking HTTP/1.1 exchange on `stream`: a stateless `tools/call` of `relay`, and the
/// text of its result. Reading waits at most 10 s.
fn relay_blocking(stream: &mut std::net::TcpStream, addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay","arguments":{},"_meta":meta}})
            .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: relay\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(format!("{head}{body}").as_bytes()).expect("write");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("an answer within 10 s");
        assert!(n > 0, "the connection closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
        let length = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))
            .expect("a content-length")
            .expect("a number");
        if body.len() < length {
            continue;
        }
        let v: Value = serde_json::from_str(&body[..length]).expect("json");
        return v["result"]["content"][0]["text"].as_str().expect("text").to_owned();
    }
}

/// The gateway's shape: a server on connection threads whose tool calls an upstream through a
/// client connected on another runtime. The call is sent from the connection thread and its
/// answer handed straight back, so it needs nothing of the runtime that connected the client:
/// here that runtime (the test's own) is blocked for the whole call.
#[tokio::test]
async fn an_upstream_call_from_a_connection_thread_needs_nothing_of_the_clients_runtime() {
    let _alone = THREADS_OF_ONE_TEST.lock().await;
    let (upstream, stop_upstream, upstream_thread) = serve_elsewhere();
    let transport = portico::transport::http::client::HttpClientTransport::new(format!("http://{upstream}/mcp"));
    let client = std::sync::Arc::new(
        portico::client::Client::builder(Implementation::new("relay", "1.0.0"))
            .connect(transport)
            .await
            .expect("connect to the upstream"),
    );
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).expect("schema");
    let relay = {
        let client = client.clone();
        Server::builder(Implementation::new("middle", "1.0.0"))
            .tool(Tool::new("relay", schema), move |_: Empty| {
                let client = client.clone();
                async move {
                    let here = std::thread::current().name().unwrap_or("?").to_owned();
                    let r = client.call_tool("where", json!({})).await.expect("the upstream's answer");
                    let v = serde_json::to_value(&r).expect("result");
                    format!("{here} {}", v["content"][0]["text"].as_str().unwrap_or("?"))
                }
            })
            .build()
    };
    let threads = ConnectionThreads::start(1).expect("threads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(StreamableHttp::new(relay).build().serve_with_options(
        listener,
        async move {
            let _ = stopped.await;
        },
        ServeOptions::default().with_connection_threads(threads.clone()),
    ));

    // The first call, with this runtime free: the connection is accepted and moved to its thread.
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let first = tokio::task::spawn_blocking({
        let mut s = stream.try_clone().expect("clone");
        move || relay_blocking(&mut s, addr)
    })
    .await
    .expect("first call");
    assert_eq!(first, "portico-http-0 upstream upstream", "relayed from the connection thread");

    // The second, with this runtime blocked throughout: reading the answer here holds its thread.
    let second = relay_blocking(&mut stream, addr);
    assert_eq!(second, first, "the same answer, from the same threads");

    drop(stream);
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serving ended")
        .expect("task")
        .expect("served");
    client.close().await;
    let _ = stop_upstream.send(());
    upstream_thread.join().expect("the upstream's thread");
}

//! The HTTP server's accept loop against slow and greedy peers, over real loopback sockets:
//! a slowloris connection (headers trickled) is closed by the header read timeout, and the
//! connection cap holds further peers back until one closes, while an honest client is served.
#![cfg(feature = "http-server")]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use portico::transport::http::server::{ServeOptions, StreamableHttp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Serves the fixture server with `options`; the returned sender stops it.
async fn start(options: ServeOptions) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let server = fixture_server(Arc::new(Probes::default()));
    let endpoint = StreamableHttp::new(server).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        let _ = endpoint.serve_with_options(listener, shutdown, options).await;
    });
    (addr, stop)
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// One complete stateless `tools/list` over a fresh connection: the status line it got.
async fn honest_ping(addr: std::net::SocketAddr) -> String {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{LIST}",
        LIST.len()
    );
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer))
        .await
        .expect("answered within 10 s")
        .expect("read");
    String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned()
}

/// Reads until the peer closes; `Some(elapsed)` if it did within `limit`.
async fn closed_within(tcp: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        let left = limit.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn trickled_headers_are_cut_off_by_the_header_timeout() {
    let (addr, _stop) = start(ServeOptions::default().with_header_read_timeout(Duration::from_millis(400))).await;

    // Ten slowloris peers: a request line, then one header byte every 100 ms, never the end.
    let mut peers = Vec::new();
    for _ in 0..10 {
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.expect("write");
        peers.push(tcp);
    }
    let trickle = async {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            for p in &mut peers {
                let _ = p.write_all(b"a").await;
            }
        }
    };
    // Meanwhile an honest client is served.
    let (status, ()) = tokio::join!(honest_ping(addr), trickle);
    assert!(status.starts_with("HTTP/1.1 200"), "honest client: {status}");

    // Every slow peer was closed (the trickle went on for 4 s against a 0.4 s timeout).
    for (i, p) in peers.iter_mut().enumerate() {
        let closed = closed_within(p, Duration::from_secs(2)).await;
        assert!(closed.is_some(), "slow peer {i} still open 4 s after a 0.4 s header timeout");
    }
}

#[tokio::test]
async fn an_idle_connection_is_closed_and_a_silent_one_too() {
    let (addr, _stop) = start(ServeOptions::default().with_header_read_timeout(Duration::from_millis(300))).await;
    // Connected, never a byte.
    let mut silent = TcpStream::connect(addr).await.expect("connect");
    let took = closed_within(&mut silent, Duration::from_secs(5)).await.expect("a silent peer is closed");
    assert!(took >= Duration::from_millis(250), "closed before the timeout: {took:?}");
}

#[tokio::test]
async fn the_connection_cap_holds_peers_back_until_one_closes() {
    let (addr, _stop) =
        start(ServeOptions::default().with_header_read_timeout(Duration::from_secs(30)).with_max_connections(2)).await;
    // Two idle connections take both places.
    let first = TcpStream::connect(addr).await.expect("connect");
    let _second = TcpStream::connect(addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A third peer's request is not served while both are held.
    let waiting = tokio::spawn(honest_ping(addr));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "a third connection was served beyond the cap of 2");

    // One closes: the waiting peer is accepted and answered.
    drop(first);
    let status =
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("served after a close").expect("join");
    assert!(status.starts_with("HTTP/1.1 200"), "after the cap freed: {status}");
}

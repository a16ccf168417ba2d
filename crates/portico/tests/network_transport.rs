//! `RequestContext::network_transport` names what carried a request, by OpenTelemetry's
//! `network.transport`: `pipe` over stdio framing, `tcp` over Streamable HTTP (sessions and
//! stateless requests alike), nothing within the process.
#![cfg(all(
    feature = "server",
    feature = "client",
    feature = "stdio",
    feature = "http-server",
    feature = "http-client"
))]

use portico::client::{Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion, Tool, object};
use portico::server::{RequestContext, Server};
use portico::transport::stdio::StdioTransport;
use serde_json::{Value, json};

fn server() -> Server {
    Server::builder(Implementation::new("t", "1.0.0"))
        .tool(Tool::new("carrier", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            cx.network_transport().unwrap_or("none").to_owned()
        })
        .build()
}

async fn carrier(client: &Client) -> String {
    let r = client.call_tool("carrier", json!({})).await.expect("call");
    match r.content.first() {
        Some(portico::schema::ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn each_transport_names_what_carried_the_request() {
    let info = || Implementation::new("c", "1");
    for era in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        // Line framing over a byte stream, as stdio.
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server_io);
        let served = server();
        tokio::spawn(async move { served.serve(StdioTransport::new(sr, sw)).await });
        let (cr, cw) = tokio::io::split(client_io);
        let client = Client::builder(info()).era(era).connect(StdioTransport::new(cr, cw)).await.expect("connect");
        assert_eq!(carrier(&client).await, "pipe", "{era:?}");
        client.close().await;

        // Streamable HTTP on loopback.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let endpoint = portico::transport::http::server::StreamableHttp::new(server()).build();
        let http = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });
        let t = portico::transport::http::client::HttpClientTransport::new(url);
        let client = Client::builder(info()).era(era).connect(t).await.expect("connect");
        assert_eq!(carrier(&client).await, "tcp", "{era:?}");
        client.close().await;
        http.abort();

        // Within the process.
        let (a, b) = portico::transport::memory::pair();
        server().connect(b);
        let client = Client::builder(info()).era(era).connect(a).await.expect("connect");
        assert_eq!(carrier(&client).await, "none", "{era:?}");
        client.close().await;
    }
}

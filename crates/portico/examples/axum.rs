//! An MCP endpoint mounted into an existing axum app, next to its other routes.
//!
//! `cargo run -p portico-mcp --example axum --features http-server`, then
//! `curl localhost:3000/health` and point an MCP client at `http://localhost:3000/mcp`.
use axum::routing::get;
use portico::schema::{Implementation, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use serde::Deserialize;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let input = object(serde_json::json!({
        "type": "object",
        "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
        "required": ["a", "b"]
    }));
    let server = Server::builder(Implementation::new("calculator", "1.0.0"))
        .tool(
            Tool::new("add", input).with_description("Adds two integers"),
            |x: Add| async move { (x.a + x.b).to_string() },
        )
        .build();

    let app =
        axum::Router::new().route("/health", get(|| async { "ok" })).merge(StreamableHttp::new(server).router("/mcp"));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).await
}

//! Tool arguments validated against the tool's `inputSchema` (feature `validate`): what typed
//! decoding cannot say is refused, per revision as the spec says; no `$ref` is ever fetched.
#![cfg(feature = "validate")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use portico::client::{Client, EraMode};
use portico::schema::{CallToolResult, ContentBlock, Implementation, ProtocolVersion, Tool, object};
use portico::server::Server;
use serde_json::{Value, json};

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

/// A server whose tools take untyped arguments, so only the schema can refuse anything.
fn server(remote_ref: &str) -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let counted = move |_: Value| {
        r.fetch_add(1, Ordering::SeqCst);
        async { "ran" }
    };
    let strict = object(json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"enum": ["fast", "safe"]},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
            "tag": {"$ref": "#/$defs/tag"}
        },
        "required": ["count"],
        "additionalProperties": false,
        "$defs": {"tag": {"type": "string", "pattern": "^[a-z]+$"}}
    }));
    let remote = object(json!({"type": "object", "properties": {"x": {"$ref": remote_ref}}}));
    let server = Server::builder(Implementation::new("v", "1.0.0"))
        .tool(Tool::new("strict", strict), counted.clone())
        .tool(Tool::new("remote", remote), counted)
        .build();
    (server, runs)
}

async fn connect(server: &Server, mode: EraMode) -> Client {
    let (c, s) = portico::transport::memory::pair();
    server.connect(s);
    Client::builder(Implementation::new("t", "0")).era(mode).connect(c).await.expect("connect")
}

#[tokio::test]
async fn schema_violations_are_tool_errors_in_current_revisions() {
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let (server, runs) = server("https://example.invalid/x.json");
        let c = connect(&server, mode).await;
        let ok = c.call_tool("strict", json!({"count": 3, "mode": "safe", "pair": ["a", 1], "tag": "abc"})).await;
        assert_eq!(text(&ok.expect("valid")), "ran", "{mode:?}");
        for (bad, needle) in [
            (json!({"count": 0}), "/count"),
            (json!({"count": 11}), "/count"),
            (json!({"count": 1, "mode": "reckless"}), "/mode"),
            (json!({"count": 1, "extra": true}), "extra"),
            (json!({"count": 1, "pair": [1, "a"]}), "/pair/0"),
            (json!({"count": 1, "pair": ["a", 1, 2]}), "/pair"),
            (json!({"count": 1, "tag": "ABC"}), "/tag"),
            (json!({}), "count"),
        ] {
            let r = c.call_tool("strict", bad.clone()).await.expect("a result");
            assert_eq!(r.is_error, Some(true), "{mode:?} {bad}");
            let msg = text(&r);
            assert!(msg.starts_with("invalid arguments for tool strict: "), "{msg}");
            assert!(msg.contains(needle), "{mode:?} {bad}: {msg}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{mode:?}: the handler ran for the valid call only");
    }
}

#[tokio::test]
async fn older_revisions_get_invalid_params() {
    let (server, runs) = server("https://example.invalid/x.json");
    let c = connect(&server, EraMode::Handshake(ProtocolVersion::V2025_06_18)).await;
    let e = c.call_tool("strict", json!({"count": 99})).await.expect_err("protocol error");
    let obj = e.peer_error().expect("JSON-RPC error");
    assert_eq!(obj.code.0, -32602);
    assert!(obj.message.contains("/count"), "{}", obj.message);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn remote_refs_are_never_fetched() {
    // A listener that counts connections: the schema's $ref points at it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/schema.json", listener.local_addr().expect("addr").port());
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let accept = tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            h.fetch_add(1, Ordering::SeqCst);
        }
    });
    let (server, runs) = server(&url);
    let c = connect(&server, EraMode::Stateless).await;
    // The schema could not be compiled without fetching; the tool still works, typed only.
    let r = c.call_tool("remote", json!({"x": 1})).await.expect("call");
    assert_eq!(text(&r), "ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing connected to the $ref's host");
    accept.abort();
}

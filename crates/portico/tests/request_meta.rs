//! A request's own `_meta` members: what a client adds with `CallOptions::with_meta` reaches
//! the handler as `RequestContext::meta`, in both eras, beside the protocol's keys, which stay
//! the client's to write.
#![cfg(all(feature = "server", feature = "client"))]

use portico::client::{CallOptions, Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion, Tool, object};
use portico::server::{RequestContext, Server};
use serde_json::{Value, json};

/// A server whose `meta` tool answers with the `_meta` members its request carried, and
/// whether the request had a progress token and a trace context.
fn server() -> Server {
    Server::builder(Implementation::new("meta", "1.0.0"))
        .tool(Tool::new("meta", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            let seen = json!({
                "meta": cx.meta().cloned().map(Value::Object),
                "traceparent": cx.trace_context().and_then(|t| t.traceparent.clone()),
            });
            seen.to_string()
        })
        .build()
}

fn text(r: &portico::schema::CallToolResult) -> Value {
    match r.content.first() {
        Some(portico::schema::ContentBlock::Text(t)) => serde_json::from_str(&t.text).expect("json"),
        other => panic!("unexpected content {other:?}"),
    }
}

#[tokio::test]
async fn a_requests_own_meta_members_reach_the_handler_and_the_protocols_keys_do_not_pass() {
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for era in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let (a, b) = portico::transport::memory::pair();
        server().connect(b);
        let client = Client::builder(Implementation::new("agent", "1")).era(era).connect(a).await.expect("connect");

        // None given: none seen.
        let r = client.call_tool("meta", json!({})).await.expect("call");
        assert_eq!(text(&r), json!({"meta": null, "traceparent": null}), "{era:?}");

        let members = json!({
            "acme.example/locale": "fr-FR",
            "nested": {"a": [1, 2, {"b": null}]},
            // The protocol's own: never taken from the members.
            "progressToken": "forged",
            "io.modelcontextprotocol/protocolVersion": "1999-01-01",
            "io.modelcontextprotocol/custom": true,
            // Replaced by the trace context given below.
            "traceparent": "00-00000000000000000000000000000001-0000000000000001-00",
        });
        let Value::Object(members) = members else { unreachable!() };
        let options = CallOptions::new()
            .with_meta(members)
            .with_trace_context(portico::trace::TraceContext::new(parent))
            .with_progress(|_| {});
        let r = client.call_tool_with("meta", json!({}), options).await.expect("call");
        assert_eq!(
            text(&r),
            json!({
                "meta": {"acme.example/locale": "fr-FR", "nested": {"a": [1, 2, {"b": null}]}},
                "traceparent": parent,
            }),
            "{era:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn meta_members_on_the_wire_are_read_with_escaped_names_and_duplicates_refused() {
    use portico::transport::{FrameReader as _, FrameWriter as _, Transport as _};
    let (a, b) = portico::transport::memory::pair();
    server().connect(b);
    let (mut rx, mut tx) = a.split();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    tx.write_frame(init.as_bytes()).await.expect("send");
    rx.read_frame().await.expect("read").expect("initialized");
    tx.write_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await.expect("send");
    // An escaped member name is read as the name it spells.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"meta","arguments":{},"_meta":{"x\u002dy":1,"progressToken":3}}}"#;
    tx.write_frame(call.as_bytes()).await.expect("send");
    let answer: Value = serde_json::from_slice(&rx.read_frame().await.expect("read").expect("answer")).expect("json");
    let seen: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(seen["meta"], json!({"x-y": 1}), "{answer}");
    // A protocol key given twice is an error, as a derived struct's would be.
    let twice = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"meta","arguments":{},"_meta":{"progressToken":1,"progressToken":2}}}"#;
    tx.write_frame(twice.as_bytes()).await.expect("send");
    let answer: Value = serde_json::from_slice(&rx.read_frame().await.expect("read").expect("answer")).expect("json");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // A `_meta` that is not an object is refused.
    let array = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"meta","arguments":{},"_meta":[]}}"#;
    tx.write_frame(array.as_bytes()).await.expect("send");
    let answer: Value = serde_json::from_slice(&rx.read_frame().await.expect("read").expect("answer")).expect("json");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

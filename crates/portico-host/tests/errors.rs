//! An upstream's JSON-RPC error on `tools/call` reaches the client as that error: code, message
//! and data, not a tool result with `isError`; the host's own API still gives a tool error.

mod common;

use std::time::Duration;

use portico::client::Client;
use portico::schema::{CallToolResult, ErrorCode, ErrorObject, Implementation, Tool, object};
use portico::server::{HandlerError, Server, ToolReply};
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::json;

/// An upstream whose `quota` tool answers with a JSON-RPC error carrying data, or a result.
fn upstream() -> Server {
    Server::builder(Implementation::new("strict", "1"))
        .tool(Tool::new("quota", object(json!({"type": "object"}))), |args: serde_json::Value| async move {
            if args.get("ok").is_some() {
                return ToolReply::Result(CallToolResult::text("fine"));
            }
            let error = ErrorObject::new(ErrorCode(-32042), "quota exceeded").with_data(json!({ "retry_after_s": 30 }));
            ToolReply::Error(HandlerError::wire(error))
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_json_rpc_error_on_a_tool_call_is_relayed_as_that_error() {
    let (addr, served) = common::serve_http(upstream()).await;
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(common::config_in(
        dir.path(),
        &format!("[servers.up]\nurl = \"http://{addr}/mcp\"\nshared = true\n"),
    ));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    let (a, b) = portico::transport::memory::pair();
    gateway.server().connect(b);
    let client = Client::builder(Implementation::new("agent", "1")).connect(a).await.expect("connect");

    let err = client.call_tool("up__quota", json!({})).await.expect_err("an error, not a result");
    let wire = err.peer_error().expect("a JSON-RPC error from the gateway");
    assert_eq!(wire.code, ErrorCode(-32042), "{wire:?}");
    assert_eq!(wire.message, "quota exceeded");
    assert_eq!(wire.data, Some(json!({ "retry_after_s": 30 })), "the data passes through");
    // The host's API still gives a tool error naming the server, for callers that want one.
    let result = host.call_tool("up__quota", json!({}), None).await;
    assert_eq!(result.is_error, Some(true));
    assert!(common::text(&result).contains("server `up`"), "{}", common::text(&result));
    // A result goes through as a result.
    let ok = client.call_tool("up__quota", json!({"ok": true})).await.expect("result");
    assert_eq!(common::text(&ok), "fine");
    client.close().await;
    host.shutdown().await;
    served.abort();
}

//! The Portico client against the reference TypeScript server,
//! `@modelcontextprotocol/server-everything@2026.8.31`, over stdio.
//!
//! `scripts/install-interop.sh` installs it under `.ci-cache/npm`. Without it the test is
//! skipped with a notice, unless `PORTICO_REQUIRE_INTEROP=1`, which makes a missing server a
//! failure (CI sets it).
//!
//! The server is a handshake-era server that answers `server/discover` with -32601, so
//! `EraMode::Auto` must fall back to `initialize`. Every message the Portico client sent is
//! validated against the official 2025-11-25 schema.
#![cfg(unix)]

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use portico::client::{Client, EraMode};
use portico::schema::{
    CompleteArgument, CompleteRequestParams, CompletionReference, ContentBlock, Implementation, ProtocolVersion,
    ResourceContents,
};
use portico::transport::child::ChildProcess;
use serde_json::json;
use support::{Frame, Tap, bounded, workspace_root};

const REQUIRE_ENV: &str = "PORTICO_REQUIRE_INTEROP";

/// The installed server, or `None` (after a notice, or a failure when it is required).
fn server_everything() -> Option<PathBuf> {
    let path = workspace_root().join(".ci-cache/npm/node_modules/.bin/mcp-server-everything");
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{} is missing: run scripts/install-interop.sh (it installs @modelcontextprotocol/server-everything@2026.8.31)",
        path.display()
    );
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{REQUIRE_ENV}=1 and {message}");
    }
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPED: interop with server-everything did NOT run.");
    eprintln!("!! {message}");
    eprintln!("!! Set {REQUIRE_ENV}=1 to make this a failure.");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    None
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks.iter().filter_map(ContentBlock::as_text).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn portico_client_against_server_everything() {
    let Some(program) = server_everything() else { return };
    let mut child = ChildProcess::new(&program);
    child.arg("stdio");
    let (transport, handle) = child.spawn().expect("spawn mcp-server-everything");
    let (tap, wire) = Tap::new(transport);
    let client = bounded(
        "connect",
        Client::builder(Implementation::new("portico-interop", "1.0.0")).era(EraMode::Auto).connect(tap),
    )
    .await
    .expect("connect with EraMode::Auto");

    // Discovery was refused, so the client fell back to the handshake.
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "mcp-servers/everything");
    bounded("ping", client.ping()).await.expect("ping");
    // The ping was answered, so everything queued before it has been written.
    let sent = wire.sent();
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["server/discover", "initialize", "notifications/initialized", "ping"],
        "probe, then handshake"
    );
    let refused = wire.frames().into_iter().find(|(d, m)| *d == Frame::Received && m.get("id") == sent[0].get("id"));
    assert_eq!(refused.map(|(_, m)| m["error"]["code"].clone()), Some(json!(-32601)), "the probe was refused");

    // Tools.
    let tools = bounded("tools/list", client.list_all_tools()).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(tools.len() >= 5, "at least 5 tools: {names:?}");
    assert!(names.contains(&"echo"), "{names:?}");
    let r = bounded("echo", client.call_tool("echo", json!({"message": "hi"}))).await.expect("echo");
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(text_of(&r.content).contains("hi"), "{r:?}");
    if names.contains(&"get-sum") {
        let r = bounded("get-sum", client.call_tool("get-sum", json!({"a": 2, "b": 40}))).await.expect("get-sum");
        assert!(text_of(&r.content).contains("42"), "{r:?}");
    } else {
        eprintln!("note: server-everything has no get-sum tool; skipped that call");
    }

    // Resources.
    let resources = bounded("resources/list", client.list_all_resources()).await.expect("resources/list");
    let first = resources.first().expect("server-everything lists resources");
    let read = bounded("resources/read", client.read_resource(&first.uri)).await.expect("resources/read");
    match read.contents.first() {
        Some(ResourceContents::Text(t)) => assert!(t.uri == first.uri && !t.text.is_empty(), "{t:?}"),
        Some(ResourceContents::Blob(b)) => assert!(b.uri == first.uri && !b.blob.is_empty(), "{b:?}"),
        other => panic!("contents expected for {}, got {other:?}", first.uri),
    }
    let templates = bounded("templates", client.list_all_resource_templates()).await.expect("templates/list");
    eprintln!("server-everything: {} resources, {} templates", resources.len(), templates.len());

    // Prompts: one with a required argument, supplied.
    let prompts = bounded("prompts/list", client.list_all_prompts()).await.expect("prompts/list");
    let with_args = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .or_else(|| prompts.iter().find(|p| p.arguments.iter().flatten().all(|a| a.required != Some(true))))
        .expect("a prompt whose arguments this test can supply");
    let args: BTreeMap<String, String> = with_args
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true))
        .map(|a| (a.name.clone(), "Paris".to_owned()))
        .collect();
    let supplied = !args.is_empty();
    let got = bounded("prompts/get", client.get_prompt(&with_args.name, args)).await.expect("prompts/get");
    assert!(!got.messages.is_empty(), "{got:?}");
    if supplied {
        let text: String = got.messages.iter().filter_map(|m| m.content.as_text()).collect();
        assert!(text.contains("Paris"), "the argument reaches the prompt: {got:?}");
    }

    // Completion, when offered.
    if client.server_capabilities().completions.is_some() {
        let target = prompts.iter().find(|p| p.name == "completable-prompt").unwrap_or(with_args);
        let arg = target.arguments.iter().flatten().next().map_or("city".to_owned(), |a| a.name.clone());
        let params =
            CompleteRequestParams::new(CompletionReference::prompt(&target.name), CompleteArgument::new(arg, "E"));
        let c = bounded("completion/complete", client.complete(params)).await.expect("completion/complete");
        eprintln!("completions of {}: {:?}", target.name, c.completion.values);
        if target.name == "completable-prompt" {
            assert!(c.completion.values.iter().all(|v| v.starts_with('E')), "{c:?}");
            assert!(!c.completion.values.is_empty(), "{c:?}");
        }
    }

    bounded("close", client.close()).await;
    let status = bounded("shutdown", handle.shutdown()).await.expect("shutdown");
    assert!(status.success(), "server-everything exits cleanly at end of input: {status:?}");

    let specific = support::validate_sent(&wire, "2025-11-25");
    let total = wire.sent().len();
    eprintln!("validated {total} client messages against 2025-11-25 ({specific} against their specific type)");
    assert!(specific >= 10, "most client messages have a specific schema type: {specific} of {total}");
}

/// The validator used above is not a no-op: a client request missing a required member fails.
#[test]
#[should_panic(expected = "invalid CallToolRequest")]
fn the_validator_rejects_an_invalid_client_message() {
    let wire = support::Wire::default();
    wire.record(Frame::Sent, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    wire.record(Frame::Sent, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": {}}}));
    support::validate_sent(&wire, "2025-11-25");
}

/// A client's answer to a server request is checked against the result type of that request.
#[test]
#[should_panic(expected = "invalid CreateMessageResult")]
fn the_validator_types_results_by_the_servers_request() {
    let wire = support::Wire::default();
    wire.record(
        Frame::Received,
        json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 1}}),
    );
    wire.record(Frame::Sent, json!({"jsonrpc": "2.0", "id": 7, "result": {"role": "assistant"}}));
    support::validate_sent(&wire, "2025-11-25");
}

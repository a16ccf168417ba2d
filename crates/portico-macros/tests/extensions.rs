//! `Extension<T>` parameters: request extensions (what HTTP or JSON-RPC middleware attached)
//! injected by type into tools, resources, prompts and completions, in both eras; a request
//! without the extension fails before the function runs.

use std::sync::atomic::{AtomicUsize, Ordering};

use portico::client::{Client, EraMode};
use portico::middleware::McpRequest;
use portico::schema::{
    CompleteArgument, CompleteRequestParams, CompletionReference, ContentBlock, Implementation, ProtocolVersion,
    ResourceContents,
};
use portico::server::{Extension, RequestContext, Server};
use serde_json::json;

const MODES: [EraMode; 2] = [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless];

#[derive(Clone, Debug)]
struct Tenant(String);

/// Calls of `tenant` with the suffix only the test without the layer uses.
static RAN: AtomicUsize = AtomicUsize::new(0);

/// Says which tenant is calling.
#[portico::tool]
async fn tenant(tenant: Extension<Tenant>, cx: RequestContext, suffix: String) -> String {
    if suffix == "?" {
        RAN.fetch_add(1, Ordering::SeqCst);
    }
    // The context is still usable, taken by value after the extension was read from it.
    let id = cx.request_id().to_string();
    assert!(!id.is_empty());
    format!("{}{suffix}", tenant.0.0)
}

/// The tenant's settings.
#[portico::resource("tenant://{key}")]
async fn settings(key: String, who: Extension<Tenant>) -> String {
    format!("{}:{key}", who.0.0)
}

/// Greets the tenant.
#[portico::prompt]
async fn welcome(who: Extension<Tenant>) -> String {
    format!("Welcome, {}", who.0.0)
}

/// Completes keys for the tenant.
#[portico::completion(resource = "tenant://{key}", arg = "key")]
async fn keys(prefix: String, who: Extension<Tenant>) -> Vec<String> {
    vec![format!("{}-{prefix}", who.0.0)]
}

fn server(with_layer: bool) -> Server {
    let b = keys::register(welcome::register(settings::register(tenant::register(Server::builder(
        Implementation::new("ext", "0.0.1"),
    )))));
    let b = if with_layer {
        b.layer(tower::util::MapRequestLayer::new(|mut r: McpRequest| {
            r.extensions_mut().insert(Tenant("acme".into()));
            r
        }))
    } else {
        b
    };
    b.build()
}

async fn connect(server: &Server, mode: EraMode) -> Client {
    let (c, s) = portico::transport::memory::pair();
    server.connect(s);
    Client::builder(Implementation::new("t", "0")).era(mode).connect(c).await.expect("connect")
}

fn first_text(content: &[ContentBlock]) -> String {
    match content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn extensions_are_injected_by_type() {
    for mode in MODES {
        let s = server(true);
        let c = connect(&s, mode).await;
        let r = c.call_tool("tenant", json!({"suffix": "!"})).await.expect("call");
        assert_eq!(first_text(&r.content), "acme!", "{mode:?}");
        // The extension is not an argument: the schema has only `suffix`.
        let tools = c.list_all_tools().await.expect("list");
        let props = tools[0].input_schema.get("properties").cloned().unwrap_or_default();
        assert_eq!(props, json!({"suffix": {"type": "string"}}), "{mode:?}");

        let read = c.read_resource("tenant://theme").await.expect("read");
        assert!(matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "acme:theme"), "{mode:?}");
        let got = c.get_prompt("welcome", []).await.expect("prompt");
        assert_eq!(got.messages.len(), 1);
        let done = c
            .complete(CompleteRequestParams::new(
                CompletionReference::resource("tenant://{key}"),
                CompleteArgument::new("key", "th"),
            ))
            .await
            .expect("complete");
        assert_eq!(done.completion.values, vec!["acme-th".to_string()], "{mode:?}");
    }
}

#[tokio::test]
async fn a_missing_extension_fails_before_the_function_runs() {
    for mode in MODES {
        let s = server(false);
        let c = connect(&s, mode).await;
        let r = c.call_tool("tenant", json!({"suffix": "?"})).await.expect("a tool result");
        assert_eq!(r.is_error, Some(true), "{mode:?}");
        let msg = first_text(&r.content);
        assert!(msg.contains("Tenant") && msg.contains("layer"), "{msg}");
        assert_eq!(RAN.load(Ordering::SeqCst), 0, "the tool did not run");

        let e = c.read_resource("tenant://theme").await.expect_err("no tenant");
        assert_eq!(e.peer_error().map(|o| o.code.0), Some(-32603), "{mode:?}");
        let e = c.get_prompt("welcome", []).await.expect_err("no tenant");
        assert!(e.peer_error().is_some_and(|o| o.message.contains("Tenant")), "{e}");
    }
}

//! The `conformance-server` binary as a child process, driven by a Portico client in every era:
//! every fixture is called and its content checked exactly, every message the client sent is
//! validated against the official schema of the negotiated revision, and the child is shut
//! down (or killed mid-call) and reaped.
//!
//! The kill test needs a call that stays pending: it calls `test_sampling` with a client
//! handler that never answers the server's `sampling/createMessage` (handshake era, where the
//! server waits on the client), so no test-only tool is needed in the fixture server.
#![cfg(unix)]

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use portico::client::{CallOptions, Client, ClientHandler, EraMode};
use portico::schema::{
    CallToolResult, ClientCapabilities, CompleteArgument, CompleteRequestParams, CompletionReference, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode, ErrorObject,
    Implementation, ListRootsResult, LoggingLevel, LoggingMessageNotificationParams, ProtocolVersion, ResourceContents,
    Role, Root, SamplingMessageContentBlock, SubscriptionFilter,
};
use portico::transport::child::{ChildHandle, ChildProcess, ChildTransport};
use portico_conformance::{PNG_BASE64, WAV_BASE64};
use serde_json::{Map, Value, json};
use support::{Tap, Wire, bounded, until};

/// The future type `ClientHandler` methods return.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

const SERVER: &str = env!("CARGO_BIN_EXE_conformance-server");
const SAMPLED: &str = "This is a test response from the client";

const TOOLS: [&str; 35] = [
    "confirm_delete",
    "failing_job",
    "greet",
    "json_schema_2020_12_tool",
    "multi_input",
    "protocol_error_job",
    "slow_compute",
    "test_audio_content",
    "test_custom_header",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_embedded_resource",
    "test_error_handling",
    "test_image_content",
    "test_input_required_result_capabilities",
    "test_input_required_result_elicitation",
    "test_input_required_result_list_roots",
    "test_input_required_result_multi_round",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_request_state",
    "test_input_required_result_sampling",
    "test_input_required_result_tampered_state",
    "test_logging_tool",
    "test_missing_capability",
    "test_multiple_content_types",
    "test_reconnection",
    "test_sampling",
    "test_simple_text",
    "test_streaming_elicitation",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_tool_with_task",
    "test_trigger_prompt_change",
    "test_trigger_tool_change",
];

/// The root the test client offers.
const ROOT: &str = "file:///conformance/root";

fn spawn() -> (ChildTransport, ChildHandle) {
    let mut child = ChildProcess::new(SERVER);
    child.arg("--stdio").env("RUST_LOG", "warn");
    child.command_mut().env_remove(portico_conformance::TEST_TOOLS_ENV);
    child.spawn().expect("spawn conformance-server")
}

/// The server with the test-only tools (`test_sleep`).
fn spawn_with_test_tools() -> (ChildTransport, ChildHandle) {
    let mut child = ChildProcess::new(SERVER);
    child.arg("--stdio").env("RUST_LOG", "warn").env(portico_conformance::TEST_TOOLS_ENV, "1");
    child.spawn().expect("spawn conformance-server")
}

/// What the client saw of the server's requests and notifications.
#[derive(Default)]
struct Seen {
    logs: Mutex<Vec<LoggingMessageNotificationParams>>,
    sampling: Mutex<Vec<CreateMessageRequestParams>>,
    elicitations: Mutex<Vec<ElicitRequestParams>>,
    /// Set when a sampling request arrived (for the kill test).
    sampling_started: AtomicBool,
}

/// Answers sampling and elicitation as the suite's scenarios do, or never (`hang`).
#[derive(Clone, Default)]
struct Handler {
    seen: Arc<Seen>,
    hang: bool,
}

/// The answer the suite's scenarios give to each fixture's elicitation, by its fields.
fn elicitation_answer(params: &ElicitRequestParams) -> Map<String, Value> {
    let ElicitRequestParams::Form(form) = params else { return Map::new() };
    let has = |k: &str| form.requested_schema.properties.contains_key(k);
    let v = if has("username") {
        json!({"username": "testuser", "email": "test@example.com"})
    } else if has("verified") {
        json!({"name": "Jane Smith", "age": 25, "score": 88, "status": "inactive", "verified": false})
    } else if has("name") {
        json!({"name": "Ada"})
    } else if has("ok") {
        json!({"ok": true})
    } else if has("confirm") {
        json!({"confirm": true})
    } else if has("color") {
        json!({"color": "blue"})
    } else if has("context") {
        json!({"context": "the test context"})
    } else {
        json!({"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
               "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]})
    };
    v.as_object().cloned().unwrap_or_default()
}

impl ClientHandler for Handler {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        self.seen.sampling.lock().expect("lock").push(params);
        self.seen.sampling_started.store(true, Ordering::SeqCst);
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            Ok(CreateMessageResult::new(SamplingMessageContentBlock::text(SAMPLED), "test-model")
                .with_stop_reason("endTurn"))
        })
    }

    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        let answer = elicitation_answer(&params);
        self.seen.elicitations.lock().expect("lock").push(params);
        Box::pin(async move { Ok(ElicitResult::accept(answer)) })
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async move { Ok(ListRootsResult::new(vec![Root::new(ROOT)])) })
    }

    fn on_log(&self, params: LoggingMessageNotificationParams) {
        self.seen.logs.lock().expect("lock").push(params);
    }
}

fn capabilities() -> ClientCapabilities {
    ClientCapabilities::new().with_sampling(false).with_elicitation(true, false).with_roots(false)
}

async fn connect(mode: EraMode, handler: Handler) -> (Client, ChildHandle, Wire) {
    let (transport, handle) = spawn();
    let (tap, wire) = Tap::new(transport);
    let client = bounded(
        "connect",
        Client::builder(Implementation::new("conformance-test-client", "1.0.0"))
            .capabilities(capabilities())
            .handler(handler)
            .era(mode)
            .connect(tap),
    )
    .await
    .unwrap_or_else(|e| panic!("connect in {mode:?}: {e}"));
    (client, handle, wire)
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    bounded(name, client.call_tool(name, args)).await.unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn only_text(r: &CallToolResult, ctx: &str) -> String {
    assert_eq!(r.content.len(), 1, "{ctx}: one content block: {r:?}");
    r.content[0].as_text().unwrap_or_else(|| panic!("{ctx}: text content, got {r:?}")).to_owned()
}

/// The JSON after `content=` in an elicitation fixture's text, and the text before it.
fn split_content(text: &str) -> (&str, Value) {
    let (head, content) = text.split_once("content=").unwrap_or_else(|| panic!("no content= in {text:?}"));
    (head, serde_json::from_str(content).unwrap_or_else(|e| panic!("content is not JSON ({e}): {content}")))
}

fn schema_of(params: &ElicitRequestParams) -> Value {
    let ElicitRequestParams::Form(form) = params else { panic!("form elicitation expected, got {params:?}") };
    serde_json::to_value(&form.requested_schema).expect("schema serializes")["properties"].clone()
}

async fn check_content_tools(client: &Client, ctx: &str, version: ProtocolVersion) {
    let tools = bounded("tools/list", client.list_all_tools()).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, TOOLS, "{ctx}: exactly the fixtures, sorted");
    for t in &tools {
        assert!(t.description.as_deref().is_some_and(|d| !d.is_empty()), "{ctx}: {} has a description", t.name);
        assert_eq!(t.input_schema.get("type"), Some(&json!("object")), "{ctx}: {} inputSchema", t.name);
    }
    let s = &tools.iter().find(|t| t.name == "json_schema_2020_12_tool").expect("2020-12 tool").input_schema;
    assert_eq!(s.get("$schema"), Some(&json!("https://json-schema.org/draft/2020-12/schema")), "{ctx}");
    assert!(s.get("$defs").and_then(|d| d.get("address")).is_some(), "{ctx}: $defs kept");
    assert_eq!(s.get("additionalProperties"), Some(&json!(false)), "{ctx}");
    for keyword in ["allOf", "if", "then", "else"] {
        assert!(s.contains_key(keyword), "{ctx}: {keyword} kept");
    }
    assert_eq!(s["$defs"]["address"]["$anchor"], "addressDef", "{ctx}: $anchor kept");
    let h = &tools.iter().find(|t| t.name == "test_custom_header").expect("header tool").input_schema;
    assert_eq!(h["properties"]["region"]["x-mcp-header"], "Region", "{ctx}");
    let r = call(
        client,
        "json_schema_2020_12_tool",
        json!({"name": "Ada", "address": {"city": "Paris"}, "email": "ada@example.com"}),
    )
    .await;
    assert!(only_text(&r, ctx).contains("Paris"), "{ctx}");

    let r = call(client, "test_simple_text", json!({})).await;
    assert_eq!(only_text(&r, ctx), "This is a simple text response for testing.", "{ctx}");
    assert_ne!(r.is_error, Some(true));
    // No arguments at all works too (the suite's simple-text scenario sends none).
    let r = call(client, "test_simple_text", Value::Null).await;
    assert_eq!(only_text(&r, ctx), "This is a simple text response for testing.", "{ctx}");

    let r = call(client, "test_image_content", json!({})).await;
    match r.content.as_slice() {
        [ContentBlock::Image(i)] => {
            assert_eq!((i.mime_type.as_str(), i.data.as_str()), ("image/png", PNG_BASE64), "{ctx}")
        }
        other => panic!("{ctx}: one image expected, got {other:?}"),
    }

    let r = call(client, "test_audio_content", json!({})).await;
    match r.content.as_slice() {
        [ContentBlock::Audio(a)] => {
            assert_eq!((a.mime_type.as_str(), a.data.as_str()), ("audio/wav", WAV_BASE64), "{ctx}")
        }
        // 2024-11-05 has no audio content: the server says so in text.
        [ContentBlock::Text(t)] if version < ProtocolVersion::V2025_03_26 => {
            assert!(t.text.contains("audio/wav") && t.text.contains("not supported"), "{ctx}: {t:?}")
        }
        other => panic!("{ctx}: one audio block expected, got {other:?}"),
    }

    let r = call(client, "test_embedded_resource", json!({})).await;
    match r.content.as_slice() {
        [ContentBlock::Resource(e)] => match &e.resource {
            ResourceContents::Text(t) => {
                assert_eq!(t.uri, "test://embedded-resource", "{ctx}");
                assert_eq!(t.mime_type.as_deref(), Some("text/plain"), "{ctx}");
                assert_eq!(t.text, "This is an embedded resource content.", "{ctx}");
            }
            other => panic!("{ctx}: text resource expected, got {other:?}"),
        },
        other => panic!("{ctx}: one embedded resource expected, got {other:?}"),
    }

    let r = call(client, "test_multiple_content_types", json!({})).await;
    match r.content.as_slice() {
        [ContentBlock::Text(t), ContentBlock::Image(i), ContentBlock::Resource(e)] => {
            assert_eq!(t.text, "Multiple content types test:", "{ctx}");
            assert_eq!((i.mime_type.as_str(), i.data.as_str()), ("image/png", PNG_BASE64), "{ctx}");
            let ResourceContents::Text(res) = &e.resource else { panic!("{ctx}: text resource expected") };
            assert_eq!(res.uri, "test://mixed-content-resource", "{ctx}");
            assert_eq!(res.mime_type.as_deref(), Some("application/json"), "{ctx}");
            assert_eq!(serde_json::from_str::<Value>(&res.text).expect("json"), json!({"test": "data", "value": 123}));
        }
        other => panic!("{ctx}: text, image, resource expected, got {other:?}"),
    }

    let r = call(client, "test_error_handling", json!({})).await;
    assert_eq!(r.is_error, Some(true), "{ctx}: a tool execution error, not a protocol error");
    assert_eq!(only_text(&r, ctx), "This tool intentionally returns an error for testing", "{ctx}");

    let e = bounded("unknown tool", client.call_tool("no_such_tool", json!({}))).await.expect_err("unknown tool");
    assert_eq!(e.peer_error().map(|p| p.code), Some(ErrorCode::INVALID_PARAMS), "{ctx}: {e}");
}

async fn check_progress_and_logging(client: &Client, seen: &Seen, ctx: &str) {
    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = progress.clone();
    let options = CallOptions::new().with_progress(move |p| sink.lock().expect("lock").push((p.progress, p.total)));
    let r = bounded("progress", client.call_tool_with("test_tool_with_progress", json!({}), options))
        .await
        .expect("progress");
    assert!(!only_text(&r, ctx).is_empty(), "{ctx}");
    let got = progress.lock().expect("lock").clone();
    assert_eq!(
        got,
        [(0.0, Some(100.0)), (50.0, Some(100.0)), (100.0, Some(100.0))],
        "{ctx}: progress before the result"
    );

    // Below the level set: nothing. Handshake era: logging/setLevel; 2026: the request's _meta.
    // Notifications precede the response on the stream, so the result arriving means they
    // were delivered.
    bounded("setLevel", client.set_logging_level(LoggingLevel::Warning)).await.expect("setLevel warning");
    call(client, "test_tool_with_logging", json!({})).await;
    assert!(seen.logs.lock().expect("lock").is_empty(), "{ctx}: info logs filtered at warning");
    bounded("setLevel", client.set_logging_level(LoggingLevel::Info)).await.expect("setLevel info");
    let r = call(client, "test_tool_with_logging", json!({})).await;
    assert!(!only_text(&r, ctx).is_empty(), "{ctx}");
    let logs = std::mem::take(&mut *seen.logs.lock().expect("lock"));
    let got: Vec<(LoggingLevel, Value)> = logs.iter().map(|l| (l.level, l.data.clone())).collect();
    let want: Vec<(LoggingLevel, Value)> =
        ["Tool execution started", "Tool processing data", "Tool execution completed"]
            .iter()
            .map(|m| (LoggingLevel::Info, json!(m)))
            .collect();
    assert_eq!(got, want, "{ctx}: three info messages, in order");
}

async fn check_input_tools(client: &Client, seen: &Seen, ctx: &str) {
    let r = call(client, "test_sampling", json!({"prompt": "Test prompt for sampling"})).await;
    assert_eq!(only_text(&r, ctx), format!("LLM response: {SAMPLED}"), "{ctx}");
    let asked = seen.sampling.lock().expect("lock").pop().expect("the client was asked to sample");
    assert_eq!(asked.max_tokens, 100, "{ctx}");
    assert_eq!(asked.messages.len(), 1, "{ctx}");
    assert_eq!(asked.messages[0].role, Role::User, "{ctx}");
    let texts: Vec<&str> =
        asked.messages[0].content.blocks().iter().filter_map(SamplingMessageContentBlock::as_text).collect();
    assert_eq!(texts, ["Test prompt for sampling"], "{ctx}");

    let r = call(client, "test_elicitation", json!({"message": "Please provide your information"})).await;
    let text = only_text(&r, ctx);
    let (head, content) = split_content(&text);
    assert_eq!(head, "User response: action=accept, ", "{ctx}");
    assert_eq!(content, json!({"username": "testuser", "email": "test@example.com"}), "{ctx}");
    let asked = seen.elicitations.lock().expect("lock").pop().expect("elicited");
    assert_eq!(asked.message(), "Please provide your information", "{ctx}");
    let props = schema_of(&asked);
    assert_eq!(props["username"], json!({"type": "string", "description": "User's response"}), "{ctx}");
    assert_eq!(props["email"], json!({"type": "string", "description": "User's email address"}), "{ctx}");

    let r = call(client, "test_elicitation_sep1034_defaults", json!({})).await;
    let text = only_text(&r, ctx);
    let (head, content) = split_content(&text);
    assert_eq!(head, "Elicitation completed: action=accept, ", "{ctx}");
    assert_eq!(content["name"], "Jane Smith", "{ctx}");
    let props = schema_of(&seen.elicitations.lock().expect("lock").pop().expect("elicited"));
    assert_eq!((&props["name"]["type"], &props["name"]["default"]), (&json!("string"), &json!("John Doe")), "{ctx}");
    assert_eq!(props["age"]["type"], "integer", "{ctx}");
    assert_eq!(props["age"]["default"].as_f64(), Some(30.0), "{ctx}");
    assert_eq!((&props["score"]["type"], &props["score"]["default"]), (&json!("number"), &json!(95.5)), "{ctx}");
    assert_eq!(props["status"]["enum"], json!(["active", "inactive", "pending"]), "{ctx}");
    assert_eq!(props["status"]["default"], "active", "{ctx}");
    assert_eq!((&props["verified"]["type"], &props["verified"]["default"]), (&json!("boolean"), &json!(true)), "{ctx}");

    let r = call(client, "test_elicitation_sep1330_enums", json!({})).await;
    let text = only_text(&r, ctx);
    let (head, content) = split_content(&text);
    assert_eq!(head, "Elicitation completed: action=accept, ", "{ctx}");
    assert_eq!(content["titledMulti"], json!(["value1", "value2"]), "{ctx}");
    let props = schema_of(&seen.elicitations.lock().expect("lock").pop().expect("elicited"));
    let titled = |titles: [&str; 3]| -> Value {
        ["value1", "value2", "value3"].iter().zip(titles).map(|(v, t)| json!({"const": v, "title": t})).collect()
    };
    assert_eq!(props["untitledSingle"], json!({"type": "string", "enum": ["option1", "option2", "option3"]}), "{ctx}");
    assert_eq!(
        props["titledSingle"],
        json!({"type": "string", "oneOf": titled(["First Option", "Second Option", "Third Option"])}),
        "{ctx}"
    );
    assert_eq!(
        props["legacyEnum"],
        json!({"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]}),
        "{ctx}"
    );
    assert_eq!(
        props["untitledMulti"],
        json!({"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}}),
        "{ctx}"
    );
    assert_eq!(
        props["titledMulti"],
        json!({"type": "array", "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])}}),
        "{ctx}"
    );
}

async fn check_resources(client: &Client, ctx: &str, stateless: bool) {
    let resources = bounded("resources/list", client.list_all_resources()).await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://static-binary", "test://static-text", "test://watched-resource"], "{ctx}");
    assert!(resources.iter().all(|r| !r.name.is_empty() && r.description.is_some()), "{ctx}");
    let templates = bounded("templates", client.list_all_resource_templates()).await.expect("templates/list");
    assert_eq!(templates.len(), 1, "{ctx}");
    assert_eq!(templates[0].uri_template, "test://template/{id}/data", "{ctx}");

    let r = bounded("read", client.read_resource("test://static-text")).await.expect("read static-text");
    match r.contents.as_slice() {
        [ResourceContents::Text(t)] => {
            assert_eq!(t.uri, "test://static-text", "{ctx}");
            assert_eq!(t.mime_type.as_deref(), Some("text/plain"), "{ctx}");
            assert_eq!(t.text, "This is the content of the static text resource.", "{ctx}");
        }
        other => panic!("{ctx}: one text content expected, got {other:?}"),
    }
    let r = bounded("read", client.read_resource("test://static-binary")).await.expect("read static-binary");
    match r.contents.as_slice() {
        [ResourceContents::Blob(b)] => {
            assert_eq!(
                (b.uri.as_str(), b.mime_type.as_deref(), b.blob.as_str()),
                ("test://static-binary", Some("image/png"), PNG_BASE64),
                "{ctx}"
            );
        }
        other => panic!("{ctx}: one blob expected, got {other:?}"),
    }
    let r = bounded("read", client.read_resource("test://template/123/data")).await.expect("read template");
    match r.contents.as_slice() {
        [ResourceContents::Text(t)] => {
            assert_eq!(t.uri, "test://template/123/data", "{ctx}");
            assert_eq!(t.mime_type.as_deref(), Some("application/json"), "{ctx}");
            assert_eq!(t.text, r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#, "{ctx}");
        }
        other => panic!("{ctx}: one text content expected, got {other:?}"),
    }
    let e = bounded("read missing", client.read_resource("test://nothing-here")).await.expect_err("missing resource");
    let want = if stateless { ErrorCode::INVALID_PARAMS } else { ErrorCode::RESOURCE_NOT_FOUND };
    assert_eq!(e.peer_error().map(|p| p.code), Some(want), "{ctx}: {e}");

    if stateless {
        let sub = bounded(
            "listen",
            client.listen(SubscriptionFilter::new().with_resource_subscription("test://watched-resource")),
        )
        .await
        .expect("subscriptions/listen");
        assert_eq!(
            sub.acknowledged().resource_subscriptions.as_deref(),
            Some(&["test://watched-resource".to_owned()][..]),
            "{ctx}"
        );
    } else {
        bounded("subscribe", client.subscribe_resource("test://watched-resource")).await.expect("subscribe");
        bounded("unsubscribe", client.unsubscribe_resource("test://watched-resource")).await.expect("unsubscribe");
    }
}

async fn check_prompts(client: &Client, ctx: &str) {
    let prompts = bounded("prompts/list", client.list_all_prompts()).await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test_input_required_result_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_simple_prompt"
        ],
        "{ctx}"
    );
    assert!(prompts.iter().all(|p| p.description.is_some()), "{ctx}: every prompt has a description");
    let args: Vec<(&str, Option<bool>)> =
        prompts[1].arguments.iter().flatten().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(args, [("arg1", Some(true)), ("arg2", Some(true))], "{ctx}");

    let get = |name: &'static str, args: &[(&str, &str)]| {
        let args: BTreeMap<String, String> = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        async move { bounded(name, client.get_prompt(name, args)).await }
    };
    let p = get("test_simple_prompt", &[]).await.expect("simple prompt");
    assert_eq!(p.messages.len(), 1, "{ctx}");
    assert_eq!(
        (p.messages[0].role, p.messages[0].content.as_text()),
        (Role::User, Some("This is a simple prompt for testing.")),
        "{ctx}"
    );

    let p = get("test_prompt_with_arguments", &[("arg1", "hello"), ("arg2", "world")]).await.expect("prompt with args");
    assert_eq!(p.messages[0].content.as_text(), Some("Prompt with arguments: arg1='hello', arg2='world'"), "{ctx}");
    let e = get("test_prompt_with_arguments", &[("arg1", "hello")]).await.expect_err("arg2 is required");
    assert_eq!(e.peer_error().map(|p| p.code), Some(ErrorCode::INVALID_PARAMS), "{ctx}: {e}");

    let p = get("test_prompt_with_embedded_resource", &[("resourceUri", "test://example-resource")])
        .await
        .expect("embedded");
    match (&p.messages[0].content, p.messages[1].content.as_text()) {
        (ContentBlock::Resource(e), Some("Please process the embedded resource above.")) => {
            let ResourceContents::Text(t) = &e.resource else { panic!("{ctx}: text resource expected") };
            assert_eq!(
                (t.uri.as_str(), t.mime_type.as_deref()),
                ("test://example-resource", Some("text/plain")),
                "{ctx}"
            );
            assert_eq!(t.text, "Embedded resource content for testing.", "{ctx}");
        }
        other => panic!("{ctx}: embedded resource then text expected, got {other:?}"),
    }

    let p = get("test_prompt_with_image", &[]).await.expect("image prompt");
    match (&p.messages[0].content, p.messages[1].content.as_text()) {
        (ContentBlock::Image(i), Some("Please analyze the image above.")) => {
            assert_eq!((i.mime_type.as_str(), i.data.as_str()), ("image/png", PNG_BASE64), "{ctx}")
        }
        other => panic!("{ctx}: image then text expected, got {other:?}"),
    }

    for (typed, want) in [("pa", &["paris", "park", "party"][..]), ("part", &["party"][..]), ("test", &[][..])] {
        let params = CompleteRequestParams::new(
            CompletionReference::prompt("test_prompt_with_arguments"),
            CompleteArgument::new("arg1", typed),
        );
        let c = bounded("complete", client.complete(params)).await.expect("completion/complete");
        assert_eq!(c.completion.values, want, "{ctx}: completions of {typed:?}");
    }
}

/// The fixtures of the 2026-07-28 scenarios (diagnostics, input requests under named keys,
/// tasks), as a client sees them in any era. This client does not declare the tasks
/// extension, so task-capable tools answer synchronously, and task-only ones are refused in
/// 2026-07-28 (handshake-era clients cannot declare it: they get the result).
async fn check_later_fixtures(client: &Client, ctx: &str, version: ProtocolVersion) {
    let text = |r: CallToolResult| only_text(&r, ctx);
    let call_err = |name: &'static str| async move {
        bounded(name, client.call_tool(name, json!({}))).await.expect_err("an error").peer_error().map(|e| e.code)
    };
    assert_eq!(text(call(client, "greet", json!({"name": "World"})).await), "Hello, World!", "{ctx}");
    assert_eq!(
        text(call(client, "slow_compute", json!({"seconds": 0, "label": "x"})).await),
        "computed x after 0 s",
        "{ctx}"
    );
    assert_eq!(text(call(client, "test_logging_tool", json!({})).await), "logged", "{ctx}");
    assert_eq!(text(call(client, "test_custom_header", json!({"region": "eu"})).await), "region=eu", "{ctx}");
    assert_eq!(text(call(client, "test_trigger_tool_change", json!({})).await), "tool list changed", "{ctx}");
    assert_eq!(text(call(client, "test_trigger_prompt_change", json!({})).await), "prompt list changed", "{ctx}");
    let tools = bounded("tools/list", client.list_all_tools()).await.expect("tools/list");
    assert_eq!(tools.len(), TOOLS.len(), "{ctx}: re-registering changes nothing");
    assert_eq!(call_err("protocol_error_job").await, Some(ErrorCode::INTERNAL_ERROR), "{ctx}");
    assert_eq!(
        text(call(client, "test_missing_capability", json!({})).await),
        format!("LLM response: {SAMPLED}"),
        "{ctx}"
    );
    if version.is_stateless() {
        let missing = Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(call_err("failing_job").await, missing, "{ctx}: tasks only");
        assert_eq!(call_err("test_tool_with_task").await, missing, "{ctx}: tasks only");
    } else {
        let r = call(client, "failing_job", json!({})).await;
        assert_eq!((r.is_error, text(r.clone()).as_str()), (Some(true), portico_conformance::FAILING_JOB_TEXT));
    }
    if !version.has_elicitation() {
        return;
    }
    let hello = "Hello, Ada!";
    assert_eq!(text(call(client, "test_streaming_elicitation", json!({})).await), hello, "{ctx}");
    assert_eq!(text(call(client, "test_input_required_result_elicitation", json!({})).await), hello, "{ctx}");
    assert_eq!(
        text(call(client, "test_input_required_result_sampling", json!({})).await),
        format!("Sampling response: {SAMPLED}"),
        "{ctx}"
    );
    assert_eq!(
        text(call(client, "test_input_required_result_list_roots", json!({})).await),
        format!("Client roots: {ROOT}"),
        "{ctx}"
    );
    for name in ["test_input_required_result_request_state", "test_input_required_result_tampered_state"] {
        assert_eq!(text(call(client, name, json!({})).await), "state-ok: confirmed=true", "{ctx}");
    }
    assert_eq!(
        text(call(client, "test_input_required_result_multiple_inputs", json!({})).await),
        format!("{SAMPLED} Ada! (1 roots)"),
        "{ctx}"
    );
    assert_eq!(text(call(client, "test_input_required_result_multi_round", json!({})).await), "Ada likes blue");
    assert_eq!(
        text(call(client, "test_input_required_result_capabilities", json!({})).await),
        format!("sampling=Some(\"{SAMPLED}\"), elicitation=Some(\"Ada\")"),
        "{ctx}"
    );
    assert_eq!(text(call(client, "confirm_delete", json!({"filename": "f.txt"})).await), "Deleted f.txt", "{ctx}");
    assert_eq!(text(call(client, "multi_input", json!({})).await), "name=\"Ada\", confirm=true", "{ctx}");
    if !version.is_stateless() {
        assert_eq!(text(call(client, "test_tool_with_task", json!({})).await), hello, "{ctx}");
    }
    let p = bounded("prompt", client.get_prompt("test_input_required_result_prompt", BTreeMap::new()))
        .await
        .expect("prompt with input");
    assert_eq!(p.messages[0].content.as_text(), Some("Use this context: the test context"), "{ctx}");
}

/// Every fixture, in one era, through the real binary; then a clean shutdown.
async fn exercise(mode: EraMode, want: ProtocolVersion) {
    let handler = Handler::default();
    let seen = handler.seen.clone();
    let (client, handle, wire) = connect(mode, handler).await;
    let version = client.protocol_version();
    let ctx = format!("{mode:?} → {version}");
    assert_eq!(version, want, "{ctx}: negotiated revision");
    assert_eq!(client.server_info().name, "portico-conformance", "{ctx}");
    assert_eq!(client.instructions(), Some(portico_conformance::INSTRUCTIONS), "{ctx}");
    let caps = client.server_capabilities();
    assert!(
        caps.tools.is_some() && caps.prompts.is_some() && caps.resources.is_some() && caps.logging.is_some(),
        "{ctx}"
    );
    bounded("ping", client.ping()).await.expect("ping");

    check_content_tools(&client, &ctx, version).await;
    check_progress_and_logging(&client, &seen, &ctx).await;
    if version.has_elicitation() {
        check_input_tools(&client, &seen, &ctx).await;
    } else {
        // 2024-11-05 has no elicitation: the server must not send it, even to a client that
        // declared the capability; the tool reports the refusal as its error.
        let r = call(&client, "test_elicitation", json!({"message": "hi"})).await;
        assert!(only_text(&r, &ctx).contains("has no such request"), "{ctx}: {r:?}");
        assert!(seen.elicitations.lock().expect("lock").is_empty(), "{ctx}: nothing was sent");
    }
    check_resources(&client, &ctx, version.is_stateless()).await;
    check_prompts(&client, &ctx).await;
    check_later_fixtures(&client, &ctx, version).await;

    bounded("close", client.close()).await;
    let status = bounded("shutdown", handle.shutdown()).await.expect("shutdown");
    assert!(status.success(), "{ctx}: the server exits 0 at end of input, got {status:?}");
    let checked = support::validate_sent(&wire, version.as_str());
    assert!(checked > 20, "{ctx}: only {checked} client messages had a specific schema type");
    let checked = support::validate(&wire, version.as_str(), support::Frame::Received);
    assert!(checked > 30, "{ctx}: only {checked} server messages had a specific schema type");
}

#[tokio::test]
async fn handshake_2025_11_25() {
    exercise(EraMode::Handshake(ProtocolVersion::V2025_11_25), ProtocolVersion::V2025_11_25).await;
}

#[tokio::test]
async fn handshake_2024_11_05() {
    exercise(EraMode::Handshake(ProtocolVersion::V2024_11_05), ProtocolVersion::V2024_11_05).await;
}

#[tokio::test]
async fn stateless_2026_07_28() {
    exercise(EraMode::Stateless, ProtocolVersion::V2026_07_28).await;
}

#[tokio::test]
async fn auto_detects_the_stateless_server() {
    exercise(EraMode::Auto, ProtocolVersion::V2026_07_28).await;
}

/// The process state letter from `/proc/<pid>/stat`, or `None` once it is gone (reaped).
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Kills the child while `name(args)` is pending (once `ready` holds too) and checks the call
/// fails as closed, the child is reaped, and later calls fail at once.
async fn kill_while_pending(
    client: Client,
    mut handle: ChildHandle,
    wire: &Wire,
    name: &'static str,
    args: Value,
    ready: impl Fn() -> bool,
) {
    let pid = handle.pid();
    let c2 = client.clone();
    let pending = tokio::spawn(async move { c2.call_tool(name, args).await });
    until("the call is sent", || {
        wire.sent().iter().any(|m| m["method"] == "tools/call" && m["params"]["name"] == name)
    })
    .await;
    until("the test's condition", &ready).await;
    assert!(!pending.is_finished(), "the call is still pending");

    handle.start_kill();
    let e = bounded("the pending call", pending).await.expect("join").expect_err("the call fails");
    assert!(e.is_closed(), "the pending call fails as closed, got {e:?}");
    let status = bounded("wait", handle.wait()).await.expect("wait");
    assert!(!status.success(), "killed, not exited: {status:?}");
    until("the child is reaped", || proc_state(pid).is_none()).await;
    bounded("closed", client.closed()).await;
    assert!(client.is_closed());
    let e = bounded("call after kill", client.call_tool("test_simple_text", json!({}))).await.expect_err("closed");
    assert!(e.is_closed(), "{e:?}");
}

/// A slow call on the server side (the test-only `test_sleep`, enabled by
/// `PORTICO_CONFORMANCE_TEST_TOOLS=1`), in both eras.
#[tokio::test]
async fn killing_the_child_fails_a_pending_call() {
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let (transport, handle) = spawn_with_test_tools();
        let (tap, wire) = Tap::new(transport);
        let client =
            bounded("connect", Client::builder(Implementation::new("kill-test", "1.0.0")).era(mode).connect(tap))
                .await
                .expect("connect");
        let tools = bounded("tools/list", client.list_all_tools()).await.expect("tools/list");
        assert!(tools.iter().any(|t| t.name == "test_sleep"), "{mode:?}: the test tool is enabled");
        kill_while_pending(client, handle, &wire, "test_sleep", json!({"ms": 600_000}), || true).await;
    }
}

/// The pending call is `test_sampling`, and the client's handler is still answering the
/// server's `sampling/createMessage` (it never does) when the child dies.
#[tokio::test]
async fn killing_the_child_while_the_client_handler_runs() {
    let handler = Handler { hang: true, ..Handler::default() };
    let seen = handler.seen.clone();
    let (client, handle, wire) = connect(EraMode::Handshake(ProtocolVersion::V2025_11_25), handler).await;
    let ready = move || seen.sampling_started.load(Ordering::SeqCst);
    kill_while_pending(client, handle, &wire, "test_sampling", json!({"prompt": "never answered"}), ready).await;
}

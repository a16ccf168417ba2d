//! Client ↔ server over the in-memory pair, for every method, in every revision; every message
//! either side emitted is then validated against the official JSON Schema of that revision.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use portico::client::{CallOptions, Client, EraMode};
use portico::schema::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One test per revision, each running `$body(mode)`, so that a failure names its revision and
/// hides none of the others. Time is paused (Tokio's test clock): the fixture's sleeps and the
/// polls of `eventually` take no real time.
macro_rules! per_revision {
    ($name:ident => $body:ident) => {
        mod $name {
            use super::*;

            #[tokio::test(start_paused = true)]
            async fn v2024_11_05() {
                $body(EraMode::Handshake(ProtocolVersion::V2024_11_05)).await
            }

            #[tokio::test(start_paused = true)]
            async fn v2025_03_26() {
                $body(EraMode::Handshake(ProtocolVersion::V2025_03_26)).await
            }

            #[tokio::test(start_paused = true)]
            async fn v2025_06_18() {
                $body(EraMode::Handshake(ProtocolVersion::V2025_06_18)).await
            }

            #[tokio::test(start_paused = true)]
            async fn v2025_11_25() {
                $body(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await
            }

            #[tokio::test(start_paused = true)]
            async fn stateless_2026_07_28() {
                $body(EraMode::Stateless).await
            }
        }
    };
}

/// One test per era (the newest handshake revision, and the stateless era), like
/// [`per_revision`].
macro_rules! per_era {
    ($name:ident => $body:ident) => {
        mod $name {
            use super::*;

            #[tokio::test(start_paused = true)]
            async fn handshake() {
                $body(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await
            }

            #[tokio::test(start_paused = true)]
            async fn stateless() {
                $body(EraMode::Stateless).await
            }
        }
    };
}

async fn connect(mode: EraMode) -> (Client, portico::server::Server, Arc<Probes>, Arc<Recorder>, Wire) {
    let probes = Arc::new(Probes::default());
    let server = fixture_server(probes.clone());
    let (c, s, wire) = tapped_pair();
    server.connect(s);
    let rec = Arc::new(Recorder::default());
    let client = Client::builder(Implementation::new("test-client", "0.0.1"))
        .capabilities(all_caps())
        .handler(Handler(rec.clone()))
        .era(mode)
        .connect(c)
        .await
        .expect("connect");
    (client, server, probes, rec, wire)
}

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text content, got {other:?}"),
    }
}

per_revision!(every_method_in_every_revision => every_method);

async fn every_method(mode: EraMode) {
    let (client, _server, _probes, rec, wire) = connect(mode).await;
    let version = client.protocol_version();
    let ctx = format!("{version}");
    assert_eq!(client.server_info().name, "fixture", "{ctx}");
    assert!(client.server_capabilities().tools.is_some(), "{ctx}");
    assert_eq!(client.instructions(), Some("Use echo to test."), "{ctx}");
    client.ping().await.expect("ping");

    // Tools.
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "ask", "echo", "fail", "log", "progress", "sleep"], "{ctx}: sorted, deterministic");
    let add = tools.iter().find(|t| t.name == "add").expect("add");
    assert_eq!(add.output_schema.is_some(), version >= ProtocolVersion::V2025_06_18, "{ctx}: outputSchema by revision");
    assert_eq!(
        text(&client.call_tool("echo", json!({"text": "hé \"quoted\"\n"})).await.expect("echo")),
        "hé \"quoted\"\n"
    );
    let sum = client.call_tool("add", json!({"a": 2, "b": 40})).await.expect("add");
    if version >= ProtocolVersion::V2025_06_18 {
        assert_eq!(sum.structured_content, Some(json!({"sum": 42})), "{ctx}");
    } else {
        assert_eq!(sum.structured_content, None, "{ctx}: no structuredContent before 2025-06-18");
    }
    assert_eq!(serde_json::from_str::<Value>(&text(&sum)).expect("text copy"), json!({"sum": 42}), "{ctx}: text copy");
    let failed = client.call_tool("fail", json!({})).await.expect("tool errors are results");
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(text(&failed), "the disk is full");
    let unknown = client.call_tool("nope", json!({})).await.expect_err("unknown tool");
    assert_eq!(unknown.peer_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS), "{ctx}");
    let bad = client.call_tool("add", json!({"a": "two"})).await;
    if version.tool_input_errors_are_results() {
        let r = bad.expect("invalid input is a tool execution error");
        assert_eq!(r.is_error, Some(true), "{ctx}");
        assert!(text(&r).contains("invalid arguments"), "{ctx}");
    } else {
        assert_eq!(
            bad.expect_err("protocol error").peer_error().map(|e| e.code),
            Some(ErrorCode::INVALID_PARAMS),
            "{ctx}"
        );
    }

    // Progress: 0, 50, 100 — the repeated 50 is dropped by the server.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = CallOptions::new().with_progress(move |p| s2.lock().expect("p").push(p.progress));
    let r = client.call_tool_with("progress", json!({}), opts).await.expect("progress");
    assert_eq!(text(&r), "done");
    assert_eq!(*seen.lock().expect("p"), vec![0.0, 50.0, 100.0], "{ctx}");

    // Logging: handshake era filters by logging/setLevel, 2026 by the request's _meta level.
    client.set_logging_level(LoggingLevel::Info).await.expect("setLevel");
    client.call_tool("log", json!({})).await.expect("log");
    assert!(eventually(|| !rec.logs.lock().expect("logs").is_empty()).await, "{ctx}: a log arrives");
    let logs = rec.logs.lock().expect("logs").clone();
    assert_eq!(
        logs.iter().map(|l| l.level).collect::<Vec<_>>(),
        vec![LoggingLevel::Warning],
        "{ctx}: debug filtered out"
    );

    // Input requests: elicitation, sampling and roots through one handler API.
    let asked = client.call_tool("ask", json!({})).await.expect("ask");
    if version.has_elicitation() {
        assert_eq!(text(&asked), "Ada|hi (1)|2", "{ctx}");
    } else {
        assert_eq!(asked.is_error, Some(true), "{ctx}: no elicitation before 2025-06-18");
        assert!(text(&asked).contains("has no such request"), "{ctx}");
    }

    // Resources.
    let resources = client.list_all_resources().await.expect("resources/list");
    assert_eq!(resources.len(), 1);
    let templates = client.list_all_resource_templates().await.expect("templates/list");
    assert_eq!(templates[0].uri_template, "test://items/{id}");
    let r = client.read_resource("test://static").await.expect("read");
    assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "static text"), "{ctx}");
    let r = client.read_resource("test://items/42").await.expect("template read");
    assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "item 42"), "{ctx}");
    for missing in ["test://items/missing", "test://nothing"] {
        let e = client.read_resource(missing).await.expect_err("not found");
        let want = if version.is_stateless() { ErrorCode::INVALID_PARAMS } else { ErrorCode::RESOURCE_NOT_FOUND };
        assert_eq!(e.peer_error().map(|e| e.code), Some(want), "{ctx}: {missing}");
    }

    // Prompts and completion.
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts[0].name, "explain");
    let p = client.get_prompt("explain", [("topic".to_owned(), "borrowing".to_owned())]).await.expect("get");
    assert!(matches!(&p.messages[0].content, ContentBlock::Text(t) if t.text == "Explain borrowing"), "{ctx}");
    let e = client.get_prompt("explain", []).await.expect_err("missing argument");
    assert_eq!(e.peer_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS));
    let c = client
        .complete(CompleteRequestParams::new(
            CompletionReference::prompt("explain"),
            CompleteArgument::new("topic", "py"),
        ))
        .await
        .expect("complete");
    assert_eq!(c.completion.values, vec!["python", "pytorch"], "{ctx}");

    client.close().await;
    validate_wire(&wire, version);
}

per_era!(cancellation_stops_the_handler_in_both_eras => cancellation_stops_the_handler);

async fn cancellation_stops_the_handler(mode: EraMode) {
    let (client, _server, probes, _rec, wire) = connect(mode).await;
    let token = CancellationToken::new();
    let c2 = client.clone();
    let t2 = token.clone();
    let call = tokio::spawn(async move {
        c2.call_tool_with("sleep", json!({"ms": 60_000}), CallOptions::new().with_cancel(t2)).await
    });
    assert!(eventually(|| probes.sleeping.load(Ordering::SeqCst) == 1).await);
    token.cancel();
    let e = call.await.expect("join").expect_err("cancelled");
    assert!(e.is_cancelled(), "{e:?}");
    assert!(eventually(|| probes.cancelled.load(Ordering::SeqCst) == 1).await, "the server dropped the handler");
    // No response was sent for the cancelled request.
    let frames = wire.frames();
    let sleep_id = frames
        .iter()
        .find(|(s, m)| *s == "client" && m["params"]["name"] == "sleep")
        .map(|(_, m)| m["id"].clone())
        .expect("sent");
    assert!(
        !frames.iter().any(|(s, m)| *s == "server" && m.get("id") == Some(&sleep_id)),
        "no response after cancellation"
    );
    client.close().await;
}

// The token a handler asks for (made on first use, not with the request) is cancelled with
// the request, whether asked for before the cancellation arrives or after.
per_era!(a_handlers_cancellation_token_fires_when_the_client_cancels => a_handlers_cancellation_token_fires);

async fn a_handlers_cancellation_token_fires(mode: EraMode) {
    use portico::server::{RequestContext, Server};
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let server = Server::builder(Implementation::new("cancel", "1.0.0"))
        .tool(Tool::new("watch", schema(json!({}), &[])), move |_: Empty, cx: RequestContext| {
            let seen = seen_tx.clone();
            async move {
                // Work spawned outside the handler's future, told to stop by the token.
                let token = cx.cancellation().clone();
                let early = seen.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    let _ = early.send("token asked for before");
                });
                let _ = seen.send("started");
                // Keeps the context alive past the cancellation: this future is dropped.
                let late = LateToken(Some(cx), seen);
                std::future::pending::<()>().await;
                drop(late);
                "unreachable".to_string()
            }
        })
        .build();
    let (c, s, _wire) = tapped_pair();
    server.connect(s);
    let client = Client::builder(Implementation::new("t", "0")).era(mode).connect(c).await.expect("connect");
    let token = CancellationToken::new();
    let (c2, t2) = (client.clone(), token.clone());
    let call =
        tokio::spawn(async move { c2.call_tool_with("watch", json!({}), CallOptions::new().with_cancel(t2)).await });
    assert_eq!(seen_rx.recv().await, Some("started"));
    token.cancel();
    assert!(call.await.expect("join").expect_err("cancelled").is_cancelled());
    let mut got = Vec::new();
    for _ in 0..2 {
        let next = tokio::time::timeout(Duration::from_secs(5), seen_rx.recv()).await;
        got.push(next.expect("the token fired").expect("open"));
    }
    got.sort_unstable();
    assert_eq!(got, ["token asked for after", "token asked for before"], "{mode:?}");
    client.close().await;
}

/// Asks for the context's token only when dropped (after the cancellation), and reports
/// whether it is already cancelled.
struct LateToken(Option<portico::server::RequestContext>, tokio::sync::mpsc::UnboundedSender<&'static str>);

impl Drop for LateToken {
    fn drop(&mut self) {
        if let Some(cx) = self.0.take()
            && cx.is_cancelled()
            && cx.cancellation().is_cancelled()
        {
            let _ = self.1.send("token asked for after");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn timeout_sends_cancelled_and_fails_the_call() {
    let (client, _server, probes, _rec, wire) = connect(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await;
    let e = client
        .call_tool_with("sleep", json!({"ms": 60_000}), CallOptions::new().with_timeout(Duration::from_millis(100)))
        .await
        .expect_err("times out");
    assert!(e.is_timeout());
    assert!(eventually(|| probes.cancelled.load(Ordering::SeqCst) == 1).await);
    assert!(wire.frames().iter().any(|(s, m)| *s == "client" && m["method"] == "notifications/cancelled"));
}

#[tokio::test(start_paused = true)]
async fn list_changed_reaches_clients_in_both_eras() {
    // Handshake era: the server sends notifications/tools/list_changed unasked.
    let (client, server, _p, rec, _w) = connect(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await;
    server.add_tool(Tool::new("late", JsonObject::new()), |_: Empty| async move { "late" });
    assert!(eventually(|| rec.tools_changed.load(Ordering::SeqCst) >= 1).await);
    assert!(client.list_all_tools().await.expect("list").iter().any(|t| t.name == "late"));
    assert!(server.remove_tool("late"));
    assert!(eventually(|| rec.tools_changed.load(Ordering::SeqCst) >= 2).await);
    assert!(!client.list_all_tools().await.expect("list").iter().any(|t| t.name == "late"));
    // Resource subscriptions.
    client.subscribe_resource("test://static").await.expect("subscribe");
    server.notify_resource_updated("test://other");
    server.notify_resource_updated("test://static");
    assert!(eventually(|| rec.updated.lock().expect("u").len() == 1).await);
    assert_eq!(rec.updated.lock().expect("u")[0], "test://static");
    client.close().await;

    // Stateless era: only through subscriptions/listen, acknowledged first.
    let (client, server, _p, rec, wire) = connect(EraMode::Stateless).await;
    let sub = client
        .listen(SubscriptionFilter::new().with_tools_list_changed().with_resource_subscription("test://static"))
        .await
        .expect("listen");
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    server.add_tool(Tool::new("late", JsonObject::new()), |_: Empty| async move { "late" });
    server.notify_resource_updated("test://static");
    assert!(eventually(|| rec.tools_changed.load(Ordering::SeqCst) == 1).await);
    assert!(eventually(|| rec.updated.lock().expect("u").len() == 1).await);
    let notes: Vec<_> = wire
        .frames()
        .into_iter()
        .filter(|(s, m)| *s == "server" && m["method"] == "notifications/tools/list_changed")
        .collect();
    assert!(
        notes[0].1["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number(),
        "subscription id on every listen notification"
    );
    drop(sub);
    assert!(
        eventually(|| wire.frames().iter().any(|(s, m)| *s == "client" && m["method"] == "notifications/cancelled"))
            .await,
        "dropping the subscription cancels it"
    );
    validate_wire(&wire, ProtocolVersion::V2026_07_28);
}

#[tokio::test(start_paused = true)]
async fn auto_mode_detects_the_stateless_era() {
    let (client, ..) = connect(EraMode::Auto).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let d = client.discover().await.expect("discover");
    assert!(d.supported_versions.iter().any(|v| v == "2025-11-25"));
    assert!(d.ttl_ms.is_some() && d.cache_scope.is_some(), "cacheable result carries hints");
}

#[test]
#[should_panic(expected = "emitted an invalid")]
fn the_wire_validator_rejects_invalid_messages() {
    let wire = Wire::default();
    let mut frames = wire.0.lock().expect("wire");
    frames.push(("client", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}})));
    // priority must be within 0..=1.
    frames.push(("server", json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "t", "annotations": {"priority": 5}}]}})));
    drop(frames);
    validate_wire(&wire, ProtocolVersion::V2025_11_25);
}

per_era!(pages_and_the_stateless_cache => pages_and_the_stateless_cache_in);

async fn pages_and_the_stateless_cache_in(mode: EraMode) {
    let server = portico::server::Server::builder(Implementation::new("many", "1"))
        .page_size(7)
        .cache_hints(60_000, CacheScope::Private)
        .build();
    for i in 0..30 {
        server.add_tool(Tool::new(format!("t{i:02}"), JsonObject::new()), |_: Empty| async move { "ok" });
    }
    let (c, s, wire) = tapped_pair();
    server.connect(s);
    let client = Client::builder(Implementation::new("c", "1")).era(mode).connect(c).await.expect("connect");
    let first = client.list_tools(None).await.expect("page");
    assert_eq!(first.tools.len(), 7);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_tools().await.expect("all");
    assert_eq!(all.len(), 30, "every tool exactly once");
    assert_eq!(all[29].name, "t29");
    let lists = || wire.frames().iter().filter(|(s, m)| *s == "client" && m["method"] == "tools/list").count();
    let before = lists();
    client.list_all_tools().await.expect("again");
    if mode == EraMode::Stateless {
        assert_eq!(lists(), before, "served from the ttlMs cache");
        let sub = client.listen(SubscriptionFilter::new().with_tools_list_changed()).await.expect("listen");
        server.add_tool(Tool::new("t30", JsonObject::new()), |_: Empty| async move { "ok" });
        assert!(
            eventually(|| wire
                .frames()
                .iter()
                .any(|(s, m)| *s == "server" && m["method"] == "notifications/tools/list_changed"))
            .await
        );
        assert_eq!(client.list_all_tools().await.expect("fresh").len(), 31, "list_changed invalidated the cache");
        drop(sub);
        assert!(server.remove_tool("t30"));
    } else {
        assert_eq!(lists(), before + 5, "the handshake era has no cache hints");
    }
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn resources_templates_and_prompts_can_be_disabled_and_removed_at_runtime() {
    let (client, server, _p, _rec, _wire) = connect(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await;
    assert!(server.set_prompt_enabled("explain", false));
    assert!(client.list_all_prompts().await.expect("prompts").is_empty());
    let e = client.get_prompt("explain", [("topic".to_owned(), "x".to_owned())]).await.expect_err("hidden");
    assert_eq!(e.peer_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS));
    assert!(server.set_prompt_enabled("explain", true));
    client.get_prompt("explain", [("topic".to_owned(), "x".to_owned())]).await.expect("visible again");

    assert!(server.set_resource_enabled("test://static", false));
    assert!(client.list_all_resources().await.expect("resources").is_empty());
    let e = client.read_resource("test://static").await.expect_err("hidden");
    assert_eq!(e.peer_error().map(|e| e.code), Some(ErrorCode::RESOURCE_NOT_FOUND));
    assert!(server.set_resource_template_enabled("test://items/{id}", false));
    assert!(client.list_all_resource_templates().await.expect("templates").is_empty());
    assert!(client.read_resource("test://items/1").await.is_err());
    assert!(server.set_resource_template_enabled("test://items/{id}", true));
    client.read_resource("test://items/1").await.expect("visible again");
    assert!(server.remove_resource_template("test://items/{id}"));
    assert!(!server.remove_resource_template("test://items/{id}"), "already gone");
    assert!(!server.set_prompt_enabled("nope", true), "unknown names are reported");
    client.close().await;
}

// A resource served as `EncodedContents` reads exactly like the same contents returned plainly,
// in every revision, large enough to be written beside its envelope.
per_revision!(encoded_contents_read_like_plain_contents_in_every_revision => encoded_contents_read_like_plain_contents);

async fn encoded_contents_read_like_plain_contents(mode: EraMode) {
    use portico::server::{EncodedContents, HandlerError, RequestContext, ResourceRequest, Server};
    let text: String = (0..50_000).map(|i| ['a', '"', '\\', '\n', 'é', '\u{1}'][i % 6]).collect();
    let contents = |uri: &str| {
        vec![
            ResourceContents::Text(TextResourceContents::new(uri, text.as_str()).with_mime_type("text/plain")),
            ResourceContents::Blob(BlobResourceContents::new(uri, "AAECAw==")),
        ]
    };
    let encoded = EncodedContents::new(contents("test://doc"));
    assert_eq!(encoded.contents(), contents("test://doc"));
    let plain = contents("test://doc");
    let (encoded, plain) = (encoded.clone(), plain.clone());
    let server = Server::builder(Implementation::new("encoded", "1"))
        .resource(Resource::new("test://doc", "doc"), move |_: ResourceRequest, _: RequestContext| {
            let encoded = encoded.clone();
            async move { Ok::<_, HandlerError>(encoded) }
        })
        .resource(Resource::new("test://plain", "plain"), move |_: ResourceRequest, _: RequestContext| {
            let plain = plain.clone();
            async move { Ok::<_, HandlerError>(plain) }
        })
        .build();
    let (c, s, wire) = tapped_pair();
    server.connect(s);
    let client =
        Client::builder(Implementation::new("test-client", "0.0.1")).era(mode).connect(c).await.expect("connect");
    let version = client.protocol_version();
    let a = client.read_resource("test://doc").await.expect("encoded read");
    let b = client.read_resource("test://plain").await.expect("plain read");
    assert_eq!(a.contents, contents("test://doc"), "{version}");
    assert_eq!(a, b, "{version}: the same result either way (resultType, cache hints, serverInfo)");
    assert_eq!(a.result_type.is_some(), version.is_stateless(), "{version}");
    client.close().await;
    validate_wire(&wire, version);
}

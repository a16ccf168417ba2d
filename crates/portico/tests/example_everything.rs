//! The everything example's server, driven by the in-memory client in both eras: every tool
//! listed and called once, the resources read, the prompt got, completion answered.

#[allow(dead_code)]
#[path = "../examples/everything.rs"]
mod everything;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::client::{CallOptions, Client, ClientHandler, EraMode};
use portico::schema::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Seen {
    logs: Mutex<Vec<LoggingMessageNotificationParams>>,
    tools_changed: AtomicUsize,
}

struct Host(Arc<Seen>);

impl ClientHandler for Host {
    fn create_message(&self, p: CreateMessageRequestParams) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        let n = p.messages.len();
        Box::pin(async move {
            Ok(CreateMessageResult::new(SamplingMessageContentBlock::text(format!("a summary of {n}")), "m"))
        })
    }
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async { Ok(ElicitResult::accept(json!({"name": "Ada"}).as_object().cloned().unwrap_or_default())) })
    }
    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async { Ok(ListRootsResult::new(vec![Root::new("file:///work"), Root::new("file:///home")])) })
    }
    fn on_log(&self, p: LoggingMessageNotificationParams) {
        self.0.logs.lock().expect("logs").push(p);
    }
    fn on_tools_list_changed(&self) {
        self.0.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
}

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(start_paused = true)]
async fn every_feature_in_both_eras() {
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let server = everything::server();
        let (c, s) = portico::transport::memory::pair();
        server.connect(s);
        let seen = Arc::new(Seen::default());
        let client = Client::builder(Implementation::new("test", "0.0.1"))
            .capabilities(
                ClientCapabilities::new().with_sampling(false).with_elicitation(true, false).with_roots(false),
            )
            .handler(Host(seen.clone()))
            .era(mode)
            .connect(c)
            .await
            .expect("connect");
        let ctx = format!("{}", client.protocol_version());
        assert_eq!(client.server_info().name, "everything");
        let caps = client.server_capabilities();
        assert!(caps.tools.is_some() && caps.resources.is_some() && caps.prompts.is_some(), "{ctx}");
        assert!(caps.completions.is_some(), "{ctx}");

        let tools: Vec<_> = client.list_all_tools().await.expect("tools").into_iter().map(|t| t.name).collect();
        assert_eq!(tools, ["add", "countdown", "greet_user", "roots", "sleep", "summarize", "toggle_bonus"], "{ctx}");

        let sum = client.call_tool("add", json!({"a": 2, "b": 40})).await.expect("add");
        assert_eq!(sum.structured_content, Some(json!({"sum": 42})), "{ctx}");

        client.set_logging_level(LoggingLevel::Info).await.expect("setLevel");
        let progress = Arc::new(Mutex::new(Vec::new()));
        let p2 = progress.clone();
        let opts = CallOptions::new().with_progress(move |p| p2.lock().expect("p").push(p.progress));
        let r = client.call_tool_with("countdown", json!({"steps": 3}), opts).await.expect("countdown");
        assert_eq!(text(&r), "liftoff", "{ctx}");
        assert_eq!(*progress.lock().expect("p"), [1.0, 2.0, 3.0], "{ctx}");
        assert!(eventually(|| seen.logs.lock().expect("logs").len() == 3).await, "{ctx}: three logs");

        assert_eq!(text(&client.call_tool("sleep", json!({"ms": 1})).await.expect("sleep")), "slept 1 ms");
        let token = CancellationToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            t2.cancel();
        });
        let started = std::time::Instant::now();
        let cancelled =
            client.call_tool_with("sleep", json!({"ms": 60_000}), CallOptions::new().with_cancel(token)).await;
        assert!(cancelled.is_err(), "{ctx}: a cancelled call fails");
        assert!(started.elapsed() < Duration::from_secs(10), "{ctx}");

        let r = client.call_tool("summarize", json!({"text": "long text"})).await.expect("summarize");
        assert_eq!(text(&r), "a summary of 1", "{ctx}");
        let r = client.call_tool("greet_user", json!({})).await.expect("greet_user");
        assert_eq!(text(&r), "Hello, Ada!", "{ctx}");
        let r = client.call_tool("roots", json!({})).await.expect("roots");
        assert_eq!(text(&r), "file:///work\nfile:///home", "{ctx}");

        // Runtime tools: added, listed, called, removed.
        assert_eq!(text(&client.call_tool("toggle_bonus", json!({})).await.expect("toggle")), "added bonus");
        let tools = client.list_all_tools().await.expect("tools");
        assert!(tools.iter().any(|t| t.name == "bonus"), "{ctx}");
        assert_eq!(text(&client.call_tool("bonus", json!({})).await.expect("bonus")), "you found the bonus");
        assert_eq!(text(&client.call_tool("toggle_bonus", json!({})).await.expect("toggle")), "removed bonus");
        assert!(!client.list_all_tools().await.expect("tools").iter().any(|t| t.name == "bonus"), "{ctx}");
        if !client.protocol_version().is_stateless() {
            // Handshake era: pushed on the session. (2026-07-28 clients learn through
            // subscriptions/listen, which this test does not open.)
            assert!(eventually(|| seen.tools_changed.load(Ordering::SeqCst) >= 2).await, "{ctx}: list_changed");
        }

        // Resources.
        let resources = client.list_all_resources().await.expect("resources");
        assert_eq!(resources[0].uri, "everything://readme");
        let r = client.read_resource("everything://readme").await.expect("readme");
        assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text.starts_with("# Everything")), "{ctx}");
        let templates = client.list_all_resource_templates().await.expect("templates");
        assert_eq!(templates[0].uri_template, "everything://notes/{id}");
        let r = client.read_resource("everything://notes/2").await.expect("note");
        assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "note 2"), "{ctx}");
        client.read_resource("everything://notes/9").await.expect_err("no such note");

        // Prompt and completion.
        let p = client
            .get_prompt(
                "review",
                [("code".to_owned(), "fn main() {}".to_owned()), ("language".to_owned(), "rust".to_owned())],
            )
            .await
            .expect("prompt");
        assert!(matches!(&p.messages[0].content, ContentBlock::Text(t) if t.text == "Review this rust:\nfn main() {}"));
        let c = client
            .complete(CompleteRequestParams::new(
                CompletionReference::prompt("review"),
                CompleteArgument::new("language", "r"),
            ))
            .await
            .expect("complete");
        assert_eq!(c.completion.values, ["rust"], "{ctx}");
        let c = client
            .complete(CompleteRequestParams::new(
                CompletionReference::resource("everything://notes/{id}"),
                CompleteArgument::new("id", ""),
            ))
            .await
            .expect("complete");
        assert_eq!(c.completion.values, ["1", "2", "3"], "{ctx}");
        client.close().await;
    }
}

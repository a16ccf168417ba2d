//! The host and gateway against real upstreams (Portico's `everything` example, spawned as a
//! child process), with real downstream clients (Portico's SDK client, in memory).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{config_in, eventually, everything, text};
use futures_util::future::BoxFuture;
use portico::client::{CallOptions, Client, ClientHandler};
use portico::schema::{
    ClientCapabilities, CompleteArgument, CompleteRequestParams, CompletionReference, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParams, Root, SamplingMessageContentBlock, SubscriptionFilter, TextContent,
};
use portico_host::Host;
use portico_host::gateway::Gateway;
use portico_host::upstream::State;
use serde_json::json;

const READY: Duration = Duration::from_secs(60);

/// A downstream client that answers input requests and counts `tools/list_changed`.
#[derive(Default, Clone)]
struct Downstream {
    tools_changed: Arc<AtomicUsize>,
    logs: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Downstream {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        let n = params.messages.len();
        Box::pin(async move {
            Ok(CreateMessageResult::new(
                SamplingMessageContentBlock::Text(TextContent::new(format!("summary of {n}"))),
                "test-model",
            ))
        })
    }

    fn elicit(&self, _params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async { Ok(ElicitResult::accept(json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default())) })
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async { Ok(ListRootsResult::new(vec![Root::new("file:///work/project"), Root::new("file:///etc")])) })
    }

    fn on_log(&self, params: LoggingMessageNotificationParams) {
        if let Ok(mut logs) = self.logs.lock() {
            logs.push(format!("{:?} {} {}", params.level, params.logger.unwrap_or_default(), params.data));
        }
    }

    fn on_tools_list_changed(&self) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
}

async fn downstream(gateway: &Gateway, handler: Downstream) -> Client {
    let (client_end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    let caps = ClientCapabilities::new().with_roots(true).with_sampling(false).with_elicitation(true, false);
    Client::builder(Implementation::new("test-client", "1.0.0"))
        .capabilities(caps)
        .handler(handler)
        .connect(client_end)
        .await
        .expect("downstream connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upstreams_one_registry_stable_names() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(config_in(dir.path(), &everything("a", "rename = { add = \"plus\" }")));
    host.ready(READY).await;
    let before: Vec<String> = host.registry().tools.keys().cloned().collect();
    assert!(before.contains(&"a__plus".to_owned()), "{before:?}");
    assert!(!before.contains(&"a__add".to_owned()));
    let result = host.call_tool("a__plus", json!({ "a": 2, "b": 3 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 5 })), "{result:?}");

    // A second server: every name that was there stays.
    let both = format!(
        "{}{}",
        everything("a", "rename = { add = \"plus\" }"),
        everything("b", "exclude = [\"sleep\", \"toggle_*\"]")
    );
    let done = host.reload(config_in(dir.path(), &both)).await;
    assert_eq!((done.added, done.unchanged), (vec!["b".to_owned()], vec!["a".to_owned()]));
    host.ready(READY).await;
    let registry = host.registry();
    for name in &before {
        assert!(registry.tools.contains_key(name), "{name} renamed by adding a server");
    }
    assert!(registry.tools.contains_key("b__add"));
    assert!(!registry.tools.contains_key("b__sleep") && !registry.tools.contains_key("b__toggle_bonus"));
    // Resources offered by both are scoped; the template too.
    assert!(registry.resources.contains_key("portico:a/everything://readme"), "{:?}", registry.resources.keys());
    let read = host.read_resource("portico:b/everything://readme", None, None).await.expect("read");
    assert_eq!(read.contents.len(), 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_forwards_progress_input_requests_roots_and_list_changed() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(config_in(dir.path(), &everything("ev", "roots = [\"file:///work\"]")));
    host.ready(READY).await;
    let gateway = Gateway::new(host.clone());
    let handler = Downstream::default();
    let client = downstream(&gateway, handler.clone()).await;
    // A 2026-07-28 client hears of list changes on a subscription stream.
    let _subscription = client.listen(SubscriptionFilter::new().with_tools_list_changed()).await.expect("listen");

    let tools = client.list_all_tools().await.expect("list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"ev__countdown") && names.contains(&"ev__add"), "{names:?}");
    let add = tools.iter().find(|t| t.name == "ev__add").expect("add");
    assert_eq!(add.description.as_deref(), Some("Adds two integers"), "descriptions pass through");
    assert!(add.output_schema.is_some(), "output schemas pass through");

    // Completion goes to the prompt's upstream under its own name.
    let done = client
        .complete(CompleteRequestParams::new(
            CompletionReference::prompt("ev__review"),
            CompleteArgument::new("language", "ty"),
        ))
        .await
        .expect("complete");
    assert_eq!(done.completion.values, ["typescript"]);

    // Progress and logs from the upstream reach the downstream caller (logs at its level).
    client.set_logging_level(LoggingLevel::Info).await.expect("level");
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let options = CallOptions::new().with_progress(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let result = client.call_tool_with("ev__countdown", json!({ "steps": 3 }), options).await.expect("countdown");
    assert_eq!(text(&result), "liftoff");
    assert_eq!(seen.load(Ordering::SeqCst), 3, "every progress notification forwarded");
    let logs = handler.logs.clone();
    let logged = eventually(Duration::from_secs(5), || {
        let l = logs.lock().ok()?;
        (l.len() == 3).then(|| l.clone())
    })
    .await
    .unwrap_or_else(|| panic!("logs: {:?}", handler.logs.lock().map(|l| l.clone())));
    assert_eq!(logged[0], "Info ev/countdown \"2 left\"");

    // Elicitation and sampling go back to the client whose call caused them.
    let result = client.call_tool("ev__greet_user", json!({})).await.expect("greet");
    assert_eq!(text(&result), "Hello, Ada!");
    let result = client.call_tool("ev__summarize", json!({ "text": "long" })).await.expect("summarize");
    assert_eq!(text(&result), "summary of 1");

    // Roots: the client's roots, cut to the configured ones.
    let result = client.call_tool("ev__roots", json!({})).await.expect("roots");
    assert_eq!(text(&result), "file:///work/project");

    // list_changed from the upstream reaches the client, once, with the new tool.
    let before = handler.tools_changed.load(Ordering::SeqCst);
    let result = client.call_tool("ev__toggle_bonus", json!({})).await.expect("toggle");
    assert_eq!(text(&result), "added bonus");
    let h = handler.clone();
    eventually(Duration::from_secs(10), || (h.tools_changed.load(Ordering::SeqCst) > before).then_some(()))
        .await
        .expect("list_changed");
    let tools = client.list_all_tools().await.expect("list");
    assert!(tools.iter().any(|t| t.name == "ev__bonus"));
    let result = client.call_tool("ev__bonus", json!({})).await.expect("bonus");
    assert_eq!(text(&result), "you found the bonus");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(handler.tools_changed.load(Ordering::SeqCst), before + 1, "one coalesced list_changed");

    client.close().await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_upstream_fails_its_calls_by_name_and_restarts_while_others_carry_on() {
    let dir = tempfile::tempdir().expect("tmp");
    let fast = "[servers.victim.restart]\ninitial_backoff = 0.05\nmax_backoff = 0.2";
    let cfg = format!("{}{}", everything("victim", fast), everything("other", ""));
    let host = Host::start(config_in(dir.path(), &cfg));
    host.ready(READY).await;
    let pid = host.upstream("victim").and_then(|u| u.status().pid).expect("pid");
    let h = host.clone();
    let call = tokio::spawn(async move { h.call_tool("victim__sleep", json!({ "ms": 30_000 }), None).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).expect("kill");
    let result = tokio::time::timeout(Duration::from_secs(10), call).await.expect("call ends").expect("join");
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("server `victim`"), "{}", text(&result));

    let result = host.call_tool("other__add", json!({ "a": 1, "b": 1 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 2 })), "the other upstream carries on");

    let up = host.upstream("victim").expect("victim");
    let restarted = eventually(READY, || {
        let s = up.status();
        (s.state == State::Ready && s.restarts >= 1 && s.pid != Some(pid)).then_some(s)
    })
    .await
    .expect("restarted");
    assert!(restarted.last_error.is_some_and(|e| e.contains("exited")), "the status says why");
    assert!(!common::alive(pid), "the killed child was reaped");
    let result = host.call_tool("victim__add", json!({ "a": 2, "b": 2 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 4 })));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_times_out_naming_the_server() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(config_in(dir.path(), &everything("slow", "timeout = 0.5")));
    host.ready(READY).await;
    let started = std::time::Instant::now();
    let result = host.call_tool("slow__sleep", json!({ "ms": 20_000 }), None).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "server `slow` did not answer within 0 s");
    // The connection is still good.
    let result = host.call_tool("slow__add", json!({ "a": 1, "b": 2 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 3 })));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_upstreams_are_reported_and_do_not_stop_the_others() {
    let dir = tempfile::tempdir().expect("tmp");
    let py = |code: &str| {
        format!(
            "command = \"python3\"\nargs = [\"-c\", {code:?}]\nstartup_timeout = 3\n[servers.NAME.restart]\ninitial_backoff = 0.05\nmax_backoff = 0.1\nmax_restarts = 2\n"
        )
    };
    let garbage = py("import sys\nprint('this is not json')\nsys.stdout.flush()\nimport time\ntime.sleep(30)");
    let exits = py("import sys\nsys.stderr.write('boom: missing API key\\n')\nsys.exit(3)");
    let huge = py("import sys\nsys.stdout.write('x' * (2 << 20))\nsys.stdout.flush()\nimport time\ntime.sleep(30)");
    let cfg = format!(
        "{}[servers.garbage]\n{}[servers.exits]\n{}[servers.huge]\nmax_result_bytes = 65536\n{}",
        everything("good", ""),
        garbage.replace("NAME", "garbage"),
        exits.replace("NAME", "exits"),
        huge.replace("NAME", "huge"),
    );
    let host = Host::start(config_in(dir.path(), &cfg));
    host.ready(READY).await;
    let result = host.call_tool("good__add", json!({ "a": 1, "b": 1 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 2 })));
    for name in ["garbage", "exits", "huge"] {
        let up = host.upstream(name).expect(name);
        let status = eventually(Duration::from_secs(30), || {
            let s = up.status();
            (s.state == State::Failed).then_some(s)
        })
        .await
        .unwrap_or_else(|| panic!("{name} never failed: {:?}", up.status()));
        assert!(status.last_error.is_some(), "{name}: {status:?}");
        assert_eq!(status.restarts, 2, "{name}: {status:?}");
    }
    let exits = host.upstream("exits").expect("exits").status();
    assert!(exits.stderr_tail.iter().any(|l| l.contains("missing API key")), "{exits:?}");
    assert!(host.statuses().iter().all(|s| s.pid.is_none_or(common::alive) || s.name == "good"));
    host.shutdown().await;
}

//! The client side of the tasks extension: `call_tool` follows a task the server makes of the
//! call — polled to its result, its input answered with `tasks/update`, cancelled with
//! `tasks/cancel` — and `CallOptions::with_on_task` is told when the task is made.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::client::{CallOptions, Client, ClientHandler, EraMode, TaskCreated};
use portico::schema::{
    ClientCapabilities, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorObject, Implementation,
    RequestedSchema, StringSchema, Tool, object,
};
use portico::server::{RequestContext, Server, TaskSupport};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Counts a task handler's starts and ends (an end is its future dropped or finished).
#[derive(Default)]
struct Probes {
    started: AtomicUsize,
    ended: AtomicUsize,
}

struct Ended(Arc<Probes>);
impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

fn server(probes: Arc<Probes>) -> Server {
    let schema = || object(json!({"type": "object"}));
    Server::builder(Implementation::new("tasks", "1"))
        .task_lifetimes(Duration::from_secs(60), Duration::from_millis(20))
        .task_tool(Tool::new("work", schema()), TaskSupport::Optional, move |a: Value, cx: RequestContext| {
            let probes = probes.clone();
            async move {
                let task = cx.continue_as_task().await;
                probes.started.fetch_add(1, Ordering::SeqCst);
                let _ended = Ended(probes);
                tokio::time::sleep(Duration::from_millis(a["ms"].as_u64().unwrap_or(0))).await;
                if a["panic"] == true {
                    panic!("the handler broke on purpose");
                }
                format!("worked (task: {task})")
            }
        })
        .task_tool(Tool::new("greet", schema()), TaskSupport::Optional, |_: Value, cx: RequestContext| async move {
            let task = cx.continue_as_task().await;
            let form = ElicitRequestFormParams::new(
                "Name?",
                RequestedSchema::new().with_required_property("name", StringSchema::new()),
            );
            let answer = cx.elicit(ElicitRequestParams::from(form)).await.map_err(|e| e.to_string())?;
            let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or_default();
            Ok::<_, String>(format!("Hello, {} (task: {task})", name.as_str().unwrap_or("?")))
        })
        .build()
}

/// Answers every form with `{"name": "Ada"}`, counting them.
#[derive(Clone, Default)]
struct Ada(Arc<AtomicUsize>);

impl ClientHandler for Ada {
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut content = serde_json::Map::new();
        content.insert("name".to_owned(), json!("Ada"));
        Box::pin(async move { Ok(ElicitResult::accept(content)) })
    }
}

async fn connect(server: &Server, caps: ClientCapabilities, handler: Ada) -> Client {
    let (a, b) = portico::transport::memory::pair();
    server.connect(b);
    Client::builder(Implementation::new("tasks-client", "1"))
        .era(EraMode::Stateless)
        .capabilities(caps)
        .handler(handler)
        .connect(a)
        .await
        .expect("connect")
}

fn text(r: &portico::schema::CallToolResult) -> String {
    serde_json::to_value(&r.content).expect("json")[0]["text"].as_str().unwrap_or_default().to_owned()
}

/// Records the tasks made, by id.
fn recorder() -> (Arc<Mutex<Vec<TaskCreated>>>, CallOptions) {
    let made = Arc::new(Mutex::new(Vec::new()));
    let seen = made.clone();
    let options = CallOptions::new().with_on_task(move |t| {
        seen.lock().expect("lock").push(t);
        Box::pin(async {})
    });
    (made, options)
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_becomes_a_task_is_followed_to_its_result() {
    let probes = Arc::new(Probes::default());
    let server = server(probes.clone());
    let asked = Ada::default();
    let caps = ClientCapabilities::new().with_elicitation(true, false).with_tasks();
    let client = connect(&server, caps, asked.clone()).await;

    let (made, options) = recorder();
    let r = client.call_tool_with("work", json!({"ms": 50}), options).await.expect("call");
    assert_eq!(text(&r), "worked (task: true)");
    let made = made.lock().expect("lock").clone();
    assert_eq!(made.len(), 1, "told once: {made:?}");
    assert_eq!(made[0].ttl_ms, Some(60_000));
    assert_eq!(made[0].poll_interval_ms, Some(20));

    // Input asked inside the task reaches the client's handler; the answer goes back with
    // tasks/update.
    let r = client.call_tool("greet", json!({})).await.expect("call");
    assert_eq!(text(&r), "Hello, Ada (task: true)");
    assert_eq!(asked.0.load(Ordering::SeqCst), 1);

    // A task that fails is an error carrying the task's error.
    let e = client.call_tool("work", json!({"panic": true})).await.expect_err("the task failed");
    assert_eq!(e.peer_error().map(|p| p.code.0), Some(-32603), "{e}");
    client.close().await;

    // Without the extension, the same tool answers at once and no task is made.
    let client = connect(&server, ClientCapabilities::new(), Ada::default()).await;
    let (made, options) = recorder();
    let r = client.call_tool_with("work", json!({}), options).await.expect("call");
    assert_eq!(text(&r), "worked (task: false)");
    assert!(made.lock().expect("lock").is_empty());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_or_dropping_the_call_cancels_the_task() {
    let probes = Arc::new(Probes::default());
    let server = server(probes.clone());
    let client = connect(&server, ClientCapabilities::new().with_tasks(), Ada::default()).await;

    // Cancelled through its token: the call ends, and so does the server's handler.
    let cancel = CancellationToken::new();
    let (made, options) = recorder();
    let call = {
        let client = client.clone();
        let options = options.with_cancel(cancel.clone());
        tokio::spawn(async move { client.call_tool_with("work", json!({"ms": 60_000}), options).await })
    };
    eventually("the task started", || probes.started.load(Ordering::SeqCst) == 1).await;
    assert_eq!(made.lock().expect("lock").len(), 1);
    cancel.cancel();
    let e = tokio::time::timeout(Duration::from_secs(5), call).await.expect("in time").expect("join");
    assert!(e.expect_err("cancelled").is_cancelled());
    eventually("the handler ended", || probes.ended.load(Ordering::SeqCst) == 1).await;

    // Dropped: the same.
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("work", json!({"ms": 60_000})).await })
    };
    eventually("the second task started", || probes.started.load(Ordering::SeqCst) == 2).await;
    call.abort();
    eventually("the second handler ended", || probes.ended.load(Ordering::SeqCst) == 2).await;

    // A call with a hard limit gives up on the task at it, and cancels it.
    let options = CallOptions::new().with_max_timeout(Duration::from_millis(300));
    let e = client.call_tool_with("work", json!({"ms": 60_000}), options).await.expect_err("timed out");
    assert!(e.is_timeout(), "{e}");
    eventually("the third handler ended", || probes.ended.load(Ordering::SeqCst) == 3).await;
    client.close().await;
}

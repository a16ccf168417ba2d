//! A server whose tools become tasks, and a client side that answers and watches them: shared
//! by the SDK's client test (`client_tasks.rs`) and the gateway's (`portico-host`'s
//! `tests/tasks.rs`, which includes this file by path).
#![allow(dead_code)]

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

/// Counts the task handlers that started and ended (finished or dropped).
#[derive(Default)]
pub struct Probes {
    pub started: AtomicUsize,
    pub ended: AtomicUsize,
}

struct Ended(Arc<Probes>);
impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

/// A server (polled every 20 ms) whose tools continue as tasks when they can: `work` sleeps
/// `ms` (and panics with `"panic": true`), `greet` asks for a name inside its task.
pub fn server(probes: Arc<Probes>) -> Server {
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
            let schema = RequestedSchema::new().with_required_property("name", StringSchema::new());
            let form = ElicitRequestParams::from(ElicitRequestFormParams::new("What is your name?", schema));
            let answer = cx.elicit(form).await.map_err(|e| e.to_string())?;
            let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or_default();
            Ok::<_, String>(format!("Hello, {}! (task: {task})", name.as_str().unwrap_or("?")))
        })
        .build()
}

/// The person at the client: answers every form with `{"name": "Ada"}`, keeping the messages.
#[derive(Clone, Default)]
pub struct Person(pub Arc<Mutex<Vec<String>>>);

impl ClientHandler for Person {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        let message = match &params {
            ElicitRequestParams::Form(f) => f.message.clone(),
            other => format!("{other:?}"),
        };
        self.0.lock().expect("lock").push(message);
        let mut content = serde_json::Map::new();
        content.insert("name".to_owned(), json!("Ada"));
        Box::pin(async move { Ok(ElicitResult::accept(content)) })
    }
}

/// A 2026-07-28 client of `server` over memory, declaring `caps`, answered by `person`.
pub async fn connect(server: &Server, caps: ClientCapabilities, person: Person) -> Client {
    let (a, b) = portico::transport::memory::pair();
    server.connect(b);
    Client::builder(Implementation::new("tasks-client", "1"))
        .era(EraMode::Stateless)
        .capabilities(caps)
        .handler(person)
        .connect(a)
        .await
        .expect("connect")
}

/// Call options that record the tasks made of the call.
pub fn recorder() -> (Arc<Mutex<Vec<TaskCreated>>>, CallOptions) {
    let made = Arc::new(Mutex::new(Vec::new()));
    let seen = made.clone();
    let options = CallOptions::new().with_on_task(move |t| {
        seen.lock().expect("lock").push(t);
        Box::pin(async {})
    });
    (made, options)
}

/// Waits until `f` holds, at most 10 s.
pub async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen within 10 s");
}

/// Calls `tool` (a `work` that takes a minute) on `client`, cancels the call once a task was
/// made of it and the server's handler is the `nth` to start, and checks that the call ends
/// cancelled and that the handler ends too.
pub async fn cancel_midway(client: &Client, tool: &str, probes: &Probes, nth: usize) {
    let cancel = CancellationToken::new();
    let (made, options) = recorder();
    let call = {
        let (client, tool) = (client.clone(), tool.to_owned());
        let options = options.with_cancel(cancel.clone());
        tokio::spawn(async move { client.call_tool_with(&tool, json!({"ms": 60_000}), options).await })
    };
    until("the handler started", || probes.started.load(Ordering::SeqCst) == nth).await;
    until("a task was made", || made.lock().expect("lock").len() == 1).await;
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(5), call).await.expect("in time").expect("join");
    assert!(r.expect_err("cancelled").is_cancelled());
    until("the handler ended", || probes.ended.load(Ordering::SeqCst) == nth).await;
}

//! The tasks extension through the gateway: an upstream that makes a task of a call makes the
//! gateway make one of its own; the gateway follows the upstream's task (its input requests
//! relayed to the caller) while the caller polls the gateway's, a cancelled task is cancelled
//! upstream, and the call is recorded once, with the task's final result.

mod common;

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
use portico_host::Host;
use portico_host::audit::{AuditLog, Filter, RawAudit};
use portico_host::gateway::Gateway;
use portico_host::oversight::Supervisor;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Counts the upstream task handlers that started and ended (finished or dropped).
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

/// An upstream whose tools become tasks for a client that declares the extension.
fn upstream(probes: Arc<Probes>) -> Server {
    let schema = || object(json!({"type": "object"}));
    Server::builder(Implementation::new("tasks-upstream", "1"))
        .task_lifetimes(Duration::from_secs(60), Duration::from_millis(20))
        .task_tool(Tool::new("work", schema()), TaskSupport::Optional, move |a: Value, cx: RequestContext| {
            let probes = probes.clone();
            async move {
                let task = cx.continue_as_task().await;
                probes.started.fetch_add(1, Ordering::SeqCst);
                let _ended = Ended(probes);
                tokio::time::sleep(Duration::from_millis(a["ms"].as_u64().unwrap_or(0))).await;
                format!("worked (upstream task: {task})")
            }
        })
        .task_tool(Tool::new("greet", schema()), TaskSupport::Optional, |_: Value, cx: RequestContext| async move {
            cx.continue_as_task().await;
            let schema = RequestedSchema::new().with_required_property("name", StringSchema::new());
            let form = ElicitRequestParams::from(ElicitRequestFormParams::new("What is your name?", schema));
            let answer = cx.elicit(form).await.map_err(|e| e.to_string())?;
            let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or_default();
            Ok::<_, String>(format!("Hello, {}!", name.as_str().unwrap_or("?")))
        })
        .build()
}

/// The caller's person: answers every form with `{"name": "Ada"}`, keeping the messages.
#[derive(Clone, Default)]
struct Person(Arc<Mutex<Vec<String>>>);

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

async fn caller(gateway: &Gateway, caps: ClientCapabilities, person: Person) -> Client {
    let (a, b) = portico::transport::memory::pair();
    gateway.server().connect(b);
    Client::builder(Implementation::new("agent", "1"))
        .era(EraMode::Stateless)
        .capabilities(caps)
        .handler(person)
        .connect(a)
        .await
        .expect("connect")
}

/// Options that record the tasks the gateway makes.
fn recorder() -> (Arc<Mutex<Vec<TaskCreated>>>, CallOptions) {
    let made = Arc::new(Mutex::new(Vec::new()));
    let seen = made.clone();
    let options = CallOptions::new().with_on_task(move |t| {
        seen.lock().expect("lock").push(t);
        Box::pin(async {})
    });
    (made, options)
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let done = common::eventually(Duration::from_secs(10), || f().then_some(())).await;
    assert!(done.is_some(), "{what} did not happen within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_the_upstream_is_a_task_of_the_gateway() {
    let probes = Arc::new(Probes::default());
    let (addr, served) = common::serve_http(upstream(probes.clone())).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!(
        "[policy.defaults]\ntools = \"allow\"\n\n[servers.up]\nurl = \"http://{addr}/mcp\"\nshared = true\nprotocol_version = \"2026-07-28\"\n"
    );
    let config = common::config_in(dir.path(), &cfg);
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    let ext = gateway.capabilities().extensions.unwrap_or_default();
    assert!(ext.contains_key(portico::schema::TASKS_EXTENSION), "the gateway offers tasks: {ext:?}");

    let person = Person::default();
    let caps = ClientCapabilities::new().with_elicitation(true, false).with_tasks();
    let client = caller(&gateway, caps, person.clone()).await;

    // Created, polled to completion.
    let (made, options) = recorder();
    let r = client.call_tool_with("up__work", json!({"ms": 100}), options).await.expect("call");
    assert_eq!(common::text(&r), "worked (upstream task: true)");
    assert_eq!(made.lock().expect("lock").len(), 1, "the gateway made a task");

    // Input asked inside the upstream's task: the gateway's task is input_required, the
    // caller answers with tasks/update, and the answer goes on to the upstream's task.
    let (made, options) = recorder();
    let r = client.call_tool_with("up__greet", json!({}), options).await.expect("call");
    assert_eq!(common::text(&r), "Hello, Ada!");
    assert_eq!(made.lock().expect("lock").len(), 1);
    let asked = person.0.lock().expect("lock").clone();
    assert_eq!(asked, ["[server `up` asks] What is your name?"]);

    // Cancelled by the caller (tasks/cancel to the gateway): the upstream's task is cancelled.
    let cancel = CancellationToken::new();
    let (made, options) = recorder();
    let call = {
        let client = client.clone();
        let options = options.with_cancel(cancel.clone());
        tokio::spawn(async move { client.call_tool_with("up__work", json!({"ms": 60_000}), options).await })
    };
    until("the upstream task started", || probes.started.load(Ordering::SeqCst) == 2).await;
    until("the gateway made a task", || made.lock().expect("lock").len() == 1).await;
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(5), call).await.expect("in time").expect("join");
    assert!(r.expect_err("cancelled").is_cancelled());
    until("the upstream handler ended", || probes.ended.load(Ordering::SeqCst) == 2).await;

    // A caller without the extension gets the result at once, from no task at either end.
    let plain = caller(&gateway, ClientCapabilities::new(), Person::default()).await;
    let (made, options) = recorder();
    let r = plain.call_tool_with("up__work", json!({}), options).await.expect("call");
    assert_eq!(common::text(&r), "worked (upstream task: false)");
    assert!(made.lock().expect("lock").is_empty());

    // One record per finished call, with the task's final result.
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    let calls: Vec<Value> = records.iter().filter(|r| r.method == "tools/call").map(|r| r.json()).collect();
    let with = |text: &str| calls.iter().filter(|c| c.to_string().contains(text)).count();
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(with("worked (upstream task: true)"), 1, "{calls:#?}");
    assert_eq!(with("Hello, Ada!"), 1, "{calls:#?}");
    assert_eq!(with("worked (upstream task: false)"), 1, "{calls:#?}");

    client.close().await;
    plain.close().await;
    host.shutdown().await;
    served.abort();
}

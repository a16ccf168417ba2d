//! The tasks extension (`io.modelcontextprotocol/tasks`) on the raw wire: negotiation, task
//! creation, polling, input, cancellation, failures and expiry.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::eventually_for;
use portico::schema::{
    BooleanSchema, ElicitRequestFormParams, ElicitRequestParams, Implementation, RequestedSchema, StringSchema, Tool,
    object,
};
use portico::server::{RequestContext, Server, TaskSupport};
use portico::transport::memory::{self, MemoryReader, MemoryWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

struct Raw {
    r: MemoryReader,
    w: MemoryWriter,
    next: i64,
}

impl Raw {
    fn new(server: Server) -> Raw {
        let (a, b) = memory::pair();
        server.connect(b);
        let (r, w) = a.split();
        Raw { r, w, next: 1 }
    }

    async fn send(&mut self, msg: Value) {
        self.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
    }

    async fn next_frame(&mut self) -> Value {
        let frame = tokio::time::timeout(Duration::from_secs(5), self.r.read_frame())
            .await
            .expect("a frame in time")
            .expect("read")
            .expect("open");
        serde_json::from_slice(&frame).expect("json")
    }

    /// Sends a request and returns its response; other frames are skipped.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
        loop {
            let frame = self.r.read_frame().await.expect("read").expect("open");
            let v: Value = serde_json::from_slice(&frame).expect("json");
            assert!(v.get("method").is_none() || v.get("id").is_none(), "no server requests: {v}");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    /// A stateless request, declaring `caps`.
    async fn stateless(&mut self, method: &str, mut params: Value, caps: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        self.call(method, params).await
    }

    /// A stateless request from a client that declares the extension and elicitation.
    async fn ext(&mut self, method: &str, params: Value) -> Value {
        self.stateless(method, params, json!({"elicitation": {}, "extensions": {EXT: {}}})).await
    }

    async fn task(&mut self, id: &str) -> Value {
        let r = self.ext("tasks/get", json!({"taskId": id})).await;
        r.get("result").cloned().unwrap_or_else(|| panic!("tasks/get failed: {r}"))
    }

    /// Polls until the task's status is `status` (bounded).
    async fn until(&mut self, id: &str, status: &str) -> Value {
        for _ in 0..300 {
            let t = self.task(id).await;
            if t["status"] == status {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {id} never became {status}: {}", self.task(id).await)
    }
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

fn form(message: &str, property: &str, boolean: bool) -> ElicitRequestParams {
    let schema = if boolean {
        RequestedSchema::new().with_required_property(property, BooleanSchema::new())
    } else {
        RequestedSchema::new().with_required_property(property, StringSchema::new())
    };
    ElicitRequestParams::from(ElicitRequestFormParams::new(message, schema))
}

#[derive(Default)]
struct Probes {
    started: AtomicUsize,
    dropped: AtomicUsize,
}

struct CountDrop(Arc<Probes>);
impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn server(probes: Arc<Probes>, ttl: Duration) -> Server {
    let (p1, p2) = (probes.clone(), probes);
    Server::builder(Implementation::new("tasks", "1"))
        .task_lifetimes(ttl, Duration::from_millis(250))
        .tool(Tool::new("sync", object(json!({"type": "object"}))), |_: Value| async { "sync" })
        .task_tool(
            Tool::new("work", object(json!({"type": "object"}))),
            TaskSupport::Optional,
            move |a: Value, cx: RequestContext| {
                let probes = p1.clone();
                async move {
                    let became = cx.continue_as_task().await;
                    probes.started.fetch_add(1, Ordering::SeqCst);
                    let _guard = CountDrop(probes);
                    // Progress in a task goes nowhere (its request is answered).
                    cx.progress(1.0, None, None).await.map_err(|e| e.to_string())?;
                    let ms = a["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    if a["fail"] == true {
                        return Err("the tool failed".to_owned());
                    }
                    if a["panic"] == true {
                        panic!("the handler broke");
                    }
                    Ok(format!("worked {ms} ms (task: {became}, cancelled: {})", cx.is_cancelled()))
                }
            },
        )
        .task_tool(
            Tool::new("needs_task", object(json!({"type": "object"}))),
            TaskSupport::Required,
            move |_: Value, cx: RequestContext| {
                let probes = p2.clone();
                async move {
                    probes.started.fetch_add(1, Ordering::SeqCst);
                    format!("task: {}", cx.continue_as_task().await)
                }
            },
        )
        .task_tool(
            Tool::new("two_questions", object(json!({"type": "object"}))),
            TaskSupport::Optional,
            |_: Value, cx: RequestContext| async move {
                cx.continue_as_task().await;
                let (a, b) =
                    tokio::join!(cx.elicit(form("Name?", "name", false)), cx.elicit(form("Sure?", "ok", true)));
                let (a, b) = (a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
                Ok::<_, String>(format!("{:?} {:?}", a.content, b.content))
            },
        )
        .task_tool(
            Tool::new("ask_then_task", object(json!({"type": "object"}))),
            TaskSupport::Required,
            |_: Value, cx: RequestContext| async move {
                let a = cx.input("user_name").elicit(form("Name?", "name", false)).await.map_err(|e| e.to_string())?;
                let became = cx.continue_as_task().await;
                let name = a.content.as_ref().and_then(|c| c.get("name")).cloned().unwrap_or_default();
                Ok::<_, String>(format!("Hello, {name} (task: {became})"))
            },
        )
        .build()
}

#[tokio::test(start_paused = true)]
async fn negotiation_and_gating() {
    let probes = Arc::new(Probes::default());
    let mut raw = Raw::new(server(probes.clone(), Duration::from_secs(60)));
    let d = raw.stateless("server/discover", json!({}), json!({})).await;
    assert!(d["result"]["capabilities"]["extensions"][EXT].is_object(), "{d}");
    assert!(d["result"]["capabilities"].get("tasks").is_none(), "no 2025-11-25 tasks capability");

    // A Required tool refuses a client without the extension before its handler runs.
    let r = raw.stateless("tools/call", json!({"name": "needs_task"}), json!({})).await;
    assert_eq!(code(&r), -32021);
    assert!(r["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object(), "{r}");
    assert_eq!(probes.started.load(Ordering::SeqCst), 0);
    // An Optional tool just runs to its result; so does any tool for a client with the
    // extension when its handler does not ask for a task.
    let r = raw.stateless("tools/call", json!({"name": "work", "arguments": {}}), json!({})).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("task: false")));
    let r = raw.ext("tools/call", json!({"name": "sync", "arguments": {}, "task": {"ttl": 1000}})).await;
    assert_eq!(r["result"]["resultType"], "complete", "a legacy task hint changes nothing: {r}");

    // The task methods need the extension; tasks/result and tasks/list do not exist.
    assert_eq!(code(&raw.stateless("tasks/get", json!({"taskId": "x"}), json!({})).await), -32021);
    assert_eq!(
        code(&raw.stateless("tasks/update", json!({"taskId": "x", "inputResponses": {}}), json!({})).await),
        -32021
    );
    assert_eq!(code(&raw.ext("tasks/get", json!({"taskId": "x"})).await), -32602, "unknown task");
    assert_eq!(code(&raw.ext("tasks/cancel", json!({"taskId": "x"})).await), -32602, "unknown task");
    assert_eq!(code(&raw.ext("tasks/result", json!({"taskId": "x"})).await), -32601);
    assert_eq!(code(&raw.ext("tasks/list", json!({})).await), -32601);

    // The handshake era sees neither the extension nor the methods; Required tools just run.
    let mut legacy = Raw::new(server(probes, Duration::from_secs(60)));
    let init = legacy
        .call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}),
        )
        .await;
    assert!(init["result"]["capabilities"].get("extensions").is_none(), "{init}");
    let r = legacy.call("tools/call", json!({"name": "needs_task", "arguments": {}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "task: false", "{r}");
    assert_eq!(code(&legacy.call("tasks/get", json!({"taskId": "x"})).await), -32601);
}

#[tokio::test(start_paused = true)]
async fn a_task_is_created_polled_and_completed() {
    let probes = Arc::new(Probes::default());
    let mut raw = Raw::new(server(probes.clone(), Duration::from_secs(60)));
    let r =
        raw.ext("tools/call", json!({"name": "work", "arguments": {"ms": 100}, "_meta": {"progressToken": 1}})).await;
    let c = &r["result"];
    assert_eq!(c["resultType"], "task", "{r}");
    assert_eq!(c["status"], "working");
    assert_eq!(c["ttlMs"], 60_000);
    assert_eq!(c["pollIntervalMs"], 250);
    for absent in ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "content"] {
        assert!(c.get(absent).is_none(), "CreateTaskResult carries no {absent}: {c}");
    }
    for stamp in ["createdAt", "lastUpdatedAt"] {
        let s = c[stamp].as_str().expect("timestamp");
        assert!(s.len() == 24 && s.ends_with('Z') && s.as_bytes()[10] == b'T', "RFC 3339: {s}");
    }
    let id = c["taskId"].as_str().expect("id").to_owned();
    // Retrievable at once.
    let t = raw.task(&id).await;
    assert_eq!((t["taskId"].as_str(), t["resultType"].as_str()), (Some(id.as_str()), Some("complete")));
    assert!(t.get("result").is_none());
    let t = raw.until(&id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "worked 100 ms (task: true, cancelled: false)", "{t}");
    assert!(t["result"].get("_meta").is_none_or(|m| m.get("io.modelcontextprotocol/related-task").is_none()));
    assert!(t.get("error").is_none() && t.get("requestState").is_none());
    assert!(t["lastUpdatedAt"].as_str() >= t["createdAt"].as_str());

    // A tool error completes the task with isError; a panic fails it with a JSON-RPC error.
    let r = raw.ext("tools/call", json!({"name": "work", "arguments": {"fail": true}})).await;
    let t = raw.until(r["result"]["taskId"].as_str().expect("id"), "completed").await;
    assert_eq!(t["result"]["isError"], true, "{t}");
    let r = raw.ext("tools/call", json!({"name": "work", "arguments": {"panic": true}})).await;
    let t = raw.until(r["result"]["taskId"].as_str().expect("id"), "failed").await;
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert!(t.get("result").is_none() && t["error"]["message"].is_string());
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_work_and_is_idempotent() {
    let probes = Arc::new(Probes::default());
    let mut raw = Raw::new(server(probes.clone(), Duration::from_secs(60)));
    let r = raw.ext("tools/call", json!({"name": "work", "arguments": {"ms": 60_000}})).await;
    let id = r["result"]["taskId"].as_str().expect("id").to_owned();
    assert!(eventually_for(Duration::from_secs(5), || probes.started.load(Ordering::SeqCst) == 1).await);
    let ack = raw.ext("tasks/cancel", json!({"taskId": id})).await;
    let ack = &ack["result"];
    assert_eq!(ack["resultType"], "complete");
    for absent in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(absent).is_none(), "an empty ack: {ack}");
    }
    assert_eq!(raw.task(&id).await["status"], "cancelled");
    assert!(
        eventually_for(Duration::from_secs(5), || probes.dropped.load(Ordering::SeqCst) == 1).await,
        "the handler's future is dropped"
    );
    // Cancelling a terminal task acknowledges and changes nothing.
    let again = raw.ext("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["result"]["resultType"], "complete");
    assert_eq!(raw.task(&id).await["status"], "cancelled");
}

#[tokio::test(start_paused = true)]
async fn input_during_a_task_goes_through_tasks_update() {
    let mut raw = Raw::new(server(Arc::default(), Duration::from_secs(60)));
    let r = raw.ext("tools/call", json!({"name": "two_questions", "arguments": {}})).await;
    let id = r["result"]["taskId"].as_str().expect("id").to_owned();
    let t = raw.until(&id, "input_required").await;
    let keys: Vec<String> = t["inputRequests"].as_object().expect("requests").keys().cloned().collect();
    assert_eq!(keys.len(), 2, "{t}");
    assert!(t["inputRequests"][&keys[0]]["method"] == "elicitation/create");

    // An answer that does not fit its request refuses the update; stray keys are ignored.
    let bad = raw.ext("tasks/update", json!({"taskId": id, "inputResponses": {keys[0].clone(): {"roots": []}}})).await;
    assert_eq!(code(&bad), -32602);
    let answers =
        json!({keys[0].clone(): {"action": "accept", "content": {"name": "Ada"}}, "stray": {"ignored": true}});
    let ack = raw.ext("tasks/update", json!({"taskId": id, "inputResponses": answers})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("status").is_none());
    // Partly answered: still input_required, only the other key left.
    let t = raw.task(&id).await;
    assert_eq!(t["status"], "input_required");
    let left: Vec<&String> = t["inputRequests"].as_object().expect("requests").keys().collect();
    assert_eq!(left, vec![&keys[1]]);
    let answers = json!({keys[1].clone(): {"action": "accept", "content": {"ok": true}}});
    raw.ext("tasks/update", json!({"taskId": id, "inputResponses": answers})).await;
    let t = raw.until(&id, "completed").await;
    let text = t["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("Ada") && text.contains("true"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn input_required_rounds_before_the_task() {
    let mut raw = Raw::new(server(Arc::default(), Duration::from_secs(60)));
    let r = raw.ext("tools/call", json!({"name": "ask_then_task", "arguments": {}})).await;
    let first = &r["result"];
    assert_eq!(first["resultType"], "input_required", "{r}");
    assert!(first.get("taskId").is_none());
    let answers = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    let params = json!({"name": "ask_then_task", "arguments": {}, "inputResponses": answers, "requestState": first["requestState"]});
    let r = raw.ext("tools/call", params).await;
    let created = &r["result"];
    assert_eq!(created["resultType"], "task", "{r}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let t = raw.until(created["taskId"].as_str().expect("id"), "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "Hello, \"Alice\" (task: true)", "{t}");
}

#[tokio::test]
async fn tasks_expire_after_their_ttl() {
    let probes = Arc::new(Probes::default());
    let mut raw = Raw::new(server(probes.clone(), Duration::from_millis(200)));
    let r = raw.ext("tools/call", json!({"name": "work", "arguments": {"ms": 60_000}})).await;
    let id = r["result"]["taskId"].as_str().expect("id").to_owned();
    assert_eq!(r["result"]["ttlMs"], 200);
    assert_eq!(raw.task(&id).await["status"], "working", "alive within its TTL");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = raw.ext("tasks/get", json!({"taskId": id})).await;
    assert_eq!(code(&r), -32602, "expired: {r}");
    assert!(
        eventually_for(Duration::from_secs(5), || probes.dropped.load(Ordering::SeqCst) == 1).await,
        "an expired task's work is stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn task_status_reaches_listeners_that_declared_the_extension() {
    let mut raw = Raw::new(server(Arc::default(), Duration::from_secs(60)));
    let r = raw.ext("tools/call", json!({"name": "work", "arguments": {"ms": 300}})).await;
    let id = r["result"]["taskId"].as_str().expect("id").to_owned();

    let filter = json!({"taskIds": [id.clone(), "no-such-task"], "somethingNew": true, "toolsListChanged": true});
    let r = raw.stateless("subscriptions/listen", json!({"notifications": filter.clone()}), json!({})).await;
    assert_eq!(code(&r), -32021, "task notifications need the extension: {r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object());

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    });
    raw.send(json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
        "params": {"notifications": filter, "_meta": meta}}))
        .await;
    let ack = raw.next_frame().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    // Only what the server delivers is acknowledged: known tasks, known kinds.
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id.clone()], "toolsListChanged": true}), "{ack}");
    let done = loop {
        let n = raw.next_frame().await;
        assert_eq!(n["method"], "notifications/tasks", "{n}");
        assert_eq!(n["params"]["taskId"], id.as_str());
        assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");
        if n["params"]["status"] == "completed" {
            break n;
        }
    };
    assert_eq!(done["params"]["result"]["content"][0]["text"], "worked 300 ms (task: true, cancelled: false)");
    assert!(done["params"].get("resultType").is_none(), "a notification, not a result: {done}");
}

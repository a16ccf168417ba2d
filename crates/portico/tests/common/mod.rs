//! Shared test fixtures: a server exercising every feature, a client handler, and a wire tap
//! that records every message both sides emit so they can be validated against the official
//! JSON Schema of the revision in use.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::schema::*;
use portico::server::{HandlerError, Json, RequestContext, ResourceRequest, Server};
use portico::transport::memory::{self, MemoryReader, MemoryTransport, MemoryWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde::Deserialize;
use serde_json::{Value, json};

/// Every frame written, by which side wrote it.
#[derive(Default, Clone)]
pub struct Wire(pub Arc<Mutex<Vec<(&'static str, Value)>>>);

impl Wire {
    pub fn frames(&self) -> Vec<(&'static str, Value)> {
        self.0.lock().expect("wire").clone()
    }
}

pub struct Tap {
    inner: MemoryTransport,
    side: &'static str,
    wire: Wire,
}

pub struct TapWriter {
    inner: MemoryWriter,
    side: &'static str,
    wire: Wire,
}

impl Transport for Tap {
    type Reader = MemoryReader;
    type Writer = TapWriter;
    fn split(self) -> (MemoryReader, TapWriter) {
        let (r, w) = self.inner.split();
        (r, TapWriter { inner: w, side: self.side, wire: self.wire })
    }
}

impl FrameWriter for TapWriter {
    async fn write_frame(&mut self, frame: &[u8]) -> std::io::Result<()> {
        let v: Value = serde_json::from_slice(frame).expect("every emitted frame is JSON");
        assert!(!frame.contains(&b'\n'), "emitted frames are compact");
        self.wire.0.lock().expect("wire").push((self.side, v));
        self.inner.write_frame(frame).await
    }
    async fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().await
    }
    async fn close(&mut self) -> std::io::Result<()> {
        self.inner.close().await
    }
}

/// A tapped in-memory pair: (client side, server side, wire).
pub fn tapped_pair() -> (Tap, Tap, Wire) {
    let (a, b) = memory::pair();
    let wire = Wire::default();
    (Tap { inner: a, side: "client", wire: wire.clone() }, Tap { inner: b, side: "server", wire: wire.clone() }, wire)
}

#[derive(Deserialize)]
pub struct Echo {
    pub text: String,
}

#[derive(Deserialize)]
pub struct Add {
    pub a: i64,
    pub b: i64,
}

#[derive(Deserialize)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(Deserialize)]
pub struct Empty {}

#[derive(Deserialize)]
pub struct PromptArgs {
    pub topic: String,
}

/// Counters the fixture server's handlers update.
#[derive(Default)]
pub struct Probes {
    pub cancelled: AtomicUsize,
    pub sleeping: AtomicUsize,
    /// `sleep` calls that ran to their end.
    pub slept: AtomicUsize,
}

struct OnDrop(Arc<Probes>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.cancelled.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn schema(props: Value, required: &[&str]) -> JsonObject {
    object(json!({"type": "object", "properties": props, "required": required}))
}

pub fn fixture_server(probes: Arc<Probes>) -> Server {
    let p2 = probes.clone();
    Server::builder(Implementation::new("fixture", "1.0.0").with_title("Fixture server"))
        .instructions("Use echo to test.")
        .tool(
            Tool::new("echo", schema(json!({"text": {"type": "string"}}), &["text"])).with_description("Echoes text"),
            |a: Echo| async move { a.text },
        )
        .tool(
            Tool::new("add", schema(json!({"a": {"type": "integer"}, "b": {"type": "integer"}}), &["a", "b"]))
                .with_output_schema(schema(json!({"sum": {"type": "integer"}}), &["sum"])),
            |a: Add| async move { Json(json!({"sum": a.a + a.b})) },
        )
        .tool(Tool::new("fail", schema(json!({}), &[])), |_: Empty| async move { Err::<String, _>("the disk is full") })
        .tool(Tool::new("sleep", schema(json!({"ms": {"type": "integer"}}), &["ms"])), move |a: Sleep| {
            let probes = p2.clone();
            async move {
                probes.sleeping.fetch_add(1, Ordering::SeqCst);
                let guard = OnDrop(probes.clone());
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                std::mem::forget(guard);
                probes.slept.fetch_add(1, Ordering::SeqCst);
                "ok".to_string()
            }
        })
        .tool(Tool::new("progress", schema(json!({}), &[])), |_: Empty, cx: RequestContext| async move {
            for i in [0.0, 50.0, 50.0, 100.0] {
                cx.progress(i, Some(100.0), Some("working")).await.map_err(|e| e.to_string())?;
            }
            Ok::<_, String>("done".to_string())
        })
        .tool(Tool::new("log", schema(json!({}), &[])), |_: Empty, cx: RequestContext| async move {
            cx.log(LoggingLevel::Debug, Some("fixture"), "debug line").await.map_err(|e| e.to_string())?;
            cx.log(LoggingLevel::Warning, Some("fixture"), json!({"msg": "warning line"}))
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>("logged".to_string())
        })
        .tool(Tool::new("ask", schema(json!({}), &[])), |_: Empty, cx: RequestContext| async move {
            let form = RequestedSchema::new().with_required_property("name", StringSchema::new());
            let params = ElicitRequestParams::from(ElicitRequestFormParams::new("What is your name?", form));
            let answer = cx.elicit(params).await.map_err(|e| e.to_string())?;
            let name = answer
                .content
                .as_ref()
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("nobody")
                .to_owned();
            // A second round: sampling, then roots.
            let msg =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text(format!("Say hi to {name}"))], 50);
            let sampled = cx.create_message(msg).await.map_err(|e| e.to_string())?;
            let said = match sampled.content {
                SamplingContent::Single(SamplingMessageContentBlock::Text(t)) => t.text,
                _ => "?".into(),
            };
            let roots = cx.list_roots().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("{name}|{said}|{}", roots.roots.len()))
        })
        .resource(
            Resource::new("test://static", "static").with_mime_type("text/plain"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::text(r.uri(), "static text"))
            },
        )
        .resource_template(
            ResourceTemplate::new("test://items/{id}", "item"),
            |r: ResourceRequest, _: RequestContext| async move {
                match r.var("id") {
                    Some("missing") => Err(HandlerError::resource_not_found(r.uri())),
                    Some(id) => Ok(ResourceContents::text(r.uri(), format!("item {id}"))),
                    None => Err(HandlerError::internal("no id")),
                }
            },
        )
        .prompt(
            Prompt::new("explain").with_argument(PromptArgument::new("topic").with_required(true)),
            |a: PromptArgs| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Explain {}", a.topic))]))
            },
        )
        .completion(|p: CompleteRequestParams, _: RequestContext| async move {
            let all = ["python", "pytorch", "rust"];
            let values: Vec<String> =
                all.iter().filter(|v| v.starts_with(&p.argument.value)).map(|s| s.to_string()).collect();
            Ok(CompleteResult::new(values))
        })
        .build()
}

/// Answers the fixture's input requests and records notifications.
#[derive(Default)]
pub struct Recorder {
    pub logs: Mutex<Vec<LoggingMessageNotificationParams>>,
    pub tools_changed: AtomicUsize,
    pub updated: Mutex<Vec<String>>,
}

#[derive(Clone, Default)]
pub struct Handler(pub Arc<Recorder>);

impl portico::client::ClientHandler for Handler {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        Box::pin(async move {
            let n = params.messages.len();
            Ok(CreateMessageResult::new(SamplingMessageContentBlock::text(format!("hi ({n})")), "test-model"))
        })
    }
    fn elicit(&self, _params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(
            async move { Ok(ElicitResult::accept(json!({"name": "Ada"}).as_object().cloned().unwrap_or_default())) },
        )
    }
    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async move { Ok(ListRootsResult::new(vec![Root::new("file:///tmp/a"), Root::new("file:///tmp/b")])) })
    }
    fn on_log(&self, params: LoggingMessageNotificationParams) {
        self.0.logs.lock().expect("logs").push(params);
    }
    fn on_tools_list_changed(&self) {
        self.0.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
    fn on_resource_updated(&self, uri: &str) {
        self.0.updated.lock().expect("updated").push(uri.to_owned());
    }
}

pub fn all_caps() -> ClientCapabilities {
    ClientCapabilities::new().with_sampling(false).with_elicitation(true, false).with_roots(true)
}

/// Waits until `f` holds: first a few turns of the scheduler (all that peers in the same
/// runtime need), then as [`eventually_for`] for 2 s at most.
pub async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..64 {
        if f() {
            return true;
        }
        tokio::task::yield_now().await;
    }
    eventually_for(Duration::from_secs(2), f).await
}

/// Waits up to `limit` until `f` holds, polling every 2 ms (on Tokio's clock: under paused
/// time the polls take no real time).
pub async fn eventually_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    f()
}

/// Validates every recorded message against the official schema of `version`.
pub fn validate_wire(wire: &Wire, version: ProtocolVersion) {
    let root = format!("{}/../../testdata/spec/schema/{}/schema.json", env!("CARGO_MANIFEST_DIR"), version.as_str());
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&root).expect("schema file")).expect("schema json");
    let defs_key = if schema.get("$defs").is_some() { "$defs" } else { "definitions" };
    let mut methods: HashMap<(String, String), String> = HashMap::new();
    let mut checked = 0;
    for (side, msg) in wire.frames() {
        let other = if side == "client" { "server" } else { "client" };
        let (def, instance) = if let Some(method) = msg.get("method").and_then(Value::as_str) {
            if let Some(id) = msg.get("id") {
                methods.insert((side.to_owned(), id.to_string()), method.to_owned());
            }
            match request_def(method, msg.get("id").is_some()) {
                Some(d) => (d, msg.clone()),
                None => continue,
            }
        } else if let Some(result) = msg.get("result") {
            let id = msg.get("id").map(Value::to_string).unwrap_or_default();
            let Some(method) = methods.get(&(other.to_owned(), id)) else { continue };
            let is_input_required = result.get("resultType").and_then(Value::as_str) == Some("input_required");
            let def = if is_input_required { Some("InputRequiredResult".to_owned()) } else { result_def(method) };
            match def {
                Some(d) => (d, result.clone()),
                None => continue,
            }
        } else if msg.get("error").is_some() {
            ("JSONRPCErrorResponse".to_owned(), msg.clone())
        } else {
            continue;
        };
        let def = if def == "JSONRPCErrorResponse" && schema[defs_key].get(&def).is_none() {
            "JSONRPCError".to_owned()
        } else {
            def
        };
        if schema[defs_key].get(&def).is_none() {
            continue; // the type does not exist in this revision (e.g. InputRequiredResult before 2026)
        }
        let mut s = schema.clone();
        s["$ref"] = Value::String(format!("#/{defs_key}/{def}"));
        let validator = jsonschema::validator_for(&s).expect("compile schema");
        let errors: Vec<String> =
            validator.iter_errors(&instance).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{side} emitted an invalid {def} for {version}:\n{instance}\n{errors:#?}");
        checked += 1;
    }
    eprintln!("validated {checked} messages against {version}");
    assert!(checked > 0, "nothing was validated");
}

fn pascal(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "Initialize",
        "ping" => "Ping",
        "tools/list" => "ListTools",
        "tools/call" => "CallTool",
        "resources/list" => "ListResources",
        "resources/templates/list" => "ListResourceTemplates",
        "resources/read" => "ReadResource",
        "resources/subscribe" => "Subscribe",
        "resources/unsubscribe" => "Unsubscribe",
        "prompts/list" => "ListPrompts",
        "prompts/get" => "GetPrompt",
        "completion/complete" => "Complete",
        "logging/setLevel" => "SetLevel",
        "sampling/createMessage" => "CreateMessage",
        "elicitation/create" => "Elicit",
        "roots/list" => "ListRoots",
        "server/discover" => "Discover",
        "subscriptions/listen" => "SubscriptionsListen",
        "notifications/initialized" => "InitializedNotification",
        "notifications/cancelled" => "CancelledNotification",
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        _ => return None,
    })
}

fn request_def(method: &str, is_request: bool) -> Option<String> {
    let p = pascal(method)?;
    Some(if is_request { format!("{p}Request") } else { p.to_owned() })
}

fn result_def(method: &str) -> Option<String> {
    let p = pascal(method)?;
    Some(match p {
        "Ping" | "SetLevel" | "Subscribe" | "Unsubscribe" => "EmptyResult".to_owned(),
        _ => format!("{p}Result"),
    })
}

/// A client on the raw wire of an in-memory connection: requests written as JSON, responses
/// read back by id.
pub struct Raw {
    pub r: MemoryReader,
    pub w: MemoryWriter,
    pub next: i64,
}

impl Raw {
    pub fn new() -> Raw {
        Raw::with(fixture_server(Arc::new(Probes::default())))
    }

    pub fn with(server: Server) -> Raw {
        let (a, b) = memory::pair();
        server.connect(b);
        let (r, w) = a.split();
        Raw { r, w, next: 1 }
    }

    pub async fn send(&mut self, msg: Value) {
        self.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
    }

    /// Sends a request and returns its response, skipping notifications.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let frame = self.r.read_frame().await.expect("read").expect("open");
            let v: Value = serde_json::from_slice(&frame).expect("json");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }
}

/// The `_meta` of a 2026-07-28 request declaring `caps`.
pub fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

/// The error code of a response (panics on a result).
pub fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

//! Small helpers shared by the conformance tests: time bounds, a wire tap that records what
//! each side sent, and validation of the client's messages against the official JSON Schema.
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::transport::{FrameReader, FrameWriter, ReadError, Transport};
use serde_json::Value;

/// The longest any single step of a test may take before the test fails instead of hanging.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Runs `fut`, failing the test if it takes longer than [`LIMIT`].
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} took longer than {LIMIT:?}"),
    }
}

/// Polls `f` (bounded) until it holds.
pub async fn until(what: &str, mut f: impl FnMut() -> bool) {
    bounded(what, async {
        while !f() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// The workspace root (the conformance crate's parent).
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// Which way a recorded message went, seen from the side owning the tap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Written by the side owning the tap.
    Sent,
    /// Read by the side owning the tap.
    Received,
}

/// Every message through a tap, in order, with its direction.
#[derive(Clone, Default)]
pub struct Wire(Arc<Mutex<Vec<(Frame, Value)>>>);

impl Wire {
    pub fn frames(&self) -> Vec<(Frame, Value)> {
        self.0.lock().expect("wire lock").clone()
    }

    pub fn sent(&self) -> Vec<Value> {
        self.frames().into_iter().filter(|(d, _)| *d == Frame::Sent).map(|(_, v)| v).collect()
    }

    /// Records a message by hand (to test the validator itself).
    pub fn record(&self, direction: Frame, message: Value) {
        self.0.lock().expect("wire lock").push((direction, message));
    }

    fn push(&self, direction: Frame, frame: &[u8]) {
        let value = serde_json::from_slice(frame)
            .unwrap_or_else(|e| panic!("a {direction:?} frame is not JSON ({e}): {}", String::from_utf8_lossy(frame)));
        self.0.lock().expect("wire lock").push((direction, value));
    }
}

/// A transport that records every frame written and read.
pub struct Tap<T> {
    inner: T,
    wire: Wire,
}

impl<T: Transport> Tap<T> {
    pub fn new(inner: T) -> (Self, Wire) {
        let wire = Wire::default();
        (Tap { inner, wire: wire.clone() }, wire)
    }
}

pub struct TapReader<R> {
    inner: R,
    wire: Wire,
}

pub struct TapWriter<W> {
    inner: W,
    wire: Wire,
}

impl<T: Transport> Transport for Tap<T> {
    type Reader = TapReader<T::Reader>;
    type Writer = TapWriter<T::Writer>;
    fn split(self) -> (Self::Reader, Self::Writer) {
        let (r, w) = self.inner.split();
        (TapReader { inner: r, wire: self.wire.clone() }, TapWriter { inner: w, wire: self.wire })
    }
}

impl<R: FrameReader> FrameReader for TapReader<R> {
    async fn read_frame(&mut self) -> Result<Option<bytes::Bytes>, ReadError> {
        let frame = self.inner.read_frame().await?;
        if let Some(f) = &frame {
            self.wire.push(Frame::Received, f);
        }
        Ok(frame)
    }
}

impl<W: FrameWriter> FrameWriter for TapWriter<W> {
    async fn write_frame(&mut self, frame: &[u8]) -> std::io::Result<()> {
        assert!(!frame.contains(&b'\n'), "emitted frames are single lines");
        self.wire.push(Frame::Sent, frame);
        self.inner.write_frame(frame).await
    }
    async fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().await
    }
    async fn close(&mut self) -> std::io::Result<()> {
        self.inner.close().await
    }
}

/// The schema type of a method's request, notification or result, as the spec names them.
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
        "notifications/roots/list_changed" => "RootsListChangedNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        _ => return None,
    })
}

fn result_def(method: &str) -> Option<String> {
    let p = pascal(method)?;
    Some(match p {
        "Ping" | "SetLevel" | "Subscribe" | "Unsubscribe" => "EmptyResult".to_owned(),
        _ => format!("{p}Result"),
    })
}

/// Validates every message the tap's owner sent against the official schema of `version`
/// (`testdata/spec/schema/<version>/schema.json`). See [`validate`].
pub fn validate_sent(wire: &Wire, version: &str) -> usize {
    validate(wire, version, Frame::Sent)
}

/// Validates every message that went in `direction` against the official schema of `version`:
/// each as a `JSONRPCMessage`, and requests, notifications, results and errors as their specific
/// type where the revision has it (results are typed by the request they answer). Returns how
/// many messages were checked against a specific type.
pub fn validate(wire: &Wire, version: &str, direction: Frame) -> usize {
    let path = workspace_root().join(format!("testdata/spec/schema/{version}/schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    let defs_key = if schema.get("$defs").is_some() { "$defs" } else { "definitions" };
    let who = if direction == Frame::Sent { "the tap's owner" } else { "the peer" };
    let mut validators: HashMap<String, jsonschema::Validator> = HashMap::new();
    let mut check = |def: &str, instance: &Value| -> bool {
        if schema[defs_key].get(def).is_none() {
            return false;
        }
        let validator = validators.entry(def.to_owned()).or_insert_with(|| {
            let mut s = schema.clone();
            s["$ref"] = Value::String(format!("#/{defs_key}/{def}"));
            jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("cannot compile {def}: {e}"))
        });
        let errors: Vec<String> =
            validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{who} sent an invalid {def} for {version}:\n{instance}\n{errors:#?}");
        true
    };
    // Which method each request id of the other side was for, to type the results.
    let mut asked: HashMap<String, String> = HashMap::new();
    let mut specific = 0;
    for (d, msg) in wire.frames() {
        if d != direction {
            if let (Some(id), Some(m)) = (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
                asked.insert(id.to_string(), m.to_owned());
            }
            continue;
        }
        assert!(check("JSONRPCMessage", &msg), "{version} has JSONRPCMessage");
        let def = if let Some(method) = msg.get("method").and_then(Value::as_str) {
            let is_request = msg.get("id").is_some();
            pascal(method).map(|p| if is_request { format!("{p}Request") } else { p.to_owned() })
        } else if let Some(result) = msg.get("result") {
            let method = msg.get("id").and_then(|id| asked.get(&id.to_string()));
            let def = if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                Some("InputRequiredResult".to_owned())
            } else {
                method.and_then(|m| result_def(m))
            };
            if let Some(def) = def
                && check(&def, result)
            {
                specific += 1;
            }
            None
        } else if msg.get("error").is_some() {
            Some(
                if schema[defs_key].get("JSONRPCErrorResponse").is_some() {
                    "JSONRPCErrorResponse"
                } else {
                    "JSONRPCError"
                }
                .to_owned(),
            )
        } else {
            None
        };
        if let Some(def) = def
            && check(&def, &msg)
        {
            specific += 1;
        }
    }
    specific
}

//! The `conformance-server` binary spoken to in raw lines over its stdin and stdout: error codes
//! for every kind of bad input, both eras' entry rules, an oversized line that must be skipped
//! without being held in memory, and a clean exit at end of input. Every line the server writes
//! to stdout must be a JSON-RPC message.
#![cfg(unix)]

mod support;

use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{bounded, until};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const SERVER: &str = env!("CARGO_BIN_EXE_conformance-server");
const STATELESS: &str = "2026-07-28";

/// A server process and its pipes, read line by line.
struct Raw {
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Every line the server wrote to stdout, parsed.
    lines: Vec<Value>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Raw {
    fn spawn() -> Raw {
        let mut child = Command::new(SERVER)
            .arg("--stdio")
            .env("RUST_LOG", "warn")
            .env_remove(portico_conformance::TEST_TOOLS_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conformance-server");
        let pid = child.id().expect("pid");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock().expect("stderr").extend_from_slice(&buf[..n]);
            }
        });
        Raw { child, pid, stdin, stdout, lines: Vec::new(), stderr }
    }

    fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin is open")
    }

    async fn send(&mut self, line: &str) {
        assert!(!line.contains('\n'));
        let stdin = self.stdin();
        bounded("write", async {
            stdin.write_all(line.as_bytes()).await.expect("write");
            stdin.write_all(b"\n").await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await;
    }

    async fn send_json(&mut self, v: Value) {
        self.send(&v.to_string()).await;
    }

    /// The next stdout line, which must be a JSON-RPC 2.0 message; `None` at end of output.
    async fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = bounded("read a line", self.stdout.read_line(&mut line)).await.expect("read stdout");
        if n == 0 {
            return None;
        }
        let v: Value = serde_json::from_str(line.trim_end_matches('\n'))
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        assert_jsonrpc(&v);
        self.lines.push(v.clone());
        Some(v)
    }

    /// The next message that is not a notification.
    async fn next_response(&mut self) -> Value {
        loop {
            let v = self.next().await.expect("a response before end of output");
            if v.get("id").is_some() || v.get("error").is_some() {
                return v;
            }
        }
    }

    async fn initialize(&mut self, capabilities: Value) {
        self.send_json(json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}}))
            .await;
        let r = self.next_response().await;
        assert_eq!(r["id"], "init", "{r}");
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    }

    /// Closes stdin, reads stdout to its end (every line checked), and waits for the exit.
    async fn finish(mut self) -> (ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        while self.next().await.is_some() {}
        let status = bounded("exit", self.child.wait()).await.expect("wait");
        (status, self.lines)
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr")).into_owned()
    }
}

fn assert_jsonrpc(v: &Value) {
    assert_eq!(v["jsonrpc"], "2.0", "not JSON-RPC 2.0: {v}");
    let is_request_or_notification = v.get("method").is_some_and(Value::is_string);
    let is_response = v.get("id").is_some() && (v.get("result").is_some() != v.get("error").is_some());
    let is_idless_error = v.get("id").is_none_or(Value::is_null) && v.get("error").is_some();
    assert!(is_request_or_notification || is_response || is_idless_error, "not a JSON-RPC message: {v}");
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error response expected, got {v}"))
}

fn has_no_id(v: &Value) -> bool {
    v.get("id").is_none_or(Value::is_null)
}

/// `_meta` for a 2026-07-28 request.
fn meta(version: &str, capabilities: Option<Value>) -> Value {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    if let Some(c) = capabilities {
        m["io.modelcontextprotocol/clientCapabilities"] = c;
    }
    m
}

/// A memory figure of a process in KiB from `/proc/<pid>/status`: `VmRSS` (resident now) or
/// `VmHWM` (the kernel's resident high-water mark).
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn bad_input_gets_the_right_error_codes() {
    let mut s = Raw::spawn();
    s.send("{not json").await;
    let r = s.next_response().await;
    assert_eq!(code(&r), -32700, "{r}");
    assert!(has_no_id(&r), "a parse error has no id: {r}");

    s.send(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#).await;
    let r = s.next_response().await;
    assert_eq!(code(&r), -32600, "{r}");

    s.initialize(json!({})).await;

    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#).await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(2), -32601), "{r}");

    s.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#).await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(3), -32602), "{r}");

    // A response to a request the server never sent is ignored: the next line answers id 4.
    s.send(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":"late","error":{"code":-32603,"message":"nobody asked"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).await;
    let r = s.next_response().await;
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));

    // The fixture still works after all that.
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#)
        .await;
    let r = s.next_response().await;
    assert_eq!(r["result"]["content"][0]["text"], "This is a simple text response for testing.", "{r}");

    let (status, lines) = s.finish().await;
    assert!(status.success(), "exit status {status:?}");
    assert_eq!(lines.len(), 7, "one line per request or bad message, nothing else: {lines:#?}");
}

#[tokio::test]
async fn a_100_mb_line_is_refused_without_being_held() {
    const TOTAL: usize = 100 * 1024 * 1024;
    const CHUNK: usize = 1024 * 1024;
    let mut s = Raw::spawn();
    s.initialize(json!({})).await;
    let baseline = status_kib(s.pid, "VmRSS").expect("VmRSS");

    // Sample the server's memory while the line streams in.
    let peak = Arc::new(AtomicU64::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done, pid) = (peak.clone(), done.clone(), s.pid);
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                if let Some(kib) = status_kib(pid, "VmRSS") {
                    peak.fetch_max(kib, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let head = br#"{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":""#;
    let chunk = vec![b'a'; CHUNK];
    let stdin = s.stdin();
    bounded("writing 100 MB", async {
        stdin.write_all(head).await.expect("write");
        let mut written = head.len();
        while written < TOTAL {
            let n = CHUNK.min(TOTAL - written);
            stdin.write_all(&chunk[..n]).await.expect("write");
            written += n;
        }
        stdin.write_all(b"\"}}\n").await.expect("write");
        stdin.flush().await.expect("flush");
    })
    .await;
    s.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#).await;

    let r = s.next_response().await;
    assert_eq!(code(&r), -32600, "too large is an invalid request: {r}");
    assert!(has_no_id(&r), "the id of a skipped message is unknown: {r}");
    let r = s.next_response().await;
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": "after", "result": {}}), "the next request is answered");

    done.store(true, Ordering::SeqCst);
    sampler.await.expect("sampler");
    let peak = peak.load(Ordering::SeqCst);
    let hwm = status_kib(s.pid, "VmHWM").expect("VmHWM");
    eprintln!("server VmRSS: {baseline} KiB before, {peak} KiB at the highest sample; VmHWM {hwm} KiB");
    // The line is skipped as it streams (at most the 16 MiB message limit is ever buffered):
    // the growth over the idle server stays far below the 100 MB line.
    for (what, kib) in [("sampled VmRSS", peak), ("VmHWM", hwm)] {
        let growth = kib.saturating_sub(baseline);
        assert!(growth < 32 * 1024, "the server held the line: {what} reached {kib} KiB (baseline {baseline} KiB)");
    }
    // stderr is read by a task of its own: give it time to catch up.
    until("the skip logged to stderr", || s.stderr().contains("oversized")).await;

    let (status, _) = s.finish().await;
    assert!(status.success(), "exit status {status:?}");
}

#[tokio::test]
async fn era_entry_rules() {
    let mut s = Raw::spawn();
    // Neither initialize nor _meta.
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(1), -32602), "{r}");

    // A revision the server does not speak.
    s.send_json(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": meta("2099-01-01", Some(json!({})))}}))
        .await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(2), -32022), "{r}");
    let supported = r["error"]["data"]["supported"].as_array().unwrap_or_else(|| panic!("data.supported: {r}"));
    assert!(supported.contains(&json!(STATELESS)) && supported.contains(&json!("2025-11-25")), "{r}");

    // 2026-07-28 without client capabilities.
    s.send_json(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta(STATELESS, None)}}))
        .await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(3), -32602), "{r}");

    // A tool that needs sampling, for a client that declared nothing.
    s.send_json(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "test_sampling", "arguments": {"prompt": "hi"}, "_meta": meta(STATELESS, Some(json!({})))}}))
        .await;
    let r = s.next_response().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(4), -32021), "{r}");

    // And a well-formed 2026-07-28 call works, with no initialize ever sent.
    s.send_json(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "test_simple_text", "_meta": meta(STATELESS, Some(json!({})))}}))
        .await;
    let r = s.next_response().await;
    assert_eq!(r["id"], 5, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "This is a simple text response for testing.", "{r}");

    let (status, _) = s.finish().await;
    assert!(status.success(), "exit status {status:?}");
}

#[tokio::test]
async fn end_of_input_answers_what_was_read_then_exits_0() {
    let mut s = Raw::spawn();
    s.initialize(json!({})).await;
    // Slow calls (about 100 ms each) and a quick one, then end of input at once.
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_tool_with_progress","_meta":{"progressToken":"p"}}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_logging"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
    let (status, lines) = s.finish().await;
    assert!(status.success(), "exit status {status:?}");
    let mut answered: Vec<i64> =
        lines.iter().filter(|l| l.get("result").is_some()).filter_map(|l| l["id"].as_i64()).collect();
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3], "every request read before end of input is answered: {lines:#?}");
    let progress: Vec<&Value> = lines.iter().filter(|l| l["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{lines:#?}");
    assert_eq!(lines.iter().filter(|l| l["method"] == "notifications/message").count(), 3, "{lines:#?}");
}

/// A tool waits for the client's answer to `sampling/createMessage` when stdin ends: the
/// answer can never come, so the server should give up on it and exit.
#[tokio::test]
async fn end_of_input_while_a_tool_waits_for_the_client() {
    let mut s = Raw::spawn();
    s.initialize(json!({"sampling": {}})).await;
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hi"}}}"#).await;
    let asked = s.next().await.expect("the server asks for sampling");
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    drop(s.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(20), s.child.wait()).await;
    let status = status.expect("the server exits once its input has ended").expect("wait");
    assert!(status.success(), "exit status {status:?}");
}

/// Requests written right after `initialize`, without waiting for its answer, belong to the
/// session it opens. (Clients SHOULD NOT do this, but a server that reads them should not
/// answer them by chance: today each is a race between the handlers.)
#[tokio::test]
async fn requests_pipelined_behind_initialize_belong_to_its_session() {
    let mut s = Raw::spawn();
    // One write, so the server reads them all at once, as from a fast client.
    let mut burst = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    burst.push_str("\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for id in 1..=5 {
        burst.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n"));
    }
    let stdin = s.stdin();
    bounded("write", async {
        stdin.write_all(burst.as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
    })
    .await;
    let (status, lines) = s.finish().await;
    assert!(status.success(), "exit status {status:?}");
    let errors: Vec<&Value> = lines.iter().filter(|l| l.get("error").is_some()).collect();
    assert!(errors.is_empty(), "every pipelined request is answered in the session: {errors:#?}");
    assert_eq!(lines.len(), 6, "{lines:#?}");
}

/// No transport at all is a usage error: exit code 2, nothing on stdout.
#[tokio::test]
async fn no_transport_is_a_usage_error() {
    let out = bounded("no arguments", Command::new(SERVER).stdin(Stdio::null()).output()).await.expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
}

//! `ServerBuilder::keep_handlers_across_input`: in 2026-07-28 a handler that asks for input is
//! kept, and the retry resumes it, so what it did before asking is done once. Without the
//! option, or when the kept handler's time ran out, the retry runs the handler again.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Raw, code, meta};
use portico::schema::{
    ElicitRequestFormParams, ElicitRequestParams, GetPromptResult, Implementation, PromptMessage, RequestedSchema,
    ResourceContents, StringSchema, Tool, object,
};
use portico::server::{HandlerError, RequestContext, Server};
use portico::transport::{FrameReader, FrameWriter};
use serde_json::{Value, json};

/// How often the handlers started, and how many ended without finishing.
#[derive(Default)]
struct Counts {
    runs: AtomicUsize,
    dropped: AtomicUsize,
}

struct Unfinished(Option<Arc<Counts>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn form(message: &str) -> ElicitRequestParams {
    ElicitRequestParams::from(ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().with_required_property("v", StringSchema::new()),
    ))
}

fn value(answer: &portico::schema::ElicitResult) -> String {
    answer.content.as_ref().and_then(|c| c.get("v")).and_then(Value::as_str).unwrap_or("?").to_owned()
}

/// `once` counts a run, then asks one question; `twice` asks two in turn; `read` is a
/// resource that asks, and `prompt` a prompt that asks.
fn server(counts: Arc<Counts>, keep: Option<Duration>) -> Server {
    let mut b = Server::builder(Implementation::new("kept", "1"));
    if let Some(ttl) = keep {
        b = b.keep_handlers_across_input(ttl);
    }
    tools(b, counts).build()
}

/// [`server`] on a builder of the caller's, keeping handlers for 30 s.
fn server_from(b: portico::server::ServerBuilder, counts: Arc<Counts>) -> Server {
    tools(b.keep_handlers_across_input(Duration::from_secs(30)), counts).build()
}

fn tools(b: portico::server::ServerBuilder, counts: Arc<Counts>) -> portico::server::ServerBuilder {
    let (c1, c2, c3, c4) = (counts.clone(), counts.clone(), counts.clone(), counts);
    b.tool(Tool::new("once", object(json!({"type": "object"}))), move |_: Value, cx: RequestContext| {
        let c = c1.clone();
        async move {
            let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
            let mut unfinished = Unfinished(Some(c));
            let a = cx.input("q").elicit(form("Sure?")).await.map_err(|e| e.to_string())?;
            unfinished.0 = None;
            Ok::<_, String>(format!("run {n}: {}", value(&a)))
        }
    })
    .tool(Tool::new("report", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
        let _ = cx.progress(1.0, None, Some("before")).await;
        let a = cx.input("q").elicit(form("Go on?")).await.map_err(|e| e.to_string())?;
        let _ = cx.progress(2.0, None, Some("after")).await;
        let _ = cx.log(portico::schema::LoggingLevel::Info, Some("kept"), json!("resumed")).await;
        Ok::<_, String>(value(&a))
    })
    .tool(Tool::new("twice", object(json!({"type": "object"}))), move |_: Value, cx: RequestContext| {
        let c = c2.clone();
        async move {
            let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
            let a = cx.input("first").elicit(form("First?")).await.map_err(|e| e.to_string())?;
            let b = cx.input("second").elicit(form("Second?")).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("run {n}: {}+{}", value(&a), value(&b)))
        }
    })
    .resource(
        portico::schema::Resource::new("kept://r", "r"),
        move |_: portico::server::ResourceRequest, cx: RequestContext| {
            let c = c3.clone();
            async move {
                let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
                let a = cx.input("q").elicit(form("Read?")).await?;
                Ok::<_, HandlerError>(ResourceContents::text("kept://r", format!("run {n}: {}", value(&a))))
            }
        },
    )
    .prompt(
        portico::schema::Prompt::new("p"),
        move |_: std::collections::BTreeMap<String, String>, cx: RequestContext| {
            let c = c4.clone();
            async move {
                let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
                let a = cx.input("q").elicit(form("Prompt?")).await?;
                Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user(format!(
                    "run {n}: {}",
                    value(&a)
                ))]))
            }
        },
    )
}

fn accept(v: &str) -> Value {
    json!({"action": "accept", "content": {"v": v}})
}

fn params(name: &str) -> Value {
    json!({"name": name, "arguments": {}, "_meta": meta(json!({"elicitation": {}}))})
}

/// `p` with this round's answers and the state of the last.
fn retry(mut p: Value, answers: Value, last: &Value) -> Value {
    p["inputResponses"] = answers;
    p["requestState"] = last["result"]["requestState"].clone();
    p
}

async fn call_once(raw: &mut Raw) -> Value {
    let r = raw.call("tools/call", params("once")).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    raw.call("tools/call", retry(params("once"), json!({"q": accept("yes")}), &r)).await
}

#[tokio::test]
async fn a_kept_handler_resumes_where_it_asked_and_runs_once() {
    let counts = Arc::new(Counts::default());
    let mut raw = Raw::with(server(counts.clone(), Some(Duration::from_secs(30))));
    let r = call_once(&mut raw).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 1: yes", "{r}");
    assert_eq!(counts.runs.load(Ordering::SeqCst), 1);
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 0, "the kept handler was never dropped");

    // Two questions in turn: three rounds, one run.
    let r = raw.call("tools/call", params("twice")).await;
    assert!(r["result"]["inputRequests"]["first"].is_object(), "{r}");
    let r = raw.call("tools/call", retry(params("twice"), json!({"first": accept("a")}), &r)).await;
    assert!(r["result"]["inputRequests"]["second"].is_object(), "{r}");
    assert!(r["result"]["inputRequests"].get("first").is_none(), "answered: {r}");
    // An answer to `first` sent again is ignored: the one from the round before stands.
    let answers = json!({"first": accept("EVIL"), "second": accept("b")});
    let r = raw.call("tools/call", retry(params("twice"), answers, &r)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: a+b", "{r}");
    assert_eq!(counts.runs.load(Ordering::SeqCst), 2);

    // A retry without the answer: asked again, still the same run.
    let first = raw.call("tools/call", params("once")).await;
    let again = raw.call("tools/call", retry(params("once"), json!({}), &first)).await;
    assert_eq!(again["result"]["inputRequests"]["q"]["method"], "elicitation/create", "{again}");
    let r = raw.call("tools/call", retry(params("once"), json!({"q": accept("late")}), &again)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 3: late", "{r}");
    assert_eq!(counts.runs.load(Ordering::SeqCst), 3);

    // Resources and prompts too.
    let read = json!({"uri": "kept://r", "_meta": meta(json!({"elicitation": {}}))});
    let r = raw.call("resources/read", read.clone()).await;
    let r = raw.call("resources/read", retry(read, json!({"q": accept("r")}), &r)).await;
    assert_eq!(r["result"]["contents"][0]["text"], "run 4: r", "{r}");
    let r = raw.call("prompts/get", params("p")).await;
    let r = raw.call("prompts/get", retry(params("p"), json!({"q": accept("p")}), &r)).await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "run 5: p", "{r}");
    assert_eq!(counts.runs.load(Ordering::SeqCst), 5);
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_state_used_twice_or_for_another_call_does_not_resume_the_handler_again() {
    let counts = Arc::new(Counts::default());
    let mut raw = Raw::with(server(counts.clone(), Some(Duration::from_secs(30))));
    let first = raw.call("tools/call", params("once")).await;
    let answered = retry(params("once"), json!({"q": accept("yes")}), &first);
    let r = raw.call("tools/call", answered.clone()).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 1: yes", "{r}");
    // The same state again: the handler is gone, so it runs again from the sealed answers
    // (none were used before the first round ended) with the answer sent now.
    let r = raw.call("tools/call", answered).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: yes", "{r}");
    // The state of a `once` call is refused for a `twice` call (the binding names the tool).
    let first = raw.call("tools/call", params("once")).await;
    let r = raw.call("tools/call", retry(params("twice"), json!({}), &first)).await;
    assert_eq!(code(&r), -32602, "{r}");
    // … and the `once` handler is still kept for its own retry.
    let r = raw.call("tools/call", retry(params("once"), json!({"q": accept("ok")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 3: ok", "{r}");
}

#[tokio::test]
async fn without_the_option_or_after_the_time_runs_out_the_handler_runs_again() {
    let counts = Arc::new(Counts::default());
    let mut raw = Raw::with(server(counts.clone(), None));
    let r = call_once(&mut raw).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: yes", "{r}");
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 1, "the first run was ended at its question");

    let counts = Arc::new(Counts::default());
    let mut raw = Raw::with(server(counts.clone(), Some(Duration::from_millis(100))));
    let first = raw.call("tools/call", params("once")).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while counts.dropped.load(Ordering::SeqCst) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "the kept handler was never dropped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = raw.call("tools/call", retry(params("once"), json!({"q": accept("yes")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: yes", "{r}");
}

/// A kept handler acts for whoever made the request: another caller's retry with the same
/// state runs the handler afresh for that caller, and the first caller's retry still resumes it.
#[cfg(feature = "auth-server")]
#[tokio::test]
async fn only_the_caller_who_made_the_request_resumes_its_kept_handler() {
    use portico::auth::server::AuthInfo;
    use portico::middleware::McpRequest;
    let counts = Arc::new(Counts::default());
    let mut b = Server::builder(Implementation::new("kept", "1"));
    // The caller's identity, as a bearer-token layer would set it, read here from `_meta`.
    b = b.layer(tower::util::MapRequestLayer::new(|mut req: McpRequest| {
        let who = req.params_as::<Value>().ok().and_then(|p| p["_meta"]["test/who"].as_str().map(str::to_owned));
        if let Some(who) = who {
            req.extensions_mut().insert(AuthInfo::new().with_subject(who));
        }
        req
    }));
    let server = server_from(b, counts.clone());
    let mut raw = Raw::with(server);
    let as_who = |who: &str| {
        let mut p = params("once");
        p["_meta"]["test/who"] = json!(who);
        p
    };
    let first = raw.call("tools/call", as_who("ada")).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let r = raw.call("tools/call", retry(as_who("eve"), json!({"q": accept("eve")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: eve", "eve's retry runs afresh: {r}");
    let r = raw.call("tools/call", retry(as_who("ada"), json!({"q": accept("ada")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 1: ada", "ada's call was still kept: {r}");
}

/// Sends `params` as a `tools/call` and returns the notifications before its response, and
/// the response.
async fn call_seeing(raw: &mut Raw, id: i64, params: Value) -> (Vec<Value>, Value) {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    raw.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
    let mut seen = Vec::new();
    loop {
        let frame = raw.r.read_frame().await.expect("read").expect("open");
        let v: Value = serde_json::from_slice(&frame).expect("json");
        if v.get("id") == Some(&json!(id)) {
            return (seen, v);
        }
        seen.push(v);
    }
}

/// A resumed handler's progress and log messages go to the retry that resumed it, under the
/// retry's progress token and log level.
#[tokio::test]
async fn a_resumed_handler_reports_to_the_retry() {
    let counts = Arc::new(Counts::default());
    let mut raw = Raw::with(server(counts, Some(Duration::from_secs(30))));
    let with = |token: &str, level: Option<&str>| {
        let mut p = params("report");
        p["_meta"]["progressToken"] = json!(token);
        if let Some(level) = level {
            p["_meta"]["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        p
    };
    let (seen, first) = call_seeing(&mut raw, 1, with("t1", None)).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["params"]["progressToken"], "t1");
    assert_eq!(seen[0]["params"]["message"], "before");

    let (seen, r) = call_seeing(&mut raw, 2, retry(with("t2", Some("info")), json!({"q": accept("ok")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "ok", "{r}");
    let methods: Vec<&str> = seen.iter().filter_map(|n| n["method"].as_str()).collect();
    assert_eq!(methods, ["notifications/progress", "notifications/message"], "{seen:?}");
    assert_eq!(seen[0]["params"]["progressToken"], "t2", "the retry's token: {seen:?}");
    assert_eq!(seen[0]["params"]["message"], "after");
    assert_eq!(seen[1]["params"]["data"], "resumed");

    // A retry that asked for neither gets neither.
    let (_, first) = call_seeing(&mut raw, 3, with("t3", None)).await;
    let mut quiet = retry(params("report"), json!({"q": accept("ok")}), &first);
    quiet["_meta"].as_object_mut().map(|m| m.remove("progressToken"));
    let (seen, r) = call_seeing(&mut raw, 4, quiet).await;
    assert_eq!(r["result"]["content"][0]["text"], "ok", "{r}");
    assert!(seen.is_empty(), "{seen:?}");
}

/// `Server::end_kept_handlers` (a server that stops) cancels and drops every kept handler; a
/// later retry runs the handler again.
#[tokio::test]
async fn a_stopping_server_ends_its_kept_handlers() {
    let counts = Arc::new(Counts::default());
    let server = server(counts.clone(), Some(Duration::from_secs(30)));
    let mut raw = Raw::with(server.clone());
    let first = raw.call("tools/call", params("once")).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 0);
    assert_eq!(server.end_kept_handlers(), 1);
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 1, "dropped at once");
    assert_eq!(server.end_kept_handlers(), 0);
    let r = raw.call("tools/call", retry(params("once"), json!({"q": accept("late")}), &first)).await;
    assert_eq!(r["result"]["content"][0]["text"], "run 2: late", "{r}");
}

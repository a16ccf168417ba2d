//! The Streamable HTTP server over a real loopback socket, spoken to with raw HTTP.
#![cfg(feature = "http-server")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use portico::schema::{JsonObject, Tool};
use portico::transport::http::server::{HttpEndpoint, ServeOptions, StreamableHttp};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

struct Srv {
    url: String,
    endpoint: HttpEndpoint,
    server: portico::server::Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    http: reqwest::Client,
    probes: Arc<Probes>,
}

impl Drop for Srv {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn start(configure: impl FnOnce(StreamableHttp) -> StreamableHttp) -> Srv {
    start_with(configure, ServeOptions::default()).await
}

async fn start_with(configure: impl FnOnce(StreamableHttp) -> StreamableHttp, options: ServeOptions) -> Srv {
    let probes = Arc::new(Probes::default());
    let server = fixture_server(probes.clone());
    let endpoint = configure(StreamableHttp::new(server.clone())).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let ep = endpoint.clone();
    tokio::spawn(async move {
        let _ = ep
            .serve_with_options(
                listener,
                async move {
                    let _ = stopped.await;
                },
                options,
            )
            .await;
    });
    Srv { url, endpoint, server, stop: Some(stop), http: reqwest::Client::new(), probes }
}

fn stateless_meta(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps})
}

impl Srv {
    async fn post(&self, body: Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut h = HeaderMap::new();
        h.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        for (k, v) in headers {
            h.insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        self.http.post(&self.url).headers(h).body(body.to_string()).send().await.expect("post")
    }

    async fn initialize(&self, version: &str) -> String {
        let r = self
            .post(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":version,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}), &[])
            .await;
        assert_eq!(r.status(), 200);
        let sid = r.headers().get("mcp-session-id").expect("session id").to_str().expect("ascii").to_owned();
        assert!(
            sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "visible ASCII, unguessable: {sid}"
        );
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["result"]["protocolVersion"], version);
        let r =
            self.post(json!({"jsonrpc":"2.0","method":"notifications/initialized"}), &[("mcp-session-id", &sid)]).await;
        assert_eq!(r.status(), 202);
        sid
    }

    /// A stateless request with correct mirrored headers.
    async fn stateless(&self, method: &str, mut params: Value, name: Option<&str>, caps: Value) -> reqwest::Response {
        params["_meta"] = stateless_meta(caps);
        let mut h = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
        if let Some(n) = name {
            h.push(("mcp-name", n));
        }
        self.post(json!({"jsonrpc":"2.0","id":"m","method":method,"params":params}), &h).await
    }
}

/// Parses an SSE body into (event id, data JSON) pairs; the priming event has empty data.
fn sse_events(text: &str) -> Vec<(Option<String>, Option<Value>)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty() && !e.starts_with(':'))
        .map(|e| {
            let mut id = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (id, if data.trim().is_empty() { None } else { serde_json::from_str(&data).ok() })
        })
        .collect()
}

#[tokio::test]
async fn handshake_session_lifecycle() {
    let srv = start(|h| h).await;
    let sid = srv.initialize("2025-11-25").await;
    let s = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];

    // A one-shot call is answered with JSON.
    let r = srv
        .post(
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}),
            &s,
        )
        .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().expect("ct").starts_with("application/json"));
    assert_eq!(r.json::<Value>().await.expect("json")["result"]["content"][0]["text"], "hi");

    // A call that reports progress streams: priming event, progress, then the result.
    let r = srv.post(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"p"}}}), &s).await;
    assert!(r.headers()["content-type"].to_str().expect("ct").starts_with("text/event-stream"));
    let events = sse_events(&r.text().await.expect("body"));
    assert!(events[0].0.is_some() && events[0].1.is_none(), "priming event first: {events:?}");
    let progress: Vec<f64> = events
        .iter()
        .filter_map(|(_, d)| d.as_ref())
        .filter(|d| d["method"] == "notifications/progress")
        .map(|d| d["params"]["progress"].as_f64().unwrap_or(-1.0))
        .collect();
    assert_eq!(progress, vec![0.0, 50.0, 100.0]);
    let last = events.last().and_then(|(_, d)| d.clone()).expect("result");
    assert_eq!(last["id"], 3);
    assert_eq!(last["result"]["content"][0]["text"], "done");
    assert!(events.iter().all(|(id, _)| id.is_some()), "every event has an id (resumable)");

    // Missing or unknown session ids.
    let r = srv.post(json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}), &[]).await;
    assert_eq!(r.status(), 400);
    let r = srv.post(json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}), &[("mcp-session-id", "nope")]).await;
    assert_eq!(r.status(), 404);
    let r = srv
        .post(
            json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
            &[("mcp-session-id", &sid), ("mcp-protocol-version", "1999-01-01")],
        )
        .await;
    assert_eq!(r.status(), 400, "invalid MCP-Protocol-Version");

    // DELETE ends it; afterwards the id is unknown.
    assert_eq!(srv.endpoint.session_count(), 1);
    let r = srv.http.delete(&srv.url).header("mcp-session-id", &sid).send().await.expect("delete");
    assert_eq!(r.status(), 204);
    assert_eq!(srv.endpoint.session_count(), 0);
    let r = srv.post(json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}), &[("mcp-session-id", &sid)]).await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn get_stream_carries_server_messages_and_resumes() {
    let srv = start(|h| h).await;
    let sid = srv.initialize("2025-11-25").await;
    let mut get = srv
        .http
        .get(&srv.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .expect("get");
    assert_eq!(get.status(), 200);
    srv.server.add_tool(Tool::new("late", JsonObject::new()), |_: Empty| async move { "late" });
    let mut text = String::new();
    while !text.contains("list_changed") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), get.chunk())
            .await
            .expect("in time")
            .expect("chunk")
            .expect("open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = sse_events(&text);
    let (id, _) = events
        .iter()
        .find(|(_, d)| d.as_ref().is_some_and(|d| d["method"] == "notifications/tools/list_changed"))
        .expect("event")
        .clone();
    drop(get);
    // Two more changes while disconnected; resuming after the first replays exactly them.
    srv.server.add_tool(Tool::new("later", JsonObject::new()), |_: Empty| async move { "later" });
    srv.server.remove_tool("later");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut get = srv
        .http
        .get(&srv.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("last-event-id", id.expect("id"))
        .send()
        .await
        .expect("get");
    let mut text = String::new();
    while sse_events(&text).iter().filter(|(_, d)| d.is_some()).count() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), get.chunk())
            .await
            .expect("in time")
            .expect("chunk")
            .expect("open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert_eq!(sse_events(&text).iter().filter(|(_, d)| d.is_some()).count(), 2, "{text}");
}

/// A long result (its envelope is written beside it, not around a copy) arrives whole, with
/// its exact `Content-Length`, in both eras.
#[tokio::test]
async fn long_results_arrive_whole_with_their_length() {
    let srv = start(|h| h).await;
    let text: String = (0..200_000).map(|i| ["a", "\"", "\\", "\n", "é"][i % 5]).collect();
    let sid = srv.initialize("2025-11-25").await;
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}});
    let r = srv.post(call, &[("mcp-session-id", &sid), ("mcp-protocol-version", "2025-11-25")]).await;
    assert_eq!(r.status(), 200);
    let length: usize = r.headers()["content-length"].to_str().expect("ascii").parse().expect("a number");
    let body = r.bytes().await.expect("body");
    assert_eq!(body.len(), length);
    let v: Value = serde_json::from_slice(&body).expect("one JSON message");
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["content"][0]["text"].as_str(), Some(text.as_str()));

    let r =
        srv.stateless("tools/call", json!({"name":"echo","arguments":{"text":text}}), Some("echo"), json!({})).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("one JSON message");
    assert_eq!(v["id"], "m");
    assert_eq!(v["result"]["content"][0]["text"].as_str(), Some(text.as_str()));
    assert_eq!(v["result"]["resultType"], "complete");
}

#[tokio::test]
async fn stateless_requests_over_http() {
    let srv = start(|h| h).await;
    let r = srv.stateless("tools/call", json!({"name":"echo","arguments":{"text":"x"}}), Some("echo"), json!({})).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_none(), "no sessions in 2026-07-28");
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "x");

    let code = |v: Value| v["error"]["code"].as_i64().unwrap_or(0);
    // Mirrored headers must match the body.
    let mut p = json!({"name":"echo","arguments":{"text":"x"}});
    p["_meta"] = stateless_meta(json!({}));
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":p});
    for headers in [
        vec![("mcp-method", "tools/call"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "fail")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")],
    ] {
        let r = srv.post(body.clone(), &headers).await;
        assert_eq!(r.status(), 400, "{headers:?}");
        assert_eq!(code(r.json().await.expect("json")), -32020, "{headers:?}");
    }
    // Version, _meta and capability errors are 400; unknown methods 404.
    let mut m = stateless_meta(json!({}));
    m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = srv
        .post(
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":m}}),
            &[("mcp-protocol-version", "2099-01-01"), ("mcp-method", "tools/list")],
        )
        .await;
    assert_eq!(r.status(), 400);
    assert_eq!(code(r.json().await.expect("json")), -32022);
    let r = srv.post(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}), &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list")]).await;
    assert_eq!(r.status(), 400);
    assert_eq!(code(r.json().await.expect("json")), -32602);
    let r = srv.stateless("tools/call", json!({"name":"ask","arguments":{}}), Some("ask"), json!({})).await;
    assert_eq!(r.status(), 400);
    assert_eq!(code(r.json().await.expect("json")), -32021);
    let r = srv.stateless("nope/nope", json!({}), None, json!({})).await;
    assert_eq!(r.status(), 404);
    assert_eq!(code(r.json().await.expect("json")), -32601);
    // Stateless GET and a request with neither session nor _meta.
    let r = srv.http.get(&srv.url).header("accept", "text/event-stream").send().await.expect("get");
    assert_eq!(r.status(), 405);
    let r = srv.post(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}), &[]).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn initialize_with_the_stateless_meta_is_404_and_makes_no_session() {
    let srv = start(|h| h).await;
    let mut params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    params["_meta"] = stateless_meta(json!({}));
    let r = srv.stateless("initialize", params, None, json!({})).await;
    assert_eq!(r.status(), 404, "2026-07-28 has no initialize");
    assert!(r.headers().get("mcp-session-id").is_none(), "no session was made");
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert_eq!(v["id"], "m", "the error answers the request");
    // A handshake initialize (no stateless _meta) still makes a session.
    srv.initialize("2025-11-25").await;
}

#[tokio::test]
async fn task_methods_mirror_the_task_id_in_mcp_name() {
    use portico::server::{RequestContext, TaskSupport};
    let srv = start(|h| h).await;
    let code = |v: Value| v["error"]["code"].as_i64().unwrap_or(0);
    let ext = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    // Without a task-capable tool the task methods do not exist.
    let r = srv.stateless("tasks/get", json!({"taskId": "t"}), Some("t"), ext.clone()).await;
    assert_eq!(r.status(), 404);

    srv.server.add_task_tool(
        Tool::new("job", JsonObject::new()),
        TaskSupport::Optional,
        |_: Value, cx: RequestContext| async move {
            cx.continue_as_task().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
            "done"
        },
    );
    let r = srv.stateless("tools/call", json!({"name": "job", "arguments": {}}), Some("job"), ext.clone()).await;
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    let id = v["result"]["taskId"].as_str().expect("task id").to_owned();

    let r = srv.stateless("tasks/get", json!({"taskId": id}), Some(&id), ext.clone()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.expect("json")["result"]["status"], "working");
    for name in [Some("another-task"), None] {
        let r = srv.stateless("tasks/get", json!({"taskId": id}), name, ext.clone()).await;
        assert_eq!(r.status(), 400, "{name:?}");
        assert_eq!(code(r.json().await.expect("json")), -32020, "{name:?}");
    }
    // Without the extension: 400 and -32021.
    let r = srv.stateless("tasks/cancel", json!({"taskId": id}), Some(&id), json!({})).await;
    assert_eq!(r.status(), 400);
    assert_eq!(code(r.json().await.expect("json")), -32021);
    let r = srv.stateless("tasks/cancel", json!({"taskId": id}), Some(&id), ext).await;
    assert_eq!(r.json::<Value>().await.expect("json")["result"]["resultType"], "complete");
}

#[tokio::test]
async fn closing_a_stateless_stream_cancels_the_request() {
    let probes = Arc::new(Probes::default());
    let server = fixture_server(probes.clone());
    let endpoint = StreamableHttp::new(server).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    tokio::spawn(endpoint.serve_with_shutdown(listener, std::future::pending()));
    let mut p = json!({"name":"sleep","arguments":{"ms":60000}});
    p["_meta"] = stateless_meta(json!({}));
    let req = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "sleep")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":p}).to_string())
        .send();
    let call = tokio::spawn(req);
    assert!(eventually(|| probes.sleeping.load(std::sync::atomic::Ordering::SeqCst) == 1).await);
    call.abort(); // the client goes away
    assert!(
        eventually(|| probes.cancelled.load(std::sync::atomic::Ordering::SeqCst) == 1).await,
        "the handler was dropped"
    );
}

/// A session's request belongs to the session, not to the POST that carried it: when that POST's
/// connection goes away, the request still runs to its end.
#[tokio::test]
async fn a_session_request_outlives_the_post_that_carried_it() {
    let srv = start(|h| h).await;
    let probes = &srv.probes;
    let sid = srv.initialize("2025-06-18").await;
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300}}});
    // A client of its own, so that aborting the call closes its connection.
    let req = reqwest::Client::new()
        .post(&srv.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
        .send();
    let call = tokio::spawn(req);
    assert!(eventually(|| probes.sleeping.load(std::sync::atomic::Ordering::SeqCst) == 1).await);
    call.abort(); // the POST's connection goes away
    assert!(
        eventually_for(Duration::from_secs(10), || probes.slept.load(std::sync::atomic::Ordering::SeqCst) == 1).await,
        "the request ran to its end"
    );
    assert_eq!(probes.cancelled.load(std::sync::atomic::Ordering::SeqCst), 0, "the handler was not dropped");
    assert_eq!(srv.endpoint.session_count(), 1);
}

#[tokio::test]
async fn host_origin_and_size_limits() {
    let srv = start(|h| h.max_body_bytes(64 * 1024)).await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = srv.post(init.clone(), &[("origin", "http://evil.example")]).await;
    assert_eq!(r.status(), 403);
    let r = srv.post(init.clone(), &[("host", "evil.example")]).await;
    assert_eq!(r.status(), 403);
    let r = srv.post(init.clone(), &[("origin", "http://localhost:3000")]).await;
    assert_eq!(r.status(), 200);
    let big = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x".repeat(100_000)}}});
    let r = srv.post(big, &[]).await;
    assert_eq!(r.status(), 413);
    let r = srv.http.post(&srv.url).header("content-type", "text/plain").body("{}").send().await.expect("post");
    assert_eq!(r.status(), 415);
    let r = srv.http.put(&srv.url).send().await.expect("put");
    assert_eq!(r.status(), 405);
    assert_eq!(srv.endpoint.session_count(), 1, "refused requests left no session");
}

/// Sends `body` to the endpoint in chunks (`Transfer-Encoding: chunked`, no `Content-Length`),
/// each written on its own after a pause, and returns the status line and the response body.
async fn post_chunked(url: &str, headers: &[(&str, &str)], chunks: &[&[u8]]) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.expect("head");
    for chunk in chunks {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
        frame.extend_from_slice(chunk);
        frame.extend_from_slice(b"\r\n");
        // The server may answer (413) and close before the last chunks: not an error here.
        if tcp.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = tcp.write_all(b"0\r\n\r\n").await;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut response))
        .await
        .expect("answered within 10 s")
        .expect("read");
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
}

#[tokio::test]
async fn a_chunked_body_is_joined_and_held_to_the_size_limit() {
    let srv = start(|h| h.max_body_bytes(64 * 1024)).await;
    // A stateless call in three chunks, split inside the JSON.
    let text = "y".repeat(3000);
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":text},"_meta":stateless_meta(json!({}))}})
        .to_string();
    let (a, rest) = call.as_bytes().split_at(25);
    let (b, c) = rest.split_at(2000);
    let mirrored = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let (status, body) = post_chunked(&srv.url, &mirrored, &[a, b, c]).await;
    assert!(status.contains(" 200 "), "{status}");
    // The body may itself be chunked: the result's JSON is within it.
    let json_start = body.find('{').expect("a JSON body");
    let json_end = body.rfind('}').expect("a JSON body") + 1;
    let v: Value = serde_json::from_str(&body[json_start..json_end]).expect("json");
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["content"][0]["text"], text.as_str(), "the chunks were joined in order");
    // Over the limit without a Content-Length to refuse it by: 413 once the chunks pass it.
    let big = vec![b' '; 40 * 1024];
    let (status, body) = post_chunked(&srv.url, &mirrored, &[&big, &big, b"{}"]).await;
    assert!(status.contains(" 413 "), "{status}");
    assert!(body.contains("body exceeds 65536 bytes"), "{body}");
    // Exactly at the limit is read (and refused as JSON, not as too large).
    let at_limit = vec![b' '; 64 * 1024];
    let (status, _) = post_chunked(&srv.url, &mirrored, &[&at_limit[..32 * 1024], &at_limit[32 * 1024..]]).await;
    assert!(status.contains(" 400 "), "{status}");
    // One byte more is too large.
    let (status, _) = post_chunked(&srv.url, &mirrored, &[&at_limit[..32 * 1024], &at_limit[32 * 1024..], b" "]).await;
    assert!(status.contains(" 413 "), "{status}");
}

#[tokio::test]
async fn session_churn_leaves_nothing_behind() {
    let srv = start(|h| h.session_idle_timeout(Duration::from_secs(8)).max_sessions(100_000)).await;
    // Clean cycles: initialize then DELETE.
    for _ in 0..2000 {
        let sid = srv.initialize("2025-06-18").await;
        let r = srv.http.delete(&srv.url).header("mcp-session-id", &sid).send().await.expect("delete");
        assert_eq!(r.status(), 204);
    }
    assert_eq!(srv.endpoint.session_count(), 0);
    // Abandoned sessions, and rejected initializes.
    for _ in 0..1000 {
        srv.initialize("2025-11-25").await;
        let r =
            srv.post(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}), &[]).await;
        assert_eq!(r.status(), 200, "a JSON-RPC error, not an HTTP one");
    }
    assert_eq!(srv.endpoint.session_count(), 1000, "only the good initializes made sessions");
    assert!(
        eventually_for(Duration::from_secs(20), || srv.endpoint.session_count() == 0).await,
        "idle sessions were reaped"
    );
}

#[tokio::test]
async fn session_cap_is_enforced() {
    let srv = start(|h| h.max_sessions(3)).await;
    for _ in 0..3 {
        srv.initialize("2025-11-25").await;
    }
    let r = srv.post(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}), &[]).await;
    assert_eq!(r.status(), 503);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn a_stalled_sse_reader_cannot_grow_server_memory() {
    let srv = start(|h| h.stream_buffer(64)).await;
    let sid = srv.initialize("2025-11-25").await;
    // Open the GET stream and never read it.
    let stalled = srv
        .http
        .get(&srv.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .expect("get");
    let before = rss_kib();
    // 20,000 tool replacements, each a `list_changed` notification to the stalled stream.
    let desc = "d".repeat(2000);
    for i in 0..20_000 {
        srv.server.add_tool(
            Tool::new(format!("t{}", i % 10), JsonObject::new()).with_description(desc.clone()),
            |_: Empty| async move { "x" },
        );
        if i % 1000 == 0 {
            tokio::task::yield_now().await;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 30, "server memory grew by {grown_mib} MiB for a reader that never reads");
    drop(stalled);
}

/// A response stream nobody reads, with a queue long in messages: its bound in bytes holds.
#[tokio::test]
async fn a_stalled_sse_reader_is_bounded_in_bytes_as_well_as_messages() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let srv = start(|h| h.stream_buffer(1_000_000).stream_buffer_bytes(1024 * 1024)).await;
    let sid = srv.initialize("2025-11-25").await;
    // 20,000 progress notifications of ~2 KB: 40 MB if the queue kept them, as its message
    // bound would allow.
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let note = "n".repeat(2000);
    srv.server.add_tool(
        Tool::new("chatty", JsonObject::new()),
        move |_: Empty, cx: portico::server::RequestContext| {
            let (note, finished) = (note.clone(), finished.clone());
            async move {
                for i in 0..20_000u32 {
                    let _ = cx.progress(f64::from(i), None, Some(&note)).await;
                }
                finished.store(true, Ordering::SeqCst);
                "done"
            }
        },
    );
    let before = rss_kib();
    let headers = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let call = json!({"jsonrpc":"2.0","id":9,"method":"tools/call",
        "params":{"name":"chatty","arguments":{},"_meta":{"progressToken":1}}});
    let stalled = srv.post(call, &headers).await;
    assert!(eventually_for(Duration::from_secs(60), || done.load(Ordering::SeqCst)).await, "the tool finished");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 20, "server memory grew by {grown_mib} MiB for a reader that never reads");
    drop(stalled);
}

#[tokio::test]
async fn serve_answers_at_mcp_and_nowhere_else() {
    let srv = start(|h| h.without_legacy_sse()).await;
    let base = srv.url.trim_end_matches("/mcp").to_owned();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let post = |url: String| {
        srv.http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send()
    };
    // The path alone decides: a query string is still the endpoint.
    assert_eq!(post(format!("{}?x=1", srv.url)).await.expect("post").status(), 200);
    for elsewhere in ["/mcp/", "/MCP", "/", "/mcp2", "/sse"] {
        let r = post(format!("{base}{elsewhere}")).await.expect("post");
        assert_eq!(r.status(), 404, "{elsewhere}");
    }
    let r = srv.http.get(format!("{base}/other")).send().await.expect("get");
    assert_eq!(r.status(), 404);
    // A method the endpoint does not serve, at its path.
    let r = srv.http.put(&srv.url).send().await.expect("put");
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn legacy_http_sse_transport() {
    let srv = start(|h| h).await;
    let base = srv.url.trim_end_matches("/mcp").to_owned();
    let mut sse = srv.http.get(format!("{base}/sse")).header("accept", "text/event-stream").send().await.expect("get");
    assert_eq!(sse.status(), 200);
    let mut text = String::new();
    let mut read_until = async |text: &mut String, needle: &str| {
        while !text.contains(needle) {
            let chunk = tokio::time::timeout(Duration::from_secs(5), sse.chunk())
                .await
                .expect("in time")
                .expect("chunk")
                .expect("open");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    read_until(&mut text, "event: endpoint").await;
    read_until(&mut text, "\n\n").await;
    let endpoint = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("endpoint data").to_owned();
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");
    assert_eq!(srv.endpoint.session_count(), 1);
    let post = |body: Value| {
        srv.http
            .post(format!("{base}{endpoint}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let r = post(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}})).await.expect("post");
    assert_eq!(r.status(), 202);
    read_until(&mut text, "\"protocolVersion\":\"2024-11-05\"").await;
    post(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await.expect("post");
    let r = post(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over sse"}}}),
    )
    .await
    .expect("post");
    assert_eq!(r.status(), 202);
    read_until(&mut text, "over sse").await;
    let r = srv
        .http
        .post(format!("{base}/messages?sessionId=nope"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 404);
    drop(sse);
    assert!(eventually(|| srv.endpoint.session_count() == 0).await, "the session ends with its stream");
}

#[tokio::test]
async fn batches_over_http_only_in_2025_03_26_sessions() {
    let srv = start(|h| h).await;
    let batch = json!([
        {"jsonrpc":"2.0","id":"a","method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},
        {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"batched"}}}
    ]);
    let sid = srv.initialize("2025-03-26").await;
    let r = srv.post(batch.clone(), &[("mcp-session-id", &sid)]).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("json");
    let items = v.as_array().expect("an array answer");
    assert_eq!(items.len(), 2, "one answer per request: {v}");
    assert!(items.iter().any(|i| i["id"] == "b" && i["result"]["content"][0]["text"] == "batched"), "{v}");
    let sid = srv.initialize("2025-11-25").await;
    let r = srv.post(batch, &[("mcp-session-id", &sid)]).await;
    assert_eq!(r.status(), 400, "batches were removed after 2025-03-26");
}

#[tokio::test]
async fn a_handler_can_close_its_stream_and_the_client_resumes_it() {
    let srv = start(|h| h.sse_retry(Some(50))).await;
    srv.server.add_tool(
        Tool::new("poll", JsonObject::new()),
        |_: Empty, cx: portico::server::RequestContext| async move {
            cx.close_sse_stream();
            tokio::time::sleep(Duration::from_millis(100)).await;
            "polled"
        },
    );
    let sid = srv.initialize("2025-11-25").await;
    let r = srv
        .post(
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll","arguments":{}}}),
            &[("mcp-session-id", &sid)],
        )
        .await;
    assert!(r.headers()["content-type"].to_str().expect("ct").starts_with("text/event-stream"));
    let text = r.text().await.expect("the stream ends early");
    assert!(text.contains("retry: 50"), "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "only the priming event before the close: {events:?}");
    let (Some(prime), None) = events[0].clone() else { panic!("priming event expected: {events:?}") };
    // Resuming after the priming event delivers the result.
    let mut get = srv
        .http
        .get(&srv.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("last-event-id", prime)
        .send()
        .await
        .expect("get");
    let mut text = String::new();
    while !text.contains("polled") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), get.chunk())
            .await
            .expect("in time")
            .expect("chunk")
            .expect("open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let result = sse_events(&text).into_iter().find_map(|(_, d)| d).expect("result");
    assert_eq!(result["id"], 7);
    assert_eq!(result["result"]["content"][0]["text"], "polled");
}

// Soak drivers: ignored here, run one at a time by scripts/soak.sh, which sets the counts.
// Each stops by itself and prints one `SOAK …` line of figures.

fn soak_count(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One handshake-era session: initialize, one request in it, and (unless abandoned) DELETE.
async fn session_cycle(srv: &Srv, delete: bool) {
    let sid = srv.initialize("2025-11-25").await;
    let headers = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let r = srv.post(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}), &headers).await;
    assert_eq!(r.status(), 200);
    let _ = r.bytes().await.expect("body");
    if delete {
        let r = srv.http.delete(&srv.url).header("mcp-session-id", &sid).send().await.expect("delete");
        assert_eq!(r.status(), 204);
    }
}

/// `cycles` sessions over `lanes` concurrent clients.
async fn session_cycles(srv: &Arc<Srv>, cycles: usize, delete: bool) {
    let lanes = 8;
    let tasks: Vec<_> = (0..lanes)
        .map(|lane| {
            let srv = srv.clone();
            let n = cycles / lanes + usize::from(lane < cycles % lanes);
            tokio::spawn(async move {
                for _ in 0..n {
                    session_cycle(&srv, delete).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("lane");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: run by scripts/soak.sh"]
async fn soak_http_session_churn() {
    let cycles = soak_count("SOAK_HTTP_CYCLES", 20_000);
    let abandoned = soak_count("SOAK_HTTP_ABANDONED", 5_000);
    // Short, so that short runs see abandoned sessions reaped; longer for long runs on a busy
    // machine, where a starved process must not reap a session between two of its requests.
    let idle = Duration::from_secs(soak_count("SOAK_HTTP_IDLE_SECS", 2) as u64);
    let srv = Arc::new(start(|h| h.session_idle_timeout(idle).max_sessions(abandoned + 100)).await);
    // Warm-up (clean cycles, and one wave of abandoned sessions reaped), then the baseline:
    // the allocator keeps memory it once needed, so the baseline is taken after the peak.
    session_cycles(&srv, (cycles / 10).clamp(200, 20_000), true).await;
    session_cycles(&srv, abandoned, false).await;
    assert!(eventually_for(Duration::from_secs(120), || srv.endpoint.session_count() == 0).await, "warm-up reaped");
    let warm = rss_kib();
    // RSS over the whole measured run, for scripts/rss-plot.py.
    let every = Duration::from_secs(soak_count("SOAK_RSS_EVERY_SECS", 5).max(1) as u64);
    let curve = Arc::new(std::sync::Mutex::new(Vec::new()));
    let plotter = {
        let curve = curve.clone();
        tokio::spawn(async move {
            let t0 = std::time::Instant::now();
            loop {
                tokio::time::sleep(every).await;
                let sample = format!("{:.0}s {} MiB", t0.elapsed().as_secs_f64(), rss_kib() / 1024);
                curve.lock().expect("curve").push(sample);
            }
        })
    };
    let started = std::time::Instant::now();
    session_cycles(&srv, cycles, true).await;
    let churn = started.elapsed();
    let after_churn = rss_kib();
    assert_eq!(srv.endpoint.session_count(), 0, "every DELETEd session is gone");
    // The most sessions live at once (sampled): some may be reaped while others are made.
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampler = {
        let (srv, most) = (srv.clone(), most.clone());
        tokio::spawn(async move {
            loop {
                most.fetch_max(srv.endpoint.session_count(), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = std::time::Instant::now();
    session_cycles(&srv, abandoned, false).await;
    let made = started.elapsed();
    let peak = rss_kib();
    sampler.abort();
    let live = most.load(std::sync::atomic::Ordering::Relaxed).max(srv.endpoint.session_count());
    let reaping = std::time::Instant::now();
    let reaped = eventually_for(Duration::from_secs(120), || srv.endpoint.session_count() == 0).await;
    let reap = reaping.elapsed();
    // Let the allocator settle before the last reading.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let end = rss_kib();
    plotter.abort();
    eprintln!("SOAK http-sessions: RSS over time: {}", curve.lock().expect("curve").join(", "));
    let pct = |v: u64| (v as f64 - warm as f64) * 100.0 / warm as f64;
    eprintln!(
        "SOAK http-sessions: {cycles} create/use/DELETE cycles in {:.1} s ({:.0}/s); {abandoned} abandoned in {:.1} s, \
         at most {live} live at once, the rest reaped {:.1} s later (idle timeout {} s); RSS KiB warm {warm}, after cycles {after_churn} ({:+.1} %), \
         with abandoned {peak}, after reaping {end} ({:+.1} %); sessions at end {}",
        churn.as_secs_f64(),
        cycles as f64 / churn.as_secs_f64(),
        made.as_secs_f64(),
        reap.as_secs_f64(),
        idle.as_secs(),
        pct(after_churn),
        pct(end),
        srv.endpoint.session_count(),
    );
    assert!(reaped, "abandoned sessions were reaped: {} left", srv.endpoint.session_count());
    assert!(pct(end) <= 10.0, "RSS after reaping {end} KiB is over 10 % above the warm {warm} KiB");
}

/// Slow peers: connections that trickle their headers (slowloris) and a session whose SSE
/// stream is never read, while a well-behaved client's latency is measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: run by scripts/soak.sh"]
async fn soak_slow_peers() {
    use tokio::io::AsyncWriteExt;
    let slow = soak_count("SOAK_SLOWLORIS", 200);
    let secs = soak_count("SOAK_SLOWLORIS_SECS", 10) as u64;
    // The header read timeout (the default is 30 s; shorter here so short runs see it act).
    let header_timeout = soak_count("SOAK_HEADER_TIMEOUT_SECS", 2) as u64;
    let options = ServeOptions::default().with_header_read_timeout(Duration::from_secs(header_timeout));
    let srv = Arc::new(start_with(|h| h.stream_buffer(64), options).await);
    let sid = srv.initialize("2025-11-25").await;
    let latency = async |srv: &Srv| {
        let mut times = Vec::with_capacity(200);
        for _ in 0..200 {
            let t = std::time::Instant::now();
            let r = srv
                .post(
                    json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
                    &[("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")],
                )
                .await;
            let _ = r.bytes().await.expect("body");
            times.push(t.elapsed());
        }
        times.sort_unstable();
        (times[times.len() / 2], times[times.len() * 99 / 100])
    };
    let (idle_p50, idle_p99) = latency(&srv).await;
    let base = rss_kib();
    // A stream nobody reads, with notifications flowing to it.
    let stalled = srv
        .http
        .get(&srv.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .expect("get");
    let addr = srv.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut trickles = Vec::with_capacity(slow);
    for i in 0..slow {
        let addr = addr.clone();
        let closed = closed.clone();
        trickles.push(tokio::spawn(async move {
            let Ok(mut tcp) = tokio::net::TcpStream::connect(&addr).await else { return };
            let _ = tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n").await;
            let until = std::time::Instant::now() + Duration::from_secs(secs);
            while std::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(500 + (i as u64 % 500))).await;
                if tcp.write_all(b"x-slow: 1\r\n").await.is_err() {
                    closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    return;
                }
            }
        }));
    }
    let desc = "d".repeat(2000);
    for i in 0..5_000 {
        srv.server.add_tool(
            Tool::new(format!("t{}", i % 10), JsonObject::new()).with_description(desc.clone()),
            |_: Empty| async move { "x" },
        );
        if i % 500 == 0 {
            tokio::task::yield_now().await;
        }
    }
    let (busy_p50, busy_p99) = latency(&srv).await;
    let grown = rss_kib().saturating_sub(base);
    for t in trickles {
        let _ = t.await;
    }
    let closed = closed.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "SOAK slow-peers: {slow} slowloris connections for {secs} s, {closed} closed by the server \
         (header timeout {header_timeout} s); \
         a never-read SSE stream with 5000 list_changed notifications; RSS grew {grown} KiB; \
         tools/list latency idle p50 {:.2} ms p99 {:.2} ms, under load p50 {:.2} ms p99 {:.2} ms",
        idle_p50.as_secs_f64() * 1e3,
        idle_p99.as_secs_f64() * 1e3,
        busy_p50.as_secs_f64() * 1e3,
        busy_p99.as_secs_f64() * 1e3,
    );
    drop(stalled);
    assert!(grown < 64 * 1024, "memory grew by {grown} KiB");
    // A peer that trickled for longer than the header timeout (plus its longest pause) was cut off.
    if secs > header_timeout + 2 {
        assert_eq!(closed, slow, "slowloris connections outlived the {header_timeout} s header timeout");
    }
}

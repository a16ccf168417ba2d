//! The dual-era rules on the raw wire: what a client sees when it gets `_meta`, versions,
//! capabilities or `requestState` wrong, and what every result must carry.

mod common;

use std::sync::Arc;

use common::*;
use portico::transport::memory::{self, MemoryReader, MemoryWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

struct Raw {
    r: MemoryReader,
    w: MemoryWriter,
    next: i64,
}

impl Raw {
    fn new() -> Raw {
        let (a, b) = memory::pair();
        fixture_server(Arc::new(Probes::default())).connect(b);
        let (r, w) = a.split();
        Raw { r, w, next: 1 }
    }

    async fn send(&mut self, msg: Value) {
        self.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
    }

    /// Sends a request and returns its response, skipping notifications.
    async fn call(&mut self, method: &str, params: Value) -> Value {
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

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

#[tokio::test]
async fn stateless_requests_need_meta_a_known_version_and_capabilities() {
    let mut raw = Raw::new();
    let r = raw.call("tools/list", json!({})).await;
    assert_eq!(code(&r), -32602, "no _meta and no initialize");
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("_meta"));

    let mut m = meta(json!({}));
    m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = raw.call("tools/list", json!({"_meta": m})).await;
    assert_eq!(code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "2099-01-01");
    assert!(r["error"]["data"]["supported"].as_array().is_some_and(|s| s.contains(&json!("2026-07-28"))));

    let mut m = meta(json!({}));
    m.as_object_mut().expect("obj").remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(code(&raw.call("tools/list", json!({"_meta": m})).await), -32602);

    // A tool that asks for elicitation, from a client that did not declare it.
    let r = raw.call("tools/call", json!({"name": "ask", "arguments": {}, "_meta": meta(json!({}))})).await;
    assert_eq!(code(&r), -32021);
    assert!(r["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(), "{r}");

    // Methods the stateless era removed.
    for method in ["ping", "logging/setLevel", "resources/subscribe"] {
        assert_eq!(
            code(&raw.call(method, json!({"_meta": meta(json!({})), "level": "info", "uri": "test://static"})).await),
            -32601,
            "{method}"
        );
    }
}

#[tokio::test]
async fn stateless_results_carry_result_type_server_info_and_cache_hints() {
    let mut raw = Raw::new();
    for (method, params, cacheable) in [
        ("server/discover", json!({}), true),
        ("tools/list", json!({}), true),
        ("resources/list", json!({}), true),
        ("resources/templates/list", json!({}), true),
        ("resources/read", json!({"uri": "test://static"}), true),
        ("prompts/list", json!({}), true),
        ("prompts/get", json!({"name": "explain", "arguments": {"topic": "x"}}), false),
        ("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}), false),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "explain"}, "argument": {"name": "topic", "value": "r"}}),
            false,
        ),
    ] {
        let mut p = params;
        p["_meta"] = meta(json!({}));
        let r = raw.call(method, p).await;
        let result = &r["result"];
        assert_eq!(result["resultType"], "complete", "{method}: {r}");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fixture", "{method}");
        assert_eq!(result.get("ttlMs").is_some(), cacheable, "{method}");
        assert_eq!(result.get("cacheScope").is_some(), cacheable, "{method}");
    }
}

#[tokio::test]
async fn request_state_is_sealed_bound_and_round_tripped() {
    let mut raw = Raw::new();
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let call = |extra: Value| {
        let mut p = json!({"name": "ask", "arguments": {}, "_meta": meta(caps.clone())});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            p[k] = v;
        }
        p
    };
    let first = raw.call("tools/call", call(json!({}))).await;
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let (key, req) = r["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("one request");
    assert_eq!(req["method"], "elicitation/create");
    let state = r["requestState"].as_str().expect("state").to_owned();
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});

    // Tampered state is refused.
    let mut bytes = state.clone().into_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).expect("ascii");
    let r = raw.call("tools/call", call(json!({"inputResponses": answer, "requestState": tampered}))).await;
    assert_eq!(code(&r), -32602, "tampered: {r}");

    // State bound to other arguments (or another tool) is refused.
    let mut other = call(json!({"inputResponses": answer, "requestState": state}));
    other["arguments"] = json!({"x": 1});
    assert_eq!(code(&raw.call("tools/call", other).await), -32602, "foreign state");

    // Answers without the state that asked for them are ignored: the tool asks again.
    let r = raw.call("tools/call", call(json!({"inputResponses": answer}))).await;
    assert_eq!(r["result"]["resultType"], "input_required");

    // The genuine retry moves on to the next round (sampling), keeping the first answer.
    let r = raw.call("tools/call", call(json!({"inputResponses": answer, "requestState": state}))).await;
    let next = &r["result"];
    assert_eq!(next["resultType"], "input_required", "{r}");
    let req = next["inputRequests"].as_object().and_then(|m| m.values().next()).cloned().expect("request");
    assert_eq!(req["method"], "sampling/createMessage");
    assert_ne!(next["requestState"], json!(state), "a new state each round");
}

#[tokio::test]
async fn handshake_negotiates_and_gates() {
    let mut raw = Raw::new();
    let init =
        |v: &str| json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}});
    let r = raw.call("initialize", init("1999-01-01")).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "unknown version countered with the latest");
    assert!(r["result"].get("resultType").is_none(), "no resultType in the handshake era");
    assert_eq!(code(&raw.call("initialize", init("2025-11-25")).await), -32600, "initialize twice");
    assert_eq!(raw.call("ping", json!({})).await["result"], json!({}));
    assert_eq!(code(&raw.call("logging/setLevel", json!({"level": "loud"})).await), -32602, "bad level");
    assert_eq!(code(&raw.call("server/discover", json!({})).await), -32601);
    assert_eq!(code(&raw.call("tools/list", json!({"cursor": "!!"})).await), -32602, "bad cursor");

    // A server without a capability answers its methods with -32601.
    let (a, b) = memory::pair();
    portico::server::Server::builder(portico::schema::Implementation::new("bare", "1")).build().connect(b);
    let (r, w) = a.split();
    let mut bare = Raw { r, w, next: 1 };
    bare.call("initialize", init("2025-06-18")).await;
    for method in ["tools/list", "prompts/list", "resources/list", "completion/complete"] {
        assert_eq!(code(&bare.call(method, json!({})).await), -32601, "{method}");
    }
}

#[tokio::test]
async fn batches_only_in_2025_03_26() {
    for (version, accepted) in [("2025-03-26", true), ("2025-11-25", false)] {
        let mut raw = Raw::new();
        raw.call(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        )
        .await;
        raw.send(json!([
            {"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
        ]))
        .await;
        let frame = raw.r.read_frame().await.expect("read").expect("open");
        let v: Value = serde_json::from_slice(&frame).expect("json");
        if accepted {
            let items = v.as_array().expect("a batch answer");
            assert_eq!(items.len(), 2, "one response per request: {v}");
            assert!(items.iter().any(|i| i["id"] == "b" && i["result"]["content"][0]["text"] == "x"));
        } else {
            assert_eq!(code(&v), -32600, "{version}");
        }
    }
}

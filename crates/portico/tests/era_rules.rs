//! The dual-era rules on the raw wire: what a client sees when it gets `_meta`, versions,
//! capabilities or `requestState` wrong, and what every result must carry.

mod common;

use std::sync::Arc;

use common::*;
use portico::schema::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitResult, Implementation, InputRequest, InputResponse,
    RequestedSchema, StringSchema, Tool, object,
};
use portico::server::{RequestContext, Server};
use portico::transport::memory;
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

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
async fn each_stateless_request_is_judged_by_its_own_capabilities() {
    // The server remembers the last capabilities it decoded; a request with other ones (or the
    // same ones again, or malformed ones) must still be judged by what it carries.
    let mut raw = Raw::new();
    let elicit = json!({"elicitation": {"form": {}}});
    let ask = |caps: Value| json!({"name": "ask", "arguments": {}, "_meta": meta(caps)});
    for (caps, refused) in [(json!({}), true), (elicit.clone(), false), (json!({}), true), (elicit.clone(), false)] {
        let r = raw.call("tools/call", ask(caps.clone())).await;
        // Declared: the tool asks (an input-required result); undeclared: -32021.
        assert_eq!(r.get("error").is_some(), refused, "{caps}: {r}");
        if !refused {
            assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        }
    }
    let mut bad = meta(json!({}));
    bad["io.modelcontextprotocol/clientCapabilities"] = json!("not an object");
    assert_eq!(code(&raw.call("tools/list", json!({"_meta": bad})).await), -32602);
    let mut bad = meta(json!({}));
    bad["io.modelcontextprotocol/clientInfo"] = json!(42);
    assert_eq!(code(&raw.call("tools/list", json!({"_meta": bad})).await), -32602);
    // Another client info with the same capabilities is decoded, not mistaken for the last one.
    let mut other = meta(elicit);
    other["io.modelcontextprotocol/clientInfo"] = json!({"name": "second", "version": "2"});
    let r = raw.call("tools/call", json!({"name": "ask", "arguments": {}, "_meta": other})).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
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

    // Answers sent without state are taken too (they are the client's to give either way):
    // the tool moves on to its next question.
    let r = raw.call("tools/call", call(json!({"inputResponses": answer}))).await;
    assert_eq!(r["result"]["resultType"], "input_required");
    let req = r["result"]["inputRequests"].as_object().and_then(|m| m.values().next()).cloned().expect("request");
    assert_eq!(req["method"], "sampling/createMessage", "the up-front answer was used: {r}");

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

#[tokio::test]
async fn initialize_with_the_stateless_meta_is_an_unknown_method() {
    let mut raw = Raw::new();
    let mut params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}});
    params["_meta"] = meta(json!({}));
    // The dual-era rule: the stateless `_meta` makes it a 2026-07-28 request, and 2026-07-28
    // has no initialize.
    let r = raw.call("initialize", params.clone()).await;
    assert_eq!(code(&r), -32601, "{r}");
    // It made no session: the connection still has none, and a real handshake still works.
    assert_eq!(code(&raw.call("tools/list", json!({})).await), -32602, "not initialized");
    params.as_object_mut().expect("obj").remove("_meta");
    let r = raw.call("initialize", params).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    assert!(raw.call("tools/list", json!({})).await["result"]["tools"].is_array());
}

fn form(message: &str, property: &str) -> ElicitRequestParams {
    ElicitRequestParams::from(ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().with_required_property(property, StringSchema::new()),
    ))
}

fn text(answer: &ElicitResult, property: &str) -> String {
    answer.content.as_ref().and_then(|c| c.get(property)).and_then(Value::as_str).unwrap_or("?").to_owned()
}

/// A server whose tools ask under keys they name.
fn keyed_server() -> Server {
    Server::builder(Implementation::new("keyed", "1"))
        .tool(Tool::new("greet", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            let a = cx.input("user_name").elicit(form("Name?", "name")).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("Hello, {}!", text(&a, "name")))
        })
        .tool(Tool::new("two", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            let a = cx.input("first").elicit(form("First?", "v")).await.map_err(|e| e.to_string())?;
            let b = cx.input("second").elicit(form("Second?", "v")).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("{}+{}", text(&a, "v"), text(&b, "v")))
        })
        .tool(Tool::new("reserved", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            cx.input("input-7").elicit(form("?", "v")).await.map(|_| "asked").map_err(|e| e.to_string())
        })
        .build()
}

#[tokio::test]
async fn input_requests_under_named_keys_and_answers_given_up_front() {
    let mut raw = Raw::with(keyed_server());
    let caps = json!({"elicitation": {}});
    let call = |name: &str, extra: Value| {
        let mut p = json!({"name": name, "arguments": {}, "_meta": meta(caps.clone())});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            p[k] = v;
        }
        p
    };
    let accept = |field: &str, v: &str| json!({"action": "accept", "content": {field: v}});

    // The key the handler chose is the key the client sees.
    let r = raw.call("tools/call", call("greet", json!({}))).await;
    assert_eq!(r["result"]["inputRequests"]["user_name"]["method"], "elicitation/create", "{r}");

    // An answer sent up front (no requestState) completes the call; answers to keys nobody
    // asks for are ignored whatever they hold.
    let answers = json!({"user_name": accept("name", "Ada"), "stray": {"ignored": true}, "other": 5});
    let r = raw.call("tools/call", call("greet", json!({"inputResponses": answers}))).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Ada!");

    // An answer that is not an answer to the request under its key refuses the request.
    let r = raw.call("tools/call", call("greet", json!({"inputResponses": {"user_name": 12345}}))).await;
    assert_eq!(code(&r), -32602, "{r}");
    let wrong_kind = json!({"user_name": {"roots": []}});
    assert_eq!(code(&raw.call("tools/call", call("greet", json!({"inputResponses": wrong_kind}))).await), -32602);
    // `inputResponses: null` is no answers at all.
    let r = raw.call("tools/call", call("greet", json!({"inputResponses": null}))).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");

    // Answers sealed in an earlier round are final: a retry cannot replace them.
    let r = raw.call("tools/call", call("two", json!({}))).await;
    assert!(r["result"]["inputRequests"]["first"].is_object(), "{r}");
    let r = raw
        .call(
            "tools/call",
            call(
                "two",
                json!({"inputResponses": {"first": accept("v", "a")}, "requestState": r["result"]["requestState"]}),
            ),
        )
        .await;
    assert!(r["result"]["inputRequests"]["second"].is_object(), "{r}");
    let state = r["result"]["requestState"].clone();
    let answers = json!({"first": accept("v", "EVIL"), "second": accept("v", "b")});
    let r = raw.call("tools/call", call("two", json!({"inputResponses": answers, "requestState": state}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "a+b", "{r}");

    // Keys of the form input-<n> are Portico's own.
    let r = raw.call("tools/call", call("reserved", json!({}))).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("reserved")), "{r}");
}

#[tokio::test]
async fn a_stateless_tool_call_is_answered_and_refused_as_before_its_params_were_read_in_one_pass() {
    // The era layer reads a 2026-07-28 tools/call's params once (`_meta`, name and arguments
    // together); whatever that pass cannot decode goes the usual way, with the usual errors in
    // the usual order.
    let mut raw = Raw::new();
    let ok = |r: &Value| r["result"]["content"][0]["text"].as_str().map(str::to_owned);
    let r = raw
        .call("tools/call", json!({"name": "echo", "arguments": {"text": "héllo \"x\""}, "_meta": meta(json!({}))}))
        .await;
    assert_eq!(ok(&r).as_deref(), Some("héllo \"x\""), "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    // `_meta` first and an unknown member: the same answer; then `_meta` spelled with an escape.
    let r = raw
        .call(
            "tools/call",
            json!({"_meta": meta(json!({})), "name": "echo", "extra": [1, {"a": null}], "arguments": {"text": "b"}}),
        )
        .await;
    assert_eq!(ok(&r).as_deref(), Some("b"), "{r}");
    let escaped = r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"c"}}}"#;
    raw.w.write_frame(escaped.as_bytes()).await.expect("write");
    let frame = raw.r.read_frame().await.expect("read").expect("open");
    let r: Value = serde_json::from_slice(&frame).expect("json");
    assert_eq!(ok(&r).as_deref(), Some("c"), "{r}");

    // Bad params: the era's errors still come first, then the call's.
    let mut bad_version = meta(json!({}));
    bad_version["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    assert_eq!(code(&raw.call("tools/call", json!({"arguments": {}, "_meta": bad_version})).await), -32022);
    let r = raw.call("tools/call", json!({"arguments": {}, "_meta": meta(json!({}))})).await;
    assert_eq!(code(&r), -32602, "no name");
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("name"), "{r}");
    let r = raw.call("tools/call", json!({"name": "echo", "name2": 1, "arguments": 7, "_meta": meta(json!({}))})).await;
    assert!(r.get("error").is_some() || r["result"]["isError"] == json!(true), "arguments of the wrong type: {r}");
    let r = raw.call("tools/call", json!({"name": "nope", "arguments": {}, "_meta": meta(json!({}))})).await;
    assert_eq!(code(&r), -32602, "unknown tool");
    let r = raw.call("tools/call", json!({"name": 5, "_meta": meta(json!({}))})).await;
    assert_eq!(code(&r), -32602, "a name that is not a string");
}

/// A tool that passes on two input requests at once, under keys it was given.
fn relaying_server() -> Server {
    Server::builder(Implementation::new("relay", "1"))
        .tool(Tool::new("both", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
            let mut asks = std::collections::BTreeMap::new();
            asks.insert("input-3".to_owned(), InputRequest::elicit(form("Name?", "name")));
            asks.insert("colour".to_owned(), InputRequest::elicit(form("Colour?", "colour")));
            let answers = cx.input_many(asks).await.map_err(|e| e.to_string())?;
            let get = |key: &str, field: &str| match answers.get(key) {
                Some(InputResponse::Elicitation(a)) => text(a, field),
                _ => "?".to_owned(),
            };
            Ok::<_, String>(format!("{} likes {}", get("input-3", "name"), get("colour", "colour")))
        })
        .build()
}

#[tokio::test]
async fn input_many_asks_everything_in_one_round_under_the_keys_given() {
    let mut raw = Raw::with(relaying_server());
    let caps = json!({"elicitation": {}});
    let call = |extra: Value| {
        let mut p = json!({"name": "both", "arguments": {}, "_meta": meta(caps.clone())});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            p[k] = v;
        }
        p
    };
    let r = raw.call("tools/call", call(json!({}))).await;
    let asked = r["result"]["inputRequests"].as_object().cloned().unwrap_or_default();
    // Both at once, and a key of the form input-<n> is taken as given (it is another server's).
    assert_eq!(asked.keys().collect::<Vec<_>>(), ["colour", "input-3"], "{r}");
    let answers = json!({
        "input-3": {"action": "accept", "content": {"name": "Ada"}},
        "colour": {"action": "accept", "content": {"colour": "teal"}},
    });
    let state = r["result"]["requestState"].clone();
    let r = raw.call("tools/call", call(json!({"inputResponses": answers, "requestState": state}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "Ada likes teal", "{r}");
    // A client without the capability is told what it lacks, not asked.
    let r = raw.call("tools/call", json!({"name": "both", "arguments": {}, "_meta": meta(json!({}))})).await;
    assert!(r.get("error").is_some() || r["result"]["inputRequests"].is_null(), "{r}");
}

#[tokio::test]
async fn a_call_answers_its_own_input_requests_and_declares_its_own_capabilities() {
    use portico::client::{CallOptions, Client};
    let (a, b) = memory::pair();
    relaying_server().connect(b);
    // The client itself declares nothing; the call declares elicitation and answers by itself.
    let client = Client::builder(Implementation::new("gateway", "1")).connect(a).await.expect("connect");
    assert!(client.protocol_version().is_stateless());
    let rounds = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = rounds.clone();
    let options = CallOptions::new()
        .with_capabilities(portico::schema::ClientCapabilities::new().with_elicitation(true, false))
        .with_input(move |requests| {
            seen.lock().expect("rounds").push(requests.keys().cloned().collect::<Vec<_>>());
            Box::pin(async move {
                let mut out = portico::schema::InputResponses::new();
                for (key, _) in requests {
                    let field = if key == "colour" { "colour" } else { "name" };
                    let content = json!({ field: format!("{key}!") }).as_object().cloned().unwrap_or_default();
                    out.insert(key, InputResponse::Elicitation(ElicitResult::accept(content)));
                }
                Ok(out)
            })
        });
    let r = client.call_tool_with("both", json!({}), options).await.expect("call");
    assert_eq!(r.content.first().and_then(|c| c.as_text()), Some("input-3! likes colour!"));
    assert_eq!(*rounds.lock().expect("rounds"), [vec!["colour".to_owned(), "input-3".to_owned()]], "one round");
    // Without the per-call capabilities the server may not ask, and says so.
    let err = client.call_tool("both", json!({})).await;
    assert!(err.is_err() || err.as_ref().is_ok_and(|r| r.is_error == Some(true)), "{err:?}");
}

/// The era layer polls a tool's handler once with a waker that does nothing, and boxes the rest
/// of the call only when the handler waits. A handler that wakes itself in that first poll
/// (`yield_now`: the wake-up goes to the waker that does nothing) is polled again with the
/// request's waker and answered, in both eras; one that is ready at once is answered at once.
#[tokio::test]
async fn a_handler_that_waits_after_the_first_poll_is_answered_in_both_eras() {
    let server = Server::builder(Implementation::new("yields", "1"))
        .tool(Tool::new("yields", object(json!({"type": "object"}))), |_: Value| async move {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            "late"
        })
        .tool(Tool::new("now", object(json!({"type": "object"}))), |_: Value| async move { "now" })
        .build();
    let text = |r: &Value| r["result"]["content"][0]["text"].as_str().map(str::to_owned);
    let limit = std::time::Duration::from_secs(10);
    let mut raw = Raw::with(server.clone());
    for (tool, want) in [("yields", "late"), ("now", "now"), ("yields", "late")] {
        let params = json!({"name": tool, "arguments": {}, "_meta": meta(json!({}))});
        let r = tokio::time::timeout(limit, raw.call("tools/call", params)).await.expect("answered");
        assert_eq!(text(&r).as_deref(), Some(want), "{r}");
        assert_eq!(r["result"]["resultType"], "complete");
    }
    let mut raw = Raw::with(server);
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    assert!(raw.call("initialize", init).await.get("result").is_some());
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    for (tool, want) in [("yields", "late"), ("now", "now")] {
        let params = json!({"name": tool, "arguments": {}});
        let r = tokio::time::timeout(limit, raw.call("tools/call", params)).await.expect("answered");
        assert_eq!(text(&r).as_deref(), Some(want), "{r}");
        assert!(r["result"].get("resultType").is_none(), "{r}");
    }
}

//! A caller's W3C trace context (`traceparent`, `tracestate`, `baggage` in `_meta`) goes on to
//! the upstream that serves the call, in both eras, so a trace continues across the gateway;
//! so do the caller's other `_meta` members, while the protocol's keys are each hop's own.

mod common;

use portico::client::{CallOptions, Client, EraMode};
use portico::schema::{
    CompleteArgument, CompleteRequestParams, CompleteResult, CompletionReference, GetPromptResult, Implementation,
    Prompt, PromptArgument, PromptMessage, ProtocolVersion, RequestMeta, Tool, object,
};
use portico::server::{RequestContext, Server};
use portico::trace::TraceContext;
use serde_json::json;

/// An upstream whose tool answers with the trace context its request carried.
fn traced() -> Server {
    Server::builder(Implementation::new("traced", "1.0.0"))
        .tool(
            Tool::new("meta", object(json!({"type": "object"}))),
            |_: serde_json::Value, cx: RequestContext| async move {
                cx.meta().cloned().map(serde_json::Value::Object).unwrap_or_default().to_string()
            },
        )
        .prompt(
            Prompt::new("p").with_argument(PromptArgument::new("lang")),
            |_: std::collections::BTreeMap<String, String>| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user("hi")]))
            },
        )
        // A completion answers with the `_meta` members its request carried.
        .completion(|_: CompleteRequestParams, cx: RequestContext| async move {
            let seen = cx.meta().cloned().map(serde_json::Value::Object).unwrap_or_default().to_string();
            Ok(CompleteResult::new([seen]))
        })
        .tool(
            Tool::new("seen", object(json!({"type": "object"}))),
            |_: serde_json::Value, cx: RequestContext| async move {
                let t = cx.trace_context().cloned().unwrap_or_default();
                format!("{:?}|{:?}|{:?}", t.traceparent, t.tracestate, t.baggage)
            },
        )
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_trace_context_reaches_the_upstream() {
    let (addr, upstream) = common::serve_http(traced()).await;
    let dir = tempfile::tempdir().expect("tmp");
    let (host, gateway) = common::gateway_over_both_eras(addr, dir.path(), "").await;
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let trace = TraceContext::new(parent).with_tracestate("portico=1").with_baggage("user=ada");
    for era in [EraMode::Stateless, EraMode::Handshake(ProtocolVersion::V2025_06_18)] {
        let (a, b) = portico::transport::memory::pair();
        gateway.server().connect(b);
        let client = Client::builder(Implementation::new("agent", "1")).era(era).connect(a).await.expect("connect");
        for tool in ["new__seen", "old__seen"] {
            let options = CallOptions::new().with_trace_context(trace.clone());
            let r = client.call_tool_with(tool, json!({}), options).await.expect("call");
            assert_eq!(
                common::text(&r),
                format!("Some({parent:?})|Some(\"portico=1\")|Some(\"user=ada\")"),
                "{era:?} → {tool}"
            );
            // Without one, none is made up.
            let r = client.call_tool(tool, json!({})).await.expect("call");
            assert_eq!(common::text(&r), "None|None|None", "{era:?} → {tool}");
        }
        client.close().await;
    }
    host.shutdown().await;
    upstream.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_meta_members_reach_the_upstream() {
    let (addr, upstream) = common::serve_http(traced()).await;
    let dir = tempfile::tempdir().expect("tmp");
    let allow = "[policy.defaults]\ntools = \"allow\"\n\n";
    let (host, gateway) = common::gateway_over_both_eras(addr, dir.path(), allow).await;
    let serde_json::Value::Object(members) = json!({
        "acme.example/locale": "fr-FR",
        "acme.example/widget": {"theme": "dark", "sizes": [1, 2]},
        "io.modelcontextprotocol/custom": "this hop's own",
    }) else {
        unreachable!()
    };
    for era in [EraMode::Stateless, EraMode::Handshake(ProtocolVersion::V2025_06_18)] {
        let (a, b) = portico::transport::memory::pair();
        gateway.server().connect(b);
        let client = Client::builder(Implementation::new("agent", "1")).era(era).connect(a).await.expect("connect");
        for tool in ["new__meta", "old__meta"] {
            let options = CallOptions::new().with_meta(members.clone()).with_progress(|_| {});
            let r = client.call_tool_with(tool, json!({}), options).await.expect("call");
            assert_eq!(
                common::text(&r),
                json!({"acme.example/locale": "fr-FR", "acme.example/widget": {"theme": "dark", "sizes": [1, 2]}})
                    .to_string(),
                "{era:?} → {tool}"
            );
            // Without members, the upstream sees none: no progress token or protocol key leaks
            // into them.
            let r = client.call_tool(tool, json!({})).await.expect("call");
            assert_eq!(common::text(&r), "null", "{era:?} → {tool}");
        }
        // Completions too.
        for prompt in ["new__p", "old__p"] {
            let mut meta = RequestMeta::new();
            meta.other = members.clone();
            let ask =
                CompleteRequestParams::new(CompletionReference::prompt(prompt), CompleteArgument::new("lang", "r"));
            let r = client.complete(ask.clone().with_meta(meta)).await.expect("complete");
            assert_eq!(
                r.completion.values,
                [json!({"acme.example/locale": "fr-FR", "acme.example/widget": {"theme": "dark", "sizes": [1, 2]}})
                    .to_string()],
                "{era:?} → {prompt}"
            );
            let r = client.complete(ask).await.expect("complete");
            assert_eq!(r.completion.values, ["null"], "{era:?} → {prompt}");
        }
        client.close().await;
    }
    host.shutdown().await;
    upstream.abort();
}

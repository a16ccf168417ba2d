//! OpenTelemetry (feature `otel`): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `portico serve`
//! exports one span per call, named and attributed by the MCP conventions, as a child of the
//! caller's `traceparent`, and the upstream is sent the gateway span's own context.
#![cfg(feature = "otel")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::client::{CallOptions, Client};
use portico::schema::{Implementation, Tool, object};
use portico::server::{RequestContext, Server};
use portico::trace::TraceContext;
use portico::transport::child::ChildProcess;
use portico::transport::http::server::StreamableHttp;
use serde_json::{Value, json};

/// An OTLP/HTTP collector that keeps every JSON body posted to /v1/traces.
async fn collector() -> (String, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    kept.lock().expect("kept").push(v);
                }
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), bodies)
}

fn attr(span: &Value, key: &str) -> Option<String> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key).map(|a| {
        let v = &a["value"];
        v["stringValue"].as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())
    })
}

#[test]
fn calls_are_exported_as_spans_that_continue_the_callers_trace() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (endpoint, bodies) = collector().await;
        // An upstream that answers with the traceparent it was sent.
        let upstream = Server::builder(Implementation::new("traced", "1"))
            .tool(Tool::new("seen", object(json!({"type": "object"}))), |_: Value, cx: RequestContext| async move {
                cx.trace_context().and_then(|t| t.traceparent.clone()).unwrap_or_default()
            })
            .resource(
                portico::schema::Resource::new("memo://refused", "refused"),
                |_: portico::server::ResourceRequest, _: RequestContext| async move {
                    Err::<portico::schema::ResourceContents, _>(portico::server::HandlerError::internal("no"))
                },
            )
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let http = StreamableHttp::new(upstream).build();
        tokio::spawn(async move { http.serve_with_shutdown(listener, std::future::pending()).await });

        let dir = tempfile::tempdir().expect("tmp");
        let cfg = dir.path().join("portico.toml");
        std::fs::write(
            &cfg,
            format!("[gateway]\nstate_dir = \"state\"\n\n[[policy.rules]]\ndecision = \"allow\"\n\n[servers.up]\nurl = \"http://{addr}/mcp\"\n"),
        )
        .expect("config");
        let (transport, child) = ChildProcess::new(env!("CARGO_BIN_EXE_portico"))
            .args(["serve", "-c", cfg.to_str().expect("utf-8")])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .spawn()
            .expect("spawn");
        let client = Client::builder(Implementation::new("agent", "1")).connect(transport).await.expect("connect");
        let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
        let parent = format!("00-{trace_id}-00f067aa0ba902b7-01");
        let options = CallOptions::new().with_trace_context(TraceContext::new(parent.clone()));
        let r = client.call_tool_with("up__seen", json!({}), options).await.expect("call");
        let sent = r.content.first().and_then(|c| c.as_text()).unwrap_or_default().to_owned();
        // The upstream continues the same trace, under the gateway's span.
        assert!(sent.starts_with(&format!("00-{trace_id}-")), "{sent}");
        assert_ne!(sent, parent, "the upstream's parent is the gateway's span");
        // An upstream that answers with a JSON-RPC error.
        let refused = client.read_resource("memo://refused").await;
        assert!(refused.is_err(), "{refused:?}");
        client.close().await;
        let status = tokio::time::timeout(Duration::from_secs(20), child.shutdown()).await.expect("exits");
        assert!(status.expect("status").success());

        let spans: Vec<Value> = bodies
            .lock()
            .expect("bodies")
            .iter()
            .flat_map(|b| b["resourceSpans"].as_array().cloned().unwrap_or_default())
            .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
            .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
            .collect();
        let span = spans.iter().find(|s| s["name"] == "tools/call up__seen").unwrap_or_else(|| panic!("{spans:?}"));
        assert_eq!(span["traceId"].as_str().map(str::to_lowercase).as_deref(), Some(trace_id), "{span}");
        assert_eq!(span["parentSpanId"].as_str().map(str::to_lowercase).as_deref(), Some("00f067aa0ba902b7"));
        let span_id = span["spanId"].as_str().map(str::to_lowercase).unwrap_or_default();
        assert!(sent.contains(&span_id), "the upstream's parent is this span: {sent} vs {span_id}");
        assert_eq!(attr(span, "mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(attr(span, "gen_ai.tool.name").as_deref(), Some("up__seen"));
        assert_eq!(attr(span, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert!(attr(span, "mcp.session.id").is_some() && attr(span, "jsonrpc.request.id").is_some(), "{span}");
        assert_eq!(attr(span, "error.type"), None, "a success has no error.type");
        assert_eq!(attr(span, "network.transport").as_deref(), Some("pipe"), "the client came over stdio: {span}");
        assert_eq!(attr(span, "rpc.response.status_code"), None, "{span}");
        let span =
            spans.iter().find(|s| s["name"] == "resources/read memo://refused").unwrap_or_else(|| panic!("{spans:?}"));
        assert_eq!(attr(span, "rpc.response.status_code").as_deref(), Some("-32603"), "{span}");
        assert_eq!(attr(span, "error.type").as_deref(), Some("upstream_error"), "{span}");
    });
}

//! Spans of the call path, named and attributed by OpenTelemetry's MCP conventions, and the
//! trace context a call passes on to its upstream.
//!
//! Each call through the host is one span, `{mcp.method.name} {target}` (target `portico::call`
//! at level INFO), with `mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`,
//! `jsonrpc.request.id`, `network.transport` (`pipe` for stdio, `tcp` for HTTP),
//! `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` for a tool call,
//! `gen_ai.prompt.name` for a prompt, `mcp.resource.uri` for a read, and `error.type` when it
//! failed (`tool_error` for a result with `isError`), with `rpc.response.status_code` when the
//! upstream answered with a JSON-RPC error. A subscriber that does not want them (the
//! default filter is `warn`) costs nothing here.
//!
//! With the `otel` feature, the span continues the caller's trace (`traceparent` in `_meta`)
//! and the upstream is sent the span's own context; without it, the caller's trace context is
//! passed on as it came.

use portico::server::RequestContext;
use portico::trace::TraceContext;
use tracing::field::Empty;

use crate::router::{Method, Outcome};

/// The target of call spans, for filters (`portico::call=info`).
pub const TARGET: &str = "portico::call";

/// A call's span.
pub(crate) fn span(method: Method, exposed: &str, cx: Option<&RequestContext>) -> tracing::Span {
    let span = tracing::info_span!(
        target: "portico::call",
        "mcp",
        otel.name = %format_args!("{} {}", method.as_str(), exposed),
        otel.kind = "server",
        mcp.method.name = method.as_str(),
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        mcp.resource.uri = Empty,
        mcp.session.id = Empty,
        mcp.protocol.version = Empty,
        network.transport = Empty,
        jsonrpc.request.id = Empty,
        rpc.response.status_code = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    match method {
        Method::CallTool => {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", exposed);
        }
        Method::GetPrompt => {
            span.record("gen_ai.prompt.name", exposed);
        }
        Method::ReadResource => {
            span.record("mcp.resource.uri", exposed);
        }
    }
    if let Some(cx) = cx {
        span.record("mcp.session.id", cx.connection_id().get());
        span.record("mcp.protocol.version", cx.protocol_version().as_str());
        if let Some(t) = cx.network_transport() {
            span.record("network.transport", t);
        }
        span.record("jsonrpc.request.id", tracing::field::display(request_id(cx)));
        #[cfg(feature = "otel")]
        if let Some(trace) = cx.trace_context() {
            otel::continue_trace(&span, trace);
        }
    }
    span
}

fn request_id(cx: &RequestContext) -> String {
    match serde_json::to_value(cx.request_id()) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Records the JSON-RPC error code the upstream answered with on the current call's span.
pub(crate) fn refused_with(code: i32) {
    tracing::Span::current().record("rpc.response.status_code", tracing::field::display(code));
}

/// Records how the call ended on its span.
pub(crate) fn ended(span: &tracing::Span, outcome: &Outcome<'_>) {
    let error = match outcome {
        Outcome::Refused(_) => "refused",
        Outcome::Failed(why) if why.contains("did not answer within") => "timeout",
        Outcome::Failed(_) => "upstream_error",
        Outcome::Answered(crate::router::Answer::Tool(r)) if r.is_error == Some(true) => "tool_error",
        _ => return,
    };
    span.record("error.type", error);
}

/// The trace context to send the upstream for a call from `cx`, made in the current span.
pub(crate) fn outgoing(cx: &RequestContext) -> Option<TraceContext> {
    #[cfg(feature = "otel")]
    if let Some(t) = otel::current() {
        return Some(t);
    }
    cx.trace_context().cloned()
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;

    use opentelemetry::trace::TraceContextExt;
    use portico::trace::TraceContext;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Makes `span` a child of the caller's span, through the global propagator.
    pub(super) fn continue_trace(span: &tracing::Span, trace: &TraceContext) {
        let mut carrier = HashMap::new();
        for (k, v) in
            [("traceparent", &trace.traceparent), ("tracestate", &trace.tracestate), ("baggage", &trace.baggage)]
        {
            if let Some(v) = v {
                carrier.insert(k.to_owned(), v.clone());
            }
        }
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }

    /// The current span's context, when it is being exported.
    pub(super) fn current() -> Option<TraceContext> {
        let cx = tracing::Span::current().context();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier: HashMap<String, String> = HashMap::new();
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut carrier));
        let parent = carrier.remove("traceparent")?;
        let mut t = TraceContext::new(parent);
        t.tracestate = carrier.remove("tracestate").filter(|s| !s.is_empty());
        t.baggage = carrier.remove("baggage").filter(|s| !s.is_empty());
        Some(t)
    }
}

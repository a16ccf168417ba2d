//! W3C trace context carried in a request's `_meta` (`traceparent`, `tracestate`, `baggage`),
//! as the MCP OpenTelemetry conventions place it: a server reads it
//! ([`RequestContext::trace_context`](crate::server::RequestContext::trace_context)) and a
//! client sends it ([`CallOptions::with_trace_context`](crate::client::CallOptions::with_trace_context)),
//! so a trace continues across a gateway.

use serde_json::{Map, Value};

/// The W3C trace context of one request. The values are kept as they came (a
/// `traceparent` is not parsed here; a tracing library does that).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TraceContext {
    /// `traceparent`: version, trace id, parent span id, flags.
    pub traceparent: Option<String>,
    /// `tracestate`: vendor-specific entries.
    pub tracestate: Option<String>,
    /// `baggage`: application key-value pairs.
    pub baggage: Option<String>,
}

/// Longest value taken from a request (a `traceparent` is 55 bytes; the W3C limits
/// `tracestate` to 32 entries and `baggage` to 8192 bytes).
const MAX_VALUE: usize = 8192;

impl TraceContext {
    /// A context with `traceparent`.
    pub fn new(traceparent: impl Into<String>) -> Self {
        TraceContext { traceparent: Some(traceparent.into()), ..Default::default() }
    }

    /// With `tracestate`.
    #[must_use]
    pub fn with_tracestate(mut self, tracestate: impl Into<String>) -> Self {
        self.tracestate = Some(tracestate.into());
        self
    }

    /// With `baggage`.
    #[must_use]
    pub fn with_baggage(mut self, baggage: impl Into<String>) -> Self {
        self.baggage = Some(baggage.into());
        self
    }

    /// From the three members of a `_meta`; `None` when none is there. Values over 8 KiB are
    /// dropped.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn from_parts(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
        baggage: Option<&str>,
    ) -> Option<Self> {
        let keep = |v: Option<&str>| v.filter(|v| v.len() <= MAX_VALUE).map(str::to_owned);
        let t = TraceContext { traceparent: keep(traceparent), tracestate: keep(tracestate), baggage: keep(baggage) };
        (t.traceparent.is_some() || t.tracestate.is_some() || t.baggage.is_some()).then_some(t)
    }

    /// Writes the members into a `_meta` map.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn write(&self, meta: &mut Map<String, Value>) {
        for (key, value) in
            [("traceparent", &self.traceparent), ("tracestate", &self.tracestate), ("baggage", &self.baggage)]
        {
            if let Some(v) = value {
                meta.insert(key.to_owned(), Value::String(v.clone()));
            }
        }
    }
}

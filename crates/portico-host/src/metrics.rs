//! [`Metrics`]: what the host measures on its call path, in Prometheus text format for
//! `GET /metrics` on the admin listener.
//!
//! Names follow OpenTelemetry's MCP conventions, as Prometheus spells them (dots become
//! underscores, seconds get their unit suffix):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `mcp_server_operation_duration_seconds` | histogram | `mcp_method_name`, `gen_ai_tool_name`, `error_type` |
//! | `mcp_client_operation_duration_seconds` | histogram | `mcp_method_name`, `server`, `error_type` |
//! | `portico_calls_total` | counter | `mcp_method_name`, `server`, `status` |
//! | `portico_approvals_pending` | gauge | |
//! | `portico_upstream_up` | gauge (1 or 0) | `server`, `state` |
//!
//! The server side is measured from the moment a call reaches the host to its answer (policy
//! and approval waits included); the client side is the upstream's part alone. `gen_ai_tool_name`
//! is the exposed tool or prompt name (resource URIs are left out: they are unbounded).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::router::{Answer, Call, Method, Outcome};

/// Bucket bounds in seconds, as OpenTelemetry recommends for MCP operation durations.
const BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerOp {
    mcp_method_name: &'static str,
    gen_ai_tool_name: String,
    error_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientOp {
    mcp_method_name: &'static str,
    server: String,
    error_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Calls {
    mcp_method_name: &'static str,
    server: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Upstream {
    server: String,
    state: String,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The host's measurements. One per host; cheap to update from any task.
pub struct Metrics {
    server: Family<ServerOp, Histogram, fn() -> Histogram>,
    client: Family<ClientOp, Histogram, fn() -> Histogram>,
    calls: Family<Calls, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            server: Family::new_with_constructor(histogram),
            client: Family::new_with_constructor(histogram),
            calls: Family::default(),
        }
    }
}

/// A call's status and error type, from how it ended.
fn classify(outcome: &Outcome<'_>) -> (&'static str, &'static str) {
    match outcome {
        Outcome::Refused(_) => ("denied", "refused"),
        Outcome::Failed(why) if why.contains("did not answer within") => ("timeout", "timeout"),
        Outcome::Failed(_) => ("error", "upstream_error"),
        Outcome::Answered(Answer::Tool(r)) if r.is_error == Some(true) => ("error", "tool_error"),
        _ => ("success", ""),
    }
}

impl Metrics {
    /// Records a call that ended with `outcome`, `call.started` ago.
    pub(crate) fn call(&self, call: &Call<'_>, outcome: &Outcome<'_>) {
        let (status, error_type) = classify(outcome);
        let method = call.method.as_str();
        let tool = match call.method {
            Method::ReadResource => String::new(),
            _ => call.exposed.to_owned(),
        };
        let elapsed = call.started.elapsed().unwrap_or_default();
        self.server
            .get_or_create(&ServerOp { mcp_method_name: method, gen_ai_tool_name: tool, error_type })
            .observe(elapsed.as_secs_f64());
        self.calls.get_or_create(&Calls { mcp_method_name: method, server: call.origin.server.clone(), status }).inc();
    }

    /// Records the upstream's part of a call to `server`.
    pub(crate) fn upstream(&self, method: Method, server: &str, took: Duration, error_type: Option<&'static str>) {
        self.client
            .get_or_create(&ClientOp {
                mcp_method_name: method.as_str(),
                server: server.to_owned(),
                error_type: error_type.unwrap_or_default(),
            })
            .observe(took.as_secs_f64());
    }

    /// Everything in Prometheus text format, with the gauges read now: `pending` approvals and
    /// each upstream's state.
    pub fn render(&self, pending: usize, upstreams: &[crate::upstream::UpstreamStatus]) -> String {
        let mut registry = Registry::default();
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "Duration of MCP requests the host served (policy and approval included)",
            Unit::Seconds,
            self.server.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "Duration of MCP requests the host made to upstream servers",
            Unit::Seconds,
            self.client.clone(),
        );
        registry.register("portico_calls", "Calls through the host, by method, server and status", self.calls.clone());
        let approvals: Gauge = Gauge::default();
        approvals.set(i64::try_from(pending).unwrap_or(i64::MAX));
        registry.register("portico_approvals_pending", "Calls waiting for a person's approval", approvals);
        let up = Family::<Upstream, Gauge>::default();
        for s in upstreams {
            let ready = matches!(s.state, crate::upstream::State::Ready);
            up.get_or_create(&Upstream { server: s.name.clone(), state: s.state.as_str().to_owned() })
                .set(i64::from(ready));
        }
        registry.register("portico_upstream_up", "1 when the upstream server is ready, 0 otherwise", up);
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::warn!("metrics could not be encoded: {e}");
        }
        out
    }
}

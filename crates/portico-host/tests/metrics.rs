//! `GET /metrics` on the admin listener: calls counted by status, operation durations by the
//! OpenTelemetry MCP names, pending approvals and upstream state, behind the admin token.

mod common;

use std::sync::Arc;
use std::time::Duration;

use portico_host::Host;
use portico_host::admin::Admin;
use portico_host::config::Secret;
use portico_host::oversight::Supervisor;
use serde_json::json;

const TOKEN: &str = "metrics-token-metrics-token-0001";

/// The value of the sample whose line starts with `series` (name and labels as printed).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_calls_time_them_and_show_upstreams() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy =
        "[[policy.rules]]\ntool = \"*__sleep\"\ndecision = \"deny\"\n\n[[policy.rules]]\ndecision = \"allow\"\n\n";
    let config = common::config_in(dir.path(), &format!("{policy}{}", common::everything("ev", "")));
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor"));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    for i in 0..2 {
        let r = host.call_tool("ev__add", json!({"a": i, "b": 1}), None).await;
        assert_eq!(r.is_error, None);
    }
    let r = host.call_tool("ev__sleep", json!({"ms": 1}), None).await;
    assert_eq!(r.is_error, Some(true));
    host.read_resource("everything://readme", None, None).await.expect("read");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let admin = Admin::new(host.clone(), supervisor.approvals().clone(), Secret::new(TOKEN), addr);
    let server = tokio::spawn(admin.serve(listener, std::future::pending()));
    let http = reqwest::Client::new();
    let r = http.get(format!("http://{addr}/metrics")).send().await.expect("send");
    assert_eq!(r.status(), 401, "metrics need the admin token too");
    let r = http.get(format!("http://{addr}/metrics")).bearer_auth(TOKEN).send().await.expect("send");
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().is_ok_and(|c| c.starts_with("application/openmetrics-text")));
    let text = r.text().await.expect("body");
    let calls = |status: &str| {
        sample(
            &text,
            &format!("portico_calls_total{{mcp_method_name=\"tools/call\",server=\"ev\",status=\"{status}\"}}"),
        )
    };
    assert_eq!(calls("success"), Some(2.0), "{text}");
    assert_eq!(calls("denied"), Some(1.0), "{text}");
    let served = "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"ev__add\",error_type=\"\"}";
    assert_eq!(sample(&text, served), Some(2.0), "{text}");
    let refused = "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"ev__sleep\",error_type=\"refused\"}";
    assert_eq!(sample(&text, refused), Some(1.0), "{text}");
    // The upstream saw only what was let through.
    let upstream =
        "mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\",server=\"ev\",error_type=\"\"}";
    assert_eq!(sample(&text, upstream), Some(2.0), "{text}");
    let reads =
        "mcp_client_operation_duration_seconds_count{mcp_method_name=\"resources/read\",server=\"ev\",error_type=\"\"}";
    assert_eq!(sample(&text, reads), Some(1.0), "{text}");
    assert_eq!(sample(&text, "portico_approvals_pending"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "portico_upstream_up{server=\"ev\",state=\"ready\"}"), Some(1.0), "{text}");
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    server.abort();
    host.shutdown().await;
}

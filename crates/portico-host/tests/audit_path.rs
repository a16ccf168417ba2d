//! The activity log on the call path: every call through the host, allowed, denied or failed,
//! becomes one record with its decision and outcome, and 64 concurrent calls give 64 records
//! in one valid chain.

mod common;

use std::sync::Arc;
use std::time::Duration;

use portico_host::Host;
use portico_host::audit::{AuditLog, Filter, RawAudit};
use portico_host::oversight::Supervisor;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_through_the_host_is_recorded_once_in_one_chain() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = "[[policy.rules]]\ntool = \"*__sleep\"\ndecision = \"deny\"\nreason = \"no sleeping\"\n\n[[policy.rules]]\ndecision = \"allow\"\n";
    let config = common::config_in(dir.path(), &format!("{policy}{}", common::everything("ev", "")));
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;

    let r = host.call_tool("ev__add", json!({"a": 1, "b": 2}), None).await;
    assert_eq!(r.structured_content, Some(json!({"sum": 3})));
    let r = host.call_tool("ev__sleep", json!({"ms": 1}), None).await;
    assert_eq!(r.is_error, Some(true));
    let calls = (0..64).map(|i| {
        let host = host.clone();
        async move { host.call_tool("ev__add", json!({"a": i, "b": 1}), None).await }
    });
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(|r| r.is_error.is_none()));

    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    assert_eq!(records.len(), 66, "one record per call");
    let denied: Vec<_> = records.iter().filter(|r| r.status == "denied").collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].target.as_deref(), Some("ev__sleep"));
    assert_eq!(denied[0].decision.as_deref(), Some("deny"));
    let ok = records.iter().filter(|r| r.status == "success" && r.decision.as_deref() == Some("allow")).count();
    assert_eq!(ok, 65);
    let report = log.verify().await.expect("verify");
    assert_eq!(report.records, 66);
    assert!(report.first_bad_seq().is_none(), "{report:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_switched_off_tool_is_refused_and_recorded() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = common::config_in(
        dir.path(),
        &format!("[[policy.rules]]\ndecision = \"allow\"\n\n{}", common::everything("ev", "")),
    );
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    host.set_tool_enabled("ev__add", false);
    let r = host.call_tool("ev__add", json!({"a": 1, "b": 2}), None).await;
    assert_eq!(r.is_error, Some(true));
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    assert_eq!(records.len(), 1, "the refusal is recorded");
    assert_eq!((records[0].status.as_str(), records[0].target.as_deref()), ("denied", Some("ev__add")));
    assert!(records[0].text.contains("switched off"), "{}", records[0].text);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_its_rate_limit_is_recorded_as_denied() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = common::config_in(
        dir.path(),
        &format!(
            "[[policy.rules]]\nname = \"once\"\ndecision = \"allow\"\nrate = \"1/h\"\n\n{}",
            common::everything("ev", "")
        ),
    );
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    let first = host.call_tool("ev__add", json!({"a": 1, "b": 2}), None).await;
    assert_eq!(first.structured_content, Some(json!({"sum": 3})));
    let second = host.call_tool("ev__add", json!({"a": 1, "b": 2}), None).await;
    assert_eq!(second.is_error, Some(true));
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let mut records = log.query(&Filter::new()).await.expect("query");
    records.sort_by_key(|r| r.seq);
    let seen: Vec<_> = records.iter().map(|r| (r.status.as_str(), r.decision.as_deref())).collect();
    assert_eq!(seen, [("success", Some("allow")), ("denied", Some("deny"))]);
    assert!(records.iter().all(|r| r.json()["policy.rule"] == "rule `once` (policy.rules[0])"), "{records:?}");
    host.shutdown().await;
}

/// A record says what carried the call (OpenTelemetry's `network.transport`): `tcp` through the
/// gateway's Streamable HTTP endpoint, nothing for a client within the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_names_the_transport_the_call_came_over() {
    use portico::client::Client;
    use portico::schema::Implementation;
    use portico::transport::http::client::HttpClientTransport;

    let dir = tempfile::tempdir().expect("tmp");
    let (supervisor, host, gateway) = allowing_gateway(dir.path()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let endpoint = gateway.http().build();
    let served = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });

    let over_http = Client::builder(Implementation::new("http", "1"))
        .connect(HttpClientTransport::new(url))
        .await
        .expect("connect over HTTP");
    over_http.call_tool("ev__add", json!({"a": 1, "b": 1})).await.expect("call over HTTP");
    let (a, b) = portico::transport::memory::pair();
    gateway.server().connect(b);
    let in_process = Client::builder(Implementation::new("memory", "1")).connect(a).await.expect("connect");
    in_process.call_tool("ev__add", json!({"a": 2, "b": 2})).await.expect("call in process");

    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    let transport_of = |a: i64| {
        records
            .iter()
            .map(portico_host::audit::Record::json)
            .find(|r| r["arguments"]["a"] == json!(a))
            .map(|r| r["network.transport"].clone())
    };
    assert_eq!(transport_of(1), Some(json!("tcp")), "{records:?}");
    assert_eq!(transport_of(2), Some(serde_json::Value::Null), "{records:?}");
    host.shutdown().await;
    served.abort();
}

/// A call its client cancels is still recorded, as cancelled, with its decision: in process and
/// over HTTP, in both eras. The SDK drops the gateway's handler on `notifications/cancelled`, and
/// on the end of a stateless call's response stream (over HTTP, the client closes it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_its_client_cancels_is_recorded_as_cancelled() {
    use portico::client::{CallOptions, Client, EraMode};
    use portico::schema::{Implementation, ProtocolVersion};
    use portico::transport::http::client::HttpClientTransport;
    use tokio_util::sync::CancellationToken;

    let dir = tempfile::tempdir().expect("tmp");
    let (supervisor, host, gateway) = allowing_gateway(dir.path()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let endpoint = gateway.http().build();
    let served = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });
    let eras = [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless];
    let cases = eras.into_iter().flat_map(|era| [(era, false), (era, true)]);
    for (n, (era, http)) in cases.enumerate() {
        let builder = Client::builder(Implementation::new("c", "1")).era(era);
        let client = if http {
            builder.connect(HttpClientTransport::new(url.clone())).await.expect("connect over HTTP")
        } else {
            let (a, b) = portico::transport::memory::pair();
            gateway.server().connect(b);
            builder.connect(a).await.expect("connect")
        };
        let era = (era, http);
        let cancel = CancellationToken::new();
        let call = {
            let (client, cancel) = (client.clone(), cancel.clone());
            let ms = 60_000 + n;
            tokio::spawn(async move {
                client.call_tool_with("ev__sleep", json!({"ms": ms}), CallOptions::new().with_cancel(cancel)).await
            })
        };
        let running =
            common::eventually(Duration::from_secs(10), || (!host.activity().list().is_empty()).then_some(())).await;
        assert!(running.is_some(), "{era:?}: the call runs");
        cancel.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(10), call).await.expect("ends").expect("join");
        assert!(ended.is_err(), "{era:?}: {ended:?}");
        let gone =
            common::eventually(Duration::from_secs(10), || host.activity().list().is_empty().then_some(())).await;
        assert!(gone.is_some(), "{era:?}: the call left");
        client.close().await;
    }
    // The record of a dropped call is written after it ends: wait for both, within bounds.
    let log = supervisor.audit().expect("log");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let records = loop {
        log.flush().await.expect("flush");
        let records = log.query(&Filter::new()).await.expect("query");
        if records.len() >= 4 || tokio::time::Instant::now() > deadline {
            break records;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let sleeps: Vec<_> = records.iter().filter(|r| r.target.as_deref() == Some("ev__sleep")).collect();
    assert_eq!(sleeps.len(), 4, "one record per cancelled call: {records:?}");
    for r in sleeps {
        assert_eq!(r.status, "cancelled", "{r:?}");
        assert_eq!(r.decision.as_deref(), Some("allow"), "{r:?}");
    }
    host.shutdown().await;
    served.abort();
}

/// A gateway over the `everything` example as `ev`, every call allowed, its log on.
async fn allowing_gateway(dir: &std::path::Path) -> (Arc<Supervisor>, Host, portico_host::gateway::Gateway) {
    let policy = "[[policy.rules]]\ndecision = \"allow\"\n";
    let config = common::config_in(dir, &format!("{policy}{}", common::everything("ev", "")));
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    let gateway = portico_host::gateway::Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    (supervisor, host, gateway)
}

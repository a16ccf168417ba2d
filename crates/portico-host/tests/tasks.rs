//! The tasks extension through the gateway: an upstream that makes a task of a call makes the
//! gateway make one of its own; the gateway follows the upstream's task (its input requests
//! relayed to the caller) while the caller polls the gateway's, a cancelled task is cancelled
//! upstream, and the call is recorded once, with the task's final result.

mod common;
#[path = "../../portico/tests/common/task_tools.rs"]
mod task_tools;

use std::sync::Arc;
use std::time::Duration;

use portico::schema::ClientCapabilities;
use portico_host::Host;
use portico_host::audit::{AuditLog, Filter, RawAudit};
use portico_host::gateway::Gateway;
use portico_host::oversight::Supervisor;
use serde_json::{Value, json};
use task_tools::{Person, Probes, recorder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_the_upstream_is_a_task_of_the_gateway() {
    let probes = Arc::new(Probes::default());
    let (addr, served) = common::serve_http(task_tools::server(probes.clone())).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!(
        "[policy.defaults]\ntools = \"allow\"\n\n[servers.up]\nurl = \"http://{addr}/mcp\"\nshared = true\nprotocol_version = \"2026-07-28\"\n"
    );
    let config = common::config_in(dir.path(), &cfg);
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    let ext = gateway.capabilities().extensions.unwrap_or_default();
    assert!(ext.contains_key(portico::schema::TASKS_EXTENSION), "the gateway offers tasks: {ext:?}");

    let person = Person::default();
    let caps = ClientCapabilities::new().with_elicitation(true, false).with_tasks();
    let client = task_tools::connect(gateway.server(), caps, person.clone()).await;

    // Created, polled to completion.
    let (made, options) = recorder();
    let r = client.call_tool_with("up__work", json!({"ms": 100}), options).await.expect("call");
    assert_eq!(common::text(&r), "worked (task: true)");
    assert_eq!(made.lock().expect("lock").len(), 1, "the gateway made a task");

    // Input asked inside the upstream's task: the gateway's task is input_required, the
    // caller answers with tasks/update, and the answer goes on to the upstream's task.
    let (made, options) = recorder();
    let r = client.call_tool_with("up__greet", json!({}), options).await.expect("call");
    assert_eq!(common::text(&r), "Hello, Ada! (task: true)");
    assert_eq!(made.lock().expect("lock").len(), 1);
    let asked = person.0.lock().expect("lock").clone();
    assert_eq!(asked, ["[server `up` asks] What is your name?"]);

    // Cancelled by the caller (tasks/cancel to the gateway): the upstream's task is cancelled.
    task_tools::cancel_midway(&client, "up__work", &probes, 2).await;

    // A caller without the extension gets the result at once, from no task at either end.
    let plain = task_tools::connect(gateway.server(), ClientCapabilities::new(), Person::default()).await;
    let (made, options) = recorder();
    let r = plain.call_tool_with("up__work", json!({}), options).await.expect("call");
    assert_eq!(common::text(&r), "worked (task: false)");
    assert!(made.lock().expect("lock").is_empty());

    // One record per call, with the task's final result; the cancelled one as cancelled (it
    // is written once the cancelled call's future is gone, so wait for it within bounds).
    let log = supervisor.audit().expect("log");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let records = loop {
        log.flush().await.expect("flush");
        let records = log.query(&Filter::new()).await.expect("query");
        if records.iter().filter(|r| r.method == "tools/call").count() >= 4 || tokio::time::Instant::now() > deadline {
            break records;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let calls: Vec<Value> = records.iter().filter(|r| r.method == "tools/call").map(|r| r.json()).collect();
    let with = |text: &str| calls.iter().filter(|c| c.to_string().contains(text)).count();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    assert_eq!(calls.iter().filter(|c| c["status"] == "cancelled").count(), 1, "{calls:#?}");
    assert_eq!(with("worked (task: true)"), 1, "{calls:#?}");
    assert_eq!(with("Hello, Ada! (task: true)"), 1, "{calls:#?}");
    assert_eq!(with("worked (task: false)"), 1, "{calls:#?}");

    client.close().await;
    plain.close().await;
    host.shutdown().await;
    served.abort();
}

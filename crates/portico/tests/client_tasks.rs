//! The client side of the tasks extension: `call_tool` follows a task the server makes of the
//! call — polled to its result, its input answered with `tasks/update`, cancelled with
//! `tasks/cancel` — and `CallOptions::with_on_task` is told when the task is made.

#[path = "common/task_tools.rs"]
mod task_tools;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use portico::client::CallOptions;
use portico::schema::ClientCapabilities;
use serde_json::json;
use task_tools::{Person, Probes, connect, recorder, server, until};

fn text(r: &portico::schema::CallToolResult) -> String {
    serde_json::to_value(&r.content).expect("json")[0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_becomes_a_task_is_followed_to_its_result() {
    let server = server(Arc::new(Probes::default()));
    let person = Person::default();
    let caps = ClientCapabilities::new().with_elicitation(true, false).with_tasks();
    let client = connect(&server, caps, person.clone()).await;

    let (made, options) = recorder();
    let r = client.call_tool_with("work", json!({"ms": 50}), options).await.expect("call");
    assert_eq!(text(&r), "worked (task: true)");
    let made = made.lock().expect("lock").clone();
    assert_eq!(made.len(), 1, "told once: {made:?}");
    assert_eq!(made[0].ttl_ms, Some(60_000));
    assert_eq!(made[0].poll_interval_ms, Some(20));

    // Input asked inside the task reaches the client's handler; the answer goes back with
    // tasks/update.
    let r = client.call_tool("greet", json!({})).await.expect("call");
    assert_eq!(text(&r), "Hello, Ada! (task: true)");
    assert_eq!(person.0.lock().expect("lock").len(), 1);

    // A task that fails is an error carrying the task's error.
    let e = client.call_tool("work", json!({"panic": true})).await.expect_err("the task failed");
    assert_eq!(e.peer_error().map(|p| p.code.0), Some(-32603), "{e}");
    client.close().await;

    // Without the extension, the same tool answers at once and no task is made.
    let client = connect(&server, ClientCapabilities::new(), Person::default()).await;
    let (made, options) = recorder();
    let r = client.call_tool_with("work", json!({}), options).await.expect("call");
    assert_eq!(text(&r), "worked (task: false)");
    assert!(made.lock().expect("lock").is_empty());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_or_dropping_the_call_cancels_the_task() {
    let probes = Arc::new(Probes::default());
    let server = server(probes.clone());
    let client = connect(&server, ClientCapabilities::new().with_tasks(), Person::default()).await;
    let ended = |n| {
        let probes = probes.clone();
        move || probes.ended.load(Ordering::SeqCst) == n
    };

    // Cancelled through its token: the call ends, and so does the server's handler.
    task_tools::cancel_midway(&client, "work", &probes, 1).await;

    // Dropped: the same.
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("work", json!({"ms": 60_000})).await })
    };
    until("the second task started", || probes.started.load(Ordering::SeqCst) == 2).await;
    call.abort();
    until("the second handler ended", ended(2)).await;

    // A call with a hard limit gives up on the task at it, and cancels it.
    let options = CallOptions::new().with_max_timeout(Duration::from_millis(300));
    let e = client.call_tool_with("work", json!({"ms": 60_000}), options).await.expect_err("timed out");
    assert!(e.is_timeout(), "{e}");
    until("the third handler ended", ended(3)).await;
    client.close().await;
}

//! Tests that count this process's children and descriptors: hot reload (what changed
//! restarts, what did not keeps running, nothing leaks) and per-client isolation. They hold
//! one lock so they never run at the same time, and sit apart from the other tests.

mod common;

use std::time::Duration;

use common::{config_in, eventually, everything, text};
use portico::client::Client;
use portico::schema::Implementation;
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::json;

/// One test at a time: they count processes.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn downstream(gateway: &Gateway) -> Client {
    let (client_end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    Client::builder(Implementation::new("test-client", "1.0.0")).connect(client_end).await.expect("downstream connects")
}

const READY: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_leak_no_process_and_no_descriptor() {
    let _alone = ALONE.lock().await;
    let dir = tempfile::tempdir().expect("tmp");
    let one = config_in(dir.path(), &everything("a", ""));
    let two = config_in(dir.path(), &format!("{}{}", everything("a", ""), everything("b", "timeout = 5")));
    let host = Host::start(one.clone());
    host.ready(READY).await;
    let me = std::process::id();
    let fds = common::open_fds();
    let kids = common::children(me).len();
    for i in 0..100 {
        let cfg = if i % 2 == 0 { two.clone() } else { one.clone() };
        host.reload(cfg).await;
        if i % 25 == 0 {
            host.ready(READY).await;
        }
    }
    host.ready(READY).await;
    let result = host.call_tool("a__add", json!({ "a": 1, "b": 1 }), None).await;
    assert_eq!(result.structured_content, Some(json!({ "sum": 2 })), "the unchanged server kept running");
    let settled = eventually(Duration::from_secs(20), || {
        let now = common::children(me).into_iter().filter(|p| common::alive(*p)).count();
        (now == kids && common::open_fds() <= fds + 2).then_some(())
    })
    .await;
    assert!(
        settled.is_some(),
        "children {} (was {kids}), fds {} (was {fds})",
        common::children(me).len(),
        common::open_fds()
    );
    host.shutdown().await;
    let none =
        eventually(Duration::from_secs(10), || common::children(me).iter().all(|p| !common::alive(*p)).then_some(()))
            .await;
    assert!(none.is_some(), "shutdown left children: {:?}", common::children(me));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_isolation_gives_each_session_its_own_process() {
    let _alone = ALONE.lock().await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = everything("iso", "isolate = \"per-client\"\nmax_clients = 2\nidle_timeout = 1");
    let host = Host::start(config_in(dir.path(), &cfg));
    host.ready(READY).await;
    let gateway = Gateway::new(host.clone());
    let up = host.upstream("iso").expect("iso");
    let me = std::process::id();
    let before = common::children(me).into_iter().filter(|p| common::alive(*p)).count();

    let a = downstream(&gateway).await;
    let b = downstream(&gateway).await;
    // State is per session: `toggle_bonus` adds a tool to the caller's own process only.
    assert_eq!(text(&a.call_tool("iso__toggle_bonus", json!({})).await.expect("a")), "added bonus");
    assert_eq!(text(&b.call_tool("iso__toggle_bonus", json!({})).await.expect("b")), "added bonus");
    assert_eq!(text(&a.call_tool("iso__toggle_bonus", json!({})).await.expect("a")), "removed bonus");
    assert_eq!(up.client_instances(), 2);
    let now = common::children(me).into_iter().filter(|p| common::alive(*p)).count();
    assert_eq!(now, before + 2, "one process per session");

    // A third session is over the cap: a clear tool error.
    let c = downstream(&gateway).await;
    let over = c.call_tool("iso__add", json!({ "a": 1, "b": 1 })).await.expect("c");
    assert_eq!(over.is_error, Some(true));
    assert!(text(&over).contains("server `iso` is at its limit"), "{}", text(&over));

    // A session that ends takes its process with it; an idle one goes after idle_timeout.
    a.close().await;
    let one = eventually(Duration::from_secs(5), || (up.client_instances() <= 1).then_some(())).await;
    assert!(one.is_some(), "the closed session's instance stayed");
    let none = eventually(Duration::from_secs(10), || (up.client_instances() == 0).then_some(())).await;
    assert!(none.is_some(), "the idle instance stayed");
    let settled = eventually(Duration::from_secs(10), || {
        (common::children(me).into_iter().filter(|p| common::alive(*p)).count() == before).then_some(())
    })
    .await;
    assert!(settled.is_some(), "per-client processes left running");
    host.shutdown().await;
}

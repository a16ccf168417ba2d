//! Hot reload against real upstreams: what changed restarts, what did not keeps running, and
//! nothing leaks. Alone in its binary: it counts this process's children and descriptors.

mod common;

use std::time::Duration;

use common::{config_in, eventually, everything};
use portico_host::Host;
use serde_json::json;

const READY: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_leak_no_process_and_no_descriptor() {
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

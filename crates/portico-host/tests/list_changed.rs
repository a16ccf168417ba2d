//! An upstream's `list_changed` reaches the gateway's clients even when its list came back the
//! same (the official conformance suite expects it), coalesced into one per kind.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use portico::client::{Client, ClientHandler};
use portico::schema::{Implementation, SubscriptionFilter, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::json;

#[derive(Clone, Default)]
struct Counts(Arc<AtomicUsize>);

impl ClientHandler for Counts {
    fn on_tools_list_changed(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_changed_is_passed_on_even_when_nothing_changed() {
    let upstream = Server::builder(Implementation::new("u", "1.0.0"))
        .tool(Tool::new("t", object(json!({"type": "object"}))), |_: serde_json::Value| async { "ok" })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let endpoint = StreamableHttp::new(upstream.clone()).build();
    let task = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(common::config_in(
        dir.path(),
        &format!("[servers.u]\nurl = \"http://{addr}/mcp\"\nshared = true\n"),
    ));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    let counts = Counts::default();
    let (client_end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    let client = Client::builder(Implementation::new("c", "1"))
        .handler(counts.clone())
        .connect(client_end)
        .await
        .expect("connect");
    let _sub = client.listen(SubscriptionFilter::new().with_tools_list_changed()).await.expect("listen");

    // The upstream announces a change of nothing, three times in a row.
    for _ in 0..3 {
        upstream.edit(|e| {
            e.mark_tools_changed();
        });
    }
    let got =
        common::eventually(Duration::from_secs(10), || (counts.0.load(Ordering::SeqCst) >= 1).then_some(())).await;
    assert!(got.is_some(), "no tools/list_changed reached the client");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let n = counts.0.load(Ordering::SeqCst);
    assert!(n <= 2, "{n} notifications for one burst: not coalesced");
    let tools = client.list_all_tools().await.expect("list");
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["u__t"]);
    client.close().await;
    host.shutdown().await;
    task.abort();
}

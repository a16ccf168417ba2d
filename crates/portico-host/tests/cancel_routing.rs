//! A downstream client's cancellation reaches the one upstream that owns the call, and no
//! other (agentgateway sent it to every upstream; an upstream with a request of the same id
//! then cancelled the wrong call). Two upstreams each hold a call in flight, very likely under
//! the same request id on their own connections; cancelling one must leave the other running.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::client::{CallOptions, Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion, Tool, object};
use portico::server::{RequestContext, Server};
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

/// What the upstreams' `wait` tools report: which started, and which saw a cancellation.
#[derive(Clone)]
struct Probe {
    started: mpsc::UnboundedSender<&'static str>,
    cancelled: Arc<Mutex<Vec<&'static str>>>,
}

/// Records its upstream as cancelled when the call's future ends without finishing: the SDK
/// drops a cancelled handler (or its token fires first).
struct Unfinished(Option<(&'static str, Arc<Mutex<Vec<&'static str>>>)>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some((name, cancelled)) = self.0.take() {
            cancelled.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(name);
        }
    }
}

/// An upstream whose `wait` runs until it is cancelled or `release` is notified.
fn waiting(name: &'static str, probe: Probe, release: Arc<Notify>) -> Server {
    Server::builder(Implementation::new(name, "1.0.0"))
        .tool(Tool::new("wait", object(json!({"type": "object"}))), move |_: serde_json::Value, cx: RequestContext| {
            let (probe, release) = (probe.clone(), release.clone());
            async move {
                let mut unfinished = Unfinished(Some((name, probe.cancelled.clone())));
                let _ = probe.started.send(name);
                tokio::select! {
                    () = cx.cancellation().cancelled() => "cancelled".to_owned(),
                    () = release.notified() => {
                        unfinished.0 = None;
                        "finished".to_owned()
                    }
                }
            }
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_cancel_reaches_only_the_upstream_that_owns_the_call() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let probe = Probe { started: started_tx, cancelled: Arc::default() };
    let (release_a, release_b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (addr_a, up_a) = common::serve_http(waiting("a", probe.clone(), release_a.clone())).await;
    let (addr_b, up_b) = common::serve_http(waiting("b", probe.clone(), release_b.clone())).await;
    let dir = tempfile::tempdir().expect("tmp");
    // Both upstreams in the same revision on one shared session each: their request ids run
    // alike, so a cancel sent by id to both would hit b's call.
    let cfg = format!(
        "[policy.defaults]\ntools = \"allow\"\n\n\
         [servers.a]\nurl = \"http://{addr_a}/mcp\"\nshared = true\nprotocol_version = \"2025-11-25\"\n\n\
         [servers.b]\nurl = \"http://{addr_b}/mcp\"\nshared = true\nprotocol_version = \"2025-11-25\"\n"
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    for era in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        probe.cancelled.lock().expect("lock").clear();
        let (end, server_end) = portico::transport::memory::pair();
        gateway.server().connect(server_end);
        let client =
            Arc::new(Client::builder(Implementation::new("agent", "1")).era(era).connect(end).await.expect("connect"));
        let cancel = CancellationToken::new();
        let (c, token) = (client.clone(), cancel.clone());
        let on_a =
            tokio::spawn(
                async move { c.call_tool_with("a__wait", json!({}), CallOptions::new().with_cancel(token)).await },
            );
        let c = client.clone();
        let on_b = tokio::spawn(async move { c.call_tool("b__wait", json!({})).await });
        let mut running = Vec::new();
        while running.len() < 2 {
            let name = tokio::time::timeout(WAIT, started.recv()).await.expect("both calls start").expect("open");
            running.push(name);
        }
        running.sort_unstable();
        assert_eq!(running, ["a", "b"], "{era:?}");

        cancel.cancel();
        let seen = common::eventually(WAIT, || {
            let c = probe.cancelled.lock().expect("lock");
            (!c.is_empty()).then(|| c.clone())
        })
        .await;
        assert_eq!(seen, Some(vec!["a"]), "{era:?}: upstream a sees the cancellation");
        let a = tokio::time::timeout(WAIT, on_a).await.expect("a ends").expect("join");
        assert!(a.is_err(), "{era:?}: the cancelled call ends without a result: {a:?}");

        // b's call was not touched: it is still running, and finishes when released.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!on_b.is_finished(), "{era:?}: b's call still runs");
        release_b.notify_one();
        let b = tokio::time::timeout(WAIT, on_b).await.expect("b ends").expect("join").expect("b's result");
        assert_eq!(common::text(&b), "finished", "{era:?}");
        assert_eq!(*probe.cancelled.lock().expect("lock"), ["a"], "{era:?}: b never saw a cancellation");
        if let Ok(client) = Arc::try_unwrap(client) {
            client.close().await;
        }
    }
    host.shutdown().await;
    up_a.abort();
    up_b.abort();
}

//! Resource subscriptions through the gateway: a client watching a resource makes the gateway
//! subscribe to it upstream (`resources/subscribe` in the handshake era, `subscriptions/listen`
//! in 2026-07-28), the upstream's `notifications/resources/updated` reaches the watching client
//! under the URI the gateway offers, and the last watcher leaving unsubscribes upstream.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::{Implementation, ProtocolVersion, Resource, ResourceContents, SubscriptionFilter, Tool, object};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
use serde_json::json;

const URI: &str = "mem://counter";

/// An upstream with one resource, a tool that changes it (and says so), and a count of the
/// clients watching it.
fn upstream(watchers: Arc<AtomicUsize>) -> Server {
    Server::builder(Implementation::new("counter", "1"))
        .resource(Resource::new(URI, "counter"), |r: ResourceRequest, _: RequestContext| async move {
            Ok::<_, HandlerError>(ResourceContents::text(r.uri(), "n"))
        })
        .tool(
            Tool::new("bump", object(json!({"type": "object"}))),
            |_: serde_json::Value, cx: RequestContext| async move {
                cx.server().notify_resource_updated(URI);
                "bumped"
            },
        )
        .on_subscription(move |uri, on| {
            if uri == URI {
                if on {
                    watchers.fetch_add(1, Ordering::SeqCst);
                } else {
                    watchers.fetch_sub(1, Ordering::SeqCst);
                }
            }
        })
        .build()
}

#[derive(Clone, Default)]
struct Watcher {
    updated: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Watcher {
    fn on_resource_updated(&self, uri: &str) {
        self.updated.lock().expect("updated").push(uri.to_owned());
    }
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_resource_is_subscribed_upstream_and_its_updates_come_through() {
    let watchers = Arc::new(AtomicUsize::new(0));
    let (addr, served) = common::serve_http(upstream(watchers.clone())).await;
    let dir = tempfile::tempdir().expect("tmp");
    // The same server twice, in each era: its URI is offered scoped, once per server.
    let (host, gateway) = common::gateway_over_both_eras(addr, dir.path(), "").await;

    for (server, era) in [("new", EraMode::Stateless), ("old", EraMode::Handshake(ProtocolVersion::V2025_11_25))] {
        let exposed = format!("portico:{server}/{URI}");
        let watcher = Watcher::default();
        let (a, b) = portico::transport::memory::pair();
        gateway.server().connect(b);
        let client = Client::builder(Implementation::new("w", "1"))
            .handler(watcher.clone())
            .era(era)
            .connect(a)
            .await
            .expect("connect");
        let resources = client.list_all_resources().await.expect("list");
        assert!(resources.iter().any(|r| r.uri == exposed), "{resources:?}");
        let subscription = match era {
            EraMode::Stateless => Some(
                client
                    .listen(SubscriptionFilter::new().with_resource_subscription(exposed.clone()))
                    .await
                    .expect("listen"),
            ),
            _ => {
                client.subscribe_resource(&exposed).await.expect("subscribe");
                None
            }
        };
        until(&format!("{server}: the gateway never subscribed upstream"), || watchers.load(Ordering::SeqCst) == 1)
            .await;
        let r = client.call_tool(&format!("{server}__bump"), json!({})).await.expect("bump");
        assert_eq!(common::text(&r), "bumped");
        until(&format!("{server}: no update reached the client"), || {
            watcher.updated.lock().expect("updated").contains(&exposed)
        })
        .await;
        // The last watcher leaving ends the upstream subscription.
        match subscription {
            Some(s) => drop(s),
            None => client.unsubscribe_resource(&exposed).await.expect("unsubscribe"),
        }
        until(&format!("{server}: the upstream subscription outlived its watchers"), || {
            watchers.load(Ordering::SeqCst) == 0
        })
        .await;
        client.close().await;
    }
    host.shutdown().await;
    served.abort();
}

//! Per-client upstreams: with `isolate = "per-client"` (the default for HTTP servers), each
//! downstream session gets its own upstream process or HTTP session, so no client sees
//! another's server-side state.
//!
//! An instance is opened at a session's first call and closed when the session ends, when it
//! has been unused for `idle_timeout`, or when the upstream stops. At most `max_clients` live at
//! once; a session beyond that gets a tool error that says so. An instance that dies is
//! forgotten, and the session's next call opens a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portico::client::Client;
use portico::server::{ConnectionId, RequestContext};
use portico::transport::child::ChildHandle;
use tokio::sync::OnceCell;

use super::{Shared, UpstreamError, lock};

/// One session's upstream.
pub(super) struct Instance {
    opened: OnceCell<Result<Arc<Client>, String>>,
    child: Mutex<Option<ChildHandle>>,
    last_used: Mutex<Instant>,
}

/// The per-client instances of one upstream, by downstream connection.
#[derive(Default)]
pub(super) struct Instances {
    map: Mutex<HashMap<ConnectionId, Arc<Instance>>>,
}

impl Instances {
    /// How many are open.
    pub(super) fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// The client of `cx`'s session when its instance is open and alive: every call after the
    /// first, without the future of [`client`](Self::client), which can open one.
    pub(super) fn open_client(&self, cx: &RequestContext) -> Option<Arc<Client>> {
        let map = lock(&self.map);
        let instance = map.get(&cx.connection_id())?;
        let client = match instance.opened.get()? {
            Ok(client) if !client.is_closed() => client.clone(),
            _ => return None,
        };
        *lock(&instance.last_used) = Instant::now();
        Some(client)
    }

    /// The client of `cx`'s session, opening it on first use.
    pub(super) async fn client(&self, shared: &Arc<Shared>, cx: &RequestContext) -> Result<Arc<Client>, UpstreamError> {
        let key = cx.connection_id();
        let instance = {
            let mut map = lock(&self.map);
            if let Some(i) = map.get(&key) {
                i.clone()
            } else {
                if map.len() >= shared.config.max_clients {
                    return Err(UpstreamError::Unavailable {
                        server: shared.config.name.clone(),
                        state: "at its limit",
                        reason: Some(format!("{} client sessions have their own instance (max_clients)", map.len())),
                    });
                }
                let i = Arc::new(Instance {
                    opened: OnceCell::new(),
                    child: Mutex::new(None),
                    last_used: Mutex::new(Instant::now()),
                });
                map.insert(key, i.clone());
                i
            }
        };
        *lock(&instance.last_used) = Instant::now();
        let opened = instance
            .opened
            .get_or_init(|| async {
                let deadline = tokio::time::Instant::now() + shared.config.startup_timeout;
                match super::supervise::open(shared, deadline, false).await {
                    Ok((client, child)) => {
                        *lock(&instance.child) = child;
                        tokio::spawn(watch(Arc::downgrade(shared), key, instance.clone(), client.clone(), cx.clone()));
                        Ok(client)
                    }
                    Err(e) => Err(e),
                }
            })
            .await
            .clone();
        match opened {
            Ok(client) if !client.is_closed() => Ok(client),
            Ok(_) => {
                self.forget(key, &instance);
                Err(UpstreamError::Lost {
                    server: shared.config.name.clone(),
                    reason: "this session's instance ended".into(),
                })
            }
            Err(reason) => {
                self.forget(key, &instance);
                Err(UpstreamError::Unavailable {
                    server: shared.config.name.clone(),
                    state: "not started",
                    reason: Some(reason),
                })
            }
        }
    }

    fn forget(&self, key: ConnectionId, instance: &Arc<Instance>) {
        let mut map = lock(&self.map);
        if map.get(&key).is_some_and(|i| Arc::ptr_eq(i, instance)) {
            map.remove(&key);
        }
    }

    /// Closes every instance (the upstream is stopping).
    pub(super) async fn close_all(&self) {
        let all: Vec<Arc<Instance>> = lock(&self.map).drain().map(|(_, i)| i).collect();
        futures_util::future::join_all(all.iter().map(|i| close(i))).await;
    }
}

async fn close(instance: &Instance) {
    if let Some(Ok(client)) = instance.opened.get() {
        let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
    }
    let child = lock(&instance.child).take();
    if let Some(child) = child {
        let _ = child.shutdown().await;
    }
}

/// Closes `instance` when its downstream session ends, when it goes unused for the idle
/// timeout, when its upstream connection ends, or when the upstream stops.
async fn watch(
    shared: std::sync::Weak<Shared>,
    key: ConnectionId,
    instance: Arc<Instance>,
    client: Arc<Client>,
    cx: RequestContext,
) {
    let Some(s) = shared.upgrade() else { return };
    let idle = s.config.idle_timeout;
    let stop = s.stop.clone();
    drop(s);
    let idle_check = async {
        loop {
            let since = lock(&instance.last_used).elapsed();
            if since >= idle {
                return;
            }
            tokio::time::sleep(idle - since).await;
        }
    };
    tokio::select! {
        () = cx.connection_closed() => {}
        () = idle_check => {}
        () = client.closed() => {}
        () = stop.cancelled() => {}
    }
    if let Some(s) = shared.upgrade() {
        s.instances.forget(key, &instance);
    }
    close(&instance).await;
}

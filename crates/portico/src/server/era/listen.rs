//! Notifications to the client: the stateless era's `subscriptions/listen` (a request that
//! lasts as long as the client listens), and the forwarding of list changes and resource
//! updates to a handshake-era connection (from `initialize` on).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use portico_schema::{ErrorObject, META_SUBSCRIPTION_ID, Meta, SubscriptionsListenRequestParams, methods};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Era, EraLayer, parse};
use crate::rpc::{IncomingRequest, Peer, Reply};
use crate::server::{Event, tasks};
use crate::sync::lock;

impl EraLayer {
    /// `subscriptions/listen`: acknowledge, then forward the requested notifications until the
    /// client cancels or the connection closes.
    pub(super) async fn listen(self: Arc<Self>, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
        let p: SubscriptionsListenRequestParams = parse(req.params.as_deref())?;
        let caps = self.server.capabilities();
        let mut honored = p.notifications.clone();
        let list_changed = |c: Option<bool>| c == Some(true);
        honored.tools_list_changed =
            honored.tools_list_changed.filter(|_| caps.tools.as_ref().is_some_and(|t| list_changed(t.list_changed)));
        honored.prompts_list_changed = honored
            .prompts_list_changed
            .filter(|_| caps.prompts.as_ref().is_some_and(|t| list_changed(t.list_changed)));
        honored.resources_list_changed = honored
            .resources_list_changed
            .filter(|_| caps.resources.as_ref().is_some_and(|t| list_changed(t.list_changed)));
        honored.resource_subscriptions = honored
            .resource_subscriptions
            .filter(|_| caps.resources.as_ref().is_some_and(|t| t.subscribe == Some(true)));
        // Only what this server delivers is acknowledged: unknown kinds are dropped. Task
        // status (the tasks extension) needs the extension declared, and covers known tasks.
        let task_ids = honored.extra.remove("taskIds");
        honored.extra.clear();
        let mut tasks_watched = HashSet::new();
        if let Some(ids) = task_ids {
            if !tasks::declared(&era.caps) {
                return Err(ErrorObject::missing_client_capability(tasks::required_capabilities()));
            }
            let ids: Vec<String> = serde_json::from_value(ids)
                .map_err(|_| ErrorObject::invalid_params("notifications.taskIds must be an array of task ids"))?;
            if self.server.offers().tasks.load(Ordering::Relaxed) {
                let mut agreed = Vec::new();
                for id in ids {
                    if !tasks_watched.contains(&id) && self.server.tasks().get(&id).is_ok() {
                        tasks_watched.insert(id.clone());
                        agreed.push(id);
                    }
                }
                honored.extra.insert("taskIds".to_owned(), serde_json::json!(agreed));
            }
        }
        let sub_id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
        let mut meta = Meta::new();
        meta.insert(META_SUBSCRIPTION_ID.to_owned(), sub_id);
        let ack = portico_schema::SubscriptionsAcknowledgedNotificationParams::new(req.id.clone(), honored.clone());
        let mut events = self.server.subscribe_events();
        peer.notify(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, Some(&ack))
            .await
            .map_err(|_| ErrorObject::internal_error("connection closed"))?;
        let uris: HashSet<String> = honored.resource_subscriptions.clone().unwrap_or_default().into_iter().collect();
        let _watching = Watching::start(&self.server, &uris);
        let params = serde_json::json!({ "_meta": meta });
        loop {
            // A client that went away (stdin closed) ends its subscription: nothing else would.
            let received = tokio::select! {
                r = events.recv() => r,
                () = peer.gone() => break,
            };
            let event = match received {
                Ok(e) => e,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Event::ToolsChanged,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let (method, extra) = match event {
                Event::ToolsChanged if honored.tools_list_changed == Some(true) => {
                    (methods::NOTIFICATION_TOOLS_LIST_CHANGED, None)
                }
                Event::PromptsChanged if honored.prompts_list_changed == Some(true) => {
                    (methods::NOTIFICATION_PROMPTS_LIST_CHANGED, None)
                }
                Event::ResourcesChanged if honored.resources_list_changed == Some(true) => {
                    (methods::NOTIFICATION_RESOURCES_LIST_CHANGED, None)
                }
                Event::ResourceUpdated(uri) if uris.contains(&*uri) => {
                    (methods::NOTIFICATION_RESOURCES_UPDATED, Some(uri))
                }
                Event::TaskChanged(id) if tasks_watched.contains(&*id) => {
                    let Ok(task) = self.server.tasks().get(&id) else { continue };
                    if peer.notify(methods::NOTIFICATION_TASKS, Some(&task.notification(meta.clone()))).await.is_err() {
                        break;
                    }
                    continue;
                }
                _ => continue,
            };
            let mut p = params.clone();
            if let Some(uri) = extra {
                p["uri"] = Value::String(uri.to_string());
            }
            if peer.notify(method, Some(&p)).await.is_err() {
                break;
            }
        }
        self.finish(portico_schema::SubscriptionsListenResult::new(req.id.clone()), &era)
    }

    /// Forwards list_changed and resource updates to a handshake-era connection.
    pub(super) fn start_forwarding(&self, peer: Peer) {
        if self.forwarding.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut events = self.server.subscribe_events();
        let subs = self.subscriptions.clone();
        let closed: CancellationToken = peer.closed_token().clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = closed.cancelled() => return,
                    e = events.recv() => e,
                };
                let (method, uri) = match event {
                    Ok(Event::ToolsChanged) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        (methods::NOTIFICATION_TOOLS_LIST_CHANGED, None)
                    }
                    Ok(Event::PromptsChanged) => (methods::NOTIFICATION_PROMPTS_LIST_CHANGED, None),
                    Ok(Event::ResourcesChanged) => (methods::NOTIFICATION_RESOURCES_LIST_CHANGED, None),
                    Ok(Event::ResourceUpdated(uri)) => {
                        if !lock(&subs).contains(&*uri) {
                            continue;
                        }
                        (methods::NOTIFICATION_RESOURCES_UPDATED, Some(uri))
                    }
                    // Tasks are a 2026-07-28 extension.
                    Ok(Event::TaskChanged(_)) => continue,
                    Err(_) => return,
                };
                let sent = match uri {
                    Some(uri) => peer.notify(method, Some(&serde_json::json!({ "uri": &*uri }))).await,
                    None => peer.notify::<Value>(method, None).await,
                };
                if sent.is_err() {
                    return;
                }
            }
        });
    }
}

/// A listen's resource subscriptions, told to the server's hook at the start and, however the
/// listen ends, at the end.
struct Watching<'a> {
    server: &'a crate::server::Server,
    uris: &'a HashSet<String>,
}

impl<'a> Watching<'a> {
    fn start(server: &'a crate::server::Server, uris: &'a HashSet<String>) -> Self {
        for uri in uris {
            server.subscription_changed(uri, true);
        }
        Watching { server, uris }
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        for uri in self.uris {
            self.server.subscription_changed(uri, false);
        }
    }
}

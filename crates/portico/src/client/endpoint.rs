//! The client's receiving side: answers handshake-era server requests and routes notifications.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use portico_schema::{
    CreateMessageRequestParams, ElicitRequestParams, EmptyResult, ErrorObject, LoggingMessageNotificationParams,
    META_SUBSCRIPTION_ID, RequestId, ResourceUpdatedNotificationParams, SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams, methods,
};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::cache::ResultCache;
use super::handler::ClientHandler;
use crate::rpc::{Endpoint, Handled, IncomingRequest, Peer, Reply};
use crate::sync::lock;

pub(crate) struct ClientEndpoint {
    pub handler: Arc<dyn ClientHandler>,
    pub cache: ResultCache,
    acks: Mutex<HashMap<RequestId, oneshot::Sender<SubscriptionFilter>>>,
}

impl ClientEndpoint {
    pub(crate) fn new(handler: Arc<dyn ClientHandler>) -> Self {
        ClientEndpoint { handler, cache: ResultCache::default(), acks: Mutex::new(HashMap::new()) }
    }

    pub(crate) fn expect_ack(&self, id: RequestId) -> oneshot::Receiver<SubscriptionFilter> {
        let (tx, rx) = oneshot::channel();
        lock(&self.acks).insert(id, tx);
        rx
    }
}

fn encode<R: Serialize>(r: &R) -> Reply {
    serde_json::to_vec(r)
        .map(crate::rpc::ResultBytes::from)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", |p| p.get()))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

impl Endpoint for ClientEndpoint {
    fn call(self: Arc<Self>, req: IncomingRequest, _peer: Peer) -> Handled {
        Handled::Later(
            async move {
                let params = req.params.as_deref();
                match &*req.method {
                    methods::PING => encode(&EmptyResult::new()),
                    methods::SAMPLING_CREATE_MESSAGE => {
                        let p: CreateMessageRequestParams = parse(params)?;
                        encode(&self.handler.create_message(p).await?)
                    }
                    methods::ELICITATION_CREATE => {
                        let p: ElicitRequestParams = parse(params)?;
                        encode(&self.handler.elicit(p).await?)
                    }
                    methods::ROOTS_LIST => encode(&self.handler.list_roots().await?),
                    m => Err(ErrorObject::method_not_found(m)),
                }
            }
            .boxed(),
        )
    }

    fn notify(&self, method: &str, params: Option<&RawValue>, _peer: &Peer) {
        match method {
            methods::NOTIFICATION_MESSAGE => {
                if let Ok(p) = parse::<LoggingMessageNotificationParams>(params) {
                    self.handler.on_log(p);
                }
            }
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => {
                self.cache.invalidate(methods::TOOLS_LIST);
                self.handler.on_tools_list_changed();
            }
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => {
                self.cache.invalidate(methods::PROMPTS_LIST);
                self.handler.on_prompts_list_changed();
            }
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                self.cache.invalidate(methods::RESOURCES_LIST);
                self.cache.invalidate(methods::RESOURCES_TEMPLATES_LIST);
                self.handler.on_resources_list_changed();
            }
            methods::NOTIFICATION_RESOURCES_UPDATED => {
                if let Ok(p) = parse::<ResourceUpdatedNotificationParams>(params) {
                    self.cache.invalidate(methods::RESOURCES_READ);
                    self.handler.on_resource_updated(&p.uri);
                }
            }
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                let Ok(p) = parse::<SubscriptionsAcknowledgedNotificationParams>(params) else { return };
                let id = p
                    .meta
                    .as_ref()
                    .and_then(|m| m.get(META_SUBSCRIPTION_ID))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                if let Some(id) = id
                    && let Some(tx) = lock(&self.acks).remove(&id)
                {
                    let _ = tx.send(p.notifications);
                }
            }
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}

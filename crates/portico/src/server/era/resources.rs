//! Resources: `resources/list`, `resources/templates/list`, `resources/read` (contents encoded
//! beforehand go into the answer as they are), and the handshake era's
//! `resources/subscribe` and `resources/unsubscribe`.

use std::sync::Arc;

use futures_util::FutureExt;
use portico_schema::{
    EmptyResult, ErrorObject, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    SubscribeRequestParams, methods,
};
use serde::Deserialize;

use super::dispatch::{Call, Step};
use super::encode::encode;
use super::{Era, EraLayer, parse};
use crate::rpc::{IncomingRequest, Peer, Reply};
use crate::server::HandlerError;
use crate::server::downgrade;
use crate::server::input;
use crate::server::input::RawResponses;
use crate::server::registry::ReadOutput;
use crate::sync::lock;

/// The params of `resources/read`, with the input responses left raw.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadCall {
    uri: String,
    #[serde(default)]
    input_responses: Option<RawResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

impl EraLayer {
    pub(super) fn list_resources(&self, call: Call) -> Result<Step, ErrorObject> {
        let (items, next) = self.list(call.req.params.as_deref(), |r| &r.resources)?;
        let mut r = ListResourcesResult::new(items);
        r.next_cursor = next;
        self.finish_with(r, &call.era, Some(downgrade::list_resources)).map(Step::Now)
    }

    pub(super) fn list_resource_templates(&self, call: Call) -> Result<Step, ErrorObject> {
        let (items, next) = self.list(call.req.params.as_deref(), |r| &r.templates)?;
        let mut r = ListResourceTemplatesResult::new(items);
        r.next_cursor = next;
        self.finish_with(r, &call.era, Some(downgrade::list_templates)).map(Step::Now)
    }

    /// `resources/subscribe` and `resources/unsubscribe` (handshake era): the connection's
    /// subscriptions, which [`start_forwarding`](Self::start_forwarding) reads.
    pub(super) fn subscribe(&self, call: Call) -> Result<Step, ErrorObject> {
        let p: SubscribeRequestParams = parse(call.req.params.as_deref())?;
        let subscribe = &*call.req.method == methods::RESOURCES_SUBSCRIBE;
        let changed = {
            let mut subs = lock(&self.subscriptions);
            if subscribe { subs.insert(p.uri.clone()) } else { subs.remove(&p.uri) }
        };
        if changed {
            self.server.subscription_changed(&p.uri, subscribe);
        }
        encode(&EmptyResult::new()).map(Step::Now)
    }

    pub(super) async fn read_resource(self: Arc<Self>, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
        let p: ReadCall = parse(req.params.as_deref())?;
        let found = self.server.registry().find_resource(&p.uri);
        let Some((handler, rr)) = found else {
            return Err(HandlerError::resource_not_found(&p.uri).into_error_object(era.version));
        };
        let binding = || input::binding(&req.method, &p.uri, None);
        let opened = self.input_state(&req, &era, binding, p.request_state.as_deref(), p.input_responses)?;
        let version = era.version;
        let started = self.start_handler(&req, &era, peer, opened, false, |cx, _| {
            Ok::<_, ErrorObject>(handler(rr, cx).map(move |r| r.map_err(|e| e.into_error_object(version))).boxed())
        })?;
        let round = self.round(&req, &started.own);
        let outcome = input::run_fallible(started.fut, started.state, round, binding).await;
        super::round_ended(started.own);
        match outcome? {
            input::Outcome::Done(ReadOutput::Result(r)) => self.finish(r, &era),
            input::Outcome::Done(ReadOutput::Encoded(e)) => {
                // What the era adds around the contents, from the same result with none; the
                // contents encoded beforehand go between.
                let empty = self.finish(ReadResourceResult::new(Vec::new()), &era)?;
                match e.around(&empty) {
                    Some(answer) => Ok(answer.into()),
                    None => {
                        debug_assert!(false, "a read result without a `contents` member: {empty:?}");
                        self.finish(e.read_result(), &era)
                    }
                }
            }
            input::Outcome::InputRequired(r) => self.finish(r, &era),
        }
    }
}

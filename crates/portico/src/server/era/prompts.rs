//! Prompts: `prompts/list` and `prompts/get` (required arguments checked before the handler).

use std::sync::Arc;

use futures_util::FutureExt;
use portico_schema::{ErrorObject, GetPromptResult, ListPromptsResult};

use super::dispatch::{Call, Step};
use super::tools::NamedCall;
use super::{Era, EraLayer, parse};
use crate::rpc::{IncomingRequest, Peer, Reply};
use crate::server::HandlerError;
use crate::server::downgrade;
use crate::server::input;
use crate::server::registry::Entry;

impl EraLayer {
    pub(super) fn list_prompts(&self, call: Call) -> Result<Step, ErrorObject> {
        let (items, next) = self.list(call.req.params.as_deref(), |r| &r.prompts)?;
        let mut r = ListPromptsResult::new(items);
        r.next_cursor = next;
        self.finish_with(r, &call.era, Some(downgrade::list_prompts)).map(Step::Now)
    }

    pub(super) async fn get_prompt(self: Arc<Self>, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
        let p: NamedCall<'_> = parse(req.params.as_deref())?;
        let entry = self.server.registry().prompts.get(p.name.as_ref()).filter(|e| e.enabled()).cloned();
        let Some(entry) = entry else {
            return Err(ErrorObject::invalid_params(format!("unknown prompt: {}", p.name)));
        };
        let given: std::collections::BTreeMap<String, String> = match p.arguments {
            Some(a) => serde_json::from_str(a.get())
                .map_err(|_| ErrorObject::invalid_params("prompt arguments must be an object of strings"))?,
            None => Default::default(),
        };
        for arg in entry.def.arguments.iter().flatten() {
            if arg.required == Some(true) && !given.contains_key(&arg.name) {
                return Err(ErrorObject::invalid_params(format!(
                    "missing required argument {} of prompt {}",
                    arg.name, entry.def.name
                )));
            }
        }
        let binding = || input::binding(&req.method, &p.name, p.arguments.map(|a| a.get()));
        let opened = self.input_state(&req, &era, binding, p.request_state.as_deref(), p.input_responses)?;
        let version = era.version;
        let started = self.start_handler(&req, &era, peer, opened, false, |cx, _| {
            let fut = (entry.handler)(p.arguments, cx).map_err(|e| {
                ErrorObject::invalid_params(format!("invalid arguments for prompt {}: {e}", entry.def.name))
            })?;
            Ok::<_, ErrorObject>(
                fut.map(move |r: Result<GetPromptResult, HandlerError>| r.map_err(|e| e.into_error_object(version)))
                    .boxed(),
            )
        })?;
        let round = self.round(&req, &started.own);
        let outcome = input::run_fallible(started.fut, started.state, round, binding).await;
        super::round_ended(started.own);
        match outcome? {
            input::Outcome::Done(r) => self.finish_with(r, &era, Some(downgrade::get_prompt_result)),
            input::Outcome::InputRequired(r) => self.finish(r, &era),
        }
    }
}

//! Tools: `tools/list` (its first page cached per revision) and `tools/call` (arguments
//! validated, input requests and tasks of the stateless era).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use portico_schema::{
    CallToolResult, ErrorObject, ListToolsResult, PaginatedRequestParams, ResultEnvelope, ResultType,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::dispatch::{Call, Step};
use super::{Era, EraLayer, Started, parse};
use crate::peek::ParamsPeek;
use crate::rpc::{IncomingRequest, Peer, Reply};
use crate::server::input::{self, RawResponses};
use crate::server::registry::Entry;
use crate::server::tasks::{self, TaskSupport};
use crate::server::{HandlerError, downgrade};

/// The params of `tools/call` and `prompts/get`, with the arguments left as raw JSON so the
/// handler's typed decoding reads them directly.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NamedCall<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    #[serde(default)]
    pub input_responses: Option<RawResponses>,
    #[serde(default)]
    pub request_state: Option<String>,
}

/// A `tools/call`'s params as the era's resolution read them, in the same pass as the `_meta`
/// (owned: the pass borrowed the params, which the call then owns).
#[derive(Clone)]
pub(crate) struct ParsedCall {
    name: Box<str>,
    arguments: Option<Box<RawValue>>,
    input_responses: Option<RawResponses>,
    request_state: Option<String>,
}

impl ParsedCall {
    /// What `peek` read of a tool call, when it decodes as [`NamedCall`] would decode it; `None`
    /// otherwise (a repeated member, no string `name`, an ill-typed member), and the call then
    /// decodes its params itself, reporting what is wrong in the usual order.
    pub(super) fn from_peek(p: &ParamsPeek<'_>) -> Option<ParsedCall> {
        if p.repeated {
            return None;
        }
        let name = ParamsPeek::string(p.name?)?;
        Some(ParsedCall {
            name: name.into(),
            arguments: p.arguments.filter(|a| a.get() != "null").map(ToOwned::to_owned),
            input_responses: ParamsPeek::decode(p.input_responses).ok()?,
            request_state: ParamsPeek::decode(p.request_state).ok()?,
        })
    }
}

impl EraLayer {
    pub(super) fn list_tools(&self, call: Call) -> Result<Step, ErrorObject> {
        let (params, era) = (call.req.params.as_deref(), &call.era);
        let first_page = parse::<PaginatedRequestParams>(params)?.cursor.is_none();
        let generation = {
            let cache = crate::sync::read_lock(&self.server.inner.tools_cache);
            if first_page && let Some((_, bytes)) = cache.pages.iter().find(|(v, _)| *v == era.version) {
                return Ok(Step::Now(bytes.clone().into()));
            }
            cache.generation
        };
        let (items, next) = self.list(params, |r| &r.tools)?;
        let mut r = ListToolsResult::new(items);
        r.next_cursor = next;
        let bytes = self.finish_with(r, era, Some(downgrade::list_tools))?.into_bytes();
        if first_page {
            let mut cache = crate::sync::write_lock(&self.server.inner.tools_cache);
            // The tools changed while this page was made: it may be stale, so it is not kept.
            if cache.generation == generation {
                cache.pages.push((era.version, bytes.clone()));
            }
        }
        Ok(Step::Now(bytes.into()))
    }

    /// `tools/call`. The handler's future is polled once here, with a waker that does nothing:
    /// a handler that answers at once (most do) is answered without a future for the call.
    /// Only one that waits has the rest of the call boxed, and the engine polls that at once,
    /// with the request's waker.
    pub(super) fn call_tool(
        self: Arc<Self>,
        req: IncomingRequest,
        era: Era,
        peer: Peer,
        mut parsed: Option<ParsedCall>,
    ) -> Result<Step, ErrorObject> {
        let peeked = parsed.is_some();
        let p: NamedCall<'_> = match &mut parsed {
            Some(c) => NamedCall {
                name: Cow::Borrowed(&c.name),
                arguments: c.arguments.as_deref(),
                input_responses: c.input_responses.take(),
                request_state: c.request_state.take(),
            },
            None => parse(req.params.as_deref())?,
        };
        let entry = self.server.registry().tools.get(p.name.as_ref()).filter(|e| e.enabled()).cloned();
        let Some(entry) = entry else {
            return Err(ErrorObject::invalid_params(format!("unknown tool: {}", p.name)));
        };
        // The tasks extension: only stateless-era requests that declare it get tasks.
        let task_tool = era.version.is_stateless() && entry.tasks != TaskSupport::Forbidden;
        let declared = task_tool && tasks::declared(&era.caps);
        if task_tool && !declared && entry.tasks == TaskSupport::Required {
            return Err(ErrorObject::missing_client_capability(tasks::required_capabilities()));
        }
        let binding = || input::binding(&req.method, &p.name, p.arguments.map(|a| a.get()));
        let opened = self.input_state(&req, &era, binding, p.request_state.as_deref(), p.input_responses)?;
        let eligible = declared && opened.is_some();
        // A call that may become a task gets a cancellation of its own (see `start_handler`), so the
        // task can outlive the request: cancelled with the request until then, by
        // tasks/cancel after.
        let started = self.start_handler(&req, &era, peer, opened, eligible, |cx, state| {
            if let (true, Some(s)) = (eligible, state) {
                s.task_eligible.store(true, Ordering::SeqCst);
            }
            let checked = match &entry.validator {
                Some(v) => v.check(p.arguments),
                None => Ok(()),
            };
            checked.and_then(|()| (entry.handler)(p.arguments, cx).map_err(|e| e.to_string()))
        });
        let started = match started {
            Ok(s) => s,
            Err(e) if era.version.tool_input_errors_are_results() => {
                let r = CallToolResult::error(format!("invalid arguments for tool {}: {e}", entry.def.name));
                return self.finish_tool_result(r, &era).map(Step::Now);
            }
            Err(e) => {
                return Err(ErrorObject::invalid_params(format!("invalid arguments for tool {}: {e}", entry.def.name)));
            }
        };
        let Started { mut fut, state, cancel, own } = started;
        let mut first = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut first) {
            // As `input::run` ends when the handler is ready, whatever it asked meanwhile.
            super::round_ended(own);
            return self.tool_outcome(Ok(input::Stage::Done(r)), &era, state, cancel).map(Step::Now);
        }
        // What the binding of a later round is made of, owned (see `input::binding`); only a
        // stateless call that may ask for input needs it.
        let target = match (&state, peeked) {
            (Some(_), false) => Some((Box::<str>::from(p.name.as_ref()), p.arguments.map(ToOwned::to_owned))),
            _ => None,
        };
        let this = self;
        super::dispatch::wait(async move {
            let (name, arguments) = match (&target, &parsed) {
                (Some((name, arguments)), _) => (&**name, arguments.as_deref()),
                (None, Some(c)) => (&*c.name, c.arguments.as_deref()),
                (None, None) => ("", None),
            };
            let binding = || input::binding(&req.method, name, arguments.map(|a| a.get()));
            let round = this.round(&req, &own);
            let outcome = input::run(fut, state.clone(), round, binding).await;
            super::round_ended(own);
            this.tool_outcome(outcome, &era, state, cancel)
        })
    }

    /// The end of a `tools/call`: the handler's result, an input request, or the task it
    /// became.
    fn tool_outcome(
        &self,
        outcome: Result<input::Stage<Result<crate::RelayedToolResult, HandlerError>>, ErrorObject>,
        era: &Era,
        state: Option<Arc<input::InputState>>,
        cancel: crate::rpc::Cancel,
    ) -> Reply {
        match outcome? {
            input::Stage::Done(Ok(r)) => self.finish_relayed_tool_result(r, era),
            input::Stage::Done(Err(e)) => Err(e.into_error_object(era.version)),
            input::Stage::InputRequired(r) => self.finish(r, era),
            input::Stage::Task(fut) => {
                let task = self.server.tasks().create(cancel.token().clone())?;
                if let Some(s) = &state {
                    let _ = s.task.set(task.clone());
                }
                let version = era.version;
                tasks::spawn(task.clone(), fut, move |r: Result<crate::RelayedToolResult, HandlerError>| {
                    let mut r = r.map_err(|e| e.into_error_object(version))?.into_result();
                    *r.result_type_mut() = Some(ResultType::Complete);
                    serde_json::to_string(&r)
                        .and_then(RawValue::from_string)
                        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
                });
                self.finish(task.created_result(), era)
            }
        }
    }
}

//! Step 2 of a request: the method table. Each method names the eras it exists in and what the
//! server must offer for it to exist; anything else is "method not found". The functions that
//! run the rows are direct calls (a `match`, not function pointers), so that a method answered
//! at once is inlined as it would be in one function.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::BoxFuture;
use portico_schema::{ErrorObject, methods};

use super::tools::ParsedCall;
use super::{Era, EraLayer};
use crate::rpc::{IncomingRequest, Peer, Reply, ResultBytes};

/// A request with its era, on its way to its method.
pub(super) struct Call {
    pub req: IncomingRequest,
    pub era: Era,
    pub peer: Peer,
    /// A `tools/call`'s params, when the era's resolution read them already.
    pub parsed: Option<ParsedCall>,
}

/// What a method made of a request: the answer, or the future that makes it.
pub(super) enum Step {
    Now(ResultBytes),
    Wait(BoxFuture<'static, Reply>),
}

/// The future of a method that waits, boxed at its own size.
pub(super) fn wait(fut: impl Future<Output = Reply> + Send + 'static) -> Result<Step, ErrorObject> {
    Ok(Step::Wait(Box::pin(fut)))
}

/// The eras a method exists in.
#[derive(Clone, Copy)]
enum Eras {
    Handshake,
    Stateless,
    Both,
}

/// What the server must offer for a method to exist.
#[derive(Clone, Copy)]
enum Needs {
    Nothing,
    Tools,
    Resources,
    Prompts,
    Completions,
    /// The tasks extension (some tool supports tasks).
    Tasks,
}

/// A row of the table: a method the era layer runs.
#[derive(Clone, Copy)]
enum Method {
    Ping,
    SetLevel,
    Discover,
    ListTools,
    CallTool,
    ListResources,
    ListResourceTemplates,
    ReadResource,
    Subscribe,
    ListPrompts,
    GetPrompt,
    Complete,
    Listen,
    Task,
}

/// The method table: each method, the eras it exists in, and what the server must offer for
/// it to exist. `initialize` is not in it: it is answered before the era is resolved (see
/// [`EraLayer::handle`]). What runs each row is [`EraLayer::run`].
#[inline]
fn method(name: &str) -> Option<(Method, Eras, Needs)> {
    use {Eras::*, Method::*, Needs::*};
    Some(match name {
        methods::PING => (Ping, Handshake, Nothing),
        methods::LOGGING_SET_LEVEL => (SetLevel, Handshake, Nothing),
        methods::SERVER_DISCOVER => (Discover, Stateless, Nothing),
        methods::TOOLS_LIST => (ListTools, Both, Tools),
        methods::TOOLS_CALL => (CallTool, Both, Tools),
        methods::RESOURCES_LIST => (ListResources, Both, Resources),
        methods::RESOURCES_TEMPLATES_LIST => (ListResourceTemplates, Both, Resources),
        methods::RESOURCES_READ => (ReadResource, Both, Resources),
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => (Subscribe, Handshake, Resources),
        methods::PROMPTS_LIST => (ListPrompts, Both, Prompts),
        methods::PROMPTS_GET => (GetPrompt, Both, Prompts),
        methods::COMPLETION_COMPLETE => (Complete, Both, Completions),
        methods::SUBSCRIPTIONS_LISTEN => (Listen, Stateless, Nothing),
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => (Task, Stateless, Tasks),
        _ => return None,
    })
}

impl EraLayer {
    /// Runs `call`'s method, or refuses it as not found in its era or on this server.
    #[inline]
    pub(super) fn dispatch(self: &Arc<Self>, call: Call) -> Result<Step, ErrorObject> {
        let stateless = call.era.version.is_stateless();
        let found = method(&call.req.method).filter(|(_, eras, _)| match eras {
            Eras::Handshake => !stateless,
            Eras::Stateless => stateless,
            Eras::Both => true,
        });
        let offers = self.server.offers();
        let offered = |(_, _, needs): &(Method, Eras, Needs)| match needs {
            Needs::Nothing => true,
            Needs::Tools => offers.tools.load(Ordering::Relaxed),
            Needs::Resources => offers.resources.load(Ordering::Relaxed),
            Needs::Prompts => offers.prompts.load(Ordering::Relaxed),
            Needs::Completions => offers.completions,
            Needs::Tasks => offers.tasks.load(Ordering::Relaxed),
        };
        match found.filter(offered) {
            Some((m, _, _)) => self.run(m, call),
            None => Err(ErrorObject::method_not_found(&call.req.method)),
        }
    }

    /// Runs one row of the table: methods that need no waiting answer here, the others return
    /// their future, boxed at its own size (with the request's parts as its arguments, so that
    /// its first poll does not move them again).
    #[inline]
    fn run(self: &Arc<Self>, method: Method, call: Call) -> Result<Step, ErrorObject> {
        // The futures own their era layer: the engine keeps them past this call.
        let this = || self.clone();
        match method {
            Method::Ping => self.ping(call),
            Method::SetLevel => self.set_level(call),
            Method::Discover => self.discover(call),
            Method::ListTools => self.list_tools(call),
            Method::CallTool => {
                let (this, Call { req, era, peer, parsed }) = (this(), call);
                this.call_tool(req, era, peer, parsed)
            }
            Method::ListResources => self.list_resources(call),
            Method::ListResourceTemplates => self.list_resource_templates(call),
            Method::ReadResource => {
                let (this, Call { req, era, peer, .. }) = (this(), call);
                wait(this.read_resource(req, era, peer))
            }
            Method::Subscribe => self.subscribe(call),
            Method::ListPrompts => self.list_prompts(call),
            Method::GetPrompt => {
                let (this, Call { req, era, peer, .. }) = (this(), call);
                wait(this.get_prompt(req, era, peer))
            }
            Method::Complete => self.complete(call),
            Method::Listen => {
                let (this, Call { req, era, peer, .. }) = (this(), call);
                wait(this.listen(req, era, peer))
            }
            Method::Task => self.task_method(call),
        }
    }
}

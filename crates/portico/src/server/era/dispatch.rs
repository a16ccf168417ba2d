//! Step 2 of a request: the method table. Each method names the eras it exists in, what the
//! server must offer for it to exist, and the function that runs it; anything else is
//! "method not found".

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
pub(super) enum Step<'a> {
    Now(ResultBytes),
    Wait(BoxFuture<'a, Reply>),
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

type Run = for<'a> fn(&'a EraLayer, Call) -> Result<Step<'a>, ErrorObject>;

/// One row of the table.
struct Method {
    eras: Eras,
    needs: Needs,
    run: Run,
}

/// The method table. `initialize` is not in it: it is answered before the era is resolved
/// (see [`EraLayer::handle`]).
fn method(name: &str) -> Option<Method> {
    use {Eras::*, Needs::*};
    let row = |eras, needs, run: Run| Some(Method { eras, needs, run });
    match name {
        methods::PING => row(Handshake, Nothing, EraLayer::ping),
        methods::LOGGING_SET_LEVEL => row(Handshake, Nothing, EraLayer::set_level),
        methods::SERVER_DISCOVER => row(Stateless, Nothing, EraLayer::discover),
        methods::TOOLS_LIST => row(Both, Tools, EraLayer::list_tools),
        methods::TOOLS_CALL => row(Both, Tools, |l, c| Ok(Step::Wait(Box::pin(l.call_tool(c))))),
        methods::RESOURCES_LIST => row(Both, Resources, EraLayer::list_resources),
        methods::RESOURCES_TEMPLATES_LIST => row(Both, Resources, EraLayer::list_resource_templates),
        methods::RESOURCES_READ => row(Both, Resources, |l, c| Ok(Step::Wait(Box::pin(l.read_resource(c))))),
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => row(Handshake, Resources, EraLayer::subscribe),
        methods::PROMPTS_LIST => row(Both, Prompts, EraLayer::list_prompts),
        methods::PROMPTS_GET => row(Both, Prompts, |l, c| Ok(Step::Wait(Box::pin(l.get_prompt(c))))),
        methods::COMPLETION_COMPLETE => row(Both, Completions, EraLayer::complete),
        methods::SUBSCRIPTIONS_LISTEN => row(Stateless, Nothing, |l, c| Ok(Step::Wait(Box::pin(l.listen(c))))),
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => {
            row(Stateless, Tasks, EraLayer::task_method)
        }
        _ => None,
    }
}

impl EraLayer {
    /// Runs `call`'s method, or refuses it as not found in its era or on this server.
    pub(super) fn dispatch(&self, call: Call) -> Result<Step<'_>, ErrorObject> {
        let stateless = call.era.version.is_stateless();
        let found = method(&call.req.method).filter(|m| match m.eras {
            Eras::Handshake => !stateless,
            Eras::Stateless => stateless,
            Eras::Both => true,
        });
        let offers = self.server.offers();
        let offered = |m: &Method| match m.needs {
            Needs::Nothing => true,
            Needs::Tools => offers.tools.load(Ordering::Relaxed),
            Needs::Resources => offers.resources.load(Ordering::Relaxed),
            Needs::Prompts => offers.prompts.load(Ordering::Relaxed),
            Needs::Completions => offers.completions,
            Needs::Tasks => offers.tasks.load(Ordering::Relaxed),
        };
        match found.filter(offered) {
            Some(m) => (m.run)(self, call),
            None => Err(ErrorObject::method_not_found(&call.req.method)),
        }
    }
}

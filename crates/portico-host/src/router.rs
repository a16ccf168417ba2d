//! The one call path. Every tool call, resource read and prompt get that reaches an upstream
//! through the host goes through [`crate::Host::call_tool`], [`crate::Host::read_resource`] or
//! [`crate::Host::get_prompt`], in this order:
//!
//! ```text
//! resolve (registry) → Oversight::before (policy, approval) → upstream → Oversight::after (audit)
//! ```
//!
//! [`Oversight`] is the seam: the default lets everything through and records nothing; policy,
//! approvals and the activity log plug in there, and nothing can reach an upstream around them.

use futures_util::future::BoxFuture;
use portico::schema::{CallToolResult, GetPromptResult, ReadResourceResult, Tool};
use portico::server::{ConnectionId, RequestContext};
use serde_json::Value;

use crate::registry::Origin;

/// Which kind of request a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Method {
    /// `tools/call`.
    CallTool,
    /// `resources/read`.
    ReadResource,
    /// `prompts/get`.
    GetPrompt,
}

impl Method {
    /// The MCP method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::CallTool => "tools/call",
            Method::ReadResource => "resources/read",
            Method::GetPrompt => "prompts/get",
        }
    }
}

/// One call on its way to an upstream.
#[derive(Debug)]
#[non_exhaustive]
pub struct Call<'a> {
    /// What kind.
    pub method: Method,
    /// The name (or URI) the caller used.
    pub exposed: &'a str,
    /// Where it goes.
    pub origin: &'a Origin,
    /// The tool's definition as the upstream listed it, for a tool call.
    pub tool: Option<&'a Tool>,
    /// The arguments (tool calls and prompts; `Null` for reads).
    pub arguments: &'a Value,
    /// Who is calling: the authenticated subject, or `local`.
    pub principal: &'a str,
    /// The downstream request, when the call came from a client (not from the host's own
    /// API or the CLI): its session, client, revision, and the way to ask its person.
    pub request: Option<&'a RequestContext>,
    /// When the call reached the host.
    pub started: std::time::SystemTime,
    /// How many other calls were in progress through the host when this one arrived: a hint
    /// for the activity log, which commits the record of a call that came alone at once and
    /// leaves those of many calls at a time to its batches.
    pub others_in_flight: usize,
}

impl Call<'_> {
    /// The downstream session the call came on.
    pub fn session(&self) -> Option<ConnectionId> {
        self.request.map(RequestContext::connection_id)
    }

    /// The downstream client's `name version`.
    pub fn client(&self) -> Option<String> {
        self.request.and_then(|cx| cx.client_info()).map(|i| format!("{} {}", i.name, i.version))
    }
}

/// What happened to a call.
#[derive(Debug)]
#[non_exhaustive]
pub enum Outcome<'a> {
    /// Refused before reaching the upstream.
    Refused(&'a str),
    /// The upstream answered (a tool's `isError` result included).
    Answered(Answer<'a>),
    /// The upstream could not be reached or failed.
    Failed(&'a str),
}

/// An upstream's answer, by method.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Answer<'a> {
    /// A tool's result (`is_error` may be set).
    Tool(&'a CallToolResult),
    /// A resource's contents.
    Resource(&'a ReadResourceResult),
    /// A prompt's messages.
    Prompt(&'a GetPromptResult),
    /// The downstream side's answer to an upstream's request ([`ServerRequest`]): a sampling
    /// completion, an elicitation's content, the roots.
    Client(&'a Value),
}

/// Which request an upstream makes of the host's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerMethod {
    /// `sampling/createMessage`: the upstream asks the client's model to answer.
    CreateMessage,
    /// `elicitation/create`: the upstream asks the person for input.
    Elicit,
    /// `roots/list`: the upstream asks which roots it may use.
    ListRoots,
}

impl ServerMethod {
    /// The MCP method name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMethod::CreateMessage => "sampling/createMessage",
            ServerMethod::Elicit => "elicitation/create",
            ServerMethod::ListRoots => "roots/list",
        }
    }
}

/// A request an upstream makes while a downstream call is in flight to it, on its way to that
/// call's client. It passes the same oversight as calls: policy (sampling is `ask` by
/// default), a person who may edit a sampling request and sees its completion, and the log.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServerRequest<'a> {
    /// What kind.
    pub method: ServerMethod,
    /// The upstream asking.
    pub server: &'a str,
    /// The request's params as the upstream sent them.
    pub params: &'a Value,
    /// Who made the downstream call the request belongs to.
    pub principal: &'a str,
    /// That downstream call, when there is one.
    pub request: Option<&'a RequestContext>,
    /// When the request reached the host.
    pub started: std::time::SystemTime,
    /// The client's answer is already here: a 2026-07-28 retry carries it, so the request was
    /// decided on (and put to a person, if policy said so) in the round that sent it.
    pub answered: bool,
}

/// Whether a call may go on, and the decision as the activity log records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Verdict {
    /// `None`: go on. `Some(reason)`: refused, with the reason the caller is given.
    pub refusal: Option<String>,
    /// Hold the result for a person's review before it goes back to the model.
    pub review_result: bool,
    /// The decision for the record: rule, reason, approval (channel, who, when, scope).
    pub record: Value,
    /// Params a person edited before the request goes on (a sampling request's messages).
    pub edited: Option<Value>,
}

impl Verdict {
    /// Go on, nothing to record.
    pub fn allow() -> Verdict {
        Verdict { refusal: None, review_result: false, record: Value::Null, edited: None }
    }

    /// Refuse with `reason`.
    pub fn deny(reason: impl Into<String>) -> Verdict {
        Verdict { refusal: Some(reason.into()), review_result: false, record: Value::Null, edited: None }
    }

    /// Whether the call may go on.
    pub fn is_allowed(&self) -> bool {
        self.refusal.is_none()
    }
}

/// What a person's review of a result decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Review {
    /// The result goes back to the model.
    Pass,
    /// The model gets a tool error that says the result was withheld, and why.
    Withhold(String),
}

/// A tool whose definition (description, schemas or annotations) changed at its upstream
/// since the registry last listed it, under the same name: what a "rug pull" looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolChange {
    /// The upstream server.
    pub server: String,
    /// The tool's exposed name.
    pub exposed: String,
    /// Its name at the upstream.
    pub original: String,
    /// The [`definition_digest`](crate::policy::store::definition_digest) it had.
    pub before: String,
    /// The one it has now.
    pub after: String,
    /// Its description now.
    pub description: Option<String>,
    /// What looks suspicious in it (hidden characters, its length), if anything.
    pub warnings: Vec<String>,
}

/// The hooks every call passes: before it reaches the upstream, after the upstream answered
/// (a review, when the verdict asks for one), and when it ends.
pub trait Oversight: Send + Sync + 'static {
    /// Decides whether `call` goes on (policy; may wait for a person's approval).
    fn before<'a>(&'a self, call: &'a Call<'a>) -> BoxFuture<'a, Verdict> {
        let _ = call;
        Box::pin(async { Verdict::allow() })
    }

    /// Shows `answer` to a person before it goes back, when `verdict.review_result` is set.
    fn review<'a>(&'a self, call: &'a Call<'a>, verdict: &'a Verdict, answer: Answer<'a>) -> BoxFuture<'a, Review> {
        let _ = (call, verdict, answer);
        Box::pin(async { Review::Pass })
    }

    /// Sees how `call` ended (the activity log).
    fn after<'a>(&'a self, call: &'a Call<'a>, verdict: &'a Verdict, outcome: &'a Outcome<'a>) -> BoxFuture<'a, ()> {
        let _ = (call, verdict, outcome);
        Box::pin(async {})
    }

    /// Decides whether an upstream's request goes on to the downstream side (policy; may wait
    /// for a person, who may edit it: [`Verdict::edited`]).
    fn before_server_request<'a>(&'a self, request: &'a ServerRequest<'a>) -> BoxFuture<'a, Verdict> {
        let _ = request;
        Box::pin(async { Verdict::allow() })
    }

    /// Shows the downstream side's answer to a person before it goes back to the upstream, when
    /// `verdict.review_result` is set (a sampling completion).
    fn review_server_answer<'a>(
        &'a self,
        request: &'a ServerRequest<'a>,
        verdict: &'a Verdict,
        answer: &'a Value,
    ) -> BoxFuture<'a, Review> {
        let _ = (request, verdict, answer);
        Box::pin(async { Review::Pass })
    }

    /// Sees how an upstream's request ended (the activity log).
    fn after_server_request<'a>(
        &'a self,
        request: &'a ServerRequest<'a>,
        verdict: &'a Verdict,
        outcome: &'a Outcome<'a>,
    ) -> BoxFuture<'a, ()> {
        let _ = (request, verdict, outcome);
        Box::pin(async {})
    }

    /// Sees tools that changed their definition at their upstream (the activity log records
    /// each). Called in a task of its own when the registry is rebuilt, so that clients hear
    /// of the change without waiting for it.
    fn tools_changed<'a>(&'a self, changes: &'a [ToolChange]) -> BoxFuture<'a, ()> {
        let _ = changes;
        Box::pin(async {})
    }

    /// Takes a reloaded config (new policy, new trusted servers).
    ///
    /// # Errors
    /// The new config's oversight part is invalid; the old one stays in force.
    fn reload(&self, config: &crate::config::Config) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Whether a tool is left out of `tools/list` (a denied tool policy hides).
    fn hides(&self, entry: &crate::registry::ToolEntry, trusted: bool) -> bool {
        let _ = (entry, trusted);
        false
    }

    /// Whether a tool is also left out of `principal`'s own `tools/list` (a hidden deny rule
    /// that names principals); `None` when no rule depends on the principal, so lists need no
    /// filtering per request.
    fn hides_for(&self, entry: &crate::registry::ToolEntry, principal: &str) -> Option<bool> {
        let _ = (entry, principal);
        None
    }
}

/// Lets everything through and records nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unsupervised;

impl Oversight for Unsupervised {}

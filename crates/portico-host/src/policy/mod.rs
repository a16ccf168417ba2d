//! Policy: which calls go on, which wait for a person, which are refused.
//!
//! `[[policy.rules]]` in `portico.toml` are tried in order and the first that matches decides
//! (`allow`, `ask` or `deny`); when none matches, `[policy.defaults]` does. [`Policy::compile`]
//! checks the rules once (globs and regular expressions are compiled then) and
//! [`Policy::decide`] is a pure function of the [`Request`], plus the "always allow" answers a
//! person gave earlier ([`store::AlwaysStore`]).
//!
//! ```toml
//! [policy.defaults]
//! tools = "ask"                 # a tool call no rule matched
//! trusted_read_only = "allow"   # …of a `trusted = true` server whose tool says readOnlyHint
//! resources = "allow"
//! prompts = "allow"
//! sampling = "ask"              # an upstream's sampling/createMessage
//! elicitation = "allow"         # an upstream's elicitation/create (shown with its server's name)
//!
//! [[policy.rules]]
//! name = "no-secrets"
//! server = "fs"
//! args = [{ pointer = "/path", glob = "**/.ssh/**" }]
//! decision = "deny"
//! reason = "SSH keys stay on this machine"
//!
//! [[policy.rules]]
//! tool = "*__fetch"
//! decision = "allow"
//! review_result = true          # the person sees the page before the model does
//! rate = "10/min"
//! rate_by = "principal"
//!
//! [[policy.rules]]
//! tool = "*__delete*"
//! decision = "deny"
//! hide = true                   # left out of tools/list
//! ```
//!
//! # What a rule matches
//!
//! Every condition a rule gives must hold; a rule with none matches everything.
//!
//! - `server`: a glob on the server's name in the config.
//! - `tool`: a glob on the tool's upstream name or its exposed name (either matching is
//!   enough, so renaming or re-prefixing a server does not get a tool past a rule). For
//!   `prompts/get` it is the prompt's name, for `resources/read` the resource's URI.
//!   `sampling/createMessage` and `elicitation/create` have no tool: a rule with `tool` never
//!   matches them. An upstream picks its own tool names (any server could call a tool
//!   `fs__read_file`), so an `allow` rule should also say `server`.
//! - `method`: one method or a list; any method when not given.
//! - `annotations`: each hint listed must have that value. A hint the tool does not declare
//!   has the value MCP gives it by default (`readOnlyHint` false, `destructiveHint` true,
//!   `idempotentHint` false, `openWorldHint` true). Annotations come from the server and are
//!   hints, not facts: only a `trusted` server's are worth an `allow`. Such a rule matches tool
//!   calls only.
//! - `args`: predicates on JSON pointers into the arguments, all of which must hold. They see
//!   the value as sent: `/tmp/../etc/passwd` is not normalized and `"100"` is not a number. A
//!   `deny` on arguments is therefore easy to step around by spelling a value differently; an
//!   `allow` on arguments with `ask` or `deny` below it fails safe.
//! - `principal`: a glob on the authenticated subject, `local` for stdio.
//!
//! Globs on names let `*` match any characters; globs on argument values treat `/` as a
//! separator (`*` stays within one segment, `**` crosses them).
//!
//! # "Always allow", and which decision wins
//!
//! When a person answers "always allow" for a server's tool (maybe for one principal), the
//! answer is kept in the state directory ([`store::AlwaysStore`]). It answers an `ask` and
//! nothing else: the configured rules and defaults decide first, and only when they say `ask`
//! does a matching always-rule turn the decision into `allow` (recorded in
//! [`Decision::always`]). A configured `deny` therefore always wins over a stored
//! "always allow", and the asking rule's `review_result` and `rate` still apply.

mod args;
mod defaults;
mod explain;
pub mod rate;
pub mod raw;
mod rule;
pub mod store;

use std::fmt;
use std::sync::Arc;

use portico::schema::{Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::Value;

use crate::config::ConfigError;
pub use defaults::{DefaultKind, Defaults};
pub use explain::{Explanation, Miss};
pub use rate::{Rate, RateBy, RateLimit, RateLimits};
use rule::Rule;
pub use store::{AlwaysRule, AlwaysStore, StoreError};

/// The kind of request policy decides about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Method {
    /// `tools/call`.
    CallTool,
    /// `resources/read`.
    ReadResource,
    /// `prompts/get`.
    GetPrompt,
    /// `sampling/createMessage`, from an upstream.
    CreateMessage,
    /// `elicitation/create`, from an upstream.
    Elicit,
}

impl Method {
    /// Every method, in the order above.
    pub const ALL: [Method; 5] =
        [Method::CallTool, Method::ReadResource, Method::GetPrompt, Method::CreateMessage, Method::Elicit];

    /// The MCP method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::CallTool => "tools/call",
            Method::ReadResource => "resources/read",
            Method::GetPrompt => "prompts/get",
            Method::CreateMessage => "sampling/createMessage",
            Method::Elicit => "elicitation/create",
        }
    }

    /// The method of an MCP method name.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The policy method of a call on the [`router`](crate::router) path.
    pub fn of_call(method: crate::router::Method) -> Option<Method> {
        Method::parse(method.as_str())
    }

    /// What the target of such a request is called: `tool`, `resource`, `prompt`, or `None`
    /// for requests from upstreams, which have none.
    fn target(self) -> Option<&'static str> {
        match self {
            Method::CallTool => Some("tool"),
            Method::ReadResource => Some("resource"),
            Method::GetPrompt => Some("prompt"),
            Method::CreateMessage | Method::Elicit => None,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Method::parse(&name).ok_or_else(|| serde::de::Error::custom("not an MCP method policy knows"))
    }
}

/// What a decision says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Action {
    /// Go on.
    Allow,
    /// Wait for a person's answer.
    Ask,
    /// Refuse.
    Deny,
}

impl Action {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }

    /// The action of `allow`, `ask` or `deny`.
    pub fn parse(text: &str) -> Option<Action> {
        [Action::Allow, Action::Ask, Action::Deny].into_iter().find(|a| a.as_str() == text)
    }

    /// Reads a config value, erring on `field`.
    fn from_config(text: Option<&str>, default: Action, field: &str) -> Result<Action, ConfigError> {
        match text {
            None => Ok(default),
            Some(t) => Action::parse(t)
                .ok_or_else(|| ConfigError::new("must be one of allow, ask, deny").field(field.to_owned())),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

static NO_ARGUMENTS: Value = Value::Null;

/// One request, as policy sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// What kind.
    pub method: Method,
    /// The server's name in the config (for sampling and elicitation: the server asking).
    pub server: &'a str,
    /// Whether the server is configured `trusted = true`.
    pub trusted: bool,
    /// The tool's or prompt's name at the upstream, or the resource's URI there; `""` for
    /// sampling and elicitation.
    pub name: &'a str,
    /// The name (or URI) the caller used.
    pub exposed: &'a str,
    /// The tool's annotations as its server listed them (untrusted hints).
    pub annotations: Option<&'a ToolAnnotations>,
    /// The tool's whole definition as listed, when known: a stored "always allow" bound to
    /// a definition matches only the same definition.
    pub tool: Option<&'a Tool>,
    /// The arguments (`Null` when there are none).
    pub arguments: &'a Value,
    /// Who is asking: the authenticated subject, or `local` for stdio.
    pub principal: &'a str,
}

impl<'a> Request<'a> {
    /// A request for `name` of `server`, exposed under the same name, from `local`, untrusted,
    /// without annotations or arguments.
    pub fn new(method: Method, server: &'a str, name: &'a str) -> Self {
        Request {
            method,
            server,
            trusted: false,
            name,
            exposed: name,
            annotations: None,
            tool: None,
            arguments: &NO_ARGUMENTS,
            principal: "local",
        }
    }

    /// A `tools/call` of the upstream tool `name`.
    pub fn tool(server: &'a str, name: &'a str) -> Self {
        Request::new(Method::CallTool, server, name)
    }

    /// The request a call on the [`router`](crate::router) path makes; `None` for a method
    /// policy does not know.
    pub fn of_call(call: &crate::router::Call<'a>, trusted: bool) -> Option<Self> {
        Some(Request {
            method: Method::of_call(call.method)?,
            server: &call.origin.server,
            trusted,
            name: &call.origin.name,
            exposed: call.exposed,
            annotations: call.tool.and_then(|t| t.annotations.as_ref()),
            tool: call.tool.filter(|_| call.method == crate::router::Method::CallTool),
            arguments: call.arguments,
            principal: call.principal,
        })
    }

    /// With the name the caller used.
    #[must_use]
    pub fn exposed(mut self, exposed: &'a str) -> Self {
        self.exposed = exposed;
        self
    }

    /// With the server trusted or not.
    #[must_use]
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// With the tool's annotations.
    #[must_use]
    pub fn annotations(mut self, annotations: Option<&'a ToolAnnotations>) -> Self {
        self.annotations = annotations;
        self
    }

    /// With the tool's definition as listed (and its annotations).
    #[must_use]
    pub fn with_tool(mut self, tool: Option<&'a Tool>) -> Self {
        self.tool = tool;
        self.annotations = tool.and_then(|t| t.annotations.as_ref());
        self
    }

    /// With arguments.
    #[must_use]
    pub fn arguments(mut self, arguments: &'a Value) -> Self {
        self.arguments = arguments;
        self
    }

    /// From this principal.
    #[must_use]
    pub fn principal(mut self, principal: &'a str) -> Self {
        self.principal = principal;
        self
    }
}

impl fmt::Display for Request<'_> {
    /// `tools/call of tool `read_file` (exposed as `fs__read_file`) of server `fs`, by `local``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.method)?;
        if let Some(target) = self.method.target() {
            write!(f, " of {target} `{}`", self.name)?;
            if self.exposed != self.name {
                write!(f, " (exposed as `{}`)", self.exposed)?;
            }
        }
        let from = if self.method.target().is_some() { "of" } else { "from" };
        write!(f, " {from} server `{}`, by `{}`", self.server, self.principal)
    }
}

/// Which part of the policy made a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Source {
    /// `policy.rules[index]`.
    Rule {
        /// Its place in `[[policy.rules]]`, from 0.
        index: usize,
        /// Its `name`, if it has one.
        name: Option<String>,
    },
    /// No rule matched; this default applied.
    Default {
        /// Which one.
        default: DefaultKind,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Rule { index, name: Some(name) } => write!(f, "rule `{name}` (policy.rules[{index}])"),
            Source::Rule { index, name: None } => write!(f, "policy.rules[{index}]"),
            Source::Default { default } => write!(f, "the default policy.defaults.{} (no rule matched)", default.key()),
        }
    }
}

/// What policy decided about a request, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Decision {
    /// Allow, ask or deny.
    pub action: Action,
    /// The rule or default that decided.
    pub source: Source,
    /// The rule's `reason`, shown to the person and recorded.
    pub reason: Option<String>,
    /// The result is shown to the person before it goes back to the model.
    pub review_result: bool,
    /// A denied tool is left out of `tools/list` (see [`Policy::hides`]).
    pub hide: bool,
    /// The rate limit to apply ([`RateLimits::check`]).
    pub rate: Option<RateLimit>,
    /// The id of the stored "always allow" that answered what would have been an `ask`.
    pub always: Option<String>,
}

impl Decision {
    /// The text a refused caller is given: which rule denied it, and why.
    pub fn refusal(&self) -> String {
        match &self.reason {
            Some(reason) => format!("denied by policy: {}: {reason}", self.source),
            None => format!("denied by policy: {}", self.source),
        }
    }
}

impl fmt::Display for Decision {
    /// `allow by rule `reads` (policy.rules[1]): reads are fine`, one line per extra.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.always {
            Some(id) => write!(
                f,
                "{} by the stored \"always allow\" `{id}`, which answers the ask of {}",
                self.action, self.source
            )?,
            None => write!(f, "{} by {}", self.action, self.source)?,
        }
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        if self.review_result {
            f.write_str("\n  the result is shown to the person before it reaches the model")?;
        }
        if let Some(rate) = &self.rate {
            write!(f, "\n  rate limit: {rate}")?;
        }
        if self.hide {
            f.write_str("\n  hidden from tools/list")?;
        }
        Ok(())
    }
}

/// The compiled `[policy]`: rules, defaults, and optionally the stored "always allow" answers.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    defaults: Defaults,
    store: Option<Arc<AlwaysStore>>,
}

impl Default for Policy {
    /// No rules, the documented defaults, no stored answers.
    fn default() -> Self {
        Policy { rules: Vec::new(), defaults: Defaults::default(), store: None }
    }
}

impl Policy {
    /// Checks `raw` and compiles its globs and regular expressions.
    ///
    /// # Errors
    /// The first invalid value, naming its field (`policy.rules[2].args[0].regex`); values
    /// are not quoted.
    pub fn compile(raw: &raw::RawPolicy) -> Result<Policy, ConfigError> {
        let defaults = Defaults::compile(&raw.defaults)?;
        let mut rules = Vec::with_capacity(raw.rules.len());
        for (index, r) in raw.rules.iter().enumerate() {
            let rule = Rule::compile(index, r)?;
            if let Some(name) = &rule.name
                && rules.iter().any(|other: &Rule| other.name.as_ref() == Some(name))
            {
                return Err(ConfigError::new("another rule has this name").field(format!("policy.rules[{index}].name")));
            }
            rules.push(rule);
        }
        Ok(Policy { rules, defaults, store: None })
    }

    /// The same policy, consulting `store`'s "always allow" answers (see the module docs for
    /// which decision wins).
    #[must_use]
    pub fn with_store(mut self, store: Arc<AlwaysStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The store consulted, if any.
    pub fn store(&self) -> Option<&Arc<AlwaysStore>> {
        self.store.as_ref()
    }

    /// The defaults in force.
    pub fn defaults(&self) -> &Defaults {
        &self.defaults
    }

    /// How many rules are configured.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is configured.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Decides `req`: the first matching rule, else the default; an `ask` is answered by a
    /// stored "always allow" when one matches. A store that cannot be read counts as empty
    /// (so the person is asked), with a warning in the log. The store is looked at only for an
    /// `ask`: an `allow` or a `deny` costs no file system call.
    pub fn decide(&self, req: &Request<'_>) -> Decision {
        let decision = self.decide_with(req, &[]);
        if decision.action != Action::Ask {
            return decision;
        }
        answer_ask(decision, req, &self.stored())
    }

    /// [`decide`](Self::decide) with these stored answers instead of the store's.
    pub fn decide_with(&self, req: &Request<'_>, always: &[AlwaysRule]) -> Decision {
        let decision = match self.rules.iter().find(|r| r.matches(req)) {
            Some(rule) => rule.decision(),
            None => self.defaults.decision(req),
        };
        answer_ask(decision, req, always)
    }

    /// Decides `req` and says, for every rule above the one that decided, why it did not match.
    pub fn explain(&self, req: &Request<'_>) -> Explanation {
        let always = self.stored();
        self.explain_with(req, &always)
    }

    /// [`explain`](Self::explain) with these stored answers instead of the store's.
    pub fn explain_with(&self, req: &Request<'_>, always: &[AlwaysRule]) -> Explanation {
        let mut misses = Vec::new();
        let mut decided = None;
        for rule in &self.rules {
            let mut why = Vec::new();
            if rule.check(req, Some(&mut why)) {
                decided = Some(rule.decision());
                break;
            }
            misses.push(Miss { index: rule.index, name: rule.name.clone(), why });
        }
        let decision = decided.unwrap_or_else(|| self.defaults.decision(req));
        Explanation { request: req.to_string(), decision: answer_ask(decision, req, always), misses }
    }

    /// Whether a tool is left out of `tools/list`: the first rule that could match a call of
    /// it is a `deny` with `hide = true`, or no rule could and the default for it is `deny`
    /// with `[policy.defaults] hide_denied = true`.
    ///
    /// A rule with `args` or `principal` decides only some calls of a tool, so such a rule is
    /// never a reason to hide one, and when it is the first that could match, the tool is
    /// listed (some calls of it may be allowed). Calling a hidden tool anyway is still denied
    /// by [`decide`](Self::decide).
    pub fn hides(
        &self,
        server: &str,
        tool: &str,
        exposed: &str,
        annotations: Option<&ToolAnnotations>,
        trusted: bool,
    ) -> bool {
        let req = Request::tool(server, tool).exposed(exposed).annotations(annotations).trusted(trusted);
        match self.rules.iter().find(|r| r.check_static(&req, None)) {
            Some(rule) => rule.action == Action::Deny && rule.hide && rule.args.is_empty() && rule.principal.is_none(),
            None => self.defaults.hide_denied && self.defaults.decision(&req).action == Action::Deny,
        }
    }

    /// Whether some rule hides tools from some principals only (then each principal's
    /// `tools/list` is filtered with [`hides_for`](Self::hides_for)).
    pub fn hides_by_principal(&self) -> bool {
        self.rules.iter().any(|r| r.action == Action::Deny && r.hide && r.principal.is_some())
    }

    /// Whether a tool is left out of `principal`'s `tools/list`: [`hides`](Self::hides), and
    /// also a hidden deny rule that names this principal (rules on arguments still never hide:
    /// they depend on the call).
    pub fn hides_for(
        &self,
        server: &str,
        tool: &str,
        exposed: &str,
        annotations: Option<&ToolAnnotations>,
        trusted: bool,
        principal: &str,
    ) -> bool {
        let mut req = Request::tool(server, tool).exposed(exposed).annotations(annotations).trusted(trusted);
        req.principal = principal;
        let matching =
            |r: &&rule::Rule| r.check_static(&req, None) && r.principal.as_ref().is_none_or(|p| p.is_match(principal));
        match self.rules.iter().find(matching) {
            Some(rule) => rule.action == Action::Deny && rule.hide && rule.args.is_empty(),
            None => self.defaults.hide_denied && self.defaults.decision(&req).action == Action::Deny,
        }
    }

    fn stored(&self) -> Arc<[AlwaysRule]> {
        let Some(store) = &self.store else {
            return Arc::from(Vec::new());
        };
        store.rules().unwrap_or_else(|e| {
            tracing::warn!("policy: ignoring stored \"always allow\" answers: {e}");
            Arc::from(Vec::new())
        })
    }
}

/// Turns an `ask` into an `allow` when a stored "always allow" matches; nothing else changes.
fn answer_ask(mut decision: Decision, req: &Request<'_>, always: &[AlwaysRule]) -> Decision {
    if decision.action == Action::Ask
        && let Some(rule) = always.iter().find(|a| a.matches(req))
    {
        decision.action = Action::Allow;
        decision.always = Some(rule.id.clone());
    }
    decision
}

#[cfg(test)]
mod tests {
    use portico::schema::Tool;
    use serde_json::json;

    use super::*;
    use crate::registry::Origin;
    use crate::router::{self, Call};

    #[test]
    fn a_router_call_is_a_request() {
        let origin = Origin { server: "fs".into(), name: "write_file".into() };
        let tool =
            Tool::without_arguments("fs__write_file").with_annotations(ToolAnnotations::new().with_read_only(true));
        let args = json!({"path": "/tmp/x"});
        let call = Call {
            method: router::Method::CallTool,
            exposed: "fs__write_file",
            origin: &origin,
            tool: Some(&tool),
            arguments: &args,
            principal: "alice",
            request: None,
            started: std::time::SystemTime::now(),
            others_in_flight: 0,
        };
        let req = Request::of_call(&call, true).expect("known method");
        assert_eq!(
            (req.method, req.server, req.name, req.exposed),
            (Method::CallTool, "fs", "write_file", "fs__write_file")
        );
        assert_eq!((req.trusted, req.principal, req.arguments), (true, "alice", &args));
        assert_eq!(req.annotations.and_then(|a| a.read_only_hint), Some(true));
        let d = Policy::default().decide(&req);
        assert_eq!((d.action, d.source), (Action::Allow, Source::Default { default: DefaultKind::TrustedReadOnly }));
        assert_eq!(
            req.to_string(),
            "tools/call of tool `write_file` (exposed as `fs__write_file`) of server `fs`, by `alice`"
        );
    }

    #[test]
    fn decisions_read_well() {
        let raw = raw::from_toml(
            "[[policy.rules]]\nname = \"rm\"\ntool = \"rm\"\ndecision = \"deny\"\nhide = true\nreason = \"never\"\n",
        )
        .expect("toml")
        .0;
        let p = Policy::compile(&raw).expect("compiles");
        let d = p.decide(&Request::tool("fs", "rm"));
        assert_eq!(d.to_string(), "deny by rule `rm` (policy.rules[0]): never\n  hidden from tools/list");
        assert_eq!(d.refusal(), "denied by policy: rule `rm` (policy.rules[0]): never");
        let d = p.decide(&Request::tool("fs", "ls"));
        assert_eq!(d.refusal(), "denied by policy: the default policy.defaults.tools (no rule matched)");
        assert_eq!(Action::parse("ask"), Some(Action::Ask));
        assert_eq!(Method::parse("tools/list"), None);
        assert!(!p.is_empty() && Policy::default().is_empty());
        assert_eq!(p.defaults().sampling, Action::Ask);
    }
}

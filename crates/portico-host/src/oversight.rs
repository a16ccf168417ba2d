//! [`Supervisor`]: the host's oversight — policy, rate limits, approvals and the activity log —
//! on the one call path ([`crate::router::Oversight`]).
//!
//! For each call: policy decides (configured rules first, then stored "always" answers, then
//! the defaults); a rate limit may refuse; `ask` puts the call to a person ([`Approvals`]); an
//! answer "always" is stored as a rule. Results of calls whose rule says `review_result` are
//! shown to a person before they go back. Every call, refused or not, is recorded.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use portico::server::RequestContext;

use crate::approvals::{Answer, Approvals, Choice, Kind, Pending};
use crate::audit::{Approval, AuditLog, Decision as AuditDecision, Entry, Status};
use crate::config::{ApprovalsConfig, Config};
use crate::policy::{Action, AlwaysRule, AlwaysStore, Method as PolicyMethod, Policy, RateLimits, Request};
use crate::registry::ToolEntry;
use crate::router::{Answer as Returned, Call, Outcome, Oversight, Review, ServerMethod, ServerRequest, Verdict};

/// What the supervisor decides with; replaced whole on reload.
struct Rules {
    policy: Arc<Policy>,
    trusted: HashSet<String>,
    approvals: ApprovalsConfig,
}

/// Policy, rate limits and approvals for every call through the host.
pub struct Supervisor {
    rules: RwLock<Arc<Rules>>,
    rates: RateLimits,
    approvals: Approvals,
    store: Option<Arc<AlwaysStore>>,
    /// An admin listener is serving the approvals API.
    http_attached: AtomicBool,
    /// A terminal is answering approvals.
    terminal_attached: AtomicBool,
    /// The activity log, when on.
    audit: Option<AuditLog>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").finish_non_exhaustive()
    }
}

/// Why a supervisor could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// The policy does not compile.
    #[error(transparent)]
    Policy(#[from] crate::config::ConfigError),
    /// The store of "always" answers cannot be opened.
    #[error("the store of \"always allow\" answers: {0}")]
    Store(String),
}

impl Supervisor {
    /// A supervisor for `config`: its `[policy]`, `[approvals]` and trusted servers, with the
    /// "always" answers kept in the state directory.
    ///
    /// # Errors
    /// An invalid policy, or an unusable state directory.
    pub fn new(config: &Config) -> Result<Supervisor, SupervisorError> {
        let store = AlwaysStore::open(&config.gateway.state_dir).map_err(|e| SupervisorError::Store(e.to_string()))?;
        let store = Arc::new(store);
        let rules = Self::rules(config, &store)?;
        Ok(Supervisor {
            approvals: Approvals::new(config.approvals.timeout),
            rules: RwLock::new(Arc::new(rules)),
            rates: RateLimits::new(),
            store: Some(store),
            http_attached: AtomicBool::new(false),
            terminal_attached: AtomicBool::new(false),
            audit: None,
        })
    }

    fn rules(config: &Config, store: &Arc<AlwaysStore>) -> Result<Rules, SupervisorError> {
        let policy = Policy::compile(&config.policy)?.with_store(store.clone());
        let trusted = config.servers.values().filter(|s| s.trusted).map(|s| s.name.clone()).collect();
        Ok(Rules { policy: Arc::new(policy), trusted, approvals: config.approvals.clone() })
    }

    /// Takes a reloaded config's policy, trusted servers and approval channels. Calls waiting
    /// for approval keep waiting; their answers still apply only to them.
    ///
    /// # Errors
    /// An invalid policy; the old one stays in force.
    pub fn reload(&self, config: &Config) -> Result<(), SupervisorError> {
        let Some(store) = &self.store else { return Ok(()) };
        let rules = Self::rules(config, store)?;
        *self.rules.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(rules);
        // Buckets are keyed by rule; new rules start with full buckets.
        self.rates.clear();
        Ok(())
    }

    /// Records every call in `log` from now on. With `on_failure = "fail-closed"` (the default),
    /// a log that cannot be written refuses new calls.
    #[must_use]
    pub fn with_audit(mut self, log: AuditLog) -> Supervisor {
        self.audit = Some(log);
        self
    }

    /// The activity log, when on.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    /// Says that the admin API is being served, so approvals can be answered there.
    pub fn attach_http(&self, on: bool) {
        self.http_attached.store(on, Ordering::SeqCst);
    }

    /// Says that a terminal answers approvals (`portico call` on a TTY).
    pub fn attach_terminal(&self, on: bool) {
        self.terminal_attached.store(on, Ordering::SeqCst);
    }

    /// The pending approvals, for the admin API and the web UI.
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        self.current().policy.clone()
    }

    fn current(&self) -> Arc<Rules> {
        self.rules.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A refusal while the activity log cannot be written (fail-closed).
    fn log_refusal(&self) -> Option<Verdict> {
        let log = self.audit.as_ref().filter(|log| !log.healthy())?;
        Some(Verdict::deny(format!(
            "the activity log cannot be written ({}), and calls are refused until it can",
            log.health().reason.unwrap_or_else(|| "unknown error".to_owned())
        )))
    }

    /// The decision as the log records it (`null` with the log off: nothing reads it), or a
    /// refusal when its rate limit is reached.
    fn rated(&self, decision: &crate::policy::Decision, req: &Request<'_>) -> Result<Value, Verdict> {
        let mut record = match self.audit {
            Some(_) => json!({
                "action": decision.action.as_str(),
                "source": decision.source.to_string(),
                "reason": decision.reason,
                "always": decision.always,
            }),
            None => Value::Null,
        };
        if let Err(wait) = self.rates.check(decision, req) {
            if self.audit.is_some() {
                record["action"] = json!("deny");
                record["rate_limited"] = json!(true);
            }
            let mut v = Verdict::deny(format!("rate limit reached; try again in {:.1} s", wait.as_secs_f64()));
            v.record = record;
            return Err(v);
        }
        Ok(record)
    }

    async fn decide(&self, call: &Call<'_>) -> Verdict {
        if let Some(refusal) = self.log_refusal() {
            return refusal;
        }
        let rules = self.current();
        let trusted = rules.trusted.contains(&call.origin.server);
        let Some(req) = Request::of_call(call, trusted) else {
            return Verdict::allow();
        };
        let decision = rules.policy.decide(&req);
        let mut record = match self.rated(&decision, &req) {
            Ok(record) => record,
            Err(refused) => return refused,
        };
        let mut verdict = match decision.action {
            Action::Allow => Verdict::allow(),
            Action::Deny => Verdict::deny(decision.refusal()),
            // Boxed: asking is rare, and its state would make every call's future large.
            Action::Ask => Box::pin(self.ask(call, &rules, &decision.reason, &mut record)).await,
            #[allow(unreachable_patterns)]
            _ => Verdict::deny("an unknown decision"),
        };
        verdict.review_result = decision.review_result && verdict.is_allowed();
        verdict.record = record;
        verdict
    }

    async fn ask(&self, call: &Call<'_>, rules: &Rules, reason: &Option<String>, record: &mut Value) -> Verdict {
        let session = call.session();
        // Bound to the tool as the person saw it, like "always": a changed tool asks again.
        // A tool call's answers are bound to the tool as the person sees it now.
        let tool = call.tool.filter(|_| req_method(call) == PolicyMethod::CallTool);
        let definition = tool.map(crate::policy::store::definition_digest);
        if self.approvals.session_allows(
            call.principal,
            session,
            &call.origin.server,
            call.exposed,
            definition.as_deref(),
        ) {
            record["approval"] = json!({ "channel": "session", "choice": "allow_session" });
            return Verdict::allow();
        }
        let cfg = &rules.approvals;
        let client = call.request.filter(|cx| cfg.client && cx.client_capabilities().supports_elicitation_form());
        let http = cfg.http && self.http_attached.load(Ordering::SeqCst);
        let terminal = cfg.terminal && self.terminal_attached.load(Ordering::SeqCst);
        if client.is_none() && !http && !terminal {
            return Verdict::deny(
                "this call needs a person's approval and nobody can be asked: the client cannot show a form \
                 (elicitation), and neither the admin API (`portico serve --admin`) nor a terminal is answering",
            );
        }
        // The person sees the arguments as the log keeps them: secrets as their keyed hashes.
        let mut shown = call.arguments.clone();
        if let Some(redactor) = self.audit.as_ref().and_then(AuditLog::redactor) {
            redactor.redact_arguments(&mut shown);
        }
        let mut pending = pending(call, Kind::Call, shown, reason.clone());
        pending.definition.clone_from(&definition);
        pending.warnings = tool.map(crate::registry::description_warnings).unwrap_or_default();
        match self.approvals.request(pending, client).await {
            Ok(answer) => {
                record["approval"] = approval_record(&answer);
                match answer.choice {
                    Choice::Deny => Verdict::deny(format!("denied by {} ({})", answer.who, answer.channel)),
                    Choice::AllowAlways => {
                        if let Some(store) = &self.store {
                            let mut rule = AlwaysRule::new(call.origin.server.clone(), call.origin.name.clone())
                                .method(req_method(call))
                                .principal(call.principal.to_owned());
                            // Bound to the tool as the person saw it: a changed tool asks again.
                            rule.definition = definition;
                            if let Err(e) = store.add(rule) {
                                tracing::warn!(target: "portico::policy", "cannot store the \"always\" answer: {e}");
                            }
                        }
                        Verdict::allow()
                    }
                    _ => Verdict::allow(),
                }
            }
            Err(e) => Verdict::deny(e.to_string()),
        }
    }
}

/// An answer as the activity log records it.
fn approval_record(answer: &Answer) -> Value {
    json!({
        "channel": answer.channel, "who": answer.who, "choice": answer.choice.as_str(),
        "at": answer.at.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
        "edited": answer.edited.is_some(),
    })
}

impl Supervisor {
    /// Policy for an upstream's request: sampling is `ask` by default, elicitation `allow`
    /// (it is put to the person anyway, with the server's name); `roots/list` is only recorded.
    async fn decide_server_request(&self, req: &ServerRequest<'_>) -> Verdict {
        if let Some(refusal) = self.log_refusal() {
            return refusal;
        }
        let method = match req.method {
            ServerMethod::CreateMessage => PolicyMethod::CreateMessage,
            ServerMethod::Elicit => PolicyMethod::Elicit,
            _ => return Verdict::allow(),
        };
        let rules = self.current();
        let mut preq = Request::new(method, req.server, "");
        preq.trusted = rules.trusted.contains(req.server);
        preq.arguments = req.params;
        preq.principal = req.principal;
        let decision = rules.policy.decide(&preq);
        let mut record = match self.rated(&decision, &preq) {
            Ok(record) => record,
            Err(refused) => return refused,
        };
        let mut verdict = match decision.action {
            Action::Allow => Verdict::allow(),
            Action::Deny => Verdict::deny(decision.refusal()),
            Action::Ask => self.ask_server_request(req, method, &rules, &decision.reason, &mut record).await,
            #[allow(unreachable_patterns)]
            _ => Verdict::deny("an unknown decision"),
        };
        verdict.record = record;
        verdict
    }

    async fn ask_server_request(
        &self,
        req: &ServerRequest<'_>,
        method: PolicyMethod,
        rules: &Rules,
        reason: &Option<String>,
        record: &mut Value,
    ) -> Verdict {
        let name = req.method.as_str();
        let session = req.request.map(RequestContext::connection_id);
        // A sampling request a person let through is shown again with its completion.
        let review = req.method == ServerMethod::CreateMessage;
        if req.answered {
            // Put to the person in the round that sent it; the retry brings the answer.
            record["approval"] = json!({ "channel": "earlier round", "choice": "allow_once" });
            let mut v = Verdict::allow();
            v.review_result = review;
            return v;
        }
        if self.approvals.session_allows(req.principal, session, req.server, name, None) {
            record["approval"] = json!({ "channel": "session", "choice": "allow_session" });
            return Verdict::allow();
        }
        let cfg = &rules.approvals;
        let client = req.request.filter(|cx| cfg.client && cx.client_capabilities().supports_elicitation_form());
        let http = cfg.http && self.http_attached.load(Ordering::SeqCst);
        let terminal = cfg.terminal && self.terminal_attached.load(Ordering::SeqCst);
        if client.is_none() && !http && !terminal {
            return Verdict::deny(format!(
                "server `{}` asked for {name}, which needs a person's approval, and nobody can be asked",
                req.server
            ));
        }
        let kind = if review { Kind::Sampling } else { Kind::Call };
        let pending = pending_server(req, kind, req.params.clone(), reason.clone());
        match self.approvals.request(pending, client).await {
            Ok(answer) => {
                record["approval"] = approval_record(&answer);
                match answer.choice {
                    Choice::Deny => Verdict::deny(format!("denied by {} ({})", answer.who, answer.channel)),
                    choice => {
                        if choice == Choice::AllowAlways
                            && let Some(store) = &self.store
                        {
                            let rule = AlwaysRule::new(req.server, "").method(method).principal(req.principal);
                            if let Err(e) = store.add(rule) {
                                tracing::warn!(target: "portico::policy", "cannot store the \"always\" answer: {e}");
                            }
                        }
                        let mut v = Verdict::allow();
                        v.review_result = review;
                        v.edited = answer.edited;
                        v
                    }
                }
            }
            Err(e) => Verdict::deny(e.to_string()),
        }
    }
}

fn pending_server(req: &ServerRequest<'_>, kind: Kind, arguments: Value, reason: Option<String>) -> Pending {
    let name = req.method.as_str().to_owned();
    Pending {
        id: String::new(),
        kind,
        server: req.server.to_owned(),
        exposed: name.clone(),
        original: name,
        arguments,
        reason,
        warnings: Vec::new(),
        principal: req.principal.to_owned(),
        client: req.request.and_then(|cx| cx.client_info()).map(|i| format!("{} {}", i.name, i.version)),
        session: req.request.map(|cx| cx.connection_id().get()),
        definition: None,
        requested_at: std::time::UNIX_EPOCH,
        expires_at: std::time::UNIX_EPOCH,
    }
}

fn req_method(call: &Call<'_>) -> crate::policy::Method {
    crate::policy::Method::of_call(call.method).unwrap_or(crate::policy::Method::CallTool)
}

fn pending(call: &Call<'_>, kind: Kind, arguments: Value, reason: Option<String>) -> Pending {
    Pending {
        id: String::new(),
        kind,
        server: call.origin.server.clone(),
        exposed: call.exposed.to_owned(),
        original: call.origin.name.clone(),
        arguments,
        reason,
        warnings: Vec::new(),
        principal: call.principal.to_owned(),
        client: call.client(),
        session: call.session().map(portico::server::ConnectionId::get),
        definition: None,
        requested_at: std::time::UNIX_EPOCH,
        expires_at: std::time::UNIX_EPOCH,
    }
}

impl Oversight for Supervisor {
    fn before<'a>(&'a self, call: &'a Call<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(self.decide(call))
    }

    fn review<'a>(&'a self, call: &'a Call<'a>, verdict: &'a Verdict, answer: Returned<'a>) -> BoxFuture<'a, Review> {
        let _ = verdict;
        Box::pin(async move {
            let shown = match answer {
                Returned::Tool(r) => serde_json::to_value(r),
                Returned::Resource(r) => serde_json::to_value(r),
                Returned::Prompt(r) => serde_json::to_value(r),
                #[allow(unreachable_patterns)]
                _ => Ok(Value::Null),
            }
            .unwrap_or(Value::Null);
            let rules = self.current();
            let client = call.request.filter(|_| rules.approvals.client);
            let pending = pending(call, Kind::Result, shown, Some("the rule asks to review this result".to_owned()));
            match self.approvals.request(pending, client).await {
                Ok(a) if a.choice.allows() => Review::Pass,
                Ok(a) => Review::Withhold(format!("{} ({})", a.who, a.channel)),
                Err(e) => Review::Withhold(e.to_string()),
            }
        })
    }

    fn after<'a>(&'a self, call: &'a Call<'a>, verdict: &'a Verdict, outcome: &'a Outcome<'a>) -> BoxFuture<'a, ()> {
        // With no log there is nothing to wait for, and nothing to allocate.
        let Some(log) = &self.audit else { return Box::pin(std::future::ready(())) };
        Box::pin(async move {
            let entry = entry(call, verdict, outcome);
            let appended =
                if call.others_in_flight == 0 { log.append_alone(entry).await } else { log.append(entry).await };
            if let Err(e) = appended {
                tracing::error!(target: "portico::audit", "a record could not be written: {e}");
            }
        })
    }

    fn before_server_request<'a>(&'a self, request: &'a ServerRequest<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(self.decide_server_request(request))
    }

    fn tools_changed<'a>(&'a self, changes: &'a [crate::router::ToolChange]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(log) = &self.audit else { return };
            for change in changes {
                if let Err(e) = log.append(tool_change_entry(change)).await {
                    tracing::error!(target: "portico::audit", "a record could not be written: {e}");
                }
            }
        })
    }

    fn review_server_answer<'a>(
        &'a self,
        request: &'a ServerRequest<'a>,
        verdict: &'a Verdict,
        answer: &'a Value,
    ) -> BoxFuture<'a, Review> {
        let _ = verdict;
        Box::pin(async move {
            let rules = self.current();
            let client = request.request.filter(|_| rules.approvals.client);
            let why = format!("the completion, before it goes back to server `{}`", request.server);
            let pending = pending_server(request, Kind::Result, answer.clone(), Some(why));
            match self.approvals.request(pending, client).await {
                Ok(a) if a.choice.allows() => Review::Pass,
                Ok(a) => Review::Withhold(format!("{} ({})", a.who, a.channel)),
                Err(e) => Review::Withhold(e.to_string()),
            }
        })
    }

    fn after_server_request<'a>(
        &'a self,
        request: &'a ServerRequest<'a>,
        verdict: &'a Verdict,
        outcome: &'a Outcome<'a>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(log) = &self.audit else { return };
            let mut e = base_entry(request.method.as_str(), request.request, request.started, request.principal);
            e.server = Some(request.server.to_owned());
            if !request.params.is_null() {
                e.arguments = Some(verdict.edited.clone().unwrap_or_else(|| request.params.clone()));
            }
            decided(&mut e, verdict);
            ended(&mut e, outcome);
            if let Err(err) = log.append(e).await {
                tracing::error!(target: "portico::audit", "a record could not be written: {err}");
            }
        })
    }

    fn reload(&self, config: &Config) -> Result<(), String> {
        Supervisor::reload(self, config).map_err(|e| e.to_string())
    }

    fn hides_for(&self, entry: &ToolEntry, principal: &str) -> Option<bool> {
        let rules = self.current();
        if !rules.policy.hides_by_principal() {
            return None;
        }
        let trusted = rules.trusted.contains(&entry.origin.server);
        Some(rules.policy.hides_for(
            &entry.origin.server,
            &entry.origin.name,
            &entry.tool.name,
            entry.tool.annotations.as_ref(),
            trusted,
            principal,
        ))
    }

    fn hides(&self, entry: &ToolEntry, trusted: bool) -> bool {
        let rules = self.current();
        let trusted = trusted || rules.trusted.contains(&entry.origin.server);
        rules.policy.hides(
            &entry.origin.server,
            &entry.origin.name,
            &entry.tool.name,
            entry.tool.annotations.as_ref(),
            trusted,
        )
    }
}

/// The activity log's record of a call.
fn entry(call: &Call<'_>, verdict: &Verdict, outcome: &Outcome<'_>) -> Entry {
    let mut e = base_entry(call.method.as_str(), call.request, call.started, call.principal);
    e.server = Some(call.origin.server.clone());
    e.exposed = Some(call.exposed.to_owned());
    e.original = Some(call.origin.name.clone());
    if !call.arguments.is_null() {
        e.arguments = Some(call.arguments.clone());
    }
    decided(&mut e, verdict);
    ended(&mut e, outcome);
    e
}

/// The record of a tool that changed at its upstream: method `notifications/tools/list_changed`
/// (what told the gateway), the tool, its definition digests before and after as the arguments,
/// and its new description with any warnings as the result. Made by the gateway itself.
fn tool_change_entry(change: &crate::router::ToolChange) -> Entry {
    let now = std::time::SystemTime::now();
    let mut e = Entry::new(portico::schema::methods::NOTIFICATION_TOOLS_LIST_CHANGED);
    e.start = Some(now);
    e.end = Some(now);
    e.server = Some(change.server.clone());
    e.exposed = Some(change.exposed.clone());
    e.original = Some(change.original.clone());
    e.arguments = Some(json!({ "definition_before": change.before, "definition_after": change.after }));
    e.result = Some(json!({ "description": change.description, "warnings": change.warnings }));
    e
}

/// A record's who, when and protocol.
fn base_entry(method: &str, cx: Option<&RequestContext>, started: std::time::SystemTime, principal: &str) -> Entry {
    let mut e = Entry::new(method);
    e.start = Some(started);
    e.end = Some(std::time::SystemTime::now());
    e.principal = Some(principal.to_owned());
    if let Some(cx) = cx {
        e.client_name = cx.client_info().map(|i| i.name.clone());
        e.client_version = cx.client_info().map(|i| i.version.clone());
        e.session = Some(cx.connection_id().get().to_string());
        e.protocol_version = Some(cx.protocol_version().as_str().to_owned());
        e.transport = cx.network_transport().map(str::to_owned);
        e.request_id = serde_json::to_value(cx.request_id()).ok().map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        });
    }
    e
}

/// The decision, rule, reason and approval of a record.
fn decided(e: &mut Entry, verdict: &Verdict) {
    let record = &verdict.record;
    e.decision = record.get("action").and_then(Value::as_str).and_then(AuditDecision::from_name);
    e.rule = record.get("source").and_then(Value::as_str).map(str::to_owned);
    e.reason = record.get("reason").and_then(Value::as_str).map(str::to_owned);
    if let Some(a) = record.get("approval") {
        let mut approval = Approval::new(a.get("channel").and_then(Value::as_str).unwrap_or("unknown"));
        approval.by = a.get("who").and_then(Value::as_str).map(str::to_owned);
        approval.scope = a.get("choice").and_then(Value::as_str).map(|c| c.trim_start_matches("allow_").to_owned());
        approval.at =
            a.get("at").and_then(Value::as_u64).map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms));
        e.approval = Some(approval);
    }
}

/// How the request ended: status, error, result, sizes.
fn ended(e: &mut Entry, outcome: &Outcome<'_>) {
    match outcome {
        Outcome::Refused(reason) => {
            e.status = if reason.contains("within") {
                Status::Timeout
            } else if reason.contains("was cancelled") {
                Status::Cancelled
            } else {
                Status::Denied
            };
            e.error = Some(json!({ "message": reason }));
        }
        Outcome::Failed(why) => {
            e.status = if why.contains("did not answer within") {
                Status::Timeout
            } else if why.contains("was cancelled") {
                // `UpstreamError::Cancelled`: by its caller, a person, or the host stopping.
                Status::Cancelled
            } else {
                Status::Error
            };
            e.error = Some(json!({ "message": why }));
            e.error_type = Some(
                match e.status {
                    Status::Timeout => "timeout",
                    Status::Cancelled => "cancelled",
                    _ => "upstream_error",
                }
                .to_owned(),
            );
        }
        Outcome::Answered(answer) => {
            let (value, is_error, truncated) = match answer {
                Returned::Tool(r) => (
                    serde_json::to_value(r),
                    r.is_error == Some(true),
                    r.meta.as_ref().is_some_and(|m| m.contains_key(crate::TRUNCATED_META)),
                ),
                Returned::Resource(r) => (serde_json::to_value(r), false, false),
                Returned::Prompt(r) => (serde_json::to_value(r), false, false),
                Returned::Client(v) => (Ok((*v).clone()), false, false),
                #[allow(unreachable_patterns)]
                _ => (Ok(Value::Null), false, false),
            };
            if let Ok(v) = value {
                e.response_bytes = Some(crate::audit::record::json_len(&v) as u64);
                e.result = Some(v);
            }
            if is_error {
                e.status = Status::Error;
                e.error_type = Some("tool_error".to_owned());
            }
            e.truncated = truncated;
        }
        #[allow(unreachable_patterns)]
        _ => {}
    }
}

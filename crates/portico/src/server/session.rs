//! The era layer: one connection's state, the dual-era rules that pick the era of each request,
//! capability gating, and the dispatch of every server method to the registry.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use portico_schema::{
    ALL_VERSIONS, CallToolResult, ClientCapabilities, CompleteRequestParams, CompletionReference, DiscoverResult,
    EmptyResult, ErrorObject, GetPromptResult, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    META_SERVER_INFO, META_SUBSCRIPTION_ID, Meta, PaginatedRequestParams, ProgressToken, ProtocolVersion,
    ReadResourceResult, ResultEnvelope, ResultType, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionsListenRequestParams, methods,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::context::{Inner as CtxInner, InputState, LEVEL_UNSET, LogGate, RequestContext};
use super::input::RawResponses;
use super::registry::{Entry, InvalidCursor, ReadOutput, Registry, page};
use super::tasks::{self, TaskSupport};
use super::{Event, Server, downgrade, input};
use crate::rpc::{Cancel, IncomingRequest, Peer, Reply, ResultBytes, Service, lock};

/// The era of one request, resolved before dispatch.
#[derive(Clone)]
pub(crate) struct Era {
    pub version: ProtocolVersion,
    pub caps: Arc<ClientCapabilities>,
    pub info: Option<Arc<Implementation>>,
    /// `_meta.progressToken` of the request.
    pub progress_token: Option<ProgressToken>,
    /// `_meta` log level of a stateless request.
    pub log_level: Option<LoggingLevel>,
}

/// Handshake-era state of a connection (set by `initialize`).
struct Handshake {
    version: ProtocolVersion,
    caps: Arc<ClientCapabilities>,
    info: Arc<Implementation>,
}

pub(crate) struct Session {
    server: Server,
    handshake: OnceLock<Handshake>,
    /// True from the arrival of `initialize` until it is answered: requests that arrived
    /// after it wait for it instead of racing it.
    initializing: tokio::sync::watch::Sender<bool>,
    log_level: Arc<AtomicU8>,
    subscriptions: Arc<Mutex<HashSet<String>>>,
    peer: OnceLock<Peer>,
    forwarding: AtomicBool,
    /// The client's capabilities and info as last sent in a stateless request's `_meta`, raw and
    /// decoded: a client sends the same ones with every request, so they are decoded once.
    last_client: Mutex<Option<Arc<SeenClient>>>,
}

/// A client's stateless `_meta` identity, kept to recognize it on the next request.
struct SeenClient {
    caps_raw: Box<str>,
    caps: Arc<ClientCapabilities>,
    info_raw: Option<Box<str>>,
    info: Option<Arc<Implementation>>,
}

/// The params of `tools/call` and `prompts/get`, with the arguments left as raw JSON so the
/// handler's typed decoding reads them directly.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamedCall<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(default)]
    input_responses: Option<RawResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// The params of a 2026-07-28 `tools/call` with its `_meta`, decoded in one pass: the era layer
/// reads the `_meta` and keeps the rest (owned, as [`ParsedCall`]) for the call, instead of
/// skipping the `_meta` again in a second pass (≈ 8 % of such an echo's instructions). The same
/// members as [`NamedCall`] plus `_meta`, on purpose not one struct: with the `_meta` member,
/// the handshake era's parse of every call costs 1 % more (measured, `bench/gate.sh`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallPeek<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<PeekMeta<'a>>,
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(default)]
    input_responses: Option<RawResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// What [`CallPeek`] read besides the `_meta`.
struct ParsedCall {
    name: Box<str>,
    arguments: Option<Box<RawValue>>,
    input_responses: Option<RawResponses>,
    request_state: Option<String>,
}

impl<'a> CallPeek<'a> {
    fn split(self) -> (Option<PeekMeta<'a>>, ParsedCall) {
        let call = ParsedCall {
            name: self.name.into(),
            arguments: self.arguments.map(ToOwned::to_owned),
            input_responses: self.input_responses,
            request_state: self.request_state,
        };
        (self.meta, call)
    }
}

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

/// Only the `_meta` of a request's params; everything else is skipped unparsed.
#[derive(Deserialize)]
struct MetaPeek<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<PeekMeta<'a>>,
}

/// The members of `_meta` the era layer reads; capabilities and client info stay raw until
/// they differ from the last ones seen.
#[derive(Deserialize)]
pub(crate) struct PeekMeta<'a> {
    #[serde(rename = "progressToken", default)]
    pub(crate) progress_token: Option<ProgressToken>,
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    pub(crate) protocol_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    pub(crate) client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    pub(crate) client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    pub(crate) log_level: Option<LoggingLevel>,
}

/// The era of a stateless request, resolved by a transport that decoded the request's `_meta`
/// already (in the request's extensions): the era layer does not decode it again. Dropped
/// when middleware replaces the params.
#[derive(Clone)]
pub(crate) struct ResolvedEra(pub(crate) Era);

/// False only when `json` cannot contain a `_meta` member.
pub(crate) fn may_hold_meta(json: &str) -> bool {
    // Underscores and backslashes are rare in params: look at each instead of running a
    // substring search (whose set-up costs more than the scan on short params).
    let b = json.as_bytes();
    memchr::memchr2_iter(b'_', b'\\', b).any(|i| match b[i] {
        b'_' => b[i..].starts_with(b"_meta"),
        _ => b.get(i + 1) == Some(&b'u'),
    })
}

fn parse<'a, T: Deserialize<'a>>(params: Option<&'a RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", |p| p.get()))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

impl Session {
    pub(crate) fn new(server: Server) -> Self {
        Session {
            server,
            handshake: OnceLock::new(),
            initializing: tokio::sync::watch::Sender::new(false),
            log_level: Arc::new(AtomicU8::new(LEVEL_UNSET)),
            subscriptions: Arc::new(Mutex::new(HashSet::new())),
            peer: OnceLock::new(),
            forwarding: AtomicBool::new(false),
            last_client: Mutex::new(None),
        }
    }

    /// The revision negotiated by `initialize`, if it happened.
    #[cfg(feature = "http-server")]
    pub(crate) fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.handshake.get().map(|h| h.version)
    }

    pub(crate) fn attach(&self, peer: Peer) {
        let _ = self.peer.set(peer);
    }

    pub(super) async fn handle(self: Arc<Self>, mut req: IncomingRequest, peer: Peer) -> Reply {
        let resolved = req.extensions.remove::<ResolvedEra>();
        let params = req.params.as_deref();
        let mut call = None;
        let peek: MetaPeek = match params {
            // The transport resolved the era from `_meta` already.
            _ if resolved.is_some() => MetaPeek { meta: None },
            // A `_meta` key is spelled `_meta` or with escapes; without either there is none,
            // and the params need not be scanned twice.
            Some(p) if !may_hold_meta(p.get()) => MetaPeek { meta: None },
            // A tool call's params are read once, `_meta` and all. When they do not decode, the
            // usual path below reports what is wrong, in its usual order.
            Some(p) if &*req.method == methods::TOOLS_CALL => match serde_json::from_str::<CallPeek<'_>>(p.get()) {
                Ok(c) => {
                    let (meta, parsed) = c.split();
                    call = Some(parsed);
                    MetaPeek { meta }
                }
                Err(_) => parse(params)?,
            },
            _ => parse(params)?,
        };
        let modern = resolved.is_some() || peek.meta.as_ref().is_some_and(|m| m.protocol_version.is_some());
        if &*req.method == methods::INITIALIZE {
            if modern {
                // A request carrying the stateless `_meta` is a 2026-07-28 request, and that
                // revision has no `initialize`: it falls through to "method not found". It
                // creates no session, so it must not hold up what was pipelined behind it.
                if self.handshake.get().is_none() {
                    self.initializing.send_replace(false);
                }
            } else {
                let r = self.initialize(params, &peer);
                self.initializing.send_replace(false);
                return r;
            }
        }
        if !modern && self.handshake.get().is_none() && *self.initializing.borrow() {
            // Pipelined behind initialize: belong to the session it is creating.
            let mut rx = self.initializing.subscribe();
            let _ = rx.wait_for(|busy| !busy).await;
        }
        let era = match (resolved, peek.meta) {
            (Some(ResolvedEra(era)), _) => era,
            (None, Some(meta)) if meta.protocol_version.is_some() => self.modern_era(meta)?,
            (None, other) => match self.handshake.get() {
                Some(h) => Era {
                    version: h.version,
                    caps: h.caps.clone(),
                    info: Some(h.info.clone()),
                    progress_token: other.and_then(|m| m.progress_token),
                    log_level: None,
                },
                None if &*req.method == methods::PING => return encode(&EmptyResult::new()),
                None => {
                    return Err(ErrorObject::invalid_params(format!(
                        "missing required _meta field {}: send it with every request (2026-07-28), or send initialize first",
                        portico_schema::META_PROTOCOL_VERSION
                    ))
                    .with_data(serde_json::json!({ "supported": supported_versions() })));
                }
            },
        };
        // The answers that need no waiting are made here; only the branches that wait are
        // futures, each boxed at its own size. The future of every request (this one, boxed by
        // the engine) so stays small: one async fn for all methods was 2.8 KB, allocated and
        // copied for each echo.
        match self.dispatch(req, era, peer, call)? {
            Step::Now(bytes) => Ok(bytes),
            Step::Wait(fut) => fut.await,
        }
    }

    /// The era of a stateless request, from its `_meta`.
    pub(crate) fn modern_era(&self, meta: PeekMeta<'_>) -> Result<Era, ErrorObject> {
        let version = meta.protocol_version.as_deref().unwrap_or_default();
        let v = match ProtocolVersion::parse(version) {
            Some(v) if v.is_stateless() => v,
            _ => return Err(ErrorObject::unsupported_protocol_version(version, supported_versions())),
        };
        let Some(caps_raw) = meta.client_capabilities else {
            return Err(ErrorObject::invalid_params(format!(
                "missing required _meta field {}",
                portico_schema::META_CLIENT_CAPABILITIES
            )));
        };
        let info_raw = meta.client_info.map(RawValue::get);
        let last = lock(&self.last_client).clone();
        let seen = match last {
            Some(s) if *s.caps_raw == *caps_raw.get() && s.info_raw.as_deref() == info_raw => s,
            _ => {
                let invalid = |what: &str, e: serde_json::Error| {
                    ErrorObject::invalid_params(format!("invalid params: _meta {what}: {e}"))
                };
                let caps: ClientCapabilities = serde_json::from_str(caps_raw.get())
                    .map_err(|e| invalid(portico_schema::META_CLIENT_CAPABILITIES, e))?;
                let info = match info_raw {
                    Some(raw) => Some(Arc::new(
                        serde_json::from_str::<Implementation>(raw).map_err(|e| invalid("clientInfo", e))?,
                    )),
                    None => None,
                };
                let s = Arc::new(SeenClient {
                    caps_raw: caps_raw.get().into(),
                    caps: Arc::new(caps),
                    info_raw: info_raw.map(Into::into),
                    info,
                });
                *lock(&self.last_client) = Some(s.clone());
                s
            }
        };
        Ok(Era {
            version: v,
            caps: seen.caps.clone(),
            info: seen.info.clone(),
            progress_token: meta.progress_token,
            log_level: meta.log_level,
        })
    }

    fn initialize(&self, params: Option<&RawValue>, peer: &Peer) -> Reply {
        let p: InitializeRequestParams = parse(params)?;
        let version = ProtocolVersion::negotiate_handshake(&p.protocol_version);
        let hs = Handshake { version, caps: Arc::new(p.capabilities), info: Arc::new(p.client_info) };
        if self.handshake.set(hs).is_err() {
            return Err(ErrorObject::invalid_request("the connection is already initialized"));
        }
        debug!(%version, "initialized");
        // Server-initiated messages go to the connection's own stream (over HTTP, the GET
        // stream), not to the stream of the initialize request.
        self.start_forwarding(self.peer.get().cloned().unwrap_or_else(|| peer.clone()));
        let inner = &self.server.inner;
        let mut caps = self.server.capabilities();
        // Extensions (the tasks extension) are served to 2026-07-28 requests only.
        caps.extensions = None;
        let mut r = InitializeResult::new(version.as_str(), caps, inner.info.clone());
        r.instructions = inner.instructions.clone();
        encode_for(&r, version, Some(downgrade::initialize_result))
    }

    /// `call`: a tool call's params, when [`Session::handle`] decoded them already.
    fn dispatch(
        &self,
        req: IncomingRequest,
        era: Era,
        peer: Peer,
        call: Option<ParsedCall>,
    ) -> Result<Step<'_>, ErrorObject> {
        let offers = self.server.offers();
        let (tools, resources, prompts) = (
            offers.tools.load(Ordering::Relaxed),
            offers.resources.load(Ordering::Relaxed),
            offers.prompts.load(Ordering::Relaxed),
        );
        let modern = era.version.is_stateless();
        let params = req.params.as_deref();
        let gate = |present: bool| if present { Ok(()) } else { Err(ErrorObject::method_not_found(&req.method)) };
        match &*req.method {
            methods::PING if !modern => encode(&EmptyResult::new()).map(Step::Now),
            methods::LOGGING_SET_LEVEL if !modern => {
                let p: SetLevelRequestParams = parse(params)?;
                self.log_level.store(p.level as u8, Ordering::Relaxed);
                encode(&EmptyResult::new()).map(Step::Now)
            }
            methods::SERVER_DISCOVER if modern => {
                let inner = &self.server.inner;
                let mut r = DiscoverResult::new(supported_versions(), self.server.capabilities());
                r.instructions = inner.instructions.clone();
                self.finish(r, &era).map(Step::Now)
            }
            methods::TOOLS_LIST => {
                gate(tools)?;
                self.list_tools(params, &era).map(Step::Now)
            }
            methods::TOOLS_CALL => {
                gate(tools)?;
                Ok(Step::Wait(Box::pin(self.call_tool(req, era, peer, call))))
            }
            methods::RESOURCES_LIST => {
                gate(resources)?;
                let (items, next) = self.list(params, |r| &r.resources)?;
                let mut r = ListResourcesResult::new(items);
                r.next_cursor = next;
                self.finish_with(r, &era, Some(downgrade::list_resources)).map(Step::Now)
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                gate(resources)?;
                let (items, next) = self.list(params, |r| &r.templates)?;
                let mut r = ListResourceTemplatesResult::new(items);
                r.next_cursor = next;
                self.finish_with(r, &era, Some(downgrade::list_templates)).map(Step::Now)
            }
            methods::RESOURCES_READ => {
                gate(resources)?;
                Ok(Step::Wait(Box::pin(self.read_resource(req, era, peer))))
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE if !modern => {
                gate(resources)?;
                let p: SubscribeRequestParams = parse(params)?;
                let mut subs = lock(&self.subscriptions);
                if &*req.method == methods::RESOURCES_SUBSCRIBE {
                    subs.insert(p.uri);
                } else {
                    subs.remove(&p.uri);
                }
                encode(&EmptyResult::new()).map(Step::Now)
            }
            methods::PROMPTS_LIST => {
                gate(prompts)?;
                let (items, next) = self.list(params, |r| &r.prompts)?;
                let mut r = ListPromptsResult::new(items);
                r.next_cursor = next;
                self.finish_with(r, &era, Some(downgrade::list_prompts)).map(Step::Now)
            }
            methods::PROMPTS_GET => {
                gate(prompts)?;
                Ok(Step::Wait(Box::pin(self.get_prompt(req, era, peer))))
            }
            methods::COMPLETION_COMPLETE => {
                gate(offers.completions)?;
                let p: CompleteRequestParams = parse(params)?;
                self.check_completion_ref(&p.r#ref)?;
                let handler = self
                    .server
                    .registry()
                    .completion
                    .clone()
                    .ok_or_else(|| ErrorObject::method_not_found(&req.method))?;
                let cx = self.context(&req, &era, peer, None, req.cancel.clone());
                let version = era.version;
                let fut = handler(p, cx);
                Ok(Step::Wait(Box::pin(async move {
                    let r = fut.await.map_err(|e| e.into_error_object(version))?;
                    self.finish(r, &era)
                })))
            }
            methods::SUBSCRIPTIONS_LISTEN if modern => Ok(Step::Wait(Box::pin(self.listen(req, era, peer)))),
            methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
                if modern && offers.tasks.load(Ordering::Relaxed) =>
            {
                self.task_method(&req, &era).map(Step::Now)
            }
            _ => Err(ErrorObject::method_not_found(&req.method)),
        }
    }

    /// One page of the enabled entries of one registry map, by the request's cursor.
    fn list<E: Entry>(
        &self,
        params: Option<&RawValue>,
        pick: impl Fn(&Registry) -> &BTreeMap<String, Arc<E>>,
    ) -> Result<(Vec<E::Def>, Option<String>), ErrorObject> {
        let p: PaginatedRequestParams = parse(params)?;
        let reg = self.server.registry();
        let items = pick(&reg).iter().filter(|(_, e)| e.enabled());
        let (items, next) = page(items, p.cursor.as_deref(), self.server.inner.config.page_size)
            .map_err(|InvalidCursor| ErrorObject::invalid_params("invalid cursor"))?;
        Ok((items.into_iter().map(|e| e.def().clone()).collect(), next))
    }

    fn check_completion_ref(&self, r: &CompletionReference) -> Result<(), ErrorObject> {
        let reg = self.server.registry();
        let known = match r {
            CompletionReference::Prompt(p) => reg.prompts.contains_key(&p.name),
            CompletionReference::ResourceTemplate(t) => {
                reg.templates.contains_key(&t.uri) || reg.resources.contains_key(&t.uri)
            }
            _ => false,
        };
        if known {
            Ok(())
        } else {
            Err(ErrorObject::invalid_params("completion reference names no prompt or resource template of this server"))
        }
    }

    fn list_tools(&self, params: Option<&RawValue>, era: &Era) -> Reply {
        let first_page = parse::<PaginatedRequestParams>(params)?.cursor.is_none();
        let generation = {
            let cache = crate::rpc::read_lock(&self.server.inner.tools_cache);
            if first_page && let Some((_, bytes)) = cache.pages.iter().find(|(v, _)| *v == era.version) {
                return Ok(bytes.clone());
            }
            cache.generation
        };
        let (items, next) = self.list(params, |r| &r.tools)?;
        let mut r = ListToolsResult::new(items);
        r.next_cursor = next;
        let bytes = self.finish_with(r, era, Some(downgrade::list_tools))?;
        if first_page {
            let mut cache = crate::rpc::write_lock(&self.server.inner.tools_cache);
            // The tools changed while this page was made: it may be stale, so it is not kept.
            if cache.generation == generation {
                cache.pages.push((era.version, bytes.clone()));
            }
        }
        Ok(bytes)
    }

    async fn call_tool(&self, req: IncomingRequest, era: Era, peer: Peer, mut parsed: Option<ParsedCall>) -> Reply {
        let p: NamedCall<'_> = match &mut parsed {
            Some(c) => NamedCall {
                name: std::borrow::Cow::Borrowed(&c.name),
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
        let state = self.input_state(&era, binding, p.request_state.as_deref(), p.input_responses)?;
        let eligible = declared && state.is_some();
        // A call that may become a task gets a cancellation of its own, so the task can
        // outlive the request: cancelled with the request until then (the guard fires when
        // this future is dropped), by tasks/cancel after.
        let (cancel, guard) = if eligible {
            let t = CancellationToken::new();
            (Cancel::from_token(t.clone()), Some(t.drop_guard()))
        } else {
            (req.cancel.clone(), None)
        };
        if let (true, Some(s)) = (eligible, &state) {
            s.task_eligible.store(true, Ordering::SeqCst);
        }
        let checked = match &entry.validator {
            Some(v) => v.check(p.arguments),
            None => Ok(()),
        };
        let cx = self.context(&req, &era, peer, state.clone(), cancel.clone());
        let fut = match checked.and_then(|()| (entry.handler)(p.arguments, cx).map_err(|e| e.to_string())) {
            Ok(fut) => fut,
            Err(e) if era.version.tool_input_errors_are_results() => {
                let r = CallToolResult::error(format!("invalid arguments for tool {}: {e}", entry.def.name));
                return self.finish_tool_result(r, &era);
            }
            Err(e) => {
                return Err(ErrorObject::invalid_params(format!("invalid arguments for tool {}: {e}", entry.def.name)));
            }
        };
        let outcome = input::run(fut, state.clone(), &self.server.inner.config.sealer, binding).await;
        if let Some(g) = guard {
            g.disarm();
        }
        match outcome? {
            input::Stage::Done(r) => self.finish_tool_result(r, &era),
            input::Stage::InputRequired(r) => self.finish(r, &era),
            input::Stage::Task(fut) => {
                let task = self.server.tasks().create(cancel.token().clone())?;
                if let Some(s) = &state {
                    let _ = s.task.set(task.clone());
                }
                tasks::spawn(task.clone(), fut, |mut r: CallToolResult| {
                    *r.result_type_mut() = Some(ResultType::Complete);
                    serde_json::to_string(&r)
                        .and_then(RawValue::from_string)
                        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
                });
                self.finish(task.created_result(), &era)
            }
        }
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: only for requests that declare the tasks
    /// extension (`-32021` otherwise), and only for tasks that exist (`-32602` otherwise).
    fn task_method(&self, req: &IncomingRequest, era: &Era) -> Reply {
        if !tasks::declared(&era.caps) {
            return Err(ErrorObject::missing_client_capability(tasks::required_capabilities()));
        }
        let params = req.params.as_deref();
        let store = self.server.tasks();
        match &*req.method {
            methods::TASKS_GET => {
                let p: tasks::TaskIdParams = parse(params)?;
                self.finish(store.get(&p.task_id)?.detailed(), era)
            }
            methods::TASKS_UPDATE => {
                let p: tasks::UpdateParams = parse(params)?;
                store.get(&p.task_id)?.update(p.input_responses.unwrap_or_default())?;
                self.finish(EmptyResult::new(), era)
            }
            _ => {
                let p: tasks::TaskIdParams = parse(params)?;
                store.get(&p.task_id)?.request_cancel();
                self.finish(EmptyResult::new(), era)
            }
        }
    }

    async fn get_prompt(&self, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
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
        let state = self.input_state(&era, binding, p.request_state.as_deref(), p.input_responses)?;
        let cx = self.context(&req, &era, peer, state.clone(), req.cancel.clone());
        let fut = (entry.handler)(p.arguments, cx).map_err(|e| {
            ErrorObject::invalid_params(format!("invalid arguments for prompt {}: {e}", entry.def.name))
        })?;
        let version = era.version;
        let fut = fut
            .map(move |r: Result<GetPromptResult, super::HandlerError>| r.map_err(|e| e.into_error_object(version)))
            .boxed();
        match input::run_fallible(fut, state, &self.server.inner.config.sealer, binding).await? {
            input::Outcome::Done(r) => self.finish_with(r, &era, Some(downgrade::get_prompt_result)),
            input::Outcome::InputRequired(r) => self.finish(r, &era),
        }
    }

    async fn read_resource(&self, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
        let p: ReadCall = parse(req.params.as_deref())?;
        let found = self.server.registry().find_resource(&p.uri);
        let Some((handler, rr)) = found else {
            return Err(super::HandlerError::resource_not_found(&p.uri).into_error_object(era.version));
        };
        let binding = || input::binding(&req.method, &p.uri, None);
        let state = self.input_state(&era, binding, p.request_state.as_deref(), p.input_responses)?;
        let cx = self.context(&req, &era, peer, state.clone(), req.cancel.clone());
        let version = era.version;
        let fut = handler(rr, cx).map(move |r| r.map_err(|e| e.into_error_object(version))).boxed();
        match input::run_fallible(fut, state, &self.server.inner.config.sealer, binding).await? {
            input::Outcome::Done(ReadOutput::Result(r)) => self.finish(r, &era),
            input::Outcome::Done(ReadOutput::Encoded(e)) => {
                // What the era adds around the contents, from the same result with none; the
                // contents encoded beforehand go between.
                let empty = self.finish(ReadResourceResult::new(Vec::new()), &era)?;
                match e.around(&empty) {
                    Some(answer) => Ok(answer),
                    None => {
                        debug_assert!(false, "a read result without a `contents` member: {empty:?}");
                        self.finish(e.read_result(), &era)
                    }
                }
            }
            input::Outcome::InputRequired(r) => self.finish(r, &era),
        }
    }

    /// `subscriptions/listen`: acknowledge, then forward the requested notifications until the
    /// client cancels or the connection closes.
    async fn listen(&self, req: IncomingRequest, era: Era, peer: Peer) -> Reply {
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

    fn input_state(
        &self,
        era: &Era,
        binding: impl FnOnce() -> Vec<u8>,
        request_state: Option<&str>,
        responses: Option<RawResponses>,
    ) -> Result<Option<Arc<InputState>>, ErrorObject> {
        if !era.version.is_stateless() {
            return Ok(None);
        }
        input::open(&self.server.inner.config.sealer, binding, request_state, responses).map(|s| Some(Arc::new(s)))
    }

    fn context(
        &self,
        req: &IncomingRequest,
        era: &Era,
        peer: Peer,
        input: Option<Arc<InputState>>,
        cancel: Cancel,
    ) -> RequestContext {
        RequestContext::new(CtxInner {
            id: req.id.clone(),
            version: era.version,
            peer,
            cancel,
            client_caps: era.caps.clone(),
            client_info: era.info.clone(),
            progress_token: era.progress_token.clone(),
            log: if era.version.is_stateless() {
                LogGate::Request(era.log_level)
            } else {
                LogGate::Session(self.log_level.clone())
            },
            input,
            server: self.server.clone(),
            last_progress: Mutex::new(None),
            close_stream: req.close_stream.clone(),
            extensions: req.extensions.clone(),
        })
    }

    /// A tool result, stamped and encoded, rewritten for an older revision only if needed.
    fn finish_tool_result(&self, r: CallToolResult, era: &Era) -> Reply {
        let down = downgrade::for_call_tool_result(&r, era.version);
        self.finish_with(r, era, down)
    }

    /// Stamps a result for its era and encodes it.
    fn finish<R: Serialize + ResultEnvelope>(&self, r: R, era: &Era) -> Reply {
        self.finish_with(r, era, None)
    }

    fn finish_with<R: Serialize + ResultEnvelope>(
        &self,
        mut r: R,
        era: &Era,
        down: Option<downgrade::Downgrade>,
    ) -> Reply {
        if era.version.is_stateless() {
            let rt = r.result_type_mut();
            if rt.is_none() {
                *rt = Some(ResultType::Complete);
            }
            let complete = *rt == Some(ResultType::Complete);
            let config = &self.server.inner.config;
            if let Some((ttl, scope)) = r.cache_mut()
                && complete
            {
                ttl.get_or_insert(config.ttl_ms);
                scope.get_or_insert(config.cache_scope);
            }
            if r.meta_mut().is_some() {
                let info = self.server.inner.info_json.clone();
                r.meta_mut().get_or_insert_with(Meta::new).insert(META_SERVER_INFO.to_owned(), info);
                return encode(&r);
            }
            // No `_meta` of its own (the usual case): splice the serverInfo encoded once.
            return encode_with_server_info(&r, &self.server.inner.info_meta);
        }
        *r.result_type_mut() = None;
        encode_for(&r, era.version, down)
    }

    /// Forwards list_changed and resource updates to a handshake-era connection.
    fn start_forwarding(&self, peer: Peer) {
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

fn supported_versions() -> Vec<String> {
    ALL_VERSIONS.iter().rev().map(|v| v.as_str().to_owned()).collect()
}

/// `{…}` → `{…,"_meta":{…serverInfo…}}` in place: `object` is a serialized JSON object without
/// `_meta` (anything else is left as it is).
fn splice_server_info(object: &mut Vec<u8>, info_meta: &[u8]) {
    if object.last() != Some(&b'}') {
        return;
    }
    object.pop();
    if object.len() > 1 {
        object.push(b',');
    }
    object.reserve(info_meta.len() + 9);
    object.extend_from_slice(b"\"_meta\":");
    object.extend_from_slice(info_meta);
    object.push(b'}');
}

/// Encodes a stateless result without `_meta` of its own, with the serverInfo `_meta` spliced
/// in (encoded once per server): one buffer, no re-encoding.
fn encode_with_server_info<R: Serialize>(r: &R, info_meta: &[u8]) -> Reply {
    // Room for a short result and the splice, so that the usual result is written once.
    let mut out = Vec::with_capacity(128 + info_meta.len());
    serde_json::to_writer(&mut out, r)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))?;
    splice_server_info(&mut out, info_meta);
    Ok(Bytes::from(out))
}

fn encode<R: Serialize>(r: &R) -> Reply {
    serde_json::to_vec(r)
        .map(Bytes::from)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
}

/// Encodes for a handshake-era revision, adapting fields an older revision lacks (`down`; `None`
/// when nothing needs adapting, the result then going straight to bytes).
fn encode_for<R: Serialize>(r: &R, version: ProtocolVersion, down: Option<downgrade::Downgrade>) -> Reply {
    let Some(down) = down.filter(|_| version < ProtocolVersion::V2025_11_25) else {
        return encode(r);
    };
    let mut v =
        serde_json::to_value(r).map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))?;
    down(&mut v, version);
    encode(&v)
}

/// What [`Session::dispatch`] made of a request: the answer, or the future that makes it.
enum Step<'a> {
    Now(ResultBytes),
    Wait(BoxFuture<'a, Reply>),
}

impl Service for Session {
    fn admit(&self, method: &str) {
        if method == methods::INITIALIZE && self.handshake.get().is_none() {
            self.initializing.send_replace(true);
        }
    }

    fn call(self: Arc<Self>, request: IncomingRequest, peer: Peer) -> BoxFuture<'static, Reply> {
        match &self.server.inner.middleware {
            Some(stack) => super::stack::call(stack.clone(), self, request, peer),
            None => self.handle(request, peer).boxed(),
        }
    }

    fn notify(&self, method: &str, _params: Option<&RawValue>, _peer: &Peer) {
        match method {
            methods::NOTIFICATION_INITIALIZED => debug!("client initialized"),
            methods::NOTIFICATION_ROOTS_LIST_CHANGED | methods::NOTIFICATION_CANCELLED => {}
            other => debug!(method = other, "notification ignored"),
        }
    }

    fn accepts_batches(&self) -> bool {
        self.handshake.get().is_some_and(|h| h.version.receives_batches())
    }
}

#[cfg(test)]
mod splice_tests {
    use super::{may_hold_meta, splice_server_info};

    #[test]
    fn meta_is_looked_for_only_where_it_may_be() {
        for (json, may) in [
            (r#"{"name":"echo","arguments":{"text":"hi"}}"#, false),
            (r#"{"a_b":1,"c":"x\ny"}"#, false),
            (r#"{"_meta":{}}"#, true),
            (r#"{"x":1,"_meta":{"progressToken":1}}"#, true),
            (r#"{"\u005fmeta":{}}"#, true),
            (r#"{"_"#, false),
            (r#"{"x":"\"#, false),
        ] {
            assert_eq!(may_hold_meta(json), may, "{json}");
        }
    }

    #[test]
    fn server_info_is_spliced_into_any_object() {
        let meta = br#"{"io.modelcontextprotocol/serverInfo":{"name":"s"}}"#;
        for (object, want) in [
            (&br#"{}"#[..], serde_json::json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}})),
            (
                &br#"{"a":1}"#[..],
                serde_json::json!({"a": 1, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}}),
            ),
        ] {
            let mut spliced = object.to_vec();
            splice_server_info(&mut spliced, meta);
            let got: serde_json::Value = serde_json::from_slice(&spliced).expect("valid JSON");
            assert_eq!(got, want);
        }
    }
}

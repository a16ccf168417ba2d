//! What a handler can do while it runs: report progress, log, notice cancellation, and ask the
//! client for input — the same calls in both eras.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use portico_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, InputRequest, InputResponse, ListRootsResult, LoggingLevel, LoggingMessageNotificationParams,
    ProgressNotificationParams, ProgressToken, ProtocolVersion, RequestId, methods,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::handler::HandlerError;
use super::input::InputState;
use super::tasks::AnswerKind;
use crate::error::{Error, ErrorKind};
use crate::rpc::{Peer, RequestOptions};

/// How long a handshake-era input request (sampling, elicitation, roots) may wait for the
/// client: a person may be answering.
pub(crate) const INPUT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// Identifies a connection (or handshake-era HTTP session) among this process's others, for
/// as long as the process runs. See [`RequestContext::connection_id`]. Middleware finds it in
/// every request's extensions ([`McpRequest::extensions`](crate::middleware::McpRequest::extensions)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(u64);

impl ConnectionId {
    pub(crate) fn new(id: u64) -> ConnectionId {
        ConnectionId(id)
    }

    /// The number (unique within the process).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The context of one request, given to handlers. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("request_id", &self.inner.id)
            .field("protocol_version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub id: RequestId,
    pub version: ProtocolVersion,
    pub peer: Peer,
    pub cancel: crate::rpc::Cancel,
    pub client_caps: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub progress_token: Option<ProgressToken>,
    pub log: LogGate,
    /// Present in the stateless era for the methods that may return input-required results.
    pub input: Option<Arc<InputState>>,
    pub server: Server,
    pub last_progress: Mutex<Option<f64>>,
    /// Ends the request's response stream early, where the transport can resume it.
    pub close_stream: Option<Arc<Notify>>,
    pub extensions: http::Extensions,
    /// The W3C trace context in the request's `_meta`.
    pub trace: Option<Arc<crate::trace::TraceContext>>,
    /// The members of the request's `_meta` the protocol does not define.
    pub meta: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
}

/// Who decides whether a log message is sent.
#[derive(Clone)]
pub(crate) enum LogGate {
    /// Handshake era: the connection's level from `logging/setLevel` (`u8::MAX` = not set).
    Session(Arc<AtomicU8>),
    /// Stateless era: the request's `_meta` log level; `None` = the client did not opt in.
    Request(Option<LoggingLevel>),
}

pub(crate) const LEVEL_UNSET: u8 = u8::MAX;

impl LogGate {
    fn allows(&self, level: LoggingLevel) -> bool {
        match self {
            LogGate::Session(min) => {
                let min = min.load(Ordering::Relaxed);
                min == LEVEL_UNSET || level as u8 >= min
            }
            LogGate::Request(min) => min.is_some_and(|m| level >= m),
        }
    }
}

/// A request extension taken by type: what an HTTP layer (e.g. authorization) or JSON-RPC
/// middleware attached to the request, as a handler parameter. With the macros, a parameter
/// `user: Extension<User>` is filled from the request, and a request without a `User` fails
/// with an internal error naming the type (a tool call gets a tool error) before the function
/// runs. By hand: [`Extension::from_context`] or [`RequestContext::extension`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extension<T>(pub T);

impl<T: Clone + Send + Sync + 'static> Extension<T> {
    /// Takes a copy of the request's `T`.
    ///
    /// # Errors
    /// When the request carries no `T`.
    pub fn from_context(cx: &RequestContext) -> Result<Self, HandlerError> {
        cx.extension::<T>().map(Extension)
    }
}

impl<T> std::ops::Deref for Extension<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The prefix of the keys Portico picks for input requests a handler does not name.
const AUTO_KEY_PREFIX: &str = "input-";

fn is_auto_key(key: &str) -> bool {
    key.strip_prefix(AUTO_KEY_PREFIX).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Which client input a request needs, for capability checks and routing.
#[derive(Clone)]
enum Ask {
    Elicit(ElicitRequestParams),
    Sample(CreateMessageRequestParams),
    Roots,
}

impl RequestContext {
    pub(crate) fn new(inner: Inner) -> Self {
        RequestContext { inner: Arc::new(inner) }
    }

    /// The connection the request came on: one per stdio connection and per handshake-era
    /// HTTP session (every request of a session shares it). Stateless-era HTTP requests
    /// belong to no session and share one id. A gateway keys per-client state on it.
    pub fn connection_id(&self) -> ConnectionId {
        ConnectionId(self.inner.peer.connection_id())
    }

    /// Waits until the request's connection (or session) ends; never, for stateless-era HTTP.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn connection_closed(&self) {
        self.inner.peer.closed().await;
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The revision this request speaks. Handlers rarely need it; Portico adapts results.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// What the client declared it supports.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_caps
    }

    /// Who the client says it is (self-reported; not for security decisions).
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// Cancelled when the client cancels this request or the connection closes; once the call
    /// has become a task, when the task is cancelled (`tasks/cancel`) or expires instead (a
    /// task outlives its request and connection). The handler's future is also dropped then;
    /// the token serves work spawned outside it.
    pub fn cancellation(&self) -> &CancellationToken {
        self.inner.cancel.token()
    }

    /// What carried the request, by OpenTelemetry's `network.transport`: `"pipe"` (stdio),
    /// `"tcp"` (Streamable HTTP, legacy SSE), or `None` for a transport within the process
    /// ([`Transport::network_transport`](crate::transport::Transport::network_transport)).
    pub fn network_transport(&self) -> Option<&'static str> {
        self.inner.peer.network_transport()
    }

    /// True once the request is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// What the transport and middleware attached to this request: over HTTP, the extensions
    /// of the HTTP request (what an authorization layer or any tower layer in front of the MCP
    /// endpoint inserted, e.g. the authenticated principal); then whatever JSON-RPC middleware
    /// ([`ServerBuilder::layer`](crate::server::ServerBuilder::layer)) added. Empty over stdio
    /// unless middleware adds something.
    ///
    /// ```
    /// # use portico::server::RequestContext;
    /// #[derive(Clone)]
    /// struct User(String);
    ///
    /// fn who(cx: &RequestContext) -> &str {
    ///     cx.extensions().get::<User>().map_or("anonymous", |u| u.0.as_str())
    /// }
    /// ```
    pub fn extensions(&self) -> &http::Extensions {
        &self.inner.extensions
    }

    /// A copy of the request's extension of type `T` (see [`extensions`](Self::extensions)), or
    /// an internal error saying which type is missing — usually a layer that is not installed.
    ///
    /// # Errors
    /// When the request carries no `T`.
    pub fn extension<T: Clone + Send + Sync + 'static>(&self) -> Result<T, HandlerError> {
        self.inner.extensions.get::<T>().cloned().ok_or_else(|| {
            HandlerError::internal(format!(
                "this request carries no `{}` (is the layer that provides it installed?)",
                std::any::type_name::<T>()
            ))
        })
    }

    /// The server handling the request (to add or remove tools, notify resource updates, …).
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// Ends this request's SSE response stream now, on transports whose streams the client
    /// can resume (Streamable HTTP sessions of 2025-11-25 and earlier, which send `retry`):
    /// the client reconnects with `Last-Event-ID` and receives what the handler sends after.
    /// A server uses it to avoid holding long-lived connections ("SSE polling"). Elsewhere it
    /// does nothing.
    pub fn close_sse_stream(&self) {
        if let Some(n) = &self.inner.close_stream {
            n.notify_one();
        }
    }

    /// Reports progress, if the client asked for it (`_meta.progressToken`); otherwise does
    /// nothing. Values that do not increase are dropped, as the spec requires increasing ones.
    /// Once the call has become a task, its request is answered and progress goes nowhere.
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), Error> {
        if self.is_task() {
            return Ok(());
        }
        // A handler kept across 2026-07-28 input rounds reports to the retry that resumed it.
        if let Some(routed) = self.inner.input.as_ref().and_then(|s| s.progress_route(progress)) {
            let Some((peer, token)) = routed else { return Ok(()) };
            let mut p = ProgressNotificationParams::new(token, progress);
            p.total = total;
            p.message = message.map(str::to_owned);
            return peer.notify(methods::NOTIFICATION_PROGRESS, Some(&p)).await;
        }
        let Some(token) = &self.inner.progress_token else { return Ok(()) };
        {
            let mut last = crate::sync::lock(&self.inner.last_progress);
            if last.is_some_and(|l| progress <= l) {
                tracing::debug!(progress, "non-increasing progress dropped");
                return Ok(());
            }
            *last = Some(progress);
        }
        let mut p = ProgressNotificationParams::new(token.clone(), progress);
        p.total = total;
        p.message = message.map(str::to_owned);
        self.inner.peer.notify(methods::NOTIFICATION_PROGRESS, Some(&p)).await
    }

    /// Sends a log message to the client when its level allows (`logging/setLevel` in the
    /// handshake era, the request's `_meta` log level in 2026-07-28). Once the call has become
    /// a task, its request is answered and log messages go nowhere.
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Into<Value>) -> Result<(), Error> {
        if self.is_task() {
            return Ok(());
        }
        let routed = self.inner.input.as_ref().and_then(|s| s.log_route(level));
        let peer = match &routed {
            Some(Some(peer)) => peer,
            Some(None) => return Ok(()),
            None if self.inner.log.allows(level) => &self.inner.peer,
            None => return Ok(()),
        };
        let mut p = LoggingMessageNotificationParams::new(level, data);
        p.logger = logger.map(str::to_owned);
        peer.notify(methods::NOTIFICATION_MESSAGE, Some(&p)).await
    }

    /// Asks the user for input through the client (form or URL elicitation).
    ///
    /// In the handshake era this sends `elicitation/create` and waits for the answer. In
    /// 2026-07-28 the request returns an input-required result and this call resumes when the
    /// client retries with the answer: the handler runs again from the start, and every input
    /// call made before returns its recorded answer at once. Keep handlers deterministic up to
    /// their input calls, and do side effects after them, or build the server with
    /// [`keep_handlers_across_input`](super::ServerBuilder::keep_handlers_across_input): then
    /// the handler waits here and the retry resumes it, with a rerun only as the fallback. In a
    /// task (see
    /// [`continue_as_task`](Self::continue_as_task)) the task waits in `input_required` until
    /// the client answers with `tasks/update`; nothing runs again.
    ///
    /// The request is filed under a key Portico picks (`input-0`, `input-1`, … in call order);
    /// [`input`](Self::input) names it instead.
    ///
    /// # Errors
    /// The client did not declare the capability, the connection closed, or the client refused.
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, Error> {
        self.ask(None, Ask::Elicit(params)).await
    }

    /// Asks the client to sample a model (`sampling/createMessage`), in either era.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit).
    pub async fn create_message(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, Error> {
        self.ask(None, Ask::Sample(params)).await
    }

    /// Asks the client for its roots (`roots/list`), in either era.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit).
    pub async fn list_roots(&self) -> Result<ListRootsResult, Error> {
        self.ask(None, Ask::Roots).await
    }

    /// Names the next input request `key`: in 2026-07-28 the client sees it in
    /// `inputRequests` under that key and answers under it. Use it when the key means
    /// something to the client; keys must be unique within one request (within one task for
    /// tasks), and keys of the form `input-<number>` are reserved for the ones Portico picks.
    /// In the handshake era the key plays no part.
    ///
    /// ```no_run
    /// # async fn f(cx: portico::server::RequestContext) -> Result<(), portico::Error> {
    /// use portico::schema::{ElicitRequestFormParams, RequestedSchema};
    /// let form = ElicitRequestFormParams::new("What is your name?", RequestedSchema::new());
    /// let answer = cx.input("user_name").elicit(form.into()).await?;
    /// # Ok(()) }
    /// ```
    pub fn input(&self, key: impl Into<String>) -> KeyedInput<'_> {
        KeyedInput { cx: self, key: key.into() }
    }

    /// Continues this tool call as a task (the `io.modelcontextprotocol/tasks` extension of
    /// 2026-07-28), when it can be one: the tool was registered with a [`TaskSupport`] other
    /// than `Forbidden` and the request declared the extension. Then the client receives a
    /// `CreateTaskResult` now, the handler keeps running in the background, and the client
    /// polls `tasks/get` for its result; input asked from here on makes the task
    /// `input_required` until the client answers with `tasks/update`. Returns `true` then.
    ///
    /// Otherwise (handshake era, no extension, a tool without task support, not a tool call)
    /// returns `false` at once and the call goes on to an ordinary result. Input asked before
    /// this point uses the ordinary input-required round trips: a handler may gather what it
    /// needs to decide, then continue as a task.
    ///
    /// [`TaskSupport`]: super::TaskSupport
    pub async fn continue_as_task(&self) -> bool {
        let Some(state) = self.inner.input.clone() else { return false };
        if !state.task_eligible.load(Ordering::SeqCst) {
            return false;
        }
        std::future::poll_fn(move |_| {
            if state.in_task() {
                return Poll::Ready(true);
            }
            // The era layer stops polling the request here, makes the task, and runs this
            // future on as the task: its next poll finds the task.
            if !state.escalate.swap(true, Ordering::SeqCst) {
                state.signal.notify_one();
            }
            Poll::Pending
        })
        .await
    }

    /// True once this call runs as a task.
    pub fn is_task(&self) -> bool {
        self.inner.input.as_ref().is_some_and(|s| s.in_task())
    }

    /// The W3C trace context (`traceparent`, `tracestate`, `baggage`) in the request's
    /// `_meta`, to continue the caller's trace; pass it on with
    /// [`CallOptions::with_trace_context`](crate::client::CallOptions::with_trace_context).
    pub fn trace_context(&self) -> Option<&crate::trace::TraceContext> {
        self.inner.trace.as_deref()
    }

    /// The members of the request's `_meta` that the protocol does not define itself: not
    /// `progressToken` (see [`progress`](Self::progress)), not the trace context (see
    /// [`trace_context`](Self::trace_context)), and not the 2026-07-28 fields
    /// (`io.modelcontextprotocol/protocolVersion`, `…/clientCapabilities`, `…/clientInfo`,
    /// `…/logLevel`), which the SDK reads for the request. Other keys under a reserved prefix
    /// (`io.modelcontextprotocol/…`) are among them. `None` when there are none. A gateway
    /// passes them on with [`CallOptions::with_meta`](crate::client::CallOptions::with_meta).
    pub fn meta(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.inner.meta.as_deref()
    }

    /// Whether this request already holds an answer under `key` (2026-07-28: sent with the
    /// client's retry, or kept from an earlier round), so asking under it returns at once. A
    /// gateway uses it to know that a request it relays was decided on in an earlier round.
    pub fn has_input(&self, key: &str) -> bool {
        self.inner.input.as_ref().is_some_and(|s| s.has(key))
    }

    /// Asks the client for several inputs at once, under the keys given, and returns the
    /// answers under the same keys. In 2026-07-28 they all go out in one input-required result
    /// (the handler runs again when the client answers them, as with [`elicit`](Self::elicit));
    /// in a task they are all pending at once (the client may answer them in any order); in the
    /// handshake era they are asked one after another. Unlike
    /// [`input`](Self::input), any key is taken as it is: this is for passing on another
    /// server's `inputRequests` whole, keys included.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit), for any one of the requests.
    pub async fn input_many(
        &self,
        requests: std::collections::BTreeMap<String, InputRequest>,
    ) -> Result<portico_schema::InputResponses, Error> {
        let mut out = portico_schema::InputResponses::new();
        let batch = self.inner.version.is_stateless() && self.inner.input.as_ref().is_some_and(|s| !s.in_task());
        let Some(state) = self.inner.input.as_ref().filter(|_| batch) else {
            let one = |key: String, request: InputRequest| async move {
                let keyed = Some(key.clone());
                let response = match request {
                    InputRequest::Elicitation(r) => {
                        InputResponse::Elicitation(self.ask_as(keyed, Ask::Elicit(r.params)).await?)
                    }
                    InputRequest::Sampling(r) => {
                        InputResponse::Sampling(self.ask_as(keyed, Ask::Sample(r.params)).await?)
                    }
                    InputRequest::ListRoots(_) => InputResponse::ListRoots(self.ask_as(keyed, Ask::Roots).await?),
                    _ => return Err(Error::local("an input request of a kind this version does not know")),
                };
                Ok::<_, Error>((key, response))
            };
            if self.is_task() {
                let asked = requests.into_iter().map(|(k, r)| one(k, r));
                out.extend(futures_util::future::try_join_all(asked).await?);
                return Ok(out);
            }
            for (key, request) in requests {
                let (key, response) = one(key, request).await?;
                out.insert(key, response);
            }
            return Ok(out);
        };
        let mut asks = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let ask = match request {
                InputRequest::Elicitation(r) => Ask::Elicit(r.params),
                InputRequest::Sampling(r) => Ask::Sample(r.params),
                InputRequest::ListRoots(_) => Ask::Roots,
                _ => return Err(Error::local("an input request of a kind this version does not know")),
            };
            let (supported, required) = self.requirement(&ask)?;
            asks.push((key, ask, supported, required));
        }
        loop {
            // Made before asking, so an answer that comes while this waits is not missed.
            let answered = state.answered.notified();
            let mut waiting = false;
            for (key, ask, supported, required) in &asks {
                if out.contains_key(key) {
                    continue;
                }
                let decoded = state.answer(key, |answer| match ask {
                    Ask::Elicit(_) => serde_json::from_str(answer.get()).map(InputResponse::Elicitation),
                    Ask::Sample(_) => serde_json::from_str(answer.get()).map(InputResponse::Sampling),
                    Ask::Roots => serde_json::from_str(answer.get()).map(InputResponse::ListRoots),
                });
                match decoded {
                    Some(Ok(response)) => {
                        crate::sync::lock(&state.used).insert(key.clone());
                        out.insert(key.clone(), response);
                        continue;
                    }
                    Some(Err(_)) => {
                        *crate::sync::lock(&state.invalid) = Some(key.clone());
                        state.signal.notify_one();
                        return wait_closed(state).await;
                    }
                    None if *supported => {
                        crate::sync::lock(&state.needed).insert(key.clone(), ask.clone().into_request().0);
                    }
                    None => *crate::sync::lock(&state.missing_capability) = Some(required.clone()),
                }
                waiting = true;
            }
            if !waiting {
                return Ok(out);
            }
            end_round(state, answered).await?;
        }
    }

    /// Whether the client can take `ask` (and what it would have to declare), or an error
    /// when the negotiated revision has no such request.
    fn requirement(&self, ask: &Ask) -> Result<(bool, ClientCapabilities), Error> {
        let caps = &self.inner.client_caps;
        let v = self.inner.version;
        let exists = match ask {
            Ask::Elicit(ElicitRequestParams::Url(_)) => v.has_url_elicitation_and_sampling_tools(),
            Ask::Elicit(_) => v.has_elicitation(),
            Ask::Sample(p) if p.tools.is_some() => v.has_url_elicitation_and_sampling_tools(),
            _ => true,
        };
        if !exists {
            // A client may declare more than its negotiated revision has; never send it.
            return Err(Error::new(ErrorKind::PeerIncompatible, format!("protocol revision {v} has no such request")));
        }
        Ok(match ask {
            Ask::Elicit(ElicitRequestParams::Url(_)) => {
                (caps.supports_elicitation_url(), ClientCapabilities::new().with_elicitation(false, true))
            }
            Ask::Elicit(_) => {
                (caps.supports_elicitation_form(), ClientCapabilities::new().with_elicitation(true, false))
            }
            Ask::Sample(p) if p.tools.is_some() => {
                (caps.supports_sampling_tools(), ClientCapabilities::new().with_sampling(true))
            }
            Ask::Sample(_) => (caps.supports_sampling(), ClientCapabilities::new().with_sampling(false)),
            Ask::Roots => (caps.supports_roots(), ClientCapabilities::new().with_roots(false)),
        })
    }

    async fn ask<T: DeserializeOwned>(&self, key: Option<String>, ask: Ask) -> Result<T, Error> {
        if key.as_deref().is_some_and(is_auto_key) {
            return Err(Error::local("input keys of the form input-<number> are reserved for Portico"));
        }
        self.ask_as(key, ask).await
    }

    /// [`ask`](Self::ask) under any key.
    async fn ask_as<T: DeserializeOwned>(&self, key: Option<String>, ask: Ask) -> Result<T, Error> {
        let (supported, required) = self.requirement(&ask)?;
        if self.inner.version.is_stateless() {
            let Some(state) = &self.inner.input else {
                return Err(Error::local(
                    "in 2026-07-28 only tools/call, prompts/get and resources/read may ask the client for input",
                ));
            };
            let key = key.unwrap_or_else(|| format!("{AUTO_KEY_PREFIX}{}", state.next.fetch_add(1, Ordering::SeqCst)));
            loop {
                // Made before asking, so an answer that comes while this waits is not missed.
                let answered = state.answered.notified();
                match state.answer(&key, |answer| serde_json::from_str::<T>(answer.get())) {
                    Some(Ok(t)) => {
                        crate::sync::lock(&state.used).insert(key);
                        return Ok(t);
                    }
                    Some(Err(_)) if !state.in_task() => {
                        // Not an answer to this request: the era layer refuses the request.
                        *crate::sync::lock(&state.invalid) = Some(key);
                        state.signal.notify_one();
                        return wait_closed(state).await;
                    }
                    _ => {}
                }
                if let Some(task) = state.task.get() {
                    if !supported {
                        return Err(Error::new(
                            ErrorKind::PeerIncompatible,
                            "the client did not declare the capability this request needs",
                        ));
                    }
                    let (request, kind) = ask.into_request();
                    let answer = task.ask(key, request, kind).await?;
                    return serde_json::from_str(answer.get()).map_err(bad_answer);
                }
                if !supported {
                    *crate::sync::lock(&state.missing_capability) = Some(required.clone());
                } else {
                    crate::sync::lock(&state.needed).insert(key.clone(), ask.clone().into_request().0);
                }
                end_round(state, answered).await?;
            }
        }
        if !supported {
            return Err(Error::new(
                ErrorKind::PeerIncompatible,
                "the client did not declare the capability this request needs",
            ));
        }
        let options = RequestOptions {
            timeout: INPUT_REQUEST_TIMEOUT,
            cancel: Some(self.inner.cancel.token().clone()),
            ..Default::default()
        };
        let peer = &self.inner.peer;
        let v = match ask {
            Ask::Elicit(p) => peer.request(methods::ELICITATION_CREATE, Some(&p), options).await?,
            Ask::Sample(p) => peer.request(methods::SAMPLING_CREATE_MESSAGE, Some(&p), options).await?,
            Ask::Roots => peer.request::<Value, Value>(methods::ROOTS_LIST, None, options).await?,
        };
        serde_json::from_value(v).map_err(bad_answer)
    }
}

/// What an input request waiting in another task gets when the request it belongs to ended
/// without the client's answer (refused, or not kept for a retry).
fn ended_unanswered() -> Error {
    Error::local("the request ended before the client answered this input request")
}

/// Ends this round of a stateless request's input requests (the era layer answers with an
/// input-required result) and waits for the next: `Ok` when a retry resumed the handler with
/// answers, an error when the request ended without them. `answered` was made before the
/// answers were looked up, so none that came meanwhile is missed.
async fn end_round(state: &InputState, answered: tokio::sync::futures::Notified<'_>) -> Result<(), Error> {
    state.signal.notify_one();
    answered.await;
    if state.closed.load(Ordering::SeqCst) {
        return Err(ended_unanswered());
    }
    Ok(())
}

/// Waits until the era layer, told that an answer is not one, ends the request; a handler it
/// polls never gets past this (it is dropped first), an input request in another task ends.
async fn wait_closed<T>(state: &InputState) -> Result<T, Error> {
    loop {
        let answered = state.answered.notified();
        if state.closed.load(Ordering::SeqCst) {
            return Err(ended_unanswered());
        }
        answered.await;
    }
}

impl Ask {
    fn into_request(self) -> (InputRequest, AnswerKind) {
        match self {
            Ask::Elicit(p) => (InputRequest::elicit(p), AnswerKind::Elicitation),
            Ask::Sample(p) => (InputRequest::sampling(p), AnswerKind::Sampling),
            Ask::Roots => (InputRequest::list_roots(), AnswerKind::Roots),
        }
    }
}

/// An input request under a key the handler chose; see [`RequestContext::input`].
#[derive(Debug)]
#[must_use = "a keyed input does nothing until one of its requests is awaited"]
pub struct KeyedInput<'a> {
    cx: &'a RequestContext,
    key: String,
}

impl KeyedInput<'_> {
    /// [`RequestContext::elicit`] under this key.
    ///
    /// # Errors
    /// As for [`RequestContext::elicit`]; also when the key is one of Portico's own.
    pub async fn elicit(self, params: ElicitRequestParams) -> Result<ElicitResult, Error> {
        self.cx.ask(Some(self.key), Ask::Elicit(params)).await
    }

    /// [`RequestContext::create_message`] under this key.
    ///
    /// # Errors
    /// As for [`RequestContext::elicit`].
    pub async fn create_message(self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, Error> {
        self.cx.ask(Some(self.key), Ask::Sample(params)).await
    }

    /// [`RequestContext::list_roots`] under this key.
    ///
    /// # Errors
    /// As for [`RequestContext::elicit`].
    pub async fn list_roots(self) -> Result<ListRootsResult, Error> {
        self.cx.ask(Some(self.key), Ask::Roots).await
    }
}

fn bad_answer(e: serde_json::Error) -> Error {
    Error::misbehaved("the client's answer does not match the request").with_source(e)
}

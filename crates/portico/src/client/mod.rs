//! The client: connect to any server over any transport, in whichever era it speaks.
//!
//! ```no_run
//! use portico::client::Client;
//! use portico::schema::Implementation;
//!
//! # async fn run(transport: portico::transport::memory::MemoryTransport) -> Result<(), portico::Error> {
//! let client = Client::builder(Implementation::new("my-host", "1.0.0")).connect(transport).await?;
//! for tool in client.list_all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("greet", serde_json::json!({ "name": "Ada" })).await?;
//! # Ok(()) }
//! ```
//!
//! `connect` finds the server's era as the spec says: it probes with `server/discover`; a
//! discover result or a recognised stateless-era error means 2026-07-28, anything else (any
//! other error, or no answer in time) means the handshake era, and it sends `initialize`.

mod cache;
mod connection;
pub mod elicitation;
mod endpoint;
mod handler;
mod options;
pub mod skills;
mod stack;
mod tasks;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use bytes::Bytes;
use portico_schema::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResult,
    DiscoverRequestParams, DiscoverResult, EmptyResult, GetPromptRequestParams, GetPromptResult, Implementation,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, RequestMeta,
    Resource, ResourceTemplate, ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
    SubscriptionsListenRequestParams, Tool, methods,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

pub use crate::rpc::{PauseGuard, TimeoutPause};
pub use handler::{ClientHandler, NoHandler};
pub use options::{CallOptions, InputHandler};
pub use tasks::{MAX_TASK_WAIT, TaskCreated, TaskHook};

use crate::error::{Error, ErrorKind};
use crate::rpc::{self, Peer, RequestOptions, RpcConfig};
use crate::sync::lock;
use crate::transport::Transport;
use connection::{Final, HasMeta, Peek, Refused, decode, read_tool_result};
use endpoint::ClientEndpoint;

/// Which era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraMode {
    /// Probe with `server/discover`, fall back to `initialize` (the default).
    #[default]
    Auto,
    /// Always `initialize`, asking for this revision.
    Handshake(ProtocolVersion),
    /// Always stateless (2026-07-28), never `initialize`.
    Stateless,
}

/// Builds a [`Client`].
#[must_use]
pub struct ClientBuilder {
    info: Implementation,
    caps: ClientCapabilities,
    handler: Arc<dyn ClientHandler>,
    mode: EraMode,
    timeout: Duration,
    probe_timeout: Duration,
    max_input_rounds: usize,
    layers: Vec<crate::middleware::LayerFn>,
    notification_rate: Option<u32>,
}

impl ClientBuilder {
    /// The capabilities to declare (what the handler answers).
    pub fn capabilities(mut self, caps: ClientCapabilities) -> Self {
        self.caps = caps;
        self
    }

    /// Answers the server's input requests and receives its notifications.
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// Which era to speak (default: detect).
    pub fn era(mut self, mode: EraMode) -> Self {
        self.mode = mode;
        self
    }

    /// Time allowed for each request without an answer or progress (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Wraps every request this client sends — the era probe and `initialize` included — in a
    /// tower layer (see [`crate::middleware`]); the last layer added runs first. The layer's
    /// service takes an [`McpRequest`](crate::middleware::McpRequest) whose params are final
    /// (`_meta` filled in) and answers an [`McpResponse`](crate::middleware::McpResponse); the
    /// server's JSON-RPC errors arrive as error answers, other failures (timeouts, a closed
    /// connection) as the service's error.
    pub fn layer(mut self, layer: impl crate::middleware::McpLayer) -> Self {
        self.layers.push(layer.into_layer_fn());
        self
    }

    /// Reads at most `per_second` notifications a second from the server, with a burst of as
    /// many: past it, reading pauses until the rate allows, so a server that floods
    /// notifications backs up in its own writes instead of taking this process's CPU from
    /// everything else. Nothing is dropped; the server's answers wait behind its notifications.
    /// Default: no limit.
    pub fn max_notification_rate(mut self, per_second: u32) -> Self {
        self.notification_rate = Some(per_second.max(1));
        self
    }

    /// Time allowed for the `server/discover` probe before assuming the handshake era
    /// (default 5 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Connects over `transport` and completes discovery or the handshake.
    ///
    /// # Errors
    /// When the server cannot be reached, answers neither era, or needs a revision Portico
    /// does not speak.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future leaves a half-opened connection that is closed
    /// when its last handle goes away.
    pub async fn connect<T: Transport>(self, transport: T) -> Result<Client, Error> {
        let service = Arc::new(ClientEndpoint::new(self.handler.clone()));
        let peer = rpc::start(
            transport,
            service.clone(),
            RpcConfig {
                name: "client",
                cancel_on_input_end: true,
                notification_rate: self.notification_rate,
                ..RpcConfig::default()
            },
        );
        let mut inner = Inner {
            peer,
            service,
            info: self.info,
            caps: self.caps,
            timeout: self.timeout,
            max_input_rounds: self.max_input_rounds,
            version: ProtocolVersion::LATEST,
            server_info: Implementation::default(),
            server_caps: ServerCapabilities::default(),
            instructions: None,
            log_level: std::sync::Mutex::new(None),
            next_token: AtomicI64::new(1),
            middleware: stack::build(&self.layers),
            late_task: None,
        };
        let stateless = match self.mode {
            EraMode::Stateless => match inner.discover_negotiating(self.timeout).await {
                Ok(d) => Some(d),
                Err(Refused::Fatal(e)) => return Err(e),
                Err(Refused::HandshakeOnly) => {
                    return Err(Error::new(
                        ErrorKind::PeerIncompatible,
                        "the server speaks only handshake-era revisions, and the client was built for 2026-07-28",
                    ));
                }
            },
            EraMode::Handshake(_) => None,
            EraMode::Auto => inner.probe(self.probe_timeout).await?,
        };
        match stateless {
            Some(d) => {
                inner.server_caps = d.capabilities;
                inner.instructions = d.instructions;
                // `_meta` carries it; some servers put a `serverInfo` member beside it instead.
                inner.server_info = d
                    .meta
                    .as_ref()
                    .and_then(|m| m.get(portico_schema::META_SERVER_INFO))
                    .or_else(|| d.extra.get("serverInfo"))
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default();
            }
            None => {
                let want = match self.mode {
                    EraMode::Handshake(v) => v,
                    _ => ProtocolVersion::LATEST_HANDSHAKE,
                };
                inner.initialize(want).await?;
            }
        }
        let inner = Arc::new_cyclic(|weak| {
            inner.late_task = Some(tasks::cancel_late_task(weak.clone()));
            inner
        });
        Ok(Client { inner })
    }
}

/// A connection to an MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("protocol_version", &self.inner.version)
            .field("server", &self.inner.server_info.name)
            .finish_non_exhaustive()
    }
}

struct Inner {
    peer: Peer,
    service: Arc<ClientEndpoint>,
    info: Implementation,
    caps: ClientCapabilities,
    timeout: Duration,
    max_input_rounds: usize,
    version: ProtocolVersion,
    server_info: Implementation,
    server_caps: ServerCapabilities,
    instructions: Option<String>,
    log_level: std::sync::Mutex<Option<LoggingLevel>>,
    next_token: AtomicI64,
    /// The middleware stack, built once; `None` without layers.
    middleware: Option<crate::middleware::Stack>,
    /// Cancels a task made of a tool call whose caller had stopped waiting (2026-07-28).
    late_task: Option<rpc::LateHook>,
}

/// A list method's page type.
trait Page: DeserializeOwned {
    type Item;
    fn split(self) -> (Vec<Self::Item>, Option<String>);
}

macro_rules! page {
    ($t:ty, $item:ty, $field:ident) => {
        impl Page for $t {
            type Item = $item;
            fn split(self) -> (Vec<$item>, Option<String>) {
                (self.$field, self.next_cursor)
            }
        }
    };
}
page!(ListToolsResult, Tool, tools);
page!(ListPromptsResult, Prompt, prompts);
page!(ListResourcesResult, Resource, resources);
page!(ListResourceTemplatesResult, ResourceTemplate, resource_templates);

/// Most pages a `list_all_*` call follows before giving up on a server that never ends.
const MAX_PAGES: usize = 10_000;

impl Client {
    /// Starts building a client that introduces itself as `info`.
    pub fn builder(info: Implementation) -> ClientBuilder {
        ClientBuilder {
            info,
            caps: ClientCapabilities::default(),
            handler: Arc::new(NoHandler),
            mode: EraMode::Auto,
            timeout: rpc::DEFAULT_REQUEST_TIMEOUT,
            probe_timeout: Duration::from_secs(5),
            max_input_rounds: 16,
            layers: Vec::new(),
            notification_rate: None,
        }
    }

    /// The revision in use.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// Who the server says it is.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.server_info
    }

    /// What the server declared.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.inner.server_caps
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// Checks the server is alive: `ping` in the handshake era, `server/discover` in 2026-07-28
    /// (which has no ping).
    ///
    /// # Errors
    /// When the server does not answer.
    pub async fn ping(&self) -> Result<(), Error> {
        if self.inner.version.is_stateless() {
            let _: DiscoverResult = self
                .inner
                .send(methods::SERVER_DISCOVER, DiscoverRequestParams::default(), &CallOptions::new())
                .await?;
            return Ok(());
        }
        let (o, _) = self.inner.options(&CallOptions::new());
        let raw = self.inner.transmit::<serde_json::Value>(methods::PING, None, o).await?;
        let _: EmptyResult = decode(methods::PING, &raw)?;
        Ok(())
    }

    /// `server/discover` (2026-07-28).
    ///
    /// # Errors
    /// On a handshake-era connection, or when the server refuses.
    pub async fn discover(&self) -> Result<DiscoverResult, Error> {
        self.inner.send(methods::SERVER_DISCOVER, DiscoverRequestParams::default(), &CallOptions::new()).await
    }

    async fn list_page<R: Page>(&self, method: &'static str, cursor: Option<String>) -> Result<R, Error> {
        let cache = &self.inner.service.cache;
        if let Some(bytes) = cache.get(method, cursor.as_deref()) {
            return serde_json::from_slice(&bytes).map_err(|e| Error::local("corrupt cache entry").with_source(e));
        }
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor.clone();
        let raw = self.inner.send_raw(method, params, &CallOptions::new()).await?;
        let peek: Peek = decode(method, &raw)?;
        if self.inner.version.is_stateless() {
            let ttl = peek.ttl_ms.unwrap_or(0).max(0) as u64;
            cache.put(method, cursor.as_deref(), ttl, Bytes::copy_from_slice(raw.get().as_bytes()));
        }
        decode(method, &raw)
    }

    async fn list_all<R: Page>(&self, method: &'static str) -> Result<Vec<R::Item>, Error> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page: R = self.list_page(method, cursor.take()).await?;
            let (items, next) = page.split();
            all.extend(items);
            match next {
                Some(n) => cursor = Some(n),
                None => return Ok(all),
            }
        }
        Err(Error::misbehaved(format!("{method} returned more than {MAX_PAGES} pages")))
    }

    /// One page of `tools/list` (cached per `ttlMs` in 2026-07-28).
    ///
    /// # Errors
    /// When the server refuses or the connection fails.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        self.list_page(methods::TOOLS_LIST, cursor).await
    }

    /// Every tool, following `nextCursor`.
    ///
    /// # Errors
    /// As for [`list_tools`](Self::list_tools).
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_all::<ListToolsResult>(methods::TOOLS_LIST).await
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// When the server refuses or the connection fails.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, Error> {
        self.list_page(methods::PROMPTS_LIST, cursor).await
    }

    /// Every prompt.
    ///
    /// # Errors
    /// As for [`list_prompts`](Self::list_prompts).
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all::<ListPromptsResult>(methods::PROMPTS_LIST).await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// When the server refuses or the connection fails.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult, Error> {
        self.list_page(methods::RESOURCES_LIST, cursor).await
    }

    /// Every resource.
    ///
    /// # Errors
    /// As for [`list_resources`](Self::list_resources).
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all::<ListResourcesResult>(methods::RESOURCES_LIST).await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// When the server refuses or the connection fails.
    pub async fn list_resource_templates(&self, cursor: Option<String>) -> Result<ListResourceTemplatesResult, Error> {
        self.list_page(methods::RESOURCES_TEMPLATES_LIST, cursor).await
    }

    /// Every resource template.
    ///
    /// # Errors
    /// As for [`list_resource_templates`](Self::list_resource_templates).
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all::<ListResourceTemplatesResult>(methods::RESOURCES_TEMPLATES_LIST).await
    }

    /// Calls a tool with JSON arguments (an object, or `null` for none).
    ///
    /// In 2026-07-28, input-required results are answered through the [`ClientHandler`] and
    /// the call is retried until it completes. A server that makes a task of the call (the
    /// tasks extension, when the client declared it with
    /// [`ClientCapabilities::with_tasks`]) is polled with `tasks/get` until the task ends; its
    /// input requests are answered the same way, with `tasks/update`, and cancelling the call
    /// sends `tasks/cancel`. A task that fails is an error carrying the task's error.
    ///
    /// # Errors
    /// A protocol error from the server (unknown tool, …) or a connection failure. A failing
    /// tool is not an error: it is a result with `is_error`.
    pub async fn call_tool(&self, name: &str, arguments: serde_json::Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::new()).await
    }

    /// [`call_tool`](Self::call_tool) with progress, timeout and cancellation options.
    ///
    /// # Errors
    /// As for [`call_tool`](Self::call_tool), plus timeouts and cancellation.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let p = tool_params(name, arguments)?;
        let read = |raw| read_tool_result(raw, |result, _| Ok(result));
        match self.inner.send_rounds_read(methods::TOOLS_CALL, p, &options, read).await? {
            Final::Complete(result) => Ok(result),
            // Boxed: following a task is rare, and its future would otherwise sit inside
            // every call's.
            Final::Task(created) => Box::pin(tasks::follow(&self.inner, &created, &options)).await,
        }
    }

    /// [`call_tool_with`](Self::call_tool_with), keeping the result's JSON as the server sent
    /// it, for a relay to answer with ([`RelayedToolResult`](crate::RelayedToolResult)). A
    /// result that came through a task has no JSON of its own.
    ///
    /// # Errors
    /// As for [`call_tool_with`](Self::call_tool_with).
    pub async fn call_tool_relayed_with(
        &self,
        name: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<crate::RelayedToolResult, Error> {
        let p = tool_params(name, arguments)?;
        let read = |raw| read_tool_result(raw, crate::RelayedToolResult::from_decoded);
        match self.inner.send_rounds_read(methods::TOOLS_CALL, p, &options, read).await? {
            Final::Complete(relayed) => Ok(relayed),
            Final::Task(created) => Box::pin(tasks::follow(&self.inner, &created, &options)).await.map(Into::into),
        }
    }

    /// Gets a prompt with its string arguments.
    ///
    /// # Errors
    /// A protocol error from the server or a connection failure.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (String, String)>,
    ) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(name, arguments, CallOptions::new()).await
    }

    /// [`get_prompt`](Self::get_prompt) with per-call options (timeout, cancellation, input).
    ///
    /// # Errors
    /// A protocol error from the server or a connection failure.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (String, String)>,
        options: CallOptions,
    ) -> Result<GetPromptResult, Error> {
        let mut p = GetPromptRequestParams::new(name);
        let args: std::collections::BTreeMap<String, String> = arguments.into_iter().collect();
        p.arguments = if args.is_empty() { None } else { Some(args) };
        self.inner.send_retrying(methods::PROMPTS_GET, p, &options).await
    }

    /// Reads a resource.
    ///
    /// # Errors
    /// A protocol error (not found: -32002 or -32602 by revision) or a connection failure.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(uri, CallOptions::new()).await
    }

    /// [`read_resource`](Self::read_resource) with per-call options (timeout, cancellation,
    /// input).
    ///
    /// # Errors
    /// As for [`read_resource`](Self::read_resource).
    pub async fn read_resource_with(&self, uri: &str, options: CallOptions) -> Result<ReadResourceResult, Error> {
        self.inner.send_retrying(methods::RESOURCES_READ, ReadResourceRequestParams::new(uri), &options).await
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// A protocol error or a connection failure.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, Error> {
        self.inner.send(methods::COMPLETION_COMPLETE, params, &CallOptions::new()).await
    }

    /// Sets the minimum level of log messages: `logging/setLevel` in the handshake era, the
    /// `_meta` log level of every later request in 2026-07-28.
    ///
    /// # Errors
    /// When the server refuses.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), Error> {
        if self.inner.version.is_stateless() {
            *lock(&self.inner.log_level) = Some(level);
            return Ok(());
        }
        let _: EmptyResult =
            self.inner.send(methods::LOGGING_SET_LEVEL, SetLevelRequestParams::new(level), &CallOptions::new()).await?;
        Ok(())
    }

    /// Subscribes to updates of one resource (handshake era; see [`listen`](Self::listen) for
    /// 2026-07-28).
    ///
    /// # Errors
    /// When the server refuses.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        if self.inner.version.is_stateless() {
            return Err(Error::local("2026-07-28 has no resources/subscribe; use listen()"));
        }
        let _: EmptyResult = self
            .inner
            .send(methods::RESOURCES_SUBSCRIBE, SubscribeRequestParams::new(uri), &CallOptions::new())
            .await?;
        Ok(())
    }

    /// Unsubscribes from one resource (handshake era).
    ///
    /// # Errors
    /// When the server refuses.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        let _: EmptyResult = self
            .inner
            .send(methods::RESOURCES_UNSUBSCRIBE, SubscribeRequestParams::new(uri), &CallOptions::new())
            .await?;
        Ok(())
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28) and waits for its acknowledgement.
    /// Notifications arrive at the [`ClientHandler`]; dropping the [`Subscription`] ends it.
    ///
    /// # Errors
    /// When the server does not acknowledge within the request timeout.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        if !self.inner.version.is_stateless() {
            return Err(Error::local(
                "subscriptions/listen needs 2026-07-28; the server sends list changes unasked in the handshake era",
            ));
        }
        let id = self.inner.peer.next_id();
        let ack = self.inner.service.expect_ack(id.clone());
        let cancel = CancellationToken::new();
        let inner = self.inner.clone();
        let token = cancel.clone();
        let params = SubscriptionsListenRequestParams::new(filter);
        let task = tokio::spawn(async move {
            let mut params = params;
            inner.stamp(&mut params.meta, None, None);
            let options = RequestOptions {
                id: Some(id),
                timeout: Duration::from_secs(u32::MAX as u64),
                cancel: Some(token),
                ..Default::default()
            };
            let _ = inner.transmit(methods::SUBSCRIPTIONS_LISTEN, Some(&params), options).await;
        });
        let acknowledged = tokio::time::timeout(self.inner.timeout, ack)
            .await
            .map_err(|_| Error::new(ErrorKind::Timeout, "subscriptions/listen was not acknowledged"))?
            .map_err(|_| Error::closed("the connection closed before the subscription was acknowledged"))?;
        Ok(Subscription { acknowledged, cancel, _task: task })
    }

    /// Tells the server the client's roots changed (`notifications/roots/list_changed`; the
    /// handshake era only — in 2026-07-28 servers ask for roots with each request).
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn notify_roots_list_changed(&self) -> Result<(), Error> {
        if self.inner.version.is_stateless() {
            return Ok(());
        }
        self.inner.peer.notify::<serde_json::Value>(methods::NOTIFICATION_ROOTS_LIST_CHANGED, None).await
    }

    /// Sends any request with JSON params and returns the raw JSON result; `_meta` is filled
    /// for the era.
    ///
    /// # Errors
    /// A protocol error or a connection failure.
    pub async fn request(&self, method: &str, params: Option<JsonObject>) -> Result<serde_json::Value, Error> {
        #[derive(Serialize)]
        struct Raw {
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            meta: Option<RequestMeta>,
            #[serde(flatten)]
            rest: JsonObject,
        }
        impl HasMeta for Raw {
            fn meta_mut(&mut self) -> &mut Option<RequestMeta> {
                &mut self.meta
            }
        }
        let mut rest = params.unwrap_or_default();
        let meta = rest.remove("_meta").and_then(|m| serde_json::from_value(m).ok());
        self.inner.send(method, Raw { meta, rest }, &CallOptions::new()).await
    }

    /// Closes the connection: pending calls fail, the transport is shut (a child process sees
    /// end of input). Waits until everything queued is written.
    pub async fn close(&self) {
        self.inner.peer.close("closed by the client");
        self.inner.peer.finished().await;
    }

    /// Waits until the connection closes (the server went away, or [`close`](Self::close)).
    pub async fn closed(&self) {
        self.inner.peer.closed().await
    }

    /// True once the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.peer.is_closed()
    }
}

/// A live `subscriptions/listen` stream; dropping it ends the subscription.
#[derive(Debug)]
pub struct Subscription {
    acknowledged: SubscriptionFilter,
    cancel: CancellationToken,
    _task: tokio::task::JoinHandle<()>,
}

impl Subscription {
    /// What the server agreed to send.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// `tools/call` params: `arguments` must be an object, or `null` for none.
fn tool_params(name: &str, arguments: serde_json::Value) -> Result<CallToolRequestParams, Error> {
    let mut p = CallToolRequestParams::new(name);
    p.arguments = match arguments {
        serde_json::Value::Null => None,
        serde_json::Value::Object(m) => Some(m),
        _ => return Err(Error::local("tool arguments must be a JSON object")),
    };
    Ok(p)
}

//! The server: register tools, resources and prompts once, serve every revision.
//!
//! ```no_run
//! use portico::server::Server;
//! use portico::schema::{Implementation, Tool};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Greet { name: String }
//!
//! # async fn run() -> Result<(), portico::Error> {
//! let server = Server::builder(Implementation::new("hello", "1.0.0"))
//!     .tool(
//!         Tool::new("greet", portico::schema::object(serde_json::json!({
//!             "type": "object",
//!             "properties": { "name": { "type": "string" } },
//!             "required": ["name"]
//!         }))),
//!         |args: Greet| async move { format!("Hello, {}!", args.name) },
//!     )
//!     .build();
//! server.serve(portico::transport::stdio::stdio()).await
//! # }
//! ```
//!
//! One server answers handshake-era clients (`initialize`, 2024-11-05 … 2025-11-25) and
//! stateless-era clients (2026-07-28, `_meta` on every request) on the same connection; the era
//! is chosen per request by the spec's dual-era rules, and handlers never see the difference.

mod completion;
mod context;
mod downgrade;
mod edit;
mod encoded;
pub(crate) mod era;
mod handler;
mod input;
#[cfg(feature = "fuzzing")]
pub(crate) use input::fuzz_open as fuzz_open_input;
pub(crate) mod registry;
pub mod sealed;
pub(crate) mod stack;
mod tasks;
#[cfg(feature = "schemars")]
mod typed;
pub mod uri_template;
mod validate;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use portico_schema::{
    CacheScope, Implementation, ListChangedCapability, Prompt, ProtocolVersion, Resource, ResourceTemplate,
    ResourcesCapability, ServerCapabilities, Tool,
};
use tokio::sync::broadcast;

pub use context::{ConnectionId, Extension, KeyedInput, RequestContext};
pub use edit::Edit;
pub use encoded::EncodedContents;
pub use handler::{HandlerError, IntoCallToolResult, Json, ToolReply};
pub use registry::{
    CompletionHandler, IntoReadResourceResult, PromptHandler, ResourceHandler, ResourceRequest, ToolHandler,
};
pub use tasks::{TASKS_EXTENSION, TaskSupport};
#[cfg(feature = "schemars")]
#[doc(hidden)]
pub use typed::__private;
#[cfg(feature = "schemars")]
pub use typed::{CompletionOutput, IntoToolBox, PromptOutput, ResourceOutput, ToolBox, input_schema, output_schema};
pub use uri_template::{UriTemplate, UriTemplateError};

use crate::error::Error;
use crate::rpc::{self, RpcConfig};
use crate::transport::Transport;
use registry::Registry;
use sealed::StateSealer;

/// An MCP server: what it offers and how it behaves. Cheap to clone; clones share everything,
/// so a tool added through one is visible to every connection.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("info", &self.inner.info).finish_non_exhaustive()
    }
}

struct Inner {
    info: Implementation,
    /// `info` as JSON, for the `_meta` of every stateless-era result (encoded once).
    info_json: serde_json::Value,
    /// `{"io.modelcontextprotocol/serverInfo": info}`, encoded once.
    info_meta: Bytes,
    instructions: Option<String>,
    /// What is declared; `add_*` at runtime switches a capability on for later handshakes.
    offers: Offers,
    registry: RwLock<Registry>,
    config: Config,
    events: broadcast::Sender<Event>,
    /// First pages of `tools/list`, encoded per revision; cleared when tools change.
    tools_cache: RwLock<ToolsCache>,
    /// Tasks of the tasks extension.
    tasks: tasks::TaskStore,
    /// The middleware stack, built once; `None` without layers.
    middleware: Option<crate::middleware::Stack>,
}

#[derive(Clone)]
struct Config {
    page_size: Option<usize>,
    ttl_ms: u64,
    cache_scope: CacheScope,
    sealer: StateSealer,
    rpc: RpcConfig,
    tasks: tasks::TaskConfig,
    /// Handlers kept waiting across 2026-07-28 input rounds (see
    /// [`ServerBuilder::keep_handlers_across_input`]).
    parking: Option<Arc<input::Parking>>,
    /// Told when a client subscribes to a resource or stops.
    on_subscription: Option<SubscriptionHook>,
}

/// What [`ServerBuilder::on_subscription`] is given.
pub(crate) type SubscriptionHook = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// First pages of `tools/list`, encoded per revision, and the generation of the tool set they
/// were made from: a page computed before a change is never stored after it.
#[derive(Default)]
pub(crate) struct ToolsCache {
    pub generation: u64,
    pub pages: Vec<(ProtocolVersion, Bytes)>,
}

/// Which capabilities are declared.
pub(crate) struct Offers {
    pub tools: AtomicBool,
    pub resources: AtomicBool,
    pub prompts: AtomicBool,
    pub completions: bool,
    /// The tasks extension (2026-07-28): some tool supports tasks.
    pub tasks: AtomicBool,
}

/// A change the server tells interested clients about.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated(Arc<str>),
    /// A task of the tasks extension changed status (by id).
    TaskChanged(Arc<str>),
}

/// Builds a [`Server`].
///
/// # Failures
///
/// One rule for the builder and the runtime mutators of [`Server`]:
///
/// - A builder method panics on a mistake in the program itself (an invalid URI template, a
///   tool layer for a tool that does not exist), when the server is built at startup, as axum's
///   `Router` does; the message says what is wrong and what to do. Where the input may come
///   from outside the program, a `try_` twin returns the error instead
///   ([`try_resource_template`](Self::try_resource_template)).
/// - The runtime mutators ([`Server::add_resource_template`], …) never panic: they run while
///   the server is serving, often with input decided at run time, and return a `Result` (or a
///   `bool` saying whether the entry existed).
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    config: Config,
    tools: bool,
    resources: bool,
    prompts: bool,
    layers: Vec<crate::middleware::LayerFn>,
    tool_layers: std::collections::HashMap<String, Vec<crate::middleware::LayerFn>>,
}

impl Server {
    /// Starts building a server that introduces itself as `info`.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            info,
            instructions: None,
            registry: Registry::default(),
            config: Config {
                page_size: None,
                ttl_ms: 0,
                cache_scope: CacheScope::Public,
                sealer: StateSealer::random(),
                rpc: RpcConfig { name: "server", ..RpcConfig::default() },
                tasks: tasks::TaskConfig::default(),
                parking: None,
                on_subscription: None,
            },
            tools: false,
            resources: false,
            prompts: false,
            layers: Vec::new(),
            tool_layers: std::collections::HashMap::new(),
        }
    }

    /// Who the server says it is.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// What the server declares now. A server built without tools declares `tools` from the
    /// first `add_tool` on (for clients that connect or discover after it). A server with a
    /// tool that supports tasks declares the tasks extension (`capabilities.extensions`), which
    /// only 2026-07-28 clients see.
    pub fn capabilities(&self) -> ServerCapabilities {
        let o = &self.inner.offers;
        let mut c = ServerCapabilities::default();
        c.logging = Some(Default::default());
        if o.tools.load(Ordering::Relaxed) {
            c.tools = Some(ListChangedCapability::new(true));
        }
        if o.resources.load(Ordering::Relaxed) {
            c.resources = Some(ResourcesCapability::new(true, true));
        }
        if o.prompts.load(Ordering::Relaxed) {
            c.prompts = Some(ListChangedCapability::new(true));
        }
        if o.completions {
            c.completions = Some(Default::default());
        }
        if o.tasks.load(Ordering::Relaxed) {
            let mut ext = serde_json::Map::new();
            ext.insert(TASKS_EXTENSION.to_owned(), serde_json::Value::Object(serde_json::Map::new()));
            c.extensions = Some(ext);
        }
        c
    }

    /// Tells the subscription hook, if any.
    pub(crate) fn subscription_changed(&self, uri: &str, watching: bool) {
        if let Some(f) = &self.inner.config.on_subscription {
            f(uri, watching);
        }
    }

    pub(crate) fn tasks(&self) -> &tasks::TaskStore {
        &self.inner.tasks
    }

    pub(crate) fn offers(&self) -> &Offers {
        &self.inner.offers
    }

    /// Serves one connection until it closes.
    ///
    /// # Errors
    /// Never fails today; the `Result` leaves room for transports that fail to start.
    ///
    /// # Cancel safety
    /// Dropping the future leaves the connection running in the background until the peer
    /// closes it; use [`Server::connect`] to keep a handle that can close it.
    pub async fn serve<T: Transport>(&self, transport: T) -> Result<(), Error> {
        self.connect(transport).closed().await;
        Ok(())
    }

    /// Starts serving one connection in the background and returns its handle.
    pub fn connect<T: Transport>(&self, transport: T) -> ServerConnection {
        let layer = Arc::new(era::EraLayer::new(self.clone()));
        let peer = rpc::start(transport, layer.clone(), self.inner.config.rpc.clone());
        rpc::Endpoint::attach(&*layer, &peer);
        ServerConnection { peer }
    }

    /// The era layer of a new connection, for a transport that runs it through a
    /// [`Link`](crate::rpc::link::Link) (Streamable HTTP).
    #[cfg(feature = "http-server")]
    pub(crate) fn endpoint(&self) -> Arc<dyn rpc::Endpoint> {
        Arc::new(era::EraLayer::new(self.clone()))
    }

    /// The input schema of the tool `name` (enabled or not) when it mirrors some argument in an
    /// `Mcp-Param-*` header, for a transport that checks those headers; `None` for any other tool.
    #[cfg(feature = "http-server")]
    pub(crate) fn mirroring_input_schema(
        &self,
        name: &str,
    ) -> Option<impl std::ops::Deref<Target = portico_schema::JsonObject> + use<>> {
        struct InputSchema(Arc<registry::ToolEntry>);
        impl std::ops::Deref for InputSchema {
            type Target = portico_schema::JsonObject;
            fn deref(&self) -> &portico_schema::JsonObject {
                &self.0.def.input_schema
            }
        }
        self.registry().tools.get(name).filter(|t| t.mirrors_params).cloned().map(InputSchema)
    }

    /// Whether the tasks extension is offered now (some tool supports tasks).
    #[cfg(feature = "http-server")]
    pub(crate) fn offers_tasks(&self) -> bool {
        self.inner.offers.tasks.load(Ordering::Relaxed)
    }

    /// Adds or replaces a tool; connected clients are told the list changed. An `Arc<Tool>` is
    /// kept as it is, shared with its giver.
    pub fn add_tool<M>(&self, tool: impl Into<Arc<Tool>>, handler: impl ToolHandler<M>) {
        self.add_task_tool(tool, TaskSupport::Forbidden, handler);
    }

    /// Adds or replaces a tool that may run as a task (see [`ServerBuilder::task_tool`]).
    pub fn add_task_tool<M>(&self, tool: impl Into<Arc<Tool>>, tasks: TaskSupport, handler: impl ToolHandler<M>) {
        let tool = tool.into();
        self.write(|r| r.insert_tool(tool, handler.into_erased(), tasks));
        self.inner.offers.tools.store(true, Ordering::Relaxed);
        if tasks != TaskSupport::Forbidden {
            self.inner.offers.tasks.store(true, Ordering::Relaxed);
        }
        self.tools_changed();
    }

    /// Removes a tool; `false` when there was none of that name.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove_with(|r| r.tools.remove(name).is_some(), Self::tools_changed)
    }

    /// Hides or shows a tool without removing it; `false` when there is none of that name.
    pub fn set_tool_enabled(&self, name: &str, enabled: bool) -> bool {
        let found = self.set_enabled(|r| r.tools.get(name).map(|e| &e.enabled), enabled);
        if found == Some(true) {
            self.tools_changed();
        }
        found.is_some()
    }

    /// Hides or shows a resource without removing it; `false` when there is none at `uri`.
    pub fn set_resource_enabled(&self, uri: &str, enabled: bool) -> bool {
        let found = self.set_enabled(|r| r.resources.get(uri).map(|e| &e.enabled), enabled);
        if found == Some(true) {
            self.emit(Event::ResourcesChanged);
        }
        found.is_some()
    }

    /// Hides or shows a resource template without removing it; `false` when there is none.
    pub fn set_resource_template_enabled(&self, uri_template: &str, enabled: bool) -> bool {
        let found = self.set_enabled(|r| r.templates.get(uri_template).map(|e| &e.enabled), enabled);
        if found == Some(true) {
            self.emit(Event::ResourcesChanged);
        }
        found.is_some()
    }

    /// Removes a resource template; `false` when there was none.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.remove_with(|r| r.templates.remove(uri_template).is_some(), |s| s.emit(Event::ResourcesChanged))
    }

    /// Hides or shows a prompt without removing it; `false` when there is none of that name.
    pub fn set_prompt_enabled(&self, name: &str, enabled: bool) -> bool {
        let found = self.set_enabled(|r| r.prompts.get(name).map(|e| &e.enabled), enabled);
        if found == Some(true) {
            self.emit(Event::PromptsChanged);
        }
        found.is_some()
    }

    /// Removes with `f`; when something was removed, tells clients with `changed`.
    fn remove_with(&self, f: impl FnOnce(&mut Registry) -> bool, changed: impl FnOnce(&Self)) -> bool {
        let removed = self.write(f);
        if removed {
            changed(self);
        }
        removed
    }

    /// Sets the flag `pick` finds: `None` when there is no such entry, `Some(changed)` otherwise.
    fn set_enabled(&self, pick: impl FnOnce(&Registry) -> Option<&AtomicBool>, enabled: bool) -> Option<bool> {
        let registry = self.registry();
        pick(&registry).map(|flag| flag.swap(enabled, Ordering::SeqCst) != enabled)
    }

    /// Adds or replaces a resource; connected clients are told the list changed.
    pub fn add_resource(&self, resource: Resource, handler: impl ResourceHandler) {
        self.write(|r| r.insert_resource(resource, handler.into_erased()));
        self.inner.offers.resources.store(true, Ordering::Relaxed);
        self.emit(Event::ResourcesChanged);
    }

    /// Removes a resource by URI; `false` when there was none.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove_with(|r| r.resources.remove(uri).is_some(), |s| s.emit(Event::ResourcesChanged))
    }

    /// Adds or replaces a resource template.
    ///
    /// # Errors
    /// When the template is not a valid RFC 6570 URI template.
    pub fn add_resource_template(
        &self,
        template: ResourceTemplate,
        handler: impl ResourceHandler,
    ) -> Result<(), UriTemplateError> {
        self.write(|r| r.insert_template(template, handler.into_erased()))?;
        self.inner.offers.resources.store(true, Ordering::Relaxed);
        self.emit(Event::ResourcesChanged);
        Ok(())
    }

    /// Adds or replaces a prompt; connected clients are told the list changed.
    pub fn add_prompt<M>(&self, prompt: Prompt, handler: impl PromptHandler<M>) {
        self.write(|r| r.insert_prompt(prompt, handler.into_erased()));
        self.inner.offers.prompts.store(true, Ordering::Relaxed);
        self.emit(Event::PromptsChanged);
    }

    /// Removes a prompt; `false` when there was none of that name.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove_with(|r| r.prompts.remove(name).is_some(), |s| s.emit(Event::PromptsChanged))
    }

    /// Ends every handler kept waiting for a 2026-07-28 retry
    /// ([`ServerBuilder::keep_handlers_across_input`]): each is cancelled and dropped, as when
    /// its time runs out, and a later retry runs it again. A server that is stopping calls it:
    /// the retries those handlers wait for will not be served. Returns how many there were.
    pub fn end_kept_handlers(&self) -> usize {
        self.inner.config.parking.as_ref().map_or(0, |p| p.end_all())
    }

    /// Tells subscribed clients that the resource `uri` changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.emit(Event::ResourceUpdated(uri.into()));
    }

    fn tools_changed(&self) {
        let mut cache = crate::sync::write_lock(&self.inner.tools_cache);
        cache.pages.clear();
        cache.generation += 1;
        self.emit(Event::ToolsChanged);
    }

    fn emit(&self, event: Event) {
        // No receivers simply means no connection is listening.
        let _ = self.inner.events.send(event);
    }

    fn write<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        f(&mut crate::sync::write_lock(&self.inner.registry))
    }

    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        crate::sync::read_lock(&self.inner.registry)
    }

    pub(crate) fn subscribe_events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }
}

impl ServerBuilder {
    /// Instructions for the model on how to use this server.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool and its handler.
    pub fn tool<M>(self, tool: impl Into<Arc<Tool>>, handler: impl ToolHandler<M>) -> Self {
        self.task_tool(tool, TaskSupport::Forbidden, handler)
    }

    /// Adds a tool that may run as a task (the `io.modelcontextprotocol/tasks` extension of
    /// 2026-07-28, which the server then declares). Its handler decides where the task begins
    /// by calling [`RequestContext::continue_as_task`]; see [`TaskSupport`] for clients that
    /// did not declare the extension.
    ///
    /// ```no_run
    /// use portico::schema::{Implementation, Tool};
    /// use portico::server::{RequestContext, Server, TaskSupport};
    ///
    /// let server = Server::builder(Implementation::new("jobs", "1.0.0"))
    ///     .task_tool(Tool::without_arguments("rebuild_index"), TaskSupport::Optional, |_: serde_json::Value, cx: RequestContext| async move {
    ///         cx.continue_as_task().await;
    ///         // … long work; a task's client polls tasks/get for this result.
    ///         "index rebuilt"
    ///     })
    ///     .build();
    /// ```
    pub fn task_tool<M>(
        mut self,
        tool: impl Into<Arc<Tool>>,
        tasks: TaskSupport,
        handler: impl ToolHandler<M>,
    ) -> Self {
        self.registry.insert_tool(tool.into(), handler.into_erased(), tasks);
        self
    }

    /// How long tasks stay retrievable after their creation (default one hour) and how often
    /// clients should poll them (default 500 ms).
    pub fn task_lifetimes(mut self, ttl: std::time::Duration, poll_interval: std::time::Duration) -> Self {
        self.config.tasks.ttl = ttl;
        self.config.tasks.poll_interval = poll_interval;
        self
    }

    /// How many tasks the server keeps at most (default 4096); expired ones make room first,
    /// and a tool call that would need another is refused with an internal error.
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.config.tasks.max_tasks = n.max(1);
        self
    }

    /// Adds a resource and its handler.
    pub fn resource(mut self, resource: Resource, handler: impl ResourceHandler) -> Self {
        self.registry.insert_resource(resource, handler.into_erased());
        self
    }

    /// Adds a resource template and its handler.
    ///
    /// # Panics
    /// When the template is not a valid RFC 6570 URI template (a programming error, found at
    /// startup); use [`try_resource_template`](Self::try_resource_template) to handle it.
    pub fn resource_template(self, template: ResourceTemplate, handler: impl ResourceHandler) -> Self {
        let uri = template.uri_template.clone();
        match self.try_resource_template(template, handler) {
            Ok(b) => b,
            Err(e) => panic!(
                "invalid resource template {uri:?}: {e}; fix the template (RFC 6570), or call \
                 `try_resource_template` to handle templates that come from outside the program"
            ),
        }
    }

    /// Adds a resource template and its handler, or says why the template is invalid.
    ///
    /// # Errors
    /// When the template is not a valid RFC 6570 URI template.
    pub fn try_resource_template(
        mut self,
        template: ResourceTemplate,
        handler: impl ResourceHandler,
    ) -> Result<Self, UriTemplateError> {
        self.registry.insert_template(template, handler.into_erased())?;
        Ok(self)
    }

    /// Adds a prompt and its handler.
    pub fn prompt<M>(mut self, prompt: Prompt, handler: impl PromptHandler<M>) -> Self {
        self.registry.insert_prompt(prompt, handler.into_erased());
        self
    }

    /// Answers `completion/complete` (and declares the `completions` capability).
    pub fn completion(mut self, handler: impl CompletionHandler) -> Self {
        self.registry.completion = Some(handler.into_erased());
        self
    }

    /// Declares the `tools` capability even with no tool yet (tools added at runtime).
    pub fn with_tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// Declares the `resources` capability even with no resource yet.
    pub fn with_resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Declares the `prompts` capability even with no prompt yet.
    pub fn with_prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Wraps every request this server handles in a tower layer (see [`crate::middleware`]).
    /// The layer sees the request after decoding and before the era layer; the last layer
    /// added runs first (as in axum). Its service takes an [`McpRequest`](crate::middleware::McpRequest)
    /// and answers an [`McpResponse`](crate::middleware::McpResponse); if it fails, the client
    /// gets an internal error (-32603) with the failure's message.
    ///
    /// Layers whose state is per clone (e.g. `tower::limit::RateLimit`) are cloned per request:
    /// put such limits behind `tower::buffer` or use a shared one (`ConcurrencyLimit` shares its
    /// semaphore between clones).
    pub fn layer(mut self, layer: impl crate::middleware::McpLayer) -> Self {
        self.layers.push(layer.into_layer_fn());
        self
    }

    /// Wraps `tools/call` requests for the tool `name` in a tower layer, inside the layers of
    /// [`layer`](Self::layer) (which see every request first). Several layers for one tool nest
    /// like [`layer`](Self::layer)'s. The layer stays with the name: a tool of that name
    /// replaced or added again at runtime goes through it too.
    ///
    /// # Panics
    /// [`build`](Self::build) panics when no tool of that name was added to the builder (a
    /// misspelled name would otherwise leave the tool without its layer, silently).
    pub fn tool_layer(mut self, name: impl Into<String>, layer: impl crate::middleware::McpLayer) -> Self {
        self.tool_layers.entry(name.into()).or_default().push(layer.into_layer_fn());
        self
    }

    /// Calls `f(uri, true)` when a client starts watching the resource `uri`
    /// (`resources/subscribe` in the handshake era, a `subscriptions/listen` naming it in
    /// 2026-07-28) and `f(uri, false)` when it stops (unsubscribes, ends its listen, or its
    /// connection closes): every `true` is matched by one `false`. A server whose resources
    /// live elsewhere (a gateway) counts them to watch the source only while someone watches.
    /// Keep `f` quick: it runs on the request's task.
    pub fn on_subscription(mut self, f: impl Fn(&str, bool) + Send + Sync + 'static) -> Self {
        self.config.on_subscription = Some(Arc::new(f));
        self
    }

    /// Splits lists into pages of at most `n` items (default: one page).
    pub fn page_size(mut self, n: usize) -> Self {
        self.config.page_size = Some(n.max(1));
        self
    }

    /// Cache hints on cacheable 2026-07-28 results (default: 0 ms, public).
    pub fn cache_hints(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.config.ttl_ms = ttl_ms;
        self.config.cache_scope = scope;
        self
    }

    /// The key that seals 2026-07-28 `requestState` (default: a random key per process).
    /// Servers behind a load balancer share one key so any instance can resume a request.
    pub fn state_sealer(mut self, sealer: StateSealer) -> Self {
        self.config.sealer = sealer;
        self
    }

    /// Keeps a 2026-07-28 handler that asks the client for input waiting, for up to `ttl`,
    /// instead of ending it. In 2026-07-28 a request that needs input ends with an
    /// input-required result, and the client sends the request again with the answers. By
    /// default the handler then runs again from the start, finding the answers it used sealed in
    /// `requestState`: simple, and any instance behind a load balancer can take the retry, but
    /// whatever the handler did before it asked is done twice. With this option the handler
    /// is kept, its future unpolled, and the retry that carries its `requestState` resumes it
    /// where it stopped. A gateway needs this: its handler has a call in flight on another
    /// server, which must not be made twice.
    ///
    /// A kept handler is dropped (its cancellation fires) when no retry comes within `ttl`. A
    /// retry that finds no kept handler (the time ran out, another instance or process sealed
    /// the state) runs the handler again, as without this option. At most 1,024 handlers wait
    /// at once; past that, a handler that asks is ended as usual. A kept handler resumes only
    /// for the caller whose verified token (`AuthInfo`) made the request. Once resumed, its
    /// progress and log messages go to the retry, under the retry's progress token and log
    /// level.
    pub fn keep_handlers_across_input(mut self, ttl: std::time::Duration) -> Self {
        self.config.parking = Some(input::Parking::new(ttl));
        self
    }

    /// How many requests of one connection run at the same time (default 256); more wait.
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.config.rpc.max_in_flight = n.max(1);
        self
    }

    /// Builds the server.
    ///
    /// # Panics
    /// When a [`tool_layer`](Self::tool_layer) names a tool the builder does not have.
    pub fn build(self) -> Server {
        let r = &self.registry;
        let mut unknown: Vec<&str> =
            self.tool_layers.keys().map(String::as_str).filter(|name| !r.tools.contains_key(*name)).collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            panic!(
                "tool_layer names no tool of this server: {}; add the tool to the builder (before or after the \
                 layer), or fix the name (tools: {})",
                unknown.join(", "),
                r.tools.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
            );
        }
        let offers = Offers {
            tools: AtomicBool::new(self.tools || !r.tools.is_empty()),
            resources: AtomicBool::new(self.resources || !r.resources.is_empty() || !r.templates.is_empty()),
            prompts: AtomicBool::new(self.prompts || !r.prompts.is_empty()),
            completions: r.completion.is_some(),
            tasks: AtomicBool::new(r.tools.values().any(|t| t.tasks != TaskSupport::Forbidden)),
        };
        let (events, _) = broadcast::channel(256);
        let tasks = tasks::TaskStore::new(self.config.tasks, events.clone());
        let middleware = stack::middleware_stack(&self.layers, &self.tool_layers);
        Server {
            inner: Arc::new(Inner {
                info_json: serde_json::to_value(&self.info).unwrap_or_default(),
                info_meta: Bytes::from(
                    serde_json::to_vec(&serde_json::json!({ portico_schema::META_SERVER_INFO: &self.info }))
                        .unwrap_or_else(|_| b"{}".to_vec()),
                ),
                info: self.info,
                instructions: self.instructions,
                offers,
                registry: RwLock::new(self.registry),
                config: self.config,
                events,
                tools_cache: RwLock::new(ToolsCache::default()),
                tasks,
                middleware,
            }),
        }
    }
}

/// A connection being served. Dropping it leaves the connection running.
#[derive(Debug, Clone)]
pub struct ServerConnection {
    peer: rpc::Peer,
}

impl ServerConnection {
    /// Waits until the connection has closed and every response has been written.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn closed(&self) {
        self.peer.finished().await
    }

    /// Closes the connection: in-flight requests are cancelled.
    pub fn close(&self) {
        self.peer.close("closed by the server");
    }
}

//! [`Gateway`]: the host's registry served as one MCP server, kept in step with it.
//!
//! The gateway is an ordinary Portico [`Server`]: every revision, both eras, stdio and
//! Streamable HTTP. Its tools, prompts, resources and templates are the registry's; each
//! handler sends its call down the host's one call path. When the registry changes, the
//! server's lists are replaced with [`Server::edit`], so a client gets one `list_changed` per
//! kind that changed, however many upstreams changed at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use portico::middleware::{McpRequest, McpResponse};
use portico::schema::{CompleteRequestParams, ServerCapabilities};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server, TaskSupport, ToolReply};
use portico::transport::http::server::StreamableHttp;
use serde_json::Value;
use tokio::sync::watch;

use crate::host::{Host, HostError};
use crate::registry::Registry;

/// The registry served as one MCP server.
#[derive(Debug, Clone)]
pub struct Gateway {
    host: Host,
    server: Server,
    /// The registry the server offers now.
    shown: watch::Sender<Arc<Registry>>,
}

/// How long a call whose upstream asked for input (elicitation, sampling, roots) waits for a
/// 2026-07-28 client's retry with the answer: a person may be answering, as long as the SDK
/// gives a handshake-era client.
pub const KEPT_FOR_INPUT: std::time::Duration = std::time::Duration::from_secs(600);

impl Gateway {
    /// A server offering `host`'s registry, following its changes until the host shuts down.
    /// Listings and calls that arrive before the upstreams have started (at most 30 s) wait
    /// for them; the handshake does not, so clients connect at once.
    ///
    /// Must be called within a Tokio runtime.
    pub fn new(host: Host) -> Gateway {
        Gateway::with_startup_wait(host, std::time::Duration::from_secs(30))
    }

    /// [`new`](Self::new), waiting at most `startup` for upstreams before the first listings.
    pub fn with_startup_wait(host: Host, startup: std::time::Duration) -> Gateway {
        let (ready_tx, ready) = watch::channel(false);
        let info = host.info().clone();
        let completer = host.clone();
        let server = Server::builder(info)
            .completion(move |params: CompleteRequestParams, _cx: RequestContext| {
                let host = completer.clone();
                async move { host.complete(params).await.map_err(handler_error) }
            })
            .instructions(
                "This server joins several MCP servers. Tool and prompt names are <server>__<name>; \
                 each item's _meta[\"dev.portico/upstream\"] names the server it comes from.",
            )
            .with_tools()
            .with_prompts()
            .with_resources()
            .on_subscription({
                let host = host.clone();
                move |uri, on| host.watch_resource(uri, on)
            })
            // A 2026-07-28 client answers input with a retry; the relayed upstream call waits
            // for it rather than being made again.
            .keep_handlers_across_input(KEPT_FOR_INPUT)
            .layer(StartupGate { ready, within: startup })
            .layer(crate::clients::SessionLayer { host: host.clone() })
            .build();
        let gateway = Gateway { host, server, shown: watch::channel(Arc::new(Registry::default())).0 };
        // Updates of watched resources go to the clients that watch them.
        let notify = gateway.server.clone();
        let updates =
            crate::upstream::pass_updates(gateway.host.resource_updates(), gateway.host.watched_later(), move |uris| {
                for uri in uris {
                    notify.notify_resource_updated(&uri);
                }
                true
            });
        tokio::spawn(updates);
        let mut registry = gateway.host.watch_registry();
        // What the host has now is offered before `new` returns; changes follow in the task.
        let first = registry.borrow_and_update().clone();
        gateway.apply(&Registry::default(), &first);
        gateway.shown.send_replace(first);
        let starting = gateway.clone();
        tokio::spawn(async move {
            starting.host.ready(startup).await;
            starting.synced(std::time::Duration::from_secs(1)).await;
            let _ = ready_tx.send(true);
        });
        let sync = gateway.clone();
        tokio::spawn(async move {
            while registry.changed().await.is_ok() {
                let next = registry.borrow_and_update().clone();
                let shown = sync.shown.borrow().clone();
                if *shown == *next {
                    // Rebuilt the same: an upstream's list_changed, passed on as it came, or
                    // a tool switched on or off (what is hidden is worked out again).
                    sync.server.edit(|e| {
                        sync.edit_tools(e, &Registry::default(), &next);
                        e.mark_tools_changed().mark_prompts_changed().mark_resources_changed();
                    });
                } else {
                    sync.apply(&shown, &next);
                }
                sync.shown.send_replace(next);
            }
        });
        gateway
    }

    /// Waits until the server offers what the host's registry holds now (the copy into the
    /// SDK server runs in the background), at most `within`.
    pub async fn synced(&self, within: std::time::Duration) {
        let target = self.host.registry();
        let mut shown = self.shown.subscribe();
        let _ = tokio::time::timeout(within, shown.wait_for(|s| Arc::ptr_eq(s, &target) || **s == *target)).await;
    }

    /// The SDK server, to serve over any transport or mount in an axum app.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The host behind it.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// What the gateway declares.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.server.capabilities()
    }

    /// Stops taking calls and lets those in flight finish within `grace` ([`Host::drain`]).
    /// Calls kept waiting for a 2026-07-28 client's retry with an answer end at once: the
    /// retry would be refused now, so they could not finish.
    pub async fn drain(&self, grace: std::time::Duration) -> crate::Drained {
        let ended = self.server.end_kept_handlers();
        if ended > 0 {
            tracing::info!(ended, "stopping: ended the calls waiting for a client's answer");
        }
        self.host.drain(grace).await
    }

    /// Serves one client on this process's stdin and stdout until it disconnects.
    ///
    /// # Errors
    /// When stdio cannot be used.
    pub async fn serve_stdio(&self) -> Result<(), portico::Error> {
        self.server.serve(portico::transport::stdio::stdio()).await
    }

    /// A Streamable HTTP endpoint for this gateway, to configure (allowed hosts, auth) and
    /// serve or mount.
    pub fn http(&self) -> StreamableHttp {
        StreamableHttp::new(self.server.clone())
    }

    /// Replaces what changed between `old` and `new`, one `list_changed` per kind.
    fn apply(&self, old: &Registry, new: &Registry) {
        self.server.edit(|edit| {
            if old.tools != new.tools {
                self.edit_tools(edit, old, new);
            }
            if old.prompts != new.prompts {
                edit.retain_prompts(|name| new.prompts.contains_key(name));
                for (name, entry) in &new.prompts {
                    if old.prompts.get(name) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    let exposed = Arc::<str>::from(name.as_str());
                    edit.add_prompt(entry.prompt.clone(), move |args: BTreeMap<String, String>, cx: RequestContext| {
                        let host = host.clone();
                        let exposed = exposed.clone();
                        async move { host.get_prompt(&exposed, args, Some(&cx)).await.map_err(handler_error) }
                    });
                }
            }
            if old.resources != new.resources {
                edit.retain_resources(|uri| new.resources.contains_key(uri));
                for (uri, entry) in &new.resources {
                    if old.resources.get(uri) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    edit.add_resource(entry.resource.clone(), move |req: ResourceRequest, cx: RequestContext| {
                        let host = host.clone();
                        async move { host.read_resource(req.uri(), None, Some(&cx)).await.map_err(handler_error) }
                    });
                }
            }
            if old.templates != new.templates {
                edit.retain_resource_templates(|t| new.templates.contains_key(t));
                for (template, entry) in &new.templates {
                    if old.templates.get(template) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    let server = Arc::<str>::from(entry.origin.server.as_str());
                    let added = edit.add_resource_template(entry.template.clone(), move |req: ResourceRequest, cx: RequestContext| {
                        let host = host.clone();
                        let server = server.clone();
                        async move {
                            let uri = req.uri().strip_prefix(&format!("portico:{server}/")).unwrap_or(req.uri()).to_owned();
                            host.read_resource(&uri, Some(&server), Some(&cx)).await.map_err(handler_error)
                        }
                    });
                    if let Err(e) = added {
                        tracing::warn!(target: "portico::gateway", server = %entry.origin.server, "template `{template}` left out: {e}");
                    }
                }
            }
        });
    }
}

impl Gateway {
    /// Offers `new`'s tools that are not hidden, replacing those that differ from `old`'s.
    fn edit_tools(&self, edit: &mut portico::server::Edit<'_>, old: &Registry, new: &Registry) {
        let shown = |name: &str| new.tools.get(name).is_some_and(|e| !self.host.hides(e));
        edit.retain_tools(|name| shown(name));
        for (name, entry) in &new.tools {
            if old.tools.get(name) == Some(entry) || self.host.hides(entry) {
                continue;
            }
            let host = self.host.clone();
            let exposed = Arc::<str>::from(name.as_str());
            // A tool of a server that offers tasks may be one here too: when the upstream makes
            // a task of a call, so does the gateway (see `upstream::relay::continue_as_task`).
            let tasks = if entry.tasks { TaskSupport::Optional } else { TaskSupport::Forbidden };
            edit.add_task_tool(entry.tool.clone(), tasks, move |args: Value, cx: RequestContext| {
                let host = host.clone();
                let exposed = exposed.clone();
                async move {
                    // The upstream's JSON, where nothing changed it, is the answer's.
                    match host.try_call_tool_relayed(&exposed, args, Some(&cx)).await {
                        Ok(result) => ToolReply::Relayed(result),
                        Err(e) => ToolReply::Error(handler_error(e)),
                    }
                }
            });
        }
    }
}

fn handler_error(e: HostError) -> HandlerError {
    match e {
        HostError::NotFound { what: "resource", name } => HandlerError::resource_not_found(name),
        HostError::NotFound { .. } => HandlerError::invalid_params(e.to_string()),
        HostError::Upstream(crate::upstream::UpstreamError::Refused { code, message, data, .. }) => {
            let mut error = portico::schema::ErrorObject::new(portico::schema::ErrorCode(code), message);
            error.data = data;
            HandlerError::wire(error)
        }
        other => HandlerError::internal(other.to_string()),
    }
}

/// Holds listings and calls until the upstreams have started (or `within` passed), so a
/// client's first `tools/list` is complete; everything else (the handshake, `ping`) passes.
#[derive(Clone)]
struct StartupGate {
    ready: watch::Receiver<bool>,
    within: std::time::Duration,
}

impl<S> tower::Layer<S> for StartupGate {
    type Service = Gated<S>;

    fn layer(&self, inner: S) -> Gated<S> {
        Gated { inner, ready: self.ready.clone(), within: self.within }
    }
}

#[derive(Clone)]
struct Gated<S> {
    inner: S,
    ready: watch::Receiver<bool>,
    within: std::time::Duration,
}

impl<S> tower::Service<McpRequest> for Gated<S>
where
    S: tower::Service<McpRequest, Response = McpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let gated = !*self.ready.borrow()
            && matches!(
                req.method(),
                "tools/list"
                    | "prompts/list"
                    | "resources/list"
                    | "resources/templates/list"
                    | "tools/call"
                    | "prompts/get"
                    | "resources/read"
            );
        // The ready service goes with this call; a fresh clone waits for the next.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let mut ready = self.ready.clone();
        let within = self.within;
        Box::pin(async move {
            if gated {
                let _ = tokio::time::timeout(within, ready.wait_for(|r| *r)).await;
            }
            inner.call(req).await
        })
    }
}

//! [`Host`]: the upstreams, the registry built from them, and the one call path.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use portico::RelayedToolResult;
use portico::schema::{CallToolResult, ContentBlock, Implementation};
use portico::server::RequestContext;
use serde_json::Value;
use tokio::sync::watch;
use tracing::Instrument;

use crate::config::{Config, ServerConfig};
use crate::registry::{Catalog, Origin, Registry};
use crate::router::{Method, Oversight, Unsupervised};
use crate::upstream::{State, Upstream, UpstreamError, UpstreamStatus};

mod calls;
mod unended;

/// How long changes from upstreams are gathered before the registry is rebuilt once.
const COALESCE: Duration = Duration::from_millis(25);

/// Why a read or a prompt through the host failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// Nothing of that name or URI is offered.
    #[error("no {what} `{name}` is offered")]
    NotFound {
        /// `tool`, `prompt` or `resource`.
        what: &'static str,
        /// What was asked for.
        name: String,
    },
    /// Refused by the host's oversight.
    #[error("refused: {0}")]
    Refused(String),
    /// The upstream failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}

/// What [`Host::reload`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Servers started because they are new.
    pub added: Vec<String>,
    /// Servers stopped because they are gone.
    pub removed: Vec<String>,
    /// Servers whose config changed, so they were restarted.
    pub restarted: Vec<String>,
    /// Servers left running as they were.
    pub unchanged: Vec<String>,
}

/// The host: every configured upstream under supervision, joined into one [`Registry`], and
/// the call path every request to an upstream goes through. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    info: Implementation,
    config: RwLock<Config>,
    upstreams: RwLock<BTreeMap<String, Upstream>>,
    registry: watch::Sender<Arc<Registry>>,
    changes: watch::Sender<u64>,
    /// The `changes` version the registry was last rebuilt from.
    rebuilt: watch::Sender<u64>,
    oversight: Arc<dyn Oversight>,
    output_schemas: crate::checks::OutputSchemas,
    metrics: crate::metrics::Metrics,
    stop: tokio_util::sync::CancellationToken,
    /// The calls in progress, the tools switched off by a person, the downstream sessions.
    activity: crate::activity::Activity,
    /// Records of calls dropped before they ended, on their way.
    late: Arc<unended::LateRecords>,
    switches: crate::switches::Switches,
    clients: crate::clients::Clients,
    /// Watchers per exposed resource URI, and the updates of watched ones (exposed URIs).
    watching: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    resource_updates: tokio::sync::broadcast::Sender<String>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("servers", &self.upstream_names()).finish_non_exhaustive()
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Host {
    /// Starts every enabled, non-lazy upstream of `config` at once (startup takes as long as the
    /// slowest, not the sum) and returns without waiting; see [`ready`](Self::ready).
    ///
    /// Must be called within a Tokio runtime.
    pub fn start(config: Config) -> Host {
        Host::with_oversight(config, Arc::new(Unsupervised))
    }

    /// [`start`](Self::start) with the hooks every call passes through.
    pub fn with_oversight(config: Config, oversight: Arc<dyn Oversight>) -> Host {
        let info = Implementation::new(config.gateway.name.clone(), env!("CARGO_PKG_VERSION"));
        let inner = Arc::new(Inner {
            info,
            config: RwLock::new(config.clone()),
            upstreams: RwLock::new(BTreeMap::new()),
            registry: watch::channel(Arc::new(Registry::default())).0,
            changes: watch::channel(0).0,
            rebuilt: watch::channel(0).0,
            oversight,
            output_schemas: crate::checks::OutputSchemas::default(),
            metrics: crate::metrics::Metrics::default(),
            stop: tokio_util::sync::CancellationToken::new(),
            activity: crate::activity::Activity::new(),
            late: Arc::default(),
            switches: crate::switches::Switches::stored_in(&config.gateway.state_dir),
            clients: crate::clients::Clients::default(),
            watching: std::sync::Mutex::new(std::collections::HashMap::new()),
            resource_updates: tokio::sync::broadcast::channel(crate::upstream::UPDATES * 4).0,
        });
        let host = Host { inner };
        {
            let mut ups = write(&host.inner.upstreams);
            for server in config.servers.values() {
                ups.insert(server.name.clone(), host.start_upstream(server.clone(), &config));
            }
        }
        tokio::spawn(rebuild(Arc::downgrade(&host.inner), host.inner.changes.subscribe()));
        host.inner.changes.send_modify(|n| *n += 1);
        host
    }

    fn start_upstream(&self, server: ServerConfig, config: &Config) -> Upstream {
        let lazy = server.lazy;
        let name = server.name.clone();
        let up = Upstream::start(
            server,
            self.inner.info.clone(),
            config.gateway.ping_interval,
            config.gateway.state_dir.clone(),
            self.inner.changes.clone(),
            self.inner.oversight.clone(),
        );
        // The upstream's resource updates, under the URIs the gateway offers.
        let weak = Arc::downgrade(&self.inner);
        let from = name.clone();
        tokio::spawn(crate::upstream::pass_updates(up.resource_updates(), up.watched_later(), move |uris| {
            let Some(inner) = weak.upgrade() else { return false };
            let registry = inner.registry.borrow().clone();
            for uri in uris {
                let exposed = registry.exposed_uri(&from, &uri).unwrap_or(uri);
                let _ = inner.resource_updates.send(exposed);
            }
            true
        }));
        if lazy {
            if let Some(catalog) = load_cached(&cache_path(config, &name)) {
                up.seed_catalog(catalog);
            } else {
                // Nothing known about it yet: start it now to learn what it offers.
                up.restart();
            }
        }
        up
    }

    /// Starts (`on`) or stops watching the resource the gateway offers as `uri`; the first
    /// watcher subscribes to it upstream and the last one to leave unsubscribes. Its updates
    /// arrive on [`resource_updates`](Self::resource_updates).
    pub fn watch_resource(&self, uri: &str, on: bool) {
        let first_or_last = {
            let mut watching = self.inner.watching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if on {
                let n = watching.entry(uri.to_owned()).or_insert(0);
                *n += 1;
                *n == 1
            } else {
                match watching.get_mut(uri) {
                    Some(n) if *n > 1 => {
                        *n -= 1;
                        false
                    }
                    Some(_) => {
                        watching.remove(uri);
                        true
                    }
                    None => false,
                }
            }
        };
        if !first_or_last {
            return;
        }
        let registry = self.registry();
        let origin = registry.resolve_uri(uri).or_else(|| {
            let server = registry.template_servers().into_iter().next()?;
            Some(Origin { server, name: uri.to_owned() })
        });
        if let Some(origin) = origin
            && let Some(up) = self.upstream(&origin.server)
        {
            up.watch_resource(&origin.name, on);
        }
    }

    /// Updates of watched resources (`notifications/resources/updated` from their upstreams),
    /// by the URIs the gateway offers. A receiver that lags behind (`Lagged`) should treat
    /// every [watched](Self::watched_resources) resource as updated.
    pub fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.resource_updates.subscribe()
    }

    /// The resources watched through [`watch_resource`](Self::watch_resource), by the URIs the
    /// gateway offers.
    pub fn watched_resources(&self) -> Vec<String> {
        watched_uris(&self.inner)
    }

    /// [`watched_resources`](Self::watched_resources) for a task that must not keep the host
    /// alive (empty once it is gone).
    pub(crate) fn watched_later(&self) -> impl Fn() -> Vec<String> + Send + 'static {
        let weak = Arc::downgrade(&self.inner);
        move || weak.upgrade().map(|inner| watched_uris(&inner)).unwrap_or_default()
    }

    /// How the host introduces itself.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The config in force.
    pub fn config(&self) -> Config {
        read(&self.inner.config).clone()
    }

    /// Waits until every enabled, non-lazy upstream is ready or has failed, at most `within`,
    /// and for each at most its own `startup_timeout` (and a second): one that did not start in
    /// that time goes on restarting in the background, but is not waited for.
    pub async fn ready(&self, within: Duration) {
        let ups: Vec<Upstream> =
            read(&self.inner.upstreams).values().filter(|u| u.config().enabled && !u.config().lazy).cloned().collect();
        let own = |u: &Upstream| within.min(u.config().startup_timeout + Duration::from_secs(1));
        futures_util::future::join_all(ups.iter().map(|u| u.wait_settled(own(u)))).await;
        // Let the registry catch up with what they listed.
        let target = *self.inner.changes.borrow();
        let mut rx = self.inner.rebuilt.subscribe();
        let _ = tokio::time::timeout(COALESCE * 8, rx.wait_for(|v| *v >= target)).await;
    }

    /// The registry as it is now.
    pub fn registry(&self) -> Arc<Registry> {
        self.inner.registry.borrow().clone()
    }

    /// Notified whenever the registry is rebuilt: after a change of an upstream's lists, an
    /// upstream's `list_changed` (even when its lists came back the same), a reload.
    pub fn watch_registry(&self) -> watch::Receiver<Arc<Registry>> {
        self.inner.registry.subscribe()
    }

    /// Every upstream's status, by name.
    pub fn statuses(&self) -> Vec<UpstreamStatus> {
        read(&self.inner.upstreams).values().map(Upstream::status).collect()
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<Upstream> {
        read(&self.inner.upstreams).get(name).cloned()
    }

    fn upstream_names(&self) -> Vec<String> {
        read(&self.inner.upstreams).keys().cloned().collect()
    }

    /// Calls the exposed tool `name`: resolved in the registry, checked by oversight, sent to
    /// its upstream, and recorded. Every failure is a tool result with `isError` whose text says
    /// what happened and names the server.
    pub async fn call_tool(&self, name: &str, arguments: Value, cx: Option<&RequestContext>) -> CallToolResult {
        self.try_call_tool(name, arguments, cx).await.unwrap_or_else(|e| tool_error(e.to_string()))
    }

    /// [`call_tool`](Self::call_tool), except that an upstream's JSON-RPC error (an unknown
    /// tool, invalid params) comes back as it was, for a gateway to relay with its code and
    /// data. Every other failure is still a result with `isError`.
    ///
    /// # Errors
    /// [`HostError::Upstream`] with [`UpstreamError::Refused`]: the upstream's error object.
    pub async fn try_call_tool(
        &self,
        name: &str,
        arguments: Value,
        cx: Option<&RequestContext>,
    ) -> Result<CallToolResult, HostError> {
        self.try_call_tool_relayed(name, arguments, cx).await.map(RelayedToolResult::into_result)
    }

    /// [`try_call_tool`](Self::try_call_tool), the result keeping the JSON the upstream sent
    /// while nothing on the call path changed it: how the gateway answers with the upstream's
    /// bytes instead of encoding the result again
    /// ([`RelayedToolResult`](portico::RelayedToolResult)). Oversight sees the decoded result
    /// all the same, and everything the JSON says is in it.
    ///
    /// # Errors
    /// As for [`try_call_tool`](Self::try_call_tool).
    pub async fn try_call_tool_relayed(
        &self,
        name: &str,
        arguments: Value,
        cx: Option<&RequestContext>,
    ) -> Result<RelayedToolResult, HostError> {
        let span = crate::telemetry::span(Method::CallTool, name, cx);
        self.call_tool_in(name, arguments, cx, None).instrument(span).await
    }

    /// [`call_tool`](Self::call_tool) on behalf of `principal`, from no client session: how the
    /// host's own interfaces (the web UI's "try it") call a tool. Policy, approval and the
    /// activity log see `principal`.
    pub async fn call_tool_by(&self, name: &str, arguments: Value, principal: &str) -> CallToolResult {
        let span = crate::telemetry::span(Method::CallTool, name, None);
        self.call_tool_in(name, arguments, None, Some(principal))
            .instrument(span)
            .await
            .map_or_else(|e| tool_error(e.to_string()), RelayedToolResult::into_result)
    }

    /// The calls in progress through this host.
    pub fn activity(&self) -> &crate::activity::Activity {
        &self.inner.activity
    }

    /// The tools a person switched off.
    pub fn switches(&self) -> &crate::switches::Switches {
        &self.inner.switches
    }

    /// Switches the exposed tool `name` on or off for every client: an "off" tool is left out
    /// of `tools/list` (clients get `list_changed`) and its calls are refused.
    pub fn set_tool_enabled(&self, name: &str, on: bool) {
        if self.inner.switches.set(name, on) {
            self.inner.changes.send_modify(|n| *n += 1);
        }
    }

    /// Switches the exposed tool `name` on or off for the downstream session `session` alone
    /// (a [`ConnectionId`](portico::server::ConnectionId) number, as
    /// [`client_sessions`](Self::client_sessions) lists them): it leaves that session's
    /// `tools/list`, connected clients get `list_changed`, and that session's calls to it are
    /// refused.
    pub fn set_tool_enabled_for(&self, name: &str, session: u64, on: bool) {
        if self.inner.switches.set_for(session, name, on) {
            self.inner.changes.send_modify(|n| *n += 1);
        }
    }

    /// The downstream sessions connected to the gateway (handshake era; heard from within
    /// [`clients::IDLE`](crate::clients::IDLE)).
    pub fn client_sessions(&self) -> Vec<crate::clients::ClientSession> {
        for gone in self.inner.clients.prune() {
            self.inner.switches.forget(gone);
        }
        self.inner.clients.list()
    }

    pub(crate) fn clients(&self) -> &crate::clients::Clients {
        &self.inner.clients
    }

    /// What the host has measured, in Prometheus text format (`GET /metrics`), with `pending`
    /// approvals.
    pub fn metrics(&self, pending: usize) -> String {
        self.inner.metrics.render(pending, &self.statuses())
    }

    /// Applies a new config: new servers start, removed ones stop, changed ones restart, and
    /// unchanged ones are not touched (their calls in flight go on). The registry follows, and
    /// connected clients get one `list_changed`.
    pub async fn reload(&self, config: Config) -> Reloaded {
        if let Err(e) = self.inner.oversight.reload(&config) {
            tracing::error!(target: "portico::host", "the new policy is not used, the old one stays: {e}");
        }
        let mut done = Reloaded::default();
        let mut stopping = Vec::new();
        {
            let old = read(&self.inner.config).clone();
            let mut ups = write(&self.inner.upstreams);
            let names: HashSet<&String> = old.servers.keys().chain(config.servers.keys()).collect();
            let mut names: Vec<&String> = names.into_iter().collect();
            names.sort();
            for name in names {
                match (old.servers.get(name), config.servers.get(name)) {
                    (Some(_), None) => {
                        if let Some(up) = ups.remove(name) {
                            stopping.push(up);
                        }
                        done.removed.push(name.clone());
                    }
                    (None, Some(new)) => {
                        ups.insert(name.clone(), self.start_upstream(new.clone(), &config));
                        done.added.push(name.clone());
                    }
                    (Some(old_cfg), Some(new))
                        if old_cfg == new && old.gateway.ping_interval == config.gateway.ping_interval =>
                    {
                        done.unchanged.push(name.clone());
                    }
                    (Some(_), Some(new)) => {
                        if let Some(up) = ups.insert(name.clone(), self.start_upstream(new.clone(), &config)) {
                            stopping.push(up);
                        }
                        done.restarted.push(name.clone());
                    }
                    (None, None) => {}
                }
            }
            *write(&self.inner.config) = config;
        }
        for up in &stopping {
            up.stop();
        }
        futures_util::future::join_all(stopping.iter().map(Upstream::stopped)).await;
        self.inner.changes.send_modify(|n| *n += 1);
        done
    }

    /// Stops every upstream and waits for their processes to end.
    pub async fn shutdown(&self) {
        self.late_records_written().await;
        self.inner.stop.cancel();
        let ups: Vec<Upstream> = read(&self.inner.upstreams).values().cloned().collect();
        for up in &ups {
            up.stop();
        }
        futures_util::future::join_all(ups.iter().map(Upstream::stopped)).await;
    }

    /// Waits (at most 5 s) for the records of calls dropped before they ended; says so when
    /// some are still not written.
    pub(crate) async fn late_records_written(&self) {
        if !self.inner.late.written(std::time::Duration::from_secs(5)).await {
            tracing::error!(target: "portico::audit", "stopping before the records of some cancelled calls were written");
        }
    }

    /// The exposed tools left out of `principal`'s `tools/list` beyond what every client is
    /// shown (hidden deny rules naming principals); empty when no rule depends on the principal.
    pub fn hidden_for(&self, principal: &str) -> HashSet<String> {
        let registry = self.registry();
        let mut hidden = HashSet::new();
        for (name, entry) in &registry.tools {
            match self.inner.oversight.hides_for(entry, principal) {
                None => return HashSet::new(),
                Some(true) => {
                    hidden.insert(name.clone());
                }
                Some(false) => {}
            }
        }
        hidden
    }

    /// Whether oversight leaves this tool out of `tools/list`.
    pub fn hides(&self, entry: &crate::registry::ToolEntry) -> bool {
        if !self.inner.switches.is_on(&entry.tool.name) {
            return true;
        }
        let trusted = read(&self.inner.config).servers.get(&entry.origin.server).is_some_and(|s| s.trusted);
        self.inner.oversight.hides(entry, trusted)
    }

    /// Whether every enabled upstream is ready.
    pub fn all_ready(&self) -> bool {
        self.statuses().iter().all(|s| matches!(s.state, State::Ready | State::Stopped | State::Idle))
    }
}

/// Who is calling: the subject an authorization layer in front of the gateway put in the
/// request's extensions ([`Principal`]), else `local` (stdio, or HTTP without authorization).
pub(crate) fn principal(cx: Option<&RequestContext>) -> &str {
    cx.map_or("local", |cx| principal_in(cx.extensions()))
}

/// The principal a request's extensions name: an authorization layer's [`Principal`], else a
/// checked token's subject (else its client), else `local`.
pub(crate) fn principal_in(extensions: &portico::http::Extensions) -> &str {
    if let Some(p) = extensions.get::<Principal>() {
        return p.0.as_str();
    }
    // A token checked by `[auth]` (the SDK's resource server): its subject, else its client.
    match extensions.get::<portico::auth::server::AuthInfo>() {
        Some(info) => info.subject().or(info.client_id()).unwrap_or("unknown"),
        None => "local",
    }
}

/// The authenticated subject of a request, as an authorization layer in front of the gateway
/// records it in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

fn tool_error(text: String) -> CallToolResult {
    let mut r = CallToolResult::new(vec![ContentBlock::text(text)]);
    r.is_error = Some(true);
    r
}

fn cache_path(config: &Config, server: &str) -> PathBuf {
    config.gateway.state_dir.join("catalog").join(format!("{server}.json"))
}

fn load_cached(path: &std::path::Path) -> Option<Catalog> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn store_cached(path: &std::path::Path, catalog: &Catalog) {
    let Some(dir) = path.parent() else { return };
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(catalog).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = write() {
        tracing::warn!(target: "portico::host", "cannot cache the tool list at {}: {e}", path.display());
    }
}

/// Logs each tool whose definition (description, schemas, annotations…) changed between two
/// registries: an upstream that changes a tool after it was listed ("rug pull") is named, and
/// stored "always allow" answers for it stop applying (see `policy::store`).
///
/// Also warns, once per new or changed tool, about descriptions that may hide instructions
/// (`registry::description_warnings`); the descriptions are passed on as they are.
fn changed_tools(before: &Registry, after: &Registry) -> Vec<crate::router::ToolChange> {
    let mut changes = Vec::new();
    for (name, now) in &after.tools {
        let was = before.tools.get(name);
        let warnings = if was.is_none_or(|w| w.tool.description != now.tool.description) {
            crate::registry::description_warnings(&now.tool)
        } else {
            Vec::new()
        };
        for warning in &warnings {
            tracing::warn!(target: "portico::host", "tool `{name}` of server `{}`: {warning}", now.origin.server);
        }
        let Some(was) = was else { continue };
        if was.origin == now.origin && was.tool != now.tool {
            tracing::warn!(
                target: "portico::host",
                "tool `{name}` of server `{}` changed its definition (description, schema or annotations) \
                 since it was last listed; \"always allow\" answers given for the old one no longer apply",
                now.origin.server
            );
            changes.push(crate::router::ToolChange {
                server: now.origin.server.clone(),
                exposed: name.clone(),
                original: now.origin.name.clone(),
                before: crate::policy::store::definition_digest(&was.tool),
                after: crate::policy::store::definition_digest(&now.tool),
                description: now.tool.description.clone(),
                warnings,
            });
        }
    }
    changes
}

/// The URIs being watched (see `Host::watch_resource`).
fn watched_uris(inner: &Inner) -> Vec<String> {
    let watching = inner.watching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    watching.keys().cloned().collect()
}

/// Rebuilds the registry when upstreams' catalogs change, gathering changes that arrive
/// together so connected clients see one `list_changed`.
async fn rebuild(inner: std::sync::Weak<Inner>, mut changes: watch::Receiver<u64>) {
    loop {
        if changes.changed().await.is_err() {
            return;
        }
        tokio::time::sleep(COALESCE).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.stop.is_cancelled() {
            return;
        }
        let version = *changes.borrow_and_update();
        let config = read(&inner.config).clone();
        let catalogs: Vec<(ServerConfig, Arc<Catalog>)> = {
            let ups = read(&inner.upstreams);
            config
                .servers
                .values()
                .filter(|s| s.enabled)
                .filter_map(|s| ups.get(&s.name).map(|u| (s.clone(), u.catalog())))
                .collect()
        };
        for (server, catalog) in &catalogs {
            if server.lazy && !catalog.tools.is_empty() {
                store_cached(&cache_path(&config, &server.name), catalog);
            }
        }
        let mut registry = Registry::build(catalogs.iter().map(|(s, c)| (s, &**c)), &config.gateway.separator);
        registry.share_unchanged(&inner.registry.borrow());
        for conflict in &registry.conflicts {
            tracing::error!(target: "portico::host", "{conflict}");
        }
        let changes = changed_tools(&inner.registry.borrow(), &registry);
        if !changes.is_empty() {
            // Recorded beside the rebuild, not before it: a slow activity log must not hold
            // back the clients' `list_changed`.
            let oversight = inner.oversight.clone();
            tokio::spawn(async move { oversight.tools_changed(&changes).await });
        }
        let rebuilt = Arc::new(registry);
        // Watchers hear of every rebuild, changed or not: an upstream's list_changed is passed
        // on even when its lists came back the same.
        inner.registry.send_modify(|current| {
            if **current != *rebuilt {
                *current = rebuilt.clone();
            }
        });
        inner.rebuilt.send_replace(version);
    }
}

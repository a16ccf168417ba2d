//! Upstreams: one supervised connection to each configured MCP server.
//!
//! An [`Upstream`] owns a supervisor task that starts the server (a child process, or an HTTP
//! connection), fetches what it offers, pings it, and starts it again with exponential backoff
//! and jitter when it is lost. Calls go through [`Upstream::call_tool`] and its siblings, which
//! apply the server's limits (concurrent calls, timeout reset by progress, result size) and turn
//! every failure into an error that names the server.

mod handler;
mod isolate;
mod relay;
mod spawn;
pub mod status;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use portico::RelayedToolResult;
use portico::client::{CallOptions, Client};
use portico::schema::SubscriptionFilter;
use portico::schema::{CallToolResult, GetPromptResult, Implementation, ReadResourceResult};
use portico::server::RequestContext;
use portico::transport::http::client::HttpClientTransport;
use rand::Rng;
use tokio::sync::{Notify, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, ServerKind};
use crate::registry::Catalog;
use status::Tail;
pub use status::{State, UpstreamStatus};

/// What sees an upstream's progress reports for one call ([`Upstream::call_tool_observed`]).
pub type ProgressObserver = Arc<dyn Fn(&portico::schema::ProgressNotificationParams) + Send + Sync>;

/// How long an upstream must stay ready before its count of failures in a row starts again.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// Why a call to an upstream did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The server is not connected (starting, restarting, failed or stopped).
    #[error("server `{server}` is {state}{}", reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    Unavailable {
        /// The server.
        server: String,
        /// Its state.
        state: &'static str,
        /// Its last error.
        reason: Option<String>,
    },
    /// The server went away during the call.
    #[error("server `{server}` stopped during the call: {reason}")]
    Lost {
        /// The server.
        server: String,
        /// What happened.
        reason: String,
    },
    /// No answer (and no progress) within the server's timeout.
    #[error("server `{server}` did not answer within {seconds} s")]
    Timeout {
        /// The server.
        server: String,
        /// The timeout.
        seconds: u64,
    },
    /// The result was larger than `max_result_bytes`.
    #[error("server `{server}` returned {size} bytes, more than its limit of {limit}")]
    TooLarge {
        /// The server.
        server: String,
        /// The result's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` answered with an error: {message} ({code})")]
    Refused {
        /// The server.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
        /// Its data, passed on as it came.
        data: Option<serde_json::Value>,
    },
    /// The downstream call was cancelled.
    #[error("the call to server `{server}` was cancelled")]
    Cancelled {
        /// The server.
        server: String,
    },
}

/// A connected client and the process behind it.
struct Live {
    client: Arc<Client>,
    child: Option<portico::transport::child::ChildHandle>,
}

struct Shared {
    config: ServerConfig,
    info: Implementation,
    ping: Option<Duration>,
    /// Where tokens are kept.
    state_dir: std::path::PathBuf,
    status: Mutex<UpstreamStatus>,
    tail: Arc<Mutex<Tail>>,
    client: watch::Sender<Option<Arc<Client>>>,
    catalog: watch::Sender<Arc<Catalog>>,
    /// Wakes the supervisor: a lazy first use, a restart asked for, or a `list_changed`.
    wake: Notify,
    refresh: Notify,
    restart: Notify,
    stop: CancellationToken,
    limit: Semaphore,
    restarts: AtomicU64,
    calls: handler::InFlight,
    /// Per-client instances (`isolate = "per-client"`).
    instances: isolate::Instances,
    /// Bumped when the catalog changes, for the host's registry.
    changes: watch::Sender<u64>,
    /// What the upstream's own requests (sampling, elicitation, roots) pass through.
    oversight: Arc<dyn crate::router::Oversight>,
    /// The upstream resources someone downstream watches: subscribed while the server runs.
    watched: watch::Sender<std::collections::BTreeSet<String>>,
    /// `notifications/resources/updated` from the upstream (its own URIs).
    updated: tokio::sync::broadcast::Sender<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One upstream server under supervision. Cheap to clone.
#[derive(Clone)]
pub struct Upstream {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("name", &self.shared.config.name).finish_non_exhaustive()
    }
}

impl Upstream {
    /// Starts supervising `config` (a lazy or disabled server is not started yet). `changes` is
    /// bumped whenever the server's catalog changes. `info` is how the host introduces itself;
    /// `ping` is how often a ready server is pinged. The upstream's own requests (sampling,
    /// elicitation, roots) pass `oversight`.
    pub fn start(
        config: ServerConfig,
        info: Implementation,
        ping: Option<Duration>,
        state_dir: std::path::PathBuf,
        changes: watch::Sender<u64>,
        oversight: Arc<dyn crate::router::Oversight>,
    ) -> Upstream {
        let kind = match config.kind {
            ServerKind::Stdio { .. } => "stdio",
            ServerKind::Http { .. } => "http",
        };
        let state = if !config.enabled {
            State::Stopped
        } else if config.lazy {
            State::Idle
        } else {
            State::Starting
        };
        let status = UpstreamStatus {
            name: config.name.clone(),
            kind,
            state,
            protocol_version: None,
            server: None,
            tools: 0,
            restarts: 0,
            last_error: None,
            pid: None,
            ready_since: None,
            stderr_tail: Vec::new(),
        };
        let shared = Arc::new(Shared {
            limit: Semaphore::new(config.max_concurrent),
            info,
            ping,
            state_dir,
            status: Mutex::new(status),
            tail: Arc::default(),
            client: watch::channel(None).0,
            catalog: watch::channel(Arc::default()).0,
            wake: Notify::new(),
            refresh: Notify::new(),
            restart: Notify::new(),
            stop: CancellationToken::new(),
            restarts: AtomicU64::new(0),
            calls: handler::InFlight::default(),
            instances: isolate::Instances::default(),
            changes,
            oversight,
            watched: watch::channel(std::collections::BTreeSet::new()).0,
            updated: tokio::sync::broadcast::channel(256).0,
            config,
        });
        if shared.config.enabled {
            tokio::spawn(supervise(shared.clone()));
        }
        Upstream { shared }
    }

    /// Starts (`on`) or stops watching the upstream resource `uri`: it is subscribed to
    /// (`resources/subscribe`, or a `subscriptions/listen` naming it in 2026-07-28) while
    /// watched, again after every restart. Counting watchers is the caller's business.
    pub fn watch_resource(&self, uri: &str, on: bool) {
        self.shared.watched.send_if_modified(|set| if on { set.insert(uri.to_owned()) } else { set.remove(uri) });
    }

    /// The upstream's `notifications/resources/updated`, by its own URIs.
    pub fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.shared.updated.subscribe()
    }

    /// Its config.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// What it offers, as last listed (empty until it first connects).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog.borrow().clone()
    }

    /// Offers `catalog` until the server has connected and listed for itself: a lazy server's
    /// list from its last run, so it can be offered before its first use starts it.
    pub fn seed_catalog(&self, catalog: Catalog) {
        if self.shared.client.borrow().is_none() {
            publish_catalog(&self.shared, catalog);
        }
    }

    /// A snapshot of its status.
    pub fn status(&self) -> UpstreamStatus {
        let mut s = lock(&self.shared.status).clone();
        s.restarts = self.shared.restarts.load(Ordering::Relaxed);
        s.stderr_tail = lock(&self.shared.tail).lines();
        s
    }

    /// Waits until it is ready, failed or stopped, or `within` passes; starts a lazy one.
    /// Returns the state it ended in.
    pub async fn wait_settled(&self, within: Duration) -> State {
        self.shared.wake.notify_one();
        let deadline = Instant::now() + within;
        let mut client = self.shared.client.subscribe();
        loop {
            let state = lock(&self.shared.status).state;
            if matches!(state, State::Ready | State::Degraded | State::Failed | State::Stopped) {
                return state;
            }
            let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
            if left.is_zero() {
                return state;
            }
            let _ = tokio::time::timeout(left, client.changed()).await;
        }
    }

    /// Asks for a restart now (the backoff and the failure count start again).
    pub fn restart(&self) {
        self.shared.restart.notify_one();
        self.shared.wake.notify_one();
    }

    /// Stops it: the connection is closed and a child process is ended (stdin closed, then
    /// SIGTERM, then SIGKILL, to its whole process group). Calls in flight fail, naming it.
    pub fn stop(&self) {
        self.shared.stop.cancel();
    }

    /// Waits until a stopped upstream's child has exited (bounded by the shutdown steps).
    pub async fn stopped(&self) {
        let mut rx = self.shared.client.subscribe();
        while !(self.shared.stop.is_cancelled()
            && rx.borrow().is_none()
            && lock(&self.shared.status).state == State::Stopped)
        {
            if tokio::time::timeout(Duration::from_millis(50), rx.changed()).await.is_ok_and(|r| r.is_err()) {
                return;
            }
        }
    }

    /// The client a call from `cx` goes to: its session's own with `isolate = "per-client"`,
    /// the shared one otherwise (and for calls from no session).
    async fn client_for(&self, cx: Option<&RequestContext>) -> Result<Arc<Client>, UpstreamError> {
        match cx {
            Some(cx) if self.shared.config.isolate == crate::config::Isolation::PerClient => {
                // The shared connection must be up: it is how the server's tools are known.
                self.client().await?;
                // Boxed: opening an instance is rare, and its future would otherwise sit inside
                // every call's (see `Host::call_tool_in`).
                Box::pin(self.shared.instances.client(&self.shared, cx)).await
            }
            _ => self.client().await,
        }
    }

    /// How many per-client instances are open.
    pub fn client_instances(&self) -> usize {
        self.shared.instances.len()
    }

    /// The connected client, starting a lazy server and waiting for one that is starting.
    async fn client(&self) -> Result<Arc<Client>, UpstreamError> {
        if let Some(c) = self.shared.client.borrow().clone() {
            return Ok(c);
        }
        let state = lock(&self.shared.status).state;
        if matches!(state, State::Idle | State::Starting) {
            Box::pin(self.wait_settled(self.shared.config.startup_timeout)).await;
            if let Some(c) = self.shared.client.borrow().clone() {
                return Ok(c);
            }
        }
        let s = lock(&self.shared.status);
        Err(UpstreamError::Unavailable {
            server: self.shared.config.name.clone(),
            state: s.state.as_str(),
            reason: s.last_error.clone(),
        })
    }

    fn lost(&self, e: &portico::Error) -> UpstreamError {
        let server = self.shared.config.name.clone();
        if e.is_timeout() {
            return UpstreamError::Timeout { server, seconds: self.shared.config.timeout.as_secs() };
        }
        if e.is_cancelled() {
            return UpstreamError::Cancelled { server };
        }
        if let Some(wire) = e.peer_error() {
            return UpstreamError::Refused {
                server,
                code: wire.code.0,
                message: wire.message.clone(),
                data: wire.data.clone(),
            };
        }
        UpstreamError::Lost { server, reason: e.to_string() }
    }

    /// Calls the upstream's tool `name` (its own name, not the exposed one). Progress goes to
    /// `cx`'s caller, a downstream cancellation cancels the upstream call, and input requests
    /// the upstream makes during the call go to `cx`'s client.
    ///
    /// # Errors
    /// Any [`UpstreamError`]; a tool that reports failure is a result with `isError`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        cx: Option<&RequestContext>,
    ) -> Result<CallToolResult, UpstreamError> {
        self.call_tool_observed(name, arguments, cx, None).await.map(RelayedToolResult::into_result)
    }

    /// [`call_tool`](Self::call_tool), with the upstream's progress reports also shown to
    /// `observe` (the host's list of calls in progress), whether or not a client is calling.
    /// The result keeps the JSON the upstream sent unless it was cut to the size cap, for the
    /// gateway to answer with (`_meta`, from which the upstream's serverInfo is taken out, is
    /// always answered from the decoded result).
    ///
    /// # Errors
    /// Any [`UpstreamError`].
    pub async fn call_tool_observed(
        &self,
        name: &str,
        arguments: serde_json::Value,
        cx: Option<&RequestContext>,
        observe: Option<ProgressObserver>,
    ) -> Result<RelayedToolResult, UpstreamError> {
        let client = self.client_for(cx).await?;
        let _permit = self.acquire().await?;
        let mut options = CallOptions::new().with_timeout(self.shared.config.timeout);
        // Progress and log messages of this call go to its caller, in order, before its result.
        let (call, forward) = match cx {
            Some(cx) => {
                let (tx, rx) = tokio::sync::mpsc::channel::<handler::Forward>(handler::FORWARD_QUEUE);
                let progress = tx.clone();
                let observe = observe.clone();
                options = options
                    .with_cancel(cx.cancellation().clone())
                    .with_progress(move |p| {
                        if let Some(observe) = &observe {
                            observe(&p);
                        }
                        let _ = progress.try_send(handler::Forward::Progress(p));
                    })
                    .with_input(relay::handler(self.shared.clone(), cx.clone()))
                    .with_capabilities(handler::capabilities_for(cx))
                    .with_on_task(relay::continue_as_task(cx));
                if let Some(trace) = crate::telemetry::outgoing(cx) {
                    options = options.with_trace_context(trace);
                }
                (Some(self.shared.calls.enter(cx.clone(), tx)), Some((rx, cx)))
            }
            None => {
                if let Some(observe) = observe {
                    options = options.with_progress(move |p| observe(&p));
                }
                (None, None)
            }
        };
        let run = std::pin::pin!(async move {
            let result = client.call_tool_relayed_with(name, arguments, options).await;
            // The call's senders go with it, so that the forwarding below ends.
            drop(call);
            result
        });
        let result = match forward {
            Some((rx, to)) => handler::forwarding(run, rx, to).await,
            None => run.await,
        };
        let mut result = result.map_err(|e| self.lost(&e))?;
        if crate::checks::has_meta_to_strip(&result.result().meta) {
            // `_meta` is always answered from the decoded result: the JSON stays.
            crate::checks::strip_meta(result.meta_mut());
        }
        // A tool result over the cap is cut and marked rather than refused. The JSON it came
        // as, when kept, is its size.
        let checked = match result.json() {
            Some(json) => self.check_len(json.get().len()),
            None => self.check_size(result.result()),
        };
        match checked {
            Ok(()) => Ok(result),
            Err(UpstreamError::TooLarge { size, limit, .. }) => {
                Ok(crate::checks::truncate(result.into_result(), size, limit).into())
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the upstream resource `uri`. With `cx`, the read runs on that client's instance
    /// (`isolate = "per-client"`), its cancellation reaches the upstream, and the upstream's
    /// input requests go to its client.
    ///
    /// # Errors
    /// Any [`UpstreamError`].
    pub async fn read_resource(
        &self,
        uri: &str,
        cx: Option<&RequestContext>,
    ) -> Result<ReadResourceResult, UpstreamError> {
        let options = self.options_for(cx);
        let mut result = self.limited(cx, |c| async move { c.read_resource_with(uri, options).await }).await?;
        crate::checks::strip_meta(&mut result.meta);
        self.check_size(&result)?;
        Ok(result)
    }

    /// Gets the upstream prompt `name` with `arguments`; `cx` as for
    /// [`read_resource`](Self::read_resource).
    ///
    /// # Errors
    /// Any [`UpstreamError`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: std::collections::BTreeMap<String, String>,
        cx: Option<&RequestContext>,
    ) -> Result<GetPromptResult, UpstreamError> {
        let options = self.options_for(cx);
        let mut result = self.limited(cx, |c| async move { c.get_prompt_with(name, arguments, options).await }).await?;
        crate::checks::strip_meta(&mut result.meta);
        self.check_size(&result)?;
        Ok(result)
    }

    /// A read's or prompt get's options for a call from `cx`: its cancellation, and its
    /// client for the upstream's input requests.
    fn options_for(&self, cx: Option<&RequestContext>) -> CallOptions {
        let Some(cx) = cx else { return CallOptions::new() };
        let options = CallOptions::new()
            .with_cancel(cx.cancellation().clone())
            .with_input(relay::handler(self.shared.clone(), cx.clone()))
            .with_capabilities(handler::capabilities_for(cx));
        match crate::telemetry::outgoing(cx) {
            Some(trace) => options.with_trace_context(trace),
            None => options,
        }
    }

    /// Runs `request` on `cx`'s client (see [`client_for`](Self::client_for)) within the
    /// server's concurrency limit and timeout, with its failures named for the server.
    async fn limited<T, Fut>(
        &self,
        cx: Option<&RequestContext>,
        request: impl FnOnce(Arc<Client>) -> Fut,
    ) -> Result<T, UpstreamError>
    where
        Fut: std::future::Future<Output = Result<T, portico::Error>>,
    {
        let client = self.client_for(cx).await?;
        let _permit = self.acquire().await?;
        tokio::time::timeout(self.shared.config.timeout, request(client))
            .await
            .map_err(|_| self.timeout())?
            .map_err(|e| self.lost(&e))
    }

    /// Asks the upstream to complete an argument (names already the upstream's own).
    ///
    /// # Errors
    /// Any [`UpstreamError`].
    pub async fn complete(
        &self,
        params: portico::schema::CompleteRequestParams,
    ) -> Result<portico::schema::CompleteResult, UpstreamError> {
        let client = self.client().await?;
        tokio::time::timeout(self.shared.config.timeout, client.complete(params))
            .await
            .map_err(|_| self.timeout())?
            .map_err(|e| self.lost(&e))
    }

    fn timeout(&self) -> UpstreamError {
        UpstreamError::Timeout {
            server: self.shared.config.name.clone(),
            seconds: self.shared.config.timeout.as_secs(),
        }
    }

    async fn acquire(&self) -> Result<tokio::sync::SemaphorePermit<'_>, UpstreamError> {
        match tokio::time::timeout(self.shared.config.timeout, self.shared.limit.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(UpstreamError::Unavailable {
                server: self.shared.config.name.clone(),
                state: "stopped",
                reason: None,
            }),
            Err(_) => Err(self.timeout()),
        }
    }

    fn check_size(&self, result: &impl serde::Serialize) -> Result<(), UpstreamError> {
        let mut counter = Counter(0);
        // Counting bytes as they are serialized: no buffer is built.
        let _ = serde_json::to_writer(&mut counter, result);
        self.check_len(counter.0)
    }

    /// A result of `size` bytes of JSON against the cap.
    fn check_len(&self, size: usize) -> Result<(), UpstreamError> {
        let limit = self.shared.config.max_result_bytes;
        if size > limit {
            return Err(UpstreamError::TooLarge { server: self.shared.config.name.clone(), size, limit });
        }
        Ok(())
    }
}

/// Counts what is written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn set_state(shared: &Shared, state: State, error: Option<String>) {
    let mut s = lock(&shared.status);
    s.state = state;
    if error.is_some() {
        s.last_error = error;
    }
    if state == State::Ready {
        s.ready_since = Some(SystemTime::now());
    }
    drop(s);
    // Wake anything waiting for a state change (`wait_settled` listens on the client channel).
    shared.client.send_modify(|_| {});
}

/// The supervisor: start, watch, restart with backoff, until stopped.
async fn supervise(shared: Arc<Shared>) {
    let config = &shared.config;
    if config.lazy {
        tokio::select! {
            () = shared.wake.notified() => {}
            () = shared.stop.cancelled() => {
                set_state(&shared, State::Stopped, None);
                return;
            }
        }
        set_state(&shared, State::Starting, None);
    }
    let mut failures: u32 = 0;
    loop {
        let started = Instant::now();
        let error = match connect(&shared).await {
            Err(e) => e,
            Ok(live) => {
                let reason = run(&shared, live).await;
                if shared.stop.is_cancelled() {
                    break;
                }
                if started.elapsed() > STABLE_AFTER {
                    failures = 0;
                }
                reason
            }
        };
        if shared.stop.is_cancelled() {
            break;
        }
        failures += 1;
        tracing::warn!(target: "portico::upstream", server = %config.name, "{error}");
        if config.restart.max_restarts > 0 && failures > config.restart.max_restarts {
            set_state(&shared, State::Failed, Some(format!("{error} (gave up after {failures} failures in a row)")));
            tokio::select! {
                () = shared.restart.notified() => failures = 0,
                () = shared.stop.cancelled() => break,
            }
        } else {
            set_state(&shared, State::Restarting, Some(error));
            let wait = backoff(config.restart.initial_backoff, config.restart.max_backoff, failures);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shared.restart.notified() => failures = 0,
                () = shared.stop.cancelled() => break,
            }
        }
        shared.restarts.fetch_add(1, Ordering::Relaxed);
    }
    shared.instances.close_all().await;
    set_state(&shared, State::Stopped, None);
}

/// `initial × 2^(failures-1)`, capped at `max`, times a random factor in [0.5, 1.5).
pub fn backoff(initial: Duration, max: Duration, failures: u32) -> Duration {
    let exp = initial.saturating_mul(1u32 << failures.saturating_sub(1).min(20));
    exp.min(max).mul_f64(rand::rng().random_range(0.5..1.5))
}

/// Starts the server and connects; fetches its catalog.
async fn connect(shared: &Arc<Shared>) -> Result<Live, String> {
    let deadline = tokio::time::Instant::now() + shared.config.startup_timeout;
    let (client, child) = open(shared, deadline, true).await?;
    match bounded(shared, deadline, fetch_catalog(&client)).await {
        Ok(catalog) => {
            publish_catalog(shared, catalog);
            Ok(Live { client, child })
        }
        Err(e) => Err(abandon(shared, Some(client), child, format!("listing failed: {e}"), true).await),
    }
}

/// Starts the server (spawn or connect) and completes the handshake, by `deadline`. The
/// `primary` connection's process id goes in the status.
async fn open(
    shared: &Arc<Shared>,
    deadline: tokio::time::Instant,
    primary: bool,
) -> Result<(Arc<Client>, Option<portico::transport::child::ChildHandle>), String> {
    let config = &shared.config;
    let handler = handler::UpstreamHandler::new(Arc::downgrade(shared));
    let builder = Client::builder(shared.info.clone())
        .handler(handler)
        .capabilities(handler::capabilities(config))
        .request_timeout(config.timeout)
        .max_notification_rate(config.max_notifications_per_sec)
        .probe_timeout(config.startup_timeout.min(Duration::from_secs(10)))
        .era(match config.protocol_version {
            None => portico::client::EraMode::Auto,
            Some(v) if v.is_stateless() => portico::client::EraMode::Stateless,
            Some(v) => portico::client::EraMode::Handshake(v),
        });
    let mut child = None;
    let connected = match &config.kind {
        ServerKind::Stdio { command, args, env, cwd } => {
            let tail = shared.tail.clone();
            let what = spawn::Spawn {
                command,
                args,
                env,
                cwd: cwd.as_ref(),
                max_message_size: config.max_result_bytes + 64 * 1024,
            };
            let (transport, handle) = spawn::spawn(&what, move |line| lock(&tail).push(line))
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            if primary {
                lock(&shared.status).pid = Some(handle.pid());
            }
            child = Some(handle);
            bounded(shared, deadline, builder.connect(transport)).await.map_err(|e| format!("handshake failed: {e}"))
        }
        ServerKind::Http { url, headers, oauth, .. } => {
            let mut transport =
                HttpClientTransport::new(url.clone()).max_message_size(config.max_result_bytes + 64 * 1024);
            for (k, v) in headers {
                transport = transport.header(k.as_str(), v.expose());
            }
            if let Some(oauth) = oauth {
                transport = transport.auth(oauth_client(shared, oauth).await?);
            }
            bounded(shared, deadline, builder.connect(transport)).await.map_err(|e| format!("cannot connect: {e}"))
        }
    };
    match connected {
        Ok(client) => Ok((Arc::new(client), child)),
        Err(e) => Err(abandon(shared, None, child, e, primary).await),
    }
}

/// The OAuth client of an HTTP upstream: tokens in `<state_dir>/tokens/<server>.json` (mode
/// 0600); with the authorization code grant, the sign-in URL is logged for the person (the
/// redirect comes back to a loopback listener).
async fn oauth_client(
    shared: &Shared,
    oauth: &crate::config::OAuthConfig,
) -> Result<portico::auth::OAuthClient, String> {
    use portico::auth::{FileTokenStore, GrantType, LoopbackRedirect, OAuthClient};
    let name = shared.config.name.clone();
    let dir = shared.state_dir.join("tokens");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    let store = FileTokenStore::new(dir.join(format!("{name}.json")));
    let mut builder =
        OAuthClient::builder().client_name(shared.info.name.clone()).token_store(store).address_policy(oauth.addresses);
    if let Some(id) = &oauth.client_id {
        builder = builder.client_credentials(id.clone(), oauth.client_secret.as_ref().map(|s| s.expose().to_owned()));
    }
    for scope in &oauth.scopes {
        builder = builder.scope(scope.clone());
    }
    if oauth.client_credentials {
        builder = builder.grant(GrantType::ClientCredentials);
    } else {
        let redirect = LoopbackRedirect::bind(0, move |url| {
            tracing::warn!(target: "portico::auth", server = %name, "sign in to use server `{name}`: {url}");
        })
        .await
        .map_err(|e| format!("cannot listen for the OAuth redirect: {e}"))?;
        builder = builder.redirect(redirect);
    }
    builder.build().map_err(|e| format!("OAuth: {e}"))
}

/// Runs a step of starting up until it ends, the startup deadline passes, or the upstream is
/// stopped. The step is never dropped half-way with its process left running: the caller
/// stops the child (`abandon`), which ends whatever the step left behind.
async fn bounded<T>(
    shared: &Shared,
    deadline: tokio::time::Instant,
    step: impl std::future::Future<Output = Result<T, portico::Error>>,
) -> Result<T, String> {
    tokio::select! {
        r = tokio::time::timeout_at(deadline, step) => match r {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("did not start within {} s", shared.config.startup_timeout.as_secs_f64())),
        },
        () = shared.stop.cancelled() => Err("stopped while starting".to_owned()),
    }
}

/// Ends a start that failed: closes the client, stops the child and says how it exited.
async fn abandon(
    shared: &Shared,
    client: Option<Arc<Client>>,
    child: Option<portico::transport::child::ChildHandle>,
    error: String,
    primary: bool,
) -> String {
    if let Some(client) = client {
        let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
    }
    if primary {
        lock(&shared.status).pid = None;
    }
    match child {
        Some(child) => match child.shutdown().await {
            Ok(status) if !status.success() => format!("{error} (the process exited: {status})"),
            _ => error,
        },
        None => error,
    }
}

/// Lists everything the server offers (every page), skipping what it does not declare.
async fn fetch_catalog(client: &Client) -> Result<Catalog, portico::Error> {
    let caps = client.server_capabilities().clone();
    let tasks = caps.extensions.as_ref().is_some_and(|e| e.contains_key(portico::schema::TASKS_EXTENSION));
    let mut catalog = Catalog { tasks, ..Catalog::default() };
    if caps.tools.is_some() {
        catalog.tools = client.list_all_tools().await?;
    }
    if caps.prompts.is_some() {
        catalog.prompts = client.list_all_prompts().await?;
    }
    if caps.resources.is_some() {
        catalog.resources = client.list_all_resources().await?;
        catalog.templates = client.list_all_resource_templates().await?;
    }
    Ok(catalog)
}

/// Offers `catalog`; `true` when it differs from what was offered (the host was told).
fn publish_catalog(shared: &Shared, catalog: Catalog) -> bool {
    lock(&shared.status).tools = catalog.tools.len();
    if **shared.catalog.borrow() == catalog {
        return false;
    }
    shared.catalog.send_replace(Arc::new(catalog));
    shared.changes.send_modify(|n| *n += 1);
    true
}

/// Brings the upstream's subscriptions in line with `wanted`. A 2026-07-28 server gets a new
/// `subscriptions/listen` (list changes and the wanted resources; the caller drops the old one
/// once it has the new); a handshake-era server gets `resources/subscribe` and
/// `unsubscribe` for the difference.
async fn watch_upstream(
    shared: &Shared,
    client: &Client,
    subscribed: &mut std::collections::BTreeSet<String>,
    wanted: &std::collections::BTreeSet<String>,
) -> Option<portico::client::Subscription> {
    let server = &shared.config.name;
    if client.protocol_version().is_stateless() {
        let mut filter = SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed();
        for uri in wanted {
            filter = filter.with_resource_subscription(uri.clone());
        }
        return match client.listen(filter).await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(target: "portico::upstream", %server, "no subscription stream: {e}");
                None
            }
        };
    }
    let can = client.server_capabilities().resources.as_ref().is_some_and(|r| r.subscribe == Some(true));
    if !can {
        return None;
    }
    for uri in wanted.difference(&subscribed.clone()) {
        match client.subscribe_resource(uri).await {
            Ok(()) => {
                subscribed.insert(uri.clone());
            }
            Err(e) => tracing::warn!(target: "portico::upstream", %server, %uri, "resources/subscribe failed: {e}"),
        }
    }
    for uri in subscribed.clone().difference(wanted) {
        let _ = client.unsubscribe_resource(uri).await;
        subscribed.remove(uri);
    }
    None
}

/// Serves calls through `live` until it is lost or stopped; returns why it ended.
async fn run(shared: &Arc<Shared>, mut live: Live) -> String {
    {
        let mut s = lock(&shared.status);
        s.protocol_version = Some(live.client.protocol_version().as_str().to_owned());
        let info = live.client.server_info();
        s.server = Some(format!("{} {}", info.name, info.version));
    }
    // In the stateless era list changes and resource updates come only on a subscription
    // stream; in the handshake era resources are subscribed to one by one.
    let mut watched = shared.watched.subscribe();
    let mut subscribed = std::collections::BTreeSet::new();
    let wanted = watched.borrow_and_update().clone();
    // Held for its lifetime: dropping it ends the stream.
    let mut _subscription = watch_upstream(shared, &live.client, &mut subscribed, &wanted).await;
    // Every level from the upstream; each downstream client's own level filters what it gets.
    if live.client.server_capabilities().logging.is_some()
        && let Err(e) = live.client.set_logging_level(portico::schema::LoggingLevel::Debug).await
    {
        tracing::debug!(target: "portico::upstream", server = %shared.config.name, "logging/setLevel failed: {e}");
    }
    shared.client.send_replace(Some(live.client.clone()));
    set_state(shared, State::Ready, None);
    let ping = shared.ping;
    let mut missed = 0u32;
    let reason = loop {
        let child_exit = async {
            match live.child.as_mut() {
                Some(child) => {
                    child.wait().await.map_or_else(|e| e.to_string(), |s| format!("the process exited ({s})"))
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shared.stop.cancelled() => break "stopped".to_owned(),
            () = shared.restart.notified() => break "restart asked for".to_owned(),
            Ok(()) = watched.changed() => {
                let now = watched.borrow_and_update().clone();
                if let Some(s) = watch_upstream(shared, &live.client, &mut subscribed, &now).await {
                    _subscription = Some(s);
                }
            }
            () = live.client.closed() => {
                // Say how the process ended when that is why (it closed its stdout as it died).
                let exited = match live.child.as_mut() {
                    Some(child) => tokio::time::timeout(Duration::from_millis(500), child.wait()).await.ok().and_then(Result::ok),
                    None => None,
                };
                break exited.map_or_else(|| "the connection closed".to_owned(), |s| format!("the process exited ({s})"));
            }
            reason = child_exit => break reason,
            () = shared.refresh.notified() => {
                // A list_changed: fetch again (once more if it fails, e.g. an expired session).
                let mut result = fetch_catalog(&live.client).await;
                if result.is_err() {
                    result = fetch_catalog(&live.client).await;
                }
                match result {
                    Ok(catalog) => {
                        // The upstream said its lists changed: the host passes that on even if
                        // they came back the same.
                        if !publish_catalog(shared, catalog) {
                            shared.changes.send_modify(|n| *n += 1);
                        }
                    }
                    Err(e) => tracing::warn!(target: "portico::upstream", server = %shared.config.name, "listing after list_changed failed: {e}"),
                }
            }
            () = sleep_or_never(ping) => {
                let timeout = shared.config.timeout.min(Duration::from_secs(10));
                match tokio::time::timeout(timeout, live.client.ping()).await {
                    Ok(Ok(())) => {
                        if missed > 0 {
                            missed = 0;
                            set_state(shared, State::Ready, None);
                        }
                    }
                    Ok(Err(e)) if e.is_closed() => break "the connection closed".to_owned(),
                    _ => {
                        missed += 1;
                        if missed >= 3 {
                            break format!("{missed} pings in a row went unanswered");
                        }
                        set_state(shared, State::Degraded, Some("a ping went unanswered".to_owned()));
                    }
                }
            }
        }
    };
    shared.client.send_replace(None);
    live.client.close().await;
    if let Some(child) = live.child.take() {
        let _ = child.shutdown().await;
    }
    lock(&shared.status).pid = None;
    reason
}

async fn sleep_or_never(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

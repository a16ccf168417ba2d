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
mod supervise;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use portico::RelayedToolResult;
use portico::client::{CallOptions, Client};
use portico::schema::{CallToolResult, GetPromptResult, Implementation, ReadResourceResult};
use portico::server::RequestContext;
use tokio::sync::{Notify, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, ServerKind};
use crate::registry::Catalog;
use status::Tail;
pub use status::{State, UpstreamStatus};
pub use supervise::backoff;
use supervise::{publish_catalog, supervise};

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

/// How many resource updates an upstream's channel holds for a receiver that has not read them
/// yet (see [`Upstream::resource_updates`]). The host's receiver passes each on at once; one that
/// falls behind anyway treats every watched resource as updated, so a small channel loses no
/// update, and an idle upstream does not hold hundreds of empty slots.
pub const UPDATES: usize = 16;

/// Passes on each resource update from `updates` (`send` returns `false` to stop), until the
/// channel closes. When some were missed (the receiver lagged), every URI that `watched`
/// returns is passed on instead: a resource said to be updated that was not costs a client one
/// read, while an update lost would leave it showing stale contents.
pub(crate) async fn pass_updates(
    mut updates: tokio::sync::broadcast::Receiver<String>,
    watched: impl Fn() -> Vec<String>,
    mut send: impl FnMut(Vec<String>) -> bool,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let uris = match updates.recv().await {
            Ok(uri) => vec![uri],
            Err(RecvError::Lagged(_)) => watched(),
            Err(RecvError::Closed) => return,
        };
        if !send(uris) {
            return;
        }
    }
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
    /// Held while the upstream waits for the answer to one of its own requests (a person may
    /// be answering): the timeouts of its calls do not run meanwhile.
    input_pause: portico::client::TimeoutPause,
    /// Per-client instances (`isolate = "per-client"`).
    instances: isolate::Instances,
    /// Bumped when the catalog changes, for the host's registry.
    changes: watch::Sender<u64>,
    /// What the upstream's own requests (sampling, elicitation, roots) pass through.
    oversight: Arc<dyn crate::router::Oversight>,
    /// The upstream resources someone downstream watches: subscribed while the server runs.
    watched: watch::Sender<std::collections::BTreeSet<String>>,
    /// `notifications/resources/updated` from the upstream (its own URIs); [`UPDATES`] slots.
    updated: tokio::sync::broadcast::Sender<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `options` with what passes from the caller's `_meta` to the upstream: its own members (the
/// protocol's keys are the upstream client's to write) and the trace context.
fn from_caller(options: CallOptions, cx: &RequestContext) -> CallOptions {
    let options = match cx.meta() {
        Some(members) => options.with_meta(members.clone()),
        None => options,
    };
    match crate::telemetry::outgoing(cx) {
        Some(trace) => options.with_trace_context(trace),
        None => options,
    }
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
            input_pause: portico::client::TimeoutPause::new(),
            instances: isolate::Instances::default(),
            changes,
            oversight,
            watched: watch::channel(std::collections::BTreeSet::new()).0,
            updated: tokio::sync::broadcast::channel(UPDATES).0,
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

    /// The upstream's `notifications/resources/updated`, by its own URIs. The channel holds
    /// [`UPDATES`] of them: a receiver that lags behind is told so (`Lagged`) and should treat
    /// every [watched](Self::watched_resources) resource as updated.
    pub fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.shared.updated.subscribe()
    }

    /// The upstream resources being watched (see [`watch_resource`](Self::watch_resource)).
    pub fn watched_resources(&self) -> Vec<String> {
        self.shared.watched.borrow().iter().cloned().collect()
    }

    /// [`watched_resources`](Self::watched_resources) for a task that must not keep the
    /// upstream alive (empty once it is gone).
    pub(crate) fn watched_later(&self) -> impl Fn() -> Vec<String> + Send + 'static {
        let weak = Arc::downgrade(&self.shared);
        move || weak.upgrade().map(|shared| shared.watched.borrow().iter().cloned().collect()).unwrap_or_default()
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
                if let Some(client) = self.shared.instances.open_client(cx) {
                    return Ok(client);
                }
                // Boxed: opening an instance is rare, and its future would otherwise sit inside
                // every call's (see `Host::call_tool_in`). Boxed only then: moving it into a box
                // on every call copied about 18k instructions' worth of bytes per call.
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
        let mut options = CallOptions::new()
            .with_timeout(self.shared.config.timeout)
            .with_timeout_pause(self.shared.input_pause.clone());
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
                options = from_caller(options, cx);
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
        from_caller(options, cx)
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

#[cfg(test)]
mod tests {
    use super::pass_updates;

    #[tokio::test]
    async fn updates_missed_by_a_lagging_receiver_become_updates_of_everything_watched() {
        let (tx, rx) = tokio::sync::broadcast::channel(2);
        // Five updates into two slots before the receiver reads: it lags, then reads the last two.
        for uri in ["a", "b", "c", "d", "e"] {
            tx.send(uri.to_owned()).expect("a receiver");
        }
        drop(tx);
        let mut sent = Vec::new();
        pass_updates(
            rx,
            || vec!["w1".to_owned(), "w2".to_owned()],
            |uris| {
                sent.push(uris);
                true
            },
        )
        .await;
        assert_eq!(sent, [vec!["w1", "w2"], vec!["d"], vec!["e"]]);
    }

    #[tokio::test]
    async fn passing_updates_stops_when_told_or_when_the_channel_closes() {
        let (tx, rx) = tokio::sync::broadcast::channel(4);
        tx.send("a".to_owned()).expect("a receiver");
        tx.send("b".to_owned()).expect("a receiver");
        let mut sent = 0;
        // `tx` is still alive: only `send`'s `false` ends it.
        pass_updates(rx, Vec::new, |_| {
            sent += 1;
            false
        })
        .await;
        assert_eq!(sent, 1);
    }
}

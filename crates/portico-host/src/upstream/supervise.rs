//! The supervisor of one upstream: it starts the server (a child process, or an HTTP
//! connection), completes the handshake and fetches the catalog within the startup timeout,
//! then watches it (pings, `list_changed`, a lost connection) and starts it again with
//! exponential backoff and jitter, until the upstream is stopped.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use portico::client::Client;
use portico::schema::SubscriptionFilter;
use portico::transport::http::client::HttpClientTransport;
use rand::Rng;

use super::{Live, STABLE_AFTER, Shared, State, handler, lock, spawn};
use crate::config::ServerKind;
use crate::registry::Catalog;

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
pub(super) async fn supervise(shared: Arc<Shared>) {
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
        // Each phase's future lives on the heap only while it runs: connecting takes about
        // 18 KB of state, which every idle upstream's task held for good when it was inline.
        let error = match Box::pin(connect(&shared)).await {
            Err(e) => e,
            Ok(live) => {
                let reason = Box::pin(run(&shared, live)).await;
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
pub(super) async fn open(
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
        catalog.tools = client.list_all_tools().await?.iter().map(crate::registry::ListedTool::new).collect();
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
pub(super) fn publish_catalog(shared: &Shared, catalog: Catalog) -> bool {
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
    let mut _subscription = Box::pin(watch_upstream(shared, &live.client, &mut subscribed, &wanted)).await;
    // Every level from the upstream; each downstream client's own level filters what it gets.
    if live.client.server_capabilities().logging.is_some()
        && let Err(e) = Box::pin(live.client.set_logging_level(portico::schema::LoggingLevel::Debug)).await
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
                if let Some(s) = Box::pin(watch_upstream(shared, &live.client, &mut subscribed, &now)).await {
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
            () = shared.refresh.notified() => Box::pin(refresh(shared, &live.client)).await,
            () = sleep_or_never(ping) => {
                let timeout = shared.config.timeout.min(Duration::from_secs(10));
                match Box::pin(tokio::time::timeout(timeout, live.client.ping())).await {
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
    // Rare steps are boxed while they run, so that the idle loop's state stays small.
    Box::pin(live.client.close()).await;
    if let Some(child) = live.child.take() {
        let _ = Box::pin(child.shutdown()).await;
    }
    lock(&shared.status).pid = None;
    reason
}

/// After a `list_changed`: lists again (once more if that fails, e.g. an expired session) and
/// offers what came back.
async fn refresh(shared: &Shared, client: &Client) {
    let mut result = fetch_catalog(client).await;
    if result.is_err() {
        result = fetch_catalog(client).await;
    }
    match result {
        Ok(catalog) => {
            // The upstream said its lists changed: the host passes that on even if they came
            // back the same.
            if !publish_catalog(shared, catalog) {
                shared.changes.send_modify(|n| *n += 1);
            }
        }
        Err(e) => {
            tracing::warn!(target: "portico::upstream", server = %shared.config.name, "listing after list_changed failed: {e}");
        }
    }
}

async fn sleep_or_never(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::Upstream;
    use tokio::sync::watch;

    /// A disabled upstream: its shared state, with no task running it.
    fn disabled_upstream() -> Upstream {
        let toml = "[servers.idle]\ncommand = \"portico-test-never-run\"\nenabled = false\n";
        let mut config = crate::config::for_test(toml);
        let server = config.servers.remove("idle").expect("one server");
        Upstream::start(
            server,
            portico::schema::Implementation::new("t", "0"),
            None,
            std::env::temp_dir(),
            watch::channel(0).0,
            Arc::new(crate::router::Unsupervised),
        )
    }

    #[tokio::test]
    async fn an_upstreams_task_holds_a_small_future_between_phases() {
        let up = disabled_upstream();
        // The task's own future, what a spawned upstream holds for as long as it lives. Its
        // phases (connecting, about 18 KB; running) are boxed while they run.
        let task = supervise(up.shared.clone());
        let size = std::mem::size_of_val(&task);
        assert!(size < 1024, "the supervisor's future is {size} bytes");
    }

    #[tokio::test]
    async fn a_running_upstream_waits_in_a_small_future() {
        let up = disabled_upstream();
        let upstream = portico::server::Server::builder(portico::schema::Implementation::new("s", "1")).build();
        let (a, b) = portico::transport::memory::pair();
        upstream.connect(b);
        let client = Client::builder(portico::schema::Implementation::new("c", "1")).connect(a).await.expect("connect");
        // What every idle upstream holds while it runs (boxed by its task): the waiting loop.
        // Listing again, pinging, subscribing and closing are boxed while they run; inline,
        // they made it about 4.9 KB (debug build).
        let running = run(&up.shared, Live { client: Arc::new(client), child: None });
        let size = std::mem::size_of_val(&running);
        assert!(size < 2048, "the running phase's future is {size} bytes");
    }
}

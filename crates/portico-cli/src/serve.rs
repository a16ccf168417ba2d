//! `portico serve`: the registry as one MCP server, on stdio or Streamable HTTP, with the
//! config file watched and applied when it changes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use std::sync::Arc;

use portico::transport::http::server::{ConnectionThreads, ServeOptions};
use portico_host::Host;
use portico_host::gateway::Gateway;
use tokio::net::TcpListener;

use crate::{Failure, config_path, load_config};

/// Where `--http` listens when no address is given or configured: loopback only.
const DEFAULT_HTTP: &str = "127.0.0.1:8765";

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP at ADDR (path /mcp) instead of stdio; without ADDR,
    /// `[gateway] listen` or 127.0.0.1:8765.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    http: Option<String>,
    /// Don't watch the config file for changes.
    #[arg(long)]
    no_watch: bool,
    /// How long the first listings wait for upstreams to start, in seconds. The handshake is
    /// answered at once; upstreams that start later join with a `list_changed`.
    #[arg(long, default_value_t = 30.0)]
    startup_wait: f64,
    /// Serve the admin API (approvals, servers, tools) at ADDR; without ADDR, `[admin] listen`
    /// or 127.0.0.1:8766. It needs the token in the state directory's `admin-token`.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    admin: Option<String>,
    /// Serve the web UI on the admin listener (turns on --admin at its default address when
    /// not given) and print a one-time login link; also `[admin] ui = true`.
    #[arg(long)]
    ui: bool,
    /// On SIGTERM or Ctrl-C: seconds the tool calls in flight may take to finish (new ones
    /// are refused); the rest are then cancelled, upstream too, and recorded as cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    drain_timeout: f64,
    /// With --http: threads that serve the connections. Each connection stays on one of them
    /// with the calls it makes, so a call does not hop between CPUs; 0 serves connections on
    /// the shared runtime. Default: one per CPU.
    #[arg(long, value_name = "N", requires = "http")]
    http_threads: Option<usize>,
}

impl ServeArgs {
    /// Whether this serves stdio (no `--http`).
    pub(crate) fn on_stdio(&self) -> bool {
        self.http.is_none()
    }

    /// The threads that serve HTTP connections (`--http-threads`): one per CPU this process may
    /// run on (its affinity counts, as for Tokio's workers) unless given.
    pub(crate) fn http_threads(&self) -> usize {
        self.http_threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
    }
}

pub(crate) async fn run(config: Option<&Path>, args: ServeArgs) -> Result<(), Failure> {
    let path = config_path(config)?;
    let grace = Duration::try_from_secs_f64(args.drain_timeout)
        .map_err(|e| Failure::Usage(format!("--drain-timeout {}: {e}", args.drain_timeout)))?;
    // One signal for every listener: set once SIGTERM or Ctrl-C arrives.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopping = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let loaded = load_config(Some(&path))?;
    let listen = loaded.gateway.listen;
    let supervisor = Arc::new(crate::supervisor(&loaded).await?);
    let ui = args.ui || loaded.admin.ui;
    let admin_addr = args.admin.clone().or_else(|| ui.then(String::new));
    let admin = match &admin_addr {
        None => None,
        Some(addr) => {
            let addr: SocketAddr = if addr.is_empty() {
                loaded.admin.listen
            } else {
                addr.parse().map_err(|e| Failure::Usage(format!("--admin {addr}: {e}")))?
            };
            let token = portico_host::admin::token(&loaded).map_err(|e| Failure::Usage(format!("admin token: {e}")))?;
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::Usage(format!("cannot listen on {addr} (admin): {e}")))?;
            Some((listener, token))
        }
    };
    let auth = loaded.auth.clone();
    let host = Host::with_oversight(loaded, supervisor.clone());
    let wait = Duration::try_from_secs_f64(args.startup_wait).unwrap_or(Duration::from_secs(30));
    let gateway = Gateway::with_startup_wait(host.clone(), wait);
    if let Some((listener, token)) = admin {
        let bound = listener.local_addr().map_err(|e| Failure::Usage(format!("admin: {e}")))?;
        let mut admin = portico_host::admin::Admin::new(host.clone(), supervisor.approvals().clone(), token, bound)
            .with_supervisor(supervisor.clone());
        if ui {
            admin = admin.with_ui();
        }
        if let Some(auth) = &auth {
            let server =
                portico_host::auth::admin_resource_server(auth, &format!("http://{bound}")).map_err(Failure::Usage)?;
            admin = admin.with_oauth(server);
        }
        supervisor.attach_http(true);
        eprintln!("portico: admin API on http://{bound} (token in the state directory's admin-token)");
        if let Some(link) = admin.login_link() {
            eprintln!("portico: web UI: open {link} (the link works once)");
        }
        let admin_stop = stopping();
        tokio::spawn(async move {
            if let Err(e) = admin.serve(listener, admin_stop).await {
                eprintln!("portico: the admin API stopped: {e}");
            }
        });
    }
    let _watcher = if args.no_watch { None } else { watch(&path, host.clone()) };
    // Started for HTTP only. Kept until the upstreams have stopped: a per-client upstream's
    // tasks run on the thread of the connection that opened its session.
    let threads = match args.http_threads() {
        n if n > 0 && args.http.is_some() => {
            let threads = ConnectionThreads::start(n)
                .map_err(|e| Failure::Unavailable(format!("cannot start {n} threads for HTTP: {e}")))?;
            tracing::debug!(target: "portico::runtime", http_threads = threads.len(), "connection threads started");
            Some(threads)
        }
        _ => None,
    };
    let result = match args.http {
        None => {
            announce_when_ready(&host, &gateway, wait, "stdio".to_owned());
            // On the signal, the server goes on answering while the calls in flight drain.
            let drained = async {
                stopping().await;
                let d = gateway.drain(grace).await;
                // Their answers are written by the server's own tasks: a moment to flush them.
                tokio::time::sleep(FLUSH).await;
                d
            };
            tokio::select! {
                r = gateway.serve_stdio() => r.map_err(|e| Failure::Usage(format!("stdio: {e}"))),
                d = drained => {
                    report(d);
                    Ok(())
                }
            }
        }
        Some(addr) => {
            let addr: SocketAddr = if addr.is_empty() {
                listen
                    .map_or_else(|| DEFAULT_HTTP.parse().map_err(|_| ()), Ok)
                    .map_err(|()| Failure::Usage("bad default".into()))?
            } else {
                addr.parse().map_err(|e| Failure::Usage(format!("--http {addr}: {e}")))?
            };
            let listener =
                TcpListener::bind(addr).await.map_err(|e| Failure::Usage(format!("cannot listen on {addr}: {e}")))?;
            let bound = listener.local_addr().map_or(addr, |a| a);
            let url = format!("http://{bound}/mcp");
            announce_when_ready(&host, &gateway, wait, url.clone());
            let mut endpoint = gateway.http();
            if let Some(auth) = &auth {
                endpoint =
                    endpoint.authorization(portico_host::auth::resource_server(auth, &url).map_err(Failure::Usage)?);
                eprintln!("portico: OAuth: tokens from {} are required at {url}", auth.issuer);
            }
            // On the signal, no new connection is taken, and the server finishes the requests in
            // progress once the calls in flight have drained.
            let drain = {
                let gateway = gateway.clone();
                let stop = stopping();
                tokio::spawn(async move {
                    stop.await;
                    report(gateway.drain(grace).await);
                })
            };
            let options = match &threads {
                Some(threads) => ServeOptions::default().with_connection_threads(threads.clone()),
                None => ServeOptions::default(),
            };
            let served = endpoint
                .build()
                .serve_with_options(listener, stopping(), options)
                .await
                .map_err(|e| Failure::Usage(format!("http: {e}")));
            let _ = drain.await;
            served
        }
    };
    host.shutdown().await;
    crate::close_audit(&supervisor).await;
    drop(threads);
    result
}

/// How long the stdio server gets to write the last answers after draining.
const FLUSH: Duration = Duration::from_millis(200);

/// Says on stderr what draining did, when there was anything in flight.
fn report(d: portico_host::Drained) {
    if d.in_flight > 0 {
        eprintln!(
            "portico: stopping: {} call(s) in flight, {} finished, {} cancelled{}",
            d.in_flight,
            d.finished,
            d.cancelled,
            if d.stuck > 0 { format!(", {} did not end after cancelling", d.stuck) } else { String::new() }
        );
    }
}

/// Tells the person on stderr what is served, once the upstreams have started (serving began
/// already: the handshake never waits for upstreams).
fn announce_when_ready(host: &Host, gateway: &Gateway, wait: Duration, on: String) {
    let (host, gateway) = (host.clone(), gateway.clone());
    tokio::spawn(async move {
        host.ready(wait).await;
        gateway.synced(Duration::from_secs(1)).await;
        announce(&host, &on);
        // Start-up is over: its code's pages go back to the page cache (see `pages`). What it
        // set going (the first records of the activity log, `list_changed`) runs on a little,
        // so once more after the first ping round.
        release_startup_pages();
        let ping = host.config().gateway.ping_interval.unwrap_or(Duration::from_secs(30));
        tokio::time::sleep(ping.min(Duration::from_secs(300)) + Duration::from_secs(5)).await;
        release_startup_pages();
    });
}

fn release_startup_pages() {
    if let Some(r) = crate::pages::release_startup_pages() {
        tracing::debug!(mappings = r.mappings, kib = r.bytes / 1024, "start-up pages released");
    }
}

/// Tells the person on stderr what is being served.
fn announce(host: &Host, on: &str) {
    let registry = host.registry();
    let statuses = host.statuses();
    let ready = statuses.iter().filter(|s| s.state.as_str() == "ready").count();
    eprintln!(
        "portico: serving {} tools, {} prompts, {} resources from {ready}/{} servers on {on}",
        registry.tools.len(),
        registry.prompts.len(),
        registry.resources.len() + registry.templates.len(),
        statuses.len()
    );
    for s in &statuses {
        let tools = registry.tools.values().filter(|t| t.origin.server == s.name).count();
        let error = s.last_error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
        eprintln!("portico:   {:<16} {:<10} {tools} tools{error}", s.name, s.state.as_str());
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Watches the config file; each change that loads and validates is applied, one that does
/// not is reported and the running config is kept.
fn watch(path: &Path, host: Host) -> Option<notify::RecommendedWatcher> {
    use notify::{RecursiveMode, Watcher};
    let path: PathBuf = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = path.parent()?.to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
    let file = path.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && event.paths.iter().any(|p| p == &file)
            && !event.kind.is_access()
        {
            let _ = tx.try_send(());
        }
    })
    .map_err(|e| eprintln!("portico: warning: cannot watch the config: {e}"))
    .ok()?;
    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        eprintln!("portico: warning: cannot watch {}: {e}", dir.display());
        return None;
    }
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // Editors write in steps; take the file once it has settled.
            tokio::time::sleep(Duration::from_millis(200)).await;
            while rx.try_recv().is_ok() {}
            match portico_host::config::load(&path) {
                Ok(loaded) => {
                    for w in &loaded.warnings {
                        eprintln!("portico: warning: {w}");
                    }
                    let done = host.reload(loaded.config).await;
                    if !(done.added.is_empty() && done.removed.is_empty() && done.restarted.is_empty()) {
                        eprintln!(
                            "portico: config reloaded: added {:?}, removed {:?}, restarted {:?}",
                            done.added, done.removed, done.restarted
                        );
                    }
                }
                Err(e) => eprintln!("portico: config not reloaded, keeping the running one: {e}"),
            }
        }
    });
    Some(watcher)
}

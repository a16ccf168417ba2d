//! Serving an axum app on a TCP listener with limits on slow peers.
//!
//! `axum::serve` gives hyper no timer, so hyper's header read timeout never fires: a client
//! that opens connections and trickles header bytes (slowloris) holds each one, and its memory,
//! forever. [`serve_app`] is the same accept loop with a timer: a connection whose request
//! head is not complete within [`ServeOptions::header_read_timeout`] is closed (this also
//! bounds how long an idle keep-alive connection is kept), and at most
//! [`ServeOptions::max_connections`] are open at once; further peers wait in the kernel's
//! backlog until one closes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::threads::ConnectionThreads;

/// How [`serve_app`] treats its connections.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// A connection must send a request's complete head within this time after it opens (or,
    /// kept alive, after its previous response), or it is closed. Default 30 s.
    pub header_read_timeout: Duration,
    /// At most this many connections are served at once; more wait to be accepted. Default
    /// 10,000.
    pub max_connections: usize,
    /// Threads that serve the connections, each pinned to one of them ([`ConnectionThreads`]).
    /// Default `None`: connections are tasks of the runtime serving is called on.
    pub connection_threads: Option<ConnectionThreads>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { header_read_timeout: Duration::from_secs(30), max_connections: 10_000, connection_threads: None }
    }
}

impl ServeOptions {
    /// The header read timeout (see the field).
    #[must_use]
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The connection cap (see the field); at least 1.
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Serves the connections on `threads` (see [`ConnectionThreads`]).
    #[must_use]
    pub fn with_connection_threads(mut self, threads: ConnectionThreads) -> Self {
        self.connection_threads = Some(threads);
        self
    }
}

/// Serves `app` over HTTP/1.1 on `listener` until `shutdown` completes, then stops accepting
/// and waits for the connections in progress to finish their requests. Every accepted socket
/// gets `TCP_NODELAY`.
///
/// # Errors
/// Never at present: a failed accept (too many open files, a reset peer) is logged and the
/// loop goes on after a pause. The `Result` leaves room for fatal listener errors.
pub async fn serve_app(
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    serve_service(listener, TowerToHyperService::new(app), shutdown, options).await
}

/// [`serve_app`]'s accept loop, for any hyper service (each connection gets a clone).
pub(super) async fn serve_service<S, B>(
    listener: TcpListener,
    app: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let threads = options.connection_threads;
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // EMFILE and the like: the next accept may work once descriptors are freed.
                tracing::warn!(error = %e, "accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let (builder, app, watcher) = (builder.clone(), app.clone(), graceful.watcher());
        let serve = move |tcp| async move {
            if let Err(e) = watcher.watch(builder.serve_connection(TokioIo::new(tcp), app)).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        };
        match &threads {
            None => drop(tokio::spawn(serve(tcp))),
            // The socket leaves this runtime's reactor for the thread's.
            Some(threads) => {
                let tcp = tcp.into_std();
                drop(threads.next().spawn(async move {
                    match tcp.and_then(TcpStream::from_std) {
                        Ok(tcp) => serve(tcp).await,
                        Err(e) => tracing::warn!(error = %e, "cannot move a connection to its thread"),
                    }
                }));
            }
        }
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

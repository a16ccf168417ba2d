//! Connection threads: each accepted connection is served, to its end, by one thread running a
//! single-threaded runtime, and everything its requests spawn stays on that thread.
//!
//! On Tokio's multi-threaded runtime a request that spawns a task while another is ready (an
//! HTTP client's exchange, the request's own task) wakes a second worker, which steals one of
//! them: at one call in flight a gateway call crossed threads several times, each a futex
//! wake-up and, on a VM, a wake-up of an idle vCPU. Pinning a connection to one thread keeps
//! its call on one CPU's caches; many connections still spread over every thread
//! (`docs/benchmarks.md`, thirty-sixth session).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// Threads that serve HTTP connections, each on a single-threaded runtime of its own
/// ([`ServeOptions::with_connection_threads`](super::ServeOptions::with_connection_threads)).
///
/// A connection stays on one thread, taken in turn, and what its requests spawn runs there too:
/// no work is stolen between threads, so a call does not hop between CPUs. A handler that
/// computes for long holds up its thread's other connections.
///
/// They pay off when requests make calls of their own (a gateway's). A server that answers from
/// its own handlers measured no better on them, and slower at one connection (the guide's
/// "Sizing the runtime").
///
/// The threads run until the last clone of this value is dropped; what still runs on them then
/// (tasks the requests spawned) is dropped with their runtimes. Keep it for as long as those
/// tasks should live, which may be longer than serving.
#[derive(Clone)]
pub struct ConnectionThreads(Arc<Inner>);

struct Inner {
    handles: Vec<Handle>,
    next: AtomicUsize,
    /// Each thread runs until its sender is dropped.
    _stops: Vec<oneshot::Sender<()>>,
}

impl std::fmt::Debug for ConnectionThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionThreads").field("threads", &self.0.handles.len()).finish()
    }
}

impl ConnectionThreads {
    /// Starts `n` threads (at least one), named `portico-http-N`.
    ///
    /// # Errors
    /// When a runtime or a thread cannot be made; those already started stop.
    pub fn start(n: usize) -> std::io::Result<ConnectionThreads> {
        let n = n.max(1);
        let mut handles = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        for i in 0..n {
            let runtime = Builder::new_current_thread().enable_all().build()?;
            handles.push(runtime.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            thread::Builder::new().name(format!("portico-http-{i}")).spawn(move || {
                crate::transport::pinned::pin_this_thread();
                // The runtime drives its tasks while it waits here.
                let _ = runtime.block_on(stopped);
            })?;
        }
        Ok(ConnectionThreads(Arc::new(Inner { handles, next: AtomicUsize::new(0), _stops: stops })))
    }

    /// How many threads there are.
    pub fn len(&self) -> usize {
        self.0.handles.len()
    }

    /// Never: there is at least one thread.
    pub fn is_empty(&self) -> bool {
        self.0.handles.is_empty()
    }

    /// The runtime of the next connection, in turn.
    pub(super) fn next(&self) -> &Handle {
        let i = self.0.next.fetch_add(1, Ordering::Relaxed) % self.0.handles.len();
        &self.0.handles[i]
    }
}

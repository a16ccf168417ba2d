//! Which threads serve their connections pinned (`ServeOptions::connection_threads`): there,
//! the HTTP client keeps a connection pool per thread, so an upstream call a connection's
//! request makes stays on that thread too, instead of waking the thread whose task drives a
//! shared pool's connection.

use std::cell::Cell;

thread_local! {
    /// This thread's mark; 0 for a thread that is not pinned.
    static PINNED: Cell<u64> = const { Cell::new(0) };
}

/// Marks the calling thread as one that serves its connections pinned, with a mark no other
/// thread of the process gets.
#[cfg(feature = "http-server")]
pub(crate) fn pin_this_thread() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    PINNED.with(|p| p.set(NEXT.fetch_add(1, Ordering::Relaxed)));
}

/// The calling thread's mark, when it is pinned.
#[cfg(feature = "http-client")]
pub(crate) fn this_thread() -> Option<u64> {
    Some(PINNED.with(Cell::get)).filter(|m| *m != 0)
}

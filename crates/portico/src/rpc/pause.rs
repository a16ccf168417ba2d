//! A request's timeout held while the peer waits on someone else: see [`TimeoutPause`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Stops the timeout of the requests it is given while it is held. A gateway holds it while
/// the server it called waits for a person to answer that server's own question (an
/// elicitation, a sampling request a person approves): the call's timeout then bounds the
/// server's silence, not the person's. When the last hold ends, the timeout starts again,
/// whole. A hard limit (`CallOptions::max_timeout`) still applies. Clones share one state.
#[derive(Clone, Default, Debug)]
pub struct TimeoutPause(Arc<Inner>);

#[derive(Default, Debug)]
struct Inner {
    holds: AtomicUsize,
    changed: Notify,
}

/// Holds a [`TimeoutPause`] until dropped.
#[derive(Debug)]
#[must_use = "the pause ends when the guard is dropped"]
pub struct PauseGuard(TimeoutPause);

#[cfg_attr(not(feature = "client"), allow(dead_code))]
impl TimeoutPause {
    /// A pause nobody holds.
    pub fn new() -> Self {
        TimeoutPause::default()
    }

    /// Stops the timeouts until the guard is dropped. Holds nest.
    pub fn hold(&self) -> PauseGuard {
        self.0.holds.fetch_add(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
        PauseGuard(self.clone())
    }

    /// Whether someone holds it now.
    pub fn is_held(&self) -> bool {
        self.0.holds.load(Ordering::SeqCst) > 0
    }

    /// Told when a hold starts or ends; make it before reading [`is_held`](Self::is_held).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.changed.notified()
    }
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        (self.0).0.holds.fetch_sub(1, Ordering::SeqCst);
        (self.0).0.changed.notify_waiters();
    }
}

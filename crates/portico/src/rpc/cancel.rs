//! The cancellation of one incoming request, cheap until someone waits on it.
//!
//! Every request can be cancelled (`notifications/cancelled`, the connection closing, an HTTP
//! response stream going away), but almost none is, and most finish without ever waiting. A
//! `tokio_util` [`CancellationToken`] takes a mutex on every clone, drop and wait; made for each
//! request and handed around, its locks were a tenth of a pipelined echo's server time, with the
//! lock's cache line moving between the reading and the writing core. [`Cancel`] is a flag and
//! a token made only when a handler (or the engine, for a request that waits) asks for one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

/// A request's cancellation; clones share it.
#[derive(Clone, Default)]
pub(crate) struct Cancel(Arc<Inner>);

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    token: OnceLock<CancellationToken>,
    /// Orders `cancel` against the token's creation: one of them sees the other.
    made: Mutex<()>,
    /// In the connection's in-flight map (see `dispatch::register`): only then does the
    /// request's end remove it there.
    registered: AtomicBool,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel").field("cancelled", &self.is_cancelled()).finish()
    }
}

impl Cancel {
    /// Not cancelled; no token yet.
    pub(crate) fn new() -> Self {
        Cancel::default()
    }

    /// Follows `token`: cancelled with it (and cancelling it).
    pub(crate) fn from_token(token: CancellationToken) -> Self {
        let inner = Inner { token: OnceLock::from(token), ..Inner::default() };
        Cancel(Arc::new(inner))
    }

    /// Cancels the request (and its token, if one was made).
    pub(crate) fn cancel(&self) {
        let _made = crate::sync::lock(&self.0.made);
        self.0.cancelled.store(true, Ordering::Release);
        if let Some(t) = self.0.token.get() {
            t.cancel();
        }
    }

    /// Marks the request as entered in its connection's in-flight map.
    pub(crate) fn set_registered(&self) {
        self.0.registered.store(true, Ordering::Release);
    }

    /// True once [`Cancel::set_registered`] was called.
    pub(crate) fn is_registered(&self) -> bool {
        self.0.registered.load(Ordering::Acquire)
    }

    /// True once cancelled, by [`Cancel::cancel`] or through the token.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire) || self.0.token.get().is_some_and(CancellationToken::is_cancelled)
    }

    /// The token, made on first use (already cancelled if the request is).
    pub(crate) fn token(&self) -> &CancellationToken {
        if let Some(t) = self.0.token.get() {
            return t;
        }
        let _made = crate::sync::lock(&self.0.made);
        let t = self.0.token.get_or_init(CancellationToken::new);
        if self.0.cancelled.load(Ordering::Acquire) {
            t.cancel();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_made_after_the_cancellation_is_cancelled() {
        let c = Cancel::new();
        assert!(!c.is_cancelled());
        c.clone().cancel();
        assert!(c.is_cancelled());
        assert!(c.token().is_cancelled());
    }

    #[test]
    fn a_token_made_before_is_cancelled_with_the_request_and_the_other_way_round() {
        let c = Cancel::new();
        let t = c.token().clone();
        assert!(!t.is_cancelled());
        c.cancel();
        assert!(t.is_cancelled());

        let t = CancellationToken::new();
        let c = Cancel::from_token(t.clone());
        assert!(!c.is_cancelled());
        t.cancel();
        assert!(c.is_cancelled(), "a cancelled token cancels the request");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_while_a_token_is_being_made_is_never_lost() {
        for _ in 0..2000 {
            let c = Cancel::new();
            let other = c.clone();
            let canceller = tokio::spawn(async move { other.cancel() });
            let token = c.token().clone();
            canceller.await.expect("the canceller ran");
            // Whichever came first, the token ends cancelled.
            tokio::time::timeout(std::time::Duration::from_secs(5), token.cancelled())
                .await
                .expect("the token was cancelled");
        }
    }
}

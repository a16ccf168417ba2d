//! The bound on the requests of one connection that run at the same time.
//!
//! One task takes slots (the dispatcher), any task gives them back (a request finishing). A
//! `tokio::sync::Semaphore` does this, but gives a permit back under its mutex, each time, on
//! whichever core the request finished: a lock per request shared with the dispatcher's core.
//! Here taking and giving back are one atomic operation each; the mutex of a [`Notify`] is
//! touched only while the dispatcher is waiting for a slot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The slots of one connection; one task waits on it at a time.
pub(crate) struct Slots(Arc<Inner>);

struct Inner {
    used: AtomicUsize,
    max: usize,
    /// Set by the waiting task before it looks again; a slot given back then wakes it.
    waiting: AtomicBool,
    freed: Notify,
}

/// One taken slot, given back when dropped.
pub(crate) struct Slot(Arc<Inner>);

impl Slots {
    /// `max` slots (at least one).
    pub(crate) fn new(max: usize) -> Self {
        Slots(Arc::new(Inner {
            used: AtomicUsize::new(0),
            max: max.max(1),
            waiting: AtomicBool::new(false),
            freed: Notify::new(),
        }))
    }

    /// A slot, if one is free now.
    pub(crate) fn try_take(&self) -> Option<Slot> {
        let inner = &self.0;
        let mut used = inner.used.load(Ordering::SeqCst);
        loop {
            if used >= inner.max {
                return None;
            }
            match inner.used.compare_exchange_weak(used, used + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(Slot(inner.clone())),
                Err(now) => used = now,
            }
        }
    }

    /// A slot, waiting for one to be given back.
    pub(crate) async fn take(&self) -> Slot {
        loop {
            if let Some(slot) = self.try_take() {
                return slot;
            }
            let max = self.0.max;
            self.freed(|used| used >= max).await;
        }
    }

    /// Waits until every slot is free (every request taken has finished).
    pub(crate) async fn all_free(&self) {
        while self.0.used.load(Ordering::SeqCst) != 0 {
            self.freed(|used| used != 0).await;
        }
    }

    /// Waits for a slot to be given back if `wait` says so of the slots in use, looked at once
    /// the waiter is registered. May return spuriously; callers look again.
    async fn freed(&self, wait: impl Fn(usize) -> bool) {
        let inner = &self.0;
        let notified = inner.freed.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        inner.waiting.store(true, Ordering::SeqCst);
        // Cleared however this ends (also when the wait is dropped, e.g. by a `select!`).
        let _waiting = NotWaiting(&inner.waiting);
        // Looked at after `waiting` is set: a slot given back before this is seen here, one
        // given back after sees `waiting` and wakes us.
        if wait(inner.used.load(Ordering::SeqCst)) {
            notified.await;
        }
    }
}

struct NotWaiting<'a>(&'a AtomicBool);

impl Drop for NotWaiting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::SeqCst);
        if self.0.waiting.load(Ordering::SeqCst) {
            self.0.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_than_max_are_taken_and_a_dropped_slot_is_free_again() {
        let slots = Slots::new(2);
        let a = slots.try_take().expect("first");
        let _b = slots.try_take().expect("second");
        assert!(slots.try_take().is_none(), "a third slot is refused");
        drop(a);
        assert!(slots.try_take().is_some(), "the slot given back is free");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_taker_is_woken_by_slots_given_back_on_other_threads() {
        let slots = Slots::new(3);
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..5000 {
            let slot = slots.take().await;
            let done = done.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                done.fetch_add(1, Ordering::SeqCst);
                drop(slot);
            });
        }
        tokio::time::timeout(std::time::Duration::from_secs(10), slots.all_free()).await.expect("every slot came back");
        assert_eq!(done.load(Ordering::SeqCst), 5000);
    }
}

//! Stopping with calls in flight: the host refuses new tool calls, lets those in flight finish
//! up to a deadline, then cancels the rest (upstream too) so that each is answered and recorded
//! before the upstreams are stopped.

use std::time::Duration;

use crate::Host;

/// How long a cancelled call may take to answer and be recorded before the host stops anyway.
const AFTER_CANCEL: Duration = Duration::from_secs(5);
/// How often the calls in flight are looked at while draining.
const POLL: Duration = Duration::from_millis(20);

/// What [`Host::drain`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Tool calls in flight when draining began.
    pub in_flight: usize,
    /// Those that ended by themselves within the grace period.
    pub finished: usize,
    /// Those cancelled when it ran out.
    pub cancelled: usize,
    /// Cancelled ones still not ended `AFTER_CANCEL` (5 s) later: an upstream that ignores
    /// cancellation. They end when the upstreams are stopped.
    pub stuck: usize,
}

impl Host {
    /// Begins stopping: from now on a new tool call is refused (and recorded) with a tool
    /// error saying the gateway is shutting down. Waits up to `grace` for the tool calls in
    /// flight to end, then cancels the rest: each upstream is sent a cancellation and each call
    /// answers its caller with an error and is recorded as cancelled. Call
    /// [`shutdown`](Self::shutdown) after it.
    pub async fn drain(&self, grace: Duration) -> Drained {
        let activity = self.activity();
        activity.start_draining();
        let in_flight = activity.list().len();
        let deadline = tokio::time::Instant::now() + grace;
        while !activity.list().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
        let left = activity.list();
        let cancelled = left.iter().filter(|call| activity.cancel(&call.id)).count();
        let deadline = tokio::time::Instant::now() + AFTER_CANCEL;
        while !activity.list().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
        let stuck = activity.list().len();
        self.late_records_written().await;
        if cancelled > 0 {
            tracing::warn!(cancelled, stuck, "stopping: cancelled the calls still in flight after {grace:?}");
        }
        Drained { in_flight, finished: in_flight.saturating_sub(left.len()), cancelled, stuck }
    }
}

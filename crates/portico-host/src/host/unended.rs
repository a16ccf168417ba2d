//! A call whose future is dropped before it reaches `Host::after` still gets its record.
//!
//! The SDK drops a handler's future when its client cancels the request or goes away, and the
//! gateway drops the calls it kept for a 2026-07-28 retry when no retry comes or it stops.
//! Nothing after the await the call was in then runs, so [`Unended`] records it from its
//! `Drop`, as cancelled, in a task of its own.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use portico::schema::Tool;
use portico::server::RequestContext;
use serde_json::Value;

use super::Host;
use crate::registry::Origin;
use crate::router::{Call, Method, Outcome, Verdict};

/// Guards one call on the call path from the moment it is in flight: dropped before
/// [`ended`](Self::ended), it records the call as cancelled, with its verdict once decided.
pub(crate) struct Unended<'a> {
    host: &'a Host,
    call: &'a Call<'a>,
    verdict: OnceLock<Verdict>,
    armed: AtomicBool,
}

impl<'a> Unended<'a> {
    pub(crate) fn new(host: &'a Host, call: &'a Call<'a>) -> Self {
        Unended { host, call, verdict: OnceLock::new(), armed: AtomicBool::new(true) }
    }

    /// Keeps the verdict for the record, and lends it back.
    pub(crate) fn decided(&self, verdict: Verdict) -> &Verdict {
        self.verdict.get_or_init(|| verdict)
    }

    /// The call is about to be recorded by `Host::after`: nothing to do on drop.
    pub(crate) fn ended(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }
}

impl Drop for Unended<'_> {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                target: "portico::audit",
                server = %self.call.origin.server,
                target_name = %self.call.exposed,
                "a call ended outside a runtime, so its record could not be written"
            );
            return;
        };
        let owned = Owned::of(self.call);
        let verdict = self.verdict.take();
        let host = self.host.clone();
        // Stopping waits for it (`Host::late_records_written`).
        let pending = Pending::new(&host.inner.late);
        runtime.spawn(async move {
            let _pending = pending;
            let call = owned.call();
            let why = format!(
                "the call was cancelled before it ended: its client cancelled it or went away (server `{}`)",
                call.origin.server
            );
            match verdict {
                Some(v) => host.after(&call, &v, &Outcome::Failed(&why)).await,
                None => host.after(&call, &Verdict::deny(why.clone()), &Outcome::Refused(&why)).await,
            }
        });
    }
}

/// Records written late, after their call was dropped: stopping waits for them.
#[derive(Default)]
pub(crate) struct LateRecords {
    pending: std::sync::atomic::AtomicUsize,
    written: tokio::sync::Notify,
}

impl LateRecords {
    /// Waits until none is pending, at most `within`; whether none is.
    pub(crate) async fn written(&self, within: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let written = self.written.notified();
            if self.pending.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, written).await.is_err() {
                return self.pending.load(Ordering::SeqCst) == 0;
            }
        }
    }
}

/// One late record on its way.
struct Pending(std::sync::Arc<LateRecords>);

impl Pending {
    fn new(late: &std::sync::Arc<LateRecords>) -> Pending {
        late.pending.fetch_add(1, Ordering::SeqCst);
        Pending(late.clone())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::SeqCst);
        self.0.written.notify_waiters();
    }
}

/// A [`Call`]'s data, owned, for the task that records it.
struct Owned {
    method: Method,
    exposed: String,
    origin: Origin,
    tool: Option<Tool>,
    arguments: Value,
    principal: String,
    request: Option<RequestContext>,
    started: std::time::SystemTime,
    others_in_flight: usize,
}

impl Owned {
    fn of(call: &Call<'_>) -> Owned {
        Owned {
            method: call.method,
            exposed: call.exposed.to_owned(),
            origin: call.origin.clone(),
            tool: call.tool.cloned(),
            arguments: call.arguments.clone(),
            principal: call.principal.to_owned(),
            request: call.request.cloned(),
            started: call.started,
            others_in_flight: call.others_in_flight,
        }
    }

    fn call(&self) -> Call<'_> {
        Call {
            method: self.method,
            exposed: &self.exposed,
            origin: &self.origin,
            tool: self.tool.as_ref(),
            arguments: &self.arguments,
            principal: &self.principal,
            request: self.request.as_ref(),
            started: self.started,
            others_in_flight: self.others_in_flight,
        }
    }
}

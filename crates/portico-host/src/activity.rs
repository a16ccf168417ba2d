//! [`Activity`]: the calls in progress through the host, live, each cancellable by a person.
//!
//! Every tool call on the host's call path is entered here when it arrives and leaves when it
//! ends, however it ends. While it waits for approval its stage is `approval`; once it is on
//! its way to the upstream, `running`, with the upstream's latest progress message. The admin
//! API lists them, streams their changes, and cancels one: a cancelled call stops waiting (its
//! approval is withdrawn) or is dropped at the upstream (which is sent
//! `notifications/cancelled`), and its caller gets a tool error that says it was cancelled.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use portico::schema::ProgressNotificationParams;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::router::Call;

/// How many events a slow watcher may fall behind before it misses some.
const EVENTS: usize = 256;

/// Where a call in progress is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stage {
    /// Policy and, when asked for, a person's approval.
    Approval,
    /// Sent to the upstream; waiting for its answer.
    Running,
}

/// The upstream's latest progress report for a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening, in the upstream's words.
    pub message: Option<String>,
}

/// A call in progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InFlight {
    /// Its id in this process (a decimal number as a string).
    pub id: String,
    /// The MCP method.
    pub method: &'static str,
    /// The upstream server.
    pub server: String,
    /// The tool as exposed.
    pub tool: String,
    /// Who is calling.
    pub principal: String,
    /// The downstream client's `name version`, when the call came from one.
    pub client: Option<String>,
    /// The downstream session, when the call came from one.
    pub session: Option<u64>,
    /// When it arrived, in milliseconds since the Unix epoch.
    pub started_at: u64,
    /// Where it is.
    pub stage: Stage,
    /// The upstream's latest progress report.
    pub progress: Option<Progress>,
}

/// A change to the calls in progress, for live views.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallEvent {
    /// A call arrived.
    Started {
        /// The call.
        call: InFlight,
    },
    /// Its stage or progress changed.
    Updated {
        /// The call as it is now.
        call: InFlight,
    },
    /// It ended (answered, refused, failed or cancelled).
    Ended {
        /// Its id.
        id: String,
        /// A person cancelled it.
        cancelled: bool,
    },
}

struct Slot {
    call: InFlight,
    cancel: CancellationToken,
}

struct Inner {
    calls: Mutex<BTreeMap<u64, Slot>>,
    next: AtomicU64,
    events: broadcast::Sender<CallEvent>,
    /// Set once the host starts stopping.
    draining: std::sync::atomic::AtomicBool,
}

/// The calls in progress through one host. Cheap to clone.
#[derive(Clone)]
pub struct Activity {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity").field("in_flight", &lock(&self.inner.calls).len()).finish_non_exhaustive()
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Activity {
    /// No calls in progress.
    pub fn new() -> Activity {
        Activity {
            inner: Arc::new(Inner {
                calls: Mutex::new(BTreeMap::new()),
                next: AtomicU64::new(1),
                events: broadcast::channel(EVENTS).0,
                draining: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Whether the host is stopping: new tool calls are refused (see `Host::drain`).
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Acquire)
    }

    pub(crate) fn start_draining(&self) {
        self.inner.draining.store(true, Ordering::Release);
    }

    /// How many calls are in progress now.
    pub fn count(&self) -> usize {
        lock(&self.inner.calls).len()
    }

    /// The calls in progress now, oldest first.
    pub fn list(&self) -> Vec<InFlight> {
        lock(&self.inner.calls).values().map(|s| s.call.clone()).collect()
    }

    /// Live changes: started, updated, ended.
    pub fn subscribe(&self) -> broadcast::Receiver<CallEvent> {
        self.inner.events.subscribe()
    }

    /// Cancels the call `id`; `false` when no such call is in progress.
    pub fn cancel(&self, id: &str) -> bool {
        let Ok(n) = id.parse::<u64>() else { return false };
        match lock(&self.inner.calls).get(&n) {
            Some(slot) => {
                slot.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Enters `call`; it leaves when the returned guard is dropped.
    pub(crate) fn begin(&self, call: &Call<'_>) -> Tracked {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let info = InFlight {
            id: n.to_string(),
            method: call.method.as_str(),
            server: call.origin.server.clone(),
            tool: call.exposed.to_owned(),
            principal: call.principal.to_owned(),
            client: call.client(),
            session: call.session().map(portico::server::ConnectionId::get),
            started_at: unix_ms(call.started),
            stage: Stage::Approval,
            progress: None,
        };
        let cancel = CancellationToken::new();
        // Live views are rare (the web UI, `portico` watching): no copy for an event nobody hears.
        let event = (self.inner.events.receiver_count() > 0).then(|| info.clone());
        lock(&self.inner.calls).insert(n, Slot { call: info, cancel: cancel.clone() });
        if let Some(call) = event {
            let _ = self.inner.events.send(CallEvent::Started { call });
        }
        Tracked { activity: self.clone(), n, cancel }
    }

    fn update(&self, n: u64, change: impl FnOnce(&mut InFlight)) {
        let changed = {
            let mut calls = lock(&self.inner.calls);
            let heard = self.inner.events.receiver_count() > 0;
            calls.get_mut(&n).and_then(|slot| {
                change(&mut slot.call);
                heard.then(|| slot.call.clone())
            })
        };
        if let Some(call) = changed {
            let _ = self.inner.events.send(CallEvent::Updated { call });
        }
    }
}

/// A call entered in [`Activity`]; it leaves when this is dropped.
pub(crate) struct Tracked {
    activity: Activity,
    n: u64,
    cancel: CancellationToken,
}

impl Tracked {
    /// The call passed policy and approval and goes to its upstream.
    pub(crate) fn running(&self) {
        self.activity.update(self.n, |c| c.stage = Stage::Running);
    }

    /// What the upstream's progress reports go to.
    pub(crate) fn on_progress(&self) -> impl Fn(&ProgressNotificationParams) + Send + Sync + 'static {
        let (activity, n) = (self.activity.clone(), self.n);
        move |p: &ProgressNotificationParams| {
            let progress = Progress { progress: p.progress, total: p.total, message: p.message.clone() };
            activity.update(n, |c| c.progress = Some(progress));
        }
    }

    /// Runs `work` until it ends or a person cancels the call (`None`; `work` is dropped).
    ///
    /// # Cancel safety
    /// Dropping the future drops `work`.
    pub(crate) async fn unless_cancelled<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            out = work => Some(out),
            () = self.cancel.cancelled() => None,
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if lock(&self.activity.inner.calls).remove(&self.n).is_some() && self.activity.inner.events.receiver_count() > 0
        {
            let cancelled = self.cancel.is_cancelled();
            let _ = self.activity.inner.events.send(CallEvent::Ended { id: self.n.to_string(), cancelled });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Origin;

    #[tokio::test]
    async fn a_call_is_listed_until_it_ends_and_can_be_cancelled() {
        let activity = Activity::new();
        let mut events = activity.subscribe();
        let origin = Origin { server: "ev".into(), name: "sleep".into() };
        let args = serde_json::Value::Null;
        let call = Call {
            method: crate::router::Method::CallTool,
            exposed: "ev__sleep",
            origin: &origin,
            tool: None,
            arguments: &args,
            principal: "ui:1",
            request: None,
            started: SystemTime::now(),
            others_in_flight: 0,
        };
        let tracked = activity.begin(&call);
        assert!(matches!(events.recv().await, Ok(CallEvent::Started { .. })));
        tracked.running();
        (tracked.on_progress())(&ProgressNotificationParams::new(1i64, 1.0).with_message("one"));
        let listed = activity.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].stage, Stage::Running);
        assert_eq!(listed[0].progress.as_ref().and_then(|p| p.message.as_deref()), Some("one"));
        assert!(!activity.cancel("nope") && !activity.cancel("99"));
        assert!(activity.cancel(&listed[0].id));
        let out = tracked.unless_cancelled(std::future::pending::<()>()).await;
        assert_eq!(out, None);
        drop(tracked);
        assert!(activity.list().is_empty());
        let mut ended = None;
        while let Ok(e) = events.try_recv() {
            if let CallEvent::Ended { cancelled, .. } = e {
                ended = Some(cancelled);
            }
        }
        assert_eq!(ended, Some(true));
    }
}

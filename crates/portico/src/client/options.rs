//! [`CallOptions`]: what one call asks beyond its params (timeout, progress, cancellation, its
//! own input handler and capabilities, trace context, being told of a task).

use std::sync::Arc;
use std::time::Duration;

use portico_schema::ProgressNotificationParams;
use tokio_util::sync::CancellationToken;

use super::{TaskCreated, TaskHook};
use crate::error::Error;
use crate::rpc::ProgressSink;

/// Options of one call.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides the client's request timeout.
    pub timeout: Option<Duration>,
    /// A hard limit that progress never extends (the timeout itself restarts on progress).
    pub max_timeout: Option<Duration>,
    /// Receives the server's progress notifications for this call.
    pub on_progress: Option<ProgressSink>,
    /// Cancels the call (the server is sent `notifications/cancelled`).
    pub cancel: Option<CancellationToken>,
    /// Answers this call's 2026-07-28 input requests in place of the client's handler.
    pub on_input: Option<InputHandler>,
    /// The capabilities this call declares (2026-07-28) in place of the client's own.
    pub capabilities: Option<portico_schema::ClientCapabilities>,
    /// The W3C trace context sent in the request's `_meta`.
    pub trace: Option<crate::trace::TraceContext>,
    /// More members of the request's `_meta` ([`with_meta`](Self::with_meta)).
    pub meta: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
    /// Told when the server makes a task of this tool call (the tasks extension).
    pub on_task: Option<TaskHook>,
    /// Stops the timeout while held ([`with_timeout_pause`](Self::with_timeout_pause)).
    pub timeout_pause: Option<crate::rpc::TimeoutPause>,
}

/// Answers one round of a call's 2026-07-28 input requests (`inputRequests`, by key) with
/// responses under the same keys; see [`CallOptions::with_input`].
pub type InputHandler = Arc<
    dyn Fn(
            std::collections::BTreeMap<String, portico_schema::InputRequest>,
        ) -> futures_util::future::BoxFuture<'static, Result<portico_schema::InputResponses, Error>>
        + Send
        + Sync,
>;

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_timeout", &self.max_timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("cancel", &self.cancel)
            .field("on_input", &self.on_input.is_some())
            .field("capabilities", &self.capabilities)
            .field("trace", &self.trace)
            .field("meta", &self.meta)
            .field("on_task", &self.on_task.is_some())
            .field("timeout_pause", &self.timeout_pause)
            .finish()
    }
}

impl CallOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Sets a hard limit that progress notifications never extend.
    pub fn with_max_timeout(mut self, max: Duration) -> Self {
        self.max_timeout = Some(max);
        self
    }
    /// Receives progress notifications.
    pub fn with_progress(mut self, f: impl Fn(ProgressNotificationParams) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }
    /// Cancels the call when `token` is cancelled.
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// Declares `caps` for this call instead of the client's own capabilities (2026-07-28,
    /// where each request carries them; a handshake-era session keeps what it declared at
    /// `initialize`). A gateway declares what its own client can do, so that the server asks
    /// only for input that client can give.
    pub fn with_capabilities(mut self, caps: portico_schema::ClientCapabilities) -> Self {
        self.capabilities = Some(caps);
        self
    }
    /// Sends `trace` (`traceparent`, `tracestate`, `baggage`) in the request's `_meta`, so the
    /// server continues the caller's trace.
    pub fn with_trace_context(mut self, trace: crate::trace::TraceContext) -> Self {
        self.trace = Some(trace);
        self
    }
    /// Sends `members` in the request's `_meta` too, beside what the client writes there
    /// itself. The protocol's own keys are the client's to write and are skipped here:
    /// `progressToken` and every `io.modelcontextprotocol/…` key. The trace context, when
    /// [`with_trace_context`](Self::with_trace_context) gives one, replaces a `traceparent`,
    /// `tracestate` or `baggage` among them. A gateway passes on its caller's `_meta` this way
    /// ([`RequestContext::meta`](crate::server::RequestContext::meta)).
    pub fn with_meta(mut self, members: serde_json::Map<String, serde_json::Value>) -> Self {
        self.meta = Some(Arc::new(members));
        self
    }
    /// Stops this call's timeout while `pause` is held: a gateway holds it while the server
    /// waits for a person to answer the server's own question, so the timeout bounds the
    /// server's silence and not the person's. When the hold ends, the timeout starts again,
    /// whole.
    pub fn with_timeout_pause(mut self, pause: crate::rpc::TimeoutPause) -> Self {
        self.timeout_pause = Some(pause);
        self
    }
    /// Calls `f` when the server answers this tool call with a task (the
    /// `io.modelcontextprotocol/tasks` extension of 2026-07-28), before the client starts
    /// polling it; the call then goes on following the task to its result. A gateway uses it
    /// to make a task of its own call at that point.
    pub fn with_on_task<F>(mut self, f: F) -> Self
    where
        F: Fn(TaskCreated) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync + 'static,
    {
        self.on_task = Some(Arc::new(f));
        self
    }
    /// Answers this call's input requests (2026-07-28 `input_required` results, and those of
    /// a task the call became) with `f` instead of the client's
    /// [`ClientHandler`](super::ClientHandler): all of one round's requests at once, by key, as
    /// the server sent them. A gateway passes them on whole to its own client this way.
    /// (Requests a handshake-era server sends during the call still go to the handler.)
    pub fn with_input<F>(mut self, f: F) -> Self
    where
        F: Fn(
                std::collections::BTreeMap<String, portico_schema::InputRequest>,
            ) -> futures_util::future::BoxFuture<'static, Result<portico_schema::InputResponses, Error>>
            + Send
            + Sync
            + 'static,
    {
        self.on_input = Some(Arc::new(f));
        self
    }
}

//! The private JSON-RPC engine shared by client and server: correlation of requests and
//! responses, concurrent dispatch with a bound, cancellation, progress and timeouts.
//!
//! Data flows one way through two tasks per connection (`dispatch.rs`). The dispatcher reads
//! frames from the transport itself, decodes them, routes responses to waiting callers and
//! starts requests on the [`Endpoint`]: each is polled once where it arrives and gets a task of
//! its own only if it has to wait. The writer drains one outgoing queue, flushing only when it
//! is empty.

mod cancel;
mod dispatch;
pub(crate) mod envelope;
#[cfg(feature = "http-server")]
pub(crate) mod link;
mod pause;
mod peer;
mod slots;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico_schema::{ErrorObject, RequestId};
use serde_json::value::RawValue;

pub(crate) use cancel::Cancel;
pub(crate) use dispatch::start;
pub(crate) use envelope::ResultBytes;
pub use pause::{PauseGuard, TimeoutPause};
#[cfg(feature = "http-client")]
pub(crate) use peer::{Completer, DirectSend};
pub(crate) use peer::{LateHook, Peer, ProgressSink, RequestOptions, Routing};

/// Limits of one connection.
#[derive(Debug, Clone)]
pub(crate) struct RpcConfig {
    /// Requests from the peer handled at the same time.
    pub max_in_flight: usize,
    /// Requests from the peer admitted but waiting for a slot; beyond this, reading pauses.
    pub max_queued: usize,
    /// Outgoing messages buffered before senders wait.
    pub outgoing_capacity: usize,
    /// Name for logs.
    pub name: &'static str,
    /// When the peer's input ends, cancel the requests of the peer still running (a client
    /// whose server is gone), instead of finishing them (a stdio server whose client closed
    /// stdin but still reads stdout).
    pub cancel_on_input_end: bool,
    /// Notifications read from the peer per second, with a burst of as many: past it, reading
    /// pauses (nothing is dropped; the peer's writes back up). `None`: no limit.
    pub notification_rate: Option<u32>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            max_in_flight: 256,
            max_queued: 1024,
            outgoing_capacity: 1024,
            name: "mcp",
            cancel_on_input_end: false,
            notification_rate: None,
        }
    }
}

/// An incoming request, owned so its handler can run in its own task.
#[derive(Debug)]
pub(crate) struct IncomingRequest {
    pub id: RequestId,
    pub method: Box<str>,
    pub params: Option<Box<RawValue>>,
    /// Cancelled by `notifications/cancelled` or when the connection closes.
    pub cancel: Cancel,
    /// Notified to end this request's response stream early (resumable HTTP streams only).
    pub close_stream: Option<Arc<tokio::sync::Notify>>,
    /// What the transport knows of the request (over HTTP: the HTTP request's extensions, e.g.
    /// the authenticated principal), and what middleware added.
    pub extensions: http::Extensions,
}

/// What a request handler produces: a serialized result, or a wire error.
pub(crate) type Reply = Result<ResultBytes, ErrorObject>;

/// What an [`Endpoint`] makes of a request: the answer, when it needed no waiting, or the
/// future that makes it.
pub(crate) enum Handled {
    Now(Reply),
    Later(BoxFuture<'static, Reply>),
}

/// The protocol side of a connection (server era logic, or client handlers).
pub(crate) trait Endpoint: Send + Sync + 'static {
    /// Handles one request. The future is dropped if the request is cancelled. Runs inside the
    /// engine's panic guard, as the future's polls do.
    fn call(self: Arc<Self>, request: IncomingRequest, peer: Peer) -> Handled;
    /// Called for each incoming request in arrival order, before it is scheduled (requests
    /// then run concurrently). Must not block.
    fn admit(&self, method: &str) {
        let _ = method;
    }
    /// Handles a notification other than `notifications/cancelled` and `notifications/progress`
    /// (which the engine routes itself). Must not block.
    fn notify(&self, method: &str, params: Option<&RawValue>, peer: &Peer);
    /// True when JSON-RPC batches are accepted now (revision 2025-03-26).
    fn accepts_batches(&self) -> bool {
        false
    }
    /// Called once when the connection has closed.
    fn closed(&self) {}
    /// Told the connection's own outgoing channel once it exists (server-initiated messages
    /// go there rather than to the stream of the request that caused them).
    fn attach(&self, peer: &Peer) {
        let _ = peer;
    }
    /// The revision the connection's handshake negotiated, if it had one.
    #[cfg(feature = "http-server")]
    fn negotiated_version(&self) -> Option<portico_schema::ProtocolVersion> {
        None
    }
    /// The hook of a transport that read a stateless request's params for its own checks
    /// (Streamable HTTP): resolves what the endpoint would otherwise decode again when the
    /// request runs (the server's era, a tool call's members), into the request's extensions.
    /// Must not block.
    #[cfg(feature = "http-server")]
    fn resolve_ahead(&self, method: &str, params: crate::peek::ParamsPeek<'_>, extensions: &mut http::Extensions) {
        let _ = (method, params, extensions);
    }
}

/// Default timeouts of outgoing requests.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests;

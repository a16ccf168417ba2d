//! The sending side: outgoing requests and notifications, correlation, timeouts, progress.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico_schema::{CancelledNotificationParams, ErrorObject, ProgressNotificationParams, ProgressToken, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::sync::lock;
use tokio_util::sync::CancellationToken;

use super::envelope::{self, Outgoing};
use crate::error::{Error, ErrorKind};

/// Receives `notifications/progress` for one outgoing request.
pub(crate) type ProgressSink = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// Told the answer to a request whose caller stopped waiting, when it arrives within
/// [`LATE_WINDOW`] (a tool call the server had already made a task of: see the client's
/// `tasks.rs`). Must not block.
pub(crate) type LateHook = Arc<dyn Fn(Result<&RawValue, ErrorObject>) + Send + Sync>;

/// A transport's way to send a request from the calling task itself, rather than through the
/// connection's writer task (see [`Peer::set_direct`]).
pub(crate) trait DirectSend: Send + Sync + 'static {
    /// Starts sending `frame`, the request `id` of `method`, from the calling task; hands it
    /// back when it must go through the writer after all (the transport is not ready for it,
    /// or is closing). `routing`, when the sender gave it, says what the transport would
    /// otherwise read the frame again for.
    fn send_request(
        &self,
        frame: bytes::Bytes,
        id: &RequestId,
        method: &str,
        routing: Option<&Routing>,
    ) -> Result<(), bytes::Bytes>;
}

/// What a transport may need to know of a request to send it (HTTP headers of the stateless
/// era), as its sender knows it: given, the transport need not read the request again.
#[derive(Clone, Debug, Default)]
#[cfg_attr(not(feature = "http-client"), allow(dead_code))] // read by the HTTP client alone
pub(crate) struct Routing {
    /// The protocol version in the request's `_meta`: a request of the stateless era.
    pub stateless: Option<String>,
    /// What the request names: the tool called, the prompt got or the resource read.
    pub name: Option<String>,
}

/// How long the answer to an abandoned request with a [`LateHook`] is waited for.
const LATE_WINDOW: Duration = Duration::from_secs(30);

/// Options of one outgoing request.
#[derive(Clone)]
pub(crate) struct RequestOptions {
    /// Time allowed without an answer (reset by progress when `reset_on_progress`).
    pub timeout: Duration,
    /// Hard limit, never reset.
    pub max_total: Option<Duration>,
    pub reset_on_progress: bool,
    /// The token put in `_meta.progressToken` by the caller, and where its notifications go.
    pub progress: Option<(ProgressToken, ProgressSink)>,
    /// Cancels the request from outside (sends `notifications/cancelled`).
    pub cancel: Option<CancellationToken>,
    /// The id to use (from [`Peer::next_id`]); a fresh one when `None`.
    pub id: Option<RequestId>,
    /// While held, the timeout does not run (see [`TimeoutPause`](super::TimeoutPause)).
    pub pause: Option<super::TimeoutPause>,
    /// Told the answer if it comes after the caller stopped waiting.
    pub late: Option<LateHook>,
    /// What the transport may need of the request, when the sender knows it exactly.
    pub routing: Option<Routing>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            timeout: super::DEFAULT_REQUEST_TIMEOUT,
            max_total: None,
            reset_on_progress: true,
            progress: None,
            cancel: None,
            id: None,
            pause: None,
            late: None,
            routing: None,
        }
    }
}

type Outcome = Result<Box<RawValue>, ErrorObject>;

/// Who is told a request's answer.
enum Waiter {
    /// Its caller.
    Caller(oneshot::Sender<Outcome>),
    /// Its late hook, once the caller stopped waiting.
    Late(LateHook),
}

struct Pending {
    waiter: Waiter,
    /// Bumped on progress, so the waiter can extend its deadline.
    progress_seen: Option<Arc<tokio::sync::Notify>>,
}

pub(crate) struct PeerShared {
    /// OpenTelemetry's `network.transport` of the connection, when known.
    network_transport: Option<&'static str>,
    pending: Mutex<HashMap<RequestId, Pending>>,
    progress: Mutex<HashMap<ProgressToken, (ProgressSink, RequestId)>>,
    next_id: AtomicI64,
    /// Cancelled when the connection is closed, for whatever reason.
    pub(crate) closed: CancellationToken,
    /// Set before `closed` is cancelled: a token's `is_cancelled` takes its mutex, and every
    /// message sent asks.
    closed_flag: std::sync::atomic::AtomicBool,
    /// Cancelled when the writer has flushed everything and closed the transport.
    pub(crate) finished: CancellationToken,
    close_reason: Mutex<Option<String>>,
    /// Set when the peer's input ended: no response can arrive any more.
    input_closed: std::sync::atomic::AtomicBool,
    /// Cancelled when the peer's input ends (after `input_closed` is set).
    input_ended: CancellationToken,
    /// Unique among this process's connections, for as long as it runs.
    pub(crate) id: u64,
    /// The transport's direct way for requests, when it has one.
    direct: std::sync::OnceLock<Arc<dyn DirectSend>>,
}

impl PeerShared {
    /// Routes a response to its waiting caller; false when no request has that id.
    fn complete(&self, id: &RequestId, outcome: Result<&RawValue, ErrorObject>) -> bool {
        let Some(pending) = lock(&self.pending).remove(id) else {
            return false;
        };
        match pending.waiter {
            Waiter::Caller(tx) => {
                let _ = tx.send(outcome.map(|raw| raw.to_owned()));
            }
            Waiter::Late(late) => late(outcome),
        }
        true
    }
}

/// Hands a response straight to its waiting caller, from whatever task the transport read it
/// in, without the connection's reader task (see [`Peer::completer`]).
#[cfg(feature = "http-client")]
#[derive(Clone)]
pub(crate) struct Completer(std::sync::Weak<PeerShared>);

#[cfg(feature = "http-client")]
impl Completer {
    /// Completes the request `id` with `frame`; false (and nothing done) when `frame` is not a
    /// single response to `id`, or `id` no longer waits: `frame` then goes the usual way.
    pub(crate) fn complete(&self, frame: &[u8], id: &RequestId) -> bool {
        let Some(shared) = self.0.upgrade() else { return false };
        match envelope::decode(frame) {
            envelope::Frame::Single(Ok(envelope::Incoming::Response { id: answered, outcome })) if answered == *id => {
                shared.complete(id, outcome)
            }
            _ => false,
        }
    }
}

/// The source of connection ids.
static NEXT_CONNECTION: AtomicI64 = AtomicI64::new(1);

/// A cheap handle to one connection's sending side.
///
/// Siblings made by [`Peer::with_out`] share correlation (pending requests, progress, ids,
/// closing) but write to another stream: an HTTP request's own response stream.
#[derive(Clone)]
pub(crate) struct Peer {
    out: Out,
    shared: Arc<PeerShared>,
}

/// Where a peer's messages go.
#[derive(Clone)]
enum Out {
    /// A connection's stream.
    Chan(mpsc::Sender<Outgoing>),
    /// An HTTP request's own response stream, made on its first message.
    #[cfg(feature = "http-server")]
    Lazy(Arc<LazyOut>),
}

impl Out {
    async fn send(&self, message: Outgoing) -> Result<(), ()> {
        match self {
            Out::Chan(tx) => tx.send(message).await.map_err(drop),
            #[cfg(feature = "http-server")]
            Out::Lazy(l) => match l.sender() {
                Some(tx) => tx.send(message).await.map_err(drop),
                None => Err(()),
            },
        }
    }

    fn try_send(&self, message: Outgoing) -> Result<(), mpsc::error::TrySendError<Outgoing>> {
        match self {
            Out::Chan(tx) => tx.try_send(message),
            #[cfg(feature = "http-server")]
            Out::Lazy(l) => match l.sender() {
                Some(tx) => tx.try_send(message),
                None => Err(mpsc::error::TrySendError::Closed(message)),
            },
        }
    }
}

/// A request's stream that exists only once something is sent on it. Most requests answer
/// with their result alone, and a Tokio channel costs two allocations (one of them aligned,
/// the allocator's slow path) that such a request never uses.
#[cfg(feature = "http-server")]
pub(crate) struct LazyOut {
    buffer: usize,
    state: Mutex<LazyState>,
}

#[cfg(feature = "http-server")]
enum LazyState {
    Unmade,
    Made(mpsc::Sender<Outgoing>, Option<mpsc::Receiver<Outgoing>>),
    /// The transport stopped listening before anything was sent: sends fail, as on a
    /// channel whose receiver is gone.
    Closed,
}

#[cfg(feature = "http-server")]
impl LazyOut {
    /// A stream whose channel will hold `buffer` messages.
    pub(crate) fn new(buffer: usize) -> LazyOut {
        LazyOut { buffer: buffer.max(1), state: Mutex::new(LazyState::Unmade) }
    }

    /// The sending side, made now if it is not yet; `None` once closed unmade.
    fn sender(&self) -> Option<mpsc::Sender<Outgoing>> {
        let mut state = lock(&self.state);
        match &*state {
            LazyState::Made(tx, _) => Some(tx.clone()),
            LazyState::Closed => None,
            LazyState::Unmade => {
                let (tx, rx) = mpsc::channel(self.buffer);
                *state = LazyState::Made(tx.clone(), Some(rx));
                Some(tx)
            }
        }
    }

    /// The receiving side, made now if need be: for a request that goes on running. The
    /// channel closes when the last sibling peer is dropped, as a channel made up front would.
    pub(crate) fn receiver(&self) -> mpsc::Receiver<Outgoing> {
        let mut state = lock(&self.state);
        match std::mem::replace(&mut *state, LazyState::Closed) {
            LazyState::Made(tx, Some(rx)) => {
                *state = LazyState::Made(tx, None);
                rx
            }
            LazyState::Unmade => {
                let (tx, rx) = mpsc::channel(self.buffer);
                *state = LazyState::Made(tx, None);
                rx
            }
            // Taken already: a receiver that says the stream ended.
            LazyState::Made(_, None) | LazyState::Closed => mpsc::channel(1).1,
        }
    }

    /// For a request that has ended: what it sent, if anything. When it sent nothing, later
    /// sends fail (nobody will read them).
    pub(crate) fn finish(&self) -> Option<mpsc::Receiver<Outgoing>> {
        let mut state = lock(&self.state);
        match &mut *state {
            LazyState::Unmade => {
                *state = LazyState::Closed;
                None
            }
            LazyState::Made(_, rx) => rx.take(),
            LazyState::Closed => None,
        }
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("closed", &self.shared.closed.is_cancelled()).finish()
    }
}

impl Peer {
    pub(crate) fn new(out: mpsc::Sender<Outgoing>, network_transport: Option<&'static str>) -> Self {
        Peer {
            out: Out::Chan(out),
            shared: Arc::new(PeerShared {
                network_transport,
                pending: Mutex::new(HashMap::new()),
                progress: Mutex::new(HashMap::new()),
                next_id: AtomicI64::new(1),
                closed: CancellationToken::new(),
                closed_flag: std::sync::atomic::AtomicBool::new(false),
                finished: CancellationToken::new(),
                close_reason: Mutex::new(None),
                input_closed: std::sync::atomic::AtomicBool::new(false),
                input_ended: CancellationToken::new(),
                id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed).unsigned_abs(),
                direct: std::sync::OnceLock::new(),
            }),
        }
    }

    /// A sibling that writes to `out` and shares everything else.
    #[cfg(feature = "http-server")]
    pub(crate) fn with_out(&self, out: mpsc::Sender<Outgoing>) -> Peer {
        Peer { out: Out::Chan(out), shared: self.shared.clone() }
    }

    /// A sibling that writes to a request's stream made on first use ([`LazyOut`]).
    #[cfg(feature = "http-server")]
    pub(crate) fn with_lazy_out(&self, out: Arc<LazyOut>) -> Peer {
        Peer { out: Out::Lazy(out), shared: self.shared.clone() }
    }

    /// Sends this connection's requests through `direct` from now on: from the caller's own
    /// task, so that a request made on one thread is sent from it (see
    /// `transport::http::client`'s `direct_link`). Set once; later calls are ignored.
    #[cfg(feature = "http-client")]
    pub(crate) fn set_direct(&self, direct: Arc<dyn DirectSend>) {
        let _ = self.shared.direct.set(direct);
    }

    /// What hands responses straight to their callers; it does not keep the connection alive.
    #[cfg(feature = "http-client")]
    pub(crate) fn completer(&self) -> Completer {
        Completer(Arc::downgrade(&self.shared))
    }

    /// Waits until the peer's input has ended (it will send nothing more) or the connection
    /// closed: what a request that only ends when the peer goes away (a `subscriptions/listen`)
    /// waits for.
    pub(crate) async fn gone(&self) {
        tokio::select! {
            () = self.shared.input_ended.cancelled() => {}
            () = self.shared.closed.cancelled() => {}
        }
    }

    /// OpenTelemetry's `network.transport` of the connection, when known.
    pub(crate) fn network_transport(&self) -> Option<&'static str> {
        self.shared.network_transport
    }

    /// This connection's id (shared by siblings).
    pub(crate) fn connection_id(&self) -> u64 {
        self.shared.id
    }

    /// The token cancelled when the connection closes.
    pub(crate) fn closed_token(&self) -> &CancellationToken {
        &self.shared.closed
    }

    /// True once the connection is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed_flag.load(Ordering::Acquire)
    }

    /// Waits until the connection is closed.
    pub(crate) async fn closed(&self) {
        self.shared.closed.cancelled().await
    }

    fn closed_error(&self) -> Error {
        let reason = lock(&self.shared.close_reason).clone();
        Error::closed(reason.unwrap_or_else(|| "connection closed".to_owned()))
    }

    /// Waits until the connection is closed and everything queued has been written.
    pub(crate) async fn finished(&self) {
        self.shared.finished.cancelled().await
    }

    /// A fresh id for an outgoing request (for callers that must know it before sending).
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Queues an encoded message.
    pub(crate) async fn send_raw(&self, bytes: impl Into<Outgoing>) -> Result<(), Error> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.out.send(bytes.into()).await.map_err(|()| self.closed_error())
    }

    /// Queues an encoded message without waiting; hands it back when the queue is full (and
    /// drops it when the connection is closed).
    pub(crate) fn try_send_out(&self, message: Outgoing) -> Result<(), Outgoing> {
        match self.out.try_send(message) {
            Err(tokio::sync::mpsc::error::TrySendError::Full(m)) if !self.is_closed() => Err(m),
            _ => Ok(()),
        }
    }

    /// Queues an encoded message without waiting; drops it when the queue is full.
    pub(crate) fn try_send_raw(&self, bytes: Vec<u8>) -> bool {
        self.out.try_send(bytes.into()).is_ok()
    }

    /// Sends a notification.
    pub(crate) async fn notify<P: Serialize + ?Sized>(&self, method: &str, params: Option<&P>) -> Result<(), Error> {
        let bytes = envelope::encode_notification(method, params)
            .map_err(|e| Error::local(format!("cannot serialize {method} params")).with_source(e))?;
        self.send_raw(bytes).await
    }

    /// Sends a request and waits for its result.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request: it is forgotten and `notifications/cancelled`
    /// is sent to the peer.
    pub(crate) async fn request<P, R>(
        &self,
        method: &str,
        params: Option<&P>,
        options: RequestOptions,
    ) -> Result<R, Error>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let raw = self.request_raw(method, params, options).await?;
        serde_json::from_str(raw.get())
            .map_err(|e| Error::misbehaved(format!("malformed result of {method}")).with_source(e))
    }

    /// Sends a request and returns the raw result.
    pub(crate) async fn request_raw<P>(
        &self,
        method: &str,
        params: Option<&P>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, Error>
    where
        P: Serialize + ?Sized,
    {
        if self.is_closed() || self.shared.input_closed.load(Ordering::SeqCst) {
            return Err(self.closed_error());
        }
        let id = options.id.clone().unwrap_or_else(|| self.next_id());
        let bytes = envelope::encode_request(&id, method, params)
            .map_err(|e| Error::local(format!("cannot serialize {method} params")).with_source(e))?;
        let (tx, rx) = oneshot::channel();
        let progress_seen = options.progress.as_ref().map(|_| Arc::new(tokio::sync::Notify::new()));
        lock(&self.shared.pending)
            .insert(id.clone(), Pending { waiter: Waiter::Caller(tx), progress_seen: progress_seen.clone() });
        // A close, or the end of the peer's input, fails the requests it finds waiting: one
        // entered just after would wait for nothing. Both set their flag before they look, so
        // asking again now that this one is entered leaves no gap (and nothing else to watch).
        if self.is_closed() || self.shared.input_closed.load(Ordering::SeqCst) {
            lock(&self.shared.pending).remove(&id);
            return Err(self.closed_error());
        }
        if let Some((token, sink)) = &options.progress {
            lock(&self.shared.progress).insert(token.clone(), (sink.clone(), id.clone()));
        }
        let mut guard = CancelGuard {
            peer: self,
            id: Some(id.clone()),
            token: options.progress.as_ref().map(|p| p.0.clone()),
            late: options.late,
            rx,
        };
        match self.shared.direct.get() {
            Some(direct) => {
                if let Err(bytes) =
                    direct.send_request(bytes::Bytes::from(bytes), &id, method, options.routing.as_ref())
                {
                    self.send_raw(Vec::from(bytes)).await?;
                }
            }
            None => self.send_raw(bytes).await?,
        }

        let start = Instant::now();
        let hard = options.max_total.map(|m| start + m);
        let mut deadline = start + options.timeout;
        // No token of its own when none was given: nothing to make, nothing to wait on.
        let outside = options.cancel;
        let pause = options.pause;
        loop {
            // Made before reading whether it is held, so a change in between is not missed.
            let changed = pause.as_ref().map(super::TimeoutPause::changed);
            let held = pause.as_ref().is_some_and(super::TimeoutPause::is_held);
            let effective = match hard {
                Some(h) if h < deadline || held => Some(h),
                _ if held => None,
                _ => Some(deadline),
            };
            let progressed = async {
                match &progress_seen {
                    Some(n) => n.notified().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                outcome = &mut guard.rx => {
                    guard.disarm_pending();
                    return match outcome {
                        Ok(Ok(raw)) => Ok(raw),
                        Ok(Err(e)) => Err(Error::peer(e)),
                        Err(_) => Err(self.closed_error()),
                    };
                }
                _ = progressed, if options.reset_on_progress => {
                    deadline = Instant::now() + options.timeout;
                }
                () = async {
                    match changed {
                        Some(n) => n.await,
                        None => std::future::pending().await,
                    }
                } => {
                    if held && !pause.as_ref().is_some_and(super::TimeoutPause::is_held) {
                        deadline = Instant::now() + options.timeout;
                    }
                }
                () = async {
                    match effective {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    // Dropping the guard forgets the request and tells the peer.
                    drop(guard);
                    return Err(Error::new(ErrorKind::Timeout, format!("{method} timed out")));
                }
                () = async {
                    match &outside {
                        Some(token) => token.cancelled().await,
                        None => std::future::pending().await,
                    }
                } => {
                    drop(guard);
                    return Err(Error::new(ErrorKind::Cancelled, format!("{method} cancelled")));
                }
            }
        }
    }

    /// Routes a response to its waiting caller; false when no request has that id.
    pub(crate) fn complete(&self, id: &RequestId, outcome: Result<&RawValue, ErrorObject>) -> bool {
        self.shared.complete(id, outcome)
    }

    /// Routes `notifications/progress` to the request that asked for it.
    pub(crate) fn progress(&self, params: ProgressNotificationParams) -> bool {
        let entry = lock(&self.shared.progress).get(&params.progress_token).cloned();
        let Some((sink, id)) = entry else { return false };
        if let Some(p) = lock(&self.shared.pending).get(&id)
            && let Some(n) = &p.progress_seen
        {
            n.notify_one();
        }
        sink(params);
        true
    }

    /// The peer will send nothing more: fail every request waiting for an answer (and refuse
    /// new ones), while responses to the peer's own requests can still be written.
    pub(crate) fn input_ended(&self, reason: &str) {
        {
            let mut r = lock(&self.shared.close_reason);
            if r.is_none() {
                *r = Some(reason.to_owned());
            }
        }
        self.shared.input_closed.store(true, Ordering::SeqCst);
        self.shared.input_ended.cancel();
        let drained: Vec<_> = lock(&self.shared.pending).drain().collect();
        drop(drained);
        lock(&self.shared.progress).clear();
    }

    /// Marks the connection closed and fails every waiting request.
    pub(crate) fn close(&self, reason: &str) {
        {
            let mut r = lock(&self.shared.close_reason);
            if r.is_none() {
                *r = Some(reason.to_owned());
            }
        }
        self.shared.closed_flag.store(true, Ordering::Release);
        self.shared.closed.cancel();
        let drained: Vec<_> = lock(&self.shared.pending).drain().collect();
        drop(drained); // dropping the senders wakes the waiters with "closed"
        lock(&self.shared.progress).clear();
    }

    pub(crate) fn mark_finished(&self) {
        self.shared.finished.cancel();
    }

    /// Number of requests waiting for an answer.
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        lock(&self.shared.pending).len()
    }
}

/// Forgets a request when its caller stops waiting, and tells the peer. A request with a
/// [`LateHook`] is forgotten only when its answer comes, or after [`LATE_WINDOW`].
struct CancelGuard<'a> {
    peer: &'a Peer,
    id: Option<RequestId>,
    token: Option<ProgressToken>,
    late: Option<LateHook>,
    /// Where the answer comes; one that came but was not read when the caller stopped waiting
    /// goes to `late`.
    rx: oneshot::Receiver<Outcome>,
}

impl CancelGuard<'_> {
    fn disarm_pending(&mut self) {
        self.id = None;
    }

    /// Removes the abandoned request `id` after [`LATE_WINDOW`] if no answer came (the peer
    /// need not answer a cancelled request at all).
    fn forget_later(&self, runtime: &tokio::runtime::Handle, id: &RequestId) {
        let (shared, id) = (Arc::downgrade(&self.peer.shared), id.clone());
        runtime.spawn(async move {
            tokio::time::sleep(LATE_WINDOW).await;
            if let Some(shared) = shared.upgrade() {
                let mut pending = lock(&shared.pending);
                if pending.get(&id).is_some_and(|p| matches!(p.waiter, Waiter::Late(_))) {
                    pending.remove(&id);
                }
            }
        });
    }
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            lock(&self.peer.shared.progress).remove(&token);
        }
        let Some(id) = self.id.take() else { return };
        let closed = self.peer.is_closed();
        let was_pending = {
            let mut pending = lock(&self.peer.shared.pending);
            match pending.get_mut(&id) {
                None => false,
                Some(p) => {
                    // With a late hook (and a runtime to forget it later) the entry stays, for
                    // the hook.
                    let runtime =
                        if closed || self.late.is_none() { None } else { tokio::runtime::Handle::try_current().ok() };
                    match (runtime, self.late.take()) {
                        (Some(runtime), Some(late)) => {
                            *p = Pending { waiter: Waiter::Late(late), progress_seen: None };
                            self.forget_later(&runtime, &id);
                        }
                        _ => {
                            pending.remove(&id);
                        }
                    }
                    true
                }
            }
        };
        if !was_pending {
            // The answer came, and the caller stopped waiting before it read it.
            if let (Some(late), Ok(outcome)) = (self.late.take(), self.rx.try_recv()) {
                match outcome {
                    Ok(raw) => late(Ok(&raw)),
                    Err(e) => late(Err(e)),
                }
            }
            return;
        }
        if !closed {
            let params = CancelledNotificationParams::new(Some(id)).with_reason("request cancelled by the caller");
            if let Ok(bytes) =
                envelope::encode_notification(portico_schema::methods::NOTIFICATION_CANCELLED, Some(&params))
            {
                // Best effort: a full queue means the peer is not reading anyway.
                let _ = self.peer.try_send_raw(bytes);
            }
        }
    }
}

#[cfg(all(test, feature = "http-server"))]
mod tests {
    use super::*;

    fn peer(out: &Arc<LazyOut>) -> Peer {
        let (tx, _rx) = mpsc::channel(1);
        Peer::new(tx, None).with_lazy_out(out.clone())
    }

    #[tokio::test]
    async fn a_request_stream_is_made_on_its_first_message_only() {
        // Nothing sent: no stream, and a late send fails instead of waiting for a reader.
        let out = Arc::new(LazyOut::new(4));
        let p = peer(&out);
        assert!(out.finish().is_none());
        assert!(p.send_raw(b"late".to_vec()).await.is_err());
        assert!(!p.try_send_raw(b"late".to_vec()));

        // Sent before the result: the transport finds it, and the stream closes with the peer.
        let out = Arc::new(LazyOut::new(4));
        let p = peer(&out);
        p.send_raw(b"first".to_vec()).await.expect("the stream is made on this send");
        let mut rx = out.finish().expect("a stream was made");
        drop((p, out));
        assert_eq!(rx.recv().await.map(Outgoing::into_bytes).as_deref(), Some(&b"first"[..]));
        assert!(rx.recv().await.is_none());

        // Still running: the receiver is made up front, and gets what is sent later.
        let out = Arc::new(LazyOut::new(4));
        let p = peer(&out);
        let mut rx = out.receiver();
        drop(out);
        assert!(p.try_send_raw(b"later".to_vec()));
        drop(p);
        assert_eq!(rx.recv().await.map(Outgoing::into_bytes).as_deref(), Some(&b"later"[..]));
        assert!(rx.recv().await.is_none());
    }
}

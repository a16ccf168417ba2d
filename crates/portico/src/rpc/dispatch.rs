//! The receiving side: reader, dispatcher and writer tasks of one connection.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use portico_schema::{CancelledNotificationParams, ErrorObject, ProgressNotificationParams, RequestId, methods};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use super::envelope::{self, Frame, Incoming, Invalid, Outgoing};
use super::slots::{Slot, Slots};
use super::{Cancel, Endpoint, Handled, IncomingRequest, Peer, RpcConfig};
use crate::sync::lock;
use crate::transport::{FrameReader, FrameWriter, ReadError, Transport};

/// Requests from the peer that are running, by id, so `notifications/cancelled` can stop them.
pub(crate) type InFlight = Arc<Mutex<HashMap<RequestId, Cancel>>>;

/// Starts the tasks of one connection and returns its sending handle.
///
/// The connection ends when the peer closes its side (in-flight requests still finish and
/// their responses are written), when the transport fails, or when `Peer::close` is called.
pub(crate) fn start<T: Transport, S: Endpoint>(transport: T, service: Arc<S>, config: RpcConfig) -> Peer {
    let network_transport = transport.network_transport();
    let (reader, writer) = transport.split();
    let (out_tx, out_rx) = mpsc::channel(config.outgoing_capacity);
    let peer = Peer::new(out_tx, network_transport);
    // The HTTP client sends each request in an exchange of its own: it can start it from the
    // caller's task, and hand a plain answer straight back, without this connection's tasks.
    #[cfg(feature = "http-client")]
    if let Some(direct) = crate::transport::http::client::direct_link(&writer, peer.completer()) {
        peer.set_direct(direct);
    }
    let span = tracing::debug_span!("mcp.connection", name = config.name);
    let writer_done = CancellationToken::new();
    tokio::spawn(write_loop(writer, out_rx, peer.clone(), writer_done.clone()).instrument(span.clone()));
    let dispatcher = Dispatcher {
        service,
        peer: peer.clone(),
        slots: Slots::new(config.max_in_flight),
        in_flight: Arc::new(Mutex::new(HashMap::new())),
        max_queued: config.max_queued,
        cancel_on_input_end: config.cancel_on_input_end,
        notification_rate: config.notification_rate,
    };
    tokio::spawn(dispatcher.run(frames(reader), writer_done).instrument(span));
    peer
}

/// The frames of `reader`, ending after the end of input or a fatal read error.
///
/// The dispatcher reads through this stream itself, rather than a reader task handing frames
/// over a channel: one task wake-up less per message. The stream keeps a read in progress
/// when the dispatcher's `select!` picks another branch, so no transport needs a cancel-safe
/// `read_frame`.
fn frames<R: FrameReader>(reader: R) -> impl futures_util::Stream<Item = Result<Bytes, ReadError>> + Send {
    futures_util::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.read_frame().await {
            Ok(Some(frame)) => Some((Ok(frame), Some(reader))),
            Ok(None) => None,
            Err(e) => {
                let next = e.is_recoverable().then_some(reader);
                Some((Err(e), next))
            }
        }
    })
}

async fn write_loop<W: FrameWriter>(
    mut writer: W,
    mut rx: mpsc::Receiver<Outgoing>,
    peer: Peer,
    done: CancellationToken,
) {
    let closed_token = peer.closed_token().clone();
    let result: std::io::Result<()> = async {
        // Made once, not per batch: waiting on a token registers with its mutex.
        let mut closed = std::pin::pin!(closed_token.cancelled());
        loop {
            let first = tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => m,
                    None => break,
                },
                _ = &mut closed => {
                    // Closing: write what is already queued, then end the stream.
                    while let Ok(m) = rx.try_recv() {
                        m.write_to(&mut writer).await?;
                    }
                    writer.flush().await?;
                    break;
                }
            };
            first.write_to(&mut writer).await?;
            // Coalesce: write whatever else is queued, flush once the queue is empty.
            while let Ok(next) = rx.try_recv() {
                next.write_to(&mut writer).await?;
            }
            writer.flush().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = &result {
        debug!(error = %e, "write failed; closing the connection");
        peer.close(&format!("the transport failed while writing: {e}"));
    }
    let _ = writer.close().await;
    peer.close("the connection was closed");
    peer.mark_finished();
    done.cancel();
}

struct Dispatcher<S> {
    service: Arc<S>,
    peer: Peer,
    /// Each running request holds a slot until its response is queued; `all_free` waits for
    /// every request to finish.
    slots: Slots,
    in_flight: InFlight,
    max_queued: usize,
    cancel_on_input_end: bool,
    notification_rate: Option<u32>,
}

/// A token bucket over the notifications read from the peer: `rate` a second, a burst of as
/// many. Reading pauses while it is empty, so a peer that floods notifications backs up in its
/// own writes instead of taking the reader's CPU from everything else.
struct Throttle {
    rate: f64,
    tokens: f64,
    at: tokio::time::Instant,
}

impl Throttle {
    fn new(rate: u32) -> Self {
        let rate = f64::from(rate.max(1));
        Throttle { rate, tokens: rate, at: tokio::time::Instant::now() }
    }

    /// Spends `n` notifications; when the bucket is empty, the instant reading may go on.
    fn spend(&mut self, n: usize) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.rate).min(self.rate);
        self.at = now;
        self.tokens -= n as f64;
        (self.tokens < 1.0).then(|| now + std::time::Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
    }
}

/// A request admitted but waiting for a free slot.
pub(crate) struct Queued {
    pub id: RequestId,
    pub method: Box<str>,
    pub params: Option<Box<RawValue>>,
    /// Set by transports whose response streams can be closed and resumed (HTTP sessions).
    pub close_stream: Option<Arc<tokio::sync::Notify>>,
    /// Handed to the handler (see [`IncomingRequest::extensions`]).
    pub extensions: http::Extensions,
}

impl Queued {
    /// The request as its handler gets it.
    fn into_request(self, cancel: Cancel) -> IncomingRequest {
        IncomingRequest {
            id: self.id,
            method: self.method,
            params: self.params,
            cancel,
            close_stream: self.close_stream,
            extensions: self.extensions,
        }
    }

    pub(crate) fn new(id: RequestId, method: &str, params: Option<&RawValue>) -> Self {
        Queued {
            id,
            method: method.into(),
            params: params.map(|p| p.to_owned()),
            close_stream: None,
            extensions: http::Extensions::new(),
        }
    }
}

impl<S: Endpoint> Dispatcher<S> {
    async fn run(
        self,
        frames: impl futures_util::Stream<Item = Result<Bytes, ReadError>> + Send,
        writer_done: CancellationToken,
    ) {
        let mut frames = Box::pin(frames);
        let mut queue: VecDeque<Queued> = VecDeque::new();
        // Made once, not per message: waiting on a token registers with its mutex.
        let closed_token = self.peer.closed_token().clone();
        let mut closed = std::pin::pin!(closed_token.cancelled());
        let mut throttle = self.notification_rate.map(Throttle::new);
        // Made only while reading is paused: a disabled `select!` branch's future is still
        // built on every turn of the loop.
        let mut paused: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
        let reason = loop {
            let can_read = queue.len() < self.max_queued && paused.is_none();
            tokio::select! {
                biased;
                _ = &mut closed => break "closed locally",
                slot = self.slots.take(), if !queue.is_empty() => {
                    if let Some(q) = queue.pop_front() {
                        self.spawn(q, slot);
                    }
                }
                () = std::future::poll_fn(|cx| match paused.as_mut() {
                    Some(sleep) => sleep.as_mut().poll(cx),
                    None => std::task::Poll::Pending,
                }), if paused.is_some() => {
                    paused = None;
                }
                item = frames.next(), if can_read => match item {
                    None => break "the peer closed the connection",
                    Some(Err(ReadError::TooLarge { limit })) => {
                        warn!(limit, "oversized message skipped");
                        let err = ErrorObject::invalid_request(format!("message exceeds the {limit}-byte limit"));
                        let _ = self.peer.send_raw(envelope::encode_error(None, &err)).await;
                    }
                    Some(Err(e)) => {
                        debug!(error = %e, "transport read failed");
                        break "the transport failed while reading";
                    }
                    Some(Ok(frame)) => {
                        let notifications = self.on_frame(&frame, &mut queue).await;
                        if let Some(t) = throttle.as_mut().filter(|_| notifications > 0) {
                            paused = t.spend(notifications).map(|until| Box::pin(tokio::time::sleep_until(until)));
                        }
                    }
                },
            }
        };
        debug!(reason, "connection reading ended");
        // Reading stops here: the stream (and the transport's reading half) is dropped.
        drop(frames);
        // Nothing more will arrive: requests waiting for the peer's answer fail now, so
        // handlers waiting on them (sampling, elicitation) finish instead of hanging.
        self.peer.input_ended(reason);
        if self.cancel_on_input_end {
            for (_, token) in lock(&self.in_flight).drain() {
                token.cancel();
            }
        }
        // Requests already admitted still run and answer, unless the connection was closed.
        if !self.peer.is_closed() {
            while let Some(q) = queue.pop_front() {
                let slot = self.slots.take().await;
                self.spawn(q, slot);
            }
        }
        tokio::select! {
            _ = self.slots.all_free() => {}
            _ = self.peer.closed_token().cancelled() => {}
        }
        for (_, token) in lock(&self.in_flight).drain() {
            token.cancel();
        }
        self.peer.close(reason);
        self.service.closed();
        // Let the writer drain what handlers queued; the queue's senders are gone with the tasks.
        drop(self);
        writer_done.cancelled().await;
    }

    /// Handles one frame; the number of notifications it held.
    async fn on_frame(&self, frame: &[u8], queue: &mut VecDeque<Queued>) -> usize {
        match envelope::decode(frame) {
            Frame::Single(msg) => {
                let notification = matches!(msg, Ok(Incoming::Notification { .. }));
                self.on_message(msg, queue).await;
                usize::from(notification)
            }
            Frame::Batch(items) => {
                if !self.service.accepts_batches() {
                    let err =
                        ErrorObject::invalid_request("JSON-RPC batches are not supported by this protocol revision");
                    let _ = self.peer.send_raw(envelope::encode_error(None, &err)).await;
                    return 0;
                }
                // Counted whole: a batch is not decoded message by message here.
                let messages = items.len();
                self.on_batch(items).await;
                messages
            }
        }
    }

    async fn on_message(&self, msg: Result<Incoming<'_>, Invalid>, queue: &mut VecDeque<Queued>) {
        match msg {
            Err(Invalid { id, error }) => {
                debug!(code = error.code.0, message = %error.message, "invalid message");
                let _ = self.peer.send_raw(envelope::encode_error(id.as_ref(), &error)).await;
            }
            Ok(Incoming::Response { id, outcome }) => {
                if !self.peer.complete(&id, outcome) {
                    debug!(%id, "response to an unknown or finished request ignored");
                }
            }
            Ok(Incoming::Notification { method, params }) => self.on_notification(&method, params),
            Ok(Incoming::Request { id, method, params }) => {
                self.service.admit(&method);
                let q = Queued::new(id, &method, params);
                match self.slots.try_take() {
                    Some(slot) if queue.is_empty() => self.spawn(q, slot),
                    Some(slot) => {
                        // Keep arrival order: the oldest waiting request goes first.
                        queue.push_back(q);
                        if let Some(first) = queue.pop_front() {
                            self.spawn(first, slot);
                        }
                    }
                    None => queue.push_back(q),
                }
            }
        }
    }

    fn on_notification(&self, method: &str, params: Option<&RawValue>) {
        route_notification(&*self.service, &self.peer, &self.in_flight, method, params);
    }

    fn spawn(&self, q: Queued, slot: Slot) {
        // Not tied to the connection's token: closing cancels every in-flight request through
        // the in-flight map, without a shared token tree to contend on.
        let token = Cancel::new();
        let out = match start_request(self.service.clone(), self.peer.clone(), q, token) {
            Started::Done(out) => out,
            Started::Waiting(waiting) => {
                waiting.register(&self.in_flight);
                let (peer, in_flight) = (self.peer.clone(), self.in_flight.clone());
                tokio::spawn(async move {
                    if let Some(out) = waiting.finish(&in_flight).await {
                        // The response waits for queue space; the slot is held until then,
                        // which is the backpressure on a peer that does not read its
                        // responses. (`send_raw` fails only when the connection is closed.)
                        let _ = peer.send_raw(out).await;
                    }
                    drop(slot);
                });
                return;
            }
        };
        if let Err(full) = self.peer.try_send_out(out) {
            // The outgoing queue is full: wait for room in a task, holding the slot.
            let peer = self.peer.clone();
            tokio::spawn(async move {
                let _ = peer.send_raw(full).await;
                drop(slot);
            });
        }
    }

    async fn on_batch(&self, items: Vec<&RawValue>) {
        // Batches (2025-03-26) are answered with one array once every request has finished.
        let mut futures = Vec::new();
        for raw in items {
            match envelope::decode_one(raw.get()) {
                Err(Invalid { id, error }) => {
                    let bytes = envelope::encode_error(id.as_ref(), &error);
                    futures.push(async move { Some(bytes) }.boxed());
                }
                Ok(Incoming::Response { id, outcome }) => {
                    self.peer.complete(&id, outcome);
                }
                Ok(Incoming::Notification { method, params }) => self.on_notification(&method, params),
                Ok(Incoming::Request { id, method, params }) => {
                    let token = Cancel::new();
                    register(&self.in_flight, id.clone(), &token);
                    let q = Queued::new(id, &method, params);
                    let fut = run_request(self.service.clone(), self.peer.clone(), self.in_flight.clone(), q, token);
                    futures.push(async move { fut.await.map(|(_, b)| b.into_vec()) }.boxed());
                }
            }
        }
        if futures.is_empty() {
            return;
        }
        let slot = self.slots.take().await;
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let replies: Vec<Vec<u8>> = futures_util::future::join_all(futures).await.into_iter().flatten().collect();
            if !replies.is_empty() {
                let _ = peer.send_raw(envelope::encode_batch(&replies)).await;
            }
            drop(slot);
        });
    }
}

/// Enters a request in its connection's in-flight map, where `notifications/cancelled` and
/// the connection's end find it; [`run_request`] removes it when it ends.
pub(crate) fn register(in_flight: &InFlight, id: RequestId, token: &Cancel) {
    token.set_registered();
    lock(in_flight).insert(id, token.clone());
}

/// Handles an incoming notification: cancellation and progress are the engine's, the rest
/// goes to the service.
pub(crate) fn route_notification<S: Endpoint + ?Sized>(
    service: &S,
    peer: &Peer,
    in_flight: &InFlight,
    method: &str,
    params: Option<&RawValue>,
) {
    match method {
        methods::NOTIFICATION_CANCELLED => {
            let Some(p) = params.and_then(|p| serde_json::from_str::<CancelledNotificationParams>(p.get()).ok()) else {
                debug!("malformed notifications/cancelled ignored");
                return;
            };
            if let Some(id) = &p.request_id
                && let Some(token) = lock(in_flight).remove(id)
            {
                debug!(%id, "request cancelled by the peer");
                token.cancel();
            }
            service.notify(method, params, peer);
        }
        methods::NOTIFICATION_PROGRESS => {
            match params.and_then(|p| serde_json::from_str::<ProgressNotificationParams>(p.get()).ok()) {
                Some(p) => {
                    if !peer.progress(p) {
                        debug!("progress for an unknown token ignored");
                    }
                }
                None => debug!("malformed notifications/progress ignored"),
            }
        }
        _ => service.notify(method, params, peer),
    }
}

/// Runs one request to its encoded response; `None` when it was cancelled (no response).
pub(crate) async fn run_request<S: Endpoint + ?Sized>(
    service: Arc<S>,
    peer: Peer,
    in_flight: InFlight,
    q: Queued,
    token: Cancel,
) -> Option<(Peer, Outgoing)> {
    let registered = token.is_registered().then(|| q.id.clone());
    let out = match start_request(service, peer.clone(), q, token) {
        Started::Done(out) => {
            // Entered by the caller (batches), and answered at once: out of the map again.
            if let Some(id) = registered {
                lock(&in_flight).remove(&id);
            }
            out
        }
        Started::Waiting(waiting) => waiting.finish(&in_flight).await?,
    };
    Some((peer, out))
}

/// A request after [`start_request`].
pub(crate) enum Started {
    /// Answered in its first poll.
    Done(Outgoing),
    /// Waiting: to be finished ([`Waiting::finish`]) in a task of its own.
    Waiting(Waiting),
}

/// A request whose handler waits.
pub(crate) struct Waiting {
    call: BoxFuture<'static, super::Reply>,
    span: tracing::Span,
    id: RequestId,
    token: Cancel,
}

/// Hands a request to its endpoint, which answers it at once (a cached listing: no future at
/// all) or returns its future, polled once here: a request that completes in that poll (an
/// echo) is answered without a task, a wake-up or a second box around its future. Both run
/// inside the panic guard. It cannot have been cancelled yet: no other message was read
/// meanwhile.
pub(crate) fn start_request<S: Endpoint + ?Sized>(service: Arc<S>, peer: Peer, q: Queued, token: Cancel) -> Started {
    let span = tracing::debug_span!("mcp.request", method = &*q.method, id = %q.id);
    let id = q.id.clone();
    let request = q.into_request(token.clone());
    let first = {
        let _entered = span.enter();
        std::panic::catch_unwind(AssertUnwindSafe(|| match service.call(request, peer) {
            Handled::Now(reply) => Ok(reply),
            Handled::Later(mut call) => {
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                match call.as_mut().poll(&mut cx) {
                    std::task::Poll::Ready(reply) => Ok(reply),
                    std::task::Poll::Pending => Err(call),
                }
            }
        }))
    };
    match first {
        Ok(Err(call)) => Started::Waiting(Waiting { call, span, id, token }),
        Ok(Ok(reply)) => Started::Done(encode_outcome(&id, Ok(reply))),
        Err(panic) => Started::Done(encode_outcome(&id, Err(panic))),
    }
}

impl Waiting {
    /// Enters the request in its connection's in-flight map, where `notifications/cancelled`
    /// and the connection's end find it. Only a request that waits can be cancelled by a later
    /// message, so only such a request is entered (no lock, no hashing for the others); it is
    /// entered before its task exists, so its end, which removes it, cannot come first.
    pub(crate) fn register(&self, in_flight: &InFlight) {
        register(in_flight, self.id.clone(), &self.token);
    }

    /// Runs the request to its response; `None` when it was cancelled (no response).
    pub(crate) async fn finish(self, in_flight: &InFlight) -> Option<Outgoing> {
        let Waiting { call, span, id, token } = self;
        let outcome = unless_cancelled(&token, AssertUnwindSafe(call).catch_unwind().instrument(span)).await;
        if token.is_registered() {
            lock(in_flight).remove(&id);
        }
        Some(encode_outcome(&id, outcome?))
    }
}

/// The error message of a request whose handler panicked: what happened, and where to look.
const HANDLER_PANICKED: &str = "the server's handler for this request panicked; the server logged a \"request handler panicked\" warning with the request's id";

/// The response to a request: its result, its error, or `-32603` when its handler panicked.
fn encode_outcome(id: &RequestId, outcome: Result<super::Reply, Box<dyn std::any::Any + Send>>) -> Outgoing {
    match outcome {
        Ok(Ok(result)) => envelope::encode_result(id, result),
        Ok(Err(error)) => envelope::encode_error(Some(id), &error).into(),
        Err(_) => {
            warn!(%id, "request handler panicked");
            envelope::encode_error(Some(id), &ErrorObject::internal_error(HANDLER_PANICKED)).into()
        }
    }
}

/// Runs `fut` until it finishes (`Some`) or `cancel` fires (`None`, `fut` dropped); cancellation
/// wins when both are ready. Only a future that waits makes `cancel` a token to wait on: a
/// request answered in its first poll never touches one.
async fn unless_cancelled<F: Future>(cancel: &Cancel, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut waiting: Option<std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>> = None;
    std::future::poll_fn(|cx| {
        if cancel.is_cancelled() {
            return std::task::Poll::Ready(None);
        }
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(out));
        }
        let wait = waiting.get_or_insert_with(|| Box::pin(cancel.token().clone().cancelled_owned()));
        match wait.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
    .await
}

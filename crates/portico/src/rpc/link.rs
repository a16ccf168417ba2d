//! The seam between the engine and a transport that receives a connection's messages one at a
//! time rather than as one stream: the Streamable HTTP endpoint, where each POST carries one
//! message (or a batch) and each request's answer goes back on that POST's response.
//!
//! A [`Link`] is such a connection: an HTTP session, or the endpoint's stateless requests. The
//! transport hands it what it decoded (with the message vocabulary re-exported here) and gets
//! back, per request, an [`Exchange`]: the messages the handler sends before its result, then
//! the result. Everything else (dispatch, the in-flight map, cancellation, progress,
//! correlation of responses) stays behind the seam, exactly as for a stdio connection.

use std::sync::Arc;

use portico_schema::{ErrorObject, ProtocolVersion, RequestId};
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, oneshot};

pub(crate) use super::Cancel;
use super::dispatch::{InFlight, Queued, Started, register, route_notification, run_request, start_request};
pub(crate) use super::envelope::{Frame, Incoming, Invalid, Outgoing, decode, decode_one, encode_batch, encode_error};
use super::peer::LazyOut;
use super::{Endpoint, Peer};
use crate::peek::ParamsPeek;
use crate::sync::lock;

/// One connection of a message-at-a-time transport.
pub(crate) struct Link {
    endpoint: Arc<dyn Endpoint>,
    /// The connection's own outgoing channel (a session's GET stream; nowhere for stateless
    /// requests), and the parent of every request's cancellation in a session.
    peer: Peer,
    in_flight: InFlight,
    /// A session's requests end with it; a stateless request only when its response stream
    /// goes away.
    session: bool,
}

/// One request's way back: what its handler sends before the result, then the result (`None`
/// when the request was cancelled and gets no answer).
pub(crate) struct Exchange {
    /// `None` when the request ended having sent nothing before its result.
    pub messages: Option<mpsc::Receiver<Outgoing>>,
    pub result: Answer,
    /// Cancels the request.
    pub cancel: Cancel,
}

/// A request's result: already there (it was answered in its first poll; `None` once taken),
/// or on its way (`None` when the request was cancelled).
pub(crate) enum Answer {
    Ready(Option<Outgoing>),
    Pending(oneshot::Receiver<Option<Outgoing>>),
}

impl Future for Answer {
    type Output = Option<Outgoing>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Answer::Ready(result) => std::task::Poll::Ready(result.take()),
            Answer::Pending(rx) => std::pin::Pin::new(rx).poll(cx).map(|r| r.ok().flatten()),
        }
    }
}

/// A request as the transport decoded it.
pub(crate) struct Request<'a> {
    pub id: RequestId,
    pub method: &'a str,
    pub params: Option<&'a RawValue>,
    /// What the transport knows of the request (the HTTP request's extensions).
    pub extensions: http::Extensions,
    /// Notified to end the request's response stream early (a session's resumable streams).
    pub close_stream: Option<Arc<Notify>>,
    /// Messages buffered before the handler waits.
    pub buffer: usize,
}

impl Link {
    /// A session: server-initiated messages come out of the returned receiver.
    pub(crate) fn session(endpoint: Arc<dyn Endpoint>, buffer: usize) -> (Link, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(buffer);
        let peer = Peer::new(tx, Some("tcp"));
        endpoint.attach(&peer);
        (Link { endpoint, peer, in_flight: InFlight::default(), session: true }, rx)
    }

    /// Requests outside any session: nothing is sent outside a request's own response.
    pub(crate) fn stateless(endpoint: Arc<dyn Endpoint>) -> Link {
        let (sink, _) = mpsc::channel(1);
        Link { endpoint, peer: Peer::new(sink, Some("tcp")), in_flight: InFlight::default(), session: false }
    }

    /// Runs a request. It is answered in its first poll when it can be (no task, never in the
    /// in-flight map); otherwise it runs in a task of its own. `on_end` is dropped when the
    /// request has ended.
    pub(crate) fn run(&self, req: Request<'_>, on_end: impl Send + 'static) -> Exchange {
        let out = Arc::new(LazyOut::new(req.buffer));
        let peer = self.peer.with_lazy_out(out.clone());
        // A session's requests end with it (a child of its token). A stateless request gets a
        // plain token, not a child of the endpoint-wide stateless peer's, whose tree would be one
        // mutex shared by every stateless request on every worker.
        let cancel = match self.session {
            true => Cancel::from_token(self.peer.closed_token().child_token()),
            false => Cancel::new(),
        };
        let q = Queued {
            id: req.id,
            method: req.method.into(),
            params: req.params.map(ToOwned::to_owned),
            close_stream: req.close_stream,
            extensions: req.extensions,
        };
        match start_request(self.endpoint.clone(), peer, q, cancel.clone()) {
            Started::Done(result) => {
                drop(on_end);
                Exchange { messages: out.finish(), result: Answer::Ready(Some(result)), cancel }
            }
            Started::Waiting(waiting) => {
                waiting.register(&self.in_flight);
                let in_flight = self.in_flight.clone();
                let messages = Some(out.receiver());
                let (fin_tx, result) = oneshot::channel();
                tokio::spawn(async move {
                    let _ = fin_tx.send(waiting.finish(&in_flight).await);
                    drop(on_end);
                });
                Exchange { messages, result: Answer::Pending(result), cancel }
            }
        }
    }

    /// Runs a request of a batch to its answer (`None` when cancelled). Messages it sends
    /// before its result cannot be delivered.
    /// The request is in the in-flight map from this call on (so a cancellation later in the
    /// same batch finds it), not from the future's first poll.
    pub(crate) fn run_batched(&self, req: Request<'_>) -> impl Future<Output = Option<Outgoing>> + Send + 'static {
        let cancel = Cancel::from_token(self.peer.closed_token().child_token());
        register(&self.in_flight, req.id.clone(), &cancel);
        let mut q = Queued::new(req.id, req.method, req.params);
        q.extensions = req.extensions;
        let (tx, _rx) = mpsc::channel(1);
        let run = run_request(self.endpoint.clone(), self.peer.with_out(tx), self.in_flight.clone(), q, cancel);
        async move { run.await.map(|(_, out)| out) }
    }

    /// A notification from the client (cancellation and progress are the engine's).
    pub(crate) fn notify(&self, method: &str, params: Option<&RawValue>) {
        route_notification(&*self.endpoint, &self.peer, &self.in_flight, method, params);
    }

    /// The client's response to a request the server sent.
    pub(crate) fn respond(&self, id: &RequestId, outcome: Result<&RawValue, ErrorObject>) {
        self.peer.complete(id, outcome);
    }

    /// The revision the connection's `initialize` negotiated.
    pub(crate) fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.endpoint.negotiated_version()
    }

    /// The hook that resolves, from a stateless request's params the transport read for its
    /// own checks, what the endpoint would otherwise decode again (into `extensions`).
    pub(crate) fn resolve_ahead(&self, method: &str, params: ParamsPeek<'_>, extensions: &mut http::Extensions) {
        self.endpoint.resolve_ahead(method, params, extensions);
    }

    /// Ends the connection: its requests are cancelled.
    pub(crate) fn close(&self, reason: &str) {
        self.peer.close(reason);
        for (_, t) in lock(&self.in_flight).drain() {
            t.cancel();
        }
    }
}

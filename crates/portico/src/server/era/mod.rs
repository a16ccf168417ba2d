//! The era layer: one connection's state, the dual-era rules that pick the era of each request,
//! and the dispatch of every server method to the registry.
//!
//! A request goes through it in four steps, one file each:
//!
//! 1. [`resolve`]: which era the request belongs to (its `_meta`, or the connection's
//!    handshake), and its client's capabilities;
//! 2. [`dispatch`]: the method table, which gates each method by era and by what the server
//!    offers;
//! 3. the method itself: [`lifecycle`], [`tools`], [`resources`], [`prompts`], [`completion`],
//!    [`tasks`], [`listen`] (which also forwards a handshake-era connection's notifications);
//! 4. [`encode`]: the result stamped for its era and encoded.

mod completion;
mod dispatch;
mod encode;
mod lifecycle;
mod listen;
mod prompts;
pub(crate) mod resolve;
mod resources;
mod tasks;
mod tools;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use portico_schema::{
    ClientCapabilities, ErrorObject, Implementation, PaginatedRequestParams, ProtocolVersion, methods,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::Server;
use super::context::{Inner as CtxInner, LEVEL_UNSET, LogGate, RequestContext};
use super::input::{self, InputState, Opened, RawResponses};
use super::registry::{Entry, InvalidCursor, Registry, page};
use crate::rpc::{Cancel, Endpoint, Handled, IncomingRequest, Peer};
use dispatch::Step;
pub(crate) use resolve::Era;

/// What [`EraLayer::start`] made of a request.
enum Start {
    Step(Step),
    /// A handshake-era request that arrived while `initialize` was being answered.
    AfterInitialize(IncomingRequest, Peer, tokio::sync::watch::Receiver<bool>),
}

/// Handshake-era state of a connection (set by `initialize`).
struct Handshake {
    version: ProtocolVersion,
    caps: Arc<ClientCapabilities>,
    info: Arc<Implementation>,
}

/// The era layer of one connection (a stdio connection, an HTTP session, or the HTTP endpoint's
/// stateless requests): the [`Endpoint`] the engine hands requests to.
pub(crate) struct EraLayer {
    server: Server,
    handshake: OnceLock<Handshake>,
    /// True from the arrival of `initialize` until it is answered: requests that arrived
    /// after it wait for it instead of racing it.
    initializing: tokio::sync::watch::Sender<bool>,
    log_level: Arc<AtomicU8>,
    subscriptions: Arc<Mutex<HashSet<String>>>,
    peer: OnceLock<Peer>,
    forwarding: AtomicBool,
    /// The client's capabilities and info as last sent in a stateless request's `_meta`.
    last_client: resolve::LastClient,
}

impl Drop for EraLayer {
    /// A connection that ends ends its resource subscriptions.
    fn drop(&mut self) {
        let subs = std::mem::take(&mut *crate::sync::lock(&self.subscriptions));
        for uri in subs {
            self.server.subscription_changed(&uri, false);
        }
    }
}

fn parse<'a, T: Deserialize<'a>>(params: Option<&'a RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", |p| p.get()))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

impl EraLayer {
    pub(crate) fn new(server: Server) -> Self {
        EraLayer {
            server,
            handshake: OnceLock::new(),
            initializing: tokio::sync::watch::Sender::new(false),
            log_level: Arc::new(AtomicU8::new(LEVEL_UNSET)),
            subscriptions: Arc::new(Mutex::new(HashSet::new())),
            peer: OnceLock::new(),
            forwarding: AtomicBool::new(false),
            last_client: resolve::LastClient::default(),
        }
    }

    /// Handles one request after the middleware: resolves its era, then runs its method.
    ///
    /// This runs before anything waits: a request that needs no waiting is answered here,
    /// without a future, and one that waits gets one future, its method's, boxed at its own
    /// size. See design/design.md, "Small futures".
    pub(super) fn handle(self: Arc<Self>, mut req: IncomingRequest, peer: Peer) -> Handled {
        // The era a transport resolved ahead, or what the params say about it.
        let ahead = req.extensions.remove::<resolve::ResolvedEra>();
        match self.start(req, peer, ahead, true) {
            Ok(Start::Step(Step::Now(bytes))) => Handled::Now(Ok(bytes)),
            Ok(Start::Step(Step::Wait(fut))) => Handled::Later(fut),
            Ok(Start::AfterInitialize(req, peer, mut rx)) => Handled::Later(Box::pin(async move {
                let _ = rx.wait_for(|busy| !busy).await;
                match self.start(req, peer, None, false)? {
                    Start::Step(Step::Now(bytes)) => Ok(bytes),
                    Start::Step(Step::Wait(fut)) => fut.await,
                    // `may_wait` is false: a request waits for initialize once.
                    Start::AfterInitialize(..) => {
                        Err(ErrorObject::internal_error("a request waited for initialize twice"))
                    }
                }
            })),
            Err(e) => Handled::Now(Err(e)),
        }
    }

    /// Steps 1 and 2 of a request: its era, then its method; or, for a handshake-era request
    /// pipelined behind `initialize` (and `may_wait`), the wait for the session it creates.
    fn start(
        self: &Arc<Self>,
        req: IncomingRequest,
        peer: Peer,
        ahead: Option<resolve::ResolvedEra>,
        may_wait: bool,
    ) -> Result<Start, ErrorObject> {
        let (mut peeked, ahead) = match ahead {
            // What the transport read of a tool call comes with the era it resolved.
            Some(resolve::ResolvedEra { era, call }) => (resolve::Peeked::with_call(call), Some(era)),
            None => (resolve::peek(&req)?, None),
        };
        let stateless = ahead.is_some() || peeked.is_stateless();
        if &*req.method == methods::INITIALIZE
            && let Some(answer) = self.initialize(stateless, req.params.as_deref(), &peer)
        {
            return answer.map(|bytes| Start::Step(Step::Now(bytes)));
        }
        if may_wait && !stateless && self.handshake.get().is_none() && *self.initializing.borrow() {
            // Pipelined behind initialize: belong to the session it is creating.
            drop(peeked);
            return Ok(Start::AfterInitialize(req, peer, self.initializing.subscribe()));
        }
        let parsed = peeked.call.take();
        let era = match ahead {
            Some(era) => era,
            None => match self.era_of(&req.method, &mut peeked)? {
                Some(era) => era,
                None => return encode::encode(&portico_schema::EmptyResult::new()).map(|b| Start::Step(Step::Now(b))),
            },
        };
        self.dispatch(dispatch::Call { req, era, peer, parsed }).map(Start::Step)
    }

    /// One page of the enabled entries of one registry map, by the request's cursor.
    fn list<E: Entry>(
        &self,
        params: Option<&RawValue>,
        pick: impl Fn(&Registry) -> &BTreeMap<String, Arc<E>>,
    ) -> Result<(Vec<E::Def>, Option<String>), ErrorObject> {
        let p: PaginatedRequestParams = parse(params)?;
        let reg = self.server.registry();
        let items = pick(&reg).iter().filter(|(_, e)| e.enabled());
        let (items, next) = page(items, p.cursor.as_deref(), self.server.inner.config.page_size)
            .map_err(|InvalidCursor| ErrorObject::invalid_params("invalid cursor"))?;
        Ok((items.into_iter().map(|e| e.def().clone()).collect(), next))
    }

    /// The input state of a stateless-era request (`None` in the handshake era), or the
    /// handler kept from the round before, resumed.
    fn input_state(
        &self,
        req: &IncomingRequest,
        era: &Era,
        binding: impl FnOnce() -> Vec<u8>,
        request_state: Option<&str>,
        responses: Option<RawResponses>,
    ) -> Result<Option<Opened>, ErrorObject> {
        if !era.version.is_stateless() {
            return Ok(None);
        }
        let config = &self.server.inner.config;
        let parking = config.parking.as_deref();
        input::open(&config.sealer, parking, &req.extensions, binding, request_state, responses).map(Some)
    }

    /// Makes the handler of a request that may ask for input (`make` is given its context),
    /// or takes the one kept from the round before. A handler gets a cancellation of its own
    /// when `own` says so (a tool call that may become a task) or when the server keeps
    /// handlers across rounds: the end of this request must not cancel a handler that outlives
    /// it. That token is cancelled with this request (its guard fires when the request's
    /// future is dropped) until the caller disarms the guard.
    fn start_handler<T: Send + 'static, E>(
        &self,
        req: &IncomingRequest,
        era: &Era,
        peer: Peer,
        opened: Option<Opened>,
        own: bool,
        make: impl FnOnce(RequestContext, Option<&Arc<InputState>>) -> Result<BoxFuture<'static, T>, E>,
    ) -> Result<Started<T>, E> {
        let state = match opened {
            Some(Opened::Resumed(kept)) => match kept.resume::<T>() {
                Some((fut, state, token)) => {
                    state.reroute(input::Route {
                        peer,
                        progress_token: era.progress_token.clone(),
                        log: era.log_level,
                        last_progress: None,
                    });
                    let guard = token.clone().drop_guard();
                    let cancel = Cancel::from_token(token.clone());
                    return Ok(Started { fut, state: Some(state), cancel, own: Some((token, guard)) });
                }
                // Not reachable (the sealed binding names the method); run the handler afresh.
                None => Some(Arc::new(InputState::new(BTreeMap::new()))),
            },
            Some(Opened::Fresh(s)) => Some(s),
            None => None,
        };
        let own = state.is_some() && (own || self.server.inner.config.parking.is_some());
        let (cancel, own) = if own {
            let t = CancellationToken::new();
            (Cancel::from_token(t.clone()), Some((t.clone(), t.drop_guard())))
        } else {
            (req.cancel.clone(), None)
        };
        let cx = self.context(req, era, peer, state.clone(), cancel.clone());
        let fut = make(cx, state.as_ref())?;
        Ok(Started { fut, state, cancel, own })
    }

    /// How [`input::run`] ends a round of `started`: keeping the handler when the server keeps
    /// handlers across rounds.
    fn round<'a>(&'a self, req: &'a IncomingRequest, own: &Own) -> input::Round<'a> {
        let config = &self.server.inner.config;
        let token = own.as_ref().map(|(t, _)| t.clone());
        input::Round { sealer: &config.sealer, keep: config.parking.as_ref().zip(token), extensions: &req.extensions }
    }

    /// What a handler sees of its request.
    fn context(
        &self,
        req: &IncomingRequest,
        era: &Era,
        peer: Peer,
        input: Option<Arc<InputState>>,
        cancel: Cancel,
    ) -> RequestContext {
        RequestContext::new(CtxInner {
            id: req.id.clone(),
            version: era.version,
            peer,
            cancel,
            client_caps: era.caps.clone(),
            client_info: era.info.clone(),
            progress_token: era.progress_token.clone(),
            log: if era.version.is_stateless() {
                LogGate::Request(era.log_level)
            } else {
                LogGate::Session(self.log_level.clone())
            },
            input,
            server: self.server.clone(),
            last_progress: Mutex::new(None),
            close_stream: req.close_stream.clone(),
            // An emptied map (the era resolved ahead was taken out of it) still holds its
            // table, which a clone would copy.
            extensions: if req.extensions.is_empty() { http::Extensions::new() } else { req.extensions.clone() },
            trace: era.trace.clone(),
            meta: era.meta.clone(),
        })
    }
}

/// A handler started (or resumed) by [`EraLayer::start_handler`].
pub(super) struct Started<T> {
    pub fut: BoxFuture<'static, T>,
    pub state: Option<Arc<InputState>>,
    pub cancel: Cancel,
    /// The handler's own token, and the guard that cancels it if the request is dropped;
    /// disarm it once the round ends.
    pub own: Own,
}

/// A handler's own cancellation token and the guard that cancels it with its request.
pub(super) type Own = Option<(CancellationToken, tokio_util::sync::DropGuard)>;

/// The round ended (the handler is done, became a task, or is kept): the end of the request
/// no longer cancels the handler.
pub(super) fn round_ended(own: Own) {
    if let Some((_, guard)) = own {
        guard.disarm();
    }
}

impl Endpoint for EraLayer {
    fn admit(&self, method: &str) {
        if method == methods::INITIALIZE && self.handshake.get().is_none() {
            self.initializing.send_replace(true);
        }
    }

    fn call(self: Arc<Self>, request: IncomingRequest, peer: Peer) -> Handled {
        match &self.server.inner.middleware {
            Some(stack) => Handled::Later(super::stack::call(stack.clone(), self, request, peer)),
            None => self.handle(request, peer),
        }
    }

    fn notify(&self, method: &str, _params: Option<&RawValue>, _peer: &Peer) {
        match method {
            methods::NOTIFICATION_INITIALIZED => debug!("client initialized"),
            methods::NOTIFICATION_ROOTS_LIST_CHANGED | methods::NOTIFICATION_CANCELLED => {}
            other => debug!(method = other, "notification ignored"),
        }
    }

    fn accepts_batches(&self) -> bool {
        self.handshake.get().is_some_and(|h| h.version.receives_batches())
    }

    fn attach(&self, peer: &Peer) {
        let _ = self.peer.set(peer.clone());
    }

    #[cfg(feature = "http-server")]
    fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.handshake.get().map(|h| h.version)
    }

    #[cfg(feature = "http-server")]
    fn resolve_ahead(&self, method: &str, params: crate::peek::ParamsPeek<'_>, extensions: &mut http::Extensions) {
        if let Some(era) = self.resolve_stateless_ahead(method, params) {
            extensions.insert(era);
        }
    }
}

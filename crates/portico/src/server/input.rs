//! Stateless-era input requests (2026-07-28 multi round-trip requests): run a handler until it
//! asks the client for something it does not have yet, then answer with an input-required
//! result whose sealed `requestState` carries every answer used so far.
//!
//! A server built with [`keep_handlers_across_input`](super::ServerBuilder::keep_handlers_across_input)
//! keeps such a handler instead, waiting, and the retry that brings the answers resumes it
//! where it stopped ([`Parking`]); a retry that finds none runs the handler again.
//!
//! A tool may also turn into a task here (the `io.modelcontextprotocol/tasks` extension): when
//! its handler asks to continue as a task and needs no further input, the handler's future is
//! handed back, still alive, to be run as a task.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico_schema::{ClientCapabilities, ErrorObject, InputRequest, InputRequiredResult, LoggingLevel, ProgressToken};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::sealed::StateSealer;
use super::tasks::Task;
use crate::rpc::Peer;
use crate::sync::lock;

/// `inputResponses` as sent: answers by key, left raw until a handler asks for one (so answers
/// to keys nobody asks for are ignored whatever they contain).
pub(crate) type RawResponses = BTreeMap<String, Box<RawValue>>;

/// Stateless-era input requests of one request: answers known so far, what is still needed,
/// and, for a tool call that may become a task, the task once it is one.
pub(crate) struct InputState {
    /// Answers by key: sealed ones from earlier rounds and the ones sent with this request
    /// (and, for a handler kept across rounds, the ones each retry brought).
    responses: Mutex<RawResponses>,
    /// Keys whose answers the handler used (only these are sealed for the next round).
    pub used: Mutex<BTreeSet<String>>,
    pub next: AtomicUsize,
    pub needed: Mutex<BTreeMap<String, InputRequest>>,
    pub missing_capability: Mutex<Option<ClientCapabilities>>,
    /// A key whose answer does not fit the request made under it.
    pub invalid: Mutex<Option<String>>,
    pub signal: Notify,
    /// The call may become a task (the tool supports tasks and the request declared them).
    pub task_eligible: AtomicBool,
    /// The handler asked to continue as a task.
    pub escalate: AtomicBool,
    /// The task this call became.
    pub task: OnceLock<Arc<Task>>,
    /// Wakes the handler's pending input requests when a retry brings answers (a handler
    /// kept across rounds) or when the request ends without them ([`closed`](Self::closed)).
    pub answered: Notify,
    /// The request ended while input requests were pending, and no retry will resume them.
    pub closed: AtomicBool,
    /// Where a resumed handler's progress and log messages go: the latest retry's (`None`
    /// until one resumes it: the first request's, from its context).
    route: Mutex<Option<Route>>,
}

/// The connection, progress token and log level of the retry that resumed a kept handler.
pub(crate) struct Route {
    pub peer: Peer,
    pub progress_token: Option<ProgressToken>,
    pub log: Option<LoggingLevel>,
    /// The last progress sent under this retry's token (values must increase per token).
    pub last_progress: Option<f64>,
}

impl InputState {
    pub(crate) fn new(responses: RawResponses) -> Self {
        InputState {
            responses: Mutex::new(responses),
            used: Mutex::new(BTreeSet::new()),
            next: AtomicUsize::new(0),
            needed: Mutex::new(BTreeMap::new()),
            missing_capability: Mutex::new(None),
            invalid: Mutex::new(None),
            signal: Notify::new(),
            task_eligible: AtomicBool::new(false),
            escalate: AtomicBool::new(false),
            task: OnceLock::new(),
            answered: Notify::new(),
            closed: AtomicBool::new(false),
            route: Mutex::new(None),
        }
    }

    /// Progress and log messages go to `route` from now on (a retry resumed the handler).
    pub(crate) fn reroute(&self, route: Route) {
        *lock(&self.route) = Some(route);
    }

    /// For a resumed handler, where `progress` goes: the retry's connection and token, or
    /// nowhere (no token, or not increasing). `None` when no retry resumed it.
    pub(crate) fn progress_route(&self, progress: f64) -> Option<Option<(Peer, ProgressToken)>> {
        let mut route = lock(&self.route);
        let r = route.as_mut()?;
        let Some(token) = r.progress_token.clone() else { return Some(None) };
        if r.last_progress.is_some_and(|l| progress <= l) {
            return Some(None);
        }
        r.last_progress = Some(progress);
        Some(Some((r.peer.clone(), token)))
    }

    /// For a resumed handler, where a log message at `level` goes: the retry's connection, or
    /// nowhere (its level does not allow it). `None` when no retry resumed it.
    pub(crate) fn log_route(&self, level: LoggingLevel) -> Option<Option<Peer>> {
        let route = lock(&self.route);
        let r = route.as_ref()?;
        Some(r.log.is_some_and(|min| level >= min).then(|| r.peer.clone()))
    }

    /// Whether an answer is known under `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        lock(&self.responses).contains_key(key)
    }

    /// `f` of the answer under `key`, if there is one.
    pub(crate) fn answer<R>(&self, key: &str, f: impl FnOnce(&RawValue) -> R) -> Option<R> {
        lock(&self.responses).get(key).map(|a| f(a))
    }

    /// The handler will not be polled again: its pending input requests (in other tasks too,
    /// such as a gateway relaying an upstream's request) end instead of waiting forever.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.answered.notify_waiters();
    }

    /// A retry resumes the handler kept with this state: its answers join the known ones
    /// (earlier answers are final), and the pending input requests look again. Those still
    /// unanswered ask again, and the round ends with a new input-required result.
    fn resume(&self, sent: Option<RawResponses>) {
        {
            let mut known = lock(&self.responses);
            for (k, v) in sent.unwrap_or_default() {
                known.entry(k).or_insert(v);
            }
        }
        lock(&self.needed).clear();
        self.answered.notify_waiters();
    }

    /// The handler asked to continue as a task and is not one yet.
    pub(crate) fn wants_task(&self) -> bool {
        self.escalate.load(Ordering::SeqCst) && self.task.get().is_none()
    }

    pub(crate) fn in_task(&self) -> bool {
        self.task.get().is_some()
    }
}

/// The request identity a `requestState` is bound to: method, tool or prompt name or resource
/// URI, and the arguments (canonical: keys sorted), so state from another call is refused.
/// Computed only when state is opened or sealed, never on the plain request path.
pub(crate) fn binding(method: &str, target: &str, arguments: Option<&str>) -> Vec<u8> {
    let args = arguments.and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok());
    super::sealed::request_binding(method, target, args.as_ref(), None)
}

/// What `requestState` holds, sealed: the answers the handler used in earlier rounds, and
/// where the handler waits when it was kept.
#[derive(Serialize, Deserialize)]
struct Sealed {
    r: RawResponses,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<u64>,
}

/// How many handlers one server keeps waiting for input at most; past it, a handler that asks
/// ends as it does without keeping (its retry runs it again).
pub(crate) const MAX_KEPT: usize = 1024;

/// Handlers kept waiting for their client's answers between rounds, by a random number sealed
/// in the `requestState` of the input-required result.
pub(crate) struct Parking {
    ttl: Duration,
    kept: Mutex<HashMap<u64, Parked>>,
}

/// A handler waiting for its retry: its future (not polled meanwhile), its input state, the
/// token that cancels it, and the timer that ends it when no retry comes.
pub(crate) struct Parked {
    fut: Box<dyn Any + Send>,
    state: Arc<InputState>,
    /// Who made the request ([`principal`]): only the same may resume it.
    who: Option<String>,
    token: CancellationToken,
    timer: tokio::task::AbortHandle,
}

impl Parked {
    /// No retry will resume it: its cancellation fires and its waiting input requests end.
    /// The future itself is dropped with it.
    fn end(&self) {
        self.token.cancel();
        self.state.close();
    }

    /// The kept future, typed again (the sealed binding names the method, so a kept tool call
    /// is only ever resumed by a tool call), its state and its cancellation token.
    pub(crate) fn resume<T: 'static>(self) -> Option<(BoxFuture<'static, T>, Arc<InputState>, CancellationToken)> {
        let fut = self.fut.downcast::<BoxFuture<'static, T>>().ok()?;
        Some((*fut, self.state, self.token))
    }
}

impl Parking {
    pub(crate) fn new(ttl: Duration) -> Arc<Self> {
        Arc::new(Parking { ttl, kept: Mutex::new(HashMap::new()) })
    }

    /// How many handlers wait now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.kept).len()
    }

    /// Keeps `fut` until a retry takes it or the time runs out; gives it back when full.
    fn park<T: Send + 'static>(
        self: &Arc<Self>,
        fut: BoxFuture<'static, T>,
        state: Arc<InputState>,
        token: CancellationToken,
        who: Option<String>,
    ) -> Result<u64, BoxFuture<'static, T>> {
        let mut kept = lock(&self.kept);
        if kept.len() >= MAX_KEPT {
            return Err(fut);
        }
        let id = loop {
            let id = rand::random::<u64>();
            if !kept.contains_key(&id) {
                break id;
            }
        };
        let (me, ttl): (Weak<Parking>, _) = (Arc::downgrade(self), self.ttl);
        let timer = tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if let Some(me) = me.upgrade() {
                me.expire(id);
            }
        })
        .abort_handle();
        kept.insert(id, Parked { fut: Box::new(fut), state, who, token, timer });
        Ok(id)
    }

    /// No retry came in time: the handler is cancelled and dropped.
    fn expire(&self, id: u64) {
        let gone = lock(&self.kept).remove(&id);
        if let Some(p) = gone {
            p.end();
        }
    }

    /// Ends every kept handler, as when their time runs out; how many there were.
    pub(crate) fn end_all(&self) -> usize {
        let all: Vec<Parked> = lock(&self.kept).drain().map(|(_, p)| p).collect();
        for p in &all {
            p.timer.abort();
            p.end();
        }
        all.len()
    }

    /// The handler kept under `id`, if `who` made it; another caller's retry leaves it kept.
    fn take(&self, id: u64, who: Option<&str>) -> Option<Parked> {
        let p = {
            let mut kept = lock(&self.kept);
            if kept.get(&id)?.who.as_deref() != who {
                return None;
            }
            kept.remove(&id)?
        };
        p.timer.abort();
        Some(p)
    }
}

/// Who made a request, as far as the server knows: the verified bearer token's issuer, subject
/// and client. A kept handler acts for whoever made it, so only the same caller resumes it.
pub(crate) fn principal(extensions: &http::Extensions) -> Option<String> {
    #[cfg(feature = "auth-server")]
    if let Some(a) = extensions.get::<crate::auth::server::AuthInfo>() {
        let part = |s: Option<&str>| s.unwrap_or_default().replace('\0', "");
        return Some(format!("{}\0{}\0{}", part(a.issuer()), part(a.subject()), part(a.client_id())));
    }
    let _ = extensions;
    None
}

/// What a stateless-era request that may ask for input starts from.
pub(crate) enum Opened {
    /// A new run of the handler, with the answers known so far.
    Fresh(Arc<InputState>),
    /// The handler kept from the last round, with this retry's answers added.
    Resumed(Parked),
}

/// What [`run`] needs besides the handler: the sealer, and where to keep the handler if it
/// waits for input (with the token that cancels it; `None` ends it instead).
pub(crate) struct Round<'a> {
    pub sealer: &'a StateSealer,
    pub keep: Option<(&'a Arc<Parking>, CancellationToken)>,
    /// The request's extensions, for [`principal`].
    pub extensions: &'a http::Extensions,
}

/// Opens `requestState` (if any) and adds the answers the client sent now.
///
/// Answers sealed in earlier rounds are final: a retry cannot replace them. Any other answer
/// is taken as sent, whether or not this server asked for its key in the last round: the
/// answers are the client's to give either way, and a client that answers up front (without
/// `requestState`) saves a round trip. Answers to keys the handler never asks for are ignored.
///
/// When the state names a handler that `parking` still keeps, that handler resumes with the
/// answers sent now; otherwise (none was kept, its time ran out, another instance kept it)
/// the handler runs again from the sealed answers.
pub(crate) fn open(
    sealer: &StateSealer,
    parking: Option<&Parking>,
    extensions: &http::Extensions,
    binding: impl FnOnce() -> Vec<u8>,
    request_state: Option<&str>,
    responses: Option<RawResponses>,
) -> Result<Opened, ErrorObject> {
    let mut known = match request_state {
        None => BTreeMap::new(),
        Some(s) => {
            let bytes = sealer
                .open(&binding(), s)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid requestState: {e}")))?;
            let sealed: Sealed =
                serde_json::from_slice(&bytes).map_err(|_| ErrorObject::invalid_params("invalid requestState"))?;
            let kept =
                sealed.p.zip(parking).and_then(|(id, parking)| parking.take(id, principal(extensions).as_deref()));
            if let Some(kept) = kept {
                kept.state.resume(responses);
                return Ok(Opened::Resumed(kept));
            }
            sealed.r
        }
    };
    for (k, v) in responses.unwrap_or_default() {
        known.entry(k).or_insert(v);
    }
    Ok(Opened::Fresh(Arc::new(InputState::new(known))))
}

pub(crate) enum Outcome<T> {
    Done(T),
    InputRequired(InputRequiredResult),
}

/// What became of a handler that may turn into a task.
pub(crate) enum Stage<T> {
    Done(T),
    InputRequired(InputRequiredResult),
    /// The handler asked to continue as a task; here is its future, to be run as one.
    Task(BoxFuture<'static, T>),
}

/// Runs `fut`; in the stateless era, stops it when it needs input and builds the result.
/// With `round.keep`, the stopped handler is kept for the retry instead of being dropped.
pub(crate) async fn run<T: Send + 'static>(
    fut: BoxFuture<'static, T>,
    state: Option<Arc<InputState>>,
    round: Round<'_>,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Stage<T>, ErrorObject> {
    let Some(state) = state else { return Ok(Stage::Done(fut.await)) };
    // Boxed: the rounds' state (the select, the loop) would otherwise make every request's
    // future larger, handshake-era ones too, and a future past the allocator's small sizes
    // costs more to allocate than this box.
    Box::pin(rounds(fut, state, round, binding)).await
}

/// [`run`] of a stateless-era request.
async fn rounds<T: Send + 'static>(
    fut: BoxFuture<'static, T>,
    state: Arc<InputState>,
    round: Round<'_>,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Stage<T>, ErrorObject> {
    let mut fut = fut;
    let needed = loop {
        tokio::select! {
            biased;
            r = &mut fut => return Ok(Stage::Done(r)),
            _ = state.signal.notified() => {}
        }
        // Every branch of the handler that was ready to ask has asked during that poll.
        if let Some(key) = lock(&state.invalid).take() {
            state.close();
            return Err(ErrorObject::invalid_params(format!(
                "inputResponses[{key}] is not an answer to the request this server made under that key"
            )));
        }
        if let Some(required) = lock(&state.missing_capability).take() {
            state.close();
            return Err(ErrorObject::missing_client_capability(required));
        }
        let needed = std::mem::take(&mut *lock(&state.needed));
        if !needed.is_empty() {
            break needed;
        }
        if state.wants_task() {
            return Ok(Stage::Task(fut));
        }
        // A signal left from a round before this one (a resumed handler): nothing is asked.
    };
    let kept = match round.keep {
        Some((parking, token)) => match parking.park(fut, state.clone(), token, principal(round.extensions)) {
            Ok(id) => Some(id),
            Err(fut) => {
                drop(fut);
                None
            }
        },
        None => {
            drop(fut);
            None
        }
    };
    if kept.is_none() {
        state.close();
    }
    let used = lock(&state.used).clone();
    let sealed = Sealed {
        r: lock(&state.responses)
            .iter()
            .filter(|(k, _)| used.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        p: kept,
    };
    let bytes = serde_json::to_vec(&sealed).map_err(|_| ErrorObject::internal_error("cannot encode requestState"))?;
    let mut r = InputRequiredResult::new();
    r.request_state = Some(round.sealer.seal(&binding(), &bytes));
    if !needed.is_empty() {
        r.input_requests = Some(needed);
    }
    Ok(Stage::InputRequired(r))
}

/// [`run`] for handlers that may fail with a wire error (they never become tasks).
pub(crate) async fn run_fallible<T: Send + 'static>(
    fut: BoxFuture<'static, Result<T, ErrorObject>>,
    state: Option<Arc<InputState>>,
    round: Round<'_>,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Outcome<T>, ErrorObject> {
    match run(fut, state, round, binding).await? {
        Stage::Done(r) => r.map(Outcome::Done),
        Stage::InputRequired(r) => Ok(Outcome::InputRequired(r)),
        // Only tool calls are ever eligible.
        Stage::Task(_) => Err(ErrorObject::internal_error("only tool calls can become tasks")),
    }
}

/// [`open`] for the fuzz targets: `responses` is `inputResponses` as JSON text; the answer
/// keys known after opening, or the error refusing the request.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_open(
    sealer: &StateSealer,
    binding: &[u8],
    request_state: Option<&str>,
    responses: Option<&str>,
) -> Result<Vec<String>, ErrorObject> {
    let responses = match responses.map(serde_json::from_str::<RawResponses>).transpose() {
        Ok(r) => r,
        Err(_) => return Err(ErrorObject::invalid_params("invalid inputResponses")),
    };
    match open(sealer, None, &http::Extensions::new(), || binding.to_vec(), request_state, responses)? {
        Opened::Fresh(state) => Ok(lock(&state.responses).keys().cloned().collect()),
        Opened::Resumed(_) => Err(ErrorObject::internal_error("nothing is kept without parking")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parking_is_bounded_and_a_handler_is_taken_once_by_its_caller() {
        let parking = Parking::new(Duration::from_secs(60));
        let state = || Arc::new(InputState::new(RawResponses::new()));
        let mut ids = Vec::new();
        for _ in 0..MAX_KEPT {
            let fut: BoxFuture<'static, ()> = Box::pin(std::future::pending());
            let id = parking.park(fut, state(), CancellationToken::new(), Some("ada".into()));
            ids.push(id.unwrap_or_else(|_| panic!("room for {MAX_KEPT}")));
        }
        assert_eq!(parking.len(), MAX_KEPT);
        let full: BoxFuture<'static, ()> = Box::pin(std::future::pending());
        assert!(parking.park(full, state(), CancellationToken::new(), None).is_err(), "full");
        assert!(parking.take(ids[0], Some("eve")).is_none(), "another caller");
        assert!(parking.take(ids[0], None).is_none(), "no caller");
        assert!(parking.take(ids[0], Some("ada")).is_some());
        assert!(parking.take(ids[0], Some("ada")).is_none(), "taken once");
        assert_eq!(parking.len(), MAX_KEPT - 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_nobody_resumes_is_cancelled_and_its_waiting_requests_end() {
        let parking = Parking::new(Duration::from_secs(5));
        let st = Arc::new(InputState::new(RawResponses::new()));
        let token = CancellationToken::new();
        let fut: BoxFuture<'static, ()> = Box::pin(std::future::pending());
        let id = parking.park(fut, st.clone(), token.clone(), None).unwrap_or_else(|_| panic!("room"));
        let waiting = st.answered.notified();
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(token.is_cancelled());
        assert!(st.closed.load(Ordering::SeqCst));
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("the waiting request is woken");
        assert!(parking.take(id, None).is_none());
        assert_eq!(parking.len(), 0);
    }
}

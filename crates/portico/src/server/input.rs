//! Stateless-era input requests (2026-07-28 multi round-trip requests): run a handler until it
//! asks the client for something it does not have yet, then answer with an input-required
//! result whose sealed `requestState` carries every answer used so far.
//!
//! A tool may also turn into a task here (the `io.modelcontextprotocol/tasks` extension): when
//! its handler asks to continue as a task and needs no further input, the handler's future is
//! handed back, still alive, to be run as a task.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use portico_schema::{ClientCapabilities, ErrorObject, InputRequest, InputRequiredResult};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use tokio::sync::Notify;

use super::sealed::StateSealer;
use super::tasks::Task;
use crate::sync::lock;

/// `inputResponses` as sent: answers by key, left raw until a handler asks for one (so answers
/// to keys nobody asks for are ignored whatever they contain).
pub(crate) type RawResponses = BTreeMap<String, Box<RawValue>>;

/// Stateless-era input requests of one request: answers known so far, what is still needed,
/// and, for a tool call that may become a task, the task once it is one.
pub(crate) struct InputState {
    /// Answers by key: sealed ones from earlier rounds and the ones sent with this request.
    pub responses: RawResponses,
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
}

impl InputState {
    pub(crate) fn new(responses: RawResponses) -> Self {
        InputState {
            responses,
            used: Mutex::new(BTreeSet::new()),
            next: AtomicUsize::new(0),
            needed: Mutex::new(BTreeMap::new()),
            missing_capability: Mutex::new(None),
            invalid: Mutex::new(None),
            signal: Notify::new(),
            task_eligible: AtomicBool::new(false),
            escalate: AtomicBool::new(false),
            task: OnceLock::new(),
        }
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

/// What `requestState` holds, sealed: the answers the handler used in earlier rounds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    r: RawResponses,
}

/// Opens `requestState` (if any) and adds the answers the client sent now.
///
/// Answers sealed in earlier rounds are final: a retry cannot replace them. Any other answer
/// is taken as sent, whether or not this server asked for its key in the last round: the
/// answers are the client's to give either way, and a client that answers up front (without
/// `requestState`) saves a round trip. Answers to keys the handler never asks for are ignored.
pub(crate) fn open(
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
    request_state: Option<&str>,
    responses: Option<RawResponses>,
) -> Result<InputState, ErrorObject> {
    let mut known = match request_state {
        None => BTreeMap::new(),
        Some(s) => {
            let bytes = sealer
                .open(&binding(), s)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid requestState: {e}")))?;
            let sealed: Sealed =
                serde_json::from_slice(&bytes).map_err(|_| ErrorObject::invalid_params("invalid requestState"))?;
            sealed.r
        }
    };
    for (k, v) in responses.unwrap_or_default() {
        known.entry(k).or_insert(v);
    }
    Ok(InputState::new(known))
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
pub(crate) async fn run<T>(
    fut: BoxFuture<'static, T>,
    state: Option<Arc<InputState>>,
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Stage<T>, ErrorObject> {
    let Some(state) = state else { return Ok(Stage::Done(fut.await)) };
    let mut fut = fut;
    tokio::select! {
        biased;
        r = &mut fut => return Ok(Stage::Done(r)),
        _ = state.signal.notified() => {}
    }
    // Every branch of the handler that was ready to ask has asked during that poll.
    if let Some(key) = lock(&state.invalid).take() {
        return Err(ErrorObject::invalid_params(format!(
            "inputResponses[{key}] is not an answer to the request this server made under that key"
        )));
    }
    if let Some(required) = lock(&state.missing_capability).take() {
        return Err(ErrorObject::missing_client_capability(required));
    }
    let needed = std::mem::take(&mut *lock(&state.needed));
    if needed.is_empty() && state.wants_task() {
        return Ok(Stage::Task(fut));
    }
    drop(fut);
    let used = std::mem::take(&mut *lock(&state.used));
    let sealed = Sealed {
        r: state.responses.iter().filter(|(k, _)| used.contains(*k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
    };
    let bytes = serde_json::to_vec(&sealed).map_err(|_| ErrorObject::internal_error("cannot encode requestState"))?;
    let mut r = InputRequiredResult::new();
    r.request_state = Some(sealer.seal(&binding(), &bytes));
    if !needed.is_empty() {
        r.input_requests = Some(needed);
    }
    Ok(Stage::InputRequired(r))
}

/// [`run`] for handlers that may fail with a wire error (they never become tasks).
pub(crate) async fn run_fallible<T>(
    fut: BoxFuture<'static, Result<T, ErrorObject>>,
    state: Option<Arc<InputState>>,
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Outcome<T>, ErrorObject> {
    match run(fut, state, sealer, binding).await? {
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
    let state = open(sealer, || binding.to_vec(), request_state, responses)?;
    Ok(state.responses.into_keys().collect())
}

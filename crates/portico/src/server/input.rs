//! Stateless-era input requests (2026-07-28 multi round-trip requests): run a handler until it
//! asks the client for something it does not have yet, then answer with an input-required
//! result whose sealed `requestState` carries every answer so far.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use portico_schema::{ErrorObject, InputRequiredResult, InputResponses};
use serde::{Deserialize, Serialize};

use super::context::InputState;
use super::sealed::StateSealer;
use crate::rpc::lock;

/// The request identity a `requestState` is bound to: method, tool or prompt name or resource
/// URI, and the arguments (canonical: keys sorted), so state from another call is refused.
/// Computed only when state is opened or sealed, never on the plain request path.
pub(crate) fn binding(method: &str, target: &str, arguments: Option<&str>) -> Vec<u8> {
    let args = arguments.and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok());
    super::sealed::request_binding(method, target, args.as_ref(), None)
}

/// What `requestState` holds, sealed.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Answers of earlier rounds.
    r: InputResponses,
    /// Keys asked in the last round: only these are taken from `inputResponses`.
    a: Vec<String>,
}

/// Opens `requestState` (if any) and merges the answers the client sent for the keys asked.
pub(crate) fn open(
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
    request_state: Option<&str>,
    responses: Option<InputResponses>,
) -> Result<InputState, ErrorObject> {
    let (mut known, asked) = match request_state {
        None => (BTreeMap::new(), Vec::new()),
        Some(s) => {
            let bytes = sealer
                .open(&binding(), s)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid requestState: {e}")))?;
            let sealed: Sealed =
                serde_json::from_slice(&bytes).map_err(|_| ErrorObject::invalid_params("invalid requestState"))?;
            (sealed.r, sealed.a)
        }
    };
    for (k, v) in responses.unwrap_or_default() {
        if asked.contains(&k) {
            known.insert(k, v);
        }
    }
    Ok(InputState::new(known))
}

pub(crate) enum Outcome<T> {
    Done(T),
    InputRequired(InputRequiredResult),
}

/// Runs `fut`; in the stateless era, stops it when it needs input and builds the result.
pub(crate) async fn run<T>(
    fut: BoxFuture<'static, T>,
    state: Option<Arc<InputState>>,
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Outcome<T>, ErrorObject> {
    let Some(state) = state else { return Ok(Outcome::Done(fut.await)) };
    let mut fut = fut;
    tokio::select! {
        biased;
        r = &mut fut => return Ok(Outcome::Done(r)),
        _ = state.signal.notified() => {}
    }
    // Every branch of the handler that was ready to ask has asked during that poll.
    drop(fut);
    if let Some(required) = lock(&state.missing_capability).take() {
        return Err(ErrorObject::missing_client_capability(required));
    }
    let needed = std::mem::take(&mut *lock(&state.needed));
    let sealed = Sealed { r: state.responses.clone(), a: needed.keys().cloned().collect() };
    let bytes = serde_json::to_vec(&sealed).map_err(|_| ErrorObject::internal_error("cannot encode requestState"))?;
    let mut r = InputRequiredResult::new();
    r.request_state = Some(sealer.seal(&binding(), &bytes));
    if !needed.is_empty() {
        r.input_requests = Some(needed);
    }
    Ok(Outcome::InputRequired(r))
}

/// [`run`] for handlers that may fail with a wire error.
pub(crate) async fn run_fallible<T>(
    fut: BoxFuture<'static, Result<T, ErrorObject>>,
    state: Option<Arc<InputState>>,
    sealer: &StateSealer,
    binding: impl FnOnce() -> Vec<u8>,
) -> Result<Outcome<T>, ErrorObject> {
    match run(fut, state, sealer, binding).await? {
        Outcome::Done(r) => r.map(Outcome::Done),
        Outcome::InputRequired(r) => Ok(Outcome::InputRequired(r)),
    }
}

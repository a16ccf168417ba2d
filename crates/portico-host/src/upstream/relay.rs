//! A 2026-07-28 upstream's input requests during one call, passed on whole to that call's
//! client: every request of a round under its own key, in one input-required result of the
//! gateway's (or one after another to a handshake-era client).
//!
//! Each request passes the host's oversight first, as in [`super::handler`]: a sampling request
//! may wait for a person, who may edit it, and its completion is shown before it goes back. In
//! the stateless era the client's answer comes with a retry that runs the call again; a request
//! whose answer the retry already carries was decided on in the round that sent it, so it is
//! not put to the person a second time.
//!
//! [`continue_as_task`] is the other thing a call passes on to its client: an upstream's task,
//! made a task of the gateway's.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use portico::client::TaskCreated;
use portico::schema::{
    CreateMessageRequestParams, ElicitRequestParams, InputRequest, InputResponse, InputResponses, ListRootsResult,
};
use portico::server::RequestContext;
use serde_json::Value;

use super::Shared;
use super::handler::{intersect_roots, named};
use crate::router::{Answer, Outcome, Review, ServerMethod, ServerRequest, Verdict};

/// The input handler of one call whose client is `cx`.
pub(crate) fn handler(
    shared: Arc<Shared>,
    cx: RequestContext,
) -> impl Fn(BTreeMap<String, InputRequest>) -> BoxFuture<'static, Result<InputResponses, portico::Error>>
+ Send
+ Sync
+ 'static {
    move |requests| {
        let shared = shared.clone();
        let cx = cx.clone();
        Box::pin(async move { relay(&shared, &cx, requests).await })
    }
}

/// When the upstream makes a task of a call, the call from `cx` becomes one too (when `cx`'s
/// tool may be a task and its client declared the extension; otherwise the call waits for the
/// upstream's task inline). The rest of the call path — the upstream's task followed to its
/// end, the result's checks, the audit record — then runs on in the background.
pub(crate) fn continue_as_task(
    cx: &RequestContext,
) -> impl Fn(TaskCreated) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    let cx = cx.clone();
    move |_created| {
        let cx = cx.clone();
        Box::pin(async move {
            cx.continue_as_task().await;
        })
    }
}

/// One request on its way: its method, its params as oversight sees them, and the verdict.
struct Relayed {
    method: ServerMethod,
    params: Value,
    verdict: Verdict,
    started: std::time::SystemTime,
}

fn method_of(request: &InputRequest) -> Option<ServerMethod> {
    match request {
        InputRequest::Elicitation(_) => Some(ServerMethod::Elicit),
        InputRequest::Sampling(_) => Some(ServerMethod::CreateMessage),
        InputRequest::ListRoots(_) => Some(ServerMethod::ListRoots),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

fn refused(why: String) -> portico::Error {
    portico::Error::local(why)
}

async fn relay(
    shared: &Shared,
    cx: &RequestContext,
    requests: BTreeMap<String, InputRequest>,
) -> Result<InputResponses, portico::Error> {
    let server = shared.config.name.as_str();
    let principal = crate::host::principal(Some(cx));
    let oversight = &shared.oversight;
    let mut ask = BTreeMap::new();
    let mut relayed = BTreeMap::new();
    let mut local = InputResponses::new();
    for (key, request) in requests {
        let Some(method) = method_of(&request) else {
            return Err(refused(format!("server `{server}` sent an input request of an unknown kind ({key})")));
        };
        if method == ServerMethod::ListRoots && !cx.client_capabilities().supports_roots() {
            // The client has no roots to give: the configured ones are the answer.
            let roots = ListRootsResult::new(intersect_roots(&shared.config.roots, None));
            local.insert(key, InputResponse::ListRoots(roots));
            continue;
        }
        // The asking server's name goes with every elicitation.
        let request = match request {
            InputRequest::Elicitation(mut r) => {
                r.params = named(server, r.params);
                InputRequest::Elicitation(r)
            }
            other => other,
        };
        let params = params_of(&request);
        let started = std::time::SystemTime::now();
        let answered = cx.has_input(&key);
        let req = ServerRequest { method, server, params: &params, principal, request: Some(cx), started, answered };
        let verdict = oversight.before_server_request(&req).await;
        if let Some(reason) = &verdict.refusal {
            oversight.after_server_request(&req, &verdict, &Outcome::Refused(reason)).await;
            return Err(refused(format!("{}: refused: {reason}", method.as_str())));
        }
        let request = match (&verdict.edited, request) {
            (Some(edited), InputRequest::Sampling(mut r)) => {
                r.params = serde_json::from_value::<CreateMessageRequestParams>(edited.clone()).map_err(|e| {
                    refused(format!("the edited request is not a valid sampling/createMessage request: {e}"))
                })?;
                InputRequest::Sampling(r)
            }
            (_, request) => request,
        };
        ask.insert(key.clone(), request);
        relayed.insert(key, Relayed { method, params, verdict, started });
    }
    // All at once: in 2026-07-28 this ends the round, and the retry comes back here.
    let mut responses = if ask.is_empty() { InputResponses::new() } else { cx.input_many(ask).await? };
    for (key, response) in &mut responses {
        let Some(r) = relayed.get(key) else { continue };
        if let InputResponse::ListRoots(roots) = response {
            *roots = ListRootsResult::new(intersect_roots(&shared.config.roots, Some(roots.roots.clone())));
        }
        let req = ServerRequest {
            method: r.method,
            server,
            params: &r.params,
            principal,
            request: Some(cx),
            started: r.started,
            answered: true,
        };
        let value = serde_json::to_value(&*response).unwrap_or(Value::Null);
        if r.verdict.review_result
            && let Review::Withhold(why) = oversight.review_server_answer(&req, &r.verdict, &value).await
        {
            let why = format!("the answer was withheld by the person reviewing it: {why}");
            oversight.after_server_request(&req, &r.verdict, &Outcome::Refused(&why)).await;
            return Err(refused(format!("{}: {why}", r.method.as_str())));
        }
        oversight.after_server_request(&req, &r.verdict, &Outcome::Answered(Answer::Client(&value))).await;
    }
    responses.extend(local);
    Ok(responses)
}

fn params_of(request: &InputRequest) -> Value {
    match request {
        InputRequest::Elicitation(r) => serde_json::to_value::<&ElicitRequestParams>(&r.params),
        InputRequest::Sampling(r) => serde_json::to_value::<&CreateMessageRequestParams>(&r.params),
        _ => Ok(Value::Null),
    }
    .unwrap_or(Value::Null)
}

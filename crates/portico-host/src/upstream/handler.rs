//! The client side of an upstream connection: what the host answers when the upstream asks
//! (sampling, elicitation, roots) and what it does when told (list changes, logs).
//!
//! An upstream's input request is routed to the downstream client whose call is in flight to
//! that upstream. When several are (a handshake-era stdio upstream's request carries nothing
//! that says which call it belongs to), it goes to the one that started **last**: a server asks
//! for input in the middle of the call that needs it, and the newest call is the most likely
//! to be waiting on input. With no call in flight, the request is refused with an error that
//! says so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures_util::future::BoxFuture;
use portico::client::ClientHandler;
use portico::schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode,
    ErrorObject, ListRootsResult, LoggingMessageNotificationParams, Root,
};
use portico::server::RequestContext;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Shared, lock};
use crate::config::ServerConfig;
use crate::router::{Answer, Outcome, Review, ServerMethod, ServerRequest};

/// Progress and log messages waiting to go to one call's caller; a flood beyond this is dropped
/// (memory stays bounded).
pub(crate) const FORWARD_QUEUE: usize = 1024;

/// Runs `call` while passing what its upstream sends meanwhile (progress, log messages) on to
/// its caller `to`, in order; then what is still queued, for at most a second, so that it all
/// reaches the caller before the result. One task: nothing is spawned per call. `call` is
/// pinned by the caller, so that the (large) call future is laid out once.
pub(crate) async fn forwarding<T>(
    mut call: std::pin::Pin<&mut impl std::future::Future<Output = T>>,
    mut rx: tokio::sync::mpsc::Receiver<Forward>,
    to: &RequestContext,
) -> T {
    let pass = async move {
        while let Some(f) = rx.recv().await {
            match f {
                Forward::Progress(p) => {
                    let _ = to.progress(p.progress, p.total, p.message.as_deref()).await;
                }
                Forward::Log(p, logger) => {
                    let _ = to.log(p.level, Some(&logger), p.data).await;
                }
            }
        }
    };
    let mut pass = std::pin::pin!(pass);
    tokio::select! {
        out = &mut call => {
            // The senders went with the call: the queue ends once drained.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), pass).await;
            out
        }
        () = &mut pass => call.await,
    }
}

/// What goes to a call's caller while it runs, in order.
pub(crate) enum Forward {
    Progress(portico::schema::ProgressNotificationParams),
    Log(LoggingMessageNotificationParams, String),
}

/// A call in flight: its id, its caller, and where its log messages go.
type Entry = (u64, RequestContext, Option<tokio::sync::mpsc::Sender<Forward>>);

/// The downstream calls in flight to one upstream, oldest first.
#[derive(Default)]
pub(crate) struct InFlight {
    next: AtomicU64,
    calls: Mutex<Vec<Entry>>,
}

/// Removes its call from [`InFlight`] when dropped.
pub(crate) struct Entered<'a> {
    set: &'a InFlight,
    id: u64,
}

impl InFlight {
    pub(crate) fn enter(&self, cx: RequestContext, forward: tokio::sync::mpsc::Sender<Forward>) -> Entered<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).push((id, cx, Some(forward)));
        Entered { set: self, id }
    }

    fn latest(&self) -> Option<RequestContext> {
        lock(&self.calls).last().map(|(_, cx, _)| cx.clone())
    }

    /// Where the latest call's log messages go.
    fn latest_forward(&self) -> Option<tokio::sync::mpsc::Sender<Forward>> {
        lock(&self.calls).last().and_then(|(_, _, f)| f.clone())
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        lock(&self.set.calls).retain(|(id, _, _)| *id != self.id);
    }
}

/// What the host declares to an upstream: it can relay sampling and elicitation to its own
/// clients, and it always answers `roots/list`.
pub(crate) fn capabilities(_config: &ServerConfig) -> ClientCapabilities {
    ClientCapabilities::new().with_roots(true).with_sampling(false).with_elicitation(true, false)
}

/// What one call declares to a 2026-07-28 upstream: what the calling client can answer
/// (sampling, elicitation by mode), and roots, which the host always answers from its config.
/// The upstream then asks only for input that the client can give.
pub(crate) fn capabilities_for(cx: &RequestContext) -> ClientCapabilities {
    let down = cx.client_capabilities();
    let mut caps = ClientCapabilities::new().with_roots(true);
    if down.supports_sampling() {
        caps = caps.with_sampling(down.supports_sampling_tools());
    }
    let (form, url) = (down.supports_elicitation_form(), down.supports_elicitation_url());
    if form || url {
        caps = caps.with_elicitation(form, url);
    }
    // The gateway follows an upstream's task only for a client that can follow the gateway's.
    if down.supports_tasks() {
        caps = caps.with_tasks();
    }
    caps
}

pub(crate) struct UpstreamHandler {
    shared: Weak<Shared>,
    /// Log messages on their way downstream, in order; bounded (a flood is dropped).
    logs: tokio::sync::mpsc::Sender<Box<LogMessage>>,
}

/// A log message on its way downstream: the call it belongs to, the message, its logger. Boxed
/// in the queue, whose slots are allocated 32 at a time while the upstream is idle (8 bytes
/// each, rather than the message's 200-odd).
type LogMessage = (RequestContext, LoggingMessageNotificationParams, String);

/// Log messages waiting to go downstream, per upstream connection.
const LOG_QUEUE: usize = 256;

impl UpstreamHandler {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        let (logs, mut rx) = tokio::sync::mpsc::channel::<Box<LogMessage>>(LOG_QUEUE);
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let (cx, params, logger) = *message;
                let _ = cx.log(params.level, Some(&logger), params.data).await;
            }
        });
        UpstreamHandler { shared, logs }
    }

    fn caller(&self, method: &str) -> Result<(Arc<Shared>, RequestContext), ErrorObject> {
        let shared =
            self.shared.upgrade().ok_or_else(|| ErrorObject::internal_error("the gateway is shutting down"))?;
        let cx = shared.calls.latest().ok_or_else(|| {
            ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("{method}: no call through the gateway is in progress, so there is nobody to ask"),
            )
        })?;
        Ok((shared, cx))
    }
}

fn relay_error(e: &portico::Error) -> ErrorObject {
    e.peer_error().cloned().unwrap_or_else(|| ErrorObject::internal_error(format!("the gateway's client: {e}")))
}

/// Runs an upstream's request through the host's oversight: policy (and a person, who may edit
/// the params) before `send`, a person's review of the answer when the verdict asks for one,
/// and the record after. A refusal is an error to the upstream that says why.
async fn overseen<P, R, F>(
    shared: &Shared,
    method: ServerMethod,
    cx: Option<&RequestContext>,
    params: P,
    send: F,
) -> Result<R, ErrorObject>
where
    P: Serialize + DeserializeOwned,
    R: Serialize,
    F: AsyncFnOnce(P) -> Result<R, ErrorObject>,
{
    let raw = serde_json::to_value(&params).unwrap_or(Value::Null);
    let request = ServerRequest {
        method,
        server: &shared.config.name,
        params: &raw,
        principal: crate::host::principal(cx),
        request: cx,
        started: std::time::SystemTime::now(),
        answered: false,
    };
    let oversight = &shared.oversight;
    let verdict = oversight.before_server_request(&request).await;
    if let Some(reason) = &verdict.refusal {
        oversight.after_server_request(&request, &verdict, &Outcome::Refused(reason)).await;
        return Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("{}: refused: {reason}", method.as_str())));
    }
    let params = match &verdict.edited {
        None => params,
        Some(edited) => match serde_json::from_value(edited.clone()) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("the edited request is not a valid {} request: {e}", method.as_str());
                oversight.after_server_request(&request, &verdict, &Outcome::Refused(&why)).await;
                return Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, why));
            }
        },
    };
    match send(params).await {
        Ok(answer) => {
            let value = serde_json::to_value(&answer).unwrap_or(Value::Null);
            if verdict.review_result
                && let Review::Withhold(why) = oversight.review_server_answer(&request, &verdict, &value).await
            {
                let why = format!("the answer was withheld by the person reviewing it: {why}");
                oversight.after_server_request(&request, &verdict, &Outcome::Refused(&why)).await;
                return Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("{}: {why}", method.as_str())));
            }
            oversight.after_server_request(&request, &verdict, &Outcome::Answered(Answer::Client(&value))).await;
            Ok(answer)
        }
        Err(e) => {
            let text = e.message.clone();
            oversight.after_server_request(&request, &verdict, &Outcome::Failed(&text)).await;
            Err(e)
        }
    }
}

impl ClientHandler for UpstreamHandler {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        Box::pin(async move {
            let (shared, cx) = self.caller("sampling/createMessage")?;
            if !cx.client_capabilities().supports_sampling() {
                return Err(ErrorObject::method_not_found("sampling/createMessage"));
            }
            let _waiting = shared.input_pause.hold();
            overseen(&shared, ServerMethod::CreateMessage, Some(&cx), params, async |p| {
                cx.create_message(p).await.map_err(|e| relay_error(&e))
            })
            .await
        })
    }

    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async move {
            let (shared, cx) = self.caller("elicitation/create")?;
            let _waiting = shared.input_pause.hold();
            let params = named(&shared.config.name, params);
            overseen(&shared, ServerMethod::Elicit, Some(&cx), params, async |p| {
                cx.elicit(p).await.map_err(|e| relay_error(&e))
            })
            .await
        })
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async move {
            let Some(shared) = self.shared.upgrade() else {
                return Ok(ListRootsResult::new(Vec::new()));
            };
            let cx = shared.calls.latest();
            let _waiting = shared.input_pause.hold();
            overseen(&shared, ServerMethod::ListRoots, cx.as_ref(), Value::Null, async |_| {
                let configured = &shared.config.roots;
                let downstream = match &cx {
                    Some(cx) if cx.client_capabilities().supports_roots() => {
                        cx.list_roots().await.ok().map(|r| r.roots)
                    }
                    _ => None,
                };
                Ok(ListRootsResult::new(intersect_roots(configured, downstream)))
            })
            .await
        })
    }

    /// A log message goes to the client of the call in flight (at the level that client set;
    /// `RequestContext::log` filters), its logger prefixed with the server's name; with no
    /// call in flight it goes to the gateway's own log.
    fn on_log(&self, params: LoggingMessageNotificationParams) {
        let Some(shared) = self.shared.upgrade() else { return };
        let server = shared.config.name.clone();
        let logger = match &params.logger {
            Some(l) => format!("{server}/{l}"),
            None => server.clone(),
        };
        match shared.calls.latest_forward() {
            // In order with the call's progress, and before its result.
            Some(forward) => {
                let _ = forward.try_send(Forward::Log(params, logger));
            }
            None => match shared.calls.latest() {
                Some(cx) => {
                    let _ = self.logs.try_send(Box::new((cx, params, logger)));
                }
                None => {
                    tracing::info!(target: "portico::upstream", %server, level = ?params.level, "{}", params.data);
                }
            },
        }
    }

    fn on_tools_list_changed(&self) {
        self.changed();
    }

    fn on_prompts_list_changed(&self) {
        self.changed();
    }

    fn on_resources_list_changed(&self) {
        self.changed();
    }

    fn on_resource_updated(&self, uri: &str) {
        if let Some(shared) = self.shared.upgrade() {
            let _ = shared.updated.send(uri.to_owned());
        }
    }
}

/// The elicitation's message, prefixed with the name of the server asking, so that no server
/// can pose as the host or as another server.
pub(crate) fn named(server: &str, mut params: ElicitRequestParams) -> ElicitRequestParams {
    let message = match &mut params {
        ElicitRequestParams::Form(p) => &mut p.message,
        ElicitRequestParams::Url(p) => &mut p.message,
        #[allow(unreachable_patterns)]
        _ => return params,
    };
    *message = format!("[server `{server}` asks] {message}");
    params
}

impl UpstreamHandler {
    fn changed(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.refresh.notify_one();
        }
    }
}

/// The roots an upstream may see: the configured ones when there is no downstream list; the
/// downstream's when nothing is configured; otherwise the downstream roots that lie inside a
/// configured one (or the configured ones inside a downstream one), so an upstream never sees
/// more than the config allows.
pub fn intersect_roots(configured: &[String], downstream: Option<Vec<Root>>) -> Vec<Root> {
    let inside = |child: &str, parent: &str| {
        let parent = parent.trim_end_matches('/');
        child == parent || child.strip_prefix(parent).is_some_and(|rest| rest.starts_with('/'))
    };
    match downstream {
        None => configured.iter().map(|u| Root::new(u.clone())).collect(),
        Some(down) if configured.is_empty() => down,
        Some(down) => {
            let mut out: Vec<Root> =
                down.iter().filter(|d| configured.iter().any(|c| inside(&d.uri, c))).cloned().collect();
            for c in configured {
                // A configured root inside a downstream root is allowed by both.
                if down.iter().any(|d| inside(c, &d.uri)) && !out.iter().any(|r| r.uri == *c) {
                    out.push(Root::new(c.clone()));
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uris(roots: &[Root]) -> Vec<&str> {
        roots.iter().map(|r| r.uri.as_str()).collect()
    }

    #[test]
    fn roots_never_exceed_the_config() {
        let configured = vec!["file:///work".to_owned()];
        assert_eq!(uris(&intersect_roots(&configured, None)), ["file:///work"]);
        let down = vec![Root::new("file:///work/a"), Root::new("file:///home"), Root::new("file:///workshop")];
        assert_eq!(uris(&intersect_roots(&configured, Some(down))), ["file:///work/a"]);
        let down = vec![Root::new("file:///x")];
        assert_eq!(uris(&intersect_roots(&[], Some(down))), ["file:///x"]);
        let down = vec![Root::new("file:///")];
        assert_eq!(uris(&intersect_roots(&configured, Some(down))), ["file:///work"]);
    }
}

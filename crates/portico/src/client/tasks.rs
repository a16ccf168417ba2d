//! Following a task (the `io.modelcontextprotocol/tasks` extension of 2026-07-28): a tool call
//! that the server answers with a `CreateTaskResult` is followed to its end. The client polls
//! `tasks/get` at the server's `pollIntervalMs`, answers the task's input requests (through the
//! call's input handler, else the client's handler) with `tasks/update`, and returns the
//! inlined result or error once the task is terminal. Cancelling the call, its deadline, or
//! dropping its future sends `tasks/cancel`.
//!
//! The wait is bounded: by the call's `max_timeout`, else by the task's `ttlMs` (the server
//! forgets the task after it), and never longer than [`MAX_TASK_WAIT`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico_schema::{CallToolResult, EmptyResult, ErrorObject, InputRequest, InputResponses, RequestMeta, methods};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::connection::{HasMeta, decode};
use super::{CallOptions, Inner};
use crate::error::{Error, ErrorKind};

/// The longest a call follows a task whose server gives it no lifetime and whose call sets no
/// `max_timeout`.
pub const MAX_TASK_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Polls are never closer together than this, whatever the server asks.
const MIN_POLL: Duration = Duration::from_millis(10);
/// Nor further apart than this.
const MAX_POLL: Duration = Duration::from_secs(30);
/// The poll interval when the server names none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// How long the `tasks/cancel` sent for an abandoned task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// A task the server made of a tool call, as its `CreateTaskResult` described it; see
/// [`CallOptions::with_on_task`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskCreated {
    /// The task's id.
    pub task_id: String,
    /// How long the server keeps the task, in milliseconds (`None`: unlimited or not said).
    pub ttl_ms: Option<u64>,
    /// How often the server asks to be polled, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

/// Told when a call becomes a task, before the client polls it; see
/// [`CallOptions::with_on_task`].
pub type TaskHook = Arc<dyn Fn(TaskCreated) -> BoxFuture<'static, ()> + Send + Sync>;

/// The task members of `CreateTaskResult` and `tasks/get` that the client reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskView {
    task_id: String,
    status: String,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default)]
    ttl_ms: Option<u64>,
    #[serde(default)]
    poll_interval_ms: Option<u64>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<ErrorObject>,
    #[serde(default)]
    input_requests: Option<BTreeMap<String, InputRequest>>,
}

/// The params of `tasks/get`, `tasks/update` and `tasks/cancel`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    task_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<InputResponses>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<RequestMeta>,
}

impl TaskParams {
    fn new(task_id: &str) -> Self {
        TaskParams { task_id: task_id.to_owned(), input_responses: None, meta: None }
    }
}

impl HasMeta for TaskParams {
    fn meta_mut(&mut self) -> &mut Option<RequestMeta> {
        &mut self.meta
    }
}

/// Sends `tasks/cancel` for a task the call stops following before its end (cancelled, timed
/// out, failed, or dropped).
struct Abandon {
    inner: Arc<Inner>,
    task_id: String,
    options: CallOptions,
    armed: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (inner, task) = (self.inner.clone(), std::mem::take(&mut self.task_id));
        let options = self.options.clone().with_timeout(CANCEL_TIMEOUT);
        runtime.spawn(async move {
            let sent: Result<EmptyResult, Error> =
                inner.send(methods::TASKS_CANCEL, TaskParams::new(&task), &options).await;
            if let Err(e) = sent {
                tracing::debug!(%task, error = %e, "tasks/cancel for an abandoned task failed");
            }
        });
    }
}

/// The hook for a stateless `tools/call` whose caller stopped waiting (cancelled, timed out or
/// dropped): if the answer that comes anyway is a `CreateTaskResult`, the server had made a task
/// of the call before it read the `notifications/cancelled`, and keeps it; the call never learned
/// its id. The hook sends `tasks/cancel` for it.
pub(super) fn cancel_late_task(inner: std::sync::Weak<Inner>) -> crate::rpc::LateHook {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Made {
        #[serde(default)]
        result_type: Option<portico_schema::ResultType>,
        #[serde(default)]
        task_id: Option<String>,
    }
    Arc::new(move |outcome| {
        let Ok(raw) = outcome else { return };
        let Ok(Made { result_type: Some(portico_schema::ResultType::Task), task_id: Some(task_id) }) =
            serde_json::from_str(raw.get())
        else {
            return;
        };
        let Some(inner) = inner.upgrade() else { return };
        tracing::debug!(task = %task_id, "a tool call abandoned by its caller became a task: cancelling it");
        // Armed, it sends `tasks/cancel` as it goes.
        drop(Abandon { inner, task_id, options: CallOptions::new(), armed: true });
    })
}

fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, Duration::from_millis).clamp(MIN_POLL, MAX_POLL)
}

/// Follows the task `created` (a `tools/call`'s `CreateTaskResult`) to its result.
pub(super) async fn follow(
    inner: &Arc<Inner>,
    created: &RawValue,
    call: &CallOptions,
) -> Result<CallToolResult, Error> {
    let task: TaskView = decode(methods::TOOLS_CALL, created)?;
    // Polls declare what the call declared, and wait no longer than its requests would.
    let mut options = CallOptions::new();
    options.timeout = call.timeout;
    options.capabilities.clone_from(&call.capabilities);
    options.trace.clone_from(&call.trace);
    let mut abandon =
        Abandon { inner: inner.clone(), task_id: task.task_id.clone(), options: options.clone(), armed: true };
    let limit = match (call.max_timeout, task.ttl_ms) {
        (Some(max), _) => max,
        (None, Some(ttl)) => Duration::from_millis(ttl),
        (None, None) => MAX_TASK_WAIT,
    }
    .min(MAX_TASK_WAIT);
    let deadline = Instant::now() + limit;
    let cancelled = async {
        match &call.cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let run = async {
        if let Some(hook) = &call.on_task {
            let created = TaskCreated {
                task_id: task.task_id.clone(),
                ttl_ms: task.ttl_ms,
                poll_interval_ms: task.poll_interval_ms,
            };
            hook(created).await;
        }
        poll(inner, &task.task_id, poll_interval(task.poll_interval_ms), call, &options).await
    };
    let outcome = tokio::select! {
        biased;
        () = cancelled => Err(Error::new(ErrorKind::Cancelled, "the call was cancelled; its task was cancelled too")),
        r = tokio::time::timeout_at(deadline, run) => r.unwrap_or_else(|_| {
            Err(Error::new(ErrorKind::Timeout, format!("task {} did not finish within {limit:?}", task.task_id)))
        }),
    };
    match outcome {
        Ok(terminal) => {
            abandon.armed = false;
            terminal
        }
        Err(e) => Err(e),
    }
}

/// Polls the task until it is terminal: `Ok` with its outcome then, `Err` when following it
/// failed (the task is then abandoned).
async fn poll(
    inner: &Inner,
    task_id: &str,
    mut interval: Duration,
    call: &CallOptions,
    options: &CallOptions,
) -> Result<Result<CallToolResult, Error>, Error> {
    // Keys already answered: a poll that still lists one (a race with the update) is not
    // answered twice. At most `max_input_rounds` rounds, so this stays small.
    let mut answered = BTreeSet::new();
    let mut rounds = 0;
    let mut wait = true;
    loop {
        if wait {
            tokio::time::sleep(interval).await;
        }
        wait = true;
        let t: TaskView = inner.send(methods::TASKS_GET, TaskParams::new(task_id), options).await?;
        if t.task_id != task_id {
            return Err(Error::misbehaved(format!("tasks/get for {task_id} answered about task {}", t.task_id)));
        }
        if t.poll_interval_ms.is_some() {
            interval = poll_interval(t.poll_interval_ms);
        }
        match t.status.as_str() {
            "working" => {}
            "input_required" => {
                let requests: BTreeMap<_, _> =
                    t.input_requests.unwrap_or_default().into_iter().filter(|(k, _)| !answered.contains(k)).collect();
                if requests.is_empty() {
                    continue;
                }
                rounds += 1;
                if rounds > inner.max_input_rounds {
                    return Err(Error::misbehaved(format!(
                        "task {task_id} still needed input after {} rounds",
                        inner.max_input_rounds
                    )));
                }
                let responses = inner.answer(requests, call).await?;
                answered.extend(responses.keys().cloned());
                let mut update = TaskParams::new(task_id);
                update.input_responses = Some(responses);
                let _: EmptyResult = inner.send(methods::TASKS_UPDATE, update, options).await?;
                // The task goes on at once: look again without waiting.
                wait = false;
            }
            "completed" => {
                let result =
                    t.result.ok_or_else(|| Error::misbehaved(format!("completed task {task_id} has no result")))?;
                return Ok(decode(methods::TASKS_GET, &result));
            }
            "failed" => {
                let error = t.error.unwrap_or_else(|| {
                    ErrorObject::internal_error(t.status_message.unwrap_or_else(|| "the task failed".to_owned()))
                });
                return Ok(Err(Error::peer(error)));
            }
            "cancelled" => {
                let why = t.status_message.map(|m| format!(": {m}")).unwrap_or_default();
                return Ok(Err(Error::new(ErrorKind::Cancelled, format!("the server cancelled task {task_id}{why}"))));
            }
            other => return Err(Error::misbehaved(format!("task {task_id} has an unknown status {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_intervals_are_honoured_within_bounds() {
        assert_eq!(poll_interval(None), DEFAULT_POLL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(0)), MIN_POLL);
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL);
    }
}

//! The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a tool call that becomes
//! a task answers at once with a `CreateTaskResult` (`resultType: "task"`) and keeps running;
//! the client polls `tasks/get` (the result or error is inlined once terminal, the pending
//! input requests while `input_required`), answers input with `tasks/update` and stops the
//! work with `tasks/cancel`.
//!
//! Task creation is server-directed: a tool registered with a [`TaskSupport`] other than
//! `Forbidden` becomes a task when its handler calls
//! [`RequestContext::continue_as_task`](super::RequestContext::continue_as_task) and the
//! request declared the extension in its client capabilities. A `Required` tool called without
//! the extension is refused with `-32021` before its handler runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use portico_schema::{
    ClientCapabilities, CreateMessageResult, ElicitResult, ErrorObject, InputRequest, ListRootsResult, Meta, ResultType,
};
use rand::RngCore as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Event;
use crate::sync::lock;

pub use portico_schema::TASKS_EXTENSION;

/// Whether a tool may run as a task (the tasks extension of 2026-07-28).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the handler asks for it and the client declared the extension; otherwise
    /// the call simply runs to its result.
    Optional,
    /// Only as a task: a 2026-07-28 request that did not declare the extension is refused with
    /// `-32021` (missing required client capability) before the handler runs. Handshake-era
    /// clients, which cannot declare it, get the result synchronously.
    Required,
}

/// Task lifetimes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskConfig {
    /// How long a task stays retrievable after its creation (`ttlMs`).
    pub ttl: Duration,
    /// How often clients should poll (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// At most this many tasks are kept; expired ones are dropped first.
    pub max_tasks: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig { ttl: Duration::from_secs(3600), poll_interval: Duration::from_millis(500), max_tasks: 4096 }
    }
}

/// `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// Which result type answers an input request, to check answers when they arrive.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AnswerKind {
    Elicitation,
    Sampling,
    Roots,
}

impl AnswerKind {
    fn fits(self, raw: &RawValue) -> bool {
        let s = raw.get();
        match self {
            AnswerKind::Elicitation => serde_json::from_str::<ElicitResult>(s).is_ok(),
            AnswerKind::Sampling => serde_json::from_str::<CreateMessageResult>(s).is_ok(),
            AnswerKind::Roots => serde_json::from_str::<ListRootsResult>(s).is_ok(),
        }
    }
}

struct Pending {
    request: InputRequest,
    kind: AnswerKind,
    tx: oneshot::Sender<Box<RawValue>>,
}

struct State {
    status: TaskStatus,
    status_message: Option<String>,
    last_updated: String,
    /// The inlined `result` (completed) or `error` (failed).
    outcome: Option<Result<Box<RawValue>, ErrorObject>>,
    /// Input requests not answered yet, by key.
    pending: BTreeMap<String, Pending>,
    /// Answers delivered, by key: a key is never reused for another request.
    answered: BTreeMap<String, Box<RawValue>>,
}

/// One task, shared by its runner, the request context of its handler and the store.
pub(crate) struct Task {
    pub id: String,
    created: Instant,
    created_at: String,
    ttl_ms: u64,
    poll_ms: u64,
    state: Mutex<State>,
    /// Cancelled by `tasks/cancel` or expiry: the handler's future is dropped.
    pub cancel: CancellationToken,
    /// Where status changes are announced (to `subscriptions/listen` streams).
    events: tokio::sync::broadcast::Sender<Event>,
}

impl Task {
    fn expired(&self) -> bool {
        self.created.elapsed().as_millis() > u128::from(self.ttl_ms)
    }

    fn envelope(&self, st: &State) -> TaskEnvelope {
        TaskEnvelope {
            task_id: self.id.clone(),
            status: st.status,
            status_message: st.status_message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: st.last_updated.clone(),
            ttl_ms: Some(self.ttl_ms),
            poll_interval_ms: Some(self.poll_ms),
        }
    }

    /// `CreateTaskResult` for the call that created the task.
    pub(crate) fn created_result(&self) -> CreateTaskResult {
        let st = lock(&self.state);
        CreateTaskResult { result_type: Some(ResultType::Task), task: self.envelope(&st), meta: None }
    }

    /// The `tasks/get` answer: the task, with what its status inlines.
    pub(crate) fn detailed(&self) -> GetTaskResult {
        let st = lock(&self.state);
        let (mut result, mut error, mut input_requests) = (None, None, None);
        match (&st.status, &st.outcome) {
            (TaskStatus::Completed, Some(Ok(r))) => result = Some(r.clone()),
            (TaskStatus::Failed, Some(Err(e))) => error = Some(e.clone()),
            (TaskStatus::InputRequired, _) => {
                input_requests = Some(st.pending.iter().map(|(k, p)| (k.clone(), p.request.clone())).collect());
            }
            _ => {}
        }
        GetTaskResult { result_type: None, task: self.envelope(&st), result, error, input_requests, meta: None }
    }

    /// The params of `notifications/tasks` for a listen stream: the task as `tasks/get` would
    /// return it, tagged with the subscription.
    pub(crate) fn notification(&self, subscription: Meta) -> GetTaskResult {
        let mut d = self.detailed();
        d.meta = Some(subscription);
        d
    }

    fn set(&self, st: &mut State, status: TaskStatus) {
        if !st.status.is_terminal() && st.status != status {
            st.status = status;
            st.last_updated = now_iso8601();
            // No receiver only means nobody listens.
            let _ = self.events.send(Event::TaskChanged(self.id.as_str().into()));
        }
    }

    /// The handler's future ended (or panicked, or was cancelled).
    fn finish(&self, outcome: Option<Result<Box<RawValue>, ErrorObject>>) {
        let mut st = lock(&self.state);
        if st.status.is_terminal() {
            return;
        }
        match outcome {
            Some(Ok(r)) => {
                st.outcome = Some(Ok(r));
                self.set(&mut st, TaskStatus::Completed);
            }
            Some(Err(e)) => {
                st.status_message = Some(e.message.clone());
                st.outcome = Some(Err(e));
                self.set(&mut st, TaskStatus::Failed);
            }
            None => self.set(&mut st, TaskStatus::Cancelled),
        }
        st.pending.clear();
    }

    /// `tasks/cancel`: cancelled at once unless already terminal (then nothing changes).
    pub(crate) fn request_cancel(&self) {
        {
            let mut st = lock(&self.state);
            if !st.status.is_terminal() {
                st.status_message = Some("cancelled by the client".to_owned());
                self.set(&mut st, TaskStatus::Cancelled);
                st.pending.clear();
            }
        }
        self.cancel.cancel();
    }

    /// The handler asks the client for input: the task waits in `input_required` until
    /// `tasks/update` answers under `key` (an answer already delivered under it is returned).
    pub(crate) async fn ask(
        &self,
        key: String,
        request: InputRequest,
        kind: AnswerKind,
    ) -> Result<Box<RawValue>, crate::Error> {
        let rx = {
            let mut st = lock(&self.state);
            if let Some(a) = st.answered.get(&key) {
                return Ok(a.clone());
            }
            if st.status.is_terminal() {
                return Err(crate::Error::local("the task has ended"));
            }
            let (tx, rx) = oneshot::channel();
            st.pending.insert(key, Pending { request, kind, tx });
            self.set(&mut st, TaskStatus::InputRequired);
            rx
        };
        rx.await.map_err(|_| crate::Error::local("the task has ended"))
    }

    /// `tasks/update`: delivers the answers to outstanding requests; answers to any other key
    /// are ignored. An answer that does not fit its request refuses the whole update.
    pub(crate) fn update(&self, responses: BTreeMap<String, Box<RawValue>>) -> Result<(), ErrorObject> {
        let mut st = lock(&self.state);
        for (k, v) in &responses {
            if let Some(p) = st.pending.get(k)
                && !p.kind.fits(v)
            {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses[{k}] is not an answer to the {} request under that key",
                    p.request.method()
                )));
            }
        }
        for (k, v) in responses {
            if let Some(p) = st.pending.remove(&k) {
                st.answered.insert(k, v.clone());
                // The handler may be gone (cancelled): then the answer is simply unused.
                let _ = p.tx.send(v);
            }
        }
        if st.pending.is_empty() && st.status == TaskStatus::InputRequired {
            self.set(&mut st, TaskStatus::Working);
        }
        Ok(())
    }
}

/// The task fields every task-shaped result carries.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskEnvelope {
    task_id: String,
    status: TaskStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    created_at: String,
    last_updated_at: String,
    /// Integer milliseconds; `null` would mean unlimited (never, here).
    ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll_interval_ms: Option<u64>,
}

/// `CreateTaskResult` (`Result & Task`, flat).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateTaskResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<ResultType>,
    #[serde(flatten)]
    task: TaskEnvelope,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

/// `GetTaskResult` (`Result & DetailedTask`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetTaskResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<ResultType>,
    #[serde(flatten)]
    task: TaskEnvelope,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<BTreeMap<String, InputRequest>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

portico_schema::impl_result_envelope!(CreateTaskResult, GetTaskResult);

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskIdParams {
    pub task_id: String,
}

/// The params of `tasks/update`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateParams {
    pub task_id: String,
    #[serde(default)]
    pub input_responses: Option<BTreeMap<String, Box<RawValue>>>,
}

/// Every task of a server, by id.
pub(crate) struct TaskStore {
    config: TaskConfig,
    tasks: Mutex<HashMap<String, Arc<Task>>>,
    events: tokio::sync::broadcast::Sender<Event>,
}

impl TaskStore {
    pub(crate) fn new(config: TaskConfig, events: tokio::sync::broadcast::Sender<Event>) -> Self {
        TaskStore { config, tasks: Mutex::new(HashMap::new()), events }
    }

    /// Creates a task cancelled by `cancel`; it is retrievable before this returns.
    pub(crate) fn create(&self, cancel: CancellationToken) -> Result<Arc<Task>, ErrorObject> {
        let mut tasks = lock(&self.tasks);
        if tasks.len() >= self.config.max_tasks {
            tasks.retain(|_, t| {
                let keep = !t.expired();
                if !keep {
                    t.cancel.cancel();
                }
                keep
            });
            if tasks.len() >= self.config.max_tasks {
                return Err(ErrorObject::internal_error("too many tasks; try again later"));
            }
        }
        let now = now_iso8601();
        let task = Arc::new(Task {
            id: new_task_id(),
            created: Instant::now(),
            created_at: now.clone(),
            ttl_ms: millis(self.config.ttl),
            poll_ms: millis(self.config.poll_interval).max(1),
            state: Mutex::new(State {
                status: TaskStatus::Working,
                status_message: None,
                last_updated: now,
                outcome: None,
                pending: BTreeMap::new(),
                answered: BTreeMap::new(),
            }),
            cancel,
            events: self.events.clone(),
        });
        tasks.insert(task.id.clone(), task.clone());
        Ok(task)
    }

    /// The task `id`, unless unknown or expired (`-32602` either way).
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Task>, ErrorObject> {
        let mut tasks = lock(&self.tasks);
        match tasks.get(id) {
            Some(t) if t.expired() => {
                t.cancel.cancel();
                tasks.remove(id);
                Err(ErrorObject::invalid_params("task has expired"))
            }
            Some(t) => Ok(t.clone()),
            None => Err(ErrorObject::invalid_params("task not found")),
        }
    }
}

/// Runs a task's handler to its end, recording the outcome; `encode` turns the handler's
/// output into the inlined result.
pub(crate) fn spawn<T: Send + 'static>(
    task: Arc<Task>,
    fut: BoxFuture<'static, T>,
    encode: impl FnOnce(T) -> Result<Box<RawValue>, ErrorObject> + Send + 'static,
) {
    tokio::spawn(async move {
        let outcome = tokio::select! {
            biased;
            _ = task.cancel.cancelled() => None,
            r = std::panic::AssertUnwindSafe(fut).catch_unwind() => Some(r),
        };
        let outcome = match outcome {
            None => None,
            Some(Ok(r)) => Some(encode(r)),
            Some(Err(_)) => {
                tracing::warn!(task = %task.id, "task handler panicked");
                Some(Err(ErrorObject::internal_error(
                    "the task's handler panicked; the server logged a \"task handler panicked\" warning with the task's id",
                )))
            }
        };
        task.finish(outcome);
    });
}

/// The capabilities a client lacks when it must declare the tasks extension.
pub(crate) fn required_capabilities() -> ClientCapabilities {
    ClientCapabilities::new().with_tasks()
}

/// True when `caps` declare the tasks extension.
pub(crate) fn declared(caps: &ClientCapabilities) -> bool {
    caps.supports_tasks()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// 128 random bits, URL-safe base64: unguessable, since a task id is all it takes to read it.
fn new_task_id() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Now, as an RFC 3339 UTC timestamp with milliseconds.
pub(crate) fn now_iso8601() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    iso8601(since.as_secs(), since.subsec_millis())
}

fn iso8601(secs: u64, millis: u32) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(iso8601(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(iso8601(1_785_196_800 + 3661, 250), "2026-07-28T01:01:01.250Z");
        assert_eq!(iso8601(4_102_444_799, 999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn task_ids_are_unguessable_and_distinct() {
        let a = new_task_id();
        assert_eq!(a.len(), 22);
        assert_ne!(a, new_task_id());
    }

    #[tokio::test]
    async fn input_moves_the_task_through_input_required_and_back() {
        let store = TaskStore::new(TaskConfig::default(), tokio::sync::broadcast::channel(16).0);
        let task = store.create(CancellationToken::new()).expect("task");
        let t = task.clone();
        let asked = tokio::spawn(async move {
            let a = t.ask("a".into(), InputRequest::list_roots(), AnswerKind::Roots);
            let b = t.ask("b".into(), InputRequest::list_roots(), AnswerKind::Roots);
            let (a, b) = tokio::join!(a, b);
            (a.expect("a").get().to_owned(), b.expect("b").get().to_owned())
        });
        while lock(&task.state).pending.len() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(task.detailed().task.status, TaskStatus::InputRequired);
        let roots = |s: &str| RawValue::from_string(format!(r#"{{"roots":[{{"uri":"file:///{s}"}}]}}"#)).expect("raw");
        let bad = RawValue::from_string(r#"{"nope":1}"#.into()).expect("raw");
        assert!(task.update(BTreeMap::from([("a".to_owned(), bad)])).is_err(), "an answer of the wrong shape");
        let stray = RawValue::from_string(r#"{"ignored":true}"#.into()).expect("raw");
        task.update(BTreeMap::from([("a".to_owned(), roots("a")), ("zzz".to_owned(), stray)])).expect("partial");
        let d = task.detailed();
        assert_eq!(d.task.status, TaskStatus::InputRequired, "b is still pending");
        assert_eq!(d.input_requests.as_ref().map(|m| m.keys().cloned().collect::<Vec<_>>()), Some(vec!["b".into()]));
        task.update(BTreeMap::from([("b".to_owned(), roots("b"))])).expect("rest");
        assert_eq!(task.detailed().task.status, TaskStatus::Working);
        let (a, b) = asked.await.expect("join");
        assert!(a.contains("file:///a") && b.contains("file:///b"));
        task.finish(Some(Ok(RawValue::from_string("{}".into()).expect("raw"))));
        task.request_cancel();
        assert_eq!(task.detailed().task.status, TaskStatus::Completed, "terminal states never change");
        assert!(store.get(&task.id).is_ok() && store.get("nope").is_err());
    }
}

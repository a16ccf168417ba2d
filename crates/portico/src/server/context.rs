//! What a handler can do while it runs: report progress, log, notice cancellation, and ask the
//! client for input — the same calls in both eras.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, InputRequest, InputResponse, ListRootsResult, LoggingLevel, LoggingMessageNotificationParams,
    ProgressNotificationParams, ProgressToken, ProtocolVersion, RequestId, methods,
};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::error::{Error, ErrorKind};
use crate::rpc::{Peer, RequestOptions};

/// How long a handshake-era input request (sampling, elicitation, roots) may wait for the
/// client: a person may be answering.
pub(crate) const INPUT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// The context of one request, given to handlers. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("request_id", &self.inner.id)
            .field("protocol_version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub id: RequestId,
    pub version: ProtocolVersion,
    pub peer: Peer,
    pub cancel: CancellationToken,
    pub client_caps: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub progress_token: Option<ProgressToken>,
    pub log: LogGate,
    /// Present in the stateless era for the methods that may return input-required results.
    pub input: Option<Arc<InputState>>,
    pub server: Server,
    pub last_progress: Mutex<Option<f64>>,
}

/// Who decides whether a log message is sent.
#[derive(Clone)]
pub(crate) enum LogGate {
    /// Handshake era: the connection's level from `logging/setLevel` (`u8::MAX` = not set).
    Session(Arc<AtomicU8>),
    /// Stateless era: the request's `_meta` log level; `None` = the client did not opt in.
    Request(Option<LoggingLevel>),
}

pub(crate) const LEVEL_UNSET: u8 = u8::MAX;

impl LogGate {
    fn allows(&self, level: LoggingLevel) -> bool {
        match self {
            LogGate::Session(min) => {
                let min = min.load(Ordering::Relaxed);
                min == LEVEL_UNSET || level as u8 >= min
            }
            LogGate::Request(min) => min.is_some_and(|m| level >= m),
        }
    }
}

/// Stateless-era input requests of one request: answers known so far, and what is still needed.
pub(crate) struct InputState {
    pub responses: BTreeMap<String, InputResponse>,
    next: AtomicUsize,
    pub needed: Mutex<BTreeMap<String, InputRequest>>,
    pub missing_capability: Mutex<Option<ClientCapabilities>>,
    pub signal: Notify,
}

impl InputState {
    pub(crate) fn new(responses: BTreeMap<String, InputResponse>) -> Self {
        InputState {
            responses,
            next: AtomicUsize::new(0),
            needed: Mutex::new(BTreeMap::new()),
            missing_capability: Mutex::new(None),
            signal: Notify::new(),
        }
    }
}

/// Which client input a request needs, for capability checks and routing.
enum Ask {
    Elicit(ElicitRequestParams),
    Sample(CreateMessageRequestParams),
    Roots,
}

impl RequestContext {
    pub(crate) fn new(inner: Inner) -> Self {
        RequestContext { inner: Arc::new(inner) }
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The revision this request speaks. Handlers rarely need it; Portico adapts results.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// What the client declared it supports.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_caps
    }

    /// Who the client says it is (self-reported; not for security decisions).
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// Cancelled when the client cancels this request or the connection closes. The handler's
    /// future is also dropped then; the token serves work spawned outside it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// True once the request is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// The server handling the request (to add or remove tools, notify resource updates, …).
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// Reports progress, if the client asked for it (`_meta.progressToken`); otherwise does
    /// nothing. Values that do not increase are dropped, as the spec requires increasing ones.
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), Error> {
        let Some(token) = &self.inner.progress_token else { return Ok(()) };
        {
            let mut last = crate::rpc::lock(&self.inner.last_progress);
            if last.is_some_and(|l| progress <= l) {
                tracing::debug!(progress, "non-increasing progress dropped");
                return Ok(());
            }
            *last = Some(progress);
        }
        let mut p = ProgressNotificationParams::new(token.clone(), progress);
        p.total = total;
        p.message = message.map(str::to_owned);
        self.inner.peer.notify(methods::NOTIFICATION_PROGRESS, Some(&p)).await
    }

    /// Sends a log message to the client when its level allows (`logging/setLevel` in the
    /// handshake era, the request's `_meta` log level in 2026-07-28).
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Into<Value>) -> Result<(), Error> {
        if !self.inner.log.allows(level) {
            return Ok(());
        }
        let mut p = LoggingMessageNotificationParams::new(level, data);
        p.logger = logger.map(str::to_owned);
        self.inner.peer.notify(methods::NOTIFICATION_MESSAGE, Some(&p)).await
    }

    /// Asks the user for input through the client (form or URL elicitation).
    ///
    /// In the handshake era this sends `elicitation/create` and waits for the answer. In
    /// 2026-07-28 the request returns an input-required result and this call resumes when the
    /// client retries with the answer: the handler runs again from the start, and every input
    /// call made before returns its recorded answer at once. Keep handlers deterministic up to
    /// their input calls, and do side effects after them.
    ///
    /// # Errors
    /// The client did not declare the capability, the connection closed, or the client refused.
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, Error> {
        let answer = self.ask(Ask::Elicit(params)).await?;
        answer.decode(|r| match r {
            InputResponse::Elicitation(r) => Some(r),
            _ => None,
        })
    }

    /// Asks the client to sample a model (`sampling/createMessage`), in either era.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit).
    pub async fn create_message(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, Error> {
        let answer = self.ask(Ask::Sample(params)).await?;
        answer.decode(|r| match r {
            InputResponse::Sampling(r) => Some(r),
            _ => None,
        })
    }

    /// Asks the client for its roots (`roots/list`), in either era.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit).
    pub async fn list_roots(&self) -> Result<ListRootsResult, Error> {
        let answer = self.ask(Ask::Roots).await?;
        answer.decode(|r| match r {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        })
    }

    async fn ask(&self, ask: Ask) -> Result<Answer, Error> {
        let caps = &self.inner.client_caps;
        let v = self.inner.version;
        let exists = match &ask {
            Ask::Elicit(ElicitRequestParams::Url(_)) => v.has_url_elicitation_and_sampling_tools(),
            Ask::Elicit(_) => v.has_elicitation(),
            Ask::Sample(p) if p.tools.is_some() => v.has_url_elicitation_and_sampling_tools(),
            _ => true,
        };
        if !exists {
            // A client may declare more than its negotiated revision has; never send it.
            return Err(Error::new(ErrorKind::PeerIncompatible, format!("protocol revision {v} has no such request")));
        }
        let (supported, required) = match &ask {
            Ask::Elicit(ElicitRequestParams::Url(_)) => {
                (caps.supports_elicitation_url(), ClientCapabilities::new().with_elicitation(false, true))
            }
            Ask::Elicit(_) => {
                (caps.supports_elicitation_form(), ClientCapabilities::new().with_elicitation(true, false))
            }
            Ask::Sample(p) if p.tools.is_some() => {
                (caps.supports_sampling_tools(), ClientCapabilities::new().with_sampling(true))
            }
            Ask::Sample(_) => (caps.supports_sampling(), ClientCapabilities::new().with_sampling(false)),
            Ask::Roots => (caps.supports_roots(), ClientCapabilities::new().with_roots(false)),
        };
        if self.inner.version.is_stateless() {
            let Some(state) = &self.inner.input else {
                return Err(Error::local(
                    "in 2026-07-28 only tools/call, prompts/get and resources/read may ask the client for input",
                ));
            };
            let key = format!("input-{}", state.next.fetch_add(1, Ordering::SeqCst));
            if let Some(answer) = state.responses.get(&key) {
                return Ok(Answer::Modern(Box::new(answer.clone())));
            }
            if !supported {
                *crate::rpc::lock(&state.missing_capability) = Some(required);
            } else {
                let request = match ask {
                    Ask::Elicit(p) => InputRequest::elicit(p),
                    Ask::Sample(p) => InputRequest::sampling(p),
                    Ask::Roots => InputRequest::list_roots(),
                };
                crate::rpc::lock(&state.needed).insert(key, request);
            }
            // The era layer ends the handler here and answers with an input-required result.
            state.signal.notify_one();
            return std::future::pending().await;
        }
        if !supported {
            return Err(Error::new(
                ErrorKind::PeerIncompatible,
                "the client did not declare the capability this request needs",
            ));
        }
        let options = RequestOptions {
            timeout: INPUT_REQUEST_TIMEOUT,
            cancel: Some(self.inner.cancel.clone()),
            ..Default::default()
        };
        let peer = &self.inner.peer;
        let v = match ask {
            Ask::Elicit(p) => peer.request(methods::ELICITATION_CREATE, Some(&p), options).await?,
            Ask::Sample(p) => peer.request(methods::SAMPLING_CREATE_MESSAGE, Some(&p), options).await?,
            Ask::Roots => peer.request::<Value, Value>(methods::ROOTS_LIST, None, options).await?,
        };
        Ok(Answer::Legacy(v))
    }
}

enum Answer {
    Legacy(Value),
    Modern(Box<InputResponse>),
}

impl Answer {
    /// The typed answer: decoded from JSON (handshake era) or picked from the input response.
    fn decode<T: serde::de::DeserializeOwned>(self, pick: fn(InputResponse) -> Option<T>) -> Result<T, Error> {
        match self {
            Answer::Legacy(v) => serde_json::from_value(v).map_err(bad_answer),
            Answer::Modern(b) => {
                pick(*b).ok_or_else(|| Error::misbehaved("the client answered with another kind of result"))
            }
        }
    }
}

fn bad_answer(e: serde_json::Error) -> Error {
    Error::misbehaved("the client's answer does not match the request").with_source(e)
}

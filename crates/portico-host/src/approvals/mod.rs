//! Approvals: a call that policy says to `ask` about waits here until a person decides.
//!
//! A [`Pending`] approval is put to every channel that is on at once, and the first answer
//! wins; the others see it resolved ([`Event::Resolved`]):
//!
//! - the downstream client itself, when it can elicit: a form in the person's own client
//!   (in 2026-07-28 an input-required result, answered on the retry);
//! - the admin HTTP API (`GET /approvals`, `POST /approvals/{id}`), which `portico approve`
//!   and the web UI use;
//! - a terminal, for `portico call` on a TTY.
//!
//! Nobody answering by the deadline denies the call; a cancelled call cancels its approval.
//! "For this session" is remembered per (principal, downstream session, server, tool); "always"
//! becomes a stored rule (the policy's always-store).

mod channel;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use portico::server::{ConnectionId, RequestContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

/// How many events a slow watcher may fall behind before it misses some (and is told to
/// reload). Approvals come at a person's pace; each slot holds a whole pending approval, so
/// 64 of them take 21 KB where 256 took 84 KB.
const EVENTS: usize = 64;

pub use channel::ask_client;

/// How long a pending approval waits for an answer by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What is being asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A tool call, a resource read or a prompt get, before it reaches the upstream.
    Call,
    /// A result, before it goes back to the model (`review_result`).
    Result,
    /// An upstream's sampling request, before it reaches the client's model.
    Sampling,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Choice {
    /// This call only.
    AllowOnce,
    /// This call and the same tool for the rest of this downstream session and principal.
    AllowSession,
    /// From now on (stored as a rule).
    AllowAlways,
    /// Refuse.
    Deny,
}

impl Choice {
    /// Whether the call may go on.
    pub fn allows(self) -> bool {
        !matches!(self, Choice::Deny)
    }

    /// The wire name (`allow_once`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::AllowOnce => "allow_once",
            Choice::AllowSession => "allow_session",
            Choice::AllowAlways => "allow_always",
            Choice::Deny => "deny",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Choice> {
        [Choice::AllowOnce, Choice::AllowSession, Choice::AllowAlways, Choice::Deny]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// Who answered, where and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Answer {
    /// The decision.
    pub choice: Choice,
    /// `client`, `http`, `terminal`, `ui`, or `session` (an earlier "for this session").
    pub channel: String,
    /// Who, as the channel knows them.
    pub who: String,
    /// When.
    #[serde(with = "unix_ms")]
    pub at: SystemTime,
    /// The request as the person edited it, for a sampling request ([`Kind::Sampling`]): its
    /// `sampling/createMessage` params, which go to the client's model in place of the
    /// upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Value>,
}

impl Answer {
    /// An answer given now.
    pub fn now(choice: Choice, channel: impl Into<String>, who: impl Into<String>) -> Answer {
        Answer { choice, channel: channel.into(), who: who.into(), at: SystemTime::now(), edited: None }
    }

    /// With the request as the person edited it (sampling requests only).
    #[must_use]
    pub fn with_edited(mut self, params: Value) -> Answer {
        self.edited = Some(params);
        self
    }
}

/// A call waiting for a person.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pending {
    /// Its id (random, 16 hex digits).
    pub id: String,
    /// What is asked about.
    pub kind: Kind,
    /// The upstream server.
    pub server: String,
    /// The tool (or prompt, or resource) as exposed.
    pub exposed: String,
    /// Its name at the upstream.
    pub original: String,
    /// The arguments (or the result, for a review), redacted as the audit rules say.
    pub arguments: Value,
    /// Why policy asks (the rule's reason).
    pub reason: Option<String>,
    /// What looks suspicious in the tool's description (hidden characters, its length), for a
    /// tool call: every channel shows it beside the question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Who is calling.
    pub principal: String,
    /// The downstream client's name and version.
    pub client: Option<String>,
    /// The downstream session.
    pub session: Option<u64>,
    /// The digest of the tool's definition as the person is shown it
    /// ([`definition_digest`](crate::policy::store::definition_digest)), for a tool call: an
    /// "allow for this session" answer holds for this definition only.
    #[serde(skip)]
    pub definition: Option<String>,
    /// When it was asked.
    #[serde(with = "unix_ms")]
    pub requested_at: SystemTime,
    /// When it is denied if nobody answers.
    #[serde(with = "unix_ms")]
    pub expires_at: SystemTime,
}

/// What happened to a pending approval, for live views.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A new pending approval.
    Requested(Pending),
    /// Answered (by whoever was first).
    Resolved {
        /// Its id.
        id: String,
        /// The answer.
        answer: Answer,
    },
    /// Nobody answered in time.
    Expired {
        /// Its id.
        id: String,
    },
    /// The call was cancelled while it waited.
    Cancelled {
        /// Its id.
        id: String,
    },
}

/// Why an approval did not come.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// Nobody answered before the deadline.
    #[error("nobody approved the call within {0} s")]
    Expired(u64),
    /// The call was cancelled.
    #[error("the call was cancelled while it waited for approval")]
    Cancelled,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// No pending approval has that id (never, or already answered, expired or cancelled).
    #[error("no pending approval `{0}` (it may have been answered already)")]
    NotPending(String),
    /// Edited params came for something other than a sampling request.
    #[error("approval `{0}` is not a sampling request, so there is nothing to edit")]
    NotEditable(String),
}

/// Principal, session, server, exposed name and the tool's definition digest, if any.
type SessionKey = (String, u64, String, String, Option<String>);

/// A pending approval and where its answer goes.
type Slot = (Pending, Option<oneshot::Sender<Answer>>);

struct Inner {
    pending: Mutex<BTreeMap<String, Slot>>,
    sessions: Mutex<HashSet<SessionKey>>,
    events: broadcast::Sender<Event>,
    timeout: Duration,
}

/// The pending approvals of one host. Cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").field("pending", &lock(&self.inner.pending).len()).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes a pending approval when the waiting call ends, however it ends.
struct Waiting<'a> {
    approvals: &'a Approvals,
    id: String,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if lock(&self.approvals.inner.pending).remove(&self.id).is_some() {
            let _ = self.approvals.inner.events.send(Event::Cancelled { id: self.id.clone() });
        }
    }
}

impl Approvals {
    /// Approvals that wait `timeout` for an answer.
    pub fn new(timeout: Duration) -> Approvals {
        Approvals {
            inner: Arc::new(Inner {
                pending: Mutex::new(BTreeMap::new()),
                sessions: Mutex::new(HashSet::new()),
                events: broadcast::channel(EVENTS).0,
                timeout,
            }),
        }
    }

    /// How long an approval waits.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The approvals waiting now, oldest first.
    pub fn list(&self) -> Vec<Pending> {
        let mut all: Vec<Pending> = lock(&self.inner.pending).values().map(|(p, _)| p.clone()).collect();
        all.sort_by_key(|p| p.requested_at);
        all
    }

    /// Live events: requested, resolved, expired, cancelled.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Whether "for this session" was answered earlier for this principal, session and tool,
    /// and, for a tool call, the same definition of the tool (`definition`, its
    /// [`definition_digest`](crate::policy::store::definition_digest)): a tool whose
    /// description or schema changed since is asked about again.
    pub fn session_allows(
        &self,
        principal: &str,
        session: Option<ConnectionId>,
        server: &str,
        tool: &str,
        definition: Option<&str>,
    ) -> bool {
        self.session_allows_id(principal, session.map(ConnectionId::get), server, tool, definition)
    }

    fn session_allows_id(
        &self,
        principal: &str,
        session: Option<u64>,
        server: &str,
        tool: &str,
        definition: Option<&str>,
    ) -> bool {
        let Some(session) = session else { return false };
        let key = (principal.to_owned(), session, server.to_owned(), tool.to_owned(), definition.map(str::to_owned));
        lock(&self.inner.sessions).contains(&key)
    }

    /// Answers the pending approval `id`; the first answer wins.
    ///
    /// # Errors
    /// When nothing with that id is pending.
    pub fn answer(&self, id: &str, answer: Answer) -> Result<(), AnswerError> {
        let entry = {
            let mut pending = lock(&self.inner.pending);
            match pending.get(id) {
                Some((p, _)) if answer.edited.is_some() && p.kind != Kind::Sampling => {
                    return Err(AnswerError::NotEditable(id.to_owned()));
                }
                _ => pending.remove(id),
            }
        };
        let Some((pending, Some(tx))) = entry else {
            return Err(AnswerError::NotPending(id.to_owned()));
        };
        if answer.choice == Choice::AllowSession
            && let Some(session) = pending.session
        {
            lock(&self.inner.sessions).insert((
                pending.principal.clone(),
                session,
                pending.server.clone(),
                pending.exposed.clone(),
                pending.definition.clone(),
            ));
        }
        let _ = self.inner.events.send(Event::Resolved { id: id.to_owned(), answer: answer.clone() });
        let _ = tx.send(answer);
        Ok(())
    }

    /// Forgets the "for this session" answers of a session that ended.
    pub fn end_session(&self, session: ConnectionId) {
        self.end_session_id(session.get());
    }

    fn end_session_id(&self, session: u64) {
        lock(&self.inner.sessions).retain(|(_, s, ..)| *s != session);
    }

    /// Puts `pending` to every channel and waits for the first answer: the admin API and UI
    /// (through [`list`](Self::list) and [`answer`](Self::answer)), and the downstream client
    /// `cx` when it can elicit. Fills in the id and times.
    ///
    /// # Errors
    /// Nobody answered in time, or the call was cancelled.
    ///
    /// # Cancel safety
    /// Dropping the future withdraws the approval.
    pub async fn request(&self, mut pending: Pending, cx: Option<&RequestContext>) -> Result<Answer, ApprovalError> {
        pending.id = new_id();
        pending.requested_at = SystemTime::now();
        pending.expires_at = pending.requested_at + self.inner.timeout;
        let (tx, rx) = oneshot::channel();
        let id = pending.id.clone();
        lock(&self.inner.pending).insert(id.clone(), (pending.clone(), Some(tx)));
        let _guard = Waiting { approvals: self, id: id.clone() };
        let _ = self.inner.events.send(Event::Requested(pending.clone()));
        let from_client = async {
            match cx {
                Some(cx) if cx.client_capabilities().supports_elicitation_form() => {
                    match ask_client(cx, &pending).await {
                        Some(choice) => {
                            let who = cx.client_info().map_or_else(|| "client".to_owned(), |i| i.name.clone());
                            let answer = Answer::now(choice, "client", who);
                            // Through `answer`, so it wins only if nobody answered first.
                            if self.answer(&id, answer.clone()).is_ok() {
                                Some(answer)
                            } else {
                                std::future::pending().await
                            }
                        }
                        None => std::future::pending().await,
                    }
                }
                _ => std::future::pending().await,
            }
        };
        let cancelled = async {
            match cx {
                Some(cx) => cx.cancellation().cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            answer = rx => answer.map_err(|_| ApprovalError::Cancelled),
            Some(answer) = from_client => Ok(answer),
            () = tokio::time::sleep(self.inner.timeout) => {
                if lock(&self.inner.pending).remove(&id).is_some() {
                    let _ = self.inner.events.send(Event::Expired { id });
                }
                Err(ApprovalError::Expired(self.inner.timeout.as_secs()))
            }
            () = cancelled => Err(ApprovalError::Cancelled),
        }
    }
}

fn new_id() -> String {
    use rand::Rng;
    format!("{:016x}", rand::rng().random::<u64>())
}

/// `SystemTime` as milliseconds since the Unix epoch.
mod unix_ms {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        let ms = t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        s.serialize_u64(ms)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        Ok(UNIX_EPOCH + Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            id: String::new(),
            kind: Kind::Call,
            server: "fs".into(),
            exposed: "fs__write".into(),
            original: "write".into(),
            arguments: serde_json::json!({"path": "/tmp/x"}),
            reason: Some("writes files".into()),
            warnings: Vec::new(),
            principal: "local".into(),
            client: None,
            session: Some(7),
            definition: Some("d1".into()),
            requested_at: SystemTime::UNIX_EPOCH,
            expires_at: SystemTime::UNIX_EPOCH,
        }
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_the_others_see_it_resolved() {
        let approvals = Approvals::new(Duration::from_secs(60));
        let mut events = approvals.subscribe();
        let a = approvals.clone();
        let waiting = tokio::spawn(async move { a.request(pending(), None).await });
        let Ok(Event::Requested(p)) = events.recv().await else { panic!("no request event") };
        assert_eq!(approvals.list().len(), 1);
        approvals.answer(&p.id, Answer::now(Choice::AllowSession, "http", "ada")).expect("first");
        let second = approvals.answer(&p.id, Answer::now(Choice::Deny, "http", "bob"));
        assert_eq!(second, Err(AnswerError::NotPending(p.id.clone())));
        let answer = waiting.await.expect("join").expect("answered");
        assert_eq!((answer.choice, answer.who.as_str()), (Choice::AllowSession, "ada"));
        assert!(matches!(events.recv().await, Ok(Event::Resolved { .. })));
        assert!(approvals.list().is_empty());
        // "For this session" binds to the principal and the session, and ends with it.
        let def = Some("d1");
        assert!(approvals.session_allows_id("local", Some(7), "fs", "fs__write", def));
        assert!(!approvals.session_allows_id("mallory", Some(7), "fs", "fs__write", def), "another principal");
        assert!(!approvals.session_allows_id("local", Some(8), "fs", "fs__write", def), "another session");
        assert!(!approvals.session_allows_id("local", Some(7), "fs", "fs__read", def), "another tool");
        assert!(!approvals.session_allows_id("local", None, "fs", "fs__write", def), "no session, no grant");
        assert!(!approvals.session_allows_id("local", Some(7), "fs", "fs__write", Some("d2")), "a changed tool");
        assert!(!approvals.session_allows_id("local", Some(7), "fs", "fs__write", None), "no definition");
        approvals.end_session_id(7);
        assert!(!approvals.session_allows_id("local", Some(7), "fs", "fs__write", def));
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_answering_denies_at_the_deadline() {
        let approvals = Approvals::new(Duration::from_secs(120));
        let result = approvals.request(pending(), None).await;
        assert_eq!(result, Err(ApprovalError::Expired(120)));
        assert!(approvals.list().is_empty());
    }

    #[tokio::test]
    async fn a_withdrawn_call_withdraws_its_approval() {
        let approvals = Approvals::new(Duration::from_secs(60));
        let mut events = approvals.subscribe();
        let a = approvals.clone();
        let waiting = tokio::spawn(async move { a.request(pending(), None).await });
        let Ok(Event::Requested(p)) = events.recv().await else { panic!("no request event") };
        waiting.abort();
        assert!(matches!(events.recv().await, Ok(Event::Cancelled { id }) if id == p.id));
        assert!(approvals.list().is_empty());
        assert!(approvals.answer(&p.id, Answer::now(Choice::AllowOnce, "http", "late")).is_err());
    }
}

//! Handshake-era sessions: issued at `initialize`, bounded in number, reaped when idle, and
//! their SSE streams logged for resumption with `Last-Event-ID`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use rand::RngCore;

use super::sse::{SseItem, SseSender};
use crate::rpc::link::Link;
use crate::sync::lock;

/// Stores the messages of resumable SSE streams so a client can pick up where it left off.
///
/// Event ids are `"{stream}-{seq}"`: they name the stream they belong to, so a resumed GET
/// replays that stream only. Implementations must bound what they keep.
pub trait EventStore: Send + Sync + 'static {
    /// Stores `message`, sent as event `seq` of `stream` in `session`.
    fn store(&self, session: &str, stream: u64, seq: u64, message: Bytes);
    /// The messages of `stream` in `session` after event `after`, oldest first, with their
    /// sequence numbers; `None` when the stream is unknown (or forgotten).
    fn replay(&self, session: &str, stream: u64, after: u64) -> Option<Vec<(u64, Bytes)>>;
    /// Forgets everything of `session`.
    fn remove_session(&self, session: &str);
}

/// What one session's streams logged: per stream (oldest first), its number and its
/// `(seq, message)` events; and their bytes.
#[derive(Debug, Default)]
struct SessionEvents {
    streams: VecDeque<(u64, VecDeque<(u64, Bytes)>)>,
    bytes: usize,
}

impl SessionEvents {
    /// Forgets the oldest event of the oldest stream (and that stream, once empty).
    fn evict_oldest(&mut self) {
        if let Some((_, events)) = self.streams.front_mut() {
            if let Some((_, m)) = events.pop_front() {
                self.bytes -= m.len();
            }
            if events.is_empty() {
                self.streams.pop_front();
            }
        }
    }
}

/// The default [`EventStore`]: in memory, at most `per_stream` messages per stream, `streams`
/// streams per session and 4 MiB of messages per session
/// ([`with_max_bytes`](Self::with_max_bytes)); the oldest are forgotten first, and a stream
/// whose forgotten events a client asks for cannot be resumed (it is never replayed with a gap).
#[derive(Debug)]
pub struct MemoryEventStore {
    per_stream: usize,
    streams: usize,
    max_bytes: usize,
    inner: Mutex<HashMap<String, SessionEvents>>,
}

impl MemoryEventStore {
    /// A store keeping `per_stream` messages of the last `streams` streams of each session.
    pub fn new(per_stream: usize, streams: usize) -> Self {
        MemoryEventStore {
            per_stream: per_stream.max(1),
            streams: streams.max(1),
            max_bytes: 4 * 1024 * 1024,
            inner: Mutex::new(HashMap::new()),
        }
    }

    /// The most bytes of messages kept per session (default 4 MiB). The newest message is kept
    /// even when it alone is larger.
    #[must_use]
    pub fn with_max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = n;
        self
    }
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        MemoryEventStore::new(256, 16)
    }
}

impl EventStore for MemoryEventStore {
    fn store(&self, session: &str, stream: u64, seq: u64, message: Bytes) {
        let mut all = lock(&self.inner);
        let log = all.entry(session.to_owned()).or_default();
        // Room for the message within the byte bound, made before it is stored so that it is
        // never the one forgotten (the long-lived GET stream is often the oldest).
        while log.bytes + message.len() > self.max_bytes && !log.streams.is_empty() {
            log.evict_oldest();
        }
        let idx = match log.streams.iter().position(|(s, _)| *s == stream) {
            Some(i) => i,
            None => {
                if log.streams.len() >= self.streams
                    && let Some((_, gone)) = log.streams.pop_front()
                {
                    log.bytes -= gone.iter().map(|(_, m)| m.len()).sum::<usize>();
                }
                log.streams.push_back((stream, VecDeque::new()));
                log.streams.len() - 1
            }
        };
        let events = &mut log.streams[idx].1;
        if events.len() >= self.per_stream
            && let Some((_, m)) = events.pop_front()
        {
            log.bytes -= m.len();
        }
        log.bytes += message.len();
        events.push_back((seq, message));
    }

    fn replay(&self, session: &str, stream: u64, after: u64) -> Option<Vec<(u64, Bytes)>> {
        let all = lock(&self.inner);
        let (_, events) = all.get(session)?.streams.iter().find(|(s, _)| *s == stream)?;
        // Events after `after` were forgotten: resuming would skip them silently.
        if events.front().is_some_and(|(first, _)| *first > after.saturating_add(1)) {
            return None;
        }
        Some(events.iter().filter(|(seq, _)| *seq > after).cloned().collect())
    }

    fn remove_session(&self, session: &str) {
        lock(&self.inner).remove(session);
    }
}

/// The GET stream's number; request streams count from 1.
pub(crate) const GET_STREAM: u64 = 0;

struct Live {
    tx: Option<SseSender>,
    next_seq: u64,
    done: bool,
}

/// One handshake-era session.
pub(crate) struct HttpSession {
    pub id: Arc<str>,
    /// The session's connection to its era layer.
    pub link: Link,
    store: Arc<dyn EventStore>,
    live: Mutex<HashMap<u64, Live>>,
    next_stream: AtomicU64,
    last_seen: Mutex<Instant>,
    /// Open response streams and running requests; a busy session is not reaped.
    pub busy: AtomicUsize,
    /// Who opened the session (the authorized principal, with `auth-server`): only they may
    /// use it.
    owner: Option<Arc<str>>,
}

impl HttpSession {
    pub(crate) fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    /// A new request stream.
    pub(crate) fn open_stream(&self) -> u64 {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        lock(&self.live).insert(id, Live { tx: None, next_seq: 1, done: false });
        id
    }

    /// Logs a message on `stream` and delivers it to the stream's client, if connected. A
    /// client that does not keep up is disconnected (it may resume), so memory stays bounded.
    pub(crate) fn emit(&self, stream: u64, data: Bytes) {
        let mut live = lock(&self.live);
        let entry = live.entry(stream).or_insert(Live { tx: None, next_seq: 1, done: false });
        let seq = entry.next_seq;
        entry.next_seq += 1;
        self.store.store(&self.id, stream, seq, data.clone());
        if let Some(tx) = &entry.tx
            && tx.try_send(SseItem::Message { id: Some(format!("{stream}-{seq}")), data }).is_err()
        {
            entry.tx = None;
        }
    }

    /// Ends the client's response for `stream` without completing the stream: what follows is
    /// logged, and the client picks it up by resuming with `Last-Event-ID`.
    pub(crate) fn detach(&self, stream: u64) {
        if let Some(entry) = lock(&self.live).get_mut(&stream)
            && let Some(tx) = entry.tx.take()
        {
            let _ = tx.try_send(SseItem::End);
        }
    }

    /// Marks `stream` complete: its client's response ends after what it has.
    pub(crate) fn finish(&self, stream: u64) {
        let mut live = lock(&self.live);
        if let Some(entry) = live.get_mut(&stream) {
            entry.done = true;
            if let Some(tx) = entry.tx.take() {
                let _ = tx.try_send(SseItem::End);
            }
        }
    }

    /// Connects a client to `stream`, first replaying what it missed after event `after`.
    /// False when the stream cannot be resumed.
    pub(crate) fn attach(&self, stream: u64, after: Option<u64>, tx: SseSender) -> bool {
        let mut live = lock(&self.live);
        let entry = live.entry(stream).or_insert(Live { tx: None, next_seq: 1, done: false });
        if let Some(after) = after {
            let missed = match self.store.replay(&self.id, stream, after) {
                Some(missed) => missed,
                // Nothing stored: fine only if the client already has everything.
                None if after + 1 >= entry.next_seq => Vec::new(),
                None => return false,
            };
            for (seq, data) in missed {
                if tx.try_send(SseItem::Message { id: Some(format!("{stream}-{seq}")), data }).is_err() {
                    return false;
                }
            }
        }
        if entry.done {
            let _ = tx.try_send(SseItem::End);
        } else {
            entry.tx = Some(tx);
        }
        true
    }

    /// Drops finished streams nobody is reading.
    pub(crate) fn forget_stream(&self, stream: u64) {
        let mut live = lock(&self.live);
        if live.get(&stream).is_some_and(|e| e.done && e.tx.is_none()) {
            live.remove(&stream);
        }
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_seen).elapsed()
    }
}

/// All sessions of one endpoint.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    pub max: usize,
    pub idle: Duration,
    store: Arc<dyn EventStore>,
}

/// The session cap is reached.
pub(crate) struct Full;

impl SessionStore {
    pub(crate) fn new(max: usize, idle: Duration, store: Arc<dyn EventStore>) -> Self {
        SessionStore { sessions: Mutex::new(HashMap::new()), max, idle, store }
    }

    /// Creates a session around its connection to the era layer.
    pub(crate) fn create(&self, link: Link, owner: Option<Arc<str>>) -> Result<Arc<HttpSession>, Full> {
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= self.max {
            // Make room by dropping idle sessions first.
            self.reap_locked(&mut sessions);
            if sessions.len() >= self.max {
                return Err(Full);
            }
        }
        let mut raw = [0u8; 18];
        rand::rng().fill_bytes(&mut raw);
        let id: Arc<str> = URL_SAFE_NO_PAD.encode(raw).into();
        let s = Arc::new(HttpSession {
            id: id.clone(),
            link,
            store: self.store.clone(),
            live: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(GET_STREAM + 1),
            last_seen: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            owner,
        });
        sessions.insert(id, s.clone());
        Ok(s)
    }

    /// The session `id`, when `caller` may use it: a session opened by an authorized
    /// principal is someone else's session to anyone else (and so unknown to them).
    pub(crate) fn get(&self, id: &str, caller: Option<&str>) -> Option<Arc<HttpSession>> {
        let s = lock(&self.sessions).get(id).filter(|s| s.owner.is_none() || s.owner.as_deref() == caller).cloned();
        if let Some(s) = &s {
            s.touch();
        }
        s
    }

    /// Ends a session: pending work is cancelled, its events forgotten.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = lock(&self.sessions).remove(id);
        match removed {
            Some(s) => {
                end(&s, &*self.store);
                true
            }
            None => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Removes sessions idle longer than the timeout with nothing open.
    pub(crate) fn reap(&self) -> usize {
        let mut sessions = lock(&self.sessions);
        self.reap_locked(&mut sessions)
    }

    fn reap_locked(&self, sessions: &mut HashMap<Arc<str>, Arc<HttpSession>>) -> usize {
        let before = sessions.len();
        sessions.retain(|_, s| {
            let keep = s.busy.load(Ordering::SeqCst) > 0 || s.idle_for() < self.idle;
            if !keep {
                end(s, &*self.store);
            }
            keep
        });
        before - sessions.len()
    }
}

fn end(s: &HttpSession, store: &dyn EventStore) {
    s.link.close("the session ended");
    lock(&s.live).clear();
    store.remove_session(&s.id);
}

/// Counts a session as busy while alive.
pub(crate) struct Busy(pub Arc<HttpSession>);

impl Busy {
    pub(crate) fn new(s: Arc<HttpSession>) -> Self {
        s.busy.fetch_add(1, Ordering::SeqCst);
        Busy(s)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(len: usize) -> Bytes {
        Bytes::from(vec![b'x'; len])
    }

    #[test]
    fn the_store_keeps_a_session_within_its_bytes_and_never_replays_a_gap() {
        let store = MemoryEventStore::new(100, 4).with_max_bytes(1_000);
        for seq in 1..=5 {
            store.store("s", 1, seq, msg(300));
        }
        // 1,500 bytes logged: the oldest two are forgotten.
        let kept = store.replay("s", 1, 2).expect("events 3 to 5 are kept");
        assert_eq!(kept.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(), [3, 4, 5]);
        assert!(store.replay("s", 1, 1).is_none(), "event 2 is forgotten: no resuming with a gap");
        assert!(store.replay("s", 1, 0).is_none());
        // Another stream's message pushes out the oldest stream's events first.
        store.store("s", 2, 1, msg(600));
        assert_eq!(store.replay("s", 1, 4).map(|e| e.len()), Some(1), "event 5 is kept");
        assert!(store.replay("s", 1, 3).is_none(), "events 3 and 4 gave way");
        assert_eq!(store.replay("s", 2, 0).map(|e| e.len()), Some(1));
        // A message larger than the bound is kept alone.
        store.store("s", 3, 1, msg(5_000));
        assert_eq!(store.replay("s", 3, 0).map(|e| e[0].1.len()), Some(5_000));
        assert!(store.replay("s", 2, 0).is_none(), "the older streams gave way");
        // A message to the oldest stream pushes out that stream's own older events, never itself.
        let store = MemoryEventStore::new(100, 4).with_max_bytes(1_000);
        store.store("s", 0, 1, msg(400));
        store.store("s", 1, 1, msg(400));
        store.store("s", 0, 2, msg(700));
        assert_eq!(store.replay("s", 0, 1).map(|e| e[0].1.len()), Some(700), "the new message is kept");
        assert!(store.replay("s", 1, 0).is_none(), "the next oldest gave way");
        // Other sessions are untouched.
        store.store("t", 1, 1, msg(10));
        assert_eq!(store.replay("t", 1, 0).map(|e| e.len()), Some(1));
    }
}

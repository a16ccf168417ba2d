//! The writer: one task that takes records from a bounded queue, gives each its `seq` and hash,
//! and writes them in batches, one transaction each, with a signed checkpoint every N records.
//!
//! Its state sits behind an async mutex ([`Core`]) so that an append made while the writer is
//! idle can write its own record at once, on the caller's thread ([`Writer::write_alone`]):
//! with one call in flight, a record handed to the writer task and its acknowledgement handed
//! back cost two wake-ups of threads, more than the commit itself.
//!
//! When a write fails the store is down: the records already taken go to the spool (or stay in
//! memory if the spool cannot be written either: a full disk), nothing is dropped, and the
//! writer tries the store again with backoff. Meanwhile, with `fail-closed`, appends are
//! refused at once (and [`super::AuditLog::healthy`] is false, so the host refuses calls); with
//! `buffer`, appends go on into the spool. When the store is back the spool is replayed in
//! order, then the log is healthy again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::time::Instant;

use super::chain::{Checkpoint, Signer, link, ulid};
use super::prepare::Prepared;
use super::spool::Spool;
use super::store::{Pace, Store, StoredRecord};
use super::{AuditError, OnFailure};

/// Where to say a record is written (`wait = "written"`).
pub(crate) type Ack = oneshot::Sender<Result<(), AuditError>>;

/// What the queue carries.
pub(crate) enum Msg {
    /// A record, and where to say it is written.
    Record(Box<Prepared>, Option<Ack>),
    /// Records wait in [`Writer::sealed`].
    Sealed,
    Flush(oneshot::Sender<Result<(), AuditError>>),
    Close(oneshot::Sender<Result<(), AuditError>>),
}

/// The writer's state, shared by its task and appends that write alone.
pub(crate) type Core = Arc<tokio::sync::Mutex<Writer>>;

/// What [`Writer::write_alone`] did.
pub(crate) enum Alone {
    /// Written (or kept back, as a batch would be): the append's answer.
    Done(Result<(), AuditError>),
    /// The store could not take it at once: it waits in [`Writer::sealed`] for the writer task.
    Later,
}

/// State the writer shares with appenders.
#[derive(Debug)]
pub(crate) struct Shared {
    mode: OnFailure,
    accepting: AtomicBool,
    store_ok: AtomicBool,
    closing: AtomicBool,
    backlog: AtomicU64,
    /// Records an append wrote itself ([`Writer::write_alone`]), counted for tests.
    #[cfg(test)]
    alone: AtomicU64,
    /// The writer task's writes of calls' records, at [`Pace::Alone`] and at
    /// [`Pace::Together`], counted for tests.
    #[cfg(test)]
    paced: [AtomicU64; 2],
    reason: Mutex<Option<String>>,
    /// Wakes the writer when the store's connection drops, or when an append wrote alone and
    /// a checkpoint has become due.
    wake: Notify,
    /// The last `seq` in the store.
    pub head: watch::Sender<u64>,
}

impl Shared {
    pub fn new(mode: OnFailure, head: u64) -> Shared {
        Shared {
            mode,
            accepting: AtomicBool::new(true),
            store_ok: AtomicBool::new(true),
            closing: AtomicBool::new(false),
            backlog: AtomicU64::new(0),
            #[cfg(test)]
            alone: AtomicU64::new(0),
            #[cfg(test)]
            paced: [AtomicU64::new(0), AtomicU64::new(0)],
            reason: Mutex::new(None),
            wake: Notify::new(),
            head: watch::Sender::new(head),
        }
    }

    /// Whether an append is taken now.
    pub fn accepting(&self) -> bool {
        self.accepting.load(Ordering::Acquire)
    }

    /// Whether the store answered last time.
    pub fn store_ok(&self) -> bool {
        self.store_ok.load(Ordering::Acquire)
    }

    /// Records in the spool or in memory, not in the store.
    pub fn backlog(&self) -> u64 {
        self.backlog.load(Ordering::Acquire)
    }

    /// Records an append wrote itself, with no trip to the writer task.
    #[cfg(test)]
    pub fn written_alone(&self) -> u64 {
        self.alone.load(Ordering::Relaxed)
    }

    /// The writer task's writes of calls' records: at [`Pace::Alone`], and at [`Pace::Together`].
    #[cfg(test)]
    pub fn paced(&self) -> (u64, u64) {
        (self.paced[0].load(Ordering::Relaxed), self.paced[1].load(Ordering::Relaxed))
    }

    /// Why the store or the spool failed last.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    fn set_reason(&self, why: Option<String>) {
        if let Ok(mut r) = self.reason.lock() {
            *r = why;
        }
    }

    /// The store is unreachable (its connection dropped, or a write failed).
    pub fn store_down(&self, why: String) {
        if self.store_ok.swap(false, Ordering::AcqRel) && !self.closing.load(Ordering::Acquire) {
            tracing::warn!("activity log store unavailable: {why}");
        }
        self.set_reason(Some(why));
        if self.mode == OnFailure::FailClosed {
            self.accepting.store(false, Ordering::Release);
        }
        self.wake.notify_one();
    }

    /// The error an append gets while refused.
    pub fn unavailable(&self) -> AuditError {
        AuditError::Unavailable { reason: self.reason().unwrap_or_else(|| "the store is unavailable".to_owned()) }
    }
}

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The writer task's state.
pub(crate) struct Writer {
    pub store: Arc<dyn Store>,
    pub shared: Arc<Shared>,
    pub signer: Signer,
    pub checkpoint_every: u64,
    pub checkpoint_interval: Option<Duration>,
    pub batch: usize,
    /// The last `seq` given out, and its hash.
    pub head_seq: u64,
    pub head_hash: [u8; 32],
    /// The last `seq` in the store.
    pub stored_seq: u64,
    /// The last checkpoint's `seq` and signature.
    pub last_checkpoint: Option<(u64, Vec<u8>)>,
    pub last_checkpoint_at: Instant,
    pub spool: Spool,
    pub held: VecDeque<StoredRecord>,
    pub backoff: Duration,
    pub next_retry: Option<Instant>,
    /// The last batch went to the store at once ([`Store::write_now`]).
    pub wrote_now: bool,
    /// Records given their `seq` by an append that could not write them at once; the writer
    /// task writes them first, before any record it seals.
    pub sealed: Vec<(StoredRecord, Ack)>,
}

impl Writer {
    /// Publishes the state it starts in (a spool left by a previous run is a backlog).
    pub fn start(&mut self) {
        if self.has_backlog() {
            self.next_retry = Some(Instant::now());
        }
        self.update_health();
    }

    /// Runs until the log is closed (or every handle to it is dropped).
    pub async fn run(core: Core, mut rx: mpsc::Receiver<Msg>) {
        let wake = {
            let mut w = core.lock().await;
            w.start();
            w.shared.clone()
        };
        loop {
            let wakeup = core.lock().await.next_wakeup();
            let msg = tokio::select! {
                m = rx.recv() => m,
                () = sleep_until(wakeup) => {
                    core.lock().await.tick().await;
                    continue;
                }
                () = wake.wake.notified() => {
                    let mut w = core.lock().await;
                    if !w.shared.store_ok() && w.next_retry.is_none() {
                        w.next_retry = Some(Instant::now() + w.backoff);
                    }
                    // Otherwise an append wrote alone: the next wakeup is worked out again.
                    continue;
                }
            };
            let Some(first) = msg else { break };
            let mut w = core.lock().await;
            let mut msgs = vec![first];
            while msgs.len() < w.batch {
                match rx.try_recv() {
                    Ok(m) => msgs.push(m),
                    Err(_) => break,
                }
            }
            let close = w.handle(msgs).await;
            let wrote_now = std::mem::take(&mut w.wrote_now);
            if let Some(close) = close {
                rx.close();
                let mut rest = Vec::new();
                while let Ok(m) = rx.try_recv() {
                    rest.push(m);
                }
                let _ = w.handle(rest).await;
                let result = w.finish().await;
                let _ = close.send(result);
                return;
            }
            drop(w);
            if wrote_now {
                // The batch was committed on this thread, with no wait: let the calls it
                // answered (and others) run before the next, so records gather into batches
                // when calls are many, as they do while a commit waits on the blocking pool.
                tokio::task::yield_now().await;
            }
        }
        if let Err(e) = core.lock().await.finish().await {
            tracing::error!("activity log closed: {e}");
        }
    }

    /// Whether an append may write its record itself now: the log is open, nothing waits to
    /// be written before it, and the store is answering.
    pub fn may_write_alone(&self) -> bool {
        self.shared.accepting() && self.sealed.is_empty() && !self.has_backlog() && self.shared.store_ok()
    }

    /// Seals one record and writes it at once on this thread, if the store can take it
    /// without waiting ([`Store::write_now`]); otherwise leaves it sealed for the writer task
    /// (the caller then sends [`Msg::Sealed`] and waits on `ack`'s receiver). Nothing here
    /// waits, so a caller dropped at any point loses no record.
    pub fn write_alone(&mut self, p: Prepared, ack: Ack) -> Alone {
        let record = self.seal(p);
        let checkpoints = self.checkpoints_for(std::slice::from_ref(&record));
        let due_before = self.checkpoint_due();
        let Some(written) = self.store.write_now(std::slice::from_ref(&record), &checkpoints, Pace::Alone) else {
            self.sealed.push((record, ack));
            return Alone::Later;
        };
        let result = match self.wrote(std::slice::from_ref(&record), &checkpoints, written) {
            Ok(()) => {
                #[cfg(test)]
                self.shared.alone.fetch_add(1, Ordering::Relaxed);
                if !due_before && self.checkpoint_interval.is_some() {
                    // The writer task sleeps with no checkpoint due: it works out when one is.
                    self.shared.wake.notify_one();
                }
                Ok(())
            }
            Err(()) => {
                self.keep_back(vec![record]);
                self.schedule_retry();
                self.kept()
            }
        };
        self.update_health();
        Alone::Done(result)
    }

    /// Seals and writes the records among `msgs`, answers flushes; the close, if one came.
    async fn handle(&mut self, msgs: Vec<Msg>) -> Option<oneshot::Sender<Result<(), AuditError>>> {
        let mut records = Vec::with_capacity(msgs.len() + self.sealed.len());
        let mut flushes = Vec::new();
        let mut acks = Vec::new();
        let mut close = None;
        // Sealed before anything sealed here: their `seq`s come first.
        for (record, ack) in self.sealed.drain(..) {
            records.push(record);
            acks.push(ack);
        }
        // The record of an append that tried to write alone, and nothing else: its call is still
        // the only one.
        let mut pace = if records.len() == 1 { Pace::Alone } else { Pace::Together };
        for m in msgs {
            match m {
                Msg::Record(p, ack) => {
                    records.push(self.seal(*p));
                    acks.extend(ack);
                    pace = Pace::Together;
                }
                Msg::Sealed => {}
                Msg::Flush(tx) => flushes.push(tx),
                Msg::Close(tx) => close = Some(tx),
            }
        }
        if !records.is_empty() {
            #[cfg(test)]
            self.shared.paced[usize::from(pace == Pace::Together)].fetch_add(1, Ordering::Relaxed);
            self.persist(records, pace).await;
        }
        if !acks.is_empty() {
            // In the store or the spool file, unless the spool failed too and they are held in
            // memory.
            for ack in acks {
                let _ = ack.send(self.kept());
            }
        }
        for f in flushes {
            let _ = f.send(self.flushed());
        }
        close
    }

    /// The answer to an append whose record is written or kept back: an error only when it
    /// could be kept in memory alone (the store and the spool both failing).
    fn kept(&self) -> Result<(), AuditError> {
        if self.held.is_empty() {
            return Ok(());
        }
        Err(AuditError::Held { reason: self.shared.reason().unwrap_or_else(|| "the store is unavailable".to_owned()) })
    }

    /// Gives a record its `seq` and its id (which carries the `seq`), and links it to the chain.
    fn seal(&mut self, p: Prepared) -> StoredRecord {
        self.head_seq += 1;
        let id = ulid(p.ms, self.head_seq);
        let text = p.text(self.head_seq, &id);
        let hash = link(&self.head_hash, &text);
        self.head_hash = hash;
        let mut columns = p.columns;
        columns.id = id;
        StoredRecord { seq: self.head_seq, columns, text, hash }
    }

    fn has_backlog(&self) -> bool {
        !self.spool.is_empty() || !self.held.is_empty()
    }

    fn next_wakeup(&self) -> Option<Instant> {
        if self.has_backlog() || !self.shared.store_ok() {
            return Some(self.next_retry.unwrap_or_else(Instant::now));
        }
        let due = self.checkpoint_due();
        self.checkpoint_interval.filter(|_| due).map(|i| self.last_checkpoint_at + i)
    }

    /// Records are in the store after the last checkpoint.
    fn checkpoint_due(&self) -> bool {
        self.stored_seq > self.last_checkpoint.as_ref().map_or(0, |c| c.0)
    }

    /// Checkpoints for records about to be written: each multiple of N, and the last one when
    /// the interval has passed.
    fn checkpoints_for(&self, records: &[StoredRecord]) -> Vec<Checkpoint> {
        let mut prev = self.last_checkpoint.as_ref().map(|c| c.1.clone());
        let mut out: Vec<Checkpoint> = Vec::new();
        for r in records {
            if r.seq.is_multiple_of(self.checkpoint_every) {
                let cp = self.signer.checkpoint(r.seq, r.hash, prev.as_deref());
                prev = Some(cp.signature.clone());
                out.push(cp);
            }
        }
        if let (Some(interval), Some(last)) = (self.checkpoint_interval, records.last())
            && out.last().is_none_or(|c| c.seq != last.seq)
            && self.last_checkpoint_at.elapsed() >= interval
        {
            out.push(self.signer.checkpoint(last.seq, last.hash, prev.as_deref()));
        }
        out
    }

    /// Writes records, of calls that come at `pace`, straight to the store; `false` (and the
    /// records back) when it failed.
    async fn write(&mut self, records: Vec<StoredRecord>, pace: Pace) -> Result<(), Vec<StoredRecord>> {
        let checkpoints = self.checkpoints_for(&records);
        let (records, written) = match self.store.write_now(&records, &checkpoints, pace) {
            Some(written) => {
                self.wrote_now = true;
                (records, written)
            }
            None => {
                let records = Arc::new(records);
                let written = self.store.write(records.clone(), checkpoints.clone(), pace).await;
                (Arc::unwrap_or_clone(records), written)
            }
        };
        self.wrote(&records, &checkpoints, written).map_err(|()| records)
    }

    /// Takes note of a write's outcome: the head and the last checkpoint when it succeeded,
    /// the store down when it failed.
    fn wrote(
        &mut self,
        records: &[StoredRecord],
        checkpoints: &[Checkpoint],
        written: Result<(), super::store::StoreError>,
    ) -> Result<(), ()> {
        match written {
            Ok(()) => {
                if let Some(last) = records.last() {
                    self.stored_seq = last.seq;
                    self.shared.head.send_replace(last.seq);
                }
                if let Some(cp) = checkpoints.last() {
                    self.last_checkpoint = Some((cp.seq, cp.signature.clone()));
                    self.last_checkpoint_at = Instant::now();
                }
                Ok(())
            }
            Err(e) => {
                self.shared.store_down(e.message);
                Err(())
            }
        }
    }

    async fn persist(&mut self, records: Vec<StoredRecord>, pace: Pace) {
        if self.has_backlog() || !self.shared.store_ok() {
            self.keep_back(records);
        } else if let Err(records) = self.write(records, pace).await {
            self.keep_back(records);
            self.schedule_retry();
        }
        self.update_health();
    }

    /// Keeps records that could not be written: in the spool, or in memory when it fails.
    fn keep_back(&mut self, records: Vec<StoredRecord>) {
        if self.held.is_empty() {
            match self.spool.append(&records) {
                Ok(()) => return,
                Err(e) => {
                    let why = format!(
                        "{}; and the spool {} cannot be written: {e}",
                        self.shared.reason().unwrap_or_else(|| "the store is unavailable".to_owned()),
                        self.spool.path().display()
                    );
                    tracing::error!("activity log: {why}");
                    self.shared.set_reason(Some(why));
                }
            }
        }
        self.held.extend(records);
    }

    fn schedule_retry(&mut self) {
        if self.next_retry.is_none() {
            self.next_retry = Some(Instant::now() + self.backoff);
        }
    }

    fn update_health(&self) {
        let backlog = self.spool.records() + self.held.len() as u64;
        self.shared.backlog.store(backlog, Ordering::Release);
        let accepting = match self.shared.mode {
            OnFailure::FailClosed => self.shared.store_ok() && backlog == 0,
            OnFailure::Buffer => self.held.is_empty(),
        };
        self.shared.accepting.store(accepting, Ordering::Release);
        if accepting && backlog == 0 && self.shared.store_ok() {
            self.shared.set_reason(None);
        }
    }

    /// A retry is due, or a checkpoint.
    async fn tick(&mut self) {
        if self.has_backlog() || !self.shared.store_ok() {
            if self.recover().await {
                self.backoff = MIN_BACKOFF;
                self.next_retry = None;
                tracing::info!("activity log store available again");
            } else {
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                self.next_retry = Some(Instant::now() + self.backoff);
            }
            self.update_health();
            return;
        }
        self.checkpoint_head().await;
        self.last_checkpoint_at = Instant::now();
    }

    /// Reaches the store and writes the backlog to it, in order; `true` when all is written.
    async fn recover(&mut self) -> bool {
        if let Err(e) = self.store.check().await {
            self.shared.store_down(e.message);
            return false;
        }
        // A commit whose answer was lost may be in the store after all: start after its head,
        // and chain checkpoints after its last one.
        match (self.store.head().await, self.store.last_checkpoint().await) {
            (Ok(head), Ok(cp)) => {
                self.stored_seq = head.map_or(self.stored_seq, |h| h.0.max(self.stored_seq));
                if let Some(cp) = cp {
                    self.last_checkpoint = Some((cp.seq, cp.signature));
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                self.shared.store_down(e.message);
                return false;
            }
        }
        self.shared.store_ok.store(true, Ordering::Release);
        while !self.spool.is_empty() {
            let (records, pos) = match self.spool.peek(self.batch) {
                Ok(r) => r,
                Err(e) => {
                    self.shared.set_reason(Some(format!("the spool cannot be read: {e}")));
                    return false;
                }
            };
            let n = records.len();
            let fresh: Vec<StoredRecord> = records.into_iter().filter(|r| r.seq > self.stored_seq).collect();
            if !fresh.is_empty() && self.write(fresh, Pace::Together).await.is_err() {
                return false;
            }
            if let Err(e) = self.spool.consumed(n, pos) {
                tracing::warn!("activity log spool: {e}");
            }
            self.update_health();
        }
        while !self.held.is_empty() {
            let n = self.held.len().min(self.batch);
            let chunk: Vec<StoredRecord> = self.held.drain(..n).filter(|r| r.seq > self.stored_seq).collect();
            if let Err(chunk) = self.write(chunk, Pace::Together).await {
                for r in chunk.into_iter().rev() {
                    self.held.push_front(r);
                }
                return false;
            }
        }
        true
    }

    /// Signs a checkpoint at the last record when it has none.
    async fn checkpoint_head(&mut self) {
        if self.has_backlog() || self.stored_seq == 0 || self.stored_seq != self.head_seq {
            return;
        }
        if self.last_checkpoint.as_ref().is_some_and(|c| c.0 >= self.stored_seq) {
            return;
        }
        let prev = self.last_checkpoint.as_ref().map(|c| c.1.clone());
        let cp = self.signer.checkpoint(self.head_seq, self.head_hash, prev.as_deref());
        // Written while the writer is idle: no calls come together now.
        match self.store.write(Arc::new(Vec::new()), vec![cp.clone()], Pace::Alone).await {
            Ok(()) => {
                self.last_checkpoint = Some((cp.seq, cp.signature));
                self.last_checkpoint_at = Instant::now();
            }
            Err(e) => {
                self.shared.store_down(e.message);
                self.schedule_retry();
                self.update_health();
            }
        }
    }

    fn flushed(&self) -> Result<(), AuditError> {
        if self.has_backlog() {
            let reason = self.shared.reason().unwrap_or_else(|| "the store is unavailable".to_owned());
            return Err(AuditError::Unavailable {
                reason: format!(
                    "{reason}; {} records wait to be written",
                    self.spool.records() + self.held.len() as u64
                ),
            });
        }
        Ok(())
    }

    /// On close: one more try at the backlog, a closing checkpoint, and what is left said.
    async fn finish(&mut self) -> Result<(), AuditError> {
        self.shared.accepting.store(false, Ordering::Release);
        self.shared.closing.store(true, Ordering::Release);
        if !self.sealed.is_empty() {
            let _ = self.handle(Vec::new()).await;
        }
        if self.has_backlog() {
            let _ = self.recover().await;
        }
        self.checkpoint_head().await;
        if !self.held.is_empty() {
            let held: Vec<StoredRecord> = self.held.drain(..).collect();
            if let Err(e) = self.spool.append(&held) {
                let reason = format!(
                    "{}; the spool {} cannot be written: {e}",
                    self.shared.reason().unwrap_or_else(|| "the store is unavailable".to_owned()),
                    self.spool.path().display()
                );
                return Err(AuditError::Lost { records: held.len() as u64, reason });
            }
        }
        if !self.spool.is_empty() {
            return Err(AuditError::Spooled { records: self.spool.records(), path: self.spool.path().to_path_buf() });
        }
        Ok(())
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

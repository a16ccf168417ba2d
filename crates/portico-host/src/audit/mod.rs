//! The activity log: one append-only, tamper-evident record of every request that passes
//! through the host, kept in SQLite (the default: a file under the state directory) or Postgres.
//!
//! ```no_run
//! # async fn run() -> Result<(), portico_host::audit::AuditError> {
//! use portico_host::audit::{AuditLog, Entry, Filter, RawAudit, Status};
//!
//! let log = AuditLog::open(&RawAudit::default(), std::path::Path::new("/var/lib/portico")).await?;
//! let mut entry = Entry::new("tools/call");
//! entry.server = Some("github".into());
//! entry.exposed = Some("github__create_issue".into());
//! entry.arguments = Some(serde_json::json!({"title": "x", "token": "ghp_…"})); // token: redacted
//! entry.status = Status::Success;
//! log.append(entry).await?; // waits only while the queue is full
//! let mut recent = Filter::new();
//! recent.tool = Some("github__create_issue".into());
//! for r in log.query(&recent).await? {
//!     println!("{} {} {}", r.seq, r.id, r.status);
//! }
//! assert!(log.verify().await?.ok());
//! log.close().await?;
//! # Ok(()) }
//! ```
//!
//! - **Records** ([`record`]): the fields of an [`Entry`] under OpenTelemetry's names where it
//!   has them, as canonical JSON. The log gives each a `seq` (from 1, no gaps) and a ULID.
//! - **Redaction** ([`redact`]): key names and JSON pointers, replaced by an HMAC with the
//!   log's own key; a per-field size cap; levels `metadata`, `request`, `request-response`.
//! - **Writes** go through a bounded queue to one writer task, which writes batches in
//!   transactions. [`AuditLog::append`] waits only while the queue is full (at most
//!   `queue_timeout`). If the store fails: `fail-closed` (the default) refuses appends at once
//!   and [`AuditLog::healthy`] turns false, so the host refuses new calls; `buffer` spools to a
//!   file under the state directory and replays it in order when the store is back. Records
//!   already taken are never dropped: they are spooled, or held in memory when the spool cannot
//!   be written either (a full disk), and [`AuditLog::close`] says if any are left.
//! - **Tamper evidence** ([`verify`]): a hash chain over the canonical JSON and an Ed25519
//!   checkpoint every N records; [`AuditLog::verify`] names the first bad `seq`.
//! - **Reading**: [`AuditLog::query`], [`AuditLog::show`], [`AuditLog::follow`],
//!   [`AuditLog::export`]; retention by age or size ([`retention`]) exports JSONL first.
//!
//! # `[audit]`
//!
//! ```toml
//! [audit]
//! enabled = true                    # the host's choice; the log itself does not look
//! # url = "postgres://portico:${PGPASSWORD}@127.0.0.1/portico"   # else SQLite:
//! path = "audit.db"                 # relative to [gateway] state_dir
//! on_failure = "fail-closed"        # or "buffer"
//! level = "request-response"        # or "metadata", "request"
//! queue = 8192                      # records waiting for the writer at most
//! queue_timeout = "5s"              # how long an append waits for room
//! batch = 1024                      # records per transaction at most
//! checkpoint_every = 1000           # records between signed checkpoints
//! checkpoint_interval = "60s"       # and at least this often while records come
//!
//! [audit.redact]
//! keys = ["session_key"]            # added to password, secret, token, api_key, authorization, cookie
//! default_keys = true
//! pointers = ["/arguments/query", "/result/content/*/text"]
//! max_field_bytes = "64KiB"
//!
//! [audit.retention]
//! max_age = "90d"
//! max_size = "1GiB"
//! export_dir = "audit-archive"      # relative to state_dir
//! interval = "1h"
//! ```
//!
//! In the state directory: `audit.db` (and its `-wal`, `-shm`, `.lock`), `audit-hmac.key`
//! and `audit-signing.key` (mode 0600), `audit-signing.pub`, `audit-spool.jsonl` while
//! records wait, and `audit-archive/`.

mod canonical;
mod chain;
mod config;
mod prepare;
pub mod query;
pub mod raw;
pub mod record;
pub mod redact;
pub mod retention;
mod spool;
mod store;
pub mod time;
pub mod verify;
mod writer;

use std::fs;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub use config::{AuditConfig, Level, OnFailure, StoreLocation, Wait};
pub use query::{Filter, Follow, Record};
pub use raw::RawAudit;
pub use record::{Approval, Decision, Entry, Status};
pub use redact::{RedactConfig, Redactor};
pub use retention::{Pruned, RetentionConfig};
pub use verify::{Problem, ProblemKind, Report};

use chain::{GENESIS, HMAC_KEY_FILE, PUBLIC_KEY_FILE, SIGNING_KEY_FILE, Signer};
use spool::Spool;
use store::postgres::{OnDown, PostgresStore};
use store::sqlite::SqliteStore;
use store::{Lookup, Select, Store, StoreError, StoredRecord};
use writer::{Alone, Core, Msg, Shared, Writer};

/// The spool's file in the state directory.
pub const SPOOL_FILE: &str = "audit-spool.jsonl";

/// Why the activity log failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// An `[audit]` value is invalid.
    #[error("audit.{field}: {message}")]
    Config {
        /// The key under `[audit]`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The log cannot be written now; with `fail-closed`, calls are refused until it can.
    #[error("the activity log cannot be written: {reason}")]
    Unavailable {
        /// Why (the store's error, and the spool's).
        reason: String,
    },
    /// The record was taken but is kept in memory only: neither the store nor the spool file
    /// could be written. It is written when either can be; a crash before then loses it.
    #[error("the activity log holds the record in memory only: {reason}")]
    Held {
        /// Why (the store's error, and the spool's).
        reason: String,
    },
    /// The writer's queue stayed full for the whole `queue_timeout`.
    #[error("the activity log's queue stayed full for {waited:?}: the store is too slow")]
    QueueFull {
        /// How long the append waited.
        waited: Duration,
    },
    /// The log was closed.
    #[error("the activity log is closed")]
    Closed,
    /// The log was opened for reading only.
    #[error("the activity log was opened for reading only")]
    ReadOnly,
    /// Another process writes this log.
    #[error("{0}")]
    Locked(String),
    /// The store failed.
    #[error("activity log ({store}): {message}")]
    Store {
        /// The file, or the URL without its password.
        store: String,
        /// The store's error.
        message: String,
    },
    /// A key file in the state directory cannot be read or made.
    #[error("audit key: {0}")]
    Key(String),
    /// A file cannot be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        message: String,
    },
    /// The entry cannot be made into a record.
    #[error("cannot record: {0}")]
    Record(String),
    /// On close: records wait in the spool and will be written when the log is next opened
    /// with the store up.
    #[error("{records} records wait in {} for the store to be back", path.display())]
    Spooled {
        /// How many.
        records: u64,
        /// The spool.
        path: PathBuf,
    },
    /// On close: records could be written neither to the store nor to the spool.
    #[error("{records} records could not be written: {reason}")]
    Lost {
        /// How many.
        records: u64,
        /// Why.
        reason: String,
    },
}

impl AuditError {
    fn store(store: &dyn Store) -> impl Fn(StoreError) -> AuditError + '_ {
        move |e| AuditError::Store { store: store.describe(), message: e.message }
    }
}

/// The writer's state, for `portico servers`-like status and for the host's refusal message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// Appends are taken.
    pub accepting: bool,
    /// The store answered last time.
    pub store_ok: bool,
    /// Records in the spool or in memory, not yet in the store.
    pub backlog: u64,
    /// Why the store or spool failed last.
    pub reason: Option<String>,
}

struct Inner {
    config: AuditConfig,
    store: Arc<dyn Store>,
    redactor: Option<Redactor>,
    tx: Option<mpsc::Sender<Msg>>,
    /// The writer's state, for appends that write alone (none when read-only).
    core: Option<Core>,
    /// Appends under way: one that finds none but itself may write alone.
    appending: AtomicUsize,
    shared: Arc<Shared>,
    key: Option<[u8; 32]>,
    signer: Option<Signer>,
    retention: Mutex<Option<JoinHandle<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Held while this log may write (released by `close`).
    lock: Mutex<Option<fs::File>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(mut t) = self.retention.lock()
            && let Some(t) = t.take()
        {
            t.abort();
        }
    }
}

/// The activity log: cheap to clone (one writer behind all clones). Open it in a Tokio
/// runtime; [`AuditLog::close`] it before the runtime ends.
#[derive(Clone)]
pub struct AuditLog {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("store", &self.inner.store.describe())
            .field("writable", &self.inner.tx.is_some())
            .field("health", &self.health())
            .finish()
    }
}

fn make_state_dir(dir: &Path) -> Result<(), AuditError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| AuditError::Io { path: dir.to_path_buf(), message: format!("cannot create: {e}") })
}

/// Holds `<db>.lock` so that one process writes a SQLite log.
fn lock_sqlite(path: &Path) -> Result<fs::File, AuditError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| AuditError::Io { path: lock_path.clone(), message: e.to_string() })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => {
            Err(AuditError::Locked(format!("another Portico is writing the activity log at {}", path.display())))
        }
        Err(fs::TryLockError::Error(e)) => Err(AuditError::Io { path: lock_path, message: e.to_string() }),
    }
}

async fn open_store(
    config: &AuditConfig,
    writer: bool,
    shared: &Arc<Shared>,
) -> Result<(Arc<dyn Store>, Option<fs::File>), AuditError> {
    let describe = |store: String| {
        move |e: StoreError| {
            if e.locked {
                AuditError::Locked(e.message)
            } else {
                AuditError::Store { store: store.clone(), message: e.message }
            }
        }
    };
    match &config.store {
        StoreLocation::Sqlite(path) => {
            if writer && let Some(dir) = path.parent() {
                make_state_dir(dir)?;
            }
            let lock = if writer { Some(lock_sqlite(path)?) } else { None };
            let p = path.clone();
            let store = tokio::task::spawn_blocking(move || SqliteStore::open(&p, writer))
                .await
                .map_err(|e| AuditError::Store { store: path.display().to_string(), message: e.to_string() })?
                .map_err(describe(path.display().to_string()))?;
            Ok((Arc::new(store), lock))
        }
        StoreLocation::Postgres(url) => {
            let weak = Arc::downgrade(shared);
            let on_down: OnDown = Arc::new(move |why| {
                if let Some(shared) = weak.upgrade() {
                    shared.store_down(why);
                }
            });
            let store =
                PostgresStore::open(url.expose(), writer, on_down).await.map_err(describe("postgres".to_owned()))?;
            Ok((Arc::new(store), None))
        }
    }
}

/// Counts an append while it is under way; `first` when no other was.
struct Appending<'a> {
    count: &'a AtomicUsize,
    first: bool,
}

impl<'a> Appending<'a> {
    fn enter(count: &'a AtomicUsize) -> Appending<'a> {
        Appending { count, first: count.fetch_add(1, Ordering::AcqRel) == 0 }
    }
}

impl Drop for Appending<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits for the writer's word that a record is written, at most `waited`.
async fn wait_written(written: oneshot::Receiver<Result<(), AuditError>>, waited: Duration) -> Result<(), AuditError> {
    match tokio::time::timeout(waited, written).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(AuditError::Closed),
        Err(_) => Err(AuditError::Unavailable {
            reason: format!("the record was not written within {} s (it stays queued)", waited.as_secs()),
        }),
    }
}

impl AuditLog {
    /// Opens the log `[audit]` describes, for writing: keys are made in `state_dir` the first
    /// time, the schema is brought up to date, a spool left by a previous run is replayed.
    /// The store must be reachable now.
    ///
    /// # Errors
    /// An invalid `[audit]`, an unreachable store, a key that cannot be made, or another
    /// process already writing this log.
    pub async fn open(raw: &RawAudit, state_dir: &Path) -> Result<AuditLog, AuditError> {
        AuditLog::open_config(AuditConfig::from_raw(raw, state_dir)?).await
    }

    /// [`AuditLog::open`] with a validated config.
    ///
    /// # Errors
    /// As [`AuditLog::open`].
    pub async fn open_config(config: AuditConfig) -> Result<AuditLog, AuditError> {
        let dir = config.state_dir.clone();
        make_state_dir(&dir)?;
        let hmac = chain::load_or_create_key(&dir.join(HMAC_KEY_FILE))?;
        let signer = Signer::new(&chain::load_or_create_key(&dir.join(SIGNING_KEY_FILE))?);
        chain::write_public_key(&dir.join(PUBLIC_KEY_FILE), &signer.public());
        let redactor = Redactor::new(&config.redact, config.level, &hmac)
            .map_err(|m| AuditError::Config { field: "redact".to_owned(), message: m })?;
        let shared = Arc::new(Shared::new(config.on_failure, 0));
        let (store, lock) = open_store(&config, true, &shared).await?;
        let spool = Spool::open(&dir.join(SPOOL_FILE))?;
        let (head, last_checkpoint) = {
            let err = AuditError::store(store.as_ref());
            (store.head().await.map_err(&err)?, store.last_checkpoint().await.map_err(&err)?)
        };
        // After retention removed every record, the chain goes on from the checkpoint kept.
        let (stored_seq, stored_hash) =
            head.or_else(|| last_checkpoint.as_ref().map(|c| (c.seq, c.hash))).unwrap_or((0, GENESIS));
        let (head_seq, head_hash) = match spool.last() {
            Some((seq, hash)) if seq > stored_seq && !spool.is_empty() => (seq, hash),
            _ => (stored_seq, stored_hash),
        };
        shared.head.send_replace(stored_seq);
        let (tx, rx) = mpsc::channel(config.queue);
        let mut writer = Writer {
            store: store.clone(),
            shared: shared.clone(),
            signer: signer.clone(),
            checkpoint_every: config.checkpoint_every,
            checkpoint_interval: config.checkpoint_interval,
            batch: config.batch,
            head_seq,
            head_hash,
            stored_seq,
            last_checkpoint: last_checkpoint.map(|c| (c.seq, c.signature)),
            last_checkpoint_at: tokio::time::Instant::now(),
            spool,
            held: std::collections::VecDeque::new(),
            backoff: Duration::from_millis(50),
            next_retry: None,
            wrote_now: false,
            sealed: Vec::new(),
        };
        writer.start();
        let core: Core = Arc::new(tokio::sync::Mutex::new(writer));
        let writer = tokio::spawn(Writer::run(core.clone(), rx));
        let retention = config.retention.active().then(|| {
            let store = store.clone();
            let retention = config.retention.clone();
            let signer = signer.clone();
            tokio::spawn(async move {
                // The first run soon after start (not during it), then every interval.
                tokio::time::sleep(retention.interval.min(Duration::from_secs(30))).await;
                loop {
                    if let Err(e) = retention::apply(store.as_ref(), &retention, &signer).await {
                        tracing::warn!("activity log retention: {e}");
                    }
                    tokio::time::sleep(retention.interval).await;
                }
            })
        });
        Ok(AuditLog {
            inner: Arc::new(Inner {
                config,
                store,
                redactor: Some(redactor),
                tx: Some(tx),
                core: Some(core),
                appending: AtomicUsize::new(0),
                shared,
                key: Some(signer.public()),
                signer: Some(signer),
                retention: Mutex::new(retention),
                writer: Mutex::new(Some(writer)),
                lock: Mutex::new(lock),
            }),
        })
    }

    /// Opens the log `[audit]` describes for reading (`portico log`): nothing is created, no
    /// writer is started, and another process may be writing it.
    ///
    /// # Errors
    /// An invalid `[audit]`, no log there, or an unreachable store.
    pub async fn open_read_only(raw: &RawAudit, state_dir: &Path) -> Result<AuditLog, AuditError> {
        let config = AuditConfig::from_raw(raw, state_dir)?;
        let dir = &config.state_dir;
        let key = match chain::read_key(&dir.join(SIGNING_KEY_FILE)) {
            Ok(Some(seed)) => Some(Signer::new(&seed).public()),
            _ => fs::read_to_string(dir.join(PUBLIC_KEY_FILE)).ok().and_then(|t| chain::unhex32(&t)),
        };
        let redactor = match chain::read_key(&dir.join(HMAC_KEY_FILE)) {
            Ok(Some(k)) => Redactor::new(&config.redact, config.level, &k).ok(),
            _ => None,
        };
        let shared = Arc::new(Shared::new(config.on_failure, 0));
        let (store, _) = open_store(&config, false, &shared).await?;
        let head = store.head().await.map_err(AuditError::store(store.as_ref()))?;
        shared.head.send_replace(head.map_or(0, |h| h.0));
        Ok(AuditLog {
            inner: Arc::new(Inner {
                config,
                store,
                redactor,
                tx: None,
                core: None,
                appending: AtomicUsize::new(0),
                shared,
                key,
                signer: None,
                retention: Mutex::new(None),
                writer: Mutex::new(None),
                lock: Mutex::new(None),
            }),
        })
    }

    /// The config it was opened with.
    pub fn config(&self) -> &AuditConfig {
        &self.inner.config
    }

    /// The redaction rules, to show a pending approval's arguments as the log would keep them
    /// (`None` when opened read-only without access to the key).
    pub fn redactor(&self) -> Option<&Redactor> {
        self.inner.redactor.as_ref()
    }

    /// Records `entry`. With `wait = "written"` (the default) it returns once the record is in
    /// the store or the spool file (appends made meanwhile share the write); with `"queued"`,
    /// once the writer's queue has it. Either wait is at most `queue_timeout`.
    ///
    /// # Errors
    /// [`AuditError::Unavailable`] at once while the store is down with `fail-closed` (or the
    /// spool cannot be written with `buffer`); [`AuditError::Held`] when the record could only
    /// be kept in memory; [`AuditError::QueueFull`], [`AuditError::Closed`],
    /// [`AuditError::ReadOnly`].
    pub async fn append(&self, entry: Entry) -> Result<(), AuditError> {
        self.append_as(entry, false).await
    }

    /// [`append`](Self::append), from a caller that expects no other record now (its call was
    /// the only one in progress). With `wait = "written"`, when no other append is under way,
    /// nothing is queued and the writer is idle, the record is committed at once on this
    /// thread: with one call at a time, the trip to the writer task and back costs more than
    /// the commit. Otherwise, and when the store cannot take it without waiting, it goes to
    /// the writer as usual. Records from many calls at once are better left to the writer,
    /// which commits them in batches.
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub async fn append_alone(&self, entry: Entry) -> Result<(), AuditError> {
        self.append_as(entry, true).await
    }

    async fn append_as(&self, entry: Entry, expect_alone: bool) -> Result<(), AuditError> {
        let (Some(tx), Some(redactor)) = (&self.inner.tx, &self.inner.redactor) else {
            return Err(AuditError::ReadOnly);
        };
        if !self.inner.shared.accepting() {
            return Err(if tx.is_closed() { AuditError::Closed } else { self.inner.shared.unavailable() });
        }
        let alone = Appending::enter(&self.inner.appending);
        let prepared = prepare::prepare(entry, redactor, time::now_micros()).map_err(AuditError::Record)?;
        let waited = self.inner.config.queue_timeout;
        let (ack, written) = match self.inner.config.wait {
            Wait::Written => {
                let (ack, written) = oneshot::channel();
                // Alone, with the writer idle and nothing queued: written here, at once, with
                // no trip to the writer task and back (see `writer`).
                if expect_alone
                    && alone.first
                    && tx.capacity() == tx.max_capacity()
                    && let Some(mut core) = self.inner.core.as_ref().and_then(|c| c.try_lock().ok())
                    && core.may_write_alone()
                {
                    match core.write_alone(prepared, ack) {
                        Alone::Done(result) => return result,
                        Alone::Later => {
                            drop(core);
                            // The queue may be full: then the writer is busy, and takes the
                            // sealed records with its next batch anyway.
                            let _ = tx.try_send(Msg::Sealed);
                            return wait_written(written, waited).await;
                        }
                    }
                }
                (Some(ack), Some(written))
            }
            _ => (None, None),
        };
        match tx.try_send(Msg::Record(Box::new(prepared), ack)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(AuditError::Closed),
            Err(mpsc::error::TrySendError::Full(msg)) => match tokio::time::timeout(waited, tx.send(msg)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(AuditError::Closed),
                Err(_) => return Err(AuditError::QueueFull { waited }),
            },
        }
        match written {
            Some(written) => wait_written(written, waited).await,
            None => Ok(()),
        }
    }

    /// Whether an append is taken now. With `fail-closed` this is false from the moment the
    /// store fails until it is back and the spool is replayed: the host refuses new calls.
    pub fn healthy(&self) -> bool {
        self.inner.tx.as_ref().is_some_and(|tx| !tx.is_closed()) && self.inner.shared.accepting()
    }

    /// The writer's state.
    pub fn health(&self) -> Health {
        let s = &self.inner.shared;
        Health { accepting: self.healthy(), store_ok: s.store_ok(), backlog: s.backlog(), reason: s.reason() }
    }

    /// Waits until every record appended before is in the store.
    ///
    /// # Errors
    /// [`AuditError::Unavailable`] when some wait in the spool or in memory (saying how
    /// many), [`AuditError::Closed`], [`AuditError::ReadOnly`].
    pub async fn flush(&self) -> Result<(), AuditError> {
        let tx = self.inner.tx.as_ref().ok_or(AuditError::ReadOnly)?;
        let (done, wait) = oneshot::channel();
        tx.send(Msg::Flush(done)).await.map_err(|_| AuditError::Closed)?;
        wait.await.map_err(|_| AuditError::Closed)?
    }

    /// Stops taking records, writes those taken (one more try at the store if it was down),
    /// signs a closing checkpoint, and stops the writer. Closing again does nothing.
    ///
    /// # Errors
    /// [`AuditError::Spooled`] when records wait in the spool for the next open;
    /// [`AuditError::Lost`] when some could be kept neither in the store nor in the spool.
    pub async fn close(&self) -> Result<(), AuditError> {
        if let Ok(mut t) = self.inner.retention.lock()
            && let Some(t) = t.take()
        {
            t.abort();
        }
        let Some(tx) = &self.inner.tx else { return Ok(()) };
        let (done, wait) = oneshot::channel();
        if tx.send(Msg::Close(done)).await.is_err() {
            return Ok(());
        }
        let result = wait.await.unwrap_or(Ok(()));
        let writer = self.inner.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        if let Ok(mut lock) = self.inner.lock.lock() {
            lock.take();
        }
        result
    }

    async fn select(&self, select: Select) -> Result<Vec<StoredRecord>, AuditError> {
        self.inner.store.select(select).await.map_err(AuditError::store(self.inner.store.as_ref()))
    }

    /// The latest records that match (`limit`, 100 by default), oldest first by start time.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub async fn query(&self, filter: &Filter) -> Result<Vec<Record>, AuditError> {
        let limit = filter.limit.unwrap_or(100);
        let mut rows = self.select(Select { conds: filter.conds(), order: store::Order::NewestFirst, limit }).await?;
        rows.reverse();
        Ok(rows.into_iter().map(Record::from).collect())
    }

    /// The record with this ULID, or this `seq`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub async fn show(&self, id: &str) -> Result<Option<Record>, AuditError> {
        let get =
            |lookup| async { self.inner.store.get(lookup).await.map_err(AuditError::store(self.inner.store.as_ref())) };
        if let Ok(seq) = id.parse::<u64>() {
            return Ok(get(Lookup::Seq(seq)).await?.map(Record::from));
        }
        let id = id.to_ascii_uppercase();
        // A record's ULID carries its `seq` (modulo 2^40, past which the search below finds
        // it). The log keeps no index of ids, so an id that names no record so found (one made
        // before ids carried their `seq`, or none at all) is looked for through the whole log.
        if let Some(seq) = chain::ulid_seq(&id)
            && let Some(row) = get(Lookup::Seq(seq)).await?
            && row.columns.id == id
        {
            return Ok(Some(Record::from(row)));
        }
        Ok(get(Lookup::Id(id)).await?.map(Record::from))
    }

    /// The last `seq` in the store.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub async fn last_seq(&self) -> Result<Option<u64>, AuditError> {
        let head = self.inner.store.head().await.map_err(AuditError::store(self.inner.store.as_ref()))?;
        Ok(head.map(|h| h.0))
    }

    /// A live tail of the records that match `filter` (its `limit` aside), from after `after`
    /// (the last record now, when `None`).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub async fn follow(&self, filter: &Filter, after: Option<u64>) -> Result<Follow, AuditError> {
        let after = match after {
            Some(a) => a,
            None => self.last_seq().await?.unwrap_or(0),
        };
        Ok(Follow { log: self.clone(), conds: filter.conds(), after, head: self.inner.shared.head.subscribe() })
    }

    /// Writes every record, in `seq` order, as JSONL: each line the record's canonical JSON,
    /// exactly as hashed. Returns how many.
    ///
    /// # Errors
    /// When the store cannot be read or `out` written.
    pub async fn export(&self, out: &mut (dyn std::io::Write + Send)) -> Result<u64, AuditError> {
        let mut after = 0;
        let mut n = 0;
        loop {
            let page = self.select(Select::after(after, 5000)).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for r in &page {
                out.write_all(r.text.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                    .map_err(|e| AuditError::Io { path: PathBuf::from("-"), message: e.to_string() })?;
                n += 1;
            }
        }
        out.flush().map_err(|e| AuditError::Io { path: PathBuf::from("-"), message: e.to_string() })?;
        Ok(n)
    }

    /// Checks the chain and the checkpoints (against this log's key, from the state
    /// directory, when it can be read).
    ///
    /// # Errors
    /// When the store cannot be read (what is wrong with the log is in the [`Report`]).
    pub async fn verify(&self) -> Result<Report, AuditError> {
        verify::verify(self.inner.store.as_ref(), self.inner.key).await
    }

    /// Applies retention now (it also runs every `retention.interval` while the log is open).
    ///
    /// # Errors
    /// When the store cannot be read or written, or the export cannot be written;
    /// [`AuditError::ReadOnly`] when opened read-only.
    pub async fn apply_retention(&self) -> Result<Option<Pruned>, AuditError> {
        let signer = self.inner.signer.as_ref().ok_or(AuditError::ReadOnly)?;
        retention::apply(self.inner.store.as_ref(), &self.inner.config.retention, signer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Entry {
        let mut e = Entry::new("tools/call");
        e.server = Some("files".to_owned());
        e.exposed = Some(format!("files__read{i}"));
        e
    }

    /// One `append_alone` at a time writes its own record, with no trip to the writer task;
    /// many at once (or a plain `append`) go through the writer's batches; either way one
    /// chain. On one thread, so the writer task cannot wake between two sequential appends
    /// (on two, it may take its lock for a moment, and an append then rightly queues).
    #[tokio::test(flavor = "current_thread")]
    async fn an_append_alone_writes_its_record_itself_and_many_share_batches() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = AuditLog::open(&RawAudit::default(), dir.path()).await.unwrap_or_else(|e| panic!("open: {e}"));
        for i in 0..20 {
            log.append_alone(entry(i)).await.unwrap_or_else(|e| panic!("append: {e}"));
        }
        assert_eq!(log.inner.shared.written_alone(), 20, "sequential appends went through the writer task");
        log.append(entry(50)).await.unwrap_or_else(|e| panic!("append: {e}"));
        assert_eq!(log.inner.shared.written_alone(), 20, "a plain append wrote alone");
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move { log.append(entry(100 + i)).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("append: {e}"));
        }
        assert_eq!(log.inner.shared.written_alone(), 20, "plain appends wrote alone");
        log.flush().await.unwrap_or_else(|e| panic!("flush: {e}"));
        let report = log.verify().await.unwrap_or_else(|e| panic!("verify: {e}"));
        assert!(report.ok(), "{report}");
        assert_eq!(report.records, 85);
        log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    }

    /// One `append_alone` at a time, past the point where the WAL is due for a checkpoint: the
    /// appends the store cannot take at once go to the writer task as lone calls' records (so
    /// the store checkpoints on the writer, and starts no round beside the commits), never as
    /// calls that come together.
    #[tokio::test(flavor = "current_thread")]
    async fn lone_appends_the_store_cannot_take_at_once_reach_it_as_lone_calls() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = AuditLog::open(&RawAudit::default(), dir.path()).await.unwrap_or_else(|e| panic!("open: {e}"));
        let mut n = 0;
        // Some 5 pages a record: the WAL is due after about 400 appends, and due on the writer
        // after about 1,600. Bounded by count.
        while log.inner.shared.paced().0 == 0 {
            assert!(n < 20_000, "no append reached the writer task");
            log.append_alone(entry(n)).await.unwrap_or_else(|e| panic!("append: {e}"));
            n += 1;
        }
        assert!(n > 100, "the store refused a lone append at once ({n})");
        assert_eq!(log.inner.shared.paced().1, 0, "lone appends reached the store as calls together");
        log.append(entry(n)).await.unwrap_or_else(|e| panic!("append: {e}"));
        log.flush().await.unwrap_or_else(|e| panic!("flush: {e}"));
        assert_eq!(log.inner.shared.paced().1, 1, "a plain append did not reach the store as calls together");
        let report = log.verify().await.unwrap_or_else(|e| panic!("verify: {e}"));
        assert!(report.ok(), "{report}");
        assert_eq!(report.records, n as u64 + 1);
        log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    }
}

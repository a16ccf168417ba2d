//! The WAL's checkpoints, copied into the database beside the writer's commits.
//!
//! A checkpoint of a WAL that has reached [`CHECKPOINT_PAGES`] copies megabytes into the database
//! file and syncs it: 100 ms and more on a slow disk. Run on the writing connection, it
//! held every commit (and so every call waiting for its record) for that long. So the copy runs
//! on a connection of its own, on the blocking pool, while the writer goes on committing:
//! SQLite's `PASSIVE` checkpoint takes no lock a writer needs.
//!
//! A checkpoint made beside commits cannot copy the frames committed while it ran, and SQLite
//! starts the WAL over only once every frame is copied. So when a background checkpoint is done,
//! the writer copies what is left itself, at its next commit, if that is little
//! ([`FINISH_PAGES`]); otherwise another background checkpoint starts. Each copies what came
//! during the one before, so the rest shrinks to a short copy on the writer. SQLite syncs the
//! database only after a checkpoint that copied every frame, so a background round syncs what it
//! copied itself: otherwise the writer's short copy would end in the write-back of megabytes
//! (about 20 ms where a sync is slow, every commit held meanwhile). If the WAL still
//! grows to [`MAX_PAGES`] (the disk cannot keep up), the writer checkpoints at once, as before:
//! the WAL stays bounded.
//!
//! All of that is for calls that come together, whom a checkpoint on the writer would hold all
//! at once. While calls come one at a time ([`Pace::Alone`]), a round beside the commits costs
//! more than it saves: it contends for the disk with every commit made while it runs, and so
//! slows one call in tens, where a checkpoint on the writer holds the one call that made it. So
//! then the WAL grows to [`ALONE_PAGES`] and the writer checkpoints it itself: one call in about
//! 1,600 waits for the copy. (Measured with one call in flight over stdio on ext4, the added
//! p99 fell from 0.84–1.03 ms to 0.31 ms and the p99.9 from 9.4 ms to 1.3 ms:
//! `docs/benchmarks.md`.) The two mix: calls that come together while the WAL is past
//! [`CHECKPOINT_PAGES`] start a round beside them at once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::{Pace, Role, connect};

/// The WAL is checkpointed when it holds this many pages (8 MiB) rather than SQLite's 1000: an
/// index page written by many transactions in between is copied to the database once. (With
/// the checkpoint on the writer, 8,192 pages made fewer stalls; beside it, a smaller WAL makes
/// shorter ones: `docs/benchmarks.md`.)
pub(super) const CHECKPOINT_PAGES: u32 = 2048;

/// While calls come one at a time, the WAL is checkpointed by the writer when it holds this many
/// pages (32 MiB): the fewer such checkpoints, the fewer calls wait for one.
const ALONE_PAGES: u32 = 4 * CHECKPOINT_PAGES;

/// What is left after a background checkpoint, at most, for the writer to copy itself (1 MiB).
const FINISH_PAGES: u32 = 256;

/// The WAL's size at which the writer checkpoints whatever runs in the background (128 MiB).
const MAX_PAGES: u32 = 16 * CHECKPOINT_PAGES;

/// No checkpoint in the background.
const IDLE: u8 = 0;
/// A checkpoint runs in the background.
const RUNNING: u8 = 1;
/// A background checkpoint ended; the writer decides what comes next.
const DONE: u8 = 2;

/// The writing connection's WAL and its checkpoints.
#[derive(Debug)]
pub(super) struct Wal {
    path: PathBuf,
    /// Pages in the WAL after the writing connection's last commit (its WAL hook).
    pages: Arc<AtomicU32>,
    /// The background checkpoints' connection, opened by the first of them.
    conn: Arc<Mutex<Option<Connection>>>,
    state: Arc<AtomicU8>,
    /// The frames copied into the database by the last background checkpoint.
    copied: Arc<AtomicU32>,
    /// [`CHECKPOINT_PAGES`], [`FINISH_PAGES`], [`ALONE_PAGES`] and [`MAX_PAGES`]; smaller in
    /// tests.
    limits: Limits,
}

/// The WAL's sizes, in pages, at which the writer acts.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// A checkpoint is due, beside calls that come together.
    threshold: u32,
    /// Left after a background round: the writer copies it itself.
    finish: u32,
    /// A checkpoint is due on the writer, while calls come one at a time.
    alone: u32,
    /// The writer checkpoints whatever runs in the background.
    max: u32,
}

impl Wal {
    /// The WAL of the log at `path`, whose writing connection is `write`: its WAL hook counts the
    /// pages after each commit, in place of SQLite's checkpoint-on-commit (a connection has one
    /// WAL hook).
    pub fn new(path: PathBuf, write: &mut Connection) -> Result<Wal, rusqlite::Error> {
        let limits = Limits { threshold: CHECKPOINT_PAGES, finish: FINISH_PAGES, alone: ALONE_PAGES, max: MAX_PAGES };
        Wal::with_limits(path, write, limits)
    }

    fn with_limits(path: PathBuf, write: &mut Connection, limits: Limits) -> Result<Wal, rusqlite::Error> {
        let pages = Arc::new(AtomicU32::new(0));
        let counted = pages.clone();
        write.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, n: std::ffi::c_int| {
            counted.store(u32::try_from(n).unwrap_or(0), Ordering::Relaxed);
            Ok(())
        }))?;
        Ok(Wal {
            path,
            pages,
            conn: Arc::new(Mutex::new(None)),
            state: Arc::new(AtomicU8::new(IDLE)),
            copied: Arc::new(AtomicU32::new(0)),
            limits,
        })
    }

    fn pages(&self) -> u32 {
        self.pages.load(Ordering::Relaxed)
    }

    /// Whether a commit made at `pace` may be made on the calling thread now, that is with no
    /// checkpoint to follow it: the WAL is small (for that pace), or a background checkpoint
    /// copies it.
    pub fn commit_now_ok(&self, pace: Pace) -> bool {
        let pages = self.pages();
        if pages < self.limits.threshold {
            self.started_over();
            return true;
        }
        (pace == Pace::Alone && pages < self.limits.alone)
            || (self.state.load(Ordering::Acquire) == RUNNING && pages < self.limits.max)
    }

    /// The WAL is below the threshold: SQLite started it over, and what a background checkpoint
    /// that ended copied is of the WAL before (the next one starts afresh).
    fn started_over(&self) {
        let _ = self.state.compare_exchange(DONE, IDLE, Ordering::AcqRel, Ordering::Acquire);
    }

    /// After a commit made at `pace` on the writing connection `c`, on a blocking thread: when
    /// the WAL is due, checkpoints it on `c` (one call at a time) or starts a background
    /// checkpoint (calls together), or copies the rest after one (see the module docs).
    pub fn after_commit(&self, c: &Connection, pace: Pace) {
        let pages = self.pages();
        let limits = self.limits;
        if pages < limits.threshold {
            self.started_over();
            return;
        }
        if pages < limits.max {
            match self.state.load(Ordering::Acquire) {
                RUNNING => return,
                // One call at a time: the checkpoint waits for the alone limit, and is made
                // here, below.
                _ if pace == Pace::Alone => {
                    if pages < limits.alone {
                        return;
                    }
                }
                IDLE => {
                    if self.start() {
                        return;
                    }
                }
                _ => {
                    if pages.saturating_sub(self.copied.load(Ordering::Acquire)) > limits.finish && self.start() {
                        return;
                    }
                }
            }
        }
        // PASSIVE: copies what no reader still needs, waits for no one. A failure here loses
        // nothing (the records are in the WAL); the next commit tries again.
        if let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!("activity log: checkpointing the WAL failed: {e}");
        }
        // A background checkpoint still running (the WAL at its bound) goes on; one that ended
        // has been finished here.
        self.started_over();
    }

    /// Starts a background checkpoint; false when there is no runtime to run it on.
    fn start(&self) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return false };
        self.state.store(RUNNING, Ordering::Release);
        let (path, conn, state, copied) =
            (self.path.clone(), self.conn.clone(), self.state.clone(), self.copied.clone());
        drop(runtime.spawn_blocking(move || {
            match checkpoint(&path, &conn) {
                Ok(n) => copied.store(n, Ordering::Release),
                Err(e) => {
                    tracing::warn!("activity log: checkpointing the WAL failed: {e}");
                    copied.store(0, Ordering::Release);
                }
            }
            state.store(DONE, Ordering::Release);
        }));
        true
    }
}

/// One `PASSIVE` checkpoint on the background connection (opened the first time): the frames
/// it copied into the database.
fn checkpoint(path: &std::path::Path, conn: &Mutex<Option<Connection>>) -> Result<u32, String> {
    let mut guard = conn.lock().map_err(|_| "the checkpoint connection's lock is poisoned".to_owned())?;
    if guard.is_none() {
        let c = connect(path, false, Role::Read).map_err(|e| e.message)?;
        // A checkpoint copies frames through a buffer of its own: no page cache to speak of.
        c.pragma_update(None, "cache_size", -64).map_err(|e| e.to_string())?;
        *guard = Some(c);
    }
    let Some(c) = guard.as_ref() else { return Ok(0) };
    let copied: i64 = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(2)).map_err(|e| e.to_string())?;
    // What this round copied into the database, and the frames committed meanwhile, go to the
    // disk here, so that the writer's own checkpoint, which syncs the WAL before it copies and
    // the database after, has little left to wait for.
    let _ = sync_files(c);
    Ok(u32::try_from(copied).unwrap_or(0))
}

/// Syncs the database file and the WAL through `c`'s own handles on them (SQLite syncs the
/// database only after a checkpoint that copied every frame). Never through a file opened here:
/// closing any descriptor of the database file drops every POSIX lock this process holds on it,
/// the writer's included. A sync that fails is left to the writer's checkpoint, which syncs both.
/// The files synced.
#[allow(unsafe_code)]
fn sync_files(c: &Connection) -> usize {
    use rusqlite::ffi;
    let mut synced = 0;
    for op in [ffi::SQLITE_FCNTL_FILE_POINTER, ffi::SQLITE_FCNTL_JOURNAL_POINTER] {
        let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
        // SAFETY: the handle is this open connection's, used by this thread alone (the caller
        // holds the checkpoint connection's lock) and idle: no statement runs on it. Both
        // opcodes write one `sqlite3_file *` (the connection's own, or null) to the pointer
        // passed, a live local of that type.
        let rc = unsafe { ffi::sqlite3_file_control(c.handle(), c"main".as_ptr(), op, (&raw mut file).cast()) };
        if rc != ffi::SQLITE_OK || file.is_null() {
            continue;
        }
        // SAFETY: `file` is the connection's open file object, valid while the connection is
        // open and unused elsewhere (above). A file not opened yet (the WAL before its first
        // read) has no methods and is skipped; `xSync` takes the object and its flags.
        unsafe {
            let methods = (*file).pMethods;
            if let Some(sync) = methods.as_ref().and_then(|m| m.xSync)
                && sync(file, ffi::SQLITE_SYNC_NORMAL) == ffi::SQLITE_OK
            {
                synced += 1;
            }
        }
    }
    synced
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn open(path: &std::path::Path, threshold: u32, max: u32) -> (Connection, Wal) {
        open_with(path, Limits { threshold, finish: threshold / 8, alone: threshold, max })
    }

    fn open_with(path: &std::path::Path, limits: Limits) -> (Connection, Wal) {
        let mut c = connect(path, true, Role::Write).unwrap_or_else(|e| panic!("{e}"));
        c.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY, text TEXT NOT NULL)").unwrap_or_else(|e| panic!("{e}"));
        let wal = Wal::with_limits(path.to_path_buf(), &mut c, limits).unwrap_or_else(|e| panic!("{e}"));
        (c, wal)
    }

    /// One commit of a few pages, of calls that come together, then what the store does after it.
    fn commit(c: &Connection, wal: &Wal, n: i64) {
        commit_now(c, n);
        wal.after_commit(c, Pace::Together);
    }

    /// One commit as the store makes it at `pace`: at once when it may, otherwise followed by
    /// what the store does after it. Whether it was made at once.
    fn store_commit(c: &Connection, wal: &Wal, n: i64, pace: Pace) -> bool {
        let now = wal.commit_now_ok(pace);
        commit_now(c, n);
        if !now {
            wal.after_commit(c, pace);
        }
        now
    }

    /// One commit of a few pages, as one made on a runtime thread: nothing after it.
    fn commit_now(c: &Connection, n: i64) {
        let text = "x".repeat(3000);
        c.execute_batch("BEGIN IMMEDIATE").unwrap_or_else(|e| panic!("{e}"));
        for i in 0..4 {
            c.execute("INSERT INTO t (n, text) VALUES (?1, ?2)", rusqlite::params![n * 4 + i, text])
                .unwrap_or_else(|e| panic!("{e}"));
        }
        c.execute_batch("COMMIT").unwrap_or_else(|e| panic!("{e}"));
    }

    fn wait_for(wal: &Wal, state: u8) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while wal.state.load(Ordering::Acquire) != state {
            assert!(Instant::now() < deadline, "the checkpoint never reached state {state}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A background checkpoint that copied the whole WAL, which SQLite then started over, is
    /// forgotten: the next time the WAL is due, another starts beside the commits instead of the
    /// writer copying the whole WAL itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_that_ended_before_the_wal_started_over_leaves_the_next_to_the_background() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open(&path, 64, u32::MAX);
        tokio::task::block_in_place(|| {
            let mut n = 0;
            while wal.state.load(Ordering::Acquire) != RUNNING {
                commit(&c, &wal, n);
                n += 1;
                assert!(n < 2000, "no background checkpoint started");
            }
            wait_for(&wal, DONE);
            // Nothing was committed meanwhile, so the round copied every frame: the next commit
            // (made on a runtime thread, with nothing after it) starts the WAL over.
            commit_now(&c, n);
            n += 1;
            assert!(wal.pages() < 64, "the WAL was not started over ({} pages)", wal.pages());
            assert!(wal.commit_now_ok(Pace::Together));
            assert_eq!(wal.state.load(Ordering::Acquire), IDLE, "the ended round is still remembered");
            // Due again: the writer hands it to the background, held here so that it is seen.
            let held = wal.conn.clone();
            let guard = held.lock().unwrap_or_else(|e| panic!("{e}"));
            while wal.pages() < 64 {
                commit_now(&c, n);
                n += 1;
            }
            commit(&c, &wal, n);
            assert_eq!(wal.state.load(Ordering::Acquire), RUNNING, "the writer checkpointed the WAL itself");
            drop(guard);
            wait_for(&wal, DONE);
        });
    }

    /// One call at a time, the WAL grows past the threshold of calls that come together, with no
    /// round beside the commits, to its alone limit; there the writer checkpoints it itself, and
    /// SQLite starts it over. The WAL stays bounded by that limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_call_at_a_time_the_writer_checkpoints_the_wal_itself_at_its_alone_limit() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open_with(&path, Limits { threshold: 64, finish: 8, alone: 256, max: 4096 });
        // A background round would need this connection: held, it would show as RUNNING for good.
        let held = wal.conn.clone();
        let _guard = held.lock().unwrap_or_else(|e| panic!("{e}"));
        let (mut highest, mut past_threshold_at_once, mut on_the_writer, mut started_over) = (0, 0, 0, 0);
        tokio::task::block_in_place(|| {
            for n in 0..1500 {
                let before = wal.pages();
                let now = store_commit(&c, &wal, n, Pace::Alone);
                assert_ne!(wal.state.load(Ordering::Acquire), RUNNING, "a round started beside lone calls");
                if now && before >= 64 {
                    past_threshold_at_once += 1;
                }
                if !now {
                    on_the_writer += 1;
                }
                if wal.pages() < before {
                    started_over += 1;
                }
                highest = highest.max(wal.pages());
            }
        });
        assert!(past_threshold_at_once > 0, "no commit was made at once past the threshold");
        assert!(on_the_writer > 0, "the writer never checkpointed");
        assert!(started_over > 0, "the WAL never started over");
        assert!((256..256 + 16).contains(&highest), "the WAL reached {highest} pages");
        assert!(wal_bytes(&path) <= (256 + 16) * 4120, "the WAL file grew to {} bytes", wal_bytes(&path));
        let rows: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows, 1500 * 4);
    }

    /// Calls that come together while lone calls have let the WAL grow past the threshold start a
    /// round beside the commits at once, rather than wait for the writer's checkpoint.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_that_come_together_past_the_threshold_start_a_round_beside_the_commits() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open_with(&path, Limits { threshold: 64, finish: 8, alone: 1024, max: 4096 });
        tokio::task::block_in_place(|| {
            let mut n = 0;
            while wal.pages() < 64 {
                assert!(store_commit(&c, &wal, n, Pace::Alone), "a lone commit below the alone limit waited");
                n += 1;
            }
            assert!(wal.commit_now_ok(Pace::Alone));
            assert!(!wal.commit_now_ok(Pace::Together), "calls together may commit past the threshold");
            let held = wal.conn.clone();
            let guard = held.lock().unwrap_or_else(|e| panic!("{e}"));
            assert!(!store_commit(&c, &wal, n, Pace::Together));
            assert_eq!(wal.state.load(Ordering::Acquire), RUNNING, "no round started beside the commits");
            // While it runs, lone commits and commits together go on at once.
            assert!(store_commit(&c, &wal, n + 1, Pace::Alone));
            assert!(store_commit(&c, &wal, n + 2, Pace::Together));
            drop(guard);
            wait_for(&wal, DONE);
        });
    }

    fn wal_bytes(path: &std::path::Path) -> u64 {
        std::fs::metadata(path.with_extension("db-wal")).map(|m| m.len()).unwrap_or(0)
    }

    /// Commits go on while a background checkpoint is held up, and the WAL starts over once it
    /// has been copied, with every row still there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_go_on_while_the_wal_is_checkpointed_beside_them() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open(&path, 64, u32::MAX);
        // Holds the background connection, as a slow disk would hold its checkpoint.
        let held = wal.conn.clone();
        let guard = held.lock().unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let mut n = 0;
        tokio::task::block_in_place(|| {
            while wal.state.load(Ordering::Acquire) != RUNNING || n < 100 {
                commit(&c, &wal, n);
                n += 1;
                assert!(n < 2000, "no background checkpoint started");
            }
        });
        // 100 commits and more with the checkpoint held: none of them waited for it.
        assert!(started.elapsed() < Duration::from_secs(10), "commits waited for the checkpoint");
        assert!(wal.commit_now_ok(Pace::Together), "commits on the calling thread are refused while a checkpoint runs");
        let grown = wal_bytes(&path);
        drop(guard);
        let deadline = Instant::now() + Duration::from_secs(10);
        tokio::task::block_in_place(|| {
            while wal.pages() >= 64 {
                assert!(Instant::now() < deadline, "the WAL was not started over ({} pages)", wal.pages());
                commit(&c, &wal, n);
                n += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        assert!(wal.pages() < 64);
        assert!(grown > 64 * 4096, "the WAL did not grow past its threshold while held ({grown} bytes)");
        let rows: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows, n * 4);
    }

    /// A background checkpoint that never ends does not let the WAL grow past its bound: the
    /// writer checkpoints itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_when_the_background_checkpoint_is_stuck() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open(&path, 64, 256);
        let held = wal.conn.clone();
        let _guard = held.lock().unwrap_or_else(|e| panic!("{e}"));
        tokio::task::block_in_place(|| {
            for n in 0..3000 {
                commit(&c, &wal, n);
            }
        });
        // 3,000 commits of 4 rows of 3 KB: some 36 MB of WAL unchecked. The writer's own
        // checkpoints at the bound let SQLite reuse the WAL from its start.
        let bytes = wal_bytes(&path);
        assert!(bytes <= (256 + 32) * 4120, "the WAL grew to {bytes} bytes");
        assert_eq!(wal.state.load(Ordering::Acquire), RUNNING, "the held checkpoint still runs");
    }

    /// A background round reaches both files through its connection's own handles (no
    /// descriptor of the database is opened and closed beside SQLite's), and syncs them.
    #[test]
    fn a_background_round_syncs_the_database_and_the_wal_through_its_own_handles() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open(&path, 64, 256);
        for n in 0..20 {
            commit_now(&c, n);
        }
        let copied = checkpoint(&path, &wal.conn).unwrap_or_else(|e| panic!("{e}"));
        assert!(copied > 0, "the round copied nothing");
        let guard = wal.conn.lock().unwrap_or_else(|e| panic!("{e}"));
        let background = guard.as_ref().unwrap_or_else(|| panic!("the round opened no connection"));
        assert_eq!(sync_files(background), 2, "the database and the WAL were not both synced");
        // The writer's connection goes on committing after the round.
        drop(guard);
        commit_now(&c, 20);
    }

    /// Outside a runtime there is nowhere to run a checkpoint beside the writer: it checkpoints
    /// itself, and the WAL is reused.
    #[test]
    fn without_a_runtime_the_writer_checkpoints_itself() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.db");
        let (c, wal) = open(&path, 64, 256);
        for n in 0..500 {
            commit(&c, &wal, n);
        }
        assert_eq!(wal.state.load(Ordering::Acquire), IDLE);
        let bytes = wal_bytes(&path);
        assert!(bytes <= 80 * 4096, "the WAL grew to {bytes} bytes");
    }
}

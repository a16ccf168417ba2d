//! The SQLite store: one file (WAL, `synchronous = NORMAL`), one connection for writing and
//! one for reading, each used on the blocking pool, except a small batch of records that can be
//! committed at once ([`Store::write_now`]).
//!
//! The WAL is checkpointed by the writer's commits on the blocking pool ([`wal`]): the writing
//! connection's WAL hook only counts the WAL's pages (which turns SQLite's own
//! checkpoint-on-commit off), and [`Store::write`] checkpoints once they are due, on a connection
//! of its own beside the commits while calls come together, on the writer itself while they
//! come one at a time. A commit made on a runtime thread never checkpoints.

mod wal;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension as _, Row, TransactionBehavior, params, params_from_iter,
};

use super::{
    Arg, COLUMNS, Lookup, MIGRATIONS, Pace, Select, Stats, Store, StoreError, StoredRecord, hash32, seq_i64, seq_u64,
};
use crate::audit::chain::{Checkpoint, PruneStatement};
use crate::audit::record::Columns;
use crate::audit::time;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::new(e.to_string())
    }
}

/// Records in a SQLite file.
#[derive(Debug)]
pub(crate) struct SqliteStore {
    path: PathBuf,
    write: Arc<Mutex<Connection>>,
    read: Arc<Mutex<Connection>>,
    /// The writing connection's WAL and its checkpoints.
    wal: Arc<wal::Wal>,
}

/// How long a connection waits for another's lock on the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// At most this many records are committed at once on the calling thread ([`Store::write_now`]):
/// a commit of a few takes tens of microseconds, about what the trips to a blocking thread and
/// back cost. Larger batches, which come when calls are many, go to the blocking pool.
const WRITE_NOW_MAX: usize = 4;

/// How a connection is used: the writing one commits on the hot path, the reading one answers
/// the odd query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Write,
    Read,
}

fn connect(path: &Path, create: bool, role: Role) -> Result<Connection, StoreError> {
    no_bulk_page_cache();
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::new(format!("cannot open {}: {e}", path.display())))?;
    if role == Role::Read {
        no_lookaside(&conn);
    }
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "the audit database is not in WAL mode");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // 32 MiB of pages: the indexes by tool and by server take inserts all over.
    conn.pragma_update(None, "cache_size", -32_768)?;
    conn.pragma_update(None, "wal_autocheckpoint", wal::CHECKPOINT_PAGES)?;
    Ok(conn)
}

/// Turns off SQLite's up-front page cache (20 pages, 87 KB per connection, every one of them
/// touched when it is carved up): pages are allocated as they are read. Process-wide, so it is
/// asked for once, before the first connection; once SQLite is initialized (by an embedding
/// program, say) the call is refused and changes nothing.
#[allow(unsafe_code)]
fn no_bulk_page_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `SQLITE_CONFIG_PAGECACHE` takes a pointer and two ints, passed as such; a null
        // pointer with a count of 0 is documented as "no bulk allocation". Once SQLite is
        // initialized the call is refused (`SQLITE_MISUSE`, ignored) before it changes anything.
        // The one case SQLite warns of, another thread starting SQLite at this very instant,
        // is an embedding program's to avoid: it initializes SQLite first, and this does nothing.
        let none: std::ffi::c_int = 0;
        let _ = unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_PAGECACHE,
                std::ptr::null_mut::<std::ffi::c_void>(),
                none,
                none,
            )
        };
    });
}

/// Turns off the connection's lookaside allocator (48 KB, all of it touched when it is set up):
/// the reading connection is idle most of the time, and its queries are few and large.
#[allow(unsafe_code)]
fn no_lookaside(conn: &Connection) {
    // SAFETY: the handle is this open connection's, used on this thread only, and no statement
    // has run on it yet (lookaside can only be changed while none of it is in use; SQLite
    // returns `SQLITE_BUSY` otherwise, which leaves it as it was). The arguments are the
    // documented buffer (null: SQLite's own), slot size and count.
    let none: std::ffi::c_int = 0;
    let _ = unsafe {
        rusqlite::ffi::sqlite3_db_config(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBCONFIG_LOOKASIDE,
            std::ptr::null_mut::<std::ffi::c_void>(),
            none,
            none,
        )
    };
}

/// Inserts records and checkpoints in the transaction open on `c`.
fn insert(c: &Connection, records: &[StoredRecord], checkpoints: &[Checkpoint]) -> Result<(), StoreError> {
    let mut st = c.prepare_cached(
        "INSERT INTO audit_records (seq, id, ts, method, server, tool, principal, decision, status, record, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for r in records {
        let c = &r.columns;
        st.execute(params![
            seq_i64(r.seq),
            c.id,
            c.ts,
            c.method,
            c.server,
            c.tool,
            c.principal,
            c.decision,
            c.status,
            r.text,
            &r.hash[..]
        ])?;
    }
    if checkpoints.is_empty() {
        return Ok(());
    }
    let mut st = c.prepare_cached(
        "INSERT INTO audit_checkpoints (seq, hash, time, prev_signature, signature, public_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for cp in checkpoints {
        st.execute(params![seq_i64(cp.seq), &cp.hash[..], cp.time, cp.prev_signature, cp.signature, &cp.key[..]])?;
    }
    Ok(())
}

/// Runs a statement without parameters or rows, prepared once and kept: `execute_batch` would
/// parse the SQL each time.
fn run_cached(c: &Connection, sql: &str) -> rusqlite::Result<()> {
    c.prepare_cached(sql)?.execute([]).map(drop)
}

/// Whether `e` is another connection holding the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::DatabaseBusy)
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS audit_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )?;
    let current: Option<i32> = tx.query_row("SELECT max(version) FROM audit_migrations", [], |r| r.get(0))?;
    let current = current.unwrap_or(0);
    let known = MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0);
    if current > known {
        return Err(StoreError::new(format!(
            "the audit database has schema version {current}, newer than this Portico knows ({known}): upgrade Portico"
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.execute_batch(m.sqlite)?;
        tx.execute(
            "INSERT INTO audit_migrations (version, applied_at) VALUES (?1, ?2)",
            params![m.version, time::format_micros(time::now_micros())],
        )?;
    }
    tx.commit()?;
    Ok(())
}

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<StoredRecord> {
    let hash: Vec<u8> = row.get(10)?;
    Ok(StoredRecord {
        seq: seq_u64(row.get(0)?),
        columns: Columns {
            id: row.get(1)?,
            ts: row.get(2)?,
            method: row.get(3)?,
            server: row.get(4)?,
            tool: row.get(5)?,
            principal: row.get(6)?,
            decision: row.get(7)?,
            status: row.get(8)?,
        },
        text: row.get(9)?,
        hash: hash32(&hash),
    })
}

fn checkpoint_from_row(row: &Row<'_>) -> rusqlite::Result<Checkpoint> {
    let hash: Vec<u8> = row.get(1)?;
    let key: Vec<u8> = row.get(5)?;
    Ok(Checkpoint {
        seq: seq_u64(row.get(0)?),
        hash: hash32(&hash),
        time: row.get(2)?,
        prev_signature: row.get(3)?,
        signature: row.get(4)?,
        key: hash32(&key),
    })
}

const CHECKPOINT_COLUMNS: &str = "seq, hash, time, prev_signature, signature, public_key";

/// Runs `f` on `conn` on the blocking pool.
fn blocking<T: Send + 'static>(
    conn: &Arc<Mutex<Connection>>,
    f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
) -> BoxFuture<'static, Result<T, StoreError>> {
    let conn = conn.clone();
    Box::pin(async move {
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|_| StoreError::new("the SQLite connection's lock is poisoned"))?;
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::new(format!("the SQLite task failed: {e}")))?
    })
}

fn to_sql(args: Vec<Arg>) -> Vec<rusqlite::types::Value> {
    args.into_iter()
        .map(|a| match a {
            Arg::Int(n) => rusqlite::types::Value::Integer(n),
            Arg::Text(s) => rusqlite::types::Value::Text(s),
        })
        .collect()
}

impl SqliteStore {
    /// Opens (with `create`, makes) the log at `path` and brings its schema up to date.
    pub fn open(path: &Path, create: bool) -> Result<SqliteStore, StoreError> {
        if !create && !path.exists() {
            return Err(StoreError::new(format!("there is no activity log at {}", path.display())));
        }
        let mut write = connect(path, create, Role::Write)?;
        migrate(&mut write)?;
        let wal = Arc::new(wal::Wal::new(path.to_path_buf(), &mut write)?);
        let read = connect(path, false, Role::Read)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            write: Arc::new(Mutex::new(write)),
            read: Arc::new(Mutex::new(read)),
            wal,
        })
    }
}

impl Store for SqliteStore {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        blocking(&self.write, |c| {
            c.query_row("SELECT count(*) FROM audit_migrations", [], |_| Ok(()))?;
            Ok(())
        })
    }

    fn write(
        &self,
        records: Arc<Vec<StoredRecord>>,
        checkpoints: Vec<Checkpoint>,
        pace: Pace,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let wal = self.wal.clone();
        blocking(&self.write, move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            insert(&tx, &records, &checkpoints)?;
            tx.commit()?;
            wal.after_commit(c, pace);
            Ok(())
        })
    }

    fn write_now(
        &self,
        records: &[StoredRecord],
        checkpoints: &[Checkpoint],
        pace: Pace,
    ) -> Option<Result<(), StoreError>> {
        if records.len() > WRITE_NOW_MAX || !self.wal.commit_now_ok(pace) {
            return None;
        }
        // In use on the blocking pool (a read of the health check, a prune): that path waits.
        let c = self.write.try_lock().ok()?;
        // Another process holding the file's lock is waited for on the blocking pool, never
        // here: no wait at all for the lock on this thread.
        c.busy_timeout(Duration::ZERO).ok()?;
        let begun = run_cached(&c, "BEGIN IMMEDIATE");
        if let Err(e) = c.busy_timeout(BUSY_TIMEOUT) {
            if begun.is_ok() {
                let _ = c.execute_batch("ROLLBACK");
            }
            return Some(Err(e.into()));
        }
        match begun {
            Err(e) if is_busy(&e) => return None,
            Err(e) => return Some(Err(e.into())),
            Ok(()) => {}
        }
        let done = insert(&c, records, checkpoints).and_then(|()| Ok(run_cached(&c, "COMMIT")?));
        if done.is_err() && !c.is_autocommit() {
            let _ = c.execute_batch("ROLLBACK");
        }
        Some(done)
    }

    fn head(&self) -> BoxFuture<'_, Result<Option<super::Head>, StoreError>> {
        blocking(&self.read, |c| {
            Ok(c.query_row("SELECT seq, hash FROM audit_records ORDER BY seq DESC LIMIT 1", [], |r| {
                let hash: Vec<u8> = r.get(1)?;
                Ok((seq_u64(r.get(0)?), hash32(&hash)))
            })
            .optional()?)
        })
    }

    fn checkpoints(&self) -> BoxFuture<'_, Result<Vec<Checkpoint>, StoreError>> {
        blocking(&self.read, |c| {
            let mut st = c.prepare(&format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq"))?;
            let rows = st.query_map([], checkpoint_from_row)?.collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn last_checkpoint(&self) -> BoxFuture<'_, Result<Option<Checkpoint>, StoreError>> {
        blocking(&self.read, |c| {
            Ok(c.query_row(
                &format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq DESC LIMIT 1"),
                [],
                checkpoint_from_row,
            )
            .optional()?)
        })
    }

    fn select(&self, select: Select) -> BoxFuture<'_, Result<Vec<StoredRecord>, StoreError>> {
        blocking(&self.read, move |c| {
            let (tail, args) = select.render(|i| format!("?{i}"));
            let mut st = c.prepare_cached(&format!("SELECT {COLUMNS} FROM audit_records{tail}"))?;
            let rows = st.query_map(params_from_iter(to_sql(args)), record_from_row)?.collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn get(&self, lookup: Lookup) -> BoxFuture<'_, Result<Option<StoredRecord>, StoreError>> {
        blocking(&self.read, move |c| {
            let row = match lookup {
                Lookup::Id(id) => c
                    .query_row(&format!("SELECT {COLUMNS} FROM audit_records WHERE id = ?1"), [id], record_from_row)
                    .optional()?,
                Lookup::Seq(seq) => c
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM audit_records WHERE seq = ?1"),
                        [seq_i64(seq)],
                        record_from_row,
                    )
                    .optional()?,
            };
            Ok(row)
        })
    }

    fn stats(&self, bytes: bool) -> BoxFuture<'_, Result<Stats, StoreError>> {
        blocking(&self.read, move |c| {
            let (count, first, last): (i64, Option<i64>, Option<i64>) =
                c.query_row("SELECT count(*), min(seq), max(seq) FROM audit_records", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
            let total: i64 = if bytes {
                c.query_row("SELECT coalesce(sum(length(CAST(record AS BLOB))), 0) FROM audit_records", [], |r| {
                    r.get(0)
                })?
            } else {
                0
            };
            Ok(Stats {
                count: seq_u64(count),
                first: first.map(seq_u64),
                last: last.map(seq_u64),
                bytes: seq_u64(total),
            })
        })
    }

    fn first_seq_since(&self, ts: i64) -> BoxFuture<'_, Result<Option<u64>, StoreError>> {
        blocking(&self.read, move |c| {
            let seq: Option<i64> =
                c.query_row("SELECT min(seq) FROM audit_records WHERE ts >= ?1", [ts], |r| r.get(0))?;
            Ok(seq.map(seq_u64))
        })
    }

    fn sizes(&self, after: u64, limit: usize) -> BoxFuture<'_, Result<Vec<(u64, u64)>, StoreError>> {
        blocking(&self.read, move |c| {
            let mut st = c.prepare_cached(
                "SELECT seq, length(CAST(record AS BLOB)) FROM audit_records WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = st
                .query_map(params![seq_i64(after), i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                    Ok((seq_u64(r.get(0)?), seq_u64(r.get(1)?)))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn prune(&self, through: u64, statement: PruneStatement) -> BoxFuture<'_, Result<u64, StoreError>> {
        blocking(&self.write, move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute("DELETE FROM audit_records WHERE seq <= ?1", [seq_i64(through)])?;
            tx.execute("DELETE FROM audit_checkpoints WHERE seq < ?1", [seq_i64(through)])?;
            tx.execute("DELETE FROM audit_pruned WHERE through < ?1", [seq_i64(through)])?;
            tx.execute(
                "INSERT INTO audit_pruned (through, hash, time, signature, public_key) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    seq_i64(statement.through),
                    &statement.hash[..],
                    statement.time,
                    statement.signature,
                    &statement.key[..]
                ],
            )?;
            tx.commit()?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn pruned(&self) -> BoxFuture<'_, Result<Option<PruneStatement>, StoreError>> {
        blocking(&self.read, |c| {
            Ok(c.query_row(
                "SELECT through, hash, time, signature, public_key FROM audit_pruned ORDER BY through DESC LIMIT 1",
                [],
                |r| {
                    let hash: Vec<u8> = r.get(1)?;
                    let key: Vec<u8> = r.get(4)?;
                    Ok(PruneStatement {
                        through: seq_u64(r.get(0)?),
                        hash: hash32(&hash),
                        time: r.get(2)?,
                        signature: r.get(3)?,
                        key: hash32(&key),
                    })
                },
            )
            .optional()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most lookaside slots `conn` has had in use at once.
    #[allow(unsafe_code)]
    fn lookaside_high_water(conn: &Connection) -> std::ffi::c_int {
        let (mut current, mut high) = (0, 0);
        // SAFETY: the handle is this open connection's; the out pointers are live locals.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_LOOKASIDE_USED,
                &mut current,
                &mut high,
                0,
            )
        };
        assert_eq!(rc, rusqlite::ffi::SQLITE_OK);
        high
    }

    #[test]
    fn the_reading_connection_runs_without_lookaside_and_the_writing_one_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("audit.db"), true).expect("open");
        for conn in [&store.write, &store.read] {
            let c = conn.lock().expect("lock");
            let n: i64 = c.query_row("SELECT count(*) FROM audit_records", [], |r| r.get(0)).expect("query");
            assert_eq!(n, 0);
        }
        assert!(lookaside_high_water(&store.write.lock().expect("lock")) > 0, "the writer keeps lookaside");
        assert_eq!(lookaside_high_water(&store.read.lock().expect("lock")), 0, "the reader has none");
    }
}

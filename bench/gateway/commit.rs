//! The floor of a log that records each call before answering it: one SQLite transaction of one
//! record, committed, with nothing else around it.
//!
//! `bench-gateway commit [--commits N] [--bytes B] [DIR]` (and each stdio table with the log on)
//! writes N records, one transaction each, into a fresh activity log's database (made by
//! `portico_host::audit::AuditLog::open`, so its schema is the log's own; then WAL,
//! `synchronous = NORMAL`, the log's cache and checkpoint settings) and reports the p50 and p99
//! of a commit. A gateway whose calls wait for their
//! record's commit (`[audit] wait = "written"`, the default) adds at least that p50 at one call
//! in flight, whatever else it does.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior, params};

/// The record text of a gateway echo call as the log keeps it (678 bytes, measured on a
/// `BENCH_GATEWAY_KEEP=1` run's log).
pub const ECHO_RECORD_BYTES: usize = 678;

/// What N commits took.
pub struct Floor {
    pub commits: usize,
    pub p50: Duration,
    pub p99: Duration,
}

/// Commits `commits` records of `bytes` of text, one transaction each, into a new log's
/// database in `dir` (removed afterwards); checks that every one is there.
pub async fn measure(dir: &Path, commits: usize, bytes: usize) -> Result<Floor, String> {
    let state = dir.join("commit-floor");
    let _ = std::fs::remove_dir_all(&state);
    let floor = measure_in(&state, commits, bytes).await;
    let _ = std::fs::remove_dir_all(&state);
    floor
}

async fn measure_in(state: &Path, commits: usize, bytes: usize) -> Result<Floor, String> {
    let mut log = Log::open(state, bytes).await?;
    let mut took = Vec::with_capacity(commits);
    for _ in 0..commits {
        let start = Instant::now();
        log.commit()?;
        took.push(start.elapsed());
    }
    log.check(commits)?;
    drop(log);
    took.sort_unstable();
    let at = |q: f64| took.get(((took.len() as f64 * q) as usize).min(took.len().saturating_sub(1))).copied();
    Ok(Floor { commits, p50: at(0.50).unwrap_or_default(), p99: at(0.99).unwrap_or_default() })
}

/// A new activity log's database, written bare: one record per [`commit`](Log::commit), one
/// transaction each.
pub struct Log {
    c: Connection,
    path: std::path::PathBuf,
    text: String,
    seq: u64,
}

impl Log {
    /// Makes a log in `state` (a directory, made if missing) with its own schema (by
    /// `portico_host::audit::AuditLog::open`), closes it and opens its database bare: WAL,
    /// `synchronous = NORMAL`, the log's cache size, SQLite's checkpoint on commit.
    pub async fn open(state: &Path, bytes: usize) -> Result<Log, String> {
        std::fs::create_dir_all(state).map_err(|e| format!("{}: {e}", state.display()))?;
        let log = portico_host::audit::AuditLog::open(&portico_host::audit::RawAudit::default(), state)
            .await
            .map_err(|e| format!("opening a log in {}: {e}", state.display()))?;
        log.close().await.map_err(|e| format!("closing the log: {e}"))?;
        let path = state.join("audit.db");
        let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
        let c = Connection::open(&path).map_err(err)?;
        c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)).map_err(err)?;
        c.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
        c.pragma_update(None, "cache_size", -32_768).map_err(err)?;
        c.pragma_update(None, "wal_autocheckpoint", 8192).map_err(err)?;
        Ok(Log { c, path, text: "x".repeat(bytes), seq: 0 })
    }

    /// Commits the next record alone.
    pub fn commit(&mut self) -> Result<(), String> {
        let path = &self.path;
        let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
        self.seq += 1;
        let seq = self.seq;
        // Ids and times that grow as the log's do (ULIDs; microseconds since the epoch).
        let id = format!("01JD{seq:022}");
        let ts = 1_795_000_000_000_000_i64 + i64::try_from(seq).unwrap_or(0) * 50;
        let hash = [7u8; 32];
        let tx = self.c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
        tx.prepare_cached(
            "INSERT INTO audit_records (seq, id, ts, method, server, tool, principal, decision, status, record, hash)
             VALUES (?1, ?2, ?3, 'tools/call', 'bench', 'echo', 'local', 'allow', 'ok', ?4, ?5)",
        )
        .and_then(|mut st| st.execute(params![i64::try_from(seq).unwrap_or(i64::MAX), id, ts, self.text, &hash[..]]))
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Checks that the log holds `commits` records.
    pub fn check(&self, commits: usize) -> Result<(), String> {
        let stored: i64 = self
            .c
            .query_row("SELECT count(*) FROM audit_records", [], |r| r.get(0))
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if usize::try_from(stored).ok() != Some(commits) {
            return Err(format!("{stored} records stored of {commits} committed"));
        }
        Ok(())
    }
}

/// `bench-gateway commit [--commits N] [--bytes B] [DIR]`.
pub fn main(mut args: impl Iterator<Item = String>) -> std::process::ExitCode {
    let (mut commits, mut bytes, mut dir) = (5_000usize, ECHO_RECORD_BYTES, None);
    while let Some(a) = args.next() {
        let number = |v: Option<String>| v.and_then(|n| n.parse::<usize>().ok()).filter(|&n| n > 0);
        match a.as_str() {
            "--commits" => match number(args.next()) {
                Some(n) => commits = n,
                None => return usage(),
            },
            "--bytes" => match number(args.next()) {
                Some(n) => bytes = n,
                None => return usage(),
            },
            _ if dir.is_none() && !a.starts_with('-') => dir = Some(std::path::PathBuf::from(a)),
            _ => return usage(),
        }
    }
    let dir = dir.unwrap_or_else(std::env::temp_dir);
    super::subcommand("commit", async move {
        let f = measure(&dir, commits, bytes).await?;
        println!("{}", line(&f, bytes));
        Ok::<(), String>(())
    })
}

fn usage() -> std::process::ExitCode {
    eprintln!("usage: bench-gateway commit [--commits N] [--bytes B] [DIR]");
    std::process::ExitCode::from(64)
}

/// The floor as one line of the report.
pub fn line(f: &Floor, bytes: usize) -> String {
    format!(
        "floor: one record of {bytes} bytes committed alone (the log's table and indexes, WAL, synchronous = NORMAL), {} commits: p50 {:.1} µs, p99 {:.1} µs",
        f.commits,
        f.p50.as_secs_f64() * 1e6,
        f.p99.as_secs_f64() * 1e6
    )
}

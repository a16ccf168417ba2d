//! Where records are kept: SQLite ([`sqlite`]) or Postgres ([`postgres`]) behind one trait,
//! [`Store`], with one schema and one list of migrations ([`MIGRATIONS`]) for both.
//!
//! Each record is a row: its canonical JSON exactly as hashed (`record`), its hash, and a few
//! columns copied out of the JSON for queries (`verify` checks they still agree).

pub(crate) mod postgres;
pub(crate) mod sqlite;

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::chain::{Checkpoint, PruneStatement};
use super::record::Columns;

/// A record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRecord {
    pub seq: u64,
    pub columns: Columns,
    /// The canonical JSON, as hashed.
    pub text: String,
    pub hash: [u8; 32],
}

/// A store's failure, as text for the person (never a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreError {
    pub message: String,
    /// Another writer holds the log.
    pub locked: bool,
}

impl StoreError {
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError { message: message.into(), locked: false }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One condition of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cond {
    /// `column = text`.
    Eq(&'static str, String),
    /// `column >= n`.
    Ge(&'static str, i64),
    /// `column < n`.
    Lt(&'static str, i64),
    /// `column > n`.
    Gt(&'static str, i64),
    /// `status IN ('error', 'timeout')`.
    Errors,
}

/// The order of a query's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Latest start first (then latest `seq`): the last N of a window.
    NewestFirst,
    /// By `seq`: the log's own order.
    SeqAsc,
}

/// A query: conditions, order, at most `limit` rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Select {
    pub conds: Vec<Cond>,
    pub order: Order,
    pub limit: usize,
}

/// A query's parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
}

impl Select {
    /// Records after `seq`, in order.
    pub fn after(seq: u64, limit: usize) -> Select {
        Select { conds: vec![Cond::Gt("seq", seq_i64(seq))], order: Order::SeqAsc, limit }
    }

    /// `WHERE … ORDER BY … LIMIT n` with the backend's placeholders, and the parameters.
    pub fn render(&self, placeholder: impl Fn(usize) -> String) -> (String, Vec<Arg>) {
        let mut args = Vec::new();
        let mut parts = Vec::new();
        let arg = |a: Arg, args: &mut Vec<Arg>| {
            args.push(a);
            placeholder(args.len())
        };
        for c in &self.conds {
            parts.push(match c {
                Cond::Eq(col, v) => format!("{col} = {}", arg(Arg::Text(v.clone()), &mut args)),
                Cond::Ge(col, n) => format!("{col} >= {}", arg(Arg::Int(*n), &mut args)),
                Cond::Lt(col, n) => format!("{col} < {}", arg(Arg::Int(*n), &mut args)),
                Cond::Gt(col, n) => format!("{col} > {}", arg(Arg::Int(*n), &mut args)),
                Cond::Errors => "status IN ('error', 'timeout')".to_owned(),
            });
        }
        let mut sql = String::new();
        if !parts.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&parts.join(" AND "));
        }
        sql.push_str(match self.order {
            Order::NewestFirst => " ORDER BY ts DESC, seq DESC",
            Order::SeqAsc => " ORDER BY seq ASC",
        });
        sql.push_str(&format!(" LIMIT {}", self.limit));
        (sql, args)
    }
}

/// How many records, which seqs, and (when asked) how many bytes of JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub count: u64,
    pub first: Option<u64>,
    pub last: Option<u64>,
    pub bytes: u64,
}

/// The last record's `seq` and hash.
pub(crate) type Head = (u64, [u8; 32]);

/// A record by its ULID or its `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    Id(String),
    Seq(u64),
}

/// The columns every query reads, in this order.
pub(crate) const COLUMNS: &str = "seq, id, ts, method, server, tool, principal, decision, status, record, hash";

/// A `seq` as the databases keep it.
pub(crate) fn seq_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// A stored `seq` (never negative in a log Portico wrote).
pub(crate) fn seq_u64(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// 32 bytes of a stored hash; a wrong length (someone edited it) gives all ones, which no
/// chain produces in practice, so `verify` reports it.
pub(crate) fn hash32(bytes: &[u8]) -> [u8; 32] {
    bytes.try_into().unwrap_or([0xff; 32])
}

/// How the calls behind a write come: the store paces its upkeep (SQLite's WAL checkpoints) by
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pace {
    /// The record of the only call in progress, written as it comes: a pause for upkeep here
    /// holds that one call, and no other.
    Alone,
    /// A batch, or records of calls made at once: a pause holds them all.
    Together,
}

/// A store of records and checkpoints.
pub(crate) trait Store: Send + Sync + 'static {
    /// For messages: the file, or the URL without its password.
    fn describe(&self) -> String;
    /// Reaches the store (connecting again if need be).
    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Appends records (in order, after the last) and checkpoints, in one transaction.
    fn write(
        &self,
        records: Arc<Vec<StoredRecord>>,
        checkpoints: Vec<Checkpoint>,
        pace: Pace,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Does what [`Store::write`] does, at once on the calling thread, when that is quick and
    /// cannot wait (a few records, the connection free, no checkpoint of the WAL due); `None`
    /// when the records must go through [`Store::write`]. This spares a small batch the trips
    /// to a blocking thread and back, which cost more than its commit.
    fn write_now(
        &self,
        _records: &[StoredRecord],
        _checkpoints: &[Checkpoint],
        _pace: Pace,
    ) -> Option<Result<(), StoreError>> {
        None
    }
    /// The last record's `seq` and hash.
    fn head(&self) -> BoxFuture<'_, Result<Option<Head>, StoreError>>;
    /// Every checkpoint, by `seq`.
    fn checkpoints(&self) -> BoxFuture<'_, Result<Vec<Checkpoint>, StoreError>>;
    /// The last checkpoint.
    fn last_checkpoint(&self) -> BoxFuture<'_, Result<Option<Checkpoint>, StoreError>>;
    /// Records matching a query.
    fn select(&self, select: Select) -> BoxFuture<'_, Result<Vec<StoredRecord>, StoreError>>;
    /// One record.
    fn get(&self, lookup: Lookup) -> BoxFuture<'_, Result<Option<StoredRecord>, StoreError>>;
    /// Counts; bytes too when `bytes` (a full scan).
    fn stats(&self, bytes: bool) -> BoxFuture<'_, Result<Stats, StoreError>>;
    /// The lowest `seq` of a record that started at or after `ts`.
    fn first_seq_since(&self, ts: i64) -> BoxFuture<'_, Result<Option<u64>, StoreError>>;
    /// `(seq, bytes of JSON)` of up to `limit` records after `seq`.
    fn sizes(&self, after: u64, limit: usize) -> BoxFuture<'_, Result<Vec<(u64, u64)>, StoreError>>;
    /// Removes the records up to `through` and the checkpoints before it, and keeps the
    /// statement that says so (in place of older ones), in one transaction.
    fn prune(&self, through: u64, statement: PruneStatement) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// The latest statement of records removed on purpose.
    fn pruned(&self) -> BoxFuture<'_, Result<Option<PruneStatement>, StoreError>>;
}

/// One step of the schema, for both databases.
pub(crate) struct Migration {
    pub version: i32,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// The schema, oldest first. Applied in a transaction each, recorded in `audit_migrations`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sqlite: "
        CREATE TABLE audit_records (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            ts INTEGER NOT NULL,
            method TEXT NOT NULL,
            server TEXT,
            tool TEXT,
            principal TEXT,
            decision TEXT,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            hash BLOB NOT NULL
        );
        CREATE UNIQUE INDEX audit_records_id ON audit_records (id);
        CREATE INDEX audit_records_ts ON audit_records (ts);
        CREATE INDEX audit_records_tool_ts ON audit_records (tool, ts);
        CREATE INDEX audit_records_server_ts ON audit_records (server, ts);
        CREATE TABLE audit_checkpoints (
            seq INTEGER PRIMARY KEY,
            hash BLOB NOT NULL,
            time TEXT NOT NULL,
            prev_signature BLOB,
            signature BLOB NOT NULL,
            public_key BLOB NOT NULL
        );",
        postgres: "
        CREATE TABLE audit_records (
            seq BIGINT PRIMARY KEY,
            id TEXT NOT NULL,
            ts BIGINT NOT NULL,
            method TEXT NOT NULL,
            server TEXT,
            tool TEXT,
            principal TEXT,
            decision TEXT,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            hash BYTEA NOT NULL
        );
        CREATE UNIQUE INDEX audit_records_id ON audit_records (id);
        CREATE INDEX audit_records_ts ON audit_records (ts, seq);
        CREATE INDEX audit_records_tool_ts ON audit_records (tool, ts, seq);
        CREATE INDEX audit_records_server_ts ON audit_records (server, ts, seq);
        CREATE TABLE audit_checkpoints (
            seq BIGINT PRIMARY KEY,
            hash BYTEA NOT NULL,
            time TEXT NOT NULL,
            prev_signature BYTEA,
            signature BYTEA NOT NULL,
            public_key BYTEA NOT NULL
        );",
    },
    Migration {
        version: 2,
        sqlite: "
        CREATE TABLE audit_pruned (
            through INTEGER PRIMARY KEY,
            hash BLOB NOT NULL,
            time TEXT NOT NULL,
            signature BLOB NOT NULL,
            public_key BLOB NOT NULL
        );",
        postgres: "
        CREATE TABLE audit_pruned (
            through BIGINT PRIMARY KEY,
            hash BYTEA NOT NULL,
            time TEXT NOT NULL,
            signature BYTEA NOT NULL,
            public_key BYTEA NOT NULL
        );",
    },
    // A record's ULID carries its `seq` (`chain::ulid`), so it is found by the primary key:
    // one index fewer to update with every insert (older ids are found by a scan).
    Migration {
        version: 3,
        sqlite: "DROP INDEX IF EXISTS audit_records_id;",
        postgres: "DROP INDEX IF EXISTS audit_records_id;",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_queries_with_placeholders() {
        let s = Select {
            conds: vec![Cond::Eq("tool", "a".into()), Cond::Ge("ts", 5), Cond::Errors],
            order: Order::NewestFirst,
            limit: 10,
        };
        let (sql, args) = s.render(|i| format!("${i}"));
        assert_eq!(
            sql,
            " WHERE tool = $1 AND ts >= $2 AND status IN ('error', 'timeout') ORDER BY ts DESC, seq DESC LIMIT 10"
        );
        assert_eq!(args, vec![Arg::Text("a".into()), Arg::Int(5)]);
    }
}

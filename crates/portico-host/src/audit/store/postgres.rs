//! The Postgres store, through `tokio-postgres`: one connection for writing (which holds a
//! session advisory lock, so one Portico writes a log at a time) and one for reading, each
//! connected again after it drops. Without TLS: use a local or tunnelled server.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::config::Host;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row};

use super::{
    Arg, COLUMNS, Lookup, MIGRATIONS, Pace, Select, Stats, Store, StoreError, StoredRecord, hash32, seq_i64, seq_u64,
};
use crate::audit::chain::{Checkpoint, PruneStatement};
use crate::audit::record::Columns;
use crate::audit::time;

/// The advisory lock of the writer (`"portico"` in ASCII) and of migrations.
const LOCK_KEY: i64 = 0x0070_6f72_7469_636f;
const MIGRATE_KEY: i64 = LOCK_KEY + 1;

/// Told why the writer's connection ended.
pub(crate) type OnDown = Arc<dyn Fn(String) + Send + Sync>;

/// The error with its causes, as one line.
fn pg_error(context: &str, e: &tokio_postgres::Error) -> StoreError {
    let mut s = format!("{context}: {e}");
    if let Some(db) = e.as_db_error() {
        s = format!("{context}: {}: {}", db.severity(), db.message());
    } else {
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            s.push_str(&format!(": {cause}"));
            source = cause.source();
        }
    }
    StoreError::new(s)
}

/// Records in a Postgres database.
pub(crate) struct PostgresStore {
    config: Config,
    described: String,
    writer: bool,
    on_down: OnDown,
    write: Mutex<Option<Client>>,
    read: Mutex<Option<Client>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("url", &self.described).finish_non_exhaustive()
    }
}

fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or(config.get_user().unwrap_or(""))
    )
}

fn record_from_row(row: &Row) -> Result<StoredRecord, tokio_postgres::Error> {
    let hash: Vec<u8> = row.try_get(10)?;
    Ok(StoredRecord {
        seq: seq_u64(row.try_get(0)?),
        columns: Columns {
            id: row.try_get(1)?,
            ts: row.try_get(2)?,
            method: row.try_get(3)?,
            server: row.try_get(4)?,
            tool: row.try_get(5)?,
            principal: row.try_get(6)?,
            decision: row.try_get(7)?,
            status: row.try_get(8)?,
        },
        text: row.try_get(9)?,
        hash: hash32(&hash),
    })
}

fn checkpoint_from_row(row: &Row) -> Result<Checkpoint, tokio_postgres::Error> {
    let hash: Vec<u8> = row.try_get(1)?;
    let key: Vec<u8> = row.try_get(5)?;
    Ok(Checkpoint {
        seq: seq_u64(row.try_get(0)?),
        hash: hash32(&hash),
        time: row.try_get(2)?,
        prev_signature: row.try_get(3)?,
        signature: row.try_get(4)?,
        key: hash32(&key),
    })
}

const CHECKPOINT_COLUMNS: &str = "seq, hash, time, prev_signature, signature, public_key";

async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let e = |e: tokio_postgres::Error| pg_error("migrating the audit schema", &e);
    let tx = client.transaction().await.map_err(e)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_KEY]).await.map_err(e)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS audit_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .await
    .map_err(e)?;
    let current: Option<i32> =
        tx.query_one("SELECT max(version) FROM audit_migrations", &[]).await.map_err(e)?.try_get(0).map_err(e)?;
    let current = current.unwrap_or(0);
    let known = MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0);
    if current > known {
        return Err(StoreError::new(format!(
            "the audit database has schema version {current}, newer than this Portico knows ({known}): upgrade Portico"
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(m.postgres).await.map_err(e)?;
        tx.execute(
            "INSERT INTO audit_migrations (version, applied_at) VALUES ($1, $2)",
            &[&m.version, &time::format_micros(time::now_micros())],
        )
        .await
        .map_err(e)?;
    }
    tx.commit().await.map_err(e)
}

fn params(args: &[Arg]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter()
        .map(|a| match a {
            Arg::Int(n) => n as &(dyn ToSql + Sync),
            Arg::Text(s) => s as &(dyn ToSql + Sync),
        })
        .collect()
}

impl PostgresStore {
    /// Connects to the log at `url` (a writer takes the log's lock) and brings its schema up to
    /// date. `on_down` hears when the writer's connection ends.
    pub async fn open(url: &str, writer: bool, on_down: OnDown) -> Result<PostgresStore, StoreError> {
        let mut config: Config =
            url.parse().map_err(|e| StoreError::new(format!("audit.url is not a Postgres URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        config.application_name("portico-audit");
        let store = PostgresStore {
            described: describe(&config),
            config,
            writer,
            on_down,
            write: Mutex::new(None),
            read: Mutex::new(None),
        };
        let slot = if writer { &store.write } else { &store.read };
        drop(store.client(slot, writer).await?);
        Ok(store)
    }

    async fn connect(&self, writing: bool) -> Result<Client, StoreError> {
        let (mut client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|e| pg_error(&format!("cannot connect to {}", self.described), &e))?;
        let on_down = writing.then(|| self.on_down.clone());
        tokio::spawn(async move {
            let why = match connection.await {
                Ok(()) => "the connection to Postgres closed".to_owned(),
                Err(e) => pg_error("the connection to Postgres failed", &e).message,
            };
            if let Some(on_down) = on_down {
                on_down(why);
            }
        });
        migrate(&mut client).await?;
        if writing {
            let locked: bool = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&LOCK_KEY])
                .await
                .and_then(|r| r.try_get(0))
                .map_err(|e| pg_error("taking the audit log's lock", &e))?;
            if !locked {
                return Err(StoreError {
                    message: format!("another Portico is writing the activity log at {}", self.described),
                    locked: true,
                });
            }
        }
        Ok(client)
    }

    /// The connection in `slot`, connected (again) if need be.
    async fn client<'a>(
        &'a self,
        slot: &'a Mutex<Option<Client>>,
        writing: bool,
    ) -> Result<MutexGuard<'a, Option<Client>>, StoreError> {
        let mut guard = slot.lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = None;
            *guard = Some(self.connect(writing).await?);
        }
        Ok(guard)
    }

    async fn reader(&self) -> Result<MutexGuard<'_, Option<Client>>, StoreError> {
        self.client(&self.read, false).await
    }

    async fn writer(&self) -> Result<MutexGuard<'_, Option<Client>>, StoreError> {
        self.client(&self.write, self.writer).await
    }

    async fn query(&self, sql: &str, args: &[Arg]) -> Result<Vec<Row>, StoreError> {
        let guard = self.reader().await?;
        let client = guard.as_ref().ok_or_else(|| StoreError::new("not connected"))?;
        client.query(sql, &params(args)).await.map_err(|e| pg_error("reading the activity log", &e))
    }
}

impl Store for PostgresStore {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let guard = if self.writer { self.writer().await? } else { self.reader().await? };
            let client = guard.as_ref().ok_or_else(|| StoreError::new("not connected"))?;
            client.simple_query("SELECT 1").await.map_err(|e| pg_error("checking Postgres", &e))?;
            Ok(())
        })
    }

    fn write(
        &self,
        records: Arc<Vec<StoredRecord>>,
        checkpoints: Vec<Checkpoint>,
        _pace: Pace,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let e = |e: tokio_postgres::Error| pg_error("writing the activity log", &e);
            let mut guard = self.writer().await?;
            let client = guard.as_mut().ok_or_else(|| StoreError::new("not connected"))?;
            let tx = client.transaction().await.map_err(e)?;
            if !records.is_empty() {
                let seqs: Vec<i64> = records.iter().map(|r| seq_i64(r.seq)).collect();
                let ids: Vec<&str> = records.iter().map(|r| r.columns.id.as_str()).collect();
                let ts: Vec<i64> = records.iter().map(|r| r.columns.ts).collect();
                let methods: Vec<&str> = records.iter().map(|r| r.columns.method.as_str()).collect();
                let servers: Vec<Option<&str>> = records.iter().map(|r| r.columns.server.as_deref()).collect();
                let tools: Vec<Option<&str>> = records.iter().map(|r| r.columns.tool.as_deref()).collect();
                let principals: Vec<Option<&str>> = records.iter().map(|r| r.columns.principal.as_deref()).collect();
                let decisions: Vec<Option<&str>> = records.iter().map(|r| r.columns.decision.as_deref()).collect();
                let statuses: Vec<&str> = records.iter().map(|r| r.columns.status.as_str()).collect();
                let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
                let hashes: Vec<&[u8]> = records.iter().map(|r| &r.hash[..]).collect();
                tx.execute(
                    "INSERT INTO audit_records (seq, id, ts, method, server, tool, principal, decision, status, record, hash)
                     SELECT * FROM UNNEST($1::int8[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[],
                                          $7::text[], $8::text[], $9::text[], $10::text[], $11::bytea[])",
                    &[&seqs, &ids, &ts, &methods, &servers, &tools, &principals, &decisions, &statuses, &texts, &hashes],
                )
                .await
                .map_err(e)?;
            }
            for cp in &checkpoints {
                tx.execute(
                    "INSERT INTO audit_checkpoints (seq, hash, time, prev_signature, signature, public_key)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[&seq_i64(cp.seq), &&cp.hash[..], &cp.time, &cp.prev_signature, &cp.signature, &&cp.key[..]],
                )
                .await
                .map_err(e)?;
            }
            tx.commit().await.map_err(e)
        })
    }

    fn head(&self) -> BoxFuture<'_, Result<Option<super::Head>, StoreError>> {
        Box::pin(async move {
            let rows = self.query("SELECT seq, hash FROM audit_records ORDER BY seq DESC LIMIT 1", &[]).await?;
            rows.first()
                .map(|r| {
                    let hash: Vec<u8> = r.try_get(1)?;
                    Ok((seq_u64(r.try_get(0)?), hash32(&hash)))
                })
                .transpose()
                .map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn checkpoints(&self) -> BoxFuture<'_, Result<Vec<Checkpoint>, StoreError>> {
        Box::pin(async move {
            let rows =
                self.query(&format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq"), &[]).await?;
            rows.iter()
                .map(checkpoint_from_row)
                .collect::<Result<_, _>>()
                .map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn last_checkpoint(&self) -> BoxFuture<'_, Result<Option<Checkpoint>, StoreError>> {
        Box::pin(async move {
            let rows = self
                .query(&format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq DESC LIMIT 1"), &[])
                .await?;
            rows.first().map(checkpoint_from_row).transpose().map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn select(&self, select: Select) -> BoxFuture<'_, Result<Vec<StoredRecord>, StoreError>> {
        Box::pin(async move {
            let (tail, args) = select.render(|i| format!("${i}"));
            let rows = self.query(&format!("SELECT {COLUMNS} FROM audit_records{tail}"), &args).await?;
            rows.iter()
                .map(record_from_row)
                .collect::<Result<_, _>>()
                .map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn get(&self, lookup: Lookup) -> BoxFuture<'_, Result<Option<StoredRecord>, StoreError>> {
        Box::pin(async move {
            let rows = match lookup {
                Lookup::Id(id) => {
                    self.query(&format!("SELECT {COLUMNS} FROM audit_records WHERE id = $1"), &[Arg::Text(id)]).await?
                }
                Lookup::Seq(seq) => {
                    self.query(
                        &format!("SELECT {COLUMNS} FROM audit_records WHERE seq = $1"),
                        &[Arg::Int(seq_i64(seq))],
                    )
                    .await?
                }
            };
            rows.first().map(record_from_row).transpose().map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn stats(&self, bytes: bool) -> BoxFuture<'_, Result<Stats, StoreError>> {
        Box::pin(async move {
            let sql = if bytes {
                "SELECT count(*)::int8, min(seq), max(seq), coalesce(sum(octet_length(record)), 0)::int8 FROM audit_records"
            } else {
                "SELECT count(*)::int8, min(seq), max(seq), 0::int8 FROM audit_records"
            };
            let rows = self.query(sql, &[]).await?;
            let row = rows.first().ok_or_else(|| StoreError::new("no answer"))?;
            let read = || -> Result<Stats, tokio_postgres::Error> {
                let first: Option<i64> = row.try_get(1)?;
                let last: Option<i64> = row.try_get(2)?;
                Ok(Stats {
                    count: seq_u64(row.try_get(0)?),
                    first: first.map(seq_u64),
                    last: last.map(seq_u64),
                    bytes: seq_u64(row.try_get(3)?),
                })
            };
            read().map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn first_seq_since(&self, ts: i64) -> BoxFuture<'_, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            let rows = self.query("SELECT min(seq) FROM audit_records WHERE ts >= $1", &[Arg::Int(ts)]).await?;
            let seq: Option<i64> = match rows.first() {
                Some(r) => r.try_get(0).map_err(|e| pg_error("reading the activity log", &e))?,
                None => None,
            };
            Ok(seq.map(seq_u64))
        })
    }

    fn sizes(&self, after: u64, limit: usize) -> BoxFuture<'_, Result<Vec<(u64, u64)>, StoreError>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT seq, octet_length(record)::int8 FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT $2",
                    &[Arg::Int(seq_i64(after)), Arg::Int(i64::try_from(limit).unwrap_or(i64::MAX))],
                )
                .await?;
            rows.iter()
                .map(|r| Ok((seq_u64(r.try_get(0)?), seq_u64(r.try_get(1)?))))
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| pg_error("reading the activity log", &e))
        })
    }

    fn prune(&self, through: u64, statement: PruneStatement) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let e = |e: tokio_postgres::Error| pg_error("pruning the activity log", &e);
            let mut guard = self.writer().await?;
            let client = guard.as_mut().ok_or_else(|| StoreError::new("not connected"))?;
            let tx = client.transaction().await.map_err(e)?;
            let through = seq_i64(through);
            let n = tx.execute("DELETE FROM audit_records WHERE seq <= $1", &[&through]).await.map_err(e)?;
            tx.execute("DELETE FROM audit_checkpoints WHERE seq < $1", &[&through]).await.map_err(e)?;
            tx.execute("DELETE FROM audit_pruned WHERE through < $1", &[&through]).await.map_err(e)?;
            tx.execute(
                "INSERT INTO audit_pruned (through, hash, time, signature, public_key) VALUES ($1, $2, $3, $4, $5)",
                &[
                    &seq_i64(statement.through),
                    &&statement.hash[..],
                    &statement.time,
                    &statement.signature,
                    &&statement.key[..],
                ],
            )
            .await
            .map_err(e)?;
            tx.commit().await.map_err(e)?;
            Ok(n)
        })
    }

    fn pruned(&self) -> BoxFuture<'_, Result<Option<PruneStatement>, StoreError>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT through, hash, time, signature, public_key FROM audit_pruned ORDER BY through DESC LIMIT 1",
                    &[],
                )
                .await?;
            rows.first()
                .map(|r| {
                    let hash: Vec<u8> = r.try_get(1)?;
                    let key: Vec<u8> = r.try_get(4)?;
                    Ok(PruneStatement {
                        through: seq_u64(r.try_get(0)?),
                        hash: hash32(&hash),
                        time: r.try_get(2)?,
                        signature: r.try_get(3)?,
                        key: hash32(&key),
                    })
                })
                .transpose()
                .map_err(|e| pg_error("reading the activity log", &e))
        })
    }
}

//! The activity log's numbers (not run by `cargo test`: `bench/audit.sh` runs them, in
//! release): appends per second to SQLite with the default redaction, the latency of lone
//! appends, and a query by tool and time window over a million records.
//!
//! The log lives in `PORTICO_BENCH_DIR` (a temp dir under it) or the system temp dir.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use portico_host::audit::{AuditLog, Decision, Entry, Filter, RawAudit};
use serde_json::json;

const TOOLS: usize = 100;
const DAYS: u64 = 30;

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("PORTICO_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    tempfile::tempdir_in(base).unwrap_or_else(|e| panic!("{e}"))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A typical tool call: a few arguments (two of them redacted by default), a short result.
fn entry(i: usize, start: Option<SystemTime>) -> Entry {
    let mut e = Entry::new("tools/call");
    e.start = start;
    e.principal = Some("local".into());
    e.client_name = Some("claude-code".into());
    e.client_version = Some("1.0.0".into());
    e.session = Some("9f1c2e7a-3b0d-4c55-8a2e-6d1f0b9c4e21".into());
    e.protocol_version = Some("2025-06-18".into());
    e.transport = Some("pipe".into());
    e.request_id = Some(i.to_string());
    e.upstream_request_id = Some((i + 7).to_string());
    e.server = Some(format!("server{}", i % 10));
    e.exposed = Some(format!("server{}__tool{}", i % 10, i % TOOLS));
    e.original = Some(format!("tool{}", i % TOOLS));
    e.arguments = Some(json!({
        "query": "SELECT id, name FROM users WHERE created_at > $1 ORDER BY id LIMIT 50",
        "params": ["2026-01-01"],
        "database": "analytics",
        "options": {"timeout_ms": 5000, "api_key": "sk-live-0123456789abcdef"},
        "password": "correct horse battery staple",
    }));
    e.result = Some(json!({
        "content": [{"type": "text", "text": "50 rows: 1 alice, 2 bob, 3 carol, 4 dave, 5 erin, 6 frank, 7 grace, 8 heidi, 9 ivan, 10 judy, …"}],
        "structuredContent": {"rows": 50, "elapsed_ms": 12},
        "isError": false,
    }));
    e.decision = Some(Decision::Allow);
    e.rule = Some("read-only queries".into());
    e.progress_count = Some(0);
    e.request_bytes = Some(312);
    e.response_bytes = Some(420);
    e.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    e
}

/// CPU seconds this process used so far, all threads (from /proc; 100 ticks a second).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Which of the log's indexes a floor keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Indexes {
    /// All of them.
    All,
    /// The index by tool and time alone: what the query target (by tool and time window) needs.
    ToolTime,
    /// None: the table alone.
    None,
}

impl Indexes {
    fn keeps(self, sql: &str) -> bool {
        match self {
            Indexes::All => true,
            Indexes::ToolTime => !sql.contains("INDEX") || sql.contains("audit_records_tool_ts"),
            Indexes::None => !sql.contains("INDEX"),
        }
    }
}

/// SQLite alone, as the floor of the log's cost: the rows the log wrote to `db` (at most `max`),
/// inserted again by bare rusqlite into a fresh file in `scratch` with the same schema (the
/// indexes `indexes` keeps) and the log's settings (WAL, `synchronous = NORMAL`, its cache and
/// checkpoint sizes), `batch` rows per transaction. CPU µs per row (this process does nothing
/// else meanwhile).
fn sqlite_floor(db: &std::path::Path, scratch: &std::path::Path, batch: usize, max: usize, indexes: Indexes) -> f64 {
    use rusqlite::types::Value;
    use rusqlite::{Connection, TransactionBehavior, params_from_iter};
    let fail = |e: rusqlite::Error| -> ! { panic!("sqlite floor: {e}") };
    let src = Connection::open(db).unwrap_or_else(|e| fail(e));
    // The table first ('table' sorts after 'index'), then its indexes.
    let schema: Vec<String> = src
        .prepare(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'audit_records' AND sql IS NOT NULL ORDER BY type DESC",
        )
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| fail(e));
    // LIMIT -1: no limit.
    let mut st = src.prepare("SELECT * FROM audit_records ORDER BY seq LIMIT ?1").unwrap_or_else(|e| fail(e));
    let columns = st.column_count();
    let rows: Vec<Vec<Value>> = st
        .query_map([i64::try_from(max).unwrap_or(-1)], |r| (0..columns).map(|i| r.get::<_, Value>(i)).collect())
        .and_then(|rows| rows.collect())
        .unwrap_or_else(|e| fail(e));
    let mut dst = Connection::open(scratch.join(format!("floor-{batch}-{indexes:?}.db"))).unwrap_or_else(|e| fail(e));
    let _: String = dst.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap_or_else(|e| fail(e));
    dst.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768; PRAGMA wal_autocheckpoint = 8192;")
        .unwrap_or_else(|e| fail(e));
    for sql in schema.iter().filter(|sql| indexes.keeps(sql)) {
        dst.execute_batch(sql).unwrap_or_else(|e| fail(e));
    }
    let insert = format!("INSERT INTO audit_records VALUES ({})", vec!["?"; columns].join(", "));
    let cpu = cpu_secs();
    for chunk in rows.chunks(batch) {
        let tx = dst.transaction_with_behavior(TransactionBehavior::Immediate).unwrap_or_else(|e| fail(e));
        {
            let mut st = tx.prepare_cached(&insert).unwrap_or_else(|e| fail(e));
            for row in chunk {
                st.execute(params_from_iter(row.iter())).unwrap_or_else(|e| fail(e));
            }
        }
        tx.commit().unwrap_or_else(|e| fail(e));
    }
    (cpu_secs() - cpu) * 1e6 / rows.len().max(1) as f64
}

async fn open(dir: &std::path::Path) -> AuditLog {
    AuditLog::open(&RawAudit::default(), dir).await.unwrap_or_else(|e| panic!("open: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/audit.sh"]
async fn bench_appends_per_second() {
    let n = env_usize("PORTICO_BENCH_APPENDS", 200_000);
    // One caller after another.
    let dir = bench_dir();
    let log = open(dir.path()).await;
    let entries: Vec<Entry> = (0..n).map(|i| entry(i, None)).collect();
    let t = Instant::now();
    let cpu = cpu_secs();
    for e in entries {
        log.append(e).await.unwrap_or_else(|e| panic!("append: {e}"));
    }
    log.flush().await.unwrap_or_else(|e| panic!("flush: {e}"));
    let one = n as f64 / t.elapsed().as_secs_f64();
    let one_cpu = n as f64 / (cpu_secs() - cpu).max(0.01);
    log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    let size = std::fs::metadata(dir.path().join("audit.db")).map(|m| m.len()).unwrap_or(0);
    drop(log);
    // The floor: SQLite alone, on the same rows. Batch 1 is what one caller gets; 32, what 64
    // callers waiting on their commits get (while one batch commits, the callers it answered
    // prepare the next: two groups take turns); 64, the most they could get; 1024, what a
    // write path that did not make calls wait (indexes built behind a journal) could batch.
    // `PORTICO_BENCH_FLOOR=0` leaves the floor out (for quick comparisons of the log alone).
    let batches = if env_usize("PORTICO_BENCH_FLOOR", 1) == 0 {
        vec![]
    } else {
        vec![(1, n.min(20_000)), (32, n), (64, n), (1024, n)]
    };
    let floor: Vec<(usize, f64)> = batches
        .into_iter()
        .map(|(batch, max)| (batch, sqlite_floor(&dir.path().join("audit.db"), dir.path(), batch, max, Indexes::All)))
        .collect();

    // 64 callers at once.
    let dir = bench_dir();
    let log = open(dir.path()).await;
    let t = Instant::now();
    let cpu = cpu_secs();
    let per = n / 64;
    let tasks: Vec<_> = (0..64)
        .map(|w| {
            let log = log.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    log.append(entry(w * per + i, None)).await.unwrap_or_else(|e| panic!("append: {e}"));
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }
    log.flush().await.unwrap_or_else(|e| panic!("flush: {e}"));
    let many = (per * 64) as f64 / t.elapsed().as_secs_f64();
    let many_cpu = (per * 64) as f64 / (cpu_secs() - cpu).max(0.01);
    let t = Instant::now();
    let report = log.verify().await.unwrap_or_else(|e| panic!("verify: {e}"));
    let verify = t.elapsed();
    assert!(report.ok(), "{report}");
    log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "BENCH machine: {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.trim()
    );
    eprintln!(
        "BENCH appends to SQLite, default redaction, one caller: {one:>7.0} records/s wall clock, {one_cpu:>7.0} per CPU-second ({n} records)"
    );
    eprintln!(
        "BENCH appends to SQLite, default redaction, 64 callers: {many:>7.0} records/s wall clock, {many_cpu:>7.0} per CPU-second"
    );
    eprintln!("BENCH bytes per record in the SQLite file (with indexes): {}", size / n.max(1) as u64);
    eprintln!("BENCH verify: {:.0} records/s", report.records as f64 / verify.as_secs_f64());
    eprintln!(
        "BENCH floor, bare rusqlite, the same rows and schema: {} (CPU µs per record, by records per transaction); the log: {:.1} (one caller), {:.1} (64 callers)",
        floor.iter().map(|(b, us)| format!("{b}: {us:.1}")).collect::<Vec<_>>().join(", "),
        1e6 / one_cpu,
        1e6 / many_cpu
    );
}

/// One call at a time, as a gateway with one call in flight appends (`append_alone`): the
/// latency of each append, p50 to max, and the CPU per record. The gateway's added p99 at one in
/// flight can be no better than this log's p99. (SQLite's bare commit of one row alone is
/// `bench-gateway commit`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/audit.sh"]
async fn bench_lone_append_latency() {
    let n = env_usize("PORTICO_BENCH_LONE", 20_000).max(1);
    let dir = bench_dir();
    let log = open(dir.path()).await;
    let mut took = Vec::with_capacity(n);
    let cpu = cpu_secs();
    let t = Instant::now();
    for i in 0..n {
        let e = entry(i, None);
        let start = Instant::now();
        log.append_alone(e).await.unwrap_or_else(|e| panic!("append: {e}"));
        took.push(start.elapsed());
    }
    let wall = t.elapsed();
    let cpu_per = (cpu_secs() - cpu) * 1e6 / n.max(1) as f64;
    log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    took.sort();
    let us = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)].as_secs_f64() * 1e6;
    let over_1ms = took.iter().filter(|d| d.as_micros() >= 1000).count();
    eprintln!(
        "BENCH lone appends ({n}, one at a time, append_alone): {:.0} records/s, {cpu_per:.1} CPU µs per record; latency µs p50 {:.1}, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}; {over_1ms} of {n} took 1 ms or more",
        n as f64 / wall.as_secs_f64(),
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        us(1.0)
    );
}

/// The floor for another log's rows: `PORTICO_BENCH_FLOOR_DB=path/audit.db` (a copy is not
/// needed: it is only read), e.g. the gateway's own log after `BENCH_GATEWAY_KEEP=1
/// bench/gateway.sh --parts stdio`. Without the variable it says so and does nothing.
#[test]
#[ignore = "a benchmark: bench/audit.sh"]
fn bench_sqlite_floor_of_a_log() {
    let Some(db) = std::env::var_os("PORTICO_BENCH_FLOOR_DB").map(std::path::PathBuf::from) else {
        eprintln!("BENCH floor of a log: PORTICO_BENCH_FLOOR_DB is not set; nothing measured");
        return;
    };
    let scratch = bench_dir();
    let rows = rusqlite::Connection::open(&db)
        .and_then(|c| {
            c.query_row("SELECT count(*), avg(length(record)) FROM audit_records", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
            })
        })
        .unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    // With its indexes, with the one the query target needs, and the table alone: what any
    // index at all leaves for the rest.
    for indexes in [Indexes::All, Indexes::ToolTime, Indexes::None] {
        let floor: Vec<String> =
            [(1, 20_000), (4, 40_000), (16, usize::MAX), (32, usize::MAX), (64, usize::MAX), (1024, usize::MAX)]
                .into_iter()
                .map(|(batch, max)| format!("{batch}: {:.1}", sqlite_floor(&db, scratch.path(), batch, max, indexes)))
                .collect();
        eprintln!(
            "BENCH floor, bare rusqlite, the rows of {} ({} records, {:.0} bytes of record text on average), {}: {} (CPU µs per record, by records per transaction)",
            db.display(),
            rows.0,
            rows.1,
            match indexes {
                Indexes::All => "the log's table and indexes",
                Indexes::ToolTime => "the table and its index by tool and time alone",
                Indexes::None => "the table alone, no index",
            },
            floor.join(", ")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/audit.sh"]
async fn bench_query_by_tool_and_time_window_over_a_million() {
    let n = env_usize("PORTICO_BENCH_RECORDS", 1_000_000);
    let dir = bench_dir();
    let log = open(dir.path()).await;
    let now = SystemTime::now();
    let span = DAYS * 86_400;
    let t = Instant::now();
    let log2 = log.clone();
    // Start times over 30 days, in the order calls end (a call's start is up to a minute
    // before the calls that end before it).
    let fill = tokio::spawn(async move {
        for i in 0..n {
            let offset = (i as u64 * span / n as u64).saturating_sub((i as u64).wrapping_mul(2_654_435_761) % 60);
            let start = now - Duration::from_secs(span - offset);
            log2.append(entry(i, Some(start))).await.unwrap_or_else(|e| panic!("append: {e}"));
        }
    });
    fill.await.unwrap_or_else(|e| panic!("{e}"));
    log.flush().await.unwrap_or_else(|e| panic!("flush: {e}"));
    let fill_rate = n as f64 / t.elapsed().as_secs_f64();

    let mut times = Vec::new();
    let mut rows = 0;
    for q in 0..50u64 {
        let mut f = Filter::new();
        let tool = (q * 37) as usize % TOOLS;
        f.tool = Some(format!("server{}__tool{tool}", tool % 10));
        let day = q % (DAYS - 1);
        f.since = Some(now - Duration::from_secs((DAYS - day) * 86_400));
        f.until = Some(now - Duration::from_secs((DAYS - day - 1) * 86_400));
        f.limit = Some(10_000);
        let t = Instant::now();
        let got = log.query(&f).await.unwrap_or_else(|e| panic!("query: {e}"));
        times.push(t.elapsed());
        rows += got.len();
        assert!(got.iter().all(|r| r.target == f.tool));
    }
    // The latest 100 of a tool, any time (what `portico log --tool T` asks).
    let mut latest = Vec::new();
    for q in 0..20usize {
        let mut f = Filter::new();
        let tool = q * 3 % TOOLS;
        f.tool = Some(format!("server{}__tool{tool}", tool % 10));
        let t = Instant::now();
        let got = log.query(&f).await.unwrap_or_else(|e| panic!("query: {e}"));
        latest.push(t.elapsed());
        assert_eq!(got.len(), 100);
    }
    times.sort();
    latest.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    log.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    let size = std::fs::metadata(dir.path().join("audit.db")).map(|m| m.len()).unwrap_or(0);
    eprintln!("BENCH filled {n} records at {fill_rate:.0} records/s ({} MiB)", size >> 20);
    eprintln!(
        "BENCH query by tool and a 1-day window over {n} records ({} rows each on average): median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        rows / times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(times[times.len() - 1])
    );
    eprintln!(
        "BENCH the latest 100 of a tool over {n} records: median {:.2} ms, max {:.2} ms",
        ms(latest[latest.len() / 2]),
        ms(latest[latest.len() - 1])
    );
}

/// One Arc-ed log shared by tasks must be `Send + Sync`.
#[test]
fn the_log_can_be_shared_across_tasks() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<AuditLog>();
    shared::<Arc<AuditLog>>();
}

//! Retention: old records go by age or by size, after they are exported to JSONL, and only
//! up to a checkpoint, which is kept: the chain stays verifiable from it.
//!
//! The cut is the newest checkpoint at or before the last record to remove. Removal goes one
//! checkpoint at a time (records through it, the checkpoints before it, and a signed statement
//! that they were removed on purpose, in a transaction), so the writer waits little and the
//! log verifies after each step. Without that statement, records missing from the start of
//! the log are reported by `verify` like any others.

use std::fs;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::chain::Signer;
use super::store::{Select, Store, StoreError};
use super::{AuditError, time};

/// `[audit.retention]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionConfig {
    /// Records that started longer ago go.
    pub max_age: Option<Duration>,
    /// The oldest records go while the records' JSON adds up to more.
    pub max_size: Option<u64>,
    /// Where removed records are exported first.
    pub export_dir: PathBuf,
    /// How often it runs while the log is open.
    pub interval: Duration,
}

impl RetentionConfig {
    /// Whether anything is ever removed.
    pub fn active(&self) -> bool {
        self.max_age.is_some() || self.max_size.is_some()
    }
}

/// What one run removed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// Records removed.
    pub records: u64,
    /// The first and last `seq` removed.
    pub first_seq: u64,
    /// The last; the checkpoint at it is kept.
    pub through: u64,
    /// The JSONL file they were exported to.
    pub exported: PathBuf,
}

fn store_err(store: &dyn Store) -> impl Fn(StoreError) -> AuditError + '_ {
    move |e| AuditError::Store { store: store.describe(), message: e.message }
}

/// Writes records `first..=through` to `path` as JSONL (each line the record's canonical JSON,
/// as hashed), synced.
pub(crate) async fn export_range(store: &dyn Store, first: u64, through: u64, path: &Path) -> Result<u64, AuditError> {
    let io = |e: std::io::Error| AuditError::Io { path: path.to_path_buf(), message: e.to_string() };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io)?;
    }
    let file = fs::File::create(path).map_err(io)?;
    let mut out = BufWriter::new(file);
    let mut after = first.saturating_sub(1);
    let mut n = 0;
    'pages: loop {
        let page = store.select(Select::after(after, 5000)).await.map_err(store_err(store))?;
        if page.is_empty() {
            break;
        }
        for r in page {
            if r.seq > through {
                break 'pages;
            }
            out.write_all(r.text.as_bytes()).and_then(|()| out.write_all(b"\n")).map_err(io)?;
            after = r.seq;
            n += 1;
        }
    }
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(n)
}

/// Applies `config` to the log in `store` once.
pub(crate) async fn apply(
    store: &dyn Store,
    config: &RetentionConfig,
    signer: &Signer,
) -> Result<Option<Pruned>, AuditError> {
    if !config.active() {
        return Ok(None);
    }
    let err = store_err(store);
    let stats = store.stats(config.max_size.is_some()).await.map_err(&err)?;
    let (Some(first), Some(last)) = (stats.first, stats.last) else { return Ok(None) };
    // Remove records up to `cut`.
    let mut cut = 0u64;
    if let Some(age) = config.max_age {
        let cutoff = time::now_micros().saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX));
        cut = match store.first_seq_since(cutoff).await.map_err(&err)? {
            Some(seq) => seq.saturating_sub(1),
            None => last,
        };
    }
    if let Some(max) = config.max_size
        && stats.bytes > max
    {
        let excess = stats.bytes - max;
        let mut sum = 0u64;
        let mut after = first - 1;
        'sizes: loop {
            let page = store.sizes(after, 10_000).await.map_err(&err)?;
            if page.is_empty() {
                break;
            }
            for (seq, len) in page {
                sum += len;
                after = seq;
                if sum >= excess {
                    break 'sizes;
                }
            }
        }
        cut = cut.max(after);
    }
    if cut < first {
        return Ok(None);
    }
    let checkpoints = store.checkpoints().await.map_err(&err)?;
    let steps: Vec<(u64, [u8; 32])> =
        checkpoints.iter().filter(|c| c.seq >= first && c.seq <= cut).map(|c| (c.seq, c.hash)).collect();
    let Some(&(through, _)) = steps.last() else { return Ok(None) };
    let exported = config.export_dir.join(format!("audit-{first:012}-{through:012}.jsonl"));
    export_range(store, first, through, &exported).await?;
    let mut records = 0;
    for (step, hash) in steps {
        records += store.prune(step, signer.prune_statement(step, hash)).await.map_err(&err)?;
    }
    tracing::info!(records, through, exported = %exported.display(), "activity log: old records exported and removed");
    Ok(Some(Pruned { records, first_seq: first, through, exported }))
}

//! `portico log verify`: walks the chain and the checkpoints and names the first bad `seq`.
//!
//! - A record edited in place (its JSON or its hash) breaks the chain at its `seq`.
//! - A record deleted leaves a gap: the first missing `seq`. Deleting the oldest is seen too:
//!   the log must start at 1, or right after what retention removed by a signed statement.
//!   Deleting the newest records is seen up to the last checkpoint (see
//!   [`Report::unsigned_tail`]).
//! - A record inserted or moved sits at a `seq` its JSON does not say: the lower of the two.
//! - A record edited and every later hash recomputed keeps a valid chain but no longer matches
//!   the next signed checkpoint: the problem names the records since the checkpoint before.
//! - A checkpoint whose signature fails, that was not signed by this log's key, or that does
//!   not name the previous checkpoint's signature (one was removed or replaced) is named by
//!   its `seq`.
//! - The columns kept for queries must say what the record's JSON says.

use std::collections::BTreeMap;
use std::fmt;

use super::AuditError;
use super::chain::{Checkpoint, GENESIS, hex, link};
use super::record::Columns;
use super::store::{Select, Store};

/// How many problems a report lists (the rest are counted).
const MAX_PROBLEMS: usize = 1000;

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Records checked.
    pub records: u64,
    /// The first and last `seq` in the log.
    pub first_seq: Option<u64>,
    /// The last.
    pub last_seq: Option<u64>,
    /// Checkpoints checked.
    pub checkpoints: u64,
    /// The last checkpoint's `seq`.
    pub last_checkpoint: Option<u64>,
    /// Where retention removed the records through (by a signed statement): the log starts
    /// after it.
    pub pruned_through: Option<u64>,
    /// Records after the last checkpoint: chained, not yet signed (their removal from the end
    /// cannot be told from a log that ended there).
    pub unsigned_tail: u64,
    /// The public key the checkpoints were checked against (hex), and whether it is this log's
    /// own (from the state directory) rather than only the one the checkpoints name.
    pub key: Option<String>,
    /// Whether the key came from the state directory.
    pub key_confirmed: bool,
    /// What is wrong, by `seq` (at most 1000).
    pub problems: Vec<Problem>,
    /// Problems past those listed.
    pub more_problems: u64,
}

impl Report {
    /// Nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// The lowest `seq` at which something is wrong.
    pub fn first_bad_seq(&self) -> Option<u64> {
        self.problems.iter().map(|p| p.seq).min()
    }

    fn problem(&mut self, seq: u64, kind: ProblemKind) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { seq, kind });
        } else {
            self.more_problems += 1;
        }
    }
}

/// One thing wrong, at a `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// Where: the first bad record (or the checkpoint's `seq`).
    pub seq: u64,
    /// What.
    pub kind: ProblemKind,
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The record's hash does not follow from the one before and its JSON: it was changed.
    Changed,
    /// Records from `seq` through `through` are gone.
    Missing {
        /// The last missing `seq`.
        through: u64,
    },
    /// The record at this position says it is `found`: records were inserted or reordered.
    Moved {
        /// The `seq` in its JSON.
        found: u64,
    },
    /// A column kept for queries differs from the record's JSON.
    Columns {
        /// Which.
        column: String,
    },
    /// The record is not readable JSON of a record.
    Unreadable {
        /// Why.
        why: String,
    },
    /// The chain is consistent but differs from the checkpoint signed at `checkpoint`: a record
    /// from `seq` through `checkpoint` was changed, removed or inserted and the later hashes
    /// recomputed.
    Rewritten {
        /// The checkpoint's `seq`.
        checkpoint: u64,
    },
    /// The checkpoint's signature is not valid.
    BadSignature,
    /// The checkpoint was signed by another key than this log's.
    UnknownKey,
    /// The checkpoint does not name the previous one's signature: one was removed or replaced.
    BrokenCheckpointChain,
    /// The statement that records were removed by retention through this `seq` is not signed
    /// by this log's key, or names another hash than the chain's.
    BadPruneStatement,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seq = self.seq;
        match &self.kind {
            ProblemKind::Changed => write!(f, "seq {seq}: changed (its hash does not follow from its content)"),
            ProblemKind::Missing { through } if *through == seq => write!(f, "seq {seq}: missing"),
            ProblemKind::Missing { through } => write!(f, "seq {seq}–{through}: missing"),
            ProblemKind::Moved { found } => {
                write!(f, "seq {seq}: a record that says it is seq {found} is out of place (inserted or reordered)")
            }
            ProblemKind::Columns { column } => write!(f, "seq {seq}: the `{column}` column differs from the record"),
            ProblemKind::Unreadable { why } => write!(f, "seq {seq}: unreadable: {why}"),
            ProblemKind::Rewritten { checkpoint } => write!(
                f,
                "seq {seq}–{checkpoint}: do not match the checkpoint signed at seq {checkpoint} (a record was changed and the hashes after it recomputed)"
            ),
            ProblemKind::BadSignature => write!(f, "checkpoint at seq {seq}: bad signature"),
            ProblemKind::UnknownKey => write!(f, "checkpoint at seq {seq}: signed by another key than this log's"),
            ProblemKind::BadPruneStatement => {
                write!(f, "seq {seq}: the statement that retention removed the records through it is not valid")
            }
            ProblemKind::BrokenCheckpointChain => {
                write!(
                    f,
                    "checkpoint at seq {seq}: does not follow the previous checkpoint (one was removed or replaced)"
                )
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.first_seq, self.last_seq) {
            (Some(a), Some(b)) => writeln!(f, "records: {} (seq {a}–{b})", self.records)?,
            _ => writeln!(f, "records: 0")?,
        }
        write!(f, "checkpoints: {}", self.checkpoints)?;
        if let Some(c) = self.last_checkpoint {
            write!(f, " (last at seq {c})")?;
        }
        writeln!(f)?;
        if let Some(key) = &self.key {
            let whose =
                if self.key_confirmed { "this log's key" } else { "the key the checkpoints name (not confirmed)" };
            writeln!(f, "signed by: {whose} {key}")?;
        }
        if let Some(p) = self.pruned_through {
            writeln!(f, "removed by retention: through seq {p}")?;
        }
        if self.unsigned_tail > 0 {
            writeln!(f, "not yet signed: the last {} records (chained only)", self.unsigned_tail)?;
        }
        if self.ok() {
            return writeln!(f, "ok: the chain and every checkpoint verify");
        }
        if let Some(seq) = self.first_bad_seq() {
            writeln!(f, "FAILED: first bad seq {seq}")?;
        }
        for p in &self.problems {
            writeln!(f, "  {p}")?;
        }
        if self.more_problems > 0 {
            writeln!(f, "  … and {} more", self.more_problems)?;
        }
        Ok(())
    }
}

fn columns_diff(a: &Columns, b: &Columns) -> Option<&'static str> {
    [
        (a.id != b.id, "id"),
        (a.ts != b.ts, "ts"),
        (a.method != b.method, "method"),
        (a.server != b.server, "server"),
        (a.tool != b.tool, "tool"),
        (a.principal != b.principal, "principal"),
        (a.decision != b.decision, "decision"),
        (a.status != b.status, "status"),
    ]
    .into_iter()
    .find_map(|(differs, name)| differs.then_some(name))
}

/// Checks the log in `store`; checkpoints against `key` when known.
pub(crate) async fn verify(store: &dyn Store, key: Option<[u8; 32]>) -> Result<Report, AuditError> {
    let err = |e: super::store::StoreError| AuditError::Store { store: store.describe(), message: e.message };
    let checkpoints: Vec<Checkpoint> = store.checkpoints().await.map_err(err)?;
    let mut report = Report {
        checkpoints: checkpoints.len() as u64,
        last_checkpoint: checkpoints.last().map(|c| c.seq),
        key: key.or_else(|| checkpoints.first().map(|c| c.key)).map(|k| hex(&k)),
        key_confirmed: key.is_some(),
        ..Report::default()
    };

    let by_seq: BTreeMap<u64, &Checkpoint> = checkpoints.iter().map(|c| (c.seq, c)).collect();

    // Where the log must start: after what retention said (signed) it removed.
    let mut floor = 1;
    if let Some(st) = store.pruned().await.map_err(err)? {
        let own = key.or_else(|| checkpoints.first().map(|c| c.key)).is_none_or(|k| k == st.key);
        let names_chain = by_seq.get(&st.through).is_none_or(|cp| cp.hash == st.hash);
        if st.signature_ok() && own && names_chain {
            floor = st.through + 1;
            report.pruned_through = Some(st.through);
        } else {
            report.problem(st.through, ProblemKind::BadPruneStatement);
        }
    }

    // The checkpoints themselves.
    let mut prev_signature: Option<&[u8]> = None;
    for (i, cp) in checkpoints.iter().enumerate() {
        if !cp.signature_ok() {
            report.problem(cp.seq, ProblemKind::BadSignature);
        }
        let expected_key = key.or_else(|| checkpoints.first().map(|c| c.key));
        if expected_key.is_some_and(|k| k != cp.key) {
            report.problem(cp.seq, ProblemKind::UnknownKey);
        }
        // The first checkpoint names none, unless retention removed the ones before it.
        let first_kept = i == 0 && report.pruned_through == Some(cp.seq);
        if !first_kept && cp.prev_signature.as_deref() != prev_signature {
            report.problem(cp.seq, ProblemKind::BrokenCheckpointChain);
        }
        prev_signature = Some(&cp.signature);
    }
    // The records, in `seq` order.
    let mut prev_hash: Option<[u8; 32]> = None;
    let mut expected: Option<u64> = None;
    let mut last_good_checkpoint = 0u64;
    let mut after = 0u64;
    loop {
        let page = store.select(Select::after(after, 5000)).await.map_err(err)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for r in page {
            report.records += 1;
            if report.first_seq.is_none() {
                report.first_seq = Some(r.seq);
                // Where the chain starts: the beginning, or the checkpoint retention kept.
                if r.seq > floor {
                    report.problem(floor, ProblemKind::Missing { through: r.seq - 1 });
                }
                if r.seq == 1 {
                    prev_hash = Some(GENESIS);
                } else if let Some(cp) = by_seq.get(&(r.seq - 1)) {
                    prev_hash = Some(cp.hash);
                    last_good_checkpoint = cp.seq;
                } else if r.seq <= floor {
                    let from = by_seq.range(..r.seq).next_back().map_or(1, |(s, _)| s + 1);
                    report.problem(from, ProblemKind::Missing { through: r.seq - 1 });
                }
                expected = Some(r.seq);
            }
            let mut anchored = prev_hash.is_some();
            if let Some(exp) = expected
                && r.seq > exp
            {
                report.problem(exp, ProblemKind::Missing { through: r.seq - 1 });
                anchored = false;
            }
            match serde_json::from_str::<serde_json::Value>(&r.text) {
                Err(e) => report.problem(r.seq, ProblemKind::Unreadable { why: e.to_string() }),
                Ok(v) => {
                    let found = v.get("seq").and_then(serde_json::Value::as_u64);
                    match found {
                        Some(found) if found != r.seq => {
                            let at = if found >= report.first_seq.unwrap_or(1) { found.min(r.seq) } else { r.seq };
                            report.problem(at, ProblemKind::Moved { found });
                        }
                        Some(_) => {}
                        None => report.problem(r.seq, ProblemKind::Unreadable { why: "no `seq`".to_owned() }),
                    }
                    match Columns::from_record(&v) {
                        Ok(c) => {
                            if let Some(column) = columns_diff(&c, &r.columns) {
                                report.problem(r.seq, ProblemKind::Columns { column: column.to_owned() });
                            }
                        }
                        Err(why) => report.problem(r.seq, ProblemKind::Unreadable { why }),
                    }
                }
            }
            if anchored
                && let Some(prev) = prev_hash
                && link(&prev, &r.text) != r.hash
            {
                report.problem(r.seq, ProblemKind::Changed);
            }
            prev_hash = Some(r.hash);
            if let Some(cp) = by_seq.get(&r.seq) {
                if cp.hash != r.hash {
                    report.problem(last_good_checkpoint + 1, ProblemKind::Rewritten { checkpoint: cp.seq });
                }
                last_good_checkpoint = cp.seq;
            }
            expected = Some(r.seq + 1);
            report.last_seq = Some(r.seq);
        }
    }
    // Records a checkpoint covers that are no longer there.
    match report.last_seq {
        Some(last) => {
            if let Some(cp) = checkpoints.last()
                && cp.seq > last
            {
                report.problem(last + 1, ProblemKind::Missing { through: cp.seq });
            }
        }
        // No records: fine when retention removed them all.
        None => {
            if let Some(last) = checkpoints.last()
                && last.seq >= floor
            {
                report.problem(floor, ProblemKind::Missing { through: last.seq });
            }
        }
    }
    report.unsigned_tail = match (report.last_seq, report.last_checkpoint) {
        (Some(l), Some(c)) => l.saturating_sub(c),
        (Some(l), None) => l - report.first_seq.unwrap_or(1) + 1,
        _ => 0,
    };
    // A checkpoint mismatch that a record's own problem explains says nothing more.
    let precise: Vec<u64> = report
        .problems
        .iter()
        .filter(|p| {
            matches!(
                p.kind,
                ProblemKind::Changed
                    | ProblemKind::Missing { .. }
                    | ProblemKind::Moved { .. }
                    | ProblemKind::Columns { .. }
                    | ProblemKind::Unreadable { .. }
            )
        })
        .map(|p| p.seq)
        .collect();
    report.problems.retain(|p| match p.kind {
        ProblemKind::Rewritten { checkpoint } => !precise.iter().any(|s| (p.seq..=checkpoint).contains(s)),
        _ => true,
    });
    report.problems.sort_by_key(|p| p.seq);
    Ok(report)
}

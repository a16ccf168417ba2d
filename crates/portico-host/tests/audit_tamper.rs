//! Tampering with the activity log's SQLite file behind its back is always found, at the
//! right first bad `seq`: a property test over changes, deletions, insertions (with a forged
//! but valid hash, too), reorderings, rewrites of the chain, and checkpoint forgeries.

use std::path::Path;

use portico_host::audit::{AuditLog, Entry, RawAudit, Report};
use proptest::prelude::*;
use proptest::test_runner::Config;
use rusqlite::{Connection, params};
use sha2::{Digest as _, Sha256};

const EVERY: u64 = 5;

#[derive(Debug, Clone)]
enum Tamper {
    /// Edit a record's JSON.
    Change(i64),
    /// Edit a record's stored hash.
    ChangeHash(i64),
    /// Remove a record.
    Delete(i64),
    /// Remove the records from here to the end.
    Truncate(i64),
    /// Remove the records from the start through here.
    DeletePrefix(i64),
    /// Insert a forged record here, moving the rest up; with a hash that chains, or junk.
    Insert(i64, bool),
    /// Swap two records.
    Swap(i64, i64),
    /// Edit a record and recompute every hash after it.
    Rewrite(i64),
    /// Spoil a checkpoint's signature (by index).
    BadSignature(usize),
    /// Remove a checkpoint that is not the last (by index).
    DropCheckpoint(usize),
}

fn tamper(n: i64) -> impl Strategy<Value = Tamper> {
    let k = 1..=n;
    prop_oneof![
        k.clone().prop_map(Tamper::Change),
        k.clone().prop_map(Tamper::ChangeHash),
        k.clone().prop_map(Tamper::Delete),
        k.clone().prop_map(Tamper::Truncate),
        k.clone().prop_map(Tamper::DeletePrefix),
        (k.clone(), any::<bool>()).prop_map(|(k, valid)| Tamper::Insert(k, valid)),
        (1..n, 1..=n).prop_filter_map("two records", |(a, b)| (a < b).then_some(Tamper::Swap(a, b))),
        k.prop_map(Tamper::Rewrite),
        (0..16usize).prop_map(Tamper::BadSignature),
        (0..16usize).prop_map(Tamper::DropCheckpoint),
    ]
}

fn entry(i: i64) -> Entry {
    let mut e = Entry::new("tools/call");
    e.server = Some("fs".into());
    e.exposed = Some("fs__read".into());
    e.principal = Some("local".into());
    e.arguments = Some(serde_json::json!({"path": format!("/tmp/{i}")}));
    e
}

fn link(prev: &[u8], text: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(text.as_bytes());
    h.finalize().to_vec()
}

fn hash_at(db: &Connection, seq: i64) -> Vec<u8> {
    if seq == 0 {
        return vec![0; 32];
    }
    db.query_row("SELECT hash FROM audit_records WHERE seq = ?1", [seq], |r| r.get(0)).unwrap_or_default()
}

/// Moves records `from..` up by one `seq` (in two steps: the key is unique).
fn shift_up(db: &Connection, from: i64) {
    let _ = db.execute("UPDATE audit_records SET seq = -seq - 1 WHERE seq >= ?1", [from]);
    let _ = db.execute("UPDATE audit_records SET seq = -seq WHERE seq < 0", []);
}

/// Checkpoint seqs, in order.
fn checkpoints(db: &Connection) -> Vec<i64> {
    let Ok(mut st) = db.prepare("SELECT seq FROM audit_checkpoints ORDER BY seq") else { return Vec::new() };
    st.query_map([], |r| r.get(0)).map(|rows| rows.filter_map(Result::ok).collect()).unwrap_or_default()
}

/// Tampers; the first bad seq `verify` must name (for a rewrite: the first after the
/// checkpoint before it), or `None` when the tampering is one the log cannot see (there is
/// none here: a checkpoint is signed at the end).
fn apply(db: &Connection, n: i64, t: &Tamper) -> Option<i64> {
    let cps = checkpoints(db);
    match *t {
        Tamper::Change(k) => {
            let _ =
                db.execute("UPDATE audit_records SET record = replace(record, '/tmp/', '/etc/') WHERE seq = ?1", [k]);
            Some(k)
        }
        Tamper::ChangeHash(k) => {
            let _ = db.execute("UPDATE audit_records SET hash = zeroblob(32) WHERE seq = ?1", [k]);
            Some(k)
        }
        Tamper::Delete(k) => {
            let _ = db.execute("DELETE FROM audit_records WHERE seq = ?1", [k]);
            Some(k)
        }
        Tamper::Truncate(k) => {
            let _ = db.execute("DELETE FROM audit_records WHERE seq >= ?1", [k]);
            Some(k)
        }
        Tamper::DeletePrefix(k) => {
            let _ = db.execute("DELETE FROM audit_records WHERE seq <= ?1", [k]);
            Some(1)
        }
        Tamper::Insert(k, valid) => {
            let (id, ts, text): (String, i64, String) = db
                .query_row("SELECT id, ts, record FROM audit_records WHERE seq = ?1", [k], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap_or_default();
            let forged_id = format!("{}{}", &id[..25], if id.ends_with('0') { '1' } else { '0' });
            let forged = text.replace(&id, &forged_id).replace("/tmp/", "/root/");
            let hash = if valid { link(&hash_at(db, k - 1), &forged) } else { vec![7; 32] };
            shift_up(db, k);
            let _ = db.execute(
                "INSERT INTO audit_records (seq, id, ts, method, server, tool, principal, decision, status, record, hash)
                 VALUES (?1, ?2, ?3, 'tools/call', 'fs', 'fs__read', 'local', NULL, 'success', ?4, ?5)",
                params![k, forged_id, ts, forged, hash],
            );
            Some(k)
        }
        Tamper::Swap(a, b) => {
            let _ = db.execute("UPDATE audit_records SET seq = -1 WHERE seq = ?1", [a]);
            let _ = db.execute("UPDATE audit_records SET seq = ?1 WHERE seq = ?2", [a, b]);
            let _ = db.execute("UPDATE audit_records SET seq = ?1 WHERE seq = -1", [b]);
            Some(a)
        }
        Tamper::Rewrite(k) => {
            let _ =
                db.execute("UPDATE audit_records SET record = replace(record, '/tmp/', '/etc/') WHERE seq = ?1", [k]);
            let mut prev = hash_at(db, k - 1);
            for s in k..=n {
                let text: String = db
                    .query_row("SELECT record FROM audit_records WHERE seq = ?1", [s], |r| r.get(0))
                    .unwrap_or_default();
                prev = link(&prev, &text);
                let _ = db.execute("UPDATE audit_records SET hash = ?1 WHERE seq = ?2", params![prev, s]);
            }
            Some(cps.iter().copied().filter(|c| *c < k).max().unwrap_or(0) + 1)
        }
        Tamper::BadSignature(i) => {
            let seq = cps[i % cps.len()];
            let _ = db.execute("UPDATE audit_checkpoints SET signature = zeroblob(64) WHERE seq = ?1", [seq]);
            Some(seq)
        }
        Tamper::DropCheckpoint(i) => {
            if cps.len() < 2 {
                // Nothing but the last: spoil it instead.
                let _ = db.execute("UPDATE audit_checkpoints SET hash = zeroblob(32) WHERE seq = ?1", [cps[0]]);
                return Some(1);
            }
            let i = i % (cps.len() - 1);
            let _ = db.execute("DELETE FROM audit_checkpoints WHERE seq = ?1", [cps[i]]);
            Some(cps[i + 1])
        }
    }
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => panic!("runtime: {e}"),
    }
}

async fn make_log(dir: &Path, n: i64) {
    let mut raw = RawAudit::default();
    raw.checkpoint_every = Some(EVERY);
    let log = match AuditLog::open(&raw, dir).await {
        Ok(l) => l,
        Err(e) => panic!("open: {e}"),
    };
    for i in 0..n {
        if let Err(e) = log.append(entry(i)).await {
            panic!("append: {e}");
        }
    }
    if let Err(e) = log.close().await {
        panic!("close: {e}");
    }
}

async fn verify(dir: &Path) -> Report {
    let log = match AuditLog::open_read_only(&RawAudit::default(), dir).await {
        Ok(l) => l,
        Err(e) => panic!("open: {e}"),
    };
    match log.verify().await {
        Ok(r) => r,
        Err(e) => panic!("verify: {e}"),
    }
}

proptest! {
    #![proptest_config(Config { cases: 64, failure_persistence: None, ..Config::default() })]

    #[test]
    fn any_tampering_is_found_at_the_right_seq((n, t) in (3i64..40).prop_flat_map(|n| (Just(n), tamper(n)))) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        run(make_log(dir.path(), n));
        let clean = run(verify(dir.path()));
        prop_assert!(clean.ok(), "before: {}", clean);
        let db = Connection::open(dir.path().join("audit.db")).unwrap_or_else(|e| panic!("{e}"));
        let expected = apply(&db, n, &t);
        drop(db);
        let report = run(verify(dir.path()));
        prop_assert!(!report.ok(), "{:?} not found:\n{}", t, report);
        prop_assert_eq!(report.first_bad_seq(), expected.and_then(|s| u64::try_from(s).ok()), "{:?}:\n{}", t, report);
    }
}

#[test]
fn an_untouched_log_verifies_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    run(make_log(dir.path(), 12));
    let report = run(verify(dir.path()));
    assert!(report.ok(), "{report}");
    assert_eq!((report.records, report.checkpoints, report.unsigned_tail), (12, 3, 0));
    assert!(report.to_string().contains("ok: the chain and every checkpoint verify"), "{report}");
}

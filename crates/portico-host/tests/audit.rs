//! The activity log on real SQLite: appends, queries, redaction, the chain, retention,
//! concurrency, a full disk (a tiny tmpfs, when the test may mount one), and the file locked by
//! another process.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use portico_host::audit::{
    AuditConfig, AuditError, AuditLog, Decision, Entry, Filter, RawAudit, Record, Status, redact,
};
use serde_json::{Value, json};

fn raw(toml_text: &str) -> RawAudit {
    match toml::from_str(toml_text) {
        Ok(r) => r,
        Err(e) => panic!("[audit] does not parse: {e}"),
    }
}

async fn open(dir: &Path, toml_text: &str) -> AuditLog {
    match AuditLog::open(&raw(toml_text), dir).await {
        Ok(log) => log,
        Err(e) => panic!("open: {e}"),
    }
}

fn entry(i: usize) -> Entry {
    let mut e = Entry::new("tools/call");
    e.server = Some(if i.is_multiple_of(2) { "fs" } else { "web" }.to_owned());
    e.exposed = Some(format!("fs__tool{}", i % 3));
    e.original = Some(format!("tool{}", i % 3));
    e.principal = Some(if i.is_multiple_of(4) { "alice" } else { "local" }.to_owned());
    e.client_name = Some("test-client".to_owned());
    e.session = Some("s-1".to_owned());
    e.protocol_version = Some("2025-06-18".to_owned());
    e.request_id = Some(i.to_string());
    e.arguments = Some(json!({"path": format!("/tmp/{i}"), "password": "hunter2"}));
    e.result = Some(json!({"content": [{"type": "text", "text": format!("result {i}")}]}));
    e.decision = Some(Decision::Allow);
    e.rule = Some("1".to_owned());
    if i % 5 == 4 {
        e.status = Status::Error;
        e.error_type = Some("tool_error".to_owned());
    }
    e
}

async fn all(log: &AuditLog) -> Vec<Record> {
    let mut f = Filter::new();
    f.limit = Some(1_000_000);
    match log.query(&f).await {
        Ok(r) => r,
        Err(e) => panic!("query: {e}"),
    }
}

async fn ok<T>(what: &str, r: Result<T, AuditError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

#[tokio::test]
async fn appends_are_queried_shown_exported_and_verified() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    let before = SystemTime::now();
    for i in 0..20 {
        ok("append", log.append(entry(i)).await).await;
    }
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    assert_eq!(records.len(), 20);
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=20).collect::<Vec<_>>());

    let r = &records[3];
    let v = r.json();
    assert_eq!(v["seq"], 4);
    assert_eq!(v["mcp.method.name"], "tools/call");
    assert_eq!(v["gen_ai.tool.name"], "fs__tool0");
    assert_eq!(v["original_name"], "tool0");
    assert_eq!(v["user.id"], "local");
    assert_eq!(v["jsonrpc.request.id"], "3");
    assert_eq!(v["policy.decision"], "allow");
    assert_eq!(v["status"], "success");
    assert_eq!(v["arguments"]["path"], "/tmp/3");
    assert!(v["arguments"]["password"].as_str().is_some_and(|s| s.starts_with(redact::PREFIX)));
    assert_eq!(v["result"]["content"][0]["text"], "result 3");
    assert_eq!(r.id.len(), 26);

    // Filters.
    let mut f = Filter::new();
    f.tool = Some("fs__tool1".into());
    assert_eq!(ok("query", log.query(&f).await).await.len(), 7);
    f.server = Some("web".into());
    assert!(ok("query", log.query(&f).await).await.iter().all(|r| r.server.as_deref() == Some("web")));
    let mut f = Filter::new();
    f.errors = true;
    assert_eq!(ok("query", log.query(&f).await).await.len(), 4);
    let mut f = Filter::new();
    f.status = Some("error".into());
    f.principal = Some("alice".into());
    assert_eq!(ok("query", log.query(&f).await).await.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![5]);
    let mut f = Filter::new();
    f.decision = Some("deny".into());
    assert!(ok("query", log.query(&f).await).await.is_empty());
    let mut f = Filter::new();
    f.since = Some(before - Duration::from_secs(1));
    f.until = Some(SystemTime::now() + Duration::from_secs(1));
    f.limit = Some(5);
    let latest = ok("query", log.query(&f).await).await;
    assert_eq!(latest.iter().map(|r| r.seq).collect::<Vec<_>>(), (16..=20).collect::<Vec<_>>());
    f.until = Some(before - Duration::from_millis(500));
    assert!(ok("query", log.query(&f).await).await.is_empty());

    // show, by ULID (any case) and by seq.
    let shown = ok("show", log.show(&records[7].id.to_lowercase()).await).await;
    assert_eq!(shown.as_ref(), Some(&records[7]));
    assert_eq!(ok("show", log.show("8").await).await.as_ref(), Some(&records[7]));
    assert_eq!(ok("show", log.show("01ZZZZZZZZZZZZZZZZZZZZZZZZ").await).await, None);

    // export: the canonical JSON, as hashed.
    let mut out = Vec::new();
    assert_eq!(ok("export", log.export(&mut out).await).await, 20);
    let text = String::from_utf8(out).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 20);
    assert_eq!(lines[3], records[3].text);

    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!(report.records, 20);
    assert!(report.key_confirmed);
    ok("close", log.close().await).await;
    // A closed log refuses appends; closing again does nothing.
    assert!(matches!(log.append(entry(0)).await, Err(AuditError::Closed)));
    assert!(!log.healthy());
    ok("close", log.close().await).await;
    drop(log);

    // Reopened, the chain goes on; the close left a checkpoint at the end.
    let log = open(dir.path(), "").await;
    let report = ok("verify", log.verify().await).await;
    assert_eq!((report.last_checkpoint, report.unsigned_tail), (Some(20), 0), "{report}");
    ok("append", log.append(entry(20)).await).await;
    ok("flush", log.flush().await).await;
    assert_eq!(ok("last", log.last_seq().await).await, Some(21));
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!(report.unsigned_tail, 1);
    ok("close", log.close().await).await;

    // Read-only, as `portico log` opens it.
    let reader = ok("open", AuditLog::open_read_only(&RawAudit::default(), dir.path()).await).await;
    assert_eq!(all(&reader).await.len(), 21);
    assert!(ok("verify", reader.verify().await).await.ok());
    assert!(matches!(reader.append(entry(0)).await, Err(AuditError::ReadOnly)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_appends_make_64_records_and_one_chain() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "checkpoint_every = 10\nbatch = 7").await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(64));
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let log = log.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                log.append(entry(i)).await
            })
        })
        .collect();
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("append: {e}"),
            Err(e) => panic!("task: {e}"),
        }
    }
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    assert_eq!(records.len(), 64);
    let seqs: BTreeSet<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=64).collect());
    let ids: BTreeSet<String> = records.iter().map(|r| r.json()["jsonrpc.request.id"].to_string()).collect();
    assert_eq!(ids.len(), 64);
    ok("close", log.close().await).await;
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!((report.records, report.checkpoints), (64, 7), "{report}");
}

#[tokio::test]
async fn redaction_by_key_and_pointer_with_comparable_hmacs_caps_and_levels() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(
        dir.path(),
        r#"
        [redact]
        keys = ["x-session-*"]
        pointers = ["/arguments/query", "/result/content/*/text", "/mcp.session.id"]
        max_field_bytes = 1500
        "#,
    )
    .await;
    let mut e = Entry::new("tools/call");
    e.session = Some("session-secret".into());
    e.arguments = Some(json!({
        "query": "select 1",
        "password": "hunter2",
        "nested": {"headers": {"Authorization": "Bearer abc", "X-Session-Id": "s1", "accept": "json"}},
        "items": [{"apiKey": "k1"}, {"apiKey": "k1"}, {"apiKey": "k2"}],
        "max_tokens": 100,
        "config": {"token": {"value": "whole object"}},
    }));
    e.result = Some(json!({"content": [{"type": "text", "text": "private"}], "isError": false}));
    ok("append", log.append(e).await).await;
    let mut e2 = Entry::new("tools/call");
    e2.arguments = Some(json!({"password": "hunter2", "blob": "x".repeat(3000)}));
    e2.result = Some(json!({"content": [], "structuredContent": {"big": "y".repeat(3000)}}));
    ok("append", log.append(e2).await).await;
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    let (a, b) = (records[0].json(), records[1].json());
    let Some(redactor) = log.redactor() else { panic!("no redactor") };
    let hunter = redactor.digest(&json!("hunter2"));
    assert!(hunter.starts_with("hmac-sha256:") && hunter.len() == 12 + 64);
    let args = &a["arguments"];
    assert_eq!(args["password"], hunter.as_str(), "equal values give equal digests");
    assert_eq!(args["query"], redactor.digest(&json!("select 1")).as_str());
    assert_eq!(args["nested"]["headers"]["Authorization"], redactor.digest(&json!("Bearer abc")).as_str());
    assert_eq!(args["nested"]["headers"]["X-Session-Id"], redactor.digest(&json!("s1")).as_str());
    assert_eq!(args["nested"]["headers"]["accept"], "json");
    assert_eq!(args["items"][0]["apiKey"], args["items"][1]["apiKey"]);
    assert_ne!(args["items"][0]["apiKey"], args["items"][2]["apiKey"]);
    assert_eq!(args["max_tokens"], 100);
    assert_eq!(args["config"]["token"], redactor.digest(&json!({"value": "whole object"})).as_str());
    assert_eq!(a["result"]["content"][0]["text"], redactor.digest(&json!("private")).as_str());
    assert_eq!(a["result"]["content"][0]["type"], "text");
    assert_eq!(a["mcp.session.id"], redactor.digest(&json!("session-secret")).as_str());
    assert!(!records[0].text.contains("hunter2") && !records[0].text.contains("Bearer abc"));
    assert!(a.get("audit.truncated").is_none());
    // The cap: both content fields of the second record are cut, and say so.
    assert_eq!(b["arguments"].as_str().map(str::len), Some(1500));
    assert!(b["arguments"].as_str().is_some_and(|s| s.starts_with("{\"blob\":\"xxx")));
    let cut = &b["audit.truncated"];
    assert!(cut["/arguments"].as_u64().is_some_and(|n| n > 3000), "{cut}");
    assert!(cut["/result"].as_u64().is_some_and(|n| n > 3000), "{cut}");
    // The redactor shows a pending approval's arguments as the log keeps them.
    let mut pending = json!({"query": "q", "user": {"password": "p"}});
    redactor.redact_arguments(&mut pending);
    assert_eq!(pending["query"], redactor.digest(&json!("q")).as_str());
    assert_eq!(pending["user"]["password"], redactor.digest(&json!("p")).as_str());
    assert!(ok("verify", log.verify().await).await.ok());
    ok("close", log.close().await).await;

    // The key is the log's own (0600) and stays: a reopened log digests alike.
    for name in ["audit-hmac.key", "audit-signing.key"] {
        let mode = std::fs::metadata(dir.path().join(name)).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600, "{name}");
    }
    let log = open(dir.path(), "").await;
    assert_eq!(log.redactor().map(|r| r.digest(&json!("hunter2"))), Some(hunter.clone()));
    ok("close", log.close().await).await;
    // Another log has another key.
    let other = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(other.path(), "").await;
    assert_ne!(log.redactor().map(|r| r.digest(&json!("hunter2"))), Some(hunter));
    ok("close", log.close().await).await;
}

#[tokio::test]
async fn levels_keep_what_they_say() {
    for (level, has_args, has_result) in
        [("metadata", false, false), ("request", true, false), ("request-response", true, true)]
    {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = open(dir.path(), &format!("level = \"{level}\"")).await;
        let mut e = entry(0);
        e.status = Status::Error;
        e.error = Some(json!({"code": -32603, "message": "boom", "data": {"trace": "…"}}));
        ok("append", log.append(e).await).await;
        ok("flush", log.flush().await).await;
        let v = all(&log).await[0].json();
        assert_eq!(v["audit.level"], level);
        assert_eq!(v.get("arguments").is_some(), has_args, "{level}: {v}");
        assert_eq!(v.get("result").is_some(), has_result, "{level}: {v}");
        assert_eq!(v["error"]["message"], "boom", "{level}");
        assert_eq!(v["error"].get("data").is_some(), has_result, "{level}");
        assert_eq!(v["rpc.response.status_code"], "-32603");
        assert_eq!(v["gen_ai.tool.name"], "fs__tool0");
        ok("close", log.close().await).await;
    }
}

#[tokio::test]
async fn follow_tails_new_records_that_match() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    ok("append", log.append(entry(0)).await).await;
    ok("flush", log.flush().await).await;
    let mut f = Filter::new();
    f.server = Some("web".into());
    let mut tail = ok("follow", log.follow(&f, None).await).await;
    let writer = log.clone();
    let feed = tokio::spawn(async move {
        for i in 1..=6 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let _ = writer.append(entry(i)).await;
        }
    });
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let got = match tokio::time::timeout(Duration::from_secs(10), tail.next()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => panic!("follow: {e}"),
            Err(_) => panic!("follow saw nothing new"),
        };
        seen.extend(got.into_iter().map(|r| r.seq));
    }
    assert_eq!(seen, vec![2, 4, 6]);
    let _ = feed.await;
    ok("close", log.close().await).await;
}

#[tokio::test]
async fn retention_exports_first_and_keeps_the_chain_verifiable_from_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // By size: keep about 8 records' worth.
    let log = open(dir.path(), "checkpoint_every = 5\ncheckpoint_interval = 0").await;
    for i in 0..23 {
        ok("append", log.append(entry(i)).await).await;
    }
    ok("flush", log.flush().await).await;
    let sizes: Vec<usize> = all(&log).await.iter().map(|r| r.text.len()).collect();
    let keep: usize = sizes.iter().rev().take(8).sum();
    ok("close", log.close().await).await;
    let log = open(
        dir.path(),
        &format!("checkpoint_every = 5\ncheckpoint_interval = 0\n[retention]\nmax_size = {keep}\ninterval = \"1h\""),
    )
    .await;
    let pruned = ok("retention", log.apply_retention().await).await;
    assert_eq!(pruned.as_ref().map(|p| (p.first_seq, p.through, p.records)), Some((1, 15, 15)));
    assert_eq!(ok("retention", log.apply_retention().await).await, None, "nothing more to do");
    let left = all(&log).await;
    // 23 records, the oldest ~15 go, cut down to a checkpoint: through 15.
    assert_eq!(left.first().map(|r| r.seq), Some(16), "{:?}", left.iter().map(|r| r.seq).collect::<Vec<_>>());
    let export = dir.path().join("audit-archive/audit-000000000001-000000000015.jsonl");
    let exported = std::fs::read_to_string(&export).unwrap_or_else(|e| panic!("{}: {e}", export.display()));
    let lines: Vec<Value> = exported.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(lines.len(), 15);
    assert_eq!(lines[14]["seq"], 15);
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!(report.first_seq, Some(16));
    // The chain goes on.
    for i in 23..30 {
        ok("append", log.append(entry(i)).await).await;
    }
    ok("close", log.close().await).await;
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!(report.last_seq, Some(30));

    // By age: records that started long ago go.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "checkpoint_every = 4\n[retention]\nmax_age = \"30d\"").await;
    for i in 0..10 {
        let mut e = entry(i);
        let age = if i < 6 { 40 * 86_400 } else { 60 };
        e.start = Some(SystemTime::now() - Duration::from_secs(age));
        ok("append", log.append(e).await).await;
    }
    ok("flush", log.flush().await).await;
    let pruned = ok("retention", log.apply_retention().await).await;
    let Some(pruned) = pruned else { panic!("nothing pruned") };
    // Records 1–6 are old; the checkpoint at or before 6 is at 4.
    assert_eq!((pruned.first_seq, pruned.through, pruned.records), (1, 4, 4));
    assert!(pruned.exported.exists());
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!(report.pruned_through, Some(4));
    ok("close", log.close().await).await;

    // Everything old: every record goes (the close signed a checkpoint at the last), the log
    // still verifies, and the chain goes on from the checkpoint kept.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "checkpoint_every = 4").await;
    for i in 0..6 {
        let mut e = entry(i);
        e.start = Some(SystemTime::now() - Duration::from_secs(40 * 86_400));
        ok("append", log.append(e).await).await;
    }
    ok("close", log.close().await).await;
    drop(log);
    let log = open(dir.path(), "checkpoint_every = 4\n[retention]\nmax_age = \"30d\"").await;
    let pruned = ok("retention", log.apply_retention().await).await;
    assert_eq!(pruned.map(|p| p.through), Some(6));
    assert!(all(&log).await.is_empty());
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    ok("append", log.append(entry(7)).await).await;
    ok("close", log.close().await).await;
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    assert_eq!((report.first_seq, report.last_seq), (Some(7), Some(7)));
}

#[tokio::test]
async fn one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    match AuditLog::open(&RawAudit::default(), dir.path()).await {
        Err(AuditError::Locked(m)) => assert!(m.contains("another Portico"), "{m}"),
        other => panic!("a second writer: {other:?}"),
    }
    ok("close", log.close().await).await;
    drop(log);
    let log = open(dir.path(), "").await;
    ok("close", log.close().await).await;
}

#[test]
fn config_is_checked_and_names_the_key() {
    let dir = Path::new("/state");
    let bad = [
        ("on_failure = \"retry\"", "audit.on_failure"),
        ("level = \"everything\"", "audit.level"),
        ("url = \"mysql://x\"", "audit.url"),
        ("url = \"postgres://x\"\npath = \"a.db\"", "audit.url"),
        ("queue = 0", "audit.queue"),
        ("checkpoint_every = 0", "audit.checkpoint_every"),
        ("queue_timeout = \"soon\"", "audit.queue_timeout"),
        ("[redact]\nmax_field_bytes = \"big\"", "audit.redact.max_field_bytes"),
        ("[redact]\npointers = [\"arguments\"]", "audit.redact"),
        ("[retention]\nmax_age = \"forever\"", "audit.retention.max_age"),
    ];
    for (text, field) in bad {
        match AuditConfig::from_raw(&raw(text), dir) {
            Err(e) => assert!(e.to_string().starts_with(field), "{text}: {e}"),
            Ok(_) => panic!("{text}: accepted"),
        }
    }
    let c = match AuditConfig::from_raw(
        &raw(
            "on_failure = \"buffer\"\nqueue_timeout = 2\n[redact]\ndefault_keys = false\nkeys = [\"pin\"]\n[retention]\nmax_size = \"1GiB\"",
        ),
        dir,
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(c.queue_timeout, Duration::from_secs(2));
    assert_eq!(c.redact.keys, vec!["pin".to_owned()]);
    assert_eq!(c.retention.max_size, Some(1 << 30));
    assert_eq!(c.retention.export_dir, PathBuf::from("/state/audit-archive"));
}

/// Unmounts on drop, even when the test fails.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_full_disk_refuses_clearly_and_loses_nothing() {
    full_disk(false).await;
}

/// The same with every record committed by its own append (a call that came alone), not by
/// the writer task: the failed commit's record is kept back all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_full_disk_loses_nothing_written_alone() {
    full_disk(true).await;
}

async fn full_disk(alone: bool) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let state = dir.path().join("small");
    std::fs::create_dir(&state).unwrap_or_else(|e| panic!("{e}"));
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1536k,mode=0700", "tmpfs"])
        .arg(&state)
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!(
                "SKIPPED sqlite_on_a_full_disk: cannot mount a tmpfs (needs root): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED sqlite_on_a_full_disk: cannot run mount: {e}");
            return;
        }
    }
    let _guard = Mounted(state.clone());
    // Room to free later.
    let filler = state.join("filler");
    std::fs::write(&filler, vec![0u8; 512 * 1024]).unwrap_or_else(|e| panic!("{e}"));

    let log = open(&state, "checkpoint_every = 50").await;
    let big = |i: usize| {
        let mut e = entry(i);
        e.arguments = Some(json!({"blob": format!("{i:08}").repeat(1000)}));
        e
    };
    let mut accepted = BTreeSet::new();
    let mut refusal = None;
    for i in 0..5000 {
        let appended = if alone { log.append_alone(big(i)).await } else { log.append(big(i)).await };
        match appended {
            Ok(()) => {
                accepted.insert(i.to_string());
            }
            Err(e) => {
                // Held in memory: taken, written once there is room again.
                if matches!(e, AuditError::Held { .. }) {
                    accepted.insert(i.to_string());
                }
                refusal = Some(e);
                break;
            }
        }
        if i % 8 == 7 {
            let _ = log.flush().await;
        }
    }
    let Some(refusal) = refusal else { panic!("the disk never filled") };
    let message = refusal.to_string();
    assert!(matches!(refusal, AuditError::Unavailable { .. } | AuditError::Held { .. }), "{message}");
    assert!(message.contains("full"), "the error says the disk is full: {message}");
    assert!(!log.healthy());
    // The refusal starts when the write fails; the records of that write are kept back (spool or
    // memory) a moment later, by the writer task.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while log.health().backlog == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "records taken before the refusal are held: {:?}",
            log.health()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(accepted.len() > 10);

    // Space again: the held records are written, in order, and the log takes appends.
    std::fs::remove_file(&filler).unwrap_or_else(|e| panic!("{e}"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !log.healthy() {
        assert!(tokio::time::Instant::now() < deadline, "never recovered: {:?}", log.health());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    let ids: BTreeSet<String> =
        records.iter().filter_map(|r| r.json()["jsonrpc.request.id"].as_str().map(str::to_owned)).collect();
    assert_eq!(ids, accepted, "every accepted record is in the log");
    assert_eq!(records.len(), accepted.len());
    let report = ok("verify", log.verify().await).await;
    assert!(report.ok(), "{report}");
    ok("close", log.close().await).await;
}

/// The SQLite file locked by another process (`python3`'s sqlite3 module in an exclusive
/// transaction) for longer than the store's busy timeout (10 s): with `on_failure = "buffer"`
/// the appends made meanwhile go to the spool, the store is retried, and once the lock is gone
/// the spool is replayed in order: every record is in the store once and the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_by_another_process_is_outlasted_and_nothing_is_lost() {
    use tokio::io::AsyncBufReadExt as _;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "on_failure = \"buffer\"\nqueue_timeout = 30").await;
    for i in 0..10 {
        ok("append before the lock", log.append(entry(i)).await).await;
    }
    ok("flush", log.flush().await).await;
    let db = dir.path().join("audit.db");
    let hold = "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                c.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(12)\nc.execute('COMMIT')\n";
    let spawned = tokio::process::Command::new("python3")
        .args(["-c", hold])
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut python = match spawned {
        Ok(p) => p,
        Err(e) => {
            // CI (which sets PORTICO_REQUIRE_INTEROP) must run it: a missing peer fails there.
            assert!(std::env::var_os("PORTICO_REQUIRE_INTEROP").is_none(), "python3 is required here: {e}");
            eprintln!("SKIPPED a_lock_held_by_another_process: cannot run python3: {e}");
            return;
        }
    };
    let mut lines = tokio::io::BufReader::new(python.stdout.take().unwrap_or_else(|| panic!("stdout"))).lines();
    let said = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await;
    assert!(matches!(said, Ok(Ok(Some(ref l))) if l == "locked"), "python3 did not take the lock: {said:?}");

    // Appends while it is held: the first waits out the busy timeout, then they are spooled.
    let mut saw_down = false;
    for i in 10..30 {
        ok("append during the lock", log.append(entry(i)).await).await;
        let h = log.health();
        saw_down |= !h.store_ok || h.backlog > 0;
    }
    assert!(saw_down, "the store was never reported down while locked: {:?}", log.health());
    let status = tokio::time::timeout(Duration::from_secs(30), python.wait()).await;
    assert!(matches!(status, Ok(Ok(s)) if s.success()), "python3: {status:?}");

    // The lock is gone: the spool is replayed and the log is whole.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !(log.health().backlog == 0 && log.health().store_ok) {
        assert!(tokio::time::Instant::now() < deadline, "the spool was not replayed: {:?}", log.health());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    let mut ids: Vec<usize> =
        records.iter().filter_map(|r| r.json()["jsonrpc.request.id"].as_str().and_then(|i| i.parse().ok())).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..30).collect::<Vec<_>>(), "every record once");
    let report = ok("verify", log.verify().await).await;
    assert!(report.first_bad_seq().is_none(), "{report:?}");
    ok("close", log.close().await).await;
}

/// A record is committed at once on the runtime's thread when the batch is small, but never
/// waits there for the file's lock: while another connection holds it, the append waits on the
/// blocking pool, the runtime (one thread here) goes on, and the record is in once the lock is
/// gone.
#[tokio::test]
async fn a_short_lock_is_waited_for_off_the_runtime() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    ok("append before the lock", log.append(entry(0)).await).await;
    let db = dir.path().join("audit.db");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let c = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("open: {e}"));
        c.execute_batch("BEGIN EXCLUSIVE").unwrap_or_else(|e| panic!("lock: {e}"));
        let _ = locked_tx.send(());
        std::thread::sleep(Duration::from_millis(1500));
        c.execute_batch("COMMIT").unwrap_or_else(|e| panic!("unlock: {e}"));
    });
    locked_rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|e| panic!("the lock was not taken: {e}"));

    let ticks = std::sync::Arc::new(AtomicU32::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            for _ in 0..1000 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let started = std::time::Instant::now();
    let appended = tokio::time::timeout(Duration::from_secs(30), log.append(entry(1))).await;
    let waited = started.elapsed();
    let ticked = ticks.load(Ordering::Relaxed);
    ticker.abort();
    holder.join().unwrap_or_else(|_| panic!("the lock holder panicked"));
    assert!(matches!(appended, Ok(Ok(()))), "append: {appended:?}");
    assert!(waited >= Duration::from_millis(1000), "the append did not wait for the lock: {waited:?}");
    // About 150 ticks in 1.5 s; none if the wait had blocked the runtime's one thread.
    assert!(ticked >= 50, "the runtime stood still while the append waited ({ticked} ticks in {waited:?})");
    assert_eq!(all(&log).await.len(), 2);
    assert!(log.health().store_ok, "{:?}", log.health());
    ok("close", log.close().await).await;
}

/// Records committed one at a time (each on the runtime's thread) still get the WAL
/// checkpointed: 5,000 commits of about five pages each would make a WAL of some 100 MB. It is
/// checkpointed from 8 MiB on, beside the commits that go on meanwhile (which grow it a little
/// more), and then reused.
#[tokio::test]
async fn the_wal_is_checkpointed_when_records_come_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    for i in 0..5000 {
        ok("append", log.append(entry(i)).await).await;
    }
    let wal = std::fs::metadata(dir.path().join("audit.db-wal")).map(|m| m.len()).unwrap_or(0);
    assert!(wal > 0, "no WAL file: is the log in WAL mode?");
    assert!(wal <= 40 << 20, "the WAL grew to {wal} bytes: it is not checkpointed");
    assert_eq!(all(&log).await.len(), 5000);
    let report = ok("verify", log.verify().await).await;
    assert!(report.first_bad_seq().is_none(), "{report:?}");
    ok("close", log.close().await).await;
}

/// A record's ULID carries its `seq`, so `show` finds it without an index of ids (the log has
/// none since migration 3); an id that does not (a log written before) is found by a scan, and
/// a `seq` that names another record does not stand for it.
#[tokio::test]
async fn show_finds_a_record_by_the_seq_its_id_carries_or_else_by_a_scan() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "").await;
    for i in 0..5 {
        ok("append", log.append(entry(i)).await).await;
    }
    ok("flush", log.flush().await).await;
    let records = all(&log).await;
    let db = rusqlite::Connection::open(dir.path().join("audit.db")).unwrap_or_else(|e| panic!("open: {e}"));
    let indexes: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_records'")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| panic!("indexes: {e}"));
    assert!(!indexes.iter().any(|n| n == "audit_records_id"), "{indexes:?}");
    for r in &records {
        assert_eq!(ok("show", log.show(&r.id).await).await.as_ref(), Some(r));
    }
    // An id from before: its last 40 bits say seq 2, but it is record 4's.
    let old = format!("{}{}", &records[3].id[..18], &records[1].id[18..]);
    assert_ne!(old, records[1].id);
    db.execute("UPDATE audit_records SET id = ?1 WHERE seq = 4", [&old]).unwrap_or_else(|e| panic!("update: {e}"));
    let shown = ok("show", log.show(&old.to_lowercase()).await).await;
    assert_eq!(shown.map(|r| r.seq), Some(4));
    assert_eq!(ok("show", log.show(&records[1].id).await).await.map(|r| r.seq), Some(2));
    // The column no longer says what the record does: verify sees it.
    let report = ok("verify", log.verify().await).await;
    assert_eq!(report.first_bad_seq(), Some(4), "{report:?}");
    ok("close", log.close().await).await;
}

/// Records written one at a time by their appends (not by the writer task) still get a signed
/// checkpoint within `checkpoint_interval`, with no close and no further record to prompt it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_one_at_a_time_get_their_checkpoint_on_time() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = open(dir.path(), "checkpoint_every = 100000\ncheckpoint_interval = \"300ms\"").await;
    let last_checkpoint = || {
        let c = rusqlite::Connection::open(dir.path().join("audit.db")).unwrap_or_else(|e| panic!("open: {e}"));
        c.query_row("SELECT max(seq) FROM audit_checkpoints", [], |r| r.get::<_, Option<i64>>(0))
            .unwrap_or_else(|e| panic!("query: {e}"))
    };
    for round in 1..=2i64 {
        for i in 0..3 {
            ok("append", log.append_alone(entry(i)).await).await;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while last_checkpoint() != Some(round * 3) {
            assert!(std::time::Instant::now() < deadline, "no checkpoint at seq {} after 10 s", round * 3);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let report = ok("verify", log.verify().await).await;
    assert!(report.first_bad_seq().is_none(), "{report:?}");
    ok("close", log.close().await).await;
}

//! `portico serve` gives back its start-up pages once it announces itself (src/pages.rs), and
//! serves on after it.
#![cfg(target_os = "linux")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{config, ev};

/// `RssFile` of `pid`, in kB.
fn rss_file_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find_map(|l| l.strip_prefix("RssFile:")).expect("an RssFile line");
    line.trim().trim_end_matches(" kB").parse().expect("kB")
}

/// Serves `cfg` over stdio with `release` as `PORTICO_RELEASE_STARTUP_PAGES`, waits for the
/// announcement and a moment more, and returns `RssFile` then; a tool call must work after it.
async fn file_pages_after_start(cfg: &str, release: &str) -> u64 {
    let announced = Arc::new(Mutex::new(false));
    let seen = announced.clone();
    let (client, child) = common::connect(
        portico::transport::child::ChildProcess::new(env!("CARGO_BIN_EXE_portico"))
            .args(["serve", "-c", cfg])
            .env("PORTICO_RELEASE_STARTUP_PAGES", release)
            .on_stderr(move |line| {
                if line.starts_with("portico: serving") {
                    *seen.lock().expect("lock") = true;
                }
            }),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !*announced.lock().expect("lock") {
        assert!(Instant::now() < deadline, "portico did not announce itself within 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kb = rss_file_kb(child.pid());
    let r = client.call_tool("ev__add", serde_json::json!({"a": 40, "b": 2})).await.expect("a call after the release");
    assert_eq!(r.structured_content, Some(serde_json::json!({"sum": 42})));
    client.close().await;
    let status = tokio::time::timeout(Duration::from_secs(15), child.shutdown()).await.expect("exits").expect("status");
    assert!(status.success(), "{status}");
    kb
}

#[test]
fn serve_gives_back_its_start_up_pages_and_serves_on() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &ev("ev"));
    let cfg = cfg.to_str().expect("utf-8");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let kept = file_pages_after_start(cfg, "0").await;
        let released = file_pages_after_start(cfg, "1").await;
        eprintln!("RssFile: kept {kept} kB, released {released} kB");
        assert!(
            released * 2 < kept,
            "RssFile {released} kB with the release, {kept} kB without: expected less than half"
        );
    });
}

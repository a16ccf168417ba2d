//! `portico serve` stopped by SIGTERM with tool calls in flight: a call that ends within the
//! drain timeout is answered, a longer one is cancelled (upstream too) and answered with an
//! error, a call that arrives meanwhile is refused, the process exits, and every one of them
//! is in the activity log, whose chain verifies.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{config, ev, portico, run};
use serde_json::{Value, json};

#[test]
fn sigterm_drains_the_calls_in_flight_then_cancels_the_rest() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &ev("ev"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (short, long, late, before, took) = rt.block_on(async {
        let (client, child) =
            common::serve_and_connect(&["serve", "--drain-timeout", "1.5", "-c", cfg.to_str().expect("utf-8")]).await;
        let sleep = |ms: u64| {
            let c = client.clone();
            tokio::spawn(async move { c.call_tool("ev__sleep", json!({ "ms": ms })).await })
        };
        // Warm: the upstream has started and answers.
        let warm = client.call_tool("ev__sleep", json!({ "ms": 1 })).await.expect("warm call");
        assert_eq!(warm.is_error, None, "{warm:?}");
        let short = sleep(700);
        let long = sleep(60_000);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let signalled = Instant::now();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.pid()).expect("pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A call after the signal is refused; until the gateway has seen the signal (on a busy
        // machine, a moment), one may still go through: those are counted.
        let mut before = 0;
        let late = loop {
            let r = client.call_tool("ev__sleep", json!({ "ms": 1 })).await;
            match &r {
                Ok(ok) if ok.is_error.is_none() && before < 50 => {
                    before += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => break r,
            }
        };
        let short = tokio::time::timeout(Duration::from_secs(10), short).await.expect("short answered").expect("join");
        let long = tokio::time::timeout(Duration::from_secs(15), long).await.expect("long answered").expect("join");
        let took = signalled.elapsed();
        // The gateway exits by itself.
        let exited = tokio::time::timeout(Duration::from_secs(15), child.shutdown()).await;
        assert!(exited.is_ok(), "portico did not exit after SIGTERM");
        (short, long, late, before, took)
    });
    let text = |r: &portico::schema::CallToolResult| {
        r.content.iter().filter_map(|c| c.as_text()).map(str::to_owned).collect::<Vec<_>>().join(" ")
    };
    let short = short.expect("the short call is answered");
    assert_eq!((short.is_error, text(&short)), (None, "slept 700 ms".to_owned()), "finished during the drain");
    let long = long.expect("the long call is answered");
    assert_eq!(long.is_error, Some(true), "{long:?}");
    assert!(text(&long).contains("cancelled"), "{long:?}");
    assert!(took >= Duration::from_millis(1200) && took < Duration::from_secs(10), "cancelled after {took:?}");
    let late = late.expect("the late call is answered");
    assert_eq!(late.is_error, Some(true), "{late:?}");
    assert!(text(&late).contains("shutting down"), "{late:?}");

    // The log has all four calls, each with what became of it, and verifies.
    let c = cfg.to_str().expect("utf-8");
    let (code, out, err) = run(portico().args(["log", "--json", "-n", "100", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(!records.is_empty() && records.iter().all(|r| r["network.transport"] == "pipe"), "over stdio: {out}");
    let status_of = |ms: u64| -> Vec<String> {
        records
            .iter()
            .filter(|r| r["arguments"]["ms"] == json!(ms))
            .map(|r| r["status"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(status_of(700), ["success"], "{out}");
    assert_eq!(status_of(60_000), ["cancelled"], "{out}");
    let quick = status_of(1);
    let count = |status: &str| quick.iter().filter(|s| *s == status).count();
    assert_eq!(count("denied"), 1, "the refused call: {out}");
    assert_eq!(count("success"), 1 + before, "the warm-up call and any made before the signal was seen: {out}");
    let (code, out, err) = run(portico().args(["log", "verify", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "{out}{err}");
}

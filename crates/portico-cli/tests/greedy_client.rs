//! Abusive peers around `portico serve`: a downstream client that pipelines 10,000 tool calls
//! and does not read the answers (the gateway stops reading at its in-flight limit, its memory
//! stays bounded, and once the client reads every call is answered), and an upstream that floods
//! progress and log notifications while the same client calls another upstream (bounded memory;
//! the other calls are answered, their latency printed), and the same flood sent to one of two
//! HTTP clients while the other calls.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{config, ev, portico};

const CALLS: usize = 10_000;
/// The gateway's resident memory while the client does not read (it is about 20 MB idle).
const RSS_BOUND_KIB: u64 = 96 * 1024;

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A message without an id: a notification, not an answer.
fn is_notification(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get("id").is_none())
}

#[test]
fn ten_thousand_pipelined_calls_never_read_keep_memory_bounded_then_all_are_answered() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &ev("ev"));
    let mut child = portico()
        .args(["serve", "-c", cfg.to_str().expect("utf-8")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn portico");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();

    // The handshake, read as a client must.
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"greedy","version":"1"}}}"#;
    writeln!(stdin, "{init}").expect("initialize");
    let answer = lines.next().expect("an answer").expect("read");
    assert!(answer.contains("\"result\""), "{answer}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).expect("initialized");
    // The tools are there once the upstream has started.
    let started = Instant::now();
    loop {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"list","method":"tools/list"}}"#).expect("list");
        let answer = loop {
            let line = lines.next().expect("an answer").expect("read");
            if !is_notification(&line) {
                break line;
            }
        };
        if answer.contains("ev__add") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the upstream never started: {answer}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // 10,000 calls written from another thread; nobody reads.
    let writer = std::thread::spawn(move || {
        for i in 0..CALLS {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"ev__add","arguments":{{"a":{i},"b":1}}}}}}"#,
                i + 1
            );
            if writeln!(stdin, "{call}").is_err() {
                return i;
            }
        }
        let _ = stdin.flush();
        // Keep stdin open until the answers are read: closing it would end the session.
        std::thread::sleep(Duration::from_secs(120));
        CALLS
    });
    let mut peak = 0;
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_secs(4) {
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(peak > 0, "no RSS read for pid {pid}");
    assert!(peak < RSS_BOUND_KIB, "the gateway grew to {peak} KiB while the client did not read");

    // The client reads: every call is answered.
    let mut answered = 0;
    let reading = Instant::now();
    while answered < CALLS {
        assert!(reading.elapsed() < Duration::from_secs(120), "only {answered} of {CALLS} answers");
        let line = lines.next().expect("an answer").expect("read");
        if is_notification(&line) {
            continue; // `list_changed` as the upstream joins, and the like
        }
        if line.contains("\"result\"") && !line.contains("isError\":true") {
            answered += 1;
        } else {
            panic!("not an answer: {line}");
        }
    }
    eprintln!("greedy client: {CALLS} calls answered; gateway peak RSS while unread {peak} KiB");
    let _ = child.kill();
    let _ = child.wait();
    drop(writer);
}

/// p50 and p99 of `n` calls of `other__add` (another upstream than the flooding one), one at a
/// time.
async fn latencies(client: &portico::client::Client, n: usize) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            client.call_tool("other__add", serde_json::json!({"a": i, "b": 1})),
        )
        .await
        .expect("answered within 10 s")
        .expect("call");
        assert_eq!(r.is_error, None, "{r:?}");
        times.push(t.elapsed());
    }
    times.sort_unstable();
    (times[n / 2], times[n * 99 / 100])
}

/// Starts a flood of `steps` progress and log notifications from `ev__countdown` on `client`,
/// counting the progress notifications that reach it.
fn flood(
    client: &portico::client::Client,
    steps: usize,
) -> (
    tokio::task::JoinHandle<Result<portico::schema::CallToolResult, portico::Error>>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let options = portico::client::CallOptions::new().with_progress(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let client = client.clone();
    let task = tokio::spawn(async move {
        client.call_tool_with("ev__countdown", serde_json::json!({ "steps": steps }), options).await
    });
    (task, seen)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Waits for the flood to end (2 min at most), prints what reached the client, the gateway's peak
/// RSS and the latencies, and checks the flood was forwarded within the memory bound.
async fn flood_ends(
    flood: tokio::task::JoinHandle<Result<portico::schema::CallToolResult, portico::Error>>,
    seen: &std::sync::atomic::AtomicUsize,
    steps: usize,
    pid: u32,
    what: &str,
    (idle_p50, idle_p99): (Duration, Duration),
    (busy_p50, busy_p99): (Duration, Duration),
) {
    let peak = rss_kib(pid);
    let done = tokio::time::timeout(Duration::from_secs(120), flood).await.expect("the flood ends").expect("join");
    let done = done.expect("countdown");
    assert_eq!(done.is_error, None, "{done:?}");
    let peak = peak.max(rss_kib(pid));
    let progress = seen.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{what}: {steps} steps, {progress} progress notifications reached the client (a flood beyond the gateway's \
         per-call queue is dropped); gateway RSS {peak} KiB; latency idle p50 {:.2} ms p99 {:.2} ms, during the flood \
         p50 {:.2} ms p99 {:.2} ms",
        ms(idle_p50),
        ms(idle_p99),
        ms(busy_p50),
        ms(busy_p99)
    );
    assert!(progress > 0 && progress <= steps, "progress forwarded: {progress}");
    assert!(peak < RSS_BOUND_KIB, "the gateway grew to {peak} KiB under the flood");
}

#[test]
fn an_upstream_flooding_notifications_keeps_the_gateway_bounded_and_other_calls_answered() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &format!("{}{}", ev("ev"), ev("other")));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (client, child) = common::serve_and_connect(&["serve", "-c", cfg.to_str().expect("utf-8")]).await;
        let pid = child.pid();
        let (idle_p50, idle_p99) = latencies(&client, 200).await;
        // 50,000 steps, each a progress and a log notification, as fast as the upstream can.
        let steps = 50_000;
        let (flood, seen) = flood(&client, steps);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (busy_p50, busy_p99) = latencies(&client, 200).await;
        let what = "flooding upstream, one stdio client; other__add (another upstream)";
        flood_ends(flood, &seen, steps, pid, what, (idle_p50, idle_p99), (busy_p50, busy_p99)).await;
        client.close().await;
        let _ = tokio::time::timeout(Duration::from_secs(10), child.shutdown()).await;
    });
}

#[test]
fn a_flood_for_one_http_client_leaves_another_client_answered() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &format!("{}{}", ev("ev"), ev("other")));
    let mut gateway = portico()
        .args(["serve", "-c", cfg.to_str().expect("utf-8"), "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portico serve --http");
    let pid = gateway.id();
    // The URL, from stderr (bounded: 200 lines); the rest of stderr is drained meanwhile.
    let mut lines = BufReader::new(gateway.stderr.take().expect("stderr")).lines();
    let url = (0..200)
        .map_while(|_| lines.next().and_then(Result::ok))
        .find_map(|l| {
            let start = l.find("http://127.0.0.1:")?;
            let end = l[start..].find("/mcp")? + start + "/mcp".len();
            Some(l[start..end].to_owned())
        })
        .expect("portico serve --http names its URL");
    std::thread::spawn(move || lines.for_each(drop));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let connect = |name: &'static str| {
            let url = url.clone();
            async move {
                let transport = portico::transport::http::client::HttpClientTransport::new(url.as_str());
                tokio::time::timeout(
                    Duration::from_secs(20),
                    portico::client::Client::builder(portico::schema::Implementation::new(name, "1"))
                        .connect(transport),
                )
                .await
                .expect("connected in time")
                .expect("connect")
            }
        };
        let flooded = connect("flooded").await;
        let other = connect("other").await;
        let (idle_p50, idle_p99) = latencies(&other, 200).await;
        let steps = 50_000;
        let (flood, seen) = flood(&flooded, steps);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (busy_p50, busy_p99) = latencies(&other, 200).await;
        let what = "flood to one of two HTTP clients; the other client's other__add";
        flood_ends(flood, &seen, steps, pid, what, (idle_p50, idle_p99), (busy_p50, busy_p99)).await;
        flooded.close().await;
        other.close().await;
    });
    let _ = gateway.kill();
    let _ = gateway.wait();
}

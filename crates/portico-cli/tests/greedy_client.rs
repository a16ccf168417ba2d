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

use common::{Guard, config, ev, portico};

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
    let mut child = Guard(
        portico()
            .args(["serve", "-c", cfg.to_str().expect("utf-8")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn portico"),
    );
    let pid = child.0.id();
    let mut stdin = child.0.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.0.stdout.take().expect("stdout")).lines();

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
    drop(child);
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

/// The flooding call: its result, and how long it took.
type FloodCall = tokio::task::JoinHandle<(Result<portico::schema::CallToolResult, portico::Error>, Duration)>;

/// Starts a flood of `steps` progress and log notifications from `ev__countdown` on `client`,
/// counting the progress notifications that reach it.
fn flood(
    client: &portico::client::Client,
    steps: usize,
) -> (FloodCall, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let options = portico::client::CallOptions::new().with_progress(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let client = client.clone();
    let task = tokio::spawn(async move {
        let started = Instant::now();
        let r = client.call_tool_with("ev__countdown", serde_json::json!({ "steps": steps }), options).await;
        (r, started.elapsed())
    });
    (task, seen)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Waits for the flood to end (2 min at most), prints what reached the client, the gateway's peak
/// RSS and the latencies, and checks the flood was forwarded within the memory bound.
async fn flood_ends(
    flood: FloodCall,
    seen: &std::sync::atomic::AtomicUsize,
    steps: usize,
    pid: u32,
    what: &str,
    (idle_p50, idle_p99): (Duration, Duration),
    (busy_p50, busy_p99): (Duration, Duration),
) {
    let peak = rss_kib(pid);
    let (done, took) =
        tokio::time::timeout(Duration::from_secs(120), flood).await.expect("the flood ends").expect("join");
    let done = done.expect("countdown");
    assert_eq!(done.is_error, None, "{done:?}");
    let peak = peak.max(rss_kib(pid));
    let progress = seen.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{what}: {steps} steps in {:.1} s, {progress} progress notifications reached the client (a flood beyond the \
         gateway's per-call queue is dropped); gateway RSS {peak} KiB; latency idle p50 {:.2} ms p99 {:.2} ms, during \
         the flood p50 {:.2} ms p99 {:.2} ms",
        took.as_secs_f64(),
        ms(idle_p50),
        ms(idle_p99),
        ms(busy_p50),
        ms(busy_p99)
    );
    assert!(progress > 0 && progress <= steps, "progress forwarded: {progress}");
    // The gateway reads the upstream's notifications at 2,000 a second, a burst of as many:
    // `steps` progress notifications (and as many log messages) take at least this long.
    let floor = Duration::from_secs_f64((steps as f64 - 2_000.0).max(0.0) / 2_000.0);
    assert!(took >= floor, "the flood of {steps} steps took {took:?}, under the rate's {floor:?}");
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
        // 20,000 steps, each a progress and a log notification, as fast as the upstream can
        // write them; the gateway reads 2,000 notifications a second from it (the default
        // `max_notifications_per_sec`), so the flood lasts about 20 s.
        let steps = 20_000;
        let (flood, seen) = flood(&client, steps);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (busy_p50, busy_p99) = latencies(&client, 200).await;
        let what = "flooding upstream, one stdio client; other__add (another upstream)";
        flood_ends(flood, &seen, steps, pid, what, (idle_p50, idle_p99), (busy_p50, busy_p99)).await;
        client.close().await;
        let _ = tokio::time::timeout(Duration::from_secs(10), child.shutdown()).await;
    });
}

/// `portico serve --http` on a free loopback port: the child and its MCP endpoint's URL.
fn serve_http(cfg: &std::path::Path) -> (Guard, String) {
    let mut gateway = portico()
        .args(["serve", "-c", cfg.to_str().expect("utf-8"), "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portico serve --http");
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
    (Guard(gateway), url)
}

async fn connect_http(url: &str, name: &'static str) -> portico::client::Client {
    let transport = portico::transport::http::client::HttpClientTransport::new(url);
    tokio::time::timeout(
        Duration::from_secs(20),
        portico::client::Client::builder(portico::schema::Implementation::new(name, "1")).connect(transport),
    )
    .await
    .expect("connected in time")
    .expect("connect")
}

#[test]
fn a_flood_for_one_http_client_leaves_another_client_answered() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &format!("{}{}", ev("ev"), ev("other")));
    let (gateway, url) = serve_http(&cfg);
    let pid = gateway.0.id();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let flooded = connect_http(&url, "flooded").await;
        let other = connect_http(&url, "other").await;
        let (idle_p50, idle_p99) = latencies(&other, 200).await;
        let steps = 20_000;
        let (flood, seen) = flood(&flooded, steps);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (busy_p50, busy_p99) = latencies(&other, 200).await;
        let what = "flood to one of two HTTP clients; the other client's other__add";
        flood_ends(flood, &seen, steps, pid, what, (idle_p50, idle_p99), (busy_p50, busy_p99)).await;
        flooded.close().await;
        other.close().await;
    });
    drop(gateway);
}

/// Counts the complete HTTP/1.1 status lines in `bytes` (200s, and others), and drops what was
/// counted, keeping a status line cut off at the end for the next read.
fn status_lines(bytes: &mut Vec<u8>) -> (usize, usize) {
    const START: &[u8] = b"HTTP/1.1 ";
    let (mut ok, mut other, mut pos) = (0, 0, 0);
    let keep = loop {
        match bytes[pos..].windows(START.len()).position(|w| w == START) {
            Some(i) if pos + i + START.len() + 3 <= bytes.len() => {
                let status = &bytes[pos + i + START.len()..pos + i + START.len() + 3];
                if status == b"200" {
                    ok += 1;
                } else {
                    other += 1;
                }
                pos += i + START.len() + 3;
            }
            Some(i) => break pos + i,
            None => break bytes.len().saturating_sub(START.len()).max(pos),
        }
    };
    bytes.drain(..keep);
    (ok, other)
}

/// One HTTP/1.1 exchange on a connection of its own (`Connection: close`): the whole response.
fn http_exchange(addr: &str, body: &str, session: Option<&str>) -> String {
    use std::io::Read;
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let session =
        session.map(|s| format!("mcp-session-id: {s}\r\nmcp-protocol-version: 2025-11-25\r\n")).unwrap_or_default();
    write!(
        tcp,
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, \
         text/event-stream\r\n{session}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut out = String::new();
    tcp.read_to_string(&mut out).expect("read");
    out
}

/// A client that pipelines 10,000 calls on one HTTP/1.1 connection and reads nothing: the
/// gateway stops reading that connection once its socket buffers are full, its memory stays
/// bounded, another client's calls keep their latency, and once the client reads, every call
/// is answered.
#[test]
fn an_http_client_pipelining_ten_thousand_calls_unread_leaves_another_client_answered() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &format!("{}{}", ev("ev"), ev("other")));
    let (gateway, url) = serve_http(&cfg);
    let pid = gateway.0.id();
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let other = rt.block_on(connect_http(&url, "other"));
    let (idle_p50, idle_p99) = rt.block_on(latencies(&other, 200));

    // The greedy client's session.
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"greedy","version":"1"}}}"#;
    let answer = http_exchange(&addr, init, None);
    let session = answer
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {answer}"));
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = http_exchange(&addr, note, Some(&session));
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");

    // 10,000 requests written back to back on one connection, from another thread; nobody reads.
    let mut tcp = std::net::TcpStream::connect(&addr).expect("connect");
    let mut sink = tcp.try_clone().expect("clone");
    let (host, sid) = (addr.clone(), session.clone());
    let writer = std::thread::spawn(move || {
        for i in 0..CALLS {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"ev__add","arguments":{{"a":{i},"b":1}}}}}}"#,
                i + 1
            );
            let request = format!(
                "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json, \
                 text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if sink.write_all(request.as_bytes()).is_err() {
                return i;
            }
        }
        CALLS
    });
    // Give the gateway time to fill the connection's buffers, then measure the other client.
    std::thread::sleep(Duration::from_secs(2));
    let mut peak = rss_kib(pid);
    let (busy_p50, busy_p99) = rt.block_on(latencies(&other, 200));
    peak = peak.max(rss_kib(pid));
    assert!(peak > 0, "no RSS read for pid {pid}");
    assert!(peak < RSS_BOUND_KIB, "the gateway grew to {peak} KiB while the client did not read");

    // The client reads: every call is answered, each with a 200.
    tcp.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let (mut answered, mut refused, mut carry) = (0usize, 0usize, Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    let reading = Instant::now();
    while answered + refused < CALLS {
        assert!(reading.elapsed() < Duration::from_secs(120), "only {answered} of {CALLS} answers");
        let n = tcp.read(&mut buf).expect("read");
        assert!(n > 0, "the connection closed after {answered} answers");
        carry.extend_from_slice(&buf[..n]);
        let (ok, other) = status_lines(&mut carry);
        (answered, refused) = (answered + ok, refused + other);
    }
    let written = writer.join().expect("writer");
    eprintln!(
        "greedy HTTP client: {written} calls pipelined on one connection, {answered} answered 200; gateway RSS while \
         unread {peak} KiB; the other client's other__add latency idle p50 {:.2} ms p99 {:.2} ms, while unread p50 \
         {:.2} ms p99 {:.2} ms",
        ms(idle_p50),
        ms(idle_p99),
        ms(busy_p50),
        ms(busy_p99)
    );
    assert_eq!((written, answered, refused), (CALLS, CALLS, 0));
    rt.block_on(other.close());
    drop(gateway);
}

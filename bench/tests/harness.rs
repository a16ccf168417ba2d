//! The harness works end to end: the driver runs every workload against the bench server (both
//! eras) and against the raw echo baseline for a moment, verifying every response. No figure
//! is judged: this proves the plumbing, not the speed.

use std::process::Command;

fn drive(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_bench-driver"))
        .args(["--duration", "0.2", "--warmup", "0.05", "--json"])
        .args(args)
        .output()
        .expect("run bench-driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench-driver {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("--json prints one JSON document");
    let figures = doc["figures"].as_array().expect("figures");
    assert!(!figures.is_empty());
    for f in figures {
        assert!(f["void"].is_null(), "{f}");
        assert!(f["calls"].as_u64().is_some_and(|n| n > 0), "{f}");
    }
    doc
}

#[test]
fn every_workload_against_the_bench_server_in_both_eras_and_on_pipes() {
    let server = env!("CARGO_BIN_EXE_bench-server");
    for (era, mode) in [("handshake", "stdio"), ("stateless", "stdio"), ("handshake", "stdio-pipe")] {
        let doc = drive(&["--era", era, "stdio", "--", server, mode]);
        let names: Vec<&str> =
            doc["figures"].as_array().into_iter().flatten().filter_map(|f| f["workload"].as_str()).collect();
        assert_eq!(names, ["seq", "pipe64", "pipe1024", "hol", "list", "blob"], "{era}");
        assert_eq!(doc["serverInfo"].as_str().map(|s| s.contains("portico-bench-server")), Some(true), "{doc}");
    }
}

#[test]
fn the_bare_relay_passes_every_call_through_with_its_id_restored() {
    // bench-gateway's floor: it renumbers each request's id upstream and maps answers back. Out
    // of order answers (`hol`: a slow call among fast ones) and pipelined ones come back to the
    // id they were asked under, or the driver voids the figure.
    let (relay, server) = (env!("CARGO_BIN_EXE_bench-gateway"), env!("CARGO_BIN_EXE_bench-server"));
    for era in ["handshake", "stateless"] {
        let doc = drive(&[
            "--era",
            era,
            "--workloads",
            "seq,pipe64,hol,list",
            "stdio",
            "--",
            relay,
            "relay",
            server,
            "stdio",
        ]);
        assert_eq!(doc["serverInfo"].as_str().map(|s| s.contains("portico-bench-server")), Some(true), "{doc}");
    }
}

#[test]
fn the_committing_relays_commit_one_record_per_tool_call() {
    // bench-gateway's floors with the log on: each relay commits a record for each `tools/call`
    // before it answers, and passes every call through as the bare relay does. Warm-up calls
    // are recorded too, so the log holds at least the measured calls; a `tools/list` is not.
    let (gateway, server) = (env!("CARGO_BIN_EXE_bench-gateway"), env!("CARGO_BIN_EXE_bench-server"));
    let stored = |dir: &std::path::Path| -> u64 {
        let c = rusqlite::Connection::open(dir.join("audit.db")).expect("open the relay's log");
        let n: i64 = c.query_row("SELECT count(*) FROM audit_records", [], |r| r.get(0)).expect("count");
        u64::try_from(n).unwrap_or(0)
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().to_string_lossy().into_owned();
    let doc = drive(&["--workloads", "seq,list", "stdio", "--", gateway, "relay", "--commit", &state, server, "stdio"]);
    let calls = doc["figures"][0]["calls"].as_u64().expect("seq's calls");
    let records = stored(dir.path());
    assert!(records >= calls && calls > 0, "{records} records for {calls} calls");

    // Over HTTP, with an upstream of its own on a free loopback port, stopped at the end.
    struct Upstream(std::process::Child);
    impl Drop for Upstream {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let _upstream =
        Upstream(Command::new(server).args(["http", &port.to_string()]).spawn().expect("start the bench server"));
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the bench server did not listen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().to_string_lossy().into_owned();
    let port = port.to_string();
    let doc =
        drive(&["--workloads", "http1", "http", "--", gateway, "http-relay", &port, "{port}", "--commit", &state]);
    let calls = doc["figures"][0]["calls"].as_u64().expect("http1's calls");
    let records = stored(dir.path());
    assert!(records >= calls && calls > 0, "{records} records for {calls} calls");

    // A bad option is a usage error.
    let bad = Command::new(gateway).args(["relay", "--commit"]).output();
    assert_eq!(bad.expect("run").status.code(), Some(64));
}

#[test]
fn the_commit_floor_writes_every_record_and_reports_its_latency() {
    // bench-gateway's floor with the log on: N records committed one by one into the log's
    // layout. It checks that all N are stored (or fails), and prints p50 <= p99.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_bench-gateway"))
        .args(["commit", "--commits", "300"])
        .arg(dir.path())
        .output()
        .expect("run bench-gateway commit");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    let figure = |name: &str| -> f64 {
        let rest = text.split(&format!("{name} ")).nth(1).unwrap_or_else(|| panic!("no {name} in {text}"));
        rest.split(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("bad {name} in {text}"))
    };
    let (p50, p99) = (figure("p50"), figure("p99"));
    assert!(text.contains("300 commits"), "{text}");
    assert!(p50 > 0.0 && p50 <= p99, "{text}");
    // The database is removed afterwards.
    assert_eq!(std::fs::read_dir(dir.path()).expect("read dir").count(), 0, "left files behind");
    // Bad arguments are a usage error.
    let bad = Command::new(env!("CARGO_BIN_EXE_bench-gateway")).args(["commit", "--commits", "0"]).output();
    assert_eq!(bad.expect("run").status.code(), Some(64));
}

#[test]
fn raw_echo_baseline() {
    drive(&["raw-echo", "--bin", env!("CARGO_BIN_EXE_raw-echo")]);
}

#[test]
fn the_raw_echo_floor_speaks_the_stateless_era() {
    // `bench/eras.sh` compares the eras on the floor too: `server/discover` and stamped results,
    // verified by the driver like the bench server's.
    let doc =
        drive(&["--era", "stateless", "--workloads", "seq,pipe64", "stdio", "--", env!("CARGO_BIN_EXE_raw-echo")]);
    assert_eq!(doc["protocolVersion"], "2026-07-28 (stateless)", "{doc}");
    assert_eq!(doc["serverInfo"].as_str().map(|s| s.contains("raw-echo")), Some(true), "{doc}");
}

#[test]
fn a_broken_server_voids_the_figure() {
    // `cat` echoes each request back: a request is not a response, so every figure is void.
    let out = Command::new(env!("CARGO_BIN_EXE_bench-driver"))
        .args(["--duration", "0.1", "--warmup", "0", "--workloads", "seq", "stdio", "--", "cat"])
        .output()
        .expect("run bench-driver");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("VOID"));
}

#[test]
fn http_workloads_against_the_bench_server_in_both_eras_and_the_hyper_echo() {
    let server = env!("CARGO_BIN_EXE_bench-server");
    let doc = drive(&["--sessions", "20", "--era", "handshake", "http", "--", server, "http", "{port}"]);
    let names: Vec<&str> =
        doc["figures"].as_array().into_iter().flatten().filter_map(|f| f["workload"].as_str()).collect();
    assert_eq!(names, ["http1", "http16", "http64", "sessions"]);
    let sessions = doc["figures"].as_array().and_then(|f| f.last()).expect("sessions figure");
    assert!(sessions["kb_per_session"].as_f64().is_some(), "{sessions}");
    let doc = drive(&["--era", "stateless", "http", "--", server, "http", "{port}"]);
    assert_eq!(doc["serverInfo"].as_str().map(|s| s.contains("portico-bench-server")), Some(true), "{doc}");
    drive(&["--era", "bare", "http", "--", env!("CARGO_BIN_EXE_http-echo"), "{port}"]);
}

#[test]
fn http_workloads_against_the_bench_server_and_the_hyper_echo_on_connection_threads() {
    // `compare.sh --threads`' rows: each connection on one of a thread per CPU, 64 of them
    // spread over those threads, every answer verified by the driver.
    let server = env!("CARGO_BIN_EXE_bench-server");
    for era in ["handshake", "stateless"] {
        let doc = drive(&["--sessions", "20", "--era", era, "http", "--", server, "http-threads", "{port}"]);
        let names: Vec<&str> =
            doc["figures"].as_array().into_iter().flatten().filter_map(|f| f["workload"].as_str()).collect();
        // No sessions in the stateless era.
        let sessions: &[&str] = if era == "handshake" { &["sessions"] } else { &[] };
        assert_eq!(names, [&["http1", "http16", "http64"][..], sessions].concat(), "{era}");
        if era == "stateless" {
            assert_eq!(doc["serverInfo"].as_str().map(|s| s.contains("portico-bench-server")), Some(true), "{doc}");
        }
    }
    drive(&[
        "--workloads",
        "http1,http64",
        "--era",
        "bare",
        "http",
        "--",
        env!("CARGO_BIN_EXE_http-echo"),
        "{port}",
        "--threads",
    ]);
}

#[test]
fn an_http_server_that_answers_wrongly_voids_the_figure() {
    // The hyper echo answers every POST with the request's id: the handshake era needs a session
    // id from initialize, which it never gives, so the figure is void.
    let out = Command::new(env!("CARGO_BIN_EXE_bench-driver"))
        .args(["--duration", "0.1", "--warmup", "0", "--workloads", "http1", "http", "--"])
        .arg(env!("CARGO_BIN_EXE_http-echo"))
        .output()
        .expect("run bench-driver");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("VOID"));
}

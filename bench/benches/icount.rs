//! `icount SCENARIO ROUNDS`: a deterministic workload for instruction counting under
//! `valgrind --tool=callgrind` (see `bench/gate.sh`, which runs each scenario at two round
//! counts and divides the difference, so start-up cancels out).
//!
//! Everything runs in-process on a current-thread Tokio runtime (no thread hand-offs, no
//! sockets, so the count is repeatable), against the bench server of `portico_bench::server`:
//!
//! - `echo-handshake`: over `portico::transport::memory`, after `initialize`: each round writes
//!   64 `tools/call echo` requests, then reads and checks the 64 responses (one op = one echo);
//! - `echo-2025-06-18`: the same after an `initialize` of 2025-06-18 (an older revision's
//!   encoding path);
//! - `echo-stateless`: the same with the 2026-07-28 `_meta` on every request, no handshake;
//! - `list`: one `tools/list` (1002 tools) per round, handshake era;
//! - `http-stateless`: one stateless `POST /mcp` echo per round through Portico's Streamable HTTP
//!   router (`HttpEndpoint::router`, called as a tower service: the HTTP layer without sockets);
//! - `http-handshake`: the same within one session (`initialize` first);
//! - `gateway`: `echo-handshake` through the gateway (`portico_host::gateway::Gateway`, the
//!   server `portico serve` runs) with the activity log on (SQLite, the default), its one
//!   upstream the `bench-server stdio` binary named by `PORTICO_GATE_UPSTREAM` (a child
//!   process: callgrind counts the gateway alone, policy → upstream → audit included);
//! - `gateway-list`: one `tools/list` of the bench server's 1,002 tools per round through the
//!   same gateway (served from the SDK's cached page: no upstream, no activity-log record).
//!
//! - `gateway-big`: one `echo` of a 16 KiB text per round through the same gateway (the
//!   result's bytes, relayed as the upstream wrote them, and the activity log's copy of them);
//! - `gateway-http`: one `echo` per round through the same gateway, its upstream the same binary
//!   as `bench-server http` on a free loopback port (the HTTP client's call path: one call at a
//!   time, on one pooled connection);
//! - `floor-handshake` / `floor-stateless`: the same 64 echo requests per round, from the same
//!   client code, answered by [`portico_bench::floor::answer`] (the least a server can do, the
//!   logic of `raw-echo`) with no transport and no runtime. Their difference is the least that
//!   the stateless era's bytes cost any server and this client.
//!
//! With ROUNDS = 0 only the set-up runs. Any unexpected response panics (the count would be
//! meaningless).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use axum::body::Body;
use http_body_util::BodyExt;
use portico::transport::FrameWriter;
use portico_bench::inproc::{Client, INIT, check_echo, echo};
use tower::ServiceExt;

const WINDOW: u64 = 64;

async fn pipelined(rounds: u64, version: Option<&str>) {
    let mut c = Client::with_version(version).await;
    pipelined_on(&mut c, rounds, version.is_none()).await;
}

async fn pipelined_on(c: &mut Client, rounds: u64, stateless: bool) {
    let mut id = 1;
    for _ in 0..rounds {
        for i in 0..WINDOW {
            c.w.write_frame(&echo(id + i, stateless)).await.unwrap();
        }
        c.w.flush().await.unwrap();
        let mut seen = 0u64;
        for _ in 0..WINDOW {
            let got = check_echo(&c.read().await, None);
            assert!((id..id + WINDOW).contains(&got));
            seen += got;
        }
        assert_eq!(seen, (id..id + WINDOW).sum::<u64>());
        id += WINDOW;
    }
}

/// The gateway `portico serve` runs, in-process, over the bench server (see the module docs),
/// with a client connected after `initialize`. Shut down with [`gateway_end`].
async fn gateway_start()
-> (portico_host::Host, std::sync::Arc<portico_host::oversight::Supervisor>, Client, tempfile::TempDir) {
    let upstream = upstream_binary();
    gateway_over(&format!("command = {upstream:?}\nargs = [\"stdio\"]\n")).await
}

/// The bench server's binary, named by `PORTICO_GATE_UPSTREAM`.
fn upstream_binary() -> String {
    std::env::var("PORTICO_GATE_UPSTREAM")
        .expect("PORTICO_GATE_UPSTREAM: the path of the bench-server binary (bench/gate.sh sets it)")
}

/// [`gateway_start`] with `server` as the `[servers.bench]` table's way to reach the upstream.
async fn gateway_over(
    server: &str,
) -> (portico_host::Host, std::sync::Arc<portico_host::oversight::Supervisor>, Client, tempfile::TempDir) {
    use std::time::Duration;

    use portico_host::config;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[gateway]\nstate_dir = {:?}\nping_interval = 0\n\n[policy.defaults]\ntools = \"allow\"\n\n\
         [servers.bench]\n{server}prefix = \"\"\n",
        dir.path().join("state").display().to_string()
    );
    let (raw, warnings) = config::parse_toml(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let config = config::validate(raw, dir.path(), &config::expand::Environment).unwrap();
    // What `portico serve` runs: the supervisor (policy, approvals) with the activity log.
    let log = portico_host::audit::AuditLog::open(&config.audit, &config.gateway.state_dir).await.unwrap();
    let supervisor = std::sync::Arc::new(portico_host::oversight::Supervisor::new(&config).unwrap().with_audit(log));
    let host = portico_host::Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    let gateway = portico_host::gateway::Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(60)).await;
    assert!(host.registry().tools.contains_key("echo"), "the upstream's echo is in the registry");
    let c = Client::over(gateway.server(), Some("2025-11-25")).await;
    (host, supervisor, c, dir)
}

async fn gateway_end(host: portico_host::Host, supervisor: std::sync::Arc<portico_host::oversight::Supervisor>) {
    host.shutdown().await;
    let log = supervisor.audit().unwrap();
    log.close().await.unwrap();
    assert_eq!(log.health().backlog, 0);
}

async fn gateway(rounds: u64) {
    let (host, supervisor, mut c, _dir) = gateway_start().await;
    pipelined_on(&mut c, rounds, false).await;
    gateway_end(host, supervisor).await;
}

/// One `echo` of a 16 KiB text per round through the gateway: the result's bytes dominate.
async fn gateway_big(rounds: u64) {
    let (host, supervisor, mut c, _dir) = gateway_start().await;
    let text: String = (0..16_384).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    for id in 1..=rounds {
        let req = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        );
        c.w.write_frame(req.as_bytes()).await.unwrap();
        c.w.flush().await.unwrap();
        let f = c.read().await;
        let v: serde_json::Value = serde_json::from_slice(&f).unwrap();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["content"][0]["text"].as_str().map(str::len), Some(text.len()), "{v}");
    }
    gateway_end(host, supervisor).await;
}

/// One `echo` per round through the gateway to `bench-server http` on a free loopback port.
async fn gateway_http(rounds: u64) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(upstream_binary())
        .args(["http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Bounded: 10 s for the upstream to listen.
    let mut listening = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            listening = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(listening, "bench-server http did not listen on {port}");
    let (host, supervisor, mut c, _dir) =
        gateway_over(&format!("url = \"http://127.0.0.1:{port}/mcp\"\nshared = true\n")).await;
    for id in 1..=rounds {
        c.w.write_frame(&echo(id, false)).await.unwrap();
        c.w.flush().await.unwrap();
        check_echo(&c.read().await, Some(id));
    }
    gateway_end(host, supervisor).await;
    child.kill().await.unwrap();
}

/// `tools/list` of the bench server's 1,002 tools through the gateway, one per round.
async fn gateway_list(rounds: u64) {
    let (host, supervisor, mut c, _dir) = gateway_start().await;
    list_on(&mut c, rounds).await;
    gateway_end(host, supervisor).await;
}

async fn list(rounds: u64) {
    let mut c = Client::new(true).await;
    list_on(&mut c, rounds).await;
}

async fn list_on(c: &mut Client, rounds: u64) {
    for id in 1..=rounds {
        let req = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
        c.w.write_frame(req.as_bytes()).await.unwrap();
        c.w.flush().await.unwrap();
        let f = c.read().await;
        // Cheap checks only: the count is of the server, not of a JSON tree here.
        assert!(f.starts_with(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#).as_bytes()), "{f:?}");
        assert!(memchr::memmem::find(&f, b"\"noop_999\"").is_some());
    }
}

fn post(body: Vec<u8>, session: Option<&str>, stateless_method: Option<(&str, &str)>) -> http::Request<Body> {
    let mut b = http::Request::post("/mcp")
        .header("host", "127.0.0.1:1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
    }
    if let Some((method, name)) = stateless_method {
        b = b.header("mcp-protocol-version", "2026-07-28").header("mcp-method", method).header("mcp-name", name);
    }
    b.body(Body::from(body)).unwrap()
}

async fn http(rounds: u64, stateless: bool) {
    use portico::transport::http::server::StreamableHttp;
    let router = StreamableHttp::new(portico_bench::server()).without_legacy_sse().build().router("/mcp");
    let mut session = None;
    if !stateless {
        let r = router.clone().oneshot(post(INIT.as_bytes().to_vec(), None, None)).await.unwrap();
        assert_eq!(r.status(), 200);
        session = Some(r.headers()["mcp-session-id"].to_str().unwrap().to_owned());
        let r = router
            .clone()
            .oneshot(post(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
                session.as_deref(),
                None,
            ))
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    }
    for id in 1..=rounds {
        let req = post(echo(id, stateless), session.as_deref(), stateless.then_some(("tools/call", "echo")));
        let r = router.clone().oneshot(req).await.unwrap();
        assert_eq!(r.status(), 200);
        let body = r.into_body().collect().await.unwrap().to_bytes();
        check_echo(&body, Some(id));
    }
}

/// The floor's echo: each round's 64 requests answered by `floor::answer` into one buffer, then
/// checked one line at a time like the other echoes.
fn floor(rounds: u64, stateless: bool) {
    let mut out = Vec::with_capacity(64 * 256);
    let mut id = 1;
    for _ in 0..rounds {
        out.clear();
        for i in 0..WINDOW {
            portico_bench::floor::answer(&echo(id + i, stateless), &mut out).unwrap();
        }
        let mut seen = 0u64;
        for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let got = check_echo(line, None);
            assert!((id..id + WINDOW).contains(&got));
            seen += got;
        }
        assert_eq!(seen, (id..id + WINDOW).sum::<u64>());
        id += WINDOW;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let (Some(scenario), Some(rounds)) = (args.first(), args.get(1).and_then(|r| r.parse::<u64>().ok())) else {
        eprintln!(
            "usage: icount echo-handshake|echo-2025-06-18|echo-stateless|list|http-stateless|http-handshake|gateway|gateway-list|gateway-big|gateway-http|floor-handshake|floor-stateless ROUNDS"
        );
        std::process::exit(64);
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        match scenario.as_str() {
            "echo-handshake" => pipelined(rounds, Some("2025-11-25")).await,
            "echo-2025-06-18" => pipelined(rounds, Some("2025-06-18")).await,
            "echo-stateless" => pipelined(rounds, None).await,
            "list" => list(rounds).await,
            "http-stateless" => http(rounds, true).await,
            "http-handshake" => http(rounds, false).await,
            "gateway" => gateway(rounds).await,
            "gateway-list" => gateway_list(rounds).await,
            "gateway-big" => gateway_big(rounds).await,
            "gateway-http" => gateway_http(rounds).await,
            "floor-handshake" => floor(rounds, false),
            "floor-stateless" => floor(rounds, true),
            other => {
                eprintln!("unknown scenario {other}");
                std::process::exit(64);
            }
        }
    });
    // One op per round, except the pipelined echoes: WINDOW per round.
    let per_round = if scenario.starts_with("echo-") || scenario.starts_with("floor-") || scenario == "gateway" {
        WINDOW
    } else {
        1
    };
    println!("{scenario}: {} ops", rounds * per_round);
    // Not dropped: the runtime's shutdown drops whatever its tasks still hold, and with a real
    // upstream process that differs from run to run (about 1.85M instructions in some runs of
    // `gateway-http` and not in others), while the counts are meant for the rounds.
    std::mem::forget(rt);
}

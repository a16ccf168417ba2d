//! Helpers for the host's tests: real upstreams (Portico's examples, built by cargo), configs
//! in temporary folders, bounded waits, and process accounting from /proc.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use portico_host::config::{self, Config};

/// The path of one of `portico-mcp`'s examples, built once if `cargo test --workspace` has not
/// built it already.
pub fn example(name: &str) -> PathBuf {
    example_of("portico-mcp", name)
}

/// The path of an example of `package`, built if missing.
pub fn example_of(package: &str, name: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let exe = std::env::current_exe().expect("test exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let path = profile_dir.join("examples").join(name);
    let _guard = BUILD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", package, "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build");
        assert!(status.success(), "building example {name} failed");
    }
    assert!(path.exists(), "{} missing", path.display());
    path
}

/// A validated config from TOML text, with its state under `dir`.
pub fn config_in(dir: &Path, toml: &str) -> Config {
    let text =
        format!("[gateway]\nstate_dir = {:?}\nping_interval = 0\n\n{toml}", dir.join("state").display().to_string());
    let (raw, warnings) = config::parse_toml(&text).expect("toml");
    assert!(warnings.is_empty(), "{warnings:?}");
    config::validate(raw, dir, &config::expand::Environment).expect("valid config")
}

/// `[servers.NAME]` running the example `everything` over stdio, plus `extra` lines.
pub fn everything(name: &str, extra: &str) -> String {
    format!("[servers.{name}]\ncommand = {:?}\n{extra}\n", example("everything").display().to_string())
}

/// Polls `f` every 20 ms until it returns `Some`, at most `within`.
pub async fn eventually<T>(within: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// The children of `pid` (all threads), zombies included.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// The text of a tool result's first block.
pub fn text(result: &portico::schema::CallToolResult) -> String {
    match result.content.first() {
        Some(portico::schema::ContentBlock::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

/// Serves `server` over Streamable HTTP on 127.0.0.1 and a free port: its address, and the task
/// to abort when the test is done.
pub async fn serve_http(server: portico::server::Server) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let endpoint = portico::transport::http::server::StreamableHttp::new(server).build();
    let served = tokio::spawn(async move {
        let _ = endpoint.serve_with_shutdown(listener, std::future::pending()).await;
    });
    (addr, served)
}

/// A host and its gateway over the HTTP server at `addr`, configured twice: as `new`, spoken to
/// in 2026-07-28, and as `old`, in 2025-11-25 (both `shared`), after `extra` config lines;
/// started, ready and in step.
pub async fn gateway_over_both_eras(
    addr: std::net::SocketAddr,
    dir: &Path,
    extra: &str,
) -> (portico_host::Host, portico_host::gateway::Gateway) {
    let mut cfg = extra.to_owned();
    for (name, version) in [("new", "2026-07-28"), ("old", "2025-11-25")] {
        cfg.push_str(&format!(
            "[servers.{name}]\nurl = \"http://{addr}/mcp\"\nshared = true\nprotocol_version = \"{version}\"\n\n"
        ));
    }
    let host = portico_host::Host::start(config_in(dir, &cfg));
    host.ready(Duration::from_secs(20)).await;
    let gateway = portico_host::gateway::Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    (host, gateway)
}

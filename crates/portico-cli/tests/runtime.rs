//! `portico serve` sizes its async runtime: one worker on stdio (one client); over HTTP, one
//! connection thread per CPU (many clients) and one worker for the rest; one worker per CPU
//! over HTTP without connection threads; and `TOKIO_WORKER_THREADS` whenever it is set.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `portico serve ARGS` (no upstream) with the runtime's debug lines on and
/// `TOKIO_WORKER_THREADS` as `env` says, and returns the worker count they report. The process
/// is killed afterwards.
fn workers(args: &[&str], env: Option<&str>) -> usize {
    reported(args, env, "workers=")
}

/// [`workers`], for the count a debug line gives after `key` (`workers=`, `http_threads=`).
fn reported(args: &[&str], env: Option<&str>, key: &str) -> usize {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = common::config(dir.path(), "");
    let mut cmd = common::portico();
    cmd.current_dir(dir.path())
        .args(["--log", "portico::runtime=debug", "serve", "--no-watch", "-c"])
        .arg(&cfg)
        .args(args)
        .env_remove("TOKIO_WORKER_THREADS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = env {
        cmd.env("TOKIO_WORKER_THREADS", n);
    }
    let mut child = common::Guard(cmd.spawn().expect("spawn portico"));
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            panic!("no {key} line from portico serve {args:?} within 20 s; stderr: {seen:#?}");
        };
        if let Some(rest) = line.split(key).nth(1) {
            let n = rest.split_whitespace().next().unwrap_or_default();
            return n.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        }
        seen.push(line);
    }
}

#[test]
fn serve_on_stdio_runs_one_worker() {
    assert_eq!(workers(&[], None), 1);
}

#[test]
fn tokio_worker_threads_sets_the_count_on_stdio_too() {
    assert_eq!(workers(&[], Some("3")), 3);
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

#[test]
fn serve_over_http_runs_a_connection_thread_per_cpu_and_one_worker() {
    assert_eq!(reported(&["--http", "127.0.0.1:0"], None, "http_threads="), cpus());
    assert_eq!(workers(&["--http", "127.0.0.1:0"], None), 1);
    assert_eq!(reported(&["--http", "127.0.0.1:0", "--http-threads", "3"], None, "http_threads="), 3);
}

#[test]
fn serve_over_http_without_connection_threads_keeps_one_worker_per_cpu() {
    assert_eq!(workers(&["--http", "127.0.0.1:0", "--http-threads", "0"], None), cpus());
}

#[test]
fn http_threads_without_http_is_a_usage_error() {
    let out = common::portico().args(["serve", "--http-threads", "2"]).output().expect("run portico");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http"), "{}", String::from_utf8_lossy(&out.stderr));
}

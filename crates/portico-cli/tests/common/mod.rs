//! Helpers shared by the `portico` binary's tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn portico() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_portico"));
    c.env_remove("PORTICO_CONFIG").env_remove("RUST_LOG");
    c
}

/// Portico's `everything` example, built by `cargo test --workspace` (or built here).
pub fn everything() -> PathBuf {
    let exe = std::env::current_exe().expect("exe");
    let path = exe.parent().and_then(Path::parent).expect("target dir").join("examples/everything");
    if !path.exists() {
        let ok = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "portico-mcp", "--example", "everything"])
            .status()
            .expect("cargo")
            .success();
        assert!(ok, "building the everything example failed");
    }
    path
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Runs `cmd` to its end: exit code (-1 when killed by a signal), stdout, stderr.
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = cmd.output().expect("run portico");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The children of `pid`, from /proc.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().and_then(|s| s.split_whitespace().next()) != Some("Z"))
}

/// `portico ARGS` as a child speaking MCP on its stdio, and a client connected to it.
pub async fn serve_and_connect(args: &[&str]) -> (portico::client::Client, portico::transport::child::ChildHandle) {
    connect(portico::transport::child::ChildProcess::new(env!("CARGO_BIN_EXE_portico")).args(args)).await
}

/// Spawns `portico` as `command` says, and a client connected to it over its stdio.
pub async fn connect(
    command: &mut portico::transport::child::ChildProcess,
) -> (portico::client::Client, portico::transport::child::ChildHandle) {
    let (transport, child) = command.spawn().expect("spawn portico");
    let client = portico::client::Client::builder(portico::schema::Implementation::new("t", "1"))
        .connect(transport)
        .await
        .expect("connect");
    (client, child)
}

/// `portico.toml` in `dir` with a policy that lets every call through and `servers`.
pub fn config(dir: &Path, servers: &str) -> PathBuf {
    let text = format!(
        "[gateway]\nstate_dir = \"state\"\nping_interval = 0\n\n[[policy.rules]]\ndecision = \"allow\"\n\n{servers}"
    );
    write(dir, "portico.toml", &text)
}

/// A `[servers.NAME]` table running Portico's `everything` example.
pub fn ev(name: &str) -> String {
    format!("[servers.{name}]\ncommand = {:?}\n", everything().display().to_string())
}

/// Kills the process when dropped, so a failed test leaves nothing running.
pub struct Guard(pub std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

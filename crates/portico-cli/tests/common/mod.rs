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

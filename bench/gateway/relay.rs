//! `bench-gateway relay COMMAND [ARGS...]`: the least work a gateway in the middle must do, as a
//! floor to set beside `portico serve`.
//!
//! It starts COMMAND (an MCP server on stdio) and passes JSON-RPC lines both ways. Like any
//! gateway that multiplexes clients onto one upstream, it parses each message and renumbers each
//! request's `id` (keeping the client's id in a map), and maps each response's id back. It does
//! nothing else: no policy, no registry, no log, no validation, no timeouts, one thread. Writes
//! are flushed when no further complete line is already read, so pipelined calls share writes
//! as they do in the gateway.
//!
//! Its CPU per call, measured in the same run as the gateway's, is the floor of the gateway's
//! CPU target: a gateway that parses messages cannot cost less than this.

use std::cell::RefCell;
use std::collections::HashMap;
use std::process::{ExitCode, Stdio};

use serde_json::Value;
use tokio::io::{AsyncWriteExt as _, BufWriter};
use tokio::process::Command;

use crate::conn::Lines;

pub fn main(args: impl Iterator<Item = String>) -> ExitCode {
    let argv: Vec<String> = args.collect();
    if argv.is_empty() {
        eprintln!("usage: bench-gateway relay COMMAND [ARGS...]");
        return ExitCode::from(64);
    }
    crate::subcommand("relay", relay(&argv))
}

/// Parses a line, applies `f` to it, and appends it (with its newline) to `out`.
fn rewrite(line: &[u8], out: &mut Vec<u8>, f: impl FnOnce(&mut Value)) -> Result<(), String> {
    let mut v: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    f(&mut v);
    serde_json::to_writer(&mut *out, &v).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(())
}

async fn relay(argv: &[String]) -> Result<(), String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the child has no pipes".to_owned());
    };
    // The client's id of each request in flight, by the id given upstream.
    let ids: RefCell<HashMap<u64, Value>> = RefCell::new(HashMap::new());

    let requests = async {
        let mut from = Lines::new(tokio::io::stdin());
        let mut to = BufWriter::with_capacity(256 * 1024, stdin);
        // Upstream ids start far from any client's, so an answer whose id was not mapped back
        // is never mistaken for one that was.
        let (mut out, mut next) = (Vec::with_capacity(4096), 1_000_000u64);
        while from.read_line().await.is_ok() {
            out.clear();
            rewrite(from.line(), &mut out, |v| {
                if v.get("method").is_some()
                    && let Some(id) = v.get_mut("id")
                {
                    next += 1;
                    ids.borrow_mut().insert(next, std::mem::replace(id, Value::from(next)));
                }
            })?;
            to.write_all(&out).await.map_err(|e| format!("write upstream: {e}"))?;
            if !from.has_line() {
                to.flush().await.map_err(|e| format!("write upstream: {e}"))?;
            }
        }
        // The client closed stdin: so does the relay, and the child ends.
        to.shutdown().await.map_err(|e| format!("close upstream: {e}"))
    };
    let responses = async {
        let mut from = Lines::new(stdout);
        let mut to = BufWriter::with_capacity(256 * 1024, tokio::io::stdout());
        let mut out = Vec::with_capacity(4096);
        while from.read_line().await.is_ok() {
            out.clear();
            rewrite(from.line(), &mut out, |v| {
                if v.get("method").is_none()
                    && let Some(id) = v.get_mut("id")
                    && let Some(mine) = id.as_u64().and_then(|n| ids.borrow_mut().remove(&n))
                {
                    *id = mine;
                }
            })?;
            to.write_all(&out).await.map_err(|e| format!("write downstream: {e}"))?;
            if !from.has_line() {
                to.flush().await.map_err(|e| format!("write downstream: {e}"))?;
            }
        }
        to.flush().await.map_err(|e| format!("write downstream: {e}"))
    };
    let (a, b) = tokio::join!(requests, responses);
    let _ = child.wait().await;
    a.and(b)
}

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
//!
//! `bench-gateway relay --commit DIR COMMAND [ARGS...]` adds the least a log that records each
//! call before answering it must do: each `tools/call` answer waits, on the relay's one thread,
//! for the commit of one record (the size of an echo call's, [`crate::commit::Log`]) into a new
//! log's database in `DIR`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

use serde_json::Value;
use tokio::io::{AsyncWriteExt as _, BufWriter};
use tokio::process::Command;

use crate::conn::Lines;

pub fn main(args: impl Iterator<Item = String>) -> ExitCode {
    let mut argv: Vec<String> = args.collect();
    let commit = match argv.first().map(String::as_str) {
        Some("--commit") if argv.len() > 2 => Some(PathBuf::from(argv.drain(..2).nth(1).unwrap_or_default())),
        _ => None,
    };
    if argv.is_empty() || argv[0].starts_with('-') {
        eprintln!("usage: bench-gateway relay [--commit DIR] COMMAND [ARGS...]");
        return ExitCode::from(64);
    }
    crate::subcommand("relay", relay(&argv, commit))
}

/// Parses a line, applies `f` to it, and appends it (with its newline) to `out`.
fn rewrite(line: &[u8], out: &mut Vec<u8>, f: impl FnOnce(&mut Value)) -> Result<(), String> {
    let mut v: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    f(&mut v);
    serde_json::to_writer(&mut *out, &v).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(())
}

async fn relay(argv: &[String], commit: Option<PathBuf>) -> Result<(), String> {
    let log = match commit {
        Some(dir) => Some(RefCell::new(crate::commit::Log::open(&dir, crate::commit::ECHO_RECORD_BYTES).await?)),
        None => None,
    };
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
    // The client's id of each request in flight, and whether it is a `tools/call`, by the id
    // given upstream.
    let ids: RefCell<HashMap<u64, (Value, bool)>> = RefCell::new(HashMap::new());

    let requests = async {
        let mut from = Lines::new(tokio::io::stdin());
        let mut to = BufWriter::with_capacity(256 * 1024, stdin);
        // Upstream ids start far from any client's, so an answer whose id was not mapped back
        // is never mistaken for one that was.
        let (mut out, mut next) = (Vec::with_capacity(4096), 1_000_000u64);
        while from.read_line().await.is_ok() {
            out.clear();
            rewrite(from.line(), &mut out, |v| {
                let call = v.get("method").and_then(Value::as_str) == Some("tools/call");
                if v.get("method").is_some()
                    && let Some(id) = v.get_mut("id")
                {
                    next += 1;
                    ids.borrow_mut().insert(next, (std::mem::replace(id, Value::from(next)), call));
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
            let mut call = false;
            rewrite(from.line(), &mut out, |v| {
                if v.get("method").is_none()
                    && let Some(id) = v.get_mut("id")
                    && let Some((mine, was_call)) = id.as_u64().and_then(|n| ids.borrow_mut().remove(&n))
                {
                    *id = mine;
                    call = was_call;
                }
            })?;
            if let Some(log) = log.as_ref().filter(|_| call) {
                log.borrow_mut().commit()?;
            }
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

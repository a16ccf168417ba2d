//! A server child process and the driver's end of its stdio.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::proto::{self, PROTOCOL_VERSION, excerpt};

/// Pipe buffers on the driver's side.
const IO_BUFFER: usize = 256 * 1024;

/// How long without any response, while a request is outstanding, before the watchdog kills
/// the server (and the figure is void).
const STALL: Duration = Duration::from_secs(30);

/// Progress seen by the watchdog.
#[derive(Default)]
pub struct Watch {
    /// Bumped by readers; the watchdog only compares it with its last look.
    pub progress: AtomicU64,
    /// Set while a request is outstanding.
    pub active: AtomicBool,
    /// Set when the watchdog killed the server.
    pub fired: AtomicBool,
}

impl Watch {
    #[inline]
    pub fn tick(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }
}

pub struct Conn {
    child: Child,
    pub pid: u32,
    pub w: BufWriter<ChildStdin>,
    pub r: BufReader<ChildStdout>,
    /// The last line read, without its newline.
    pub line: Vec<u8>,
    /// Scratch for formatting requests.
    pub out: Vec<u8>,
    next_id: u64,
    pub watch: Arc<Watch>,
    pub server_info: String,
    pub protocol_version: String,
    /// The stateless era's request `_meta` (JSON text); `None` in the handshake era.
    pub meta: Option<String>,
}

/// How the driver talks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// `initialize` (2025-11-25), then `notifications/initialized`.
    Handshake,
    /// No handshake: `_meta` with the revision on every request (2026-07-28); `server/discover` first.
    Stateless,
    /// HTTP only, for `http-echo`: requests as in the stateless era, but no `server/discover`.
    Bare,
}

impl Conn {
    /// Spawns `argv` with piped stdin/stdout (stderr inherited) and does the handshake.
    pub async fn spawn(argv: &[String], era: Era) -> Result<Conn, String> {
        let (program, args) = argv.split_first().ok_or("no server command given")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let watch = Arc::new(Watch::default());
        tokio::spawn(watchdog(pid, Arc::clone(&watch)));
        let mut conn = Conn {
            child,
            pid,
            w: BufWriter::with_capacity(IO_BUFFER, stdin),
            r: BufReader::with_capacity(IO_BUFFER, stdout),
            line: Vec::with_capacity(64 * 1024),
            out: Vec::with_capacity(IO_BUFFER),
            next_id: 1,
            watch,
            server_info: String::new(),
            protocol_version: String::new(),
            meta: None,
        };
        match era {
            Era::Handshake => conn.handshake().await?,
            Era::Stateless | Era::Bare => conn.discover().await?,
        }
        Ok(conn)
    }

    async fn handshake(&mut self) -> Result<(), String> {
        let params = format!(
            r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench-driver","version":"{}"}}}}"#,
            env!("CARGO_PKG_VERSION")
        );
        let id = self.next_id();
        self.out.clear();
        proto::request(&mut self.out, id, "initialize", Some(&params), None);
        let result = self.call_value(id, "initialize").await?;
        self.protocol_version = result
            .get("protocolVersion")
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("initialize result has no protocolVersion: {result}"))?
            .to_owned();
        if result.pointer("/capabilities/tools").is_none() {
            return Err(format!("the server declares no tools capability: {result}"));
        }
        self.server_info = result.get("serverInfo").map(|v| v.to_string()).unwrap_or_default();
        self.out.clear();
        self.out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        self.send_out().await
    }

    /// The stateless era: no handshake; `server/discover` checks the server speaks it.
    async fn discover(&mut self) -> Result<(), String> {
        let meta = proto::stateless_meta();
        let id = self.next_id();
        self.out.clear();
        proto::request(&mut self.out, id, "server/discover", None, Some(&meta));
        let result = self.call_value(id, "server/discover").await?;
        let speaks = result
            .get("supportedVersions")
            .and_then(|v| v.as_array())
            .is_some_and(|v| v.iter().any(|v| v == proto::STATELESS_VERSION));
        if !speaks {
            return Err(format!(
                "server/discover: {} not among the supported versions: {result}",
                proto::STATELESS_VERSION
            ));
        }
        if result.pointer("/capabilities/tools").is_none() {
            return Err(format!("the server declares no tools capability: {result}"));
        }
        self.protocol_version = format!("{} (stateless)", proto::STATELESS_VERSION);
        self.server_info =
            result.pointer("/_meta/io.modelcontextprotocol~1serverInfo").map(|v| v.to_string()).unwrap_or_default();
        self.meta = Some(meta);
        Ok(())
    }

    /// Sends `self.out` (one request, id `id`) and returns its result as a JSON tree.
    async fn call_value(&mut self, id: u64, what: &str) -> Result<serde_json::Value, String> {
        self.send_out().await?;
        self.watch.active.store(true, Ordering::Relaxed);
        let result = loop {
            self.read_line().await?;
            match proto::parse::<&serde_json::value::RawValue>(&self.line)? {
                proto::Parsed::Notification => continue,
                proto::Parsed::Result(got, result) if got == id => {
                    break serde_json::from_str::<serde_json::Value>(result.get())
                        .map_err(|e| format!("{what} result: {e}"))?;
                }
                proto::Parsed::Result(got, _) => return Err(format!("{what} answered with id {got}, sent {id}")),
            }
        };
        self.watch.active.store(false, Ordering::Relaxed);
        Ok(result)
    }

    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Reserves `n` consecutive ids and returns the first.
    pub fn take_ids(&mut self, n: u64) -> u64 {
        let first = self.next_id;
        self.next_id += n;
        first
    }

    /// Writes `self.out` and flushes.
    pub async fn send_out(&mut self) -> Result<(), String> {
        self.w.write_all(&self.out).await.map_err(|e| self.io_error("write", e))?;
        self.w.flush().await.map_err(|e| self.io_error("flush", e))
    }

    /// Reads one line into `self.line` (without the newline).
    pub async fn read_line(&mut self) -> Result<(), String> {
        match read_line(&mut self.r, &mut self.line).await {
            Ok(()) => {
                self.watch.tick();
                Ok(())
            }
            Err(e) => Err(self.closed(e)),
        }
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> String {
        self.closed(format!("{what} to the server failed: {e}"))
    }

    /// Explains a broken connection: a watchdog kill is named as such.
    pub fn closed(&self, e: String) -> String {
        if self.watch.fired.load(Ordering::Relaxed) {
            format!("no response for {}s: the watchdog killed the server ({e})", STALL.as_secs())
        } else {
            e
        }
    }

    /// Closes the server's stdin and waits (a while) for it to exit.
    pub async fn shutdown(mut self) -> Option<std::process::ExitStatus> {
        drop(self.w);
        match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = self.child.kill().await;
                None
            }
        }
    }
}

/// Reads one line into `line` (cleared first, newline removed); EOF is an error.
#[inline]
pub async fn read_line(r: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> Result<(), String> {
    line.clear();
    match r.read_until(b'\n', line).await {
        Ok(0) => Err("the server closed its stdout".to_owned()),
        Ok(_) => {
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Ok(())
            } else {
                Err(format!("the server closed its stdout mid-line: {}", excerpt(line)))
            }
        }
        Err(e) => Err(format!("read from the server failed: {e}")),
    }
}

async fn watchdog(pid: u32, watch: Arc<Watch>) {
    let mut last = u64::MAX;
    let mut still = Duration::ZERO;
    let step = Duration::from_millis(500);
    loop {
        tokio::time::sleep(step).await;
        if Arc::strong_count(&watch) == 1 {
            return;
        }
        let now = watch.progress.load(Ordering::Relaxed);
        if now != last || !watch.active.load(Ordering::Relaxed) {
            last = now;
            still = Duration::ZERO;
            continue;
        }
        still += step;
        if still >= STALL {
            watch.fired.store(true, Ordering::Relaxed);
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            return;
        }
    }
}

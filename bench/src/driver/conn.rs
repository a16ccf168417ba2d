//! A server child process and the driver's end of its stdio.

use std::ops::Range;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::proto::{self, PROTOCOL_VERSION, excerpt};

/// Pipe buffers on the driver's side; also the least room a read of the server's stdout is given.
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
    /// The server's stdout; `r.line()` is the last line read.
    pub r: Lines<ChildStdout>,
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
            r: Lines::new(stdout),
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
            match proto::parse::<&serde_json::value::RawValue>(self.r.line())? {
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

    /// Reads one line: `self.r.line()`.
    pub async fn read_line(&mut self) -> Result<(), String> {
        match self.r.read_line().await {
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

/// A line reader that reads straight into the buffer the lines are handed out from, so a
/// 1 MB response line is not copied again from a read buffer into a line buffer, and the
/// buffer's capacity is kept from one line to the next (no allocation once it has grown to the
/// longest line).
pub struct Lines<R> {
    inner: R,
    /// Bytes read: the current line, then whatever was read after it.
    buf: Vec<u8>,
    /// The current line in `buf`, newline (and a `\r` before it) removed.
    line: Range<usize>,
    /// Where the bytes after the current line's newline start.
    next: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(inner: R) -> Lines<R> {
        Lines { inner, buf: Vec::with_capacity(IO_BUFFER), line: 0..0, next: 0 }
    }

    /// The last line read (empty before the first).
    #[inline]
    pub fn line(&self) -> &[u8] {
        &self.buf[self.line.clone()]
    }

    /// Whether a complete line after the current one has been read already.
    #[inline]
    pub fn has_line(&self) -> bool {
        memchr::memchr(b'\n', &self.buf[self.next..]).is_some()
    }

    /// Reads the next line; EOF is an error.
    pub async fn read_line(&mut self) -> Result<(), String> {
        let mut scanned = self.next;
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf[scanned..]) {
                let (start, newline) = (self.next, scanned + at);
                let end = if newline > start && self.buf[newline - 1] == b'\r' { newline - 1 } else { newline };
                self.line = start..end;
                self.next = newline + 1;
                return Ok(());
            }
            scanned = self.buf.len();
            if self.next > 0 {
                // Only the start of a line is left (if anything): move it to the front. This
                // happens at most once per line, as `next` is 0 until its newline is read.
                self.buf.copy_within(self.next.., 0);
                self.buf.truncate(self.buf.len() - self.next);
                scanned -= self.next;
                self.next = 0;
                self.line = 0..0;
            }
            self.buf.reserve(IO_BUFFER);
            match self.inner.read_buf(&mut self.buf).await {
                Ok(0) if self.buf.is_empty() => return Err("the server closed its stdout".to_owned()),
                Ok(0) => return Err(format!("the server closed its stdout mid-line: {}", excerpt(&self.buf))),
                Ok(_) => {}
                Err(e) => return Err(format!("read from the server failed: {e}")),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::ReadBuf;

    /// Hands out `data` at most `chunk` bytes per read.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        chunk: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self.chunk.min(buf.remaining()).min(self.data.len() - self.at);
            buf.put_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn read_all(data: &[u8], chunk: usize) -> (Vec<Vec<u8>>, String) {
        let mut r = Lines::new(Trickle { data: data.to_vec(), at: 0, chunk });
        let mut lines = Vec::new();
        loop {
            match r.read_line().await {
                Ok(()) => lines.push(r.line().to_vec()),
                Err(e) => return (lines, e),
            }
        }
    }

    #[tokio::test]
    async fn lines_come_out_whole_whatever_the_reads() {
        let long = vec![b'x'; 3 * IO_BUFFER + 17];
        let mut data = b"a\n\nbc\r\n".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nlast\n");
        let want = [&b"a"[..], b"", b"bc", &long, b"last"];
        for chunk in [1, 2, 3, 7, 64 * 1024, usize::MAX] {
            let (lines, e) = read_all(&data, chunk).await;
            assert_eq!(lines, want, "chunk {chunk}");
            assert_eq!(e, "the server closed its stdout", "chunk {chunk}");
        }
        let (lines, e) = read_all(b"one\ntw", 2).await;
        assert_eq!(lines, [b"one"]);
        assert!(e.contains("mid-line: tw"), "{e}");
    }

    #[tokio::test]
    async fn has_line_sees_only_complete_lines() {
        let mut r = Lines::new(&b"1\n2\n3"[..]);
        r.read_line().await.expect("a line");
        assert_eq!((r.line(), r.has_line()), (&b"1"[..], true));
        r.read_line().await.expect("a line");
        assert_eq!((r.line(), r.has_line()), (&b"2"[..], false));
        assert!(r.read_line().await.is_err());
    }
}

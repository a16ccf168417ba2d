//! The driver's HTTP/1.1: a hand-rolled keep-alive client on a Tokio `TcpStream` (one write per
//! request, `httparse` for the response head, `Content-Length` and chunked bodies, JSON and SSE
//! responses), and the HTTP workloads.
//!
//! Nothing is shared between connections but the runtime's one thread, so the driver's own cost
//! stays small and shows in its CPU column.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::conn::Era;
use crate::proto::{self, CallResult, PROTOCOL_VERSION, Parsed, STATELESS_VERSION, excerpt, parse, verify_echo};
use crate::workloads::{Run, histogram};

/// No response for this long voids the figure.
const STALL: Duration = Duration::from_secs(30);
/// The most bytes a response head or body may have.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

/// A server process listening on a loopback port.
pub struct HttpServer {
    child: Child,
    pub pid: u32,
    pub port: u16,
}

impl HttpServer {
    /// Picks a free loopback port, starts `argv` with `{port}` replaced by it (appended when no
    /// argument holds `{port}`), and waits until it accepts connections.
    pub async fn spawn(argv: &[String]) -> Result<HttpServer, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot pick a port: {e}"))?
            .port();
        let mut argv: Vec<String> = argv.to_vec();
        if argv.iter().any(|a| a.contains("{port}")) {
            for a in &mut argv {
                *a = a.replace("{port}", &port.to_string());
            }
        } else {
            argv.push(port.to_string());
        }
        let (program, args) = argv.split_first().ok_or("no server command given")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let ready = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Ok(HttpServer { child, pid, port });
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the server exited with {status} before listening on {port}"));
            }
            if Instant::now() > ready {
                return Err(format!("the server did not listen on 127.0.0.1:{port} within 20 s"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Ends the server: SIGTERM (HTTP servers have no stdin to close; a wrapper such as `perf
    /// record` gets to finish its file), then SIGKILL after 5 s.
    pub async fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }

    /// The server's resident set size in KiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_kib(&self) -> Result<u64, String> {
        crate::cpu::status_kib(self.pid, "VmRSS")
    }
}

/// One response as far as the driver cares.
pub struct Response {
    pub status: u16,
    pub session: Option<String>,
}

/// One keep-alive HTTP/1.1 connection to `http://127.0.0.1:PORT/mcp`.
pub struct HttpConn {
    tcp: TcpStream,
    era: Era,
    port: u16,
    /// Received and not yet consumed: `rbuf[rpos..]`.
    rbuf: Vec<u8>,
    rpos: usize,
    out: Vec<u8>,
    req_body: Vec<u8>,
    /// The last response's body, de-chunked.
    pub body: Vec<u8>,
    /// The last response's JSON-RPC messages: ranges of `body` (one for JSON, any for SSE).
    messages: Vec<(usize, usize)>,
    sse_data: Vec<u8>,
    pub session: Option<String>,
    next_id: u64,
    meta: String,
}

impl HttpConn {
    pub async fn connect(port: u16, era: Era) -> Result<HttpConn, String> {
        let tcp =
            TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| format!("connect to 127.0.0.1:{port}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        Ok(HttpConn {
            tcp,
            era,
            port,
            rbuf: Vec::with_capacity(64 * 1024),
            rpos: 0,
            out: Vec::with_capacity(4096),
            req_body: Vec::with_capacity(1024),
            body: Vec::with_capacity(64 * 1024),
            messages: Vec::new(),
            sse_data: Vec::new(),
            session: None,
            next_id: 1,
            meta: proto::stateless_meta(),
        })
    }

    /// A connection that has done what its era needs before calls: the handshake (a session of
    /// its own), or nothing.
    pub async fn open(port: u16, era: Era) -> Result<HttpConn, String> {
        let mut c = HttpConn::connect(port, era).await?;
        if era == Era::Handshake {
            c.initialize().await?;
        }
        Ok(c)
    }

    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// `initialize` then `notifications/initialized`: a new session on this connection.
    pub async fn initialize(&mut self) -> Result<(), String> {
        self.session = None;
        let id = self.next_id();
        let params = format!(
            r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench-driver","version":"{}"}}}}"#,
            env!("CARGO_PKG_VERSION")
        );
        let mut body = Vec::new();
        proto::request(&mut body, id, "initialize", Some(&params), None);
        let r = self.post(&body, "initialize", None).await?;
        let session = r.session.ok_or("initialize answered without Mcp-Session-Id")?;
        let result = self.result_value(id, "initialize")?;
        if result.get("protocolVersion").and_then(|v| v.as_str()) != Some(PROTOCOL_VERSION) {
            return Err(format!("initialize: expected protocolVersion {PROTOCOL_VERSION}: {result}"));
        }
        self.session = Some(session);
        let r = self
            .post(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
                "notifications/initialized",
                None,
            )
            .await?;
        if !(200..300).contains(&r.status) {
            return Err(format!("notifications/initialized answered {}", r.status));
        }
        Ok(())
    }

    /// `server/discover` (stateless era): the server must list 2026-07-28. Returns its serverInfo.
    pub async fn discover(&mut self) -> Result<String, String> {
        let id = self.next_id();
        let mut body = Vec::new();
        let meta = self.meta.clone();
        proto::request(&mut body, id, "server/discover", None, Some(&meta));
        self.post(&body, "server/discover", None).await?;
        let result = self.result_value(id, "server/discover")?;
        let speaks = result
            .get("supportedVersions")
            .and_then(|v| v.as_array())
            .is_some_and(|v| v.iter().any(|v| v == STATELESS_VERSION));
        if !speaks {
            return Err(format!("server/discover: {STATELESS_VERSION} not among the supported versions: {result}"));
        }
        Ok(result.pointer("/_meta/io.modelcontextprotocol~1serverInfo").map(|v| v.to_string()).unwrap_or_default())
    }

    /// The `result` of the response to `id` among the last response's messages, as a tree.
    fn result_value(&self, id: u64, what: &str) -> Result<serde_json::Value, String> {
        for &(a, b) in &self.messages {
            let msg = &self.message_bytes(a, b);
            match parse::<&serde_json::value::RawValue>(msg)? {
                Parsed::Notification => continue,
                Parsed::Result(got, result) if got == id => {
                    return serde_json::from_str(result.get()).map_err(|e| format!("{what} result: {e}"));
                }
                Parsed::Result(got, _) => return Err(format!("{what}: response to id {got}, sent {id}")),
            }
        }
        Err(format!("{what}: no response in the body: {}", excerpt(&self.body)))
    }

    fn message_bytes(&self, a: usize, b: usize) -> &[u8] {
        if a == usize::MAX { &self.sse_data[..b] } else { &self.body[a..b] }
    }

    /// One echo call `id`, verified (the answer must be the response to `id`, text `"<id>"`).
    pub async fn echo(&mut self, id: u64) -> Result<(), String> {
        let mut body = std::mem::take(&mut self.req_body);
        body.clear();
        let meta = match self.era {
            Era::Handshake => None,
            Era::Stateless | Era::Bare => Some(std::mem::take(&mut self.meta)),
        };
        proto::echo_request(&mut body, id, meta.as_deref());
        if let Some(meta) = meta {
            self.meta = meta;
        }
        let r = self.post_buf(&body, "tools/call", Some("echo")).await;
        self.req_body = body;
        let r = r?;
        if r.status != 200 {
            return Err(format!("echo {id}: HTTP {}: {}", r.status, excerpt(&self.body)));
        }
        let mut answered = false;
        for i in 0..self.messages.len() {
            let (a, b) = self.messages[i];
            match parse::<CallResult<'_>>(self.message_bytes(a, b))? {
                Parsed::Notification => {}
                Parsed::Result(got, result) if got == id && !answered => {
                    verify_echo(id, &result)?;
                    answered = true;
                }
                Parsed::Result(got, _) => return Err(format!("echo {id}: a response to id {got} in its body")),
            }
        }
        if answered { Ok(()) } else { Err(format!("echo {id}: no response in the body: {}", excerpt(&self.body))) }
    }

    /// `DELETE` the session (handshake era), if any.
    pub async fn end_session(&mut self) -> Result<(), String> {
        if self.session.is_none() {
            return Ok(());
        }
        self.out.clear();
        self.out.extend_from_slice(b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:");
        self.out.extend_from_slice(itoa::Buffer::new().format(self.port).as_bytes());
        self.head_era_headers(None, None);
        self.out.extend_from_slice(b"\r\n");
        let out = std::mem::take(&mut self.out);
        let r = self.exchange(&out).await;
        self.out = out;
        r.map(|_| ())
    }

    /// POSTs `body` (a JSON-RPC message) and reads the whole response.
    pub async fn post(&mut self, body: &[u8], method: &str, name: Option<&str>) -> Result<Response, String> {
        let r = self.post_buf(body, method, name).await?;
        if !(200..300).contains(&r.status) {
            return Err(format!("{method}: HTTP {}: {}", r.status, excerpt(&self.body)));
        }
        Ok(r)
    }

    async fn post_buf(&mut self, body: &[u8], method: &str, name: Option<&str>) -> Result<Response, String> {
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        self.out.clear();
        self.out.extend_from_slice(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:");
        self.out.extend_from_slice(itoa::Buffer::new().format(self.port).as_bytes());
        self.out.extend_from_slice(
            b"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ",
        );
        self.out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        self.head_era_headers(Some(method), name);
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(body);
        let out = std::mem::take(&mut self.out);
        let r = self.exchange(&out).await;
        self.out = out;
        r
    }

    /// The era's headers (each starting with `\r\n`), after the request line and fixed headers.
    fn head_era_headers(&mut self, method: Option<&str>, name: Option<&str>) {
        match self.era {
            Era::Handshake => {
                if let Some(s) = &self.session {
                    self.out.extend_from_slice(b"\r\nMcp-Session-Id: ");
                    self.out.extend_from_slice(s.as_bytes());
                    self.out.extend_from_slice(b"\r\nMCP-Protocol-Version: ");
                    self.out.extend_from_slice(PROTOCOL_VERSION.as_bytes());
                }
            }
            Era::Stateless | Era::Bare => {
                self.out.extend_from_slice(b"\r\nMCP-Protocol-Version: ");
                self.out.extend_from_slice(STATELESS_VERSION.as_bytes());
                if let Some(m) = method {
                    self.out.extend_from_slice(b"\r\nMcp-Method: ");
                    self.out.extend_from_slice(m.as_bytes());
                }
                if let Some(n) = name {
                    self.out.extend_from_slice(b"\r\nMcp-Name: ");
                    self.out.extend_from_slice(n.as_bytes());
                }
            }
        }
        self.out.extend_from_slice(b"\r\n");
    }

    /// Writes `request` and reads one response into `body`/`messages`.
    async fn exchange(&mut self, request: &[u8]) -> Result<Response, String> {
        self.tcp.write_all(request).await.map_err(|e| format!("write to the server failed: {e}"))?;
        match tokio::time::timeout(STALL, self.read_response()).await {
            Ok(r) => r,
            Err(_) => Err(format!("no response within {} s", STALL.as_secs())),
        }
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.rpos == self.rbuf.len() {
            self.rbuf.clear();
            self.rpos = 0;
        } else if self.rpos > 0 && self.rbuf.capacity() - self.rbuf.len() < 16 * 1024 {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
        if self.rbuf.len() - self.rpos > MAX_RESPONSE {
            return Err("response larger than 64 MiB".to_owned());
        }
        self.rbuf.reserve(32 * 1024);
        match self.tcp.read_buf(&mut self.rbuf).await {
            Ok(0) => Err("the server closed the connection".to_owned()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read from the server failed: {e}")),
        }
    }

    /// Reads until `rbuf[rpos..]` holds `n` bytes.
    async fn need(&mut self, n: usize) -> Result<(), String> {
        while self.rbuf.len() - self.rpos < n {
            self.fill().await?;
        }
        Ok(())
    }

    /// Reads a CRLF-terminated line; returns its end (exclusive of CRLF) as an offset from `rpos`.
    async fn line(&mut self) -> Result<usize, String> {
        let mut from = 0;
        loop {
            let avail = &self.rbuf[self.rpos..];
            if let Some(i) = memchr::memmem::find(&avail[from..], b"\r\n") {
                return Ok(from + i);
            }
            from = avail.len().saturating_sub(1);
            self.fill().await?;
        }
    }

    async fn read_response(&mut self) -> Result<Response, String> {
        // The head.
        let mut from = 0;
        let head_len = loop {
            let avail = &self.rbuf[self.rpos..];
            if let Some(i) = memchr::memmem::find(&avail[from..], b"\r\n\r\n") {
                break from + i + 4;
            }
            from = avail.len().saturating_sub(3);
            self.fill().await?;
        };
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Response::new(&mut headers);
        let head = &self.rbuf[self.rpos..self.rpos + head_len];
        match parsed.parse(head) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => return Err("incomplete response head".to_owned()),
            Err(e) => return Err(format!("bad response head ({e}): {}", excerpt(head))),
        }
        let status = parsed.code.unwrap_or(0);
        let mut length = None;
        let mut chunked = false;
        let mut sse = false;
        let mut session = None;
        let mut close = false;
        for h in parsed.headers.iter() {
            let v = std::str::from_utf8(h.value).unwrap_or("");
            if h.name.eq_ignore_ascii_case("content-length") {
                length = Some(v.trim().parse::<usize>().map_err(|_| format!("bad Content-Length {v:?}"))?);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.to_ascii_lowercase().contains("chunked");
            } else if h.name.eq_ignore_ascii_case("content-type") {
                sse = v.trim_start().to_ascii_lowercase().starts_with("text/event-stream");
            } else if h.name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(v.to_owned());
            } else if h.name.eq_ignore_ascii_case("connection") {
                close = v.eq_ignore_ascii_case("close");
            }
        }
        if close {
            return Err(format!("the server closes the connection (HTTP {status}): no keep-alive"));
        }
        self.rpos += head_len;
        self.body.clear();
        if chunked {
            loop {
                let end = self.line().await?;
                let size_text = std::str::from_utf8(&self.rbuf[self.rpos..self.rpos + end]).unwrap_or("");
                let size_text = size_text.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size {size_text:?}"))?;
                self.rpos += end + 2;
                if size == 0 {
                    // Trailers (none expected) up to the empty line.
                    loop {
                        let end = self.line().await?;
                        self.rpos += end + 2;
                        if end == 0 {
                            break;
                        }
                    }
                    break;
                }
                if self.body.len() + size > MAX_RESPONSE {
                    return Err("response body larger than 64 MiB".to_owned());
                }
                self.need(size + 2).await?;
                self.body.extend_from_slice(&self.rbuf[self.rpos..self.rpos + size]);
                self.rpos += size + 2;
            }
        } else {
            let n = length.unwrap_or(0);
            if n > MAX_RESPONSE {
                return Err("response body larger than 64 MiB".to_owned());
            }
            self.need(n).await?;
            self.body.extend_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
            self.rpos += n;
        }
        self.messages.clear();
        if sse {
            self.split_sse();
        } else if !self.body.is_empty() {
            self.messages.push((0, self.body.len()));
        }
        Ok(Response { status, session })
    }

    /// The `data` of each SSE event with data, as message ranges. An event whose data is one
    /// line is a range of `body`; one of several lines is joined into `sse_data` (one such
    /// event per response is supported, enough for what servers send here).
    fn split_sse(&mut self) {
        let mut start = None::<(usize, usize)>;
        let mut multi = false;
        self.sse_data.clear();
        let body = &self.body;
        let mut pos = 0;
        while pos <= body.len() {
            let end = memchr::memchr(b'\n', &body[pos..]).map_or(body.len(), |i| pos + i);
            let mut line = &body[pos..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.is_empty() {
                if let Some((a, b)) = start.take() {
                    if multi {
                        self.messages.push((usize::MAX, self.sse_data.len()));
                    } else if b > a {
                        self.messages.push((a, b));
                    }
                }
                multi = false;
            } else if let Some(data) = line.strip_prefix(b"data:") {
                let skip = usize::from(data.first() == Some(&b' '));
                let a = pos + 5 + skip;
                let b = pos + line.len();
                match start {
                    None => start = Some((a, b)),
                    Some((a0, b0)) => {
                        if !multi {
                            self.sse_data.extend_from_slice(&body[a0..b0]);
                            multi = true;
                        }
                        self.sse_data.push(b'\n');
                        self.sse_data.extend_from_slice(&body[a..b]);
                    }
                }
            }
            pos = end + 1;
        }
        if let Some((a, b)) = start
            && !multi
            && b > a
        {
            self.messages.push((a, b));
        }
    }
}

/// `httpN`: `conns` keep-alive connections, each with one echo in flight at a time, for
/// `duration`. Returns the run and the connections for reuse.
pub async fn echo_load(
    conns: Vec<HttpConn>,
    duration: Duration,
    hist: &mut Histogram<u64>,
) -> Result<(Run, Vec<HttpConn>), String> {
    let start = Instant::now();
    let deadline = start + duration;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut h = histogram();
                let mut calls = 0u64;
                let mut last = start;
                loop {
                    let sent = Instant::now();
                    if sent >= deadline || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let id = c.next_id();
                    if let Err(e) = c.echo(id).await {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                    last = Instant::now();
                    h.saturating_record(u64::try_from((last - sent).as_nanos()).unwrap_or(u64::MAX));
                    calls += 1;
                }
                Ok((c, h, calls, last))
            })
        })
        .collect();
    let mut calls = 0;
    let mut last = start;
    let mut back = Vec::new();
    let mut error = None;
    for t in tasks {
        match t.await {
            Ok(Ok((c, h, n, l))) => {
                hist.add(&h).map_err(|e| format!("histogram: {e}"))?;
                calls += n;
                last = last.max(l);
                back.push(c);
            }
            Ok(Err(e)) => error = error.or(Some(e)),
            Err(e) => error = error.or(Some(format!("a connection task failed: {e}"))),
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    Ok((Run { calls, elapsed: last - start, note: String::new() }, back))
}

/// Opens `n` connections (each with its session in the handshake era), one after another.
pub async fn open_conns(port: u16, era: Era, n: u64) -> Result<Vec<HttpConn>, String> {
    let mut conns = Vec::new();
    for _ in 0..n {
        conns.push(HttpConn::open(port, era).await?);
    }
    Ok(conns)
}

/// `sessions`: the server's RSS growth per idle handshake-era session. One session is opened
/// and used first (so one-time allocations are not counted), then `n` sessions are opened over
/// one connection (`initialize` + `notifications/initialized` each) and left idle; RSS is read
/// from `/proc/PID/status` after the server settles, before and after. Every session is used
/// for one echo afterwards (proving it exists), then ended.
pub async fn sessions(server: &HttpServer, n: u64) -> Result<(Run, f64, String), String> {
    let mut warm = HttpConn::open(server.port, Era::Handshake).await?;
    let id = warm.next_id();
    warm.echo(id).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.rss_kib()?;
    let start = Instant::now();
    let mut c = HttpConn::connect(server.port, Era::Handshake).await?;
    let mut ids = Vec::with_capacity(n as usize);
    for _ in 0..n {
        c.initialize().await?;
        ids.push(c.session.take().ok_or("no session")?);
    }
    let opened = start.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = server.rss_kib()?;
    for s in ids {
        c.session = Some(s);
        let id = c.next_id();
        c.echo(id).await?;
        c.end_session().await?;
    }
    warm.end_session().await?;
    let per = (after as f64 - before as f64) * 1024.0 / 1000.0 / n as f64;
    let note = format!(
        "{n} idle sessions: RSS {before} → {after} KiB, {per:.1} KB/session; opened in {:.0} ms",
        opened.as_secs_f64() * 1e3
    );
    Ok((Run { calls: n, elapsed: opened, note: note.clone() }, per, note))
}

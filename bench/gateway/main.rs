//! `bench-gateway`: what `portico serve` costs between a client and an upstream.
//!
//! The same `echo` tool call, made directly to the bench server and through `portico serve`
//! with that server as its one upstream (`prefix = ""`, so the tool keeps its name), over stdio
//! (driver ⇄ gateway ⇄ upstream, both hops pipes) and over Streamable HTTP (both hops HTTP), at 1
//! and 64 calls in flight, beside the raw round trip of the same transport (`raw-echo`, the bare
//! hyper `http-echo`). For each row: calls/s, p50/p99 latency, and the CPU time per call of the
//! gateway process alone and of the upstream process alone (`utime + stime` of
//! `/proc/PID/stat`, before and after the measured time). Then memory: the gateway's resident
//! set (its children not counted) with no upstream and with 10 idle upstreams, and its growth per
//! idle downstream HTTP session. Ends with the figures against the targets.
//!
//! ```text
//! bench-gateway [OPTIONS] --bin DIR --portico PATH     # DIR: bench-server, raw-echo, http-echo
//! bench-gateway upstream [--tools N]                   # a small MCP server on stdio: echo + N-1 no-ops
//! bench-gateway relay [--commit DIR] COMMAND [ARGS...] # the floor: a bare JSON-RPC relay (relay.rs)
//! bench-gateway http-relay UPSTREAM_PORT PORT [--commit DIR] # the HTTP floor: a bare relay between two HTTP hops (http_relay.rs)
//! bench-gateway commit [--commits N] [--bytes B] [DIR] # the floor of a log that commits each call alone (commit.rs)
//!
//! OPTIONS
//!   --duration SECS   measured time per row (default 3)
//!   --warmup SECS     unmeasured time before it (default 1)
//!   --rounds N        rounds, interleaved; figures are medians (default 1)
//!   --era ERA         handshake (default: 2025-11-25 initialize) or stateless (2026-07-28)
//!   --parts LIST      stdio,http,memory (default: all)
//!   --place PLACE     which CPU each process runs on (Linux; `taskset` for the processes started):
//!                     free (default: the kernel's choice), one (every process on CPU 0: no
//!                     wake-up crosses CPUs), split (the driver and the upstream on CPU 0, the
//!                     process measured in the middle on CPU 1: every hop crosses CPUs; the direct
//!                     rows get a server of their own on CPU 1)
//!   --sessions N      idle downstream HTTP sessions for the per-session figure (default 1000)
//!   --tools N         tools of each idle upstream in the memory figures (default 10)
//!   --no-audit        the gateway's activity log off (`[audit] enabled = false`; on by default)
//!   --audit-queued    the log on, calls waiting for its queue rather than its commit (`wait = "queued"`)
//!   --python PATH     also the stdio rows over a Python SDK upstream (`gateway/py_echo.py`; PATH
//!                     a Python with `mcp` 2.x, e.g. `.ci-cache/py/bin/python` of
//!                     scripts/install-host-interop.sh)
//! ```
//!
//! `BENCH_GATEWAY_KEEP=1` keeps the temporary directory (configs, the gateway's stderr) and
//! prints its path.
//!
//! The load driver's own modules (`bench/src/driver`) do the talking: every response is
//! verified, and any error voids the run (exit 2). Every process started is stopped at the end
//! (the gateway first, then any upstream it left behind).
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[allow(dead_code)]
#[path = "../src/driver/conn.rs"]
mod conn;
#[allow(dead_code)]
#[path = "../src/driver/cpu.rs"]
mod cpu;
#[allow(dead_code)]
#[path = "../src/driver/http.rs"]
mod http;
#[allow(dead_code)]
#[path = "../src/driver/proto.rs"]
mod proto;
#[allow(dead_code)]
#[path = "../src/driver/workloads.rs"]
mod workloads;

mod commit;
mod http_relay;
mod relay;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::conn::{Conn, Era};
use crate::cpu::cpu_time;
use crate::http::{HttpConn, HttpServer};
use crate::workloads::histogram;

struct Opts {
    bin: PathBuf,
    portico: PathBuf,
    duration: Duration,
    warmup: Duration,
    rounds: usize,
    era: Era,
    stdio: bool,
    http: bool,
    memory: bool,
    sessions: u64,
    tools: usize,
    /// The activity log's setting in every config.
    audit: Audit,
    /// A Python with the official SDK (`mcp`): the stdio part also runs over `py_echo.py`.
    python: Option<PathBuf>,
    place: Place,
    /// The machine's CPUs, counted before `--place` pins this process.
    cores: usize,
}

/// Which CPU each process runs on (`--place`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The kernel's choice.
    Free,
    /// Every process on CPU 0.
    One,
    /// The driver and the upstream on CPU 0, the process in the middle (the gateway, the relay,
    /// the server of a direct row) on CPU 1.
    Split,
}

impl Place {
    /// `argv` as the process in the middle: on CPU 1 when split.
    fn middle(self, argv: Vec<String>) -> Vec<String> {
        match self {
            Place::Split => taskset("1", argv),
            Place::Free | Place::One => argv,
        }
    }

    /// `argv` as an upstream started by the process in the middle: back on CPU 0 when split.
    fn upstream(self, argv: Vec<String>) -> Vec<String> {
        match self {
            Place::Split => taskset("0", argv),
            Place::Free | Place::One => argv,
        }
    }

    /// What the header line says of it.
    fn label(self) -> &'static str {
        match self {
            Place::Free => "",
            Place::One => " · placed: every process on CPU 0",
            Place::Split => " · placed: driver and upstream on CPU 0, the process in the middle on CPU 1",
        }
    }
}

/// `argv` run by `taskset -c CPU` (which execs it: the pid stays the program's).
fn taskset(cpu: &str, argv: Vec<String>) -> Vec<String> {
    let mut v = vec!["taskset".to_owned(), "-c".to_owned(), cpu.to_owned()];
    v.extend(argv);
    v
}

/// Pins this process (one thread so far; every thread and child after inherits it) to CPU 0.
fn pin_to_cpu0() -> Result<(), String> {
    let mut set = nix::sched::CpuSet::new();
    set.set(0).map_err(|e| format!("--place: {e}"))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|e| format!("--place: CPU 0: {e}"))
}

/// How the gateway's activity log is set up in the configs written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Audit {
    /// On, calls waiting for their record's commit (the default).
    Written,
    /// On, calls waiting only for the queue (`--audit-queued`: `[audit] wait = "queued"`).
    Queued,
    /// Off (`--no-audit`: `[audit] enabled = false`).
    Off,
}

impl Audit {
    /// The `[audit]` table written into each config.
    fn toml(self) -> &'static str {
        match self {
            Audit::Written => "",
            Audit::Queued => {
                "# Calls wait for the queue, not the commit (--audit-queued).\n[audit]\nwait = \"queued\"\n\n"
            }
            Audit::Off => "# The activity log off (--no-audit).\n[audit]\nenabled = false\n\n",
        }
    }

    /// What the header line says of it.
    fn label(self) -> &'static str {
        match self {
            Audit::Written => "",
            Audit::Queued => " · activity log: calls wait for the queue",
            Audit::Off => " · activity log off",
        }
    }
}

const USAGE: &str = "usage: bench-gateway [--duration SECS] [--warmup SECS] [--rounds N] [--era handshake|stateless] \
                     [--parts stdio,http,memory] [--place free|one|split] [--sessions N] [--tools N] [--no-audit | --audit-queued] [--python PATH] --bin DIR --portico PATH\n       \
                     bench-gateway upstream [--tools N]";

fn seconds(v: Option<String>, what: &str) -> Result<Duration, String> {
    let v = v.ok_or_else(|| format!("{what} needs a value"))?;
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{what}: not a number of seconds: {v}"))
}

fn count(v: Option<String>, what: &str) -> Result<u64, String> {
    v.and_then(|n| n.parse().ok()).filter(|&n| n > 0).ok_or_else(|| format!("{what} needs a positive count"))
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Opts, String> {
    let mut o = Opts {
        bin: PathBuf::new(),
        portico: PathBuf::new(),
        duration: Duration::from_secs(3),
        warmup: Duration::from_secs(1),
        rounds: 1,
        era: Era::Handshake,
        stdio: true,
        http: true,
        memory: true,
        sessions: 1000,
        tools: 10,
        audit: Audit::Written,
        python: None,
        place: Place::Free,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
    };
    let (mut bin, mut portico) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin" => bin = Some(PathBuf::from(args.next().ok_or("--bin needs a directory")?)),
            "--portico" => portico = Some(PathBuf::from(args.next().ok_or("--portico needs a path")?)),
            "--duration" => o.duration = seconds(args.next(), "--duration")?,
            "--warmup" => o.warmup = seconds(args.next(), "--warmup")?,
            "--rounds" => o.rounds = count(args.next(), "--rounds")? as usize,
            "--sessions" => o.sessions = count(args.next(), "--sessions")?,
            "--tools" => o.tools = count(args.next(), "--tools")? as usize,
            "--no-audit" | "--audit-queued" if o.audit != Audit::Written => {
                return Err("--no-audit and --audit-queued: one at most".to_owned());
            }
            "--no-audit" => o.audit = Audit::Off,
            "--python" => o.python = Some(PathBuf::from(args.next().ok_or("--python needs a path")?)),
            "--audit-queued" => o.audit = Audit::Queued,
            "--place" => {
                o.place = match args.next().as_deref() {
                    Some("free") => Place::Free,
                    Some("one") => Place::One,
                    Some("split") => Place::Split,
                    other => return Err(format!("--place: expected free, one or split, got {other:?}")),
                }
            }
            "--era" => {
                o.era = match args.next().as_deref() {
                    Some("handshake") => Era::Handshake,
                    Some("stateless") => Era::Stateless,
                    other => return Err(format!("--era: expected handshake or stateless, got {other:?}")),
                }
            }
            "--parts" => {
                let list = args.next().ok_or("--parts needs a value")?;
                (o.stdio, o.http, o.memory) = (false, false, false);
                for p in list.split(',').filter(|p| !p.is_empty()) {
                    match p {
                        "stdio" => o.stdio = true,
                        "http" => o.http = true,
                        "memory" => o.memory = true,
                        other => return Err(format!("--parts: unknown part {other}")),
                    }
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    o.bin = bin.ok_or(USAGE)?;
    o.portico = portico.ok_or(USAGE)?;
    for exe in ["bench-server", "raw-echo", "http-echo"] {
        if !o.bin.join(exe).is_file() {
            return Err(format!("no {exe} in {}", o.bin.display()));
        }
    }
    if let Some(p) = o.python.as_ref().filter(|p| !p.is_file()) {
        return Err(format!("--python: no {}", p.display()));
    }
    if !o.portico.is_file() {
        return Err(format!("no portico binary at {}", o.portico.display()));
    }
    if o.place == Place::Split && o.cores < 2 {
        return Err("--place split needs two CPUs".to_owned());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("upstream") {
        args.next();
        return upstream::main(args);
    }
    if args.peek().map(String::as_str) == Some("relay") {
        args.next();
        return relay::main(args);
    }
    if args.peek().map(String::as_str) == Some("http-relay") {
        args.next();
        return http_relay::main(args);
    }
    if args.peek().map(String::as_str) == Some("commit") {
        args.next();
        return commit::main(args);
    }
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(64);
        }
    };
    if opts.place != Place::Free
        && let Err(e) = pin_to_cpu0()
    {
        eprintln!("{e}");
        return ExitCode::from(70);
    }
    // Like bench-driver: one thread for the driver, the other core(s) for the processes measured.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(70);
        }
    };
    let dir = std::env::temp_dir().join(format!("portico-bench-gateway.{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::from(73);
    }
    let result = runtime.block_on(run(&opts, &dir));
    if std::env::var_os("BENCH_GATEWAY_KEEP").is_some() {
        eprintln!("kept {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-gateway: VOID: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs a subcommand's `work` on a single-threaded runtime: exit 0 when it succeeds, 1 with
/// `bench-gateway NAME: error` when it fails, 70 when the runtime cannot start.
fn subcommand<E: std::fmt::Display>(name: &str, work: impl std::future::Future<Output = Result<(), E>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(70);
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-gateway {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One measured configuration: a row of the table.
#[derive(Clone, Default)]
struct Row {
    calls_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    /// CPU µs per call of the gateway process (gateway rows only).
    gateway_cpu: Option<f64>,
    /// CPU µs per call of the upstream process (the server itself in direct rows).
    upstream_cpu: Option<f64>,
}

/// How a row's process set is laid out.
#[derive(Clone, Copy)]
enum Layout<'a> {
    /// Nothing measured but the latency (raw echo baselines).
    Raw,
    /// The spawned process is the upstream.
    Direct,
    /// The spawned process is the gateway (its stderr going to this log); the upstream is its
    /// child of this executable name.
    GatewayChild(&'static str, &'a Path),
    /// The spawned process is `bench-gateway relay`; the upstream is its child of this name.
    RelayChild(&'static str),
}

fn per_call_us(cpu: Option<Duration>, calls: u64) -> Option<f64> {
    cpu.filter(|_| calls > 0).map(|c| c.as_secs_f64() * 1e6 / calls as f64)
}

/// CPU used by `pid` since `before`.
fn cpu_since(pid: u32, before: Option<Duration>) -> Option<Duration> {
    cpu_time(Some(pid)).zip(before).map(|(after, before)| after.saturating_sub(before))
}

fn row_of(hist: &Histogram<u64>, calls: u64, elapsed: Duration) -> Row {
    Row {
        calls_per_s: if elapsed > Duration::ZERO { calls as f64 / elapsed.as_secs_f64() } else { 0.0 },
        p50_us: hist.value_at_quantile(0.5) as f64 / 1e3,
        p99_us: hist.value_at_quantile(0.99) as f64 / 1e3,
        ..Row::default()
    }
}

/// The pids of the processes whose parent is `parent`, with their names (`comm`).
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_owned();
        // After ')': state, then ppid.
        let ppid = stat[close + 1..].split_ascii_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push((pid, comm));
        }
    }
    out
}

/// Waits (up to 5 s) for `parent`'s child named `name` (`comm` is cut to 15 bytes; "": any).
async fn child_named(parent: u32, name: &str) -> Result<u32, String> {
    let comm: String = name.chars().take(15).collect();
    for _ in 0..100 {
        if let Some((pid, _)) = children_of(parent).into_iter().find(|(_, c)| comm.is_empty() || *c == comm) {
            return Ok(pid);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("process {parent} has no child {name}"))
}

/// SIGKILLs whichever of `pids` is still alive (an upstream the gateway left behind).
fn reap(pids: &[u32]) {
    for &pid in pids {
        if std::path::Path::new(&format!("/proc/{pid}")).exists()
            && let Ok(p) = i32::try_from(pid)
        {
            // A zombie child of an exited gateway is reaped by init; only live ones are reported.
            let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().starts_with('Z')))
                == Some(false);
            if live {
                eprintln!("note: process {pid} outlived the gateway that started it; killed");
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

/// `argv` run through `sh -c 'exec …'` with its stderr appended to `log`: the pid stays the
/// program's, and the gateway's announcements stay out of the table.
fn quiet(argv: &[String], log: &Path) -> Vec<String> {
    let mut v = vec!["sh".to_owned(), "-c".to_owned(), format!("exec \"$0\" \"$@\" 2>>'{}'", log.display())];
    v.extend(argv.iter().cloned());
    v
}

fn toml_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A gateway config: `[gateway]` with its state in `dir`, calls allowed without asking, the
/// activity log as `AUDIT` says, then the given `[servers.*]` tables.
fn write_config(dir: &Path, name: &str, servers: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    let audit = AUDIT.get().copied().unwrap_or(Audit::Written).toml();
    let text = format!(
        "# Written by bench-gateway.\n[gateway]\nstate_dir = {}\n\n\
         # Calls go through without asking anyone (the policy's default asks about tool calls).\n\
         [policy.defaults]\ntools = \"allow\"\n\n{audit}{servers}",
        toml_str(&dir.join("state").to_string_lossy())
    );
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// `--no-audit` or `--audit-queued`, for [`write_config`].
static AUDIT: std::sync::OnceLock<Audit> = std::sync::OnceLock::new();

fn stdio_server(name: &str, command: &Path, args: &[&str], prefix: Option<&str>) -> String {
    let args: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
    let mut s =
        format!("[servers.{name}]\ncommand = {}\nargs = [{}]\n", toml_str(&command.to_string_lossy()), args.join(", "));
    if let Some(p) = prefix {
        let _ = writeln!(s, "prefix = {}", toml_str(p));
    }
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------------
// stdio

/// One stdio row: `argv` spawned and driven at `inflight` (1: `seq`, else `pipeN`).
async fn stdio_row(argv: &[String], era: Era, inflight: u64, layout: Layout<'_>, o: &Opts) -> Result<Row, String> {
    if let Layout::GatewayChild(_, log) = layout {
        let _ = std::fs::write(log, "");
    }
    let mut conn = Conn::spawn(argv, era).await?;
    let spawned = conn.pid;
    let upstream = match layout {
        Layout::GatewayChild(name, _) | Layout::RelayChild(name) => {
            let ready = async {
                if let Layout::GatewayChild(_, log) = layout {
                    announced(log, 1).await?;
                }
                child_named(spawned, name).await
            };
            match ready.await {
                Ok(pid) => Some(pid),
                Err(e) => {
                    let _ = conn.shutdown().await;
                    return Err(e);
                }
            }
        }
        Layout::Raw | Layout::Direct => None,
    };
    let measured = async {
        let mut scratch = histogram();
        let mut hist = histogram();
        if o.warmup > Duration::ZERO {
            drive_stdio(&mut conn, inflight, o.warmup, &mut scratch).await?;
        }
        let (spawned_before, upstream_before) = (cpu_time(Some(spawned)), upstream.and_then(|p| cpu_time(Some(p))));
        let run = drive_stdio(&mut conn, inflight, o.duration, &mut hist).await?;
        let spawned_cpu = per_call_us(cpu_since(spawned, spawned_before), run.calls);
        let upstream_cpu = upstream.and_then(|p| per_call_us(cpu_since(p, upstream_before), run.calls));
        let mut row = row_of(&hist, run.calls, run.elapsed);
        match layout {
            Layout::Raw => {}
            Layout::Direct => row.upstream_cpu = spawned_cpu,
            Layout::GatewayChild(..) | Layout::RelayChild(_) => {
                row.gateway_cpu = spawned_cpu;
                row.upstream_cpu = upstream_cpu;
            }
        }
        Ok::<_, String>(row)
    }
    .await;
    let status = conn.shutdown().await;
    if let Some(pid) = upstream {
        tokio::time::sleep(Duration::from_millis(200)).await;
        reap(&[pid]);
    }
    let row = measured?;
    match status {
        Some(s) if s.success() => {}
        Some(s) => eprintln!("note: {} exited with {s} after stdin closed", argv.join(" ")),
        None => eprintln!("note: {} did not exit within 5 s of stdin closing; killed", argv.join(" ")),
    }
    Ok(row)
}

async fn drive_stdio(
    conn: &mut Conn,
    inflight: u64,
    d: Duration,
    h: &mut Histogram<u64>,
) -> Result<workloads::Run, String> {
    if inflight == 1 { workloads::seq(conn, d, h).await } else { workloads::pipe(conn, inflight, d, h).await }
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// Starts an HTTP server and checks it answers in `era` (`Bare`: no check).
async fn start_http(argv: &[String], era: Era) -> Result<HttpServer, String> {
    let server = HttpServer::spawn(argv).await?;
    let checked = async {
        let mut c = HttpConn::connect(server.port, era).await?;
        match era {
            Era::Handshake => {
                c.initialize().await?;
                c.end_session().await
            }
            Era::Stateless => c.discover().await.map(|_| ()),
            Era::Bare => Ok(()),
        }
    }
    .await;
    match checked {
        Ok(()) => Ok(server),
        Err(e) => {
            server.stop().await;
            Err(e)
        }
    }
}

/// One HTTP row against a running server: `conns` connections, one call in flight on each.
async fn http_row(server: &HttpServer, era: Era, conns: u64, upstream: Option<u32>, o: &Opts) -> Result<Row, String> {
    let mut cs = http::open_conns(server.port, era, conns).await?;
    if o.warmup > Duration::ZERO {
        let mut scratch = histogram();
        cs = http::echo_load(cs, o.warmup, &mut scratch).await?.1;
    }
    let mut hist = histogram();
    let (spawned_before, upstream_before) = (cpu_time(Some(server.pid)), upstream.and_then(|p| cpu_time(Some(p))));
    let (run, mut cs) = http::echo_load(cs, o.duration, &mut hist).await?;
    let spawned_cpu = per_call_us(cpu_since(server.pid, spawned_before), run.calls);
    let upstream_cpu = upstream.and_then(|p| per_call_us(cpu_since(p, upstream_before), run.calls));
    for c in &mut cs {
        c.end_session().await?;
    }
    let mut row = row_of(&hist, run.calls, run.elapsed);
    if upstream.is_some() {
        row.gateway_cpu = spawned_cpu;
        row.upstream_cpu = upstream_cpu;
    } else {
        row.upstream_cpu = spawned_cpu;
    }
    Ok(row)
}

// ---------------------------------------------------------------------------------------------
// The table

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn median_row(rows: &[Row]) -> Row {
    let opt = |f: fn(&Row) -> Option<f64>| {
        let v: Vec<f64> = rows.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(v))
    };
    Row {
        calls_per_s: median(rows.iter().map(|r| r.calls_per_s).collect()),
        p50_us: median(rows.iter().map(|r| r.p50_us).collect()),
        p99_us: median(rows.iter().map(|r| r.p99_us).collect()),
        gateway_cpu: opt(|r| r.gateway_cpu),
        upstream_cpu: opt(|r| r.upstream_cpu),
    }
}

fn fmt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// A table's row: what it is, the calls in flight, the figures.
struct Line {
    label: &'static str,
    inflight: u64,
    row: Row,
}

fn lines(labels: &[(&'static str, u64)], rounds: &[Vec<Row>]) -> Vec<Line> {
    labels.iter().zip(rounds).map(|(&(label, inflight), r)| Line { label, inflight, row: median_row(r) }).collect()
}

fn print_table(title: &str, lines: &[Line]) {
    println!("\n== {title}");
    println!(
        "{:<28} {:>9} {:>10} {:>9} {:>9} {:>12} {:>14}",
        "row", "in flight", "calls/s", "p50 µs", "p99 µs", "gw CPU µs/c", "upstr CPU µs/c"
    );
    for l in lines {
        let r = &l.row;
        println!(
            "{:<28} {:>9} {:>10.0} {:>9.1} {:>9.1} {:>12} {:>14}",
            l.label,
            l.inflight,
            r.calls_per_s,
            r.p50_us,
            r.p99_us,
            fmt(r.gateway_cpu, 2),
            fmt(r.upstream_cpu, 2)
        );
    }
}

/// The targets for one transport's table: `raw` the raw round trip, `direct1` and `gw1` at 1 in
/// flight, `gws64` the gateways at 64 in flight; `floor` the bare relay at 1 and at 64 in flight,
/// where there is one.
fn judge(
    transport: &str,
    raw: &Line,
    direct1: &Line,
    gw1: &Line,
    gws64: &[&Line],
    floor: Option<(&Line, &Line)>,
    verdicts: &mut Vec<String>,
) {
    let (raw, direct1, gw1) = (&raw.row, &direct1.row, &gw1.row);
    let added = gw1.p50_us - direct1.p50_us;
    let budget = raw.p50_us + 15.0;
    verdicts.push(format!(
        "{transport}: p50 added at 1 in flight {added:.1} µs (gateway {:.1} − direct {:.1}) ≤ raw round trip {:.1} + 15 = {budget:.1} µs: {} (ratio {:.2})",
        gw1.p50_us,
        direct1.p50_us,
        raw.p50_us,
        if added <= budget { "met" } else { "NOT met" },
        added / budget
    ));
    let added99 = gw1.p99_us - direct1.p99_us;
    let budget99 = 2.0 * direct1.p99_us;
    verdicts.push(format!(
        "{transport}: p99 added at 1 in flight {added99:.1} µs (gateway {:.1} − direct {:.1}) ≤ 2 × direct p99 = {budget99:.1} µs: {} (ratio {:.2})",
        gw1.p99_us,
        direct1.p99_us,
        if added99 <= budget99 { "met" } else { "NOT met" },
        added99 / budget99
    ));
    if let Some((relay1, _)) = floor {
        verdicts.push(format!(
            "{transport}: floor: the bare relay adds {:.1} µs at p99 (ratio to that budget {:.2})",
            relay1.row.p99_us - direct1.p99_us,
            (relay1.row.p99_us - direct1.p99_us) / budget99
        ));
        let relay_added = relay1.row.p50_us - direct1.p50_us;
        verdicts.push(format!(
            "{transport}: floor: the bare relay adds {relay_added:.1} µs at p50 (ratio to the budget {:.2}){}; the gateway adds {:.1} µs more than it",
            relay_added / budget,
            if relay_added > budget { ": the target is out of reach for any gateway in this run" } else { "" },
            added - relay_added
        ));
    }
    for l in gws64 {
        if let (Some(g), Some(u)) = (l.row.gateway_cpu, l.row.upstream_cpu) {
            verdicts.push(format!(
                "{transport}: {} CPU per call at 64 in flight {g:.2} µs ≤ its upstream's {u:.2} µs: {} (ratio {:.2})",
                l.label,
                if g <= u { "met" } else { "NOT met" },
                g / u
            ));
        }
    }
    if let Some((_, relay64)) = floor
        && let (Some(r), Some(u)) = (relay64.row.gateway_cpu, relay64.row.upstream_cpu)
    {
        verdicts.push(format!(
            "{transport}: floor: the bare relay's CPU per call at 64 in flight {r:.2} µs is {:.2}× its upstream's {u:.2} µs{}",
            r / u,
            if r > u { ": the target is out of reach for any gateway that parses what it passes on" } else { "" }
        ));
    }
}

/// With the log on and calls waiting for their record's commit: the floor of such a log, one
/// record committed alone, measured now; with the relay's own addition it bounds what any such
/// gateway adds at 1 in flight.
async fn commit_floor(
    transport: &str,
    dir: &Path,
    raw: &Line,
    direct1: &Line,
    relay1: &Line,
    verdicts: &mut Vec<String>,
) -> Result<(), String> {
    let floor = commit::measure(dir, 5_000, commit::ECHO_RECORD_BYTES).await?;
    println!("{}", commit::line(&floor, commit::ECHO_RECORD_BYTES));
    let budget = raw.row.p50_us + 15.0;
    let least = (relay1.row.p50_us - direct1.row.p50_us) + floor.p50.as_secs_f64() * 1e6;
    verdicts.push(format!(
        "{transport}: floor with the log on: the bare relay's addition plus one commit is {least:.1} µs at p50 against the budget of {budget:.1} µs{}",
        if least > budget {
            ": the target is out of reach for a gateway whose calls wait for their record's commit"
        } else {
            ""
        }
    ));
    Ok(())
}

/// With the log on: what the bare relay that commits one record a call (`committing`, at one in
/// flight) adds at p99, against the gateway's p99 budget.
fn committed_floor(transport: &str, direct1: &Line, committing: &Line, verdicts: &mut Vec<String>) {
    let (added, budget) = (committing.row.p99_us - direct1.row.p99_us, 2.0 * direct1.row.p99_us);
    verdicts.push(format!(
        "{transport}: floor with the log on: the bare relay committing one record a call adds {added:.1} µs at p99 (ratio to that budget {:.2}){}",
        added / budget,
        if added > budget {
            ": the target is out of reach for a gateway whose calls wait for their record's commit"
        } else {
            ""
        }
    ));
}

/// The stdio rows over the upstream `direct` (its process named `child`; "": whatever the one
/// child is): the raw pipe echo, then direct, through the gateway and through the bare relay at
/// 1 and at 64 in flight, each round interleaved.
async fn stdio_table(
    o: &Opts,
    dir: &Path,
    direct: &[String],
    child: &'static str,
    log: &Path,
) -> Result<Vec<Line>, String> {
    // The upstream as the gateway and the relay start it.
    let upstream = o.place.upstream(direct.to_vec());
    let (command, args) = upstream.split_first().ok_or("no upstream command")?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let config = write_config(dir, "stdio.toml", &stdio_server("bench", Path::new(command), &args, Some("")))?;
    let portico = o.portico.to_string_lossy().into_owned();
    let gateway = o
        .place
        .middle(quiet(&[portico, "serve".into(), "--config".into(), config.to_string_lossy().into_owned()], log));
    let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut relay = vec![me.to_string_lossy().into_owned(), "relay".to_owned()];
    relay.extend(upstream.iter().cloned());
    let relay = o.place.middle(relay);
    // With the log on, an eighth row: the bare relay committing one record a call.
    let logged = o.audit == Audit::Written;
    let state = dir.join("relay-commit");
    let mut committing = vec![me.to_string_lossy().into_owned(), "relay".to_owned(), "--commit".to_owned()];
    committing.push(state.to_string_lossy().into_owned());
    committing.extend(upstream.iter().cloned());
    let committing = o.place.middle(committing);
    let raw = o.place.middle(vec![o.bin.join("raw-echo").to_string_lossy().into_owned()]);
    let direct = &o.place.middle(direct.to_vec());
    let mut rounds: Vec<Vec<Row>> = vec![Vec::new(); if logged { 8 } else { 7 }];
    for round in 0..o.rounds {
        eprintln!("stdio ({}), round {}/{}", direct.join(" "), round + 1, o.rounds);
        rounds[0].push(stdio_row(&raw, Era::Handshake, 1, Layout::Raw, o).await.map_err(|e| format!("raw-echo: {e}"))?);
        for (i, inflight) in [(1, 1), (4, 64)] {
            rounds[i]
                .push(stdio_row(direct, o.era, inflight, Layout::Direct, o).await.map_err(|e| format!("direct: {e}"))?);
            rounds[i + 1].push(
                stdio_row(&gateway, o.era, inflight, Layout::GatewayChild(child, log), o)
                    .await
                    .map_err(|e| format!("gateway: {e}"))?,
            );
            rounds[i + 2].push(
                stdio_row(&relay, o.era, inflight, Layout::RelayChild(child), o)
                    .await
                    .map_err(|e| format!("relay: {e}"))?,
            );
        }
        if logged {
            let _ = std::fs::remove_dir_all(&state);
            let r = stdio_row(&committing, o.era, 1, Layout::RelayChild(child), o).await;
            let _ = std::fs::remove_dir_all(&state);
            rounds[7].push(r.map_err(|e| format!("relay with commits: {e}"))?);
        }
    }
    let labels = [
        ("raw pipe echo", 1),
        ("direct", 1),
        ("gateway", 1),
        ("floor: bare relay", 1),
        ("direct", 64),
        ("gateway", 64),
        ("floor: bare relay", 64),
        ("floor: relay + commit", 1),
    ];
    Ok(lines(&labels[..rounds.len()], &rounds))
}

async fn run(o: &Opts, dir: &Path) -> Result<(), String> {
    let _ = AUDIT.set(o.audit);
    let bench_server = o.bin.join("bench-server");
    let log = dir.join("gateway.log");
    let portico = o.portico.to_string_lossy().into_owned();
    let era_name = match o.era {
        Era::Handshake => "handshake era (2025-11-25) downstream",
        _ => "2026-07-28 (stateless) downstream",
    };
    println!(
        "cores: {} · load: {} · {} s per row after {} s warmup · {} round(s), medians · {era_name}{}{}",
        o.cores,
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        o.duration.as_secs_f64(),
        o.warmup.as_secs_f64(),
        o.rounds,
        o.audit.label(),
        o.place.label()
    );
    let mut verdicts = Vec::new();

    if o.stdio {
        let direct = vec![bench_server.to_string_lossy().into_owned(), "stdio".to_owned()];
        let rows = stdio_table(o, dir, &direct, "bench-server", &log).await?;
        print_table("stdio: driver ⇄ [portico serve | bare relay ⇄] bench-server stdio (echo)", &rows);
        judge("stdio", &rows[0], &rows[1], &rows[2], &[&rows[5]], Some((&rows[3], &rows[6])), &mut verdicts);
        if o.audit == Audit::Written {
            commit_floor("stdio", dir, &rows[0], &rows[1], &rows[3], &mut verdicts).await?;
            committed_floor("stdio", &rows[1], &rows[7], &mut verdicts);
        }
        if let Some(python) = &o.python {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("gateway/py_echo.py");
            let direct = vec![python.to_string_lossy().into_owned(), script.to_string_lossy().into_owned()];
            let rows = stdio_table(o, dir, &direct, "", &log).await?;
            print_table(
                "stdio, a Python SDK upstream: driver ⇄ [portico serve | bare relay ⇄] bench/gateway/py_echo.py (echo)",
                &rows,
            );
            judge(
                "stdio, Python upstream",
                &rows[0],
                &rows[1],
                &rows[2],
                &[&rows[5]],
                Some((&rows[3], &rows[6])),
                &mut verdicts,
            );
            if let Some(committing) = rows.get(7) {
                committed_floor("stdio, Python upstream", &rows[1], committing, &mut verdicts);
            }
        }
    }

    if o.http {
        // The gateway's upstream: one HTTP session for every client (`shared = true`, right for
        // the stateless bench server), or one per downstream session (`isolate = "per-client"`,
        // the default for HTTP upstreams; `max_clients` raised from 16 to the 64 sessions).
        let shared = "shared = true\n";
        let per_client = "isolate = \"per-client\"\nmax_clients = 64\n";
        // With the log on, a ninth row: the bare relay committing one record a call.
        let logged = o.audit == Audit::Written;
        let mut rounds: Vec<Vec<Row>> = vec![Vec::new(); if logged { 9 } else { 8 }];
        let me = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        for round in 0..o.rounds {
            eprintln!("http, round {}/{}", round + 1, o.rounds);
            let hyper = start_http(
                &o.place.middle(vec![o.bin.join("http-echo").to_string_lossy().into_owned(), "{port}".into()]),
                Era::Bare,
            )
            .await?;
            let r = http_row(&hyper, Era::Bare, 1, None, o).await;
            hyper.stop().await;
            rounds[0].push(r.map_err(|e| format!("http-echo: {e}"))?);

            let server = vec![bench_server.to_string_lossy().into_owned(), "http".into(), "{port}".into()];
            let upstream = start_http(&server, o.era).await?;
            // Split: the direct rows' server in the middle's place, on CPU 1, so that their one
            // hop crosses CPUs as each of the gateway's two does.
            let own = match o.place {
                Place::Split => match start_http(&o.place.middle(server), o.era).await {
                    Ok(s) => Some(s),
                    Err(e) => {
                        upstream.stop().await;
                        return Err(format!("direct server: {e}"));
                    }
                },
                Place::Free | Place::One => None,
            };
            let result = async {
                for (i, conns, isolation) in
                    [(1, 1, shared), (2, 1, shared), (3, 64, shared), (4, 64, shared), (5, 64, per_client)]
                {
                    if i == 1 || i == 3 {
                        let r = http_row(own.as_ref().unwrap_or(&upstream), o.era, conns, None, o).await;
                        rounds[i].push(r.map_err(|e| format!("direct: {e}"))?);
                        continue;
                    }
                    let config = write_config(
                        dir,
                        "http.toml",
                        &format!(
                            "[servers.bench]\nurl = \"http://127.0.0.1:{}/mcp\"\nprefix = \"\"\n{isolation}",
                            upstream.port
                        ),
                    )?;
                    let gateway = start_gateway(&portico, &config, &log, 1, o.era, o.place)
                        .await
                        .map_err(|e| format!("gateway: {e}"))?;
                    let r = http_row(&gateway, o.era, conns, Some(upstream.pid), o).await;
                    stop_gateway(gateway).await;
                    rounds[i].push(r.map_err(|e| format!("gateway: {e}"))?);
                }
                // The floor: a bare relay between the same two hops; with the log on, also one
                // that commits a record for each call before it answers.
                let floors = [(6, 1, false), (7, 64, false), (8, 1, true)];
                for (i, conns, commits) in floors.into_iter().filter(|f| logged || !f.2) {
                    let mut command = vec![
                        me.to_string_lossy().into_owned(),
                        "http-relay".into(),
                        upstream.port.to_string(),
                        "{port}".into(),
                    ];
                    let state = dir.join("relay-commit");
                    if commits {
                        let _ = std::fs::remove_dir_all(&state);
                        command.extend(["--commit".to_owned(), state.to_string_lossy().into_owned()]);
                    }
                    let relay = start_http(&o.place.middle(command), o.era).await?;
                    let r = http_row(&relay, o.era, conns, Some(upstream.pid), o).await;
                    relay.stop().await;
                    if commits {
                        let _ = std::fs::remove_dir_all(&state);
                    }
                    rounds[i].push(r.map_err(|e| format!("http relay: {e}"))?);
                }
                Ok::<_, String>(())
            }
            .await;
            upstream.stop().await;
            if let Some(own) = own {
                own.stop().await;
            }
            result?;
        }
        let labels = [
            ("hyper echo", 1),
            ("direct", 1),
            ("gateway (shared)", 1),
            ("direct", 64),
            ("gateway (shared)", 64),
            ("gateway (per-client)", 64),
            ("floor: bare relay", 1),
            ("floor: bare relay", 64),
            ("floor: relay + commit", 1),
        ];
        let rows = lines(&labels[..rounds.len()], &rounds);
        print_table(
            "Streamable HTTP: driver ⇄ [portico serve --http | bare relay ⇄] bench-server http (echo; N in flight = N connections, each its session)",
            &rows,
        );
        judge("HTTP", &rows[0], &rows[1], &rows[2], &[&rows[4], &rows[5]], Some((&rows[6], &rows[7])), &mut verdicts);
        if logged {
            commit_floor("HTTP", dir, &rows[0], &rows[1], &rows[6], &mut verdicts).await?;
            committed_floor("HTTP", &rows[1], &rows[8], &mut verdicts);
        }
    }

    if o.memory {
        memory(o, dir, &log, &portico, &mut verdicts).await?;
    }

    println!("\n== against the targets");
    for v in &verdicts {
        println!("{v}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Memory

/// Waits (up to 30 s) until the gateway has said on stderr (`log`) that it serves all its
/// `upstreams` ready: it listens, or answers on stdio, before its upstreams have started.
async fn announced(log: &Path, upstreams: usize) -> Result<(), String> {
    let want = format!("from {upstreams}/{upstreams} servers");
    let mut said = String::new();
    for _ in 0..300 {
        said = std::fs::read_to_string(log).unwrap_or_default();
        // Only whole lines: a line read while it is being written ("portico: serving " and no
        // more) says nothing yet.
        let whole = said.rfind('\n').map_or("", |end| &said[..end]);
        if whole.contains(&want) {
            return Ok(());
        }
        if whole.contains("portico: serving") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("the gateway did not start its {upstreams} upstream(s): {said}"))
}

/// Starts `portico serve --http` on `config`, waits until every upstream is ready, returns it.
async fn start_gateway(
    portico: &str,
    config: &Path,
    log: &Path,
    upstreams: usize,
    era: Era,
    place: Place,
) -> Result<HttpServer, String> {
    let _ = std::fs::write(log, "");
    let argv = place.middle(quiet(
        &[
            portico.to_owned(),
            "serve".into(),
            "--config".into(),
            config.to_string_lossy().into_owned(),
            "--http".into(),
            "127.0.0.1:{port}".into(),
        ],
        log,
    ));
    let server = start_http(&argv, era).await?;
    if let Err(e) = announced(log, upstreams).await {
        stop_gateway(server).await;
        return Err(e);
    }
    Ok(server)
}

async fn stop_gateway(server: HttpServer) {
    let pid = server.pid;
    let children: Vec<u32> = children_of(pid).into_iter().map(|(p, _)| p).collect();
    server.stop().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    reap(&children);
}

/// The gateway's resident set after it has settled.
struct Rss {
    /// `VmRSS`, KiB.
    total: u64,
    /// `RssAnon` (heap, stacks), KiB.
    anon: u64,
    /// `RssFile` (the executable's and libraries' pages), KiB.
    file: u64,
    /// The children's `VmRSS` together, KiB, and how many there are.
    children: u64,
    count: usize,
}

async fn settled_rss(server: &HttpServer, after: Duration) -> Result<Rss, String> {
    tokio::time::sleep(after).await;
    let children = children_of(server.pid);
    Ok(Rss {
        total: server.rss_kib()?,
        anon: cpu::status_kib(server.pid, "RssAnon")?,
        file: cpu::status_kib(server.pid, "RssFile")?,
        children: children.iter().filter_map(|(p, _)| cpu::status_kib(*p, "VmRSS").ok()).sum(),
        count: children.len(),
    })
}

fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

async fn memory(o: &Opts, dir: &Path, log: &Path, portico: &str, verdicts: &mut Vec<String>) -> Result<(), String> {
    eprintln!("memory");
    let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let tools = o.tools.to_string();
    let small = |i: usize| stdio_server(&format!("idle{i}"), &me, &["upstream", "--tools", &tools], None);
    let bench = |i: usize| stdio_server(&format!("bench{i}"), &o.bin.join("bench-server"), &["stdio"], None);
    let mut lines = Vec::new();
    let mut rss_10_small = None;
    for (label, servers, n) in [
        ("no upstream".to_owned(), String::new(), 0usize),
        (format!("1 idle upstream ({} tools)", o.tools), small(0), 1),
        (format!("10 idle upstreams ({} tools each)", o.tools), (0..10).map(small).collect::<String>(), 10),
        ("10 idle bench-servers (1,002 tools each)".to_owned(), (0..10).map(bench).collect::<String>(), 10),
    ] {
        let config = write_config(dir, "memory.toml", &servers)?;
        let server = start_gateway(portico, &config, log, n, Era::Handshake, Place::Free).await?;
        let first = n == 10 && rss_10_small.is_none();
        let mut measured = vec![(label.clone(), settled_rss(&server, Duration::from_secs(1)).await)];
        if first {
            // Settled: `portico serve` gives its start-up pages back when it announces itself and
            // again after the first ping round (30 s); what idling (the second ping round, at
            // 60 s) faults back in counts.
            let label = format!("{label}, after 70 s");
            measured.push((label, settled_rss(&server, Duration::from_secs(69)).await));
        }
        stop_gateway(server).await;
        for (label, rss) in measured {
            let rss = rss?;
            if rss.count != n {
                return Err(format!("{label}: {} children running, expected {n}", rss.count));
            }
            if first {
                // The last figure, after the ping round, is the one judged.
                rss_10_small = Some(rss.total);
            }
            lines.push(format!(
                "{label:<48} gateway RSS {:>7.2} MB (heap etc. {:>6.2} + file pages {:>5.2})   upstreams, not counted: {:.1} MB",
                mb(rss.total),
                mb(rss.anon),
                mb(rss.file),
                mb(rss.children)
            ));
        }
    }
    // Per idle downstream session: a fresh gateway over one small upstream.
    let config =
        write_config(dir, "sessions.toml", &stdio_server("idle", &me, &["upstream", "--tools", &tools], Some("")))?;
    let server = start_gateway(portico, &config, log, 1, Era::Handshake, Place::Free).await?;
    let measured = http::sessions(&server, o.sessions).await;
    stop_gateway(server).await;
    let (_, per, note) = measured?;
    lines.push(format!("per idle downstream HTTP session: {per:.1} KB ({note})"));

    println!("\n== memory: gateway resident set (VmRSS of the portico process; its children not counted)");
    for l in &lines {
        println!("{l}");
    }
    if let Some(kib) = rss_10_small {
        let mb = mb(kib);
        verdicts.push(format!(
            "memory: gateway RSS with 10 idle upstreams ({} tools each), after 70 s, {mb:.2} MB ≤ 5 MB: {} (ratio {:.2})",
            o.tools,
            if mb <= 5.0 { "met" } else { "NOT met" },
            mb / 5.0
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The small upstream

/// `bench-gateway upstream [--tools N]`: an MCP server on stdio with `echo` and N-1 `noop_*`
/// tools shaped like the bench server's: what an idle upstream of a typical size costs.
mod upstream {
    use std::process::ExitCode;

    use portico::schema::{Implementation, Tool, object};
    use portico::server::Server;
    use serde::Deserialize;
    use serde::de::IgnoredAny;

    #[derive(Deserialize)]
    struct Echo {
        text: String,
    }

    pub fn main(mut args: impl Iterator<Item = String>) -> ExitCode {
        let mut tools = 10usize;
        while let Some(a) = args.next() {
            match (a.as_str(), args.next().and_then(|n| n.parse().ok())) {
                ("--tools", Some(n)) if n > 0 => tools = n,
                _ => {
                    eprintln!("usage: bench-gateway upstream [--tools N]");
                    return ExitCode::from(64);
                }
            }
        }
        crate::subcommand("upstream", async { server(tools).serve(portico::transport::stdio::stdio()).await })
    }

    fn server(tools: usize) -> Server {
        let mut b = Server::builder(Implementation::new("bench-gateway-upstream", env!("CARGO_PKG_VERSION"))).tool(
            Tool::new(
                "echo",
                object(serde_json::json!({
                    "type": "object",
                    "properties": { "text": { "type": "string", "description": "Text to send back" } },
                    "required": ["text"]
                })),
            )
            .with_description("Returns its text argument as one text content"),
            |a: Echo| async move { a.text },
        );
        let schema = object(serde_json::json!({
            "type": "object",
            "properties": {
                "label": { "type": "string", "description": "Any label; ignored" },
                "count": { "type": "integer", "description": "Any count; ignored" }
            }
        }));
        for i in 1..tools {
            b = b.tool(
                Tool::new(format!("noop_{i}"), schema.clone()).with_description(portico_bench::noop_description(i)),
                |_: IgnoredAny| async move { "ok" },
            );
        }
        b.build()
    }
}

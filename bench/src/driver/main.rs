//! `bench-driver`: a load driver for MCP servers over stdio and Streamable HTTP.
//!
//! It speaks JSON-RPC itself (hand-written request lines, borrowed minimal parsing of
//! responses) so that nothing between it and the server hides a cost, verifies every
//! response, and voids a figure on any error.
//!
//! ```text
//! bench-driver [OPTIONS] stdio -- <server command…>
//! bench-driver [OPTIONS] raw-echo [--bin PATH]
//! bench-driver [OPTIONS] http -- <server command…>   ({port} in it is replaced by a free port,
//!                                                     else the port is appended)
//!
//! OPTIONS
//!   --duration SECS     measured time per workload (default 5)
//!   --warmup SECS       unmeasured time per workload before it (default 1)
//!   --workloads LIST    comma-separated: seq,pipe64,pipe1024,hol,list,blob (default: all;
//!                       raw-echo: seq,pipe64). Any pipeN is accepted. HTTP: httpN (N
//!                       keep-alive connections, one echo in flight on each) and sessions
//!                       (default: http1,http16,http64, and sessions in the handshake era)
//!   --era ERA           handshake (default: `initialize` 2025-11-25) or stateless
//!                       (2026-07-28: no handshake, `_meta` on every request); HTTP also bare
//!                       (stateless requests without `server/discover`, for `http-echo`)
//!   --sessions N        idle sessions opened by the sessions workload (default 1000)
//!   --json              print one JSON document instead of the table
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod conn;
mod cpu;
mod http;
mod proto;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::conn::{Conn, Era};
use crate::cpu::CpuMark;
use crate::workloads::{BLOB_BYTES, Run, histogram};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    Seq,
    Pipe(u64),
    Hol,
    List,
    Blob,
    /// HTTP echo on N keep-alive connections.
    Http(u64),
    /// HTTP: memory per idle handshake-era session.
    Sessions,
}

impl Workload {
    fn parse(s: &str) -> Option<Workload> {
        Some(match s {
            "seq" => Workload::Seq,
            "hol" => Workload::Hol,
            "list" => Workload::List,
            "blob" => Workload::Blob,
            "sessions" => Workload::Sessions,
            _ if s.starts_with("http") => Workload::Http(s.strip_prefix("http")?.parse().ok().filter(|&n| n > 0)?),
            _ => Workload::Pipe(s.strip_prefix("pipe")?.parse().ok().filter(|&n| n > 0)?),
        })
    }

    fn name(self) -> String {
        match self {
            Workload::Seq => "seq".to_owned(),
            Workload::Pipe(n) => format!("pipe{n}"),
            Workload::Hol => "hol".to_owned(),
            Workload::List => "list".to_owned(),
            Workload::Blob => "blob".to_owned(),
            Workload::Http(n) => format!("http{n}"),
            Workload::Sessions => "sessions".to_owned(),
        }
    }

    fn is_http(self) -> bool {
        matches!(self, Workload::Http(_) | Workload::Sessions)
    }
}

const ALL: [Workload; 6] =
    [Workload::Seq, Workload::Pipe(64), Workload::Pipe(1024), Workload::Hol, Workload::List, Workload::Blob];
const RAW: [Workload; 2] = [Workload::Seq, Workload::Pipe(64)];

enum Mode {
    Stdio(Vec<String>),
    RawEcho(Option<PathBuf>),
    Http(Vec<String>),
}

struct Opts {
    duration: Duration,
    warmup: Duration,
    workloads: Vec<Workload>,
    json: bool,
    era: Era,
    sessions: u64,
    mode: Mode,
}

const USAGE: &str = "usage: bench-driver [--duration SECS] [--warmup SECS] [--workloads seq,pipe64,pipe1024,hol,list,blob] [--json] [--era handshake|stateless|bare] [--sessions N] \
                     (stdio -- <server command…> | raw-echo [--bin PATH] | http -- <server command with {port}…>)";

fn seconds(v: Option<String>, what: &str) -> Result<Duration, String> {
    let v = v.ok_or_else(|| format!("{what} needs a value"))?;
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{what}: not a number of seconds: {v}"))
}

fn parse_args() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let mut duration = Duration::from_secs(5);
    let mut warmup = Duration::from_secs(1);
    let mut workloads: Option<Vec<Workload>> = None;
    let mut json = false;
    let mut era = Era::Handshake;
    let mut sessions = 1000;
    let mut mode = None;
    let mut raw_bin = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--duration" => duration = seconds(args.next(), "--duration")?,
            "--warmup" => warmup = seconds(args.next(), "--warmup")?,
            "--workloads" => {
                let list = args.next().ok_or("--workloads needs a value")?;
                workloads = Some(
                    list.split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| Workload::parse(s).ok_or_else(|| format!("unknown workload {s}")))
                        .collect::<Result<_, _>>()?,
                );
            }
            "--json" => json = true,
            "--era" => {
                era = match args.next().as_deref() {
                    Some("handshake") => Era::Handshake,
                    Some("stateless") => Era::Stateless,
                    Some("bare") => Era::Bare,
                    other => return Err(format!("--era: expected handshake, stateless or bare, got {other:?}")),
                }
            }
            "--sessions" => {
                sessions = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--sessions needs a positive count")?;
            }
            "http" => mode = Some(Mode::Http(server_command("http", &mut args)?)),
            "--bin" => raw_bin = Some(PathBuf::from(args.next().ok_or("--bin needs a path")?)),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            "stdio" => mode = Some(Mode::Stdio(server_command("stdio", &mut args)?)),
            "raw-echo" => mode = Some(Mode::RawEcho(None)),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let mut mode = mode.ok_or(USAGE)?;
    if let Mode::RawEcho(bin) = &mut mode {
        *bin = raw_bin;
    }
    let workloads = match (&mode, workloads) {
        (_, Some(w)) => w,
        (Mode::Stdio(_), None) => ALL.to_vec(),
        (Mode::RawEcho(_), None) => RAW.to_vec(),
        (Mode::Http(_), None) => {
            let mut w = vec![Workload::Http(1), Workload::Http(16), Workload::Http(64)];
            if era == Era::Handshake {
                w.push(Workload::Sessions);
            }
            w
        }
    };
    let http = matches!(mode, Mode::Http(_));
    if let Some(w) = workloads.iter().find(|w| w.is_http() != http) {
        return Err(format!("{} is not a workload of this transport", w.name()));
    }
    if !http && era == Era::Bare {
        return Err("--era bare is for http only".to_owned());
    }
    if http && era != Era::Handshake && workloads.contains(&Workload::Sessions) {
        return Err("sessions needs the handshake era".to_owned());
    }
    if let Mode::RawEcho(_) = mode {
        if let Some(w) = workloads.iter().find(|w| !matches!(w, Workload::Seq | Workload::Pipe(_))) {
            return Err(format!("raw-echo answers echo calls only: {} is not available", w.name()));
        }
        if era != Era::Handshake {
            return Err("raw-echo speaks the handshake era only".to_owned());
        }
    }
    Ok(Opts { duration, warmup, workloads, json, era, sessions, mode })
}

/// One row of the report.
struct Figure {
    workload: String,
    run: Option<Run>,
    hist: Histogram<u64>,
    mib_per_s: Option<f64>,
    server_cpu: Option<Duration>,
    driver_cpu: Option<Duration>,
    /// `sessions`: the server's RSS growth per idle session, in KB.
    kb_per_session: Option<f64>,
    void: Option<String>,
}

impl Figure {
    fn calls_per_s(&self) -> Option<f64> {
        let run = self.run.as_ref()?;
        (run.elapsed > Duration::ZERO).then(|| run.calls as f64 / run.elapsed.as_secs_f64())
    }
    fn percentile_us(&self, q: f64) -> Option<f64> {
        (!self.hist.is_empty()).then(|| self.hist.value_at_quantile(q) as f64 / 1e3)
    }
    fn cpu_per_call_us(&self, cpu: Option<Duration>) -> Option<f64> {
        let calls = self.run.as_ref()?.calls;
        (calls > 0).then(|| cpu.map(|c| c.as_secs_f64() * 1e6 / calls as f64)).flatten()
    }
}

/// State carried between workloads.
#[derive(Default)]
struct Ctx {
    seq_p99_us: Option<f64>,
    tools: Option<workloads::Listing>,
    blob: Option<workloads::Blob>,
}

async fn run_one(w: Workload, conn: &mut Conn, opts: &Opts, ctx: &mut Ctx) -> Result<Figure, String> {
    let mut scratch = histogram();
    let mut hist = histogram();
    let warm = opts.warmup > Duration::ZERO;
    let (run, mark) = match w {
        Workload::Seq => {
            if warm {
                workloads::seq(conn, opts.warmup, &mut scratch).await?;
            }
            let mark = CpuMark::start(conn.pid);
            (workloads::seq(conn, opts.duration, &mut hist).await?, mark)
        }
        Workload::Pipe(n) => {
            if warm {
                workloads::pipe(conn, n, opts.warmup, &mut scratch).await?;
            }
            let mark = CpuMark::start(conn.pid);
            (workloads::pipe(conn, n, opts.duration, &mut hist).await?, mark)
        }
        Workload::Hol => {
            let rounds = opts.duration.as_secs_f64().round().max(1.0) as u32;
            let mark = CpuMark::start(conn.pid);
            let mut run = workloads::hol(conn, rounds, &mut hist).await?;
            if let Some(seq) = ctx.seq_p99_us {
                let p99 = hist.value_at_quantile(0.99) as f64 / 1e3;
                run.note = format!("echo p99 {p99:.1} µs during the slow call vs {seq:.1} µs in seq; {}", run.note);
            }
            (run, mark)
        }
        Workload::List => {
            if ctx.tools.is_none() {
                ctx.tools = Some(workloads::verify_tools(conn).await?);
            }
            let listing = ctx.tools.as_ref().ok_or("no verified listing")?;
            if warm {
                workloads::list(conn, opts.warmup, listing, &mut scratch).await?;
            }
            let mark = CpuMark::start(conn.pid);
            (workloads::list(conn, opts.duration, listing, &mut hist).await?, mark)
        }
        Workload::Blob => {
            // Peak memory: the server's resident set at its highest while it serves blobs (the
            // first of which it builds and keeps), above where it was before.
            let peak_mark = cpu::reset_peak_rss(conn.pid).and_then(|()| cpu::status_kib(conn.pid, "VmRSS"));
            if warm {
                workloads::blob(conn, opts.warmup, &mut ctx.blob, &mut scratch).await?;
            }
            let mark = CpuMark::start(conn.pid);
            let mut run = workloads::blob(conn, opts.duration, &mut ctx.blob, &mut hist).await?;
            let peak = peak_mark.and_then(|base| Ok((base, cpu::status_kib(conn.pid, "VmHWM")?)));
            let payload_kib = BLOB_BYTES as f64 / 1024.0;
            let peak_note = match peak {
                Ok((base, hwm)) => {
                    let growth = hwm.saturating_sub(base) as f64;
                    format!(
                        "peak RSS +{:.1} MiB over the {:.1} MiB before the first read ({:.2}× the payload, the server's cached blob included)",
                        growth / 1024.0,
                        base as f64 / 1024.0,
                        growth / payload_kib
                    )
                }
                Err(e) => format!("peak RSS not measured: {e}"),
            };
            run.note = if run.note.is_empty() { peak_note } else { format!("{}; {peak_note}", run.note) };
            (run, mark)
        }
        Workload::Http(_) | Workload::Sessions => return Err("an HTTP workload on stdio".to_owned()),
    };
    let (server_cpu, driver_cpu) = mark.stop();
    if run.calls == 0 {
        return Err("no call completed in the measured time".to_owned());
    }
    let mib_per_s = (w == Workload::Blob)
        .then(|| run.calls as f64 * BLOB_BYTES as f64 / (1024.0 * 1024.0) / run.elapsed.as_secs_f64());
    let figure = Figure {
        workload: w.name(),
        run: Some(run),
        hist,
        mib_per_s,
        server_cpu,
        driver_cpu,
        kb_per_session: None,
        void: None,
    };
    if w == Workload::Seq {
        ctx.seq_p99_us = figure.percentile_us(0.99);
    }
    Ok(figure)
}

/// The server command after `--` that ends the arguments of `stdio` and `http`.
fn server_command(mode: &str, args: &mut impl Iterator<Item = String>) -> Result<Vec<String>, String> {
    if args.next().as_deref() != Some("--") {
        return Err(format!("{mode}: expected `--` and the server command"));
    }
    let command: Vec<String> = args.collect();
    if command.is_empty() {
        return Err(format!("{mode}: no server command after `--`"));
    }
    Ok(command)
}

fn void(workload: String, reason: String) -> Figure {
    Figure {
        workload,
        run: None,
        hist: histogram(),
        mib_per_s: None,
        server_cpu: None,
        driver_cpu: None,
        kb_per_session: None,
        void: Some(reason),
    }
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(64);
        }
    };
    // The driver runs on one thread: its writer and reader share it (see `workloads::pipe`),
    // leaving the other core(s) to the server.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(70);
        }
    };
    runtime.block_on(run(opts))
}

async fn run(opts: Opts) -> ExitCode {
    if let Mode::Http(command) = &opts.mode {
        return run_http(command.clone(), &opts).await;
    }
    let command = match &opts.mode {
        Mode::Http(_) => return ExitCode::from(64),
        Mode::Stdio(command) => command.clone(),
        Mode::RawEcho(bin) => {
            let bin = bin.clone().unwrap_or_else(|| {
                std::env::current_exe()
                    .ok()
                    .and_then(|p| p.parent().map(|d| d.join("raw-echo")))
                    .unwrap_or_else(|| PathBuf::from("raw-echo"))
            });
            vec![bin.to_string_lossy().into_owned()]
        }
    };
    let mut figures = Vec::new();
    let mut ctx = Ctx::default();
    let mut conn = None;
    let mut header = serde_json::Map::new();
    header.insert("command".into(), command.clone().into());
    for &w in &opts.workloads {
        let c = match conn.take() {
            Some(c) => c,
            None => match Conn::spawn(&command, opts.era).await {
                Ok(c) => {
                    if !opts.json {
                        println!(
                            "server pid {} · protocolVersion {} · serverInfo {}",
                            c.pid, c.protocol_version, c.server_info
                        );
                    }
                    header.insert("protocolVersion".into(), c.protocol_version.clone().into());
                    header.insert("serverInfo".into(), c.server_info.clone().into());
                    c
                }
                Err(e) => {
                    figures.push(void(w.name(), format!("handshake: {e}")));
                    continue;
                }
            },
        };
        let mut c = c;
        match run_one(w, &mut c, &opts, &mut ctx).await {
            Ok(figure) => {
                if !opts.json {
                    eprintln!("{} done", figure.workload);
                }
                figures.push(figure);
                conn = Some(c);
            }
            Err(reason) => {
                // The connection's state is unknown now: start the next workload on a fresh server.
                figures.push(void(w.name(), reason));
                let _ = c.shutdown().await;
            }
        }
    }
    if let Some(c) = conn {
        match c.shutdown().await {
            Some(status) if status.success() => {}
            Some(status) => eprintln!("note: the server exited with {status} after stdin closed"),
            None => eprintln!("note: the server did not exit within 5 s of stdin closing; killed"),
        }
    }
    let any_void = figures.iter().any(|f| f.void.is_some());
    if opts.json {
        print_json(&figures, header, &opts);
    } else {
        print_table(&figures, &opts);
    }
    if any_void { ExitCode::from(2) } else { ExitCode::SUCCESS }
}

fn fmt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

fn print_table(figures: &[Figure], opts: &Opts) {
    println!(
        "\nmeasured {:.1} s per workload after {:.1} s warmup; latency in µs; CPU is user+system per call",
        opts.duration.as_secs_f64(),
        opts.warmup.as_secs_f64()
    );
    println!(
        "{:<9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}",
        "workload", "calls/s", "MiB/s", "p50", "p99", "p999", "max", "srv CPU/c", "drv CPU/c"
    );
    for f in figures {
        if let Some(reason) = &f.void {
            println!("{:<9} VOID: {reason}", f.workload);
            continue;
        }
        println!(
            "{:<9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}",
            f.workload,
            fmt(f.calls_per_s(), 0),
            fmt(f.mib_per_s, 1),
            fmt(f.percentile_us(0.5), 1),
            fmt(f.percentile_us(0.99), 1),
            fmt(f.percentile_us(0.999), 1),
            fmt((!f.hist.is_empty()).then(|| f.hist.max() as f64 / 1e3), 1),
            fmt(f.cpu_per_call_us(f.server_cpu), 2),
            fmt(f.cpu_per_call_us(f.driver_cpu), 2),
        );
    }
    for f in figures {
        if let Some(run) = &f.run {
            let note = if run.note.is_empty() { String::new() } else { format!(": {}", run.note) };
            println!("  {} — {} calls in {:.3} s{note}", f.workload, run.calls, run.elapsed.as_secs_f64());
        }
    }
}

fn print_json(figures: &[Figure], header: serde_json::Map<String, serde_json::Value>, opts: &Opts) {
    let rows: Vec<serde_json::Value> = figures
        .iter()
        .map(|f| {
            serde_json::json!({
                "workload": f.workload,
                "void": f.void,
                "calls": f.run.as_ref().map(|r| r.calls),
                "seconds": f.run.as_ref().map(|r| r.elapsed.as_secs_f64()),
                "calls_per_s": f.calls_per_s(),
                "mib_per_s": f.mib_per_s,
                "p50_us": f.percentile_us(0.5),
                "p99_us": f.percentile_us(0.99),
                "p999_us": f.percentile_us(0.999),
                "max_us": (!f.hist.is_empty()).then(|| f.hist.max() as f64 / 1e3),
                "server_cpu_us_per_call": f.cpu_per_call_us(f.server_cpu),
                "driver_cpu_us_per_call": f.cpu_per_call_us(f.driver_cpu),
                "kb_per_session": f.kb_per_session,
                "note": f.run.as_ref().map(|r| r.note.clone()),
            })
        })
        .collect();
    let mut doc = header;
    doc.insert("duration_s".into(), opts.duration.as_secs_f64().into());
    doc.insert("warmup_s".into(), opts.warmup.as_secs_f64().into());
    doc.insert("figures".into(), rows.into());
    println!("{}", serde_json::Value::Object(doc));
}

/// One HTTP workload against a running server.
async fn run_http_one(w: Workload, server: &http::HttpServer, opts: &Opts) -> Result<Figure, String> {
    let mut hist = histogram();
    match w {
        Workload::Http(n) => {
            let mut conns = http::open_conns(server.port, opts.era, n).await?;
            if opts.warmup > Duration::ZERO {
                let mut scratch = histogram();
                conns = http::echo_load(conns, opts.warmup, &mut scratch).await?.1;
            }
            let mark = CpuMark::start(server.pid);
            let (run, mut conns) = http::echo_load(conns, opts.duration, &mut hist).await?;
            let (server_cpu, driver_cpu) = mark.stop();
            for c in &mut conns {
                c.end_session().await?;
            }
            if run.calls == 0 {
                return Err("no call completed in the measured time".to_owned());
            }
            Ok(Figure {
                workload: w.name(),
                run: Some(run),
                hist,
                mib_per_s: None,
                server_cpu,
                driver_cpu,
                kb_per_session: None,
                void: None,
            })
        }
        Workload::Sessions => {
            let (run, per, _) = http::sessions(server, opts.sessions).await?;
            Ok(Figure {
                workload: w.name(),
                run: Some(run),
                hist,
                mib_per_s: None,
                server_cpu: None,
                driver_cpu: None,
                kb_per_session: Some(per),
                void: None,
            })
        }
        _ => Err(format!("{} is not an HTTP workload", w.name())),
    }
}

async fn run_http(command: Vec<String>, opts: &Opts) -> ExitCode {
    let mut figures = Vec::new();
    let mut header = serde_json::Map::new();
    header.insert("command".into(), command.clone().into());
    let mut server: Option<http::HttpServer> = None;
    for &w in &opts.workloads {
        if w == Workload::Sessions
            && let Some(s) = server.take()
        {
            // Memory is measured on a fresh server: heap freed by earlier workloads would be
            // reused by the sessions and hide their cost.
            s.stop().await;
        }
        let s = match server.take() {
            Some(s) => s,
            None => match start_http(&command, opts.era).await {
                Ok((s, info)) => {
                    if !opts.json {
                        println!("server pid {} · port {} · {info}", s.pid, s.port);
                    }
                    header.insert("serverInfo".into(), info.into());
                    s
                }
                Err(e) => {
                    figures.push(void(w.name(), format!("start: {e}")));
                    continue;
                }
            },
        };
        match run_http_one(w, &s, opts).await {
            Ok(figure) => {
                if !opts.json {
                    eprintln!("{} done", figure.workload);
                }
                figures.push(figure);
                server = Some(s);
            }
            Err(reason) => {
                figures.push(void(w.name(), reason));
                s.stop().await;
            }
        }
    }
    if let Some(s) = server {
        s.stop().await;
    }
    header.insert(
        "protocolVersion".into(),
        match opts.era {
            Era::Handshake => proto::PROTOCOL_VERSION.into(),
            Era::Stateless => format!("{} (stateless)", proto::STATELESS_VERSION).into(),
            Era::Bare => "none (bare)".into(),
        },
    );
    let any_void = figures.iter().any(|f| f.void.is_some());
    if opts.json {
        print_json(&figures, header, opts);
    } else {
        print_table(&figures, opts);
    }
    if any_void { ExitCode::from(2) } else { ExitCode::SUCCESS }
}

/// Starts the server and checks it speaks the era; returns it with its serverInfo.
async fn start_http(command: &[String], era: Era) -> Result<(http::HttpServer, String), String> {
    let server = http::HttpServer::spawn(command).await?;
    let checked = async {
        let mut c = http::HttpConn::connect(server.port, era).await?;
        match era {
            Era::Handshake => {
                c.initialize().await?;
                c.end_session().await?;
                Ok::<_, String>("handshake era".to_owned())
            }
            Era::Stateless => c.discover().await.map(|info| format!("serverInfo {info}")),
            Era::Bare => Ok("bare (no discovery)".to_owned()),
        }
    }
    .await;
    match checked {
        Ok(info) => Ok((server, info)),
        Err(e) => {
            server.stop().await;
            Err(e)
        }
    }
}

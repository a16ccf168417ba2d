//! `portico log`: the activity log. The latest records (filtered), a live tail, one record in
//! full, `verify` (the hash chain and signed checkpoints) and `export` (JSONL).
//!
//! It reads the log the config names (`[audit]`, and `[gateway] state_dir`), read-only: a
//! running gateway may be writing it.
#![allow(clippy::print_stdout)]

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use clap::{Args, Subcommand};
use portico_host::audit::{AuditError, AuditLog, Filter, RawAudit, Record, time};
use portico_host::config::dialect::Dialect;

use crate::{Failure, config_path};

/// `portico log [FILTERS] [--follow] [--json]`, or `portico log show|verify|export`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct LogCommand {
    #[command(subcommand)]
    action: Option<LogAction>,
    #[command(flatten)]
    filter: FilterArgs,
    /// Only this upstream server: the global `--server`, which `main` passes in
    /// ([`LogCommand::with_server`]).
    #[arg(skip)]
    server: Option<String>,
}

impl LogCommand {
    /// Sets the server filter (`portico log --server S`: `--server` is a global flag).
    pub(crate) fn with_server(mut self, server: Option<String>) -> LogCommand {
        self.server = server;
        self
    }
}

#[derive(Debug, Subcommand)]
enum LogAction {
    /// One record in full, by its id (ULID) or its seq.
    Show {
        /// The record's ULID or seq.
        id: String,
    },
    /// Check the hash chain and the signed checkpoints; names the first bad seq (exit 1).
    Verify,
    /// Every record as JSONL, in seq order (each line the record exactly as hashed).
    Export {
        /// Write to this file instead of stdout (refuses to overwrite one).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct FilterArgs {
    /// Only calls of this tool (or prompt, or resource URI), by the name clients see.
    #[arg(long)]
    tool: Option<String>,
    /// Only this policy decision.
    #[arg(long, value_parser = ["allow", "ask", "deny"])]
    decision: Option<String>,
    /// Only this outcome.
    #[arg(long, value_parser = ["success", "error", "denied", "cancelled", "timeout"])]
    status: Option<String>,
    /// Only this principal (an authenticated subject, or `local`).
    #[arg(long)]
    principal: Option<String>,
    /// Started at or after: RFC 3339, a date, or a duration ago (`10m`, `2h`, `7d`).
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Started before: RFC 3339, a date, or a duration ago.
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// Only errors and timeouts.
    #[arg(long)]
    errors: bool,
    /// Keep printing records as they are written.
    #[arg(long, short = 'f')]
    follow: bool,
    /// JSONL: each record as it is kept.
    #[arg(long)]
    json: bool,
    /// How many of the latest to print first.
    #[arg(long, short = 'n', default_value_t = 50)]
    limit: usize,
}

/// The `[audit]` table of the config and the state directory, as `portico serve` would use.
fn audit_config(config: Option<&Path>) -> Result<(RawAudit, PathBuf), Failure> {
    let path = config_path(config)?;
    let loaded = portico_host::config::load(&path).map_err(|e| Failure::Usage(e.to_string()))?;
    // `[audit]` is read here until the host's config has it: it is not an unknown key.
    let about_audit = |w: &String| w.split(": ").nth(1).is_some_and(|k| k == "audit" || k.starts_with("audit."));
    for w in loaded.warnings.iter().filter(|w| !about_audit(w)) {
        eprintln!("portico: warning: {w}");
    }
    let raw = if loaded.dialect == Dialect::Portico {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            audit: RawAudit,
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failure::Usage(format!("{}: cannot read: {e}", path.display())))?;
        toml::from_str::<File>(&text).map_err(|e| Failure::Usage(format!("{}: [audit]: {e}", path.display())))?.audit
    } else {
        RawAudit::default()
    };
    Ok((raw, loaded.config.gateway.state_dir))
}

fn failure(e: AuditError) -> Failure {
    match e {
        AuditError::Config { .. } => Failure::Usage(e.to_string()),
        _ => Failure::Unavailable(e.to_string()),
    }
}

pub(crate) async fn run(config: Option<&Path>, cmd: LogCommand) -> Result<(), Failure> {
    let (raw, state_dir) = audit_config(config)?;
    let log = AuditLog::open_read_only(&raw, &state_dir).await.map_err(failure)?;
    match cmd.action {
        Some(LogAction::Show { id }) => show(&log, &id).await,
        Some(LogAction::Verify) => verify(&log).await,
        Some(LogAction::Export { out }) => export(&log, out.as_deref()).await,
        None => list(&log, cmd.filter, cmd.server).await,
    }
}

fn when(flag: &str, text: Option<&str>) -> Result<Option<SystemTime>, Failure> {
    text.map(|t| {
        time::parse_when(t, time::now_micros())
            .map(time::from_micros)
            .map_err(|e| Failure::Usage(format!("{flag}: {e}")))
    })
    .transpose()
}

/// Where lines go: stdout, ending quietly when the reader has gone (`| head`).
struct Out(io::Stdout);

impl Out {
    fn line(&mut self, s: &str) -> Result<bool, Failure> {
        match writeln!(self.0.lock(), "{s}") {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(Failure::Usage(format!("cannot write the output: {e}"))),
        }
    }

    fn flush(&mut self) -> bool {
        self.0.flush().is_ok()
    }
}

const HEADER: [&str; 8] = ["SEQ", "TIME (UTC)", "PRINCIPAL", "METHOD", "TARGET", "DECISION", "STATUS", "DURATION"];

fn cells(r: &Record) -> [String; 8] {
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    let mut t = time::format_micros(time::micros(r.start));
    t.truncate(19);
    let duration = match r.duration() {
        Some(d) if d.as_millis() >= 1000 => format!("{:.1}s", d.as_secs_f64()),
        Some(d) if d.as_micros() >= 1000 => format!("{}ms", d.as_millis()),
        Some(d) => format!("{}µs", d.as_micros()),
        None => "-".to_owned(),
    };
    let target = match (&r.target, &r.server) {
        (Some(t), _) => t.clone(),
        (None, Some(s)) => format!("({s})"),
        (None, None) => "-".to_owned(),
    };
    [
        r.seq.to_string(),
        t.replace('T', " "),
        dash(&r.principal),
        r.method.clone(),
        target,
        dash(&r.decision),
        r.status.clone(),
        duration,
    ]
}

fn row(cells: &[String], widths: &[usize]) -> String {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
        if i + 1 == cells.len() {
            s.push_str(c);
        } else {
            s.push_str(&format!("{c:<w$}  "));
        }
    }
    s.trim_end().to_owned()
}

async fn list(log: &AuditLog, args: FilterArgs, server: Option<String>) -> Result<(), Failure> {
    let mut filter = Filter::new();
    filter.server = server;
    filter.tool = args.tool;
    filter.decision = args.decision;
    filter.status = args.status;
    filter.principal = args.principal;
    filter.since = when("--since", args.since.as_deref())?;
    filter.until = when("--until", args.until.as_deref())?;
    filter.errors = args.errors;
    filter.limit = Some(args.limit);
    let head = log.last_seq().await.map_err(failure)?;
    let records = log.query(&filter).await.map_err(failure)?;
    let mut out = Out(io::stdout());
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    if args.json {
        for r in &records {
            if !out.line(&r.text)? {
                return Ok(());
            }
        }
    } else {
        let rows: Vec<[String; 8]> = records.iter().map(cells).collect();
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let header: Vec<String> = HEADER.iter().map(|h| (*h).to_owned()).collect();
        if !out.line(&row(&header, &widths))? {
            return Ok(());
        }
        for r in &rows {
            if !out.line(&row(r, &widths))? {
                return Ok(());
            }
        }
    }
    if !args.follow {
        if records.is_empty() && !args.json {
            eprintln!("portico: no records match");
        }
        return Ok(());
    }
    out.flush();
    // From the last record there was before the query; skip any the query printed already.
    let printed: std::collections::BTreeSet<u64> = records.iter().map(|r| r.seq).collect();
    let mut tail = log.follow(&filter, Some(head.unwrap_or(0))).await.map_err(failure)?;
    loop {
        for r in tail.next().await.map_err(failure)? {
            if printed.contains(&r.seq) {
                continue;
            }
            let line = if args.json { r.text.clone() } else { row(&cells(&r), &widths) };
            if !out.line(&line)? || !out.flush() {
                return Ok(());
            }
        }
    }
}

async fn show(log: &AuditLog, id: &str) -> Result<(), Failure> {
    let record = log
        .show(id)
        .await
        .map_err(failure)?
        .ok_or_else(|| Failure::Usage(format!("no record {id} in the activity log")))?;
    let pretty = serde_json::to_string_pretty(&record.json())
        .map_err(|e| Failure::Usage(format!("cannot encode the record: {e}")))?;
    let mut out = Out(io::stdout());
    out.line(&pretty)?;
    eprintln!("portico: seq {}, hash {}", record.seq, record.hash);
    Ok(())
}

async fn verify(log: &AuditLog) -> Result<(), Failure> {
    let report = log.verify().await.map_err(failure)?;
    let mut out = Out(io::stdout());
    out.line(report.to_string().trim_end())?;
    if report.ok() { Ok(()) } else { Err(Failure::ToolError) }
}

async fn export(log: &AuditLog, out: Option<&Path>) -> Result<(), Failure> {
    let n = match out {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
            let mut w = io::BufWriter::new(file);
            let n = log.export(&mut w).await.map_err(failure)?;
            w.into_inner()
                .map_err(|e| Failure::Usage(format!("{}: {}", path.display(), e.error())))?
                .sync_all()
                .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
            n
        }
        None => {
            let mut w = io::BufWriter::new(io::stdout());
            match log.export(&mut w).await {
                Ok(n) => n,
                Err(AuditError::Io { message, .. }) if message.contains("Broken pipe") => return Ok(()),
                Err(e) => return Err(failure(e)),
            }
        }
    };
    eprintln!("portico: exported {n} records{}", out.map(|p| format!(" to {}", p.display())).unwrap_or_default());
    Ok(())
}

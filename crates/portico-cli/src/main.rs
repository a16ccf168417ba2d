//! `portico`: an MCP gateway with oversight, and an MCP inspector on the command line.
//!
//! Thin by design: it parses, loads, and prints; `portico-host` does the work.
//!
//! Exit codes: 0 ok; 1 the tool reported an error (`isError`); 2 usage or config error;
//! 3 upstream unavailable.

mod approve_cmd;
mod arena;
mod ask_tty;
mod config_cmd;
mod inspect;
mod log_cmd;
mod output;
mod pages;
mod policy_cmd;
mod pow;
mod serve;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// The allocator: see the `mimalloc` feature in Cargo.toml.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An MCP gateway: many MCP servers joined into one, with a person in control.
#[derive(Debug, Parser)]
#[command(name = "portico", version, about, long_about = None)]
struct Cli {
    /// The config: portico.toml, or another client's file (Claude, Cursor, VS Code, …) as it is.
    /// Default: ./portico.toml, then $XDG_CONFIG_HOME/portico/portico.toml.
    #[arg(long, short = 'c', global = true, env = "PORTICO_CONFIG")]
    config: Option<PathBuf>,
    /// Talk to this one server directly instead of the config: a command line (split like a
    /// shell would, never run by one) or an http(s) URL. No policy applies: you are the approver.
    #[arg(long, global = true)]
    server: Option<String>,
    /// Log filter for stderr (e.g. `info`, `portico=debug`); also RUST_LOG.
    #[arg(long, global = true, default_value = "warn")]
    log: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve every configured server as one MCP server (stdio by default).
    Serve(serve::ServeArgs),
    /// The status of each upstream server.
    Servers(Output),
    /// Every tool offered, under its exposed name.
    Tools(Output),
    /// Call a tool: `portico call NAME key=value ...` or `--json '{"key": "value"}'`.
    Call(inspect::CallArgs),
    /// Read a resource.
    Read(inspect::ReadArgs),
    /// Get a prompt with `key=value` arguments.
    Prompt(inspect::PromptArgs),
    /// Import or check configs.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// The activity log: list, follow, show, verify, export.
    Log(log_cmd::LogCommand),
    /// Explain policy decisions; list and revoke stored "always allow" answers.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCommand),
    /// Answer the approvals a running gateway waits for (through its admin API).
    Approve(approve_cmd::ApproveArgs),
}

/// Whether the runtime gets one worker rather than one per CPU. `portico serve` on stdio has one
/// client, and one worker serves it with no hand-offs between workers: on the benchmark machine
/// (2 vCPUs) that took 25-30 % less CPU per call and did as many calls per second or more, at one
/// call in flight and at 64 (`docs/benchmarks.md`, twenty-ninth session). Over HTTP with
/// connection threads (`--http-threads`, one per CPU by default), those threads serve the
/// clients, and the runtime is left the upstreams' own tasks, where one worker hands nothing
/// between workers either (thirty-sixth session). `TOKIO_WORKER_THREADS` decides whenever it is
/// set.
fn one_worker(command: &Command) -> bool {
    matches!(command, Command::Serve(args) if args.on_stdio() || args.http_threads() > 0)
        && std::env::var_os("TOKIO_WORKER_THREADS").is_none()
}

/// `--json`: machine output.
#[derive(Debug, Clone, Copy, Args)]
struct Output {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// How a command failed, as an exit code and a message for stderr.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The tool said `isError` (exit 1); its content was printed already.
    ToolError,
    /// Bad usage or config (exit 2).
    Usage(String),
    /// The upstream could not be reached (exit 3).
    Unavailable(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::ToolError => 1,
            Failure::Usage(_) => 2,
            Failure::Unavailable(_) => 3,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let _telemetry = telemetry::init(&cli.log);
    // A worker that parks after `portico serve` gave back its start-up pages also gives back
    // what start-up's deep calls touched of its stack (`pages`).
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if one_worker(&cli.command) {
        builder.worker_threads(1);
    }
    let runtime = match builder
        .enable_all()
        .on_thread_start(pages::note_stack)
        .on_thread_park(pages::release_stack_when_asked)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("portico: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    tracing::debug!(target: "portico::runtime", workers = runtime.metrics().num_workers(), "async runtime started");
    // The command runs on the runtime's workers. The main thread only waits, once it has given
    // back what parsing and setting up touched of its stack (`pages`).
    let command = runtime.spawn(run(cli));
    pages::release_this_stack();
    let result = match runtime.block_on(command) {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => Err(Failure::Unavailable(format!("the command was cancelled: {e}"))),
        },
    };
    // Children were stopped by the commands; don't wait for stray blocking tasks (stdin).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            match &failure {
                Failure::ToolError => {}
                Failure::Usage(m) | Failure::Unavailable(m) => eprintln!("portico: {m}"),
            }
            ExitCode::from(failure.code())
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let target = || inspect::Pending::new(cli.config.as_deref(), cli.server.as_deref());
    match cli.command {
        Command::Serve(args) => serve::run(cli.config.as_deref(), args).await,
        Command::Servers(out) => target()?.servers(out.json).await,
        Command::Tools(out) => target()?.tools(out.json).await,
        Command::Call(args) => target()?.call(args).await,
        Command::Read(args) => target()?.read(args).await,
        Command::Prompt(args) => target()?.prompt(args).await,
        Command::Config(cmd) => config_cmd::run(cli.config.as_deref(), cmd),
        Command::Policy(cmd) => policy_cmd::run(cli.config.as_deref(), cmd).await,
        Command::Approve(args) => approve_cmd::run(cli.config.as_deref(), args).await,
        Command::Log(cmd) => log_cmd::run(cli.config.as_deref(), cmd.with_server(cli.server.clone())).await,
    }
}

/// The config file to use: the one given, ./portico.toml, or the user's.
pub(crate) fn config_path(given: Option<&std::path::Path>) -> Result<PathBuf, Failure> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let local = PathBuf::from("portico.toml");
    if local.exists() {
        return Ok(local);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(user) = base.map(|b| b.join("portico/portico.toml")).filter(|p| p.exists()) {
        return Ok(user);
    }
    Err(Failure::Usage(
        "no config: pass --config FILE (portico.toml or another client's MCP config), or --server 'COMMAND ARGS' / URL"
            .to_owned(),
    ))
}

/// The oversight of a config: its policy and approvals, and its activity log (unless
/// `[audit] enabled = false`).
pub(crate) async fn supervisor(
    config: &portico_host::config::Config,
) -> Result<portico_host::oversight::Supervisor, Failure> {
    let supervisor =
        portico_host::oversight::Supervisor::new(config).map_err(|e| Failure::Usage(format!("policy: {e}")))?;
    if config.audit.enabled == Some(false) {
        return Ok(supervisor);
    }
    let log = portico_host::audit::AuditLog::open(&config.audit, &config.gateway.state_dir)
        .await
        .map_err(|e| Failure::Usage(format!("the activity log cannot be opened, so no call is made: {e}")))?;
    Ok(supervisor.with_audit(log))
}

/// Writes out what the activity log still holds; says so on stderr if records could not be.
pub(crate) async fn close_audit(supervisor: &portico_host::oversight::Supervisor) {
    if let Some(log) = supervisor.audit()
        && let Err(e) = log.close().await
    {
        eprintln!("portico: the activity log: {e}");
    }
}

/// Loads and validates the config, printing its warnings to stderr.
pub(crate) fn load_config(given: Option<&std::path::Path>) -> Result<portico_host::config::Config, Failure> {
    let path = config_path(given)?;
    let loaded = portico_host::config::load(&path).map_err(|e| Failure::Usage(e.to_string()))?;
    for w in &loaded.warnings {
        eprintln!("portico: warning: {w}");
    }
    Ok(loaded.config)
}

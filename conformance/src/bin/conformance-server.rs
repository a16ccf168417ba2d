//! Serves the conformance fixtures.
//!
//! `conformance-server --stdio` speaks MCP on stdin/stdout (newline-delimited JSON-RPC); logs go
//! to stderr, filtered by `RUST_LOG` (default `warn`). `--port PORT` is reserved for the
//! Streamable HTTP transport, which Portico does not have yet: it fails with exit code 2.
//!
//! With `PORTICO_CONFORMANCE_TEST_TOOLS=1` in the environment, the test-only tool `test_sleep`
//! is added (Portico's own tests use it; the official suite never sets the variable).

use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use tracing_subscriber::EnvFilter;

/// Exit code for a transport this build cannot serve.
const EXIT_UNSUPPORTED: u8 = 2;

/// The MCP conformance fixture server, built on Portico.
#[derive(Debug, Parser)]
#[command(version, about)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "port"])))]
struct Args {
    /// Serve over stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP on localhost:PORT (not available yet).
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
        .init();

    if let Some(port) = args.port {
        eprintln!(
            "conformance-server: --port {port}: the Streamable HTTP transport is not implemented in Portico yet; \
             use --stdio"
        );
        return ExitCode::from(EXIT_UNSUPPORTED);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async {
        let server = portico_conformance::fixture_server();
        if std::env::var_os(portico_conformance::TEST_TOOLS_ENV).is_some_and(|v| v == "1") {
            portico_conformance::add_test_tools(&server);
        }
        tracing::info!(name = %server.info().name, "serving over stdio");
        server.serve(portico::transport::stdio::stdio()).await
    });
    // Stdin is read on a blocking thread that only ends when input arrives; it has reached end
    // of input here, but do not let a stuck read keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("serving failed: {e}");
            ExitCode::FAILURE
        }
    }
}

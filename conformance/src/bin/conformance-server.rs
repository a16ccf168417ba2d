//! Serves the conformance fixtures.
//!
//! `conformance-server --stdio` speaks MCP on stdin/stdout (newline-delimited JSON-RPC); logs go
//! to stderr, filtered by `RUST_LOG` (default `warn`). `--port PORT` serves Streamable HTTP at
//! `http://127.0.0.1:PORT/mcp` (both eras), and the legacy HTTP+SSE transport at `/sse`.
//!
//! With `PORTICO_CONFORMANCE_TEST_TOOLS=1` in the environment, the test-only tool `test_sleep`
//! is added (Portico's own tests use it; the official suite never sets the variable).

use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use tracing_subscriber::EnvFilter;

/// The MCP conformance fixture server, built on Portico.
#[derive(Debug, Parser)]
#[command(version, about)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "port"])))]
struct Args {
    /// Serve over stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP at http://127.0.0.1:PORT/mcp.
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
        match args.port {
            Some(port) => {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                    .await
                    .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
                tracing::info!(port, "serving Streamable HTTP at /mcp");
                let shutdown = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                portico::transport::http::server::StreamableHttp::new(server)
                    .build()
                    .serve_with_shutdown(listener, shutdown)
                    .await
                    .map_err(|e| e.to_string())
            }
            None => {
                tracing::info!(name = %server.info().name, "serving over stdio");
                server.serve(portico::transport::stdio::stdio()).await.map_err(|e| e.to_string())
            }
        }
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

//! The client the official MCP conformance suite drives.
//!
//! `conformance-client URL` connects to the suite's test server at `URL` and performs the
//! scenario named by `MCP_CONFORMANCE_SCENARIO`, with the data of `MCP_CONFORMANCE_CONTEXT`
//! (JSON) when the scenario has some, speaking the revision `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! (detected when unset). It exits 0 when the scenario ran to its end, 1 with the reason on
//! stderr otherwise. Logs go to stderr, filtered by `RUST_LOG` (default `warn`).

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[path = "../client/mod.rs"]
mod client;

/// The MCP conformance client, built on Portico.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The MCP endpoint of the suite's test server.
    url: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
        .init();

    let scenario = match client::Scenario::from_env(args.url) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("conformance-client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let name = scenario.name.clone();
    let outcome = runtime.block_on(client::run(scenario));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: scenario {name:?} failed: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `bench-server`: the server the benchmarks measure, written on Portico the way a user would.
//!
//! `bench-server stdio` serves MCP on stdin/stdout (diagnostics go to stderr only):
//!
//! - `echo {text}` → one text content with the same text;
//! - `sleep {ms}` → waits `ms` milliseconds (`tokio::time::sleep`), returns `ok`;
//! - `noop_0` … `noop_999` → `ok`; each has a ~100-character description and a two-property
//!   input schema, so that `tools/list` is large;
//! - resource template `bench://blob/{bytes}` → one text content of exactly `bytes` characters,
//!   deterministic, with a `"`, a `\` and a newline in every 64 characters. The last blob built
//!   for each size is kept, so a size is generated once.
//!
//! `bench-server http PORT` serves the same server over Streamable HTTP at
//! `http://127.0.0.1:PORT/mcp` (`StreamableHttp::serve`: JSON responses, `TCP_NODELAY`, both eras
//! on one endpoint, the legacy HTTP+SSE paths off).
//!
//! `bench-server http-threads PORT` serves it as `portico serve --http` serves: each connection on
//! one of N connection threads, each running a single-threaded runtime
//! (`ServeOptions::with_connection_threads`), N being the CPUs the process may run on
//! (`std::thread::available_parallelism`, which counts `taskset` and a container's cpuset, as
//! Tokio's default worker count does). The runtime keeps its default worker count; its workers
//! then only accept. `bench/compare.sh --threads` measures it beside `http`; for this server it
//! bought nothing (the guide's "Sizing the runtime").
//!
//! Handlers are written once; Portico serves them to handshake-era (`initialize`) and
//! stateless-era (`_meta` on every request) clients alike.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use portico_bench::server;

/// `stdio-pipe`, an experiment beside the contract: the same server over Portico's
/// `StdioTransport`, but on non-blocking pipe halves driven by the reactor
/// (`tokio::net::unix::pipe`) instead of `tokio::io::stdin()`/`stdout()`, which hand every read
/// and write to a blocking-pool thread. Works only when stdin and stdout are pipes.
fn pipe_transport() -> std::io::Result<
    portico::transport::stdio::StdioTransport<tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender>,
> {
    use std::os::fd::AsFd;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?;
    let writer = tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?;
    Ok(portico::transport::stdio::StdioTransport::new(reader, writer))
}

/// `http-threads`: the same endpoint, each connection on one of a connection thread per CPU.
async fn serve_on_threads(port: u16) -> std::io::Result<()> {
    use portico::transport::http::server::{ConnectionThreads, ServeOptions, StreamableHttp};
    let threads = ConnectionThreads::start(std::thread::available_parallelism().map_or(1, usize::from))?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let options = ServeOptions::default().with_connection_threads(threads);
    StreamableHttp::new(server())
        .without_legacy_sse()
        .build()
        .serve_with_options(listener, std::future::pending(), options)
        .await
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let served = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["stdio"] => server().serve(portico::transport::stdio::stdio()).await.map_err(|e| e.to_string()),
        [mode @ ("http" | "http-threads"), port] => match port.parse::<u16>() {
            Ok(port) if mode == "http" => portico::transport::http::server::StreamableHttp::new(server())
                .without_legacy_sse()
                .serve(("127.0.0.1", port))
                .await
                .map_err(|e| e.to_string()),
            Ok(port) => serve_on_threads(port).await.map_err(|e| e.to_string()),
            Err(_) => {
                eprintln!("bench-server: not a port: {port}");
                return ExitCode::from(64);
            }
        },
        ["stdio-pipe"] => match pipe_transport() {
            Ok(transport) => server().serve(transport).await.map_err(|e| e.to_string()),
            Err(e) => {
                eprintln!("bench-server: stdin and stdout must be pipes for stdio-pipe: {e}");
                return ExitCode::from(66);
            }
        },
        _ => {
            eprintln!(
                "usage: bench-server stdio | bench-server stdio-pipe | bench-server http PORT | bench-server http-threads PORT"
            );
            return ExitCode::from(64);
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-server: {e}");
            ExitCode::FAILURE
        }
    }
}

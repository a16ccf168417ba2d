//! `rmcp-bench-server`: the bench server contract of `bench/src/server.rs`, written on rmcp (the
//! official Rust MCP SDK) the way its documentation shows, so that `bench-driver` can measure it
//! beside Portico.
//!
//! - `rmcp-bench-server stdio` serves on rmcp's `transport::stdio()` (Tokio's stdin/stdout, the
//!   transport rmcp's README and examples use);
//! - `rmcp-bench-server stdio-pipes` serves on rmcp's `transport::stdio_pipes()` (its non-blocking
//!   pipe transport, the closest match to Portico's `stdio()`, which uses pipes when it can);
//! - `rmcp-bench-server http PORT` serves rmcp's Streamable HTTP server (`StreamableHttpService`
//!   with its `LocalSessionManager`, mounted on axum at `http://127.0.0.1:PORT/mcp`, TCP_NODELAY)
//!   in session mode (`legacy_session_mode`: `initialize` opens a session; rmcp answers with SSE
//!   there) with `json_response` on; 2026-07-28 requests are served statelessly by rmcp whatever
//!   the mode;
//! - `rmcp-bench-server http-stateless PORT`: the same with `legacy_session_mode` off and
//!   `json_response` on, rmcp's fastest configuration (no sessions, plain JSON responses).
//!
//! Tools: `echo {text}` → the text; `sleep {ms}` → waits, `ok`; `noop_0` … `noop_999` → `ok`, each
//! with a ~100-character description and a two-property input schema. Resource template
//! `bench://blob/{bytes}` → exactly `bytes` characters (the same generator as Portico's bench
//! server). `echo` and `sleep` use rmcp's `#[tool]` macros; the 1000 generated no-ops are added to
//! the same `ToolRouter` as routes built at run time (a macro would need 1000 functions).
#![allow(clippy::print_stderr)]

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Implementation, ListResourceTemplatesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

/// Blobs larger than this are refused (the server keeps what it builds).
const MAX_BLOB: usize = 256 * 1024 * 1024;
/// How many blob sizes are kept at once.
const KEEP_SIZES: usize = 8;
/// How many `noop_*` tools there are.
const NOOPS: usize = 1000;
const BLOB_PREFIX: &str = "bench://blob/";

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Text to send back
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// Milliseconds to wait
    ms: u64,
}

/// The deterministic blob of `len` characters: 64-character periods of letters and digits that
/// vary with the period's index, with `"` at offset 20, `\` at 41 and a newline at 63.
/// (The same function as in `bench/src/server.rs`.)
pub fn make_blob(len: usize) -> String {
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = Vec::with_capacity(len);
    let mut period = 0usize;
    while out.len() < len {
        for i in 0..64 {
            if out.len() == len {
                break;
            }
            out.push(match i {
                20 => b'"',
                41 => b'\\',
                63 => b'\n',
                _ => ALPHABET[(period * 7 + i * 13) % ALPHABET.len()],
            });
        }
        period += 1;
    }
    // Only ASCII was pushed.
    String::from_utf8(out).unwrap_or_default()
}

/// Blobs built so far, by size (a handful of sizes at most).
#[derive(Default)]
struct Blobs {
    by_size: Mutex<HashMap<usize, Arc<String>>>,
}

impl Blobs {
    fn get(&self, len: usize) -> Arc<String> {
        let cached = self.by_size.lock().ok().and_then(|m| m.get(&len).cloned());
        if let Some(blob) = cached {
            return blob;
        }
        let blob = Arc::new(make_blob(len));
        if let Ok(mut m) = self.by_size.lock() {
            if m.len() >= KEEP_SIZES {
                m.clear();
            }
            m.insert(len, Arc::clone(&blob));
        }
        blob
    }
}

/// A description of about 100 characters, different for each tool.
fn noop_description(i: usize) -> String {
    format!("No-op tool number {i:03} of the tools/list benchmark: takes a label and a count, ignores both, says ok")
}

#[derive(Clone)]
struct BenchServer {
    /// Built once: `#[tool_handler]`'s default would rebuild the router (1002 routes) per request.
    /// Shared (`Arc`): the Streamable HTTP service clones the handler for every session (and, in
    /// stateless mode, every request), and a cloned router would copy 1002 routes each time.
    tool_router: Arc<ToolRouter<BenchServer>>,
    blobs: Arc<Blobs>,
}

#[tool_router]
impl BenchServer {
    fn new() -> Self {
        let mut tool_router = Self::tool_router();
        let noop_schema = match serde_json::json!({
            "type": "object",
            "properties": {
                "label": { "type": "string", "description": "Any label; ignored" },
                "count": { "type": "integer", "description": "Any count; ignored" }
            }
        }) {
            serde_json::Value::Object(map) => Arc::new(map),
            _ => Arc::default(),
        };
        for i in 0..NOOPS {
            let attr = Tool::new(format!("noop_{i}"), noop_description(i), Arc::clone(&noop_schema));
            tool_router.add_route(ToolRoute::new(attr, || "ok".to_owned()));
        }
        BenchServer { tool_router: Arc::new(tool_router), blobs: Arc::new(Blobs::default()) }
    }

    #[tool(description = "Returns its text argument as one text content")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Waits the given number of milliseconds, then returns ok")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        "ok".to_owned()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("rmcp-bench-server", env!("CARGO_PKG_VERSION")))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("bench://blob/{bytes}", "blob")
                .with_description("Exactly {bytes} characters of text with quotes, backslashes and newlines")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let len = request
            .uri
            .strip_prefix(BLOB_PREFIX)
            .and_then(|b| b.parse::<usize>().ok())
            .filter(|&n| n <= MAX_BLOB)
            .ok_or_else(|| ErrorData::invalid_params(format!("bytes must be 0..={MAX_BLOB}"), None))?;
        let blob = self.blobs.get(len);
        let contents = ResourceContents::text(blob.as_str(), request.uri);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = BenchServer::new();
    let running = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["http", port] => return http(server, port, true).await,
        ["http-stateless", port] => return http(server, port, false).await,
        ["stdio"] => server.serve(rmcp::transport::stdio()).await,
        ["stdio-pipes"] => server.serve(rmcp::transport::stdio_pipes()).await,
        _ => {
            eprintln!("usage: rmcp-bench-server stdio | stdio-pipes | http PORT | http-stateless PORT");
            return ExitCode::from(64);
        }
    };
    let running = match running {
        Ok(running) => running,
        Err(e) => {
            eprintln!("rmcp-bench-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-bench-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves `server` over rmcp's Streamable HTTP at `http://127.0.0.1:PORT/mcp` until killed.
async fn http(server: BenchServer, port: &str, sessions: bool) -> ExitCode {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let Ok(port) = port.parse::<u16>() else {
        eprintln!("rmcp-bench-server: not a port: {port}");
        return ExitCode::from(64);
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rmcp-bench-server: cannot bind 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    match axum::serve(listener, router).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-bench-server: {e}");
            ExitCode::FAILURE
        }
    }
}

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
//! Handlers are written once; Portico serves them to handshake-era (`initialize`) and
//! stateless-era (`_meta` on every request) clients alike.
#![allow(clippy::print_stderr)]

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::schema::{Implementation, ResourceContents, ResourceTemplate, TextResourceContents, Tool, object};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// Blobs larger than this are refused (the server keeps what it builds).
const MAX_BLOB: usize = 256 * 1024 * 1024;
/// How many blob sizes are kept at once.
const KEEP_SIZES: usize = 8;
/// How many `noop_*` tools there are.
const NOOPS: usize = 1000;

#[derive(Deserialize)]
struct Echo {
    text: String,
}

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
}

/// The deterministic blob of `len` characters: 64-character periods of letters and digits that
/// vary with the period's index, with `"` at offset 20, `\` at 41 and a newline at 63.
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

fn schema(v: serde_json::Value) -> portico::schema::JsonObject {
    object(v)
}

pub fn server() -> Server {
    let mut builder = Server::builder(Implementation::new("portico-bench-server", env!("CARGO_PKG_VERSION")))
        .tool(
            Tool::new(
                "echo",
                schema(serde_json::json!({
                    "type": "object",
                    "properties": { "text": { "type": "string", "description": "Text to send back" } },
                    "required": ["text"]
                })),
            )
            .with_description("Returns its text argument as one text content"),
            |a: Echo| async move { a.text },
        )
        .tool(
            Tool::new(
                "sleep",
                schema(serde_json::json!({
                    "type": "object",
                    "properties": { "ms": { "type": "integer", "minimum": 0, "description": "Milliseconds to wait" } },
                    "required": ["ms"]
                })),
            )
            .with_description("Waits the given number of milliseconds, then returns ok"),
            |a: Sleep| async move {
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                "ok"
            },
        );
    let noop_schema = schema(serde_json::json!({
        "type": "object",
        "properties": {
            "label": { "type": "string", "description": "Any label; ignored" },
            "count": { "type": "integer", "description": "Any count; ignored" }
        }
    }));
    for i in 0..NOOPS {
        builder = builder.tool(
            Tool::new(format!("noop_{i}"), noop_schema.clone()).with_description(noop_description(i)),
            |_: IgnoredAny| async move { "ok" },
        );
    }
    let blobs = Arc::new(Blobs::default());
    builder
        .resource_template(
            ResourceTemplate::new("bench://blob/{bytes}", "blob")
                .with_description("Exactly {bytes} characters of text with quotes, backslashes and newlines")
                .with_mime_type("text/plain"),
            move |r: ResourceRequest, _cx: RequestContext| {
                let blobs = Arc::clone(&blobs);
                async move {
                    let len = r
                        .var("bytes")
                        .and_then(|b| b.parse::<usize>().ok())
                        .filter(|&n| n <= MAX_BLOB)
                        .ok_or_else(|| HandlerError::invalid_params(format!("bytes must be 0..={MAX_BLOB}")))?;
                    let blob = blobs.get(len);
                    Ok::<_, HandlerError>(ResourceContents::Text(
                        TextResourceContents::new(r.uri(), blob.as_str()).with_mime_type("text/plain"),
                    ))
                }
            },
        )
        .build()
}

/// A description of about 100 characters, different for each tool.
fn noop_description(i: usize) -> String {
    format!("No-op tool number {i:03} of the tools/list benchmark: takes a label and a count, ignores both, says ok")
}

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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let served = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["stdio"] => server().serve(portico::transport::stdio::stdio()).await.map_err(|e| e.to_string()),
        ["http", port] => match port.parse::<u16>() {
            Ok(port) => portico::transport::http::server::StreamableHttp::new(server())
                .without_legacy_sse()
                .serve(("127.0.0.1", port))
                .await
                .map_err(|e| e.to_string()),
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
            eprintln!("usage: bench-server stdio | bench-server stdio-pipe | bench-server http PORT");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_has_the_promised_shape() {
        for len in [0, 1, 63, 64, 65, 1000, 1_048_576] {
            let blob = make_blob(len);
            assert_eq!(blob.chars().count(), len);
            for chunk in blob.as_bytes().chunks_exact(64) {
                assert!(chunk.contains(&b'"') && chunk.contains(&b'\\') && chunk.contains(&b'\n'));
            }
        }
        assert_eq!(make_blob(4096), make_blob(4096));
    }

    #[test]
    fn noop_descriptions_are_about_100_characters() {
        for i in [0, 7, 999] {
            let n = noop_description(i).len();
            assert!((90..=110).contains(&n), "{n}");
        }
    }
}

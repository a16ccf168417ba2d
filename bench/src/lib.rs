//! The bench server contract, shared by `bench-server`, the micro-benchmarks and the
//! instruction-count benchmarks: [`server`] builds the Portico server they all measure.
//!
//! - `echo {text}` → one text content with the same text;
//! - `sleep {ms}` → waits `ms` milliseconds (`tokio::time::sleep`), returns `ok`;
//! - `noop_0` … `noop_999` → `ok`; each has a ~100-character description and a two-property
//!   input schema, so that `tools/list` is large;
//! - resource template `bench://blob/{bytes}` → one text content of exactly `bytes` characters,
//!   deterministic, with a `"`, a `\` and a newline in every 64 characters. The last blob built
//!   for each size is kept, encoded (`EncodedContents`), so a size is generated and escaped once.

pub mod floor;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico::schema::{Implementation, ResourceContents, ResourceTemplate, TextResourceContents, Tool, object};
use portico::server::{EncodedContents, HandlerError, RequestContext, ResourceRequest, Server};
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

/// Blobs built so far, by URI (a handful of sizes at most), encoded once: every read of a
/// size answers the same bytes (`EncodedContents`), as a server keeping a large document would.
#[derive(Default)]
struct Blobs {
    by_uri: Mutex<HashMap<String, EncodedContents>>,
}

impl Blobs {
    fn get(&self, uri: &str, len: usize) -> EncodedContents {
        let cached = self.by_uri.lock().ok().and_then(|m| m.get(uri).cloned());
        if let Some(blob) = cached {
            return blob;
        }
        let blob = EncodedContents::new([ResourceContents::Text(
            TextResourceContents::new(uri, make_blob(len)).with_mime_type("text/plain"),
        )]);
        if let Ok(mut m) = self.by_uri.lock() {
            if m.len() >= KEEP_SIZES {
                m.clear();
            }
            m.insert(uri.to_owned(), blob.clone());
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
                    Ok::<_, HandlerError>(blobs.get(r.uri(), len))
                }
            },
        )
        .build()
}

/// A description of about 100 characters, different for each tool.
pub fn noop_description(i: usize) -> String {
    format!("No-op tool number {i:03} of the tools/list benchmark: takes a label and a count, ignores both, says ok")
}

/// An in-process client of the bench server over `portico::transport::memory`, writing and
/// reading raw JSON-RPC frames: the instruction-count workloads and the micro-benchmarks share it.
/// It panics on anything unexpected (a measurement of a broken exchange means nothing).
pub mod inproc {
    use bytes::Bytes;
    use portico::transport::memory::{MemoryReader, MemoryWriter, pair};
    use portico::transport::{FrameReader, FrameWriter, Transport};

    pub const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"icount","version":"0"}}"#;
    pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"icount","version":"0"}}}"#;

    pub fn echo(id: u64, meta: bool) -> Vec<u8> {
        let meta = if meta { format!(r#","_meta":{META}"#) } else { String::new() };
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{id}"}}{meta}}}}}"#)
            .into_bytes()
    }

    /// A response as far as it is checked: borrowed, no tree (the client's cost stays small).
    #[derive(serde::Deserialize)]
    struct Resp<'a> {
        id: u64,
        #[serde(borrow)]
        result: Res<'a>,
    }

    #[derive(serde::Deserialize)]
    struct Res<'a> {
        #[serde(borrow)]
        content: [Item<'a>; 1],
    }

    #[derive(serde::Deserialize)]
    struct Item<'a> {
        text: &'a str,
    }

    pub fn check_echo(frame: &[u8], id: Option<u64>) -> u64 {
        let r: Resp<'_> =
            serde_json::from_slice(frame).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(frame)));
        if let Some(id) = id {
            assert_eq!(r.id, id);
        }
        assert_eq!(r.result.content[0].text.parse::<u64>().ok(), Some(r.id));
        r.id
    }

    pub struct Client {
        pub r: MemoryReader,
        pub w: MemoryWriter,
        _server: portico::server::ServerConnection,
    }

    impl Client {
        pub async fn new(handshake: bool) -> Client {
            Client::with_version(handshake.then_some("2025-11-25")).await
        }

        /// After an `initialize` of `version` (none: no handshake, the 2026-07-28 era).
        pub async fn with_version(version: Option<&str>) -> Client {
            Client::over(&crate::server(), version).await
        }

        /// The same, connected to `server` (the gateway's, in the `gateway` scenario).
        pub async fn over(server: &portico::server::Server, version: Option<&str>) -> Client {
            let (client, server_end) = pair();
            let conn = server.connect(server_end);
            let (r, w) = client.split();
            let mut c = Client { r, w, _server: conn };
            if let Some(version) = version {
                let init = INIT.replace("2025-11-25", version);
                c.w.write_frame(init.as_bytes()).await.expect("in-process exchange");
                c.w.flush().await.expect("in-process exchange");
                let f = c.read().await;
                let v = serde_json::from_slice::<serde_json::Value>(&f).expect("in-process exchange");
                assert_eq!(v["result"]["protocolVersion"], version, "negotiated");
                c.w.write_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                    .await
                    .expect("in-process exchange");
                c.w.flush().await.expect("in-process exchange");
            }
            c
        }

        pub async fn read(&mut self) -> Bytes {
            self.r.read_frame().await.expect("in-process exchange").expect("in-process exchange")
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

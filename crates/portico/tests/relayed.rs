//! `ToolReply::Relayed` on the raw wire: a tool's result answered with the JSON it came as, in
//! every revision, and encoded again only where the revision reads it differently or the JSON
//! cannot be framed as it is.

use portico::RelayedToolResult;
use portico::schema::{Implementation, Tool, object};
use portico::server::{Server, ToolReply};
use portico::transport::memory::{self, MemoryReader, MemoryWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

/// The texts the tools answer with, as some upstream wrote them (escapes an encoder of the
/// decoded value would not write: `\/`, `\u00e9`).
const PLAIN: &str = r#"{"content":[{"type":"text","text":"caf\u00e9 \/"}],"x-vendor":"\/"}"#;
const STRUCTURED: &str = r#"{"content":[{"type":"text","text":"\/"}],"structuredContent":{"a":"\/"}}"#;
const WITH_META: &str = r#"{"_meta":{"k":"\/"},"content":[{"type":"text","text":"\/"}]}"#;
const LINES: &str = "{\n  \"content\": [{\"type\": \"text\", \"text\": \"\\/\"}]\n}";

fn server() -> Server {
    let mut b = Server::builder(Implementation::new("relay", "1.0.0"));
    for (name, json) in [("plain", PLAIN), ("structured", STRUCTURED), ("with_meta", WITH_META), ("lines", LINES)] {
        b = b.tool(Tool::new(name, object(json!({"type": "object"}))), move |_: Value| async move {
            ToolReply::Relayed(RelayedToolResult::decode(json.to_owned()).expect("a tool result"))
        });
    }
    b.build()
}

struct Raw {
    r: MemoryReader,
    w: MemoryWriter,
    _conn: portico::server::ServerConnection,
    meta: Option<Value>,
}

impl Raw {
    async fn new(version: &str) -> Raw {
        let (a, b) = memory::pair();
        let conn = server().connect(b);
        let (r, w) = a.split();
        let mut raw = Raw { r, w, _conn: conn, meta: None };
        if version == "2026-07-28" {
            raw.meta = Some(json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
            }));
        } else {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
            raw.send(&init).await;
            raw.frame().await;
            raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        }
        raw
    }

    async fn send(&mut self, msg: &Value) {
        self.w.write_frame(msg.to_string().as_bytes()).await.expect("write");
        self.w.flush().await.expect("flush");
    }

    async fn frame(&mut self) -> String {
        let frame = self.r.read_frame().await.expect("read").expect("open");
        String::from_utf8(frame.to_vec()).expect("utf-8")
    }

    /// The text of `tool`'s response frame.
    async fn call(&mut self, tool: &str) -> String {
        let mut params = json!({"name": tool, "arguments": {}});
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        self.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})).await;
        loop {
            let frame = self.frame().await;
            if frame.contains(r#""id":1"#) {
                return frame;
            }
        }
    }
}

#[tokio::test]
async fn a_relayed_result_is_answered_with_its_own_text_in_every_revision() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut raw = Raw::new(version).await;
        assert_eq!(raw.call("plain").await, format!(r#"{{"jsonrpc":"2.0","id":1,"result":{PLAIN}}}"#), "{version}");
    }
    let mut raw = Raw::new("2026-07-28").await;
    let frame = raw.call("plain").await;
    let inner = PLAIN.strip_prefix('{').and_then(|p| p.strip_suffix('}')).expect("an object");
    assert!(
        frame.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"complete",{inner},"_meta":"#)),
        "{frame}"
    );
    let v: Value = serde_json::from_str(&frame).expect("json");
    assert_eq!(v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "relay", "{frame}");
}

#[tokio::test]
async fn a_relayed_result_is_encoded_where_its_text_would_not_do() {
    // structuredContent: kept from 2025-06-18; removed for older revisions, which need a rewrite.
    let mut raw = Raw::new("2025-06-18").await;
    assert!(raw.call("structured").await.contains(STRUCTURED));
    let mut raw = Raw::new("2025-03-26").await;
    let frame = raw.call("structured").await;
    let v: Value = serde_json::from_str(&frame).expect("json");
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "/"}]}}));
    assert!(!frame.contains(r"\/"), "{frame}");

    // A `_meta` of its own: its other members as written, `_meta` from the decoded result
    // (with this server's info in 2026-07-28).
    let mut raw = Raw::new("2025-11-25").await;
    let frame = raw.call("with_meta").await;
    assert_eq!(
        frame,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\/"}],"_meta":{"k":"/"}}}"#
    );
    let mut raw = Raw::new("2026-07-28").await;
    let v: Value = serde_json::from_str(&raw.call("with_meta").await).expect("json");
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["_meta"]["k"], "/");
    assert_eq!(v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "relay");

    // Text over several lines cannot be one frame: encoded on one line, the same result.
    for version in ["2025-11-25", "2026-07-28"] {
        let mut raw = Raw::new(version).await;
        let frame = raw.call("lines").await;
        assert!(!frame.contains('\n'), "{version}: {frame}");
        let v: Value = serde_json::from_str(&frame).expect("json");
        assert_eq!(v["result"]["content"][0]["text"], "/", "{version}");
    }
}

//! The gateway answers a tool call with the upstream's own JSON where nothing changed it, and
//! encodes the result again where something did (the host cut it to the size cap, or the
//! client's revision reads it differently). `_meta` is always answered from the decoded result,
//! so the upstream's serverInfo taken out of it never reaches the client.
//!
//! The upstream is a Portico server over Streamable HTTP on 127.0.0.1 whose tools answer with
//! JSON text that no encoder of a decoded value would write: `\/` and `\u00e9` escapes. Where
//! the client receives those escapes, it received the upstream's bytes. The client reads the
//! gateway's raw frames over the in-memory transport.

mod common;

use std::time::Duration;

use portico::RelayedToolResult;
use portico::schema::{Implementation, Tool, object};
use portico::server::{Server, ToolReply};
use portico::transport::http::server::StreamableHttp;
use portico::transport::memory::{MemoryReader, MemoryWriter, pair};
use portico::transport::{FrameReader, FrameWriter, Transport};
use portico_host::Host;
use portico_host::gateway::Gateway;
use serde_json::{Value, json};

/// Text with escapes an encoder would not write (`\/`, `\u00e9`), 47 bytes of JSON.
const ODD_TEXT: &str = r#""caf\u00e9 \/ the upstream's own bytes, \/ again""#;

/// A tool answering with `json`, as a relay would, so its upstream SDK server sends it as is.
fn relaying(json: String) -> impl Fn(Value) -> std::future::Ready<ToolReply> + Send + Sync + 'static {
    move |_| {
        std::future::ready(match RelayedToolResult::decode(json.clone()) {
            Ok(r) => ToolReply::Relayed(r),
            Err(e) => ToolReply::Result(portico::schema::CallToolResult::error(e.to_string())),
        })
    }
}

async fn upstream() -> String {
    let args = || Tool::new("t", object(json!({"type": "object"})));
    let named = |name: &str| {
        let mut t = args();
        t.name = name.to_owned();
        t
    };
    let big = format!(r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#, r"x\/".repeat(2_000));
    let server = Server::builder(Implementation::new("up", "1.0.0"))
        .tool(
            named("odd"),
            relaying(format!(r#"{{"content":[{{"type":"text","text":{ODD_TEXT}}}],"x-vendor":{{"k":"\/"}}}}"#)),
        )
        .tool(
            named("structured"),
            relaying(format!(r#"{{"content":[{{"type":"text","text":{ODD_TEXT}}}],"structuredContent":{{"a":"\/"}}}}"#)),
        )
        .tool(
            named("meta"),
            relaying(format!(
                r#"{{"content":[{{"type":"text","text":{ODD_TEXT}}}],"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"up"}},"k":"\/"}}}}"#
            )),
        )
        .tool(named("big"), relaying(big))
        .build();
    let router = StreamableHttp::new(server).build().router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

struct Downstream {
    r: MemoryReader,
    w: MemoryWriter,
    _conn: portico::server::ServerConnection,
    meta: Option<String>,
    next: u64,
}

impl Downstream {
    /// A client of `gateway` speaking `version` (2026-07-28: no handshake, `_meta` on each call).
    async fn connect(gateway: &Gateway, version: &str) -> Downstream {
        let (client, server_end) = pair();
        let conn = gateway.server().connect(server_end);
        let (r, w) = client.split();
        let stateless = version == "2026-07-28";
        let meta = stateless.then(|| {
            json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "relay-test", "version": "0"}
            })
            .to_string()
        });
        let mut d = Downstream { r, w, _conn: conn, meta, next: 1 };
        if !stateless {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "relay-test", "version": "0"}}});
            d.send(init.to_string()).await;
            let answer: Value = serde_json::from_str(&d.read().await).expect("json");
            assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
            d.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()).await;
        }
        d
    }

    async fn send(&mut self, frame: String) {
        self.w.write_frame(frame.as_bytes()).await.expect("write");
        self.w.flush().await.expect("flush");
    }

    async fn read(&mut self) -> String {
        let frame = tokio::time::timeout(Duration::from_secs(20), self.r.read_frame())
            .await
            .expect("an answer within 20 s")
            .expect("read")
            .expect("a frame");
        String::from_utf8(frame.to_vec()).expect("utf-8")
    }

    /// Calls `tool` and returns the answer's frame as text.
    async fn call(&mut self, tool: &str) -> String {
        let id = self.next;
        self.next += 1;
        let meta = self.meta.as_ref().map(|m| format!(r#","_meta":{m}"#)).unwrap_or_default();
        self.send(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}{meta}}}}}"#
        ))
        .await;
        loop {
            let frame = self.read().await;
            let v: Value = serde_json::from_str(&frame).expect("json");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{frame}");
                return frame;
            }
        }
    }
}

async fn gateway() -> (Gateway, tempfile::TempDir) {
    let url = upstream().await;
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::start(common::config_in(
        dir.path(),
        &format!(
            "[servers.a]\nurl = \"{url}\"\nshared = true\n\n\
             [servers.b]\nurl = \"{url}\"\nshared = true\nmax_result_bytes = 2048\n\n\
             [servers.c]\nurl = \"{url}\"\nshared = true\nprotocol_version = \"2025-11-25\"\n"
        ),
    ));
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host);
    gateway.synced(Duration::from_secs(5)).await;
    (gateway, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_result_reaches_the_client_as_the_upstream_wrote_it() {
    let (gateway, _dir) = gateway().await;
    // Server a is reached in 2026-07-28 (the upstream's answer carries its own `resultType` and
    // `_meta`, which the gateway replaces), c in 2025-11-25 (the answer is the JSON as it is).
    for (version, tool) in [
        ("2025-11-25", "a__odd"),
        ("2025-11-25", "c__odd"),
        ("2025-06-18", "a__odd"),
        ("2025-03-26", "c__odd"),
        ("2026-07-28", "a__odd"),
        ("2026-07-28", "c__odd"),
    ] {
        let mut d = Downstream::connect(&gateway, version).await;
        let frame = d.call(tool).await;
        // The upstream's escapes: its bytes, not an encoding of the decoded result.
        assert!(frame.contains(ODD_TEXT), "{version}: {frame}");
        assert!(frame.contains(r#""x-vendor":{"k":"\/"}"#), "{version}: {frame}");
        let v: Value = serde_json::from_str(&frame).expect("json");
        assert_eq!(v["result"]["content"][0]["text"], "café / the upstream's own bytes, / again", "{version}");
        if version == "2026-07-28" {
            // Stamped around the upstream's text: this gateway's own info, never the upstream's.
            assert_eq!(v["result"]["resultType"], "complete", "{frame}");
            let info = &v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
            assert_eq!(info["name"], gateway.server().info().name.as_str(), "{frame}");
        } else {
            assert!(v["result"].get("resultType").is_none(), "{version}: {frame}");
            assert!(v["result"].get("_meta").is_none(), "{version}: {frame}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_host_or_the_revision_changes_is_encoded_again() {
    let (gateway, _dir) = gateway().await;
    // structuredContent: kept as it came from 2025-06-18 on; an older client gets it removed.
    let mut newer = Downstream::connect(&gateway, "2025-11-25").await;
    let frame = newer.call("a__structured").await;
    assert!(frame.contains(r#""structuredContent":{"a":"\/"}"#), "{frame}");
    let mut older = Downstream::connect(&gateway, "2025-03-26").await;
    let frame = older.call("a__structured").await;
    assert!(!frame.contains("structuredContent") && !frame.contains(r"\/"), "{frame}");
    let v: Value = serde_json::from_str(&frame).expect("json");
    assert_eq!(v["result"]["content"][0]["text"], "café / the upstream's own bytes, / again");

    for version in ["2025-11-25", "2026-07-28"] {
        let mut d = Downstream::connect(&gateway, version).await;
        // The upstream's serverInfo is taken out of `_meta`, which is answered from the decoded
        // result; the other members are still the upstream's bytes.
        let frame = d.call("a__meta").await;
        assert!(frame.contains(ODD_TEXT), "{version}: {frame}");
        assert!(!frame.contains(r#""name":"up""#) && !frame.contains(r#""k":"\/""#), "{version}: {frame}");
        let v: Value = serde_json::from_str(&frame).expect("json");
        assert_eq!(v["result"]["_meta"]["k"], "/", "{version}: {frame}");
        let info = v["result"]["_meta"].get("io.modelcontextprotocol/serverInfo");
        assert_eq!(info.is_some(), version == "2026-07-28", "{version}: {frame}");
        // Over server b's 2,048-byte cap: cut and marked, so encoded again; through a, as it came.
        let frame = d.call("b__big").await;
        assert!(!frame.contains(r"\/"), "{version}: {}", &frame[..200.min(frame.len())]);
        let v: Value = serde_json::from_str(&frame).expect("json");
        assert!(v["result"]["_meta"]["dev.portico/truncated"].is_object(), "{version}: {frame}");
        let frame = d.call("a__big").await;
        assert!(frame.contains(&r"x\/".repeat(2_000)), "{version}");
    }
}

//! A terminal MCP client: connect to a server command or URL, list what it offers, call a tool.
//!
//! ```sh
//! cargo run -p portico-mcp --example client --features child-process,http-client -- npx -y @modelcontextprotocol/server-everything
//! cargo run -p portico-mcp --example client --features child-process,http-client -- http://127.0.0.1:3000/mcp
//! # call a tool: put `--call NAME JSON` before the server
//! cargo run -p portico-mcp --example client --features child-process,http-client -- --call add '{"a":1,"b":2}' http://127.0.0.1:3000/mcp
//! ```
#![allow(clippy::print_stdout)] // a terminal client: stdout is its output, not a protocol stream

use portico::client::Client;
use portico::schema::{ContentBlock, Implementation};
use portico::transport::child::ChildProcess;
use portico::transport::http::client::HttpClientTransport;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut call = None;
    if args.first().is_some_and(|a| a == "--call") {
        if args.len() < 4 {
            return Err("usage: client [--call TOOL JSON] (COMMAND [ARGS...] | URL)".into());
        }
        let json: serde_json::Value = serde_json::from_str(&args[2])?;
        call = Some((args[1].clone(), json));
        args.drain(..3);
    }
    let Some(target) = args.first().cloned() else {
        return Err("usage: client [--call TOOL JSON] (COMMAND [ARGS...] | URL)".into());
    };
    let info = Implementation::new("portico-example-client", env!("CARGO_PKG_VERSION"));

    let mut child = None;
    let client = if target.starts_with("http://") || target.starts_with("https://") {
        Client::builder(info).connect(HttpClientTransport::new(target.as_str())).await?
    } else {
        let (transport, handle) = ChildProcess::new(&target).args(&args[1..]).spawn()?;
        child = Some(handle);
        Client::builder(info).connect(transport).await?
    };

    let server = client.server_info();
    println!("{} {} — protocol {}", server.name, server.version, client.protocol_version());
    let caps = client.server_capabilities().clone();
    if caps.tools.is_some() {
        println!("\ntools:");
        for t in client.list_all_tools().await? {
            println!("  {:<28} {}", t.name, t.description.as_deref().unwrap_or(""));
        }
    }
    if caps.resources.is_some() {
        println!("\nresources:");
        for r in client.list_all_resources().await? {
            println!("  {:<28} {}", r.uri, r.name);
        }
    }
    if caps.prompts.is_some() {
        println!("\nprompts:");
        for p in client.list_all_prompts().await? {
            println!("  {:<28} {}", p.name, p.description.as_deref().unwrap_or(""));
        }
    }
    if let Some((name, arguments)) = call {
        let result = client.call_tool(&name, arguments).await?;
        println!("\n{name} → {}", if result.is_error == Some(true) { "error" } else { "ok" });
        for block in &result.content {
            match block {
                ContentBlock::Text(t) => println!("  {}", t.text),
                other => println!("  {}", serde_json::to_string(other)?),
            }
        }
    }
    client.close().await;
    if let Some(handle) = child {
        handle.shutdown().await?;
    }
    Ok(())
}

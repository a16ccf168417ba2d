//! Portico: the Model Context Protocol for Rust.
//!
//! Servers and clients for every MCP revision — 2024-11-05, 2025-03-26, 2025-06-18,
//! 2025-11-25 (the handshake era) and 2026-07-28 (the stateless era) — from one handler API.
//!
//! The package is `portico-mcp` (`cargo add portico-mcp`); the library it provides is
//! `portico`, so code says `use portico::…`.
//!
//! # A server in a few lines
//!
//! ```no_run
//! use portico::schema::{Implementation, Tool, object};
//! use portico::server::{RequestContext, Server};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Greet { name: String }
//!
//! # async fn run() -> Result<(), portico::Error> {
//! let input = object(serde_json::json!({
//!     "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"]
//! }));
//! Server::builder(Implementation::new("hello", "1.0.0"))
//!     .tool(Tool::new("greet", input), |a: Greet, cx: RequestContext| async move {
//!         cx.progress(1.0, Some(1.0), None).await.ok();
//!         format!("Hello, {}!", a.name)
//!     })
//!     .build()
//!     .serve(portico::transport::stdio::stdio())
//!     .await
//! # }
//! ```
//!
//! # A client
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::schema::{Implementation, Tool, object};
//! use portico::server::Server;
//! # #[derive(serde::Deserialize)] struct Greet { name: String }
//!
//! let (client_end, server_end) = portico::transport::memory::pair();
//! let server = Server::builder(Implementation::new("hello", "1.0.0"))
//!     .tool(Tool::new("greet", object(serde_json::json!({"type": "object"}))), |a: Greet| async move {
//!         format!("Hello, {}!", a.name)
//!     })
//!     .build();
//! server.connect(server_end);
//!
//! let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//! assert_eq!(client.protocol_version().as_str(), "2026-07-28"); // detected by server/discover
//! let result = client.call_tool("greet", serde_json::json!({ "name": "Ada" })).await?;
//! assert_eq!(result.is_error, None);
//! # Ok(()) }
//! ```
//!
//! The [`guide`] walks through tools, resources, prompts, input requests, middleware and HTTP,
//! each step a runnable example.
//!
//! # API themes
//!
//! - **Builders and plain async fns.** `Server::builder(info).tool(tool, handler).build()`;
//!   a handler is an async closure taking typed arguments and optionally a
//!   [`server::RequestContext`]. Everything can also change at runtime (`Server::add_tool`, …),
//!   and connected clients are told (`list_changed`).
//! - **The two eras.** Handlers never see the era. The server picks it per request by the
//!   spec's dual-era rules; the client detects it at `connect`. Input from the client
//!   (`RequestContext::elicit`, `create_message`, `list_roots`) works in both: a request to the
//!   client in the handshake era, an input-required result and a retry in 2026-07-28.
//! - **Errors.** [`Error`] is opaque with [`ErrorKind`] (whose fault it was) and predicates
//!   (`is_timeout`, `is_closed`, `peer_error`). Wire errors are data
//!   ([`schema::ErrorObject`]). A failing tool returns a result with `isError`, not an error.
//! - **Dropping and cancellation.** Dropping a client call's future cancels the request and
//!   tells the server (`notifications/cancelled`); a cancelled server handler's future is
//!   dropped and no response is sent. Async fns document their cancel safety.
//! - **Bounds.** Every queue, message size and concurrency limit is bounded and configurable.
//!
//! # Features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `server` | yes | [`server`] |
//! | `client` | yes | [`client`] |
//! | `stdio` | yes | [`transport::stdio`]: newline-delimited JSON over stdin/stdout or any byte stream |
//! | `child-process` | no | `transport::child`: spawn a server and talk to it over its stdio |
//! | `http-server` | no | `transport::http::server`: Streamable HTTP (both eras) and legacy HTTP+SSE, as an axum router or `serve(addr)` |
//! | `http-client` | no | `transport::http::client`: Streamable HTTP client (both eras), resumption, legacy HTTP+SSE fallback |
//! | `validate` | no | tool arguments validated against each tool's `inputSchema` (JSON Schema 2020-12, no remote `$ref`) before typed decoding |
//! | `auth-client` | no | `auth`: the OAuth 2.1 client side of MCP authorization for the HTTP client |
//! | `http-client-rustls` | no | `https` for the HTTP client (rustls) |
//! | `auth-server` | no | `auth::server`: OAuth 2.1 bearer tokens checked in front of the HTTP endpoint (JWT + JWKS or introspection), protected-resource metadata, `AuthInfo` for handlers |
//! | `schemars` | no | `server::input_schema`, `output_schema`, `ToolBox`: JSON Schemas of tool arguments and results derived from Rust types (schemars 1.x) |
//! | `macros` | no | `#[tool]`, `#[tools]`, `#[resource]`, `#[prompt]`, `#[completion]` (implies `schemars`): sugar that expands to builder calls |
#![cfg_attr(
    feature = "macros",
    doc = r##"
# With the macros (feature `macros`)

Tools, resources, prompts and completions as typed functions: parameters are the arguments,
doc comments the descriptions, schemas are derived with schemars, and each macro expands to the
builder calls above ([`tool`], [`tools`], [`resource`], [`prompt`], [`completion`]).

```no_run
use portico::schema::Implementation;
use portico::server::{RequestContext, Server};

/// Greets someone by name.
#[portico::tool]
async fn greet(/** Who to greet. */ name: String, cx: &RequestContext) -> String {
    cx.progress(1.0, Some(1.0), None).await.ok();
    format!("Hello, {name}!")
}

# async fn run() -> Result<(), portico::Error> {
greet::register(Server::builder(Implementation::new("hello", "1.0.0")))
    .build()
    .serve(portico::transport::stdio::stdio())
    .await
# }
```
"##
)]
#![deny(missing_docs)]

/// The README (what crates.io shows), compiled as doc-tests so its examples stay true.
#[cfg(all(doctest, feature = "macros", feature = "child-process"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use portico_schema as schema;

mod error;
// The engine serves both sides; with only one side compiled, parts of it are unused.
mod peek;
#[cfg_attr(not(all(feature = "server", feature = "client")), allow(dead_code, unused_imports))]
mod rpc;
mod sync;
pub mod trace;
pub mod transport;

/// Entry points into private parsers for `fuzz/` and its regression test (feature `fuzzing`, off by default; not a stable API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(feature = "server", feature = "client"))]
pub mod guide;
pub mod middleware;
/// The `http` crate, whose [`Extensions`](http::Extensions) carry per-request data to handlers.
pub use http;

pub use error::{Error, ErrorKind, Result};
#[cfg(any(feature = "auth-client", feature = "auth-server"))]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
#[cfg(any(feature = "client", feature = "server"))]
mod relayed;
#[cfg(feature = "server")]
pub mod server;
#[cfg(any(feature = "client", feature = "server"))]
pub use relayed::RelayedToolResult;

#[cfg(feature = "macros")]
pub use portico_macros::{completion, prompt, resource, tool, tools};

// What the macros' expansions name: `::portico::__private::…`.
#[cfg(feature = "schemars")]
#[doc(hidden)]
pub use server::__private;

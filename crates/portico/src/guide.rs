//! A guided tour of Portico, each step a doc-test that runs.
//!
//! Every example connects a client and a server through the in-memory pair
//! ([`transport::memory::pair`](crate::transport::memory::pair)), so it runs as written; swap in
//! [`stdio()`](crate::transport::stdio::stdio), a child process or HTTP to ship it (see
//! [Serving over HTTP](#serving-over-http)).
//!
//! # Tools
//!
//! A tool is a [`Tool`](crate::schema::Tool) definition plus an async closure. The closure takes
//! the arguments as any `Deserialize` type (decoded straight from the request bytes) and,
//! optionally, the [`RequestContext`](crate::server::RequestContext). What it returns decides
//! the result: a `String` is text content, [`Json`](crate::server::Json) is structured content
//! (with a text copy for older clients), `Err(message)` is a tool execution error the model sees.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::schema::{ContentBlock, Implementation, Tool, object};
//! use portico::server::{Json, Server};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize)]
//! struct Add { a: i64, b: i64 }
//!
//! let schema = object(json!({
//!     "type": "object",
//!     "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
//!     "required": ["a", "b"]
//! }));
//! let server = Server::builder(Implementation::new("calc", "1.0.0"))
//!     .tool(Tool::new("add", schema.clone()), |x: Add| async move { Json(json!({ "sum": x.a + x.b })) })
//!     .tool(Tool::new("div", schema), |x: Add| async move {
//!         if x.b == 0 { Err("division by zero".to_string()) } else { Ok((x.a / x.b).to_string()) }
//!     })
//!     .build();
//!
//! let (client_end, server_end) = portico::transport::memory::pair();
//! server.connect(server_end);
//! let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//!
//! let sum = client.call_tool("add", json!({ "a": 2, "b": 3 })).await?;
//! assert_eq!(sum.structured_content, Some(json!({ "sum": 5 })));
//!
//! let failed = client.call_tool("div", json!({ "a": 1, "b": 0 })).await?;
//! assert_eq!(failed.is_error, Some(true)); // a result the model reads, not a protocol error
//! assert!(matches!(&failed.content[0], ContentBlock::Text(t) if t.text == "division by zero"));
//! # Ok(()) }
//! ```
//!
//! With the `macros` feature the same tool is a plain function (`#[portico::tool]`), its schema
//! derived from the parameter types; see [`tool`](crate::tool) and `examples/macros.rs`.
//!
//! # Resources and templates
//!
//! Static resources have a fixed URI; templates match URIs with RFC 6570 and hand the handler
//! the variables, percent-decoded. A handler that does not know the URI answers
//! [`HandlerError::resource_not_found`](crate::server::HandlerError::resource_not_found), which
//! becomes the right error code for each revision.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::schema::{Implementation, ResourceContents, ResourceTemplate};
//! use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
//!
//! let server = Server::builder(Implementation::new("users", "1.0.0"))
//!     .resource_template(
//!         ResourceTemplate::new("users://{id}/profile", "profile").with_mime_type("text/plain"),
//!         |r: ResourceRequest, _: RequestContext| async move {
//!             match r.var("id") {
//!                 Some(id) if id.chars().all(|c| c.is_ascii_digit()) => {
//!                     Ok(ResourceContents::text(r.uri(), format!("user {id}")))
//!                 }
//!                 _ => Err(HandlerError::resource_not_found(r.uri())),
//!             }
//!         },
//!     )
//!     .build();
//! # let (client_end, server_end) = portico::transport::memory::pair();
//! # server.connect(server_end);
//! # let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//!
//! let read = client.read_resource("users://42/profile").await?;
//! assert_eq!(read.contents.len(), 1);
//! let missing = client.read_resource("users://nobody/profile").await.unwrap_err();
//! assert!(missing.peer_error().is_some());
//! # Ok(()) }
//! ```
//!
//! A large resource read often — a manual, a dataset kept in memory — can be encoded once:
//! keep an [`EncodedContents`](crate::server::EncodedContents) and return a clone of it (a
//! reference count). Every read then answers the same bytes instead of copying and escaping the
//! text again; in the handshake era they go to the transport without being copied at all.
//!
//! # Prompts
//!
//! A prompt's arguments arrive as strings; decode them into a struct.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::schema::{GetPromptResult, Implementation, Prompt, PromptArgument, PromptMessage};
//! use portico::server::Server;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Review { code: String, language: Option<String> }
//!
//! let server = Server::builder(Implementation::new("reviews", "1.0.0"))
//!     .prompt(
//!         Prompt::new("review").with_argument(PromptArgument::new("code").with_required(true)),
//!         |x: Review| async move {
//!             let lang = x.language.unwrap_or_else(|| "code".into());
//!             Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Review this {lang}:\n{}", x.code))]))
//!         },
//!     )
//!     .build();
//! # let (client_end, server_end) = portico::transport::memory::pair();
//! # server.connect(server_end);
//! # let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//!
//! let got = client.get_prompt("review", [("code".to_string(), "fn main() {}".to_string())]).await?;
//! assert_eq!(got.messages.len(), 1);
//! # Ok(()) }
//! ```
//!
//! # Asking the client: elicitation, sampling, roots
//!
//! One call in the handler — [`elicit`](crate::server::RequestContext::elicit),
//! [`create_message`](crate::server::RequestContext::create_message),
//! [`list_roots`](crate::server::RequestContext::list_roots) — in both eras. In the handshake
//! era it is a request to the client; in 2026-07-28 Portico answers "input required", the
//! client retries with the answers, and the handler resumes from the sealed request state. The
//! handler does not know which happened. The client side answers with a
//! [`ClientHandler`](crate::client::ClientHandler).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use futures_util::future::BoxFuture;
//! use portico::client::{Client, ClientHandler, EraMode};
//! use portico::schema::*;
//! use portico::server::{RequestContext, Server};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize)]
//! struct Empty {}
//!
//! struct Person;
//! impl ClientHandler for Person {
//!     fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
//!         Box::pin(async { Ok(ElicitResult::accept(object(json!({ "name": "Ada" })))) })
//!     }
//! }
//!
//! let server = Server::builder(Implementation::new("greeter", "1.0.0"))
//!     .tool(Tool::new("greet", object(json!({ "type": "object" }))), |_: Empty, cx: RequestContext| async move {
//!         let form = RequestedSchema::new().with_required_property("name", StringSchema::new());
//!         let answer = cx.elicit(ElicitRequestFormParams::new("Your name?", form).into()).await?;
//!         let name = answer.content.as_ref().and_then(|c| c.get("name")).and_then(|v| v.as_str());
//!         Ok::<_, portico::Error>(format!("Hello, {}!", name.unwrap_or("stranger")))
//!     })
//!     .build();
//!
//! let mut caps = ClientCapabilities::default();
//! caps.elicitation = Some(Default::default());
//! for era in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
//!     let (client_end, server_end) = portico::transport::memory::pair();
//!     server.connect(server_end);
//!     let client = Client::builder(Implementation::new("host", "1.0.0"))
//!         .capabilities(caps.clone())
//!         .handler(Person)
//!         .era(era)
//!         .connect(client_end)
//!         .await?;
//!     let r = client.call_tool("greet", json!({})).await?;
//!     assert!(matches!(&r.content[0], ContentBlock::Text(t) if t.text == "Hello, Ada!"));
//! }
//! # Ok(()) }
//! ```
//!
//! # Middleware
//!
//! Tower layers wrap the JSON-RPC requests a server handles, one tool's calls, or what a
//! client sends ([`middleware`](crate::middleware)). Data a layer puts in the request's
//! extensions reaches the handler through
//! [`RequestContext::extensions`](crate::server::RequestContext::extensions); over HTTP the
//! extensions start as the HTTP request's (what an authorization layer inserted).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::middleware::{McpRequest, McpResponse};
//! use portico::schema::{ContentBlock, ErrorCode, ErrorObject, Implementation, Tool, object};
//! use portico::server::{RequestContext, Server};
//! use serde_json::json;
//! use tower::ServiceExt;
//!
//! #[derive(serde::Deserialize)]
//! struct Empty {}
//! #[derive(Clone)]
//! struct Caller(&'static str);
//!
//! let server = Server::builder(Implementation::new("guarded", "1.0.0"))
//!     .tool(Tool::new("whoami", object(json!({ "type": "object" }))), |_: Empty, cx: RequestContext| async move {
//!         cx.extensions().get::<Caller>().map_or("?", |c| c.0).to_string()
//!     })
//!     .tool(Tool::new("shutdown", object(json!({ "type": "object" }))), |_: Empty| async { "bye" })
//!     // Runs first (added last): refuse one tool, tag every request.
//!     .layer(tower::layer::layer_fn(|inner: portico::middleware::McpService| {
//!         tower::service_fn(move |mut req: McpRequest| {
//!             let inner = inner.clone();
//!             async move {
//!                 if req.tool_name().as_deref() == Some("shutdown") {
//!                     return Ok(McpResponse::error(ErrorObject::new(ErrorCode(-32001), "not allowed")));
//!                 }
//!                 req.extensions_mut().insert(Caller("ada"));
//!                 inner.oneshot(req).await
//!             }
//!         })
//!     }))
//!     .build();
//! # let (client_end, server_end) = portico::transport::memory::pair();
//! # server.connect(server_end);
//! # let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//!
//! let r = client.call_tool("whoami", json!({})).await?;
//! assert!(matches!(&r.content[0], ContentBlock::Text(t) if t.text == "ada"));
//! let refused = client.call_tool("shutdown", json!({})).await.unwrap_err();
//! assert_eq!(refused.peer_error().map(|e| e.code.0), Some(-32001));
//! # Ok(()) }
//! ```
//!
//! # Serving over HTTP
//!
//! With the `http-server` feature, the same server is a Streamable HTTP endpoint for both eras
//! (sessions and resumable SSE for handshake-era clients, stateless requests for 2026-07-28),
//! as an axum router to merge into an app or served on its own. Host/Origin checks, body and
//! session limits are on by default.
//!
//! ```
//! # #[cfg(all(feature = "http-server", feature = "http-client"))]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use portico::client::Client;
//! use portico::schema::{Implementation, Tool, object};
//! use portico::server::Server;
//! use portico::transport::http::client::HttpClientTransport;
//! use portico::transport::http::server::StreamableHttp;
//! # #[derive(serde::Deserialize)] struct Empty {}
//!
//! let server = Server::builder(Implementation::new("web", "1.0.0"))
//!     .tool(Tool::new("ping", object(serde_json::json!({ "type": "object" }))), |_: Empty| async { "pong" })
//!     .build();
//!
//! // Inside an existing axum app, next to other routes (or `StreamableHttp::new(server).serve(addr)`).
//! let app = axum::Router::new()
//!     .route("/health", axum::routing::get(|| async { "ok" }))
//!     .merge(StreamableHttp::new(server).router("/mcp"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/mcp", listener.local_addr()?);
//! tokio::spawn(async move { axum::serve(listener, app).await });
//!
//! let client = Client::builder(Implementation::new("host", "1.0.0")).connect(HttpClientTransport::new(url)).await?;
//! assert_eq!(client.list_all_tools().await?.len(), 1);
//! client.close().await;
//! # Ok(()) }
//! # #[cfg(not(all(feature = "http-server", feature = "http-client")))]
//! # fn main() {}
//! ```
//!
//! A client reaches it with `HttpClientTransport::new(url)` (feature `http-client`), which
//! falls back to the legacy HTTP+SSE transport for old servers. Runnable versions:
//! `examples/axum.rs`, `examples/everything.rs --http PORT`, `examples/client.rs`.
//!
//! # Sizing the runtime
//!
//! Portico starts no runtime and no thread of its own: its tasks, and Tokio's blocking pool
//! where a stdin is not a pipe, run on the runtime it is called from, whose size is yours to
//! choose.
//!
//! - `#[tokio::main]` (the multi-threaded runtime) starts one worker per CPU the process may
//!   run on. Tokio counts the CPU affinity (`taskset`, a container's cpuset), so a server
//!   confined to one core gets one worker. Keep that default rather than a fixed
//!   `worker_threads`: two workers sharing one core take turns, and every so often a request
//!   waits out the other's time slice. On the benchmark machine this put p99 at 64 HTTP
//!   connections at 4.4 ms instead of 1.0 ms (`docs/benchmarks.md`).
//! - `TOKIO_WORKER_THREADS=N` in the environment sets the count of a runtime that does not
//!   set it in code, `#[tokio::main]` included. `portico serve` follows it too; without it,
//!   the gateway runs one worker on stdio (one client) and the default over HTTP.
//! - Fewer workers lower the latency of a lone request, more raise the throughput of many.
//!   A request handed from one worker to another wakes the other, and on a small virtual
//!   machine that wake-up costs tens of microseconds. `portico serve --http` with one worker
//!   answered one call at a time about 60 µs sooner, with about 28 % less CPU, than with two.
//!   With 64 connections on the same two cores it did 12–20 % fewer calls per second. A
//!   stdio server with one client, or a gateway for one agent, is well served by
//!   `flavor = "current_thread"` or one worker. A server for many clients keeps the default.
//! - A server whose clients run on its own cores (a load test on one machine, an agent beside
//!   its tools on a small VM) competes with them for those cores, and a second worker then
//!   parks and wakes more than it works. On two cores shared with the load driver, `bench-server
//!   http` with one worker did 13 % (handshake era) and 41 % (stateless) more calls per second
//!   at 64 connections than with two, medians of 3 rounds, at 3–5 µs less CPU per call
//!   (`docs/benchmarks.md`, forty-second session).
//! - Connection threads (`ServeOptions::with_connection_threads`, a single-threaded runtime per
//!   thread, each HTTP connection kept on one) pay off when a request makes calls of its own,
//!   as a gateway's do: the call and its upstream exchange then stay on one CPU. `portico serve
//!   --http` uses them. For a server that answers from its own handlers they bought nothing on
//!   the benchmark machine: the same throughput at 64 connections pinned to one core, a spread
//!   too wide to call unpinned, and about half the calls per second at one connection unpinned,
//!   where the thread that owns the connection is woken across CPUs more often (`docs/benchmarks.md`,
//!   forty-third session). Keep the default serving there.
//!
//! # Changing what is offered at runtime
//!
//! [`Server`](crate::server::Server) is a cheap handle; tools, resources and prompts can be
//! added, removed, enabled and disabled while clients are connected, and they are told
//! (`notifications/*/list_changed`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), portico::Error> {
//! use portico::client::Client;
//! use portico::schema::{Implementation, Tool, object};
//! use portico::server::Server;
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize)]
//! struct Empty {}
//!
//! let server = Server::builder(Implementation::new("live", "1.0.0")).with_tools().build();
//! # let (client_end, server_end) = portico::transport::memory::pair();
//! # server.connect(server_end);
//! # let client = Client::builder(Implementation::new("host", "1.0.0")).connect(client_end).await?;
//! assert!(client.list_all_tools().await?.is_empty());
//! server.add_tool(Tool::new("late", object(json!({ "type": "object" }))), |_: Empty| async { "here" });
//! assert_eq!(client.list_all_tools().await?.len(), 1);
//! server.set_tool_enabled("late", false);
//! assert!(client.list_all_tools().await?.is_empty());
//! # Ok(()) }
//! ```

//! Portico's host: many MCP servers joined into one registry and served as one.
//!
//! A [`Host`] supervises one [`upstream::Upstream`] per configured server (a child process or
//! an HTTP URL), joins what they offer into one [`registry::Registry`] under stable, legal
//! names, and sends every call through one path ([`router`]) where oversight plugs in. A
//! [`gateway::Gateway`] serves that registry as a single MCP server over stdio or Streamable
//! HTTP, for every revision, with the SDK's server.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use portico_host::{Host, config, gateway::Gateway};
//!
//! let loaded = config::load(std::path::Path::new("portico.toml"))?;
//! let host = Host::start(loaded.config);
//! host.ready(std::time::Duration::from_secs(30)).await;
//! for (name, entry) in host.registry().tools.iter() {
//!     println!("{name} (from {})", entry.origin.server);
//! }
//! Gateway::new(host.clone()).serve_stdio().await?;
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # API themes
//!
//! - **One call path.** [`Host::call_tool`], [`Host::read_resource`] and [`Host::get_prompt`]
//!   are the only way to an upstream; [`router::Oversight`] sees every call before and after.
//! - **Failures are results.** A tool call that cannot be made (server down, timeout, too
//!   large) is a tool result with `isError` whose text names the server; other upstreams are
//!   not affected.
//! - **Config is data.** [`config::raw`] is the file as written, [`config::Config`] what runs;
//!   other clients' files are read as they are ([`config::dialect`]).

#![deny(missing_docs)]

pub mod activity;
pub mod admin;
pub mod approvals;
pub mod audit;
pub mod auth;
mod checks;
pub mod clients;
pub mod config;
mod drain;
pub mod gateway;
mod host;
pub mod metrics;
pub mod names;
pub mod oversight;
pub mod policy;
pub mod registry;
pub mod router;
pub mod switches;
pub mod telemetry;
pub mod upstream;

pub use checks::TRUNCATED_META;
pub use drain::Drained;
pub use host::{Host, HostError, Principal, Reloaded};

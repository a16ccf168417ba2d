//! Portico: the Model Context Protocol for Rust.
#![deny(missing_docs)]

pub use portico_schema as schema;

mod error;
// The engine serves both sides; with only one side compiled, parts of it are unused.
#[cfg_attr(not(all(feature = "server", feature = "client")), allow(dead_code, unused_imports))]
mod rpc;
pub mod transport;

pub use error::{Error, ErrorKind, Result};
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod server;

//! Portico: the Model Context Protocol for Rust.
#![deny(missing_docs)]

pub use portico_schema as schema;

mod error;
#[allow(dead_code)]
mod rpc;
pub mod transport;

pub use error::{Error, ErrorKind, Result};
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "client")]
pub mod client;

//! Portico: the Model Context Protocol for Rust.
#![deny(missing_docs)]

pub use portico_schema as schema;

#[cfg(feature = "server")]
pub mod server;
pub mod transport;

//! Portico: the Model Context Protocol for Rust.
#![deny(missing_docs)]

pub use portico_schema as schema;

pub mod transport;

//! Attribute macros for Portico.
//!
//! This crate is intentionally empty until the ergonomics work lands: everything a macro will
//! generate is already available through the public builder API of `portico::server`.
#![deny(missing_docs)]

//! Wire types of every Model Context Protocol revision: 2024-11-05, 2025-03-26, 2025-06-18,
//! 2025-11-25 and 2026-07-28.
//!
//! One set of Rust types describes the newest shape of each message. Where revisions differ,
//! the differences are data (`Option` fields an older revision lacks, [`ProtocolVersion`]
//! predicates) and the encoding for an older peer is chosen by the runtime, not by these types.
//!
//! This crate does no I/O and has no async runtime: editors, code generators and inspectors can
//! depend on it alone. Type names are the schema's names verbatim (`CallToolRequestParams`,
//! `CallToolResult`, …) so a spec lookup needs no translation.
//!
//! # Conventions
//! - Every object type is `#[non_exhaustive]`; build it with `new(..)` and `with_*` setters, so a
//!   field added by a later revision breaks nobody.
//! - `_meta` is the field `meta`; unknown members are kept in `extra` and written back verbatim.
#![deny(missing_docs)]

/// The README (what crates.io shows), compiled as doc-tests so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod capabilities;
pub mod completion;
pub mod content;
pub mod discover;
pub mod elicitation;
pub mod errors;
pub mod jsonrpc;
pub mod lifecycle;
pub mod logging;
mod long_text;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod notifications;
pub mod prompts;
pub mod resources;
pub mod result;
pub mod roots;
pub mod sampling;
mod serde_util;
pub mod subscriptions;
pub mod tools;
pub mod version;

pub use capabilities::*;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use errors::*;
pub use jsonrpc::*;
pub use lifecycle::*;
pub use logging::*;
pub use meta::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use result::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tools::*;
pub use version::*;

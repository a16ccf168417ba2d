//! Server-side building blocks.
pub mod sealed;
pub mod uri_template;

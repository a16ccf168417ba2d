//! MCP authorization (OAuth 2.1 over the HTTP transports).
//!
//! [`server`]: the resource-server side — bearer tokens checked in front of a Streamable HTTP
//! endpoint, the protected-resource metadata document, and the validated principal
//! ([`server::AuthInfo`]) handed to handlers.

pub mod server;

//! HTTP transports: Streamable HTTP (both eras) and the legacy HTTP+SSE transport.

#[cfg(feature = "http-client")]
pub mod client;
#[cfg(feature = "http-server")]
pub mod server;

//! Transports move whole messages; they never look inside them.
//!
//! A transport splits into a [`FrameReader`] and a [`FrameWriter`]. The engine reads frames in
//! one task and writes them in another, so reading ahead and writing never wait on each other.
//! Writers buffer: the engine calls [`FrameWriter::flush`] only when its outgoing queue is empty,
//! which coalesces bursts of messages into few system calls.

use std::future::Future;
use std::io;

use bytes::Bytes;

#[cfg(feature = "child-process")]
pub mod child;
#[cfg(any(feature = "http-server", feature = "http-client"))]
pub mod http;
pub mod memory;
#[cfg(any(feature = "http-server", feature = "http-client"))]
pub(crate) mod pinned;
#[cfg(feature = "stdio")]
pub mod stdio;

/// The default largest message a transport accepts: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Something that carries MCP messages between two peers.
pub trait Transport: Send + 'static {
    /// The reading half.
    type Reader: FrameReader;
    /// The writing half.
    type Writer: FrameWriter;
    /// Splits the transport into its halves.
    fn split(self) -> (Self::Reader, Self::Writer);

    /// What carries the messages, by OpenTelemetry's `network.transport`: `"pipe"` for stdio and
    /// a child process's pipes, `"tcp"` for HTTP. `None` (the default) for one within the
    /// process, or when unknown. Handlers see it as
    /// [`RequestContext::network_transport`](crate::server::RequestContext::network_transport).
    fn network_transport(&self) -> Option<&'static str> {
        None
    }
}

/// The reading half of a transport.
pub trait FrameReader: Send + 'static {
    /// The next whole message (one JSON value, without framing).
    ///
    /// `Ok(None)` is a clean end of stream. [`ReadError::TooLarge`] is recoverable: the
    /// oversized message has been skipped and the next call reads the message after it.
    ///
    /// # Cancel safety
    /// Not cancel safe: the engine never drops this future before it completes.
    fn read_frame(&mut self) -> impl Future<Output = Result<Option<Bytes>, ReadError>> + Send;
}

/// The writing half of a transport.
pub trait FrameWriter: Send + 'static {
    /// Writes one whole message; it may stay buffered until [`flush`](Self::flush).
    fn write_frame(&mut self, frame: &[u8]) -> impl Future<Output = io::Result<()>> + Send;
    /// Writes one message given as consecutive parts (the engine sends a long result this way,
    /// so that it is not copied into its envelope first). By default the parts are joined and
    /// written with [`write_frame`](Self::write_frame); a writer that can send them as they are
    /// overrides this.
    fn write_frame_parts(&mut self, parts: &[&[u8]]) -> impl Future<Output = io::Result<()>> + Send {
        let joined = parts.concat();
        async move { self.write_frame(&joined).await }
    }
    /// Sends everything buffered to the peer.
    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send;
    /// Flushes and closes the writing direction: the peer sees end of stream.
    fn close(&mut self) -> impl Future<Output = io::Result<()>> + Send;
}

/// Why reading a message failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A message exceeded the configured limit and was skipped (recoverable).
    #[error("message of more than {limit} bytes skipped")]
    TooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
    /// The underlying stream failed (not recoverable).
    #[error("transport read failed")]
    Io(#[from] io::Error),
}

impl ReadError {
    /// True when reading may continue after this error.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, ReadError::TooLarge { .. })
    }
}

//! A connected in-process pair of transports, for tests and embedding.
//!
//! Messages cross as [`Bytes`] through bounded channels: no framing, no copies. When one side's
//! writer closes or is dropped, the other side reads end of stream.

use std::io;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::{FrameReader, FrameWriter, ReadError, Transport};

/// How many messages may wait in each direction before the writer waits.
pub const DEFAULT_CAPACITY: usize = 1024;

/// One end of an in-memory connection. Create both ends with [`pair`].
#[derive(Debug)]
pub struct MemoryTransport {
    rx: mpsc::Receiver<Bytes>,
    tx: mpsc::Sender<Bytes>,
}

/// Two connected transports with the default capacity.
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    pair_with_capacity(DEFAULT_CAPACITY)
}

/// Two connected transports; each direction holds at most `capacity` unread messages.
///
/// # Panics
/// If `capacity` is zero.
pub fn pair_with_capacity(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let (a_tx, b_rx) = mpsc::channel(capacity);
    let (b_tx, a_rx) = mpsc::channel(capacity);
    (MemoryTransport { rx: a_rx, tx: a_tx }, MemoryTransport { rx: b_rx, tx: b_tx })
}

/// The reading half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryReader(mpsc::Receiver<Bytes>);

/// The writing half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryWriter(Option<mpsc::Sender<Bytes>>);

impl Transport for MemoryTransport {
    type Reader = MemoryReader;
    type Writer = MemoryWriter;
    fn split(self) -> (MemoryReader, MemoryWriter) {
        (MemoryReader(self.rx), MemoryWriter(Some(self.tx)))
    }
}

impl FrameReader for MemoryReader {
    async fn read_frame(&mut self) -> Result<Option<Bytes>, ReadError> {
        Ok(self.0.recv().await)
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "in-memory peer closed")
}

impl FrameWriter for MemoryWriter {
    async fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        let tx = self.0.as_ref().ok_or_else(closed)?;
        tx.send(Bytes::copy_from_slice(frame)).await.map_err(|_| closed())
    }
    async fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    async fn close(&mut self) -> io::Result<()> {
        self.0 = None;
        Ok(())
    }
}

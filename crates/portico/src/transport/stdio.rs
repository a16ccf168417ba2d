//! Newline-delimited JSON over any byte stream: stdin/stdout, pipes, sockets.
//!
//! Each message is one line: the JSON text, which contains no raw newline, followed by `\n`.
//! [`LineReader`] tolerates `\r\n` line ends and skips blank lines; [`LineWriter`] writes `\n`.
//!
//! The reader reads ahead into one large buffer and hands out each message as a [`Bytes`] view
//! of that buffer, so a message is not copied on its way to the parser (while held, a message
//! keeps its block of the buffer alive: copy it if it is kept for long). A line longer than the
//! configured limit is never held in memory: its bytes are dropped as they arrive and the reader
//! reports [`ReadError::TooLarge`] once, then carries on with the next line.
//!
//! [`StdioTransport`] pairs the two halves; [`stdio`] is the server side of the MCP stdio
//! transport (this process's stdin and stdout).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_util::FutureExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::{DEFAULT_MAX_MESSAGE_SIZE, FrameReader, FrameWriter, ReadError, Transport};

/// How much a [`LineReader`] asks the stream for at a time, and how much a [`LineWriter`]
/// gathers before writing: 64 KiB.
pub const DEFAULT_BUFFER_SIZE: usize = 64 * 1024;

/// The room a [`LineReader`] waits on when its stream has nothing to read and no partial line
/// is buffered: 4 KiB, so that an idle connection does not hold a full read-ahead buffer.
const WAITING_ROOM: usize = 4 * 1024;

/// Reads newline-delimited messages from a byte stream.
///
/// Cancel safe: dropping a [`read_frame`](FrameReader::read_frame) future before it completes
/// loses no data; the next call carries on where it stopped.
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    buf: BytesMut,
    /// `buf[..scanned]` is known to hold no `\n`.
    scanned: usize,
    /// Dropping the rest of an oversized line, up to its `\n`.
    discarding: bool,
    eof: bool,
    max_message_size: usize,
    read_size: usize,
}

impl<R: AsyncRead + Unpin + Send + 'static> LineReader<R> {
    /// A reader with the default limit ([`DEFAULT_MAX_MESSAGE_SIZE`]) and read-ahead size
    /// ([`DEFAULT_BUFFER_SIZE`]).
    pub fn new(reader: R) -> Self {
        LineReader {
            reader,
            buf: BytesMut::new(),
            scanned: 0,
            discarding: false,
            eof: false,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            read_size: DEFAULT_BUFFER_SIZE,
        }
    }

    /// Sets the largest message accepted, in bytes, not counting the line end.
    pub fn with_max_message_size(mut self, limit: usize) -> Self {
        self.max_message_size = limit;
        self
    }

    /// Sets how many bytes to ask the stream for at a time (at least 1).
    pub fn with_buffer_size(mut self, size: usize) -> Self {
        self.read_size = size.max(1);
        self
    }

    /// The largest message accepted, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The capacity of the read-ahead buffer (for tests of the memory bound).
    #[doc(hidden)]
    pub fn buffered_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Reads the next non-blank line, without its line end.
    async fn next_line(&mut self) -> Result<Option<Bytes>, ReadError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + i;
                self.scanned = 0;
                if self.discarding {
                    self.buf.advance(end + 1);
                    self.discarding = false;
                    return Err(self.too_large());
                }
                let line = self.buf.split_to(end + 1).freeze();
                if line.len() > 4 * self.read_size {
                    // A large message grew the buffer, and the rest of it still shares that
                    // allocation: what is left moves to a buffer of its own, so that an idle
                    // connection does not keep the largest message's room for good.
                    self.buf = BytesMut::from(&self.buf[..]);
                }
                match self.accept(line.slice(..end)) {
                    Ok(Some(line)) => return Ok(Some(line)),
                    Ok(None) => continue,
                    Err(e) => return Err(e),
                }
            }
            // No line end in the buffer.
            if self.discarding {
                self.buf.clear();
            } else if self.buf.len() > self.max_message_size.saturating_add(1) {
                // Longer than the limit even if the last byte turns out to be a `\r`.
                self.buf.clear();
                self.discarding = true;
            }
            self.scanned = self.buf.len();
            if self.eof {
                return self.finish();
            }
            let got = self.read_more().await?;
            if got == 0 {
                self.eof = true;
            }
        }
    }

    /// Reads what the stream has into the buffer; the number of bytes read.
    ///
    /// The stream is read at once, with the full read-ahead size of room. Only when it has
    /// nothing yet, with no partial line buffered, does the reader wait, and it waits on a
    /// buffer of [`WAITING_ROOM`] (letting go of a larger one): the peer may stay quiet for long
    /// (an idle upstream), and an idle reader then holds 4 KiB rather than 64. The read that
    /// ends the wait is followed by full-size ones, so a burst is still read at full size.
    async fn read_more(&mut self) -> io::Result<usize> {
        self.buf.reserve(self.read_size);
        if let Some(read) = self.read_now() {
            return read;
        }
        // Nothing to read yet.
        let small = WAITING_ROOM.min(self.read_size);
        if self.buf.is_empty() && self.buf.capacity() > 2 * small {
            // Lines already handed out keep the old allocation until they are dropped.
            self.buf = BytesMut::with_capacity(small);
        }
        let room = self.buf.capacity() - self.buf.len();
        let got = self.reader.read_buf(&mut self.buf).await?;
        if got < room {
            return Ok(got);
        }
        // The wait ended on more than the small room took: the rest, at full size, at once.
        self.buf.reserve(self.read_size);
        match self.read_now() {
            Some(Ok(more)) => Ok(got + more),
            // What was read is kept; an error shows on the next read.
            Some(Err(_)) | None => Ok(got),
        }
    }

    /// One read into the buffer's room if the stream has something now; `None` if it has
    /// not (the pending read has taken nothing). Outside the task's budget: a read the budget
    /// alone holds back would look like an empty stream.
    fn read_now(&mut self) -> Option<io::Result<usize>> {
        tokio::task::unconstrained(self.reader.read_buf(&mut self.buf)).now_or_never()
    }

    /// At end of stream: the unterminated last line, if any.
    fn finish(&mut self) -> Result<Option<Bytes>, ReadError> {
        self.scanned = 0;
        if self.discarding {
            self.discarding = false;
            return Err(self.too_large());
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let line = self.buf.split().freeze();
        self.accept(line)
    }

    /// Strips a trailing `\r`, skips blank lines, enforces the limit.
    fn accept(&self, mut line: Bytes) -> Result<Option<Bytes>, ReadError> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max_message_size {
            return Err(self.too_large());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Ok(Some(line))
    }

    fn too_large(&self) -> ReadError {
        ReadError::TooLarge { limit: self.max_message_size }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> FrameReader for LineReader<R> {
    async fn read_frame(&mut self) -> Result<Option<Bytes>, ReadError> {
        self.next_line().await
    }
}

/// Writes newline-delimited messages to a byte stream, gathering them into few writes.
///
/// Frames are appended to an internal buffer, which goes to the stream when it holds at least
/// the buffer size ([`DEFAULT_BUFFER_SIZE`]) or on [`flush`](FrameWriter::flush).
///
/// Cancel safety: a frame is buffered before any waiting, and the buffer remembers how much of
/// it the stream has taken, so dropping a `write_frame` or `flush` future neither loses nor
/// repeats bytes; a later `flush` finishes the job.
#[derive(Debug)]
pub struct LineWriter<W> {
    /// `None` once closed.
    writer: Option<W>,
    buf: Vec<u8>,
    /// `buf[..written]` has been written already.
    written: usize,
    buffer_size: usize,
}

impl<W: AsyncWrite + Unpin + Send + 'static> LineWriter<W> {
    /// A writer with the default buffer size ([`DEFAULT_BUFFER_SIZE`]).
    pub fn new(writer: W) -> Self {
        LineWriter { writer: Some(writer), buf: Vec::new(), written: 0, buffer_size: DEFAULT_BUFFER_SIZE }
    }

    /// Sets how many bytes to gather before writing to the stream without being asked to flush.
    pub fn with_buffer_size(mut self, size: usize) -> Self {
        self.buffer_size = size.max(1);
        self
    }

    /// The underlying stream, unless the writer has been closed.
    pub fn get_ref(&self) -> Option<&W> {
        self.writer.as_ref()
    }

    /// Bytes buffered and not yet written to the stream.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.written
    }

    /// Writes out the buffer (without flushing the stream).
    async fn drain(&mut self) -> io::Result<()> {
        let writer = self.writer.as_mut().ok_or_else(closed)?;
        while self.written < self.buf.len() {
            let n = writer.write(&self.buf[self.written..]).await?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "stream accepted no bytes"));
            }
            self.written += n;
        }
        self.buf.clear();
        self.written = 0;
        // Do not keep a huge buffer around after one huge message.
        if self.buf.capacity() > 4 * self.buffer_size {
            self.buf.shrink_to(self.buffer_size);
        }
        Ok(())
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "line writer closed")
}

impl<W: AsyncWrite + Unpin + Send + 'static> FrameWriter for LineWriter<W> {
    /// Buffers `frame` and a `\n`. A frame containing a raw `\n` would break the framing and
    /// is refused with [`io::ErrorKind::InvalidInput`].
    async fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        self.write_frame_parts(&[frame]).await
    }

    /// As [`write_frame`](FrameWriter::write_frame) for the joined parts, without joining
    /// them: a part larger than the buffer is written as it is (copying it in first would only
    /// cost a copy, and a buffer that size); the line end follows with the next write.
    async fn write_frame_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        if self.writer.is_none() {
            return Err(closed());
        }
        if parts.iter().any(|p| memchr::memchr(b'\n', p).is_some()) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "frame contains a raw newline"));
        }
        for part in parts {
            if part.len() >= self.buffer_size {
                self.drain().await?;
                self.writer.as_mut().ok_or_else(closed)?.write_all(part).await?;
            } else {
                self.buf.extend_from_slice(part);
            }
        }
        self.buf.push(b'\n');
        if self.buffered() >= self.buffer_size {
            self.drain().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.drain().await?;
        self.writer.as_mut().ok_or_else(closed)?.flush().await
    }

    /// Flushes, shuts the stream down and drops it, so the peer sees end of stream even for
    /// streams whose shutdown does nothing (such as a child's stdin pipe). Closing twice is
    /// not an error.
    async fn close(&mut self) -> io::Result<()> {
        if self.writer.is_none() {
            return Ok(());
        }
        let flushed = self.flush().await;
        let shut = match self.writer.as_mut() {
            Some(w) => w.shutdown().await,
            None => Ok(()),
        };
        self.writer = None;
        self.buf = Vec::new();
        self.written = 0;
        flushed.and(shut)
    }
}

/// A [`Transport`] that frames messages as lines over a reader and a writer.
///
/// Works over any byte streams: stdin/stdout ([`stdio`]), a child's pipes, TCP or Unix
/// sockets (after `into_split`), or [`tokio::io::duplex`].
#[derive(Debug)]
pub struct StdioTransport<R, W> {
    reader: R,
    writer: W,
    max_message_size: usize,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading from `reader` and writing to `writer`, with the default limit
    /// ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub fn new(reader: R, writer: W) -> Self {
        StdioTransport { reader, writer, max_message_size: DEFAULT_MAX_MESSAGE_SIZE }
    }

    /// Sets the largest incoming message accepted, in bytes.
    pub fn with_max_message_size(mut self, limit: usize) -> Self {
        self.max_message_size = limit;
        self
    }
}

impl<R, W> Transport for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Reader = LineReader<R>;
    type Writer = LineWriter<W>;
    fn split(self) -> (LineReader<R>, LineWriter<W>) {
        let reader = LineReader::new(self.reader).with_max_message_size(self.max_message_size);
        (reader, LineWriter::new(self.writer))
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("pipe")
    }
}

/// The server side of the MCP stdio transport: messages in on stdin, out on stdout.
///
/// Nothing else in the process may write to stdout; log to stderr instead.
///
/// When stdin and stdout are pipes (the usual case: the client spawned this process), they are
/// read and written in non-blocking mode by the reactor, like sockets. Otherwise (a terminal, a
/// file) Tokio's stdin/stdout are used, which hand each read and write to a blocking thread
/// (about five times the CPU per message). Non-blocking mode is set on the pipes themselves, so
/// after the transport is done, blocking reads of `std::io::stdin` would see `WouldBlock`.
pub fn stdio() -> StdioTransport<Stdin, Stdout> {
    StdioTransport::new(Stdin::new(), Stdout::new())
}

/// The process's standard input, as non-blocking pipe when it is one.
#[derive(Debug)]
pub struct Stdin(StdinKind);

#[derive(Debug)]
enum StdinKind {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    Blocking(tokio::io::Stdin),
}

/// The process's standard output, as non-blocking pipe when it is one.
///
/// On a pipe, writes are non-blocking while the pipe has room. On a multi-thread runtime, a
/// write that finds the pipe full with more than 128 KiB still to go (a large
/// result) finishes in blocking mode instead, in `block_in_place`: the kernel wakes the writer
/// inside `write(2)` each time the reader drains the pipe, with no reactor round trip per
/// pipe-full (a 1 MiB result is 16 of them through a 64 KiB pipe). Small messages never take
/// that path.
#[derive(Debug)]
pub struct Stdout(StdoutKind);

#[derive(Debug)]
enum StdoutKind {
    #[cfg(unix)]
    Pipe(PipeOut),
    Blocking(tokio::io::Stdout),
}

/// A write larger than this that finds the pipe full finishes in blocking mode (see [`Stdout`]).
/// Above what a pipelined burst of small responses leaves after filling a 64 KiB pipe.
#[cfg(unix)]
const OFFLOAD_MIN: usize = 128 * 1024;

/// Standard output on a pipe.
#[cfg(unix)]
#[derive(Debug)]
struct PipeOut {
    /// `None` only if the descriptor was lost switching modes (every write then fails).
    sender: Option<tokio::net::unix::pipe::Sender>,
    /// Writes finished in blocking mode.
    blocking_writes: u64,
}

#[cfg(unix)]
impl PipeOut {
    fn sender(&mut self) -> io::Result<&mut tokio::net::unix::pipe::Sender> {
        self.sender.as_mut().ok_or_else(stdout_lost)
    }

    /// Writes all of `buf` in blocking mode, on this thread, without holding up the runtime
    /// (`block_in_place` hands this worker's other tasks to another thread meanwhile). No copy.
    fn write_blocking(&mut self, buf: &[u8]) -> io::Result<()> {
        use std::io::Write as _;
        let sender = self.sender.take().ok_or_else(stdout_lost)?;
        let mut file = std::fs::File::from(sender.into_blocking_fd()?);
        let written = tokio::task::block_in_place(|| file.write_all(buf));
        self.blocking_writes += 1;
        self.sender = Some(tokio::net::unix::pipe::Sender::from_owned_fd(file.into())?);
        written
    }
}

#[cfg(unix)]
fn stdout_lost() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdout was lost")
}

/// True on a multi-thread Tokio runtime, where `block_in_place` may be used.
#[cfg(unix)]
fn can_block_in_place() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

#[cfg(unix)]
impl AsyncWrite for PipeOut {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(this.sender()?).poll_write(cx, buf) {
            // The pipe is full and much is left: finish in blocking mode (see [`Stdout`]).
            Poll::Pending if buf.len() > OFFLOAD_MIN && can_block_in_place() => {
                Poll::Ready(this.write_blocking(buf).map(|()| buf.len()))
            }
            other => other,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.get_mut().sender()?).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.get_mut().sender()?).poll_shutdown(cx)
    }
}

impl Stdin {
    /// Standard input: a non-blocking pipe if it is a pipe, Tokio's stdin otherwise.
    ///
    /// # Panics
    /// Outside a Tokio runtime with I/O enabled, when stdin is a pipe.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            let pipe =
                std::io::stdin().as_fd().try_clone_to_owned().and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
            if let Ok(p) = pipe {
                return Stdin(StdinKind::Pipe(p));
            }
        }
        Stdin(StdinKind::Blocking(tokio::io::stdin()))
    }
}

impl Default for Stdin {
    fn default() -> Self {
        Self::new()
    }
}

impl Stdout {
    /// Standard output: a non-blocking pipe if it is a pipe, Tokio's stdout otherwise.
    ///
    /// # Panics
    /// Outside a Tokio runtime with I/O enabled, when stdout is a pipe.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            let pipe =
                std::io::stdout().as_fd().try_clone_to_owned().and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
            if let Ok(p) = pipe {
                return Stdout(StdoutKind::Pipe(PipeOut { sender: Some(p), blocking_writes: 0 }));
            }
        }
        Stdout(StdoutKind::Blocking(tokio::io::stdout()))
    }
}

impl Default for Stdout {
    fn default() -> Self {
        Self::new()
    }
}

impl AsyncRead for Stdin {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdinKind::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            StdinKind::Blocking(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutKind::Pipe(p) => Pin::new(p).poll_write(cx, buf),
            StdoutKind::Blocking(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutKind::Pipe(p) => Pin::new(p).poll_flush(cx),
            StdoutKind::Blocking(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutKind::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            StdoutKind::Blocking(s) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutKind::Pipe(p) => Pin::new(p.sender()?).poll_write_vectored(cx, bufs),
            StdoutKind::Blocking(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            #[cfg(unix)]
            StdoutKind::Pipe(p) => p.sender.as_ref().is_some_and(|s| s.is_write_vectored()),
            StdoutKind::Blocking(s) => s.is_write_vectored(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames written whole and in parts, small and larger than the buffer, come out as the
    /// same lines in order; a part with a raw newline is refused and nothing of it is written.
    #[tokio::test]
    async fn parts_make_the_same_lines_as_whole_frames() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut w = LineWriter::new(a).with_buffer_size(64);
        let big = format!(r#""{}""#, "x".repeat(200));
        w.write_frame(b"[1]").await.expect("writes");
        w.write_frame_parts(&[b"{\"a\":", big.as_bytes(), b"}"]).await.expect("writes");
        w.write_frame_parts(&[b"[", b"2", b"]"]).await.expect("writes");
        let refused = w.write_frame_parts(&[b"[", b"\n", b"]"]).await.expect_err("a raw newline");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
        w.write_frame(b"[3]").await.expect("writes");
        w.close().await.expect("closes");
        let mut out = String::new();
        b.read_to_string(&mut out).await.expect("reads");
        assert_eq!(out, format!("[1]\n{{\"a\":{big}}}\n[2]\n[3]\n"));
    }

    /// Writes a large frame between small ones to a pipe whose reader starts late (so the pipe
    /// is full when the large frame comes); returns what was read and the blocking writes.
    #[cfg(unix)]
    async fn through_a_full_pipe() -> (Vec<u8>, Vec<u8>, u64) {
        let (tx, mut rx) = tokio::net::unix::pipe::pipe().expect("a pipe");
        let out = Stdout(StdoutKind::Pipe(PipeOut { sender: Some(tx), blocking_writes: 0 }));
        let mut w = LineWriter::new(out);
        let reader = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let mut got = Vec::new();
            rx.read_to_end(&mut got).await.expect("reads");
            got
        });
        let big = format!(r#""{}""#, "y".repeat(1 << 20));
        w.write_frame(b"[1]").await.expect("writes");
        w.write_frame(big.as_bytes()).await.expect("writes");
        w.write_frame(b"[2]").await.expect("writes");
        w.flush().await.expect("flushes");
        let blocking = match &w.get_ref().expect("open").0 {
            StdoutKind::Pipe(p) => {
                assert!(p.sender.is_some(), "the pipe is back in non-blocking mode");
                p.blocking_writes
            }
            StdoutKind::Blocking(_) => unreachable!(),
        };
        w.write_frame(b"[3]").await.expect("writes");
        w.close().await.expect("closes");
        let got = reader.await.expect("the reader");
        (got, format!("[1]\n{big}\n[2]\n[3]\n").into_bytes(), blocking)
    }

    /// On a multi-thread runtime, a large frame that finds the pipe full finishes in blocking
    /// mode; what follows it is written after it, and the pipe is non-blocking again after.
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_frame_to_a_full_pipe_finishes_in_blocking_mode_in_order() {
        let (got, want, blocking) = through_a_full_pipe().await;
        assert_eq!(blocking, 1, "the rest of the large frame was written in blocking mode");
        assert_eq!(got.len(), want.len());
        assert!(got == want, "every byte, in order");
    }

    /// On a current-thread runtime (no `block_in_place`) the same frames go out non-blocking.
    #[cfg(unix)]
    #[tokio::test(flavor = "current_thread")]
    async fn on_a_current_thread_runtime_large_frames_stay_non_blocking() {
        let (got, want, blocking) = through_a_full_pipe().await;
        assert_eq!(blocking, 0);
        assert!(got == want, "every byte, in order");
    }

    /// The reader going away fails a blocking write cleanly (an error, no hang, no panic).
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocking_write_fails_when_the_reader_goes_away() {
        let (tx, rx) = tokio::net::unix::pipe::pipe().expect("a pipe");
        let mut w = LineWriter::new(Stdout(StdoutKind::Pipe(PipeOut { sender: Some(tx), blocking_writes: 0 })));
        let big = format!(r#""{}""#, "z".repeat(1 << 20));
        let closer = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            drop(rx);
        });
        let result = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            w.write_frame(big.as_bytes()).await?;
            w.flush().await
        })
        .await
        .expect("no hang");
        closer.await.expect("closer");
        assert_eq!(result.expect_err("the reader is gone").kind(), io::ErrorKind::BrokenPipe);
    }
}

//! Newline-delimited framing over in-process byte streams.
#![cfg(feature = "stdio")]

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use portico::transport::stdio::{LineReader, LineWriter, StdioTransport};
use portico::transport::{FrameReader, FrameWriter, ReadError, Transport};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf, duplex};

const LIMIT: Duration = Duration::from_secs(60);

async fn bounded<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut).await.expect("test took too long")
}

async fn next<R: FrameReader>(reader: &mut R) -> Option<Bytes> {
    bounded(reader.read_frame()).await.expect("read failed")
}

/// Reads frames until end of stream.
async fn read_all<R: FrameReader>(reader: &mut R) -> Vec<Bytes> {
    let mut frames = Vec::new();
    while let Some(frame) = next(reader).await {
        frames.push(frame);
    }
    frames
}

/// Writes `data` to one end of a duplex pipe (in a task) and reads frames from the other.
async fn frames_of(data: Vec<u8>, pipe_size: usize) -> Vec<Bytes> {
    let (mut tx, rx) = duplex(pipe_size);
    let writer = tokio::spawn(async move {
        tx.write_all(&data).await.expect("write");
        tx.shutdown().await.expect("shutdown");
    });
    let frames = read_all(&mut LineReader::new(rx)).await;
    bounded(writer).await.expect("writer task");
    frames
}

#[tokio::test]
async fn many_messages_in_one_write_are_split() {
    let mut data = Vec::new();
    for i in 0..5000 {
        data.extend_from_slice(format!("{{\"jsonrpc\":\"2.0\",\"id\":{i}}}\n").as_bytes());
    }
    let frames = frames_of(data, 1 << 20).await;
    assert_eq!(frames.len(), 5000);
    for (i, frame) in frames.iter().enumerate() {
        assert_eq!(frame, format!("{{\"jsonrpc\":\"2.0\",\"id\":{i}}}").as_bytes());
    }
}

#[tokio::test]
async fn message_split_across_small_writes_is_reassembled() {
    let message = format!("{{\"text\":\"{}\"}}", "a".repeat(10_000));
    let (mut tx, rx) = duplex(64);
    let sent = message.clone();
    let writer = tokio::spawn(async move {
        for chunk in format!("{sent}\n{sent}\n").as_bytes().chunks(7) {
            tx.write_all(chunk).await.expect("write");
            tokio::task::yield_now().await;
        }
    });
    let frames = read_all(&mut LineReader::new(rx)).await;
    bounded(writer).await.expect("writer task");
    assert_eq!(frames, vec![message.as_bytes(), message.as_bytes()]);
}

#[tokio::test]
async fn crlf_blank_lines_and_unterminated_last_line() {
    let data = b"\n{\"a\":1}\r\n  \r\n\r\n\t\n{\"b\":2}\n\n {\"c\":3} \r\n{\"d\":4}".to_vec();
    let frames = frames_of(data, 3).await;
    assert_eq!(frames, vec![&b"{\"a\":1}"[..], b"{\"b\":2}", b" {\"c\":3} ", b"{\"d\":4}"]);
}

#[tokio::test]
async fn unterminated_last_line_with_cr() {
    let frames = frames_of(b"{\"a\":1}\n{\"b\":2}\r".to_vec(), 1024).await;
    assert_eq!(frames, vec![&b"{\"a\":1}"[..], b"{\"b\":2}"]);
}

#[tokio::test]
async fn empty_stream_is_end_of_stream() {
    assert!(frames_of(Vec::new(), 16).await.is_empty());
    assert!(frames_of(b"\n\r\n \n".to_vec(), 16).await.is_empty());
}

/// A stream made of parts, some generated lazily, so a huge message costs no memory here.
struct Generated {
    parts: Vec<Part>,
}

enum Part {
    Bytes(&'static [u8]),
    Repeat(u8, usize),
}

impl AsyncRead for Generated {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        static FILL: [u8; 64 * 1024] = [b'x'; 64 * 1024];
        let Some(part) = self.parts.first_mut() else {
            return Poll::Ready(Ok(()));
        };
        match part {
            Part::Bytes(bytes) => {
                let n = bytes.len().min(buf.remaining());
                buf.put_slice(&bytes[..n]);
                *bytes = &bytes[n..];
                if bytes.is_empty() {
                    self.parts.remove(0);
                }
            }
            Part::Repeat(byte, left) => {
                let n = (*left).min(buf.remaining()).min(FILL.len());
                if *byte == b'x' {
                    buf.put_slice(&FILL[..n]);
                } else {
                    buf.put_slice(&vec![*byte; n]);
                }
                *left -= n;
                if *left == 0 {
                    self.parts.remove(0);
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A large message grows the read buffer; once it is read, an idle reader does not keep that
/// room (an upstream that once answered a large `tools/list` would hold it for good).
#[tokio::test]
async fn a_large_message_does_not_keep_its_buffer() {
    const MIB: usize = 1024 * 1024;
    let (mut tx, rx) = duplex(256 * 1024);
    let mut reader = LineReader::new(rx).with_max_message_size(4 * MIB);
    let writer = tokio::spawn(async move {
        let mut big = vec![b'x'; 2 * MIB];
        big.extend_from_slice(b"\n{\"small\":1}\n");
        tx.write_all(&big).await.expect("write");
        tx
    });
    let large = next(&mut reader).await.expect("the large line");
    assert_eq!(large.len(), 2 * MIB);
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"small\":1}"[..]));
    drop(large);
    let capacity = reader.buffered_capacity();
    assert!(capacity <= 4 * portico::transport::stdio::DEFAULT_BUFFER_SIZE, "the reader kept {capacity} bytes");
    drop(bounded(writer).await.expect("writer task"));
}

/// Records the room each read is offered: what a reader holds while it waits.
struct Offered<R> {
    inner: R,
    last: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Offered<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.last.store(buf.remaining(), Ordering::Relaxed);
        self.most.fetch_max(buf.remaining(), Ordering::Relaxed);
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

/// An idle peer (an upstream between calls) leaves the reader waiting on a small buffer, not
/// its full read-ahead size; a burst still gets full-size reads, and no byte is lost either way.
#[tokio::test]
async fn an_idle_reader_waits_on_a_small_buffer_and_a_burst_reads_at_full_size() {
    use portico::transport::stdio::DEFAULT_BUFFER_SIZE;
    let (mut tx, rx) = duplex(1024 * 1024);
    let (last, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut reader = LineReader::new(Offered { inner: rx, last: last.clone(), most: most.clone() });
    for round in 0..4u32 {
        // A burst of 300 KB, then nothing: written before the reader reads (even rounds) or
        // while it waits (odd rounds, so the wait ends on more than its small room takes).
        let lines: Vec<String> =
            (0..300).map(|i| format!("{{\"round\":{round},\"i\":{i},\"pad\":\"{}\"}}", "p".repeat(1000))).collect();
        let burst = lines.join("\n") + "\n";
        most.store(0, Ordering::Relaxed);
        let first = if round % 2 == 0 {
            tx.write_all(burst.as_bytes()).await.expect("write");
            next(&mut reader).await
        } else {
            let write = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                tx.write_all(burst.as_bytes()).await.expect("write");
            };
            tokio::join!(next(&mut reader), write).0
        };
        assert_eq!(first.as_deref(), Some(lines[0].as_bytes()), "round {round}");
        for want in &lines[1..] {
            assert_eq!(next(&mut reader).await.as_deref(), Some(want.as_bytes()), "round {round}");
        }
        assert!(most.load(Ordering::Relaxed) >= DEFAULT_BUFFER_SIZE, "the burst was read in small pieces");
        // Idle: the next read waits (and is dropped: reads are cancel safe).
        let idle = tokio::time::timeout(Duration::from_millis(50), reader.read_frame()).await;
        assert!(idle.is_err(), "nothing was written, yet a frame came");
        let waiting = last.load(Ordering::Relaxed);
        assert!(waiting <= 8 * 1024, "an idle reader waits on {waiting} bytes of room");
        assert!(reader.buffered_capacity() <= 8 * 1024, "an idle reader holds {}", reader.buffered_capacity());
    }
    // A line that arrives in pieces while idle is read whole.
    tx.write_all(b"{\"a\":").await.expect("write");
    let piece = tokio::time::timeout(Duration::from_millis(50), reader.read_frame()).await;
    assert!(piece.is_err(), "half a line is not a frame");
    tx.write_all(b"1}\n").await.expect("write");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"a\":1}"[..]));
}

#[tokio::test]
async fn oversized_line_is_skipped_without_buffering_it() {
    const MIB: usize = 1024 * 1024;
    let peak_before = peak_rss_kib();
    let stream = Generated {
        parts: vec![
            Part::Bytes(b"{\"before\":1}\n"),
            Part::Bytes(b"{\"huge\":\""),
            Part::Repeat(b'x', 100 * MIB),
            Part::Bytes(b"\"}\r\n{\"after\":2}\n"),
            // Just over the limit, seen whole in the buffer before its line end.
            Part::Repeat(b'y', MIB + 1),
            Part::Bytes(b"\n"),
            // Exactly at the limit, with CRLF: accepted.
            Part::Repeat(b'z', MIB),
            Part::Bytes(b"\r\n"),
            // Oversized and unterminated at end of stream.
            Part::Repeat(b'x', 3 * MIB),
        ],
    };
    let mut reader = LineReader::new(stream).with_max_message_size(MIB);
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"before\":1}"[..]));
    let err = bounded(reader.read_frame()).await.expect_err("too large");
    assert!(matches!(err, ReadError::TooLarge { limit: MIB }), "{err:?}");
    assert!(err.is_recoverable());
    let capacity = reader.buffered_capacity();
    assert!(capacity < 4 * MIB, "buffer grew to {capacity} bytes");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"after\":2}"[..]));

    let err = bounded(reader.read_frame()).await.expect_err("too large");
    assert!(matches!(err, ReadError::TooLarge { limit: MIB }), "{err:?}");
    let at_limit = next(&mut reader).await.expect("line at the limit");
    assert_eq!(at_limit.len(), MIB);
    assert!(at_limit.iter().all(|&b| b == b'z'));

    let err = bounded(reader.read_frame()).await.expect_err("too large");
    assert!(matches!(err, ReadError::TooLarge { limit: MIB }), "{err:?}");
    assert!(next(&mut reader).await.is_none());
    assert!(next(&mut reader).await.is_none());
    assert!(reader.buffered_capacity() < 4 * MIB);

    if let (Some(before), Some(after)) = (peak_before, peak_rss_kib()) {
        let grown_mib = (after.saturating_sub(before)) / 1024;
        assert!(grown_mib < 50, "peak memory grew by {grown_mib} MiB");
    }
}

/// Accepts everything and counts the `poll_write` calls.
#[derive(Clone, Default)]
struct Counting {
    writes: Arc<AtomicUsize>,
    flushes: Arc<AtomicUsize>,
    bytes: Arc<std::sync::Mutex<Vec<u8>>>,
}

impl AsyncWrite for Counting {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.bytes.lock().expect("lock").extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.flushes.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn writer_coalesces_frames() {
    let sink = Counting::default();
    let mut writer = LineWriter::new(sink.clone());
    let mut expected = Vec::new();
    for i in 0..1000 {
        let frame = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"n\":{i}}}}}");
        writer.write_frame(frame.as_bytes()).await.expect("write");
        expected.extend_from_slice(frame.as_bytes());
        expected.push(b'\n');
    }
    writer.flush().await.expect("flush");
    let writes = sink.writes.load(Ordering::SeqCst);
    assert!(writes <= 3, "{writes} writes for {} bytes", expected.len());
    assert_eq!(sink.flushes.load(Ordering::SeqCst), 1);
    assert_eq!(*sink.bytes.lock().expect("lock"), expected);
    assert_eq!(writer.buffered(), 0);

    // Nothing reaches the stream before a flush while the buffer is small.
    writer.write_frame(b"{}").await.expect("write");
    assert_eq!(sink.writes.load(Ordering::SeqCst), writes);
    writer.flush().await.expect("flush");
    assert_eq!(sink.writes.load(Ordering::SeqCst), writes + 1);
}

#[tokio::test]
async fn large_frames_bypass_the_buffer_and_keep_the_order() {
    let sink = Counting::default();
    let mut writer = LineWriter::new(sink.clone()).with_buffer_size(1024);
    let big = format!("{{\"blob\":\"{}\"}}", "x".repeat(10_000));
    let mut expected = Vec::new();
    for frame in [b"{\"a\":1}".as_slice(), big.as_bytes(), b"{\"b\":2}", big.as_bytes(), big.as_bytes(), b"{}"] {
        writer.write_frame(frame).await.expect("write");
        expected.extend_from_slice(frame);
        expected.push(b'\n');
    }
    writer.flush().await.expect("flush");
    assert_eq!(*sink.bytes.lock().expect("lock"), expected, "every frame whole, in order, one per line");
    assert_eq!(writer.buffered(), 0, "nothing left behind after the flush");
    assert!(sink.writes.load(Ordering::SeqCst) <= 8);
}

#[tokio::test]
async fn writer_refuses_raw_newline_and_writes_after_close() {
    let mut writer = LineWriter::new(Counting::default());
    let err = writer.write_frame(b"{\"a\":\n1}").await.expect_err("raw newline");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert_eq!(writer.buffered(), 0);
    writer.close().await.expect("close");
    writer.close().await.expect("close twice");
    let err = writer.write_frame(b"{}").await.expect_err("closed");
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn close_gives_end_of_stream_to_the_peer() {
    let (a, b) = duplex(16);
    let mut writer = LineWriter::new(a);
    let mut reader = LineReader::new(b);
    let frames: Vec<String> = (0..100).map(|i| format!("{{\"i\":{i}}}")).collect();
    let sent = frames.clone();
    let task = tokio::spawn(async move {
        for frame in &sent {
            writer.write_frame(frame.as_bytes()).await.expect("write");
        }
        writer.close().await.expect("close");
        writer
    });
    let got = read_all(&mut reader).await;
    assert_eq!(got, frames.iter().map(|f| f.as_bytes()).collect::<Vec<_>>());
    let writer = bounded(task).await.expect("writer task");
    assert!(writer.get_ref().is_none());
}

#[tokio::test]
async fn stdio_transport_round_trip_over_duplex() {
    let (client_io, server_io) = duplex(4096);
    let (cr, cw) = tokio::io::split(client_io);
    let (sr, sw) = tokio::io::split(server_io);
    let (mut client_rx, mut client_tx) = StdioTransport::new(cr, cw).split();
    let (mut server_rx, mut server_tx) = StdioTransport::new(sr, sw).with_max_message_size(64).split();
    assert_eq!(server_rx.max_message_size(), 64);

    let server = tokio::spawn(async move {
        // Echo every message back; report oversized ones as a message of their own.
        loop {
            match server_rx.read_frame().await {
                Ok(Some(frame)) => server_tx.write_frame(&frame).await.expect("echo"),
                Ok(None) => break,
                Err(ReadError::TooLarge { limit }) => {
                    server_tx.write_frame(format!("{{\"tooLarge\":{limit}}}").as_bytes()).await.expect("write");
                }
                Err(e) => panic!("{e}"),
            }
            server_tx.flush().await.expect("flush");
        }
        server_tx.close().await.expect("close");
    });

    let big = format!("{{\"pad\":\"{}\"}}", "p".repeat(100));
    for frame in ["{\"id\":1}", big.as_str(), "{\"id\":2}"] {
        client_tx.write_frame(frame.as_bytes()).await.expect("write");
    }
    client_tx.flush().await.expect("flush");
    assert_eq!(next(&mut client_rx).await.as_deref(), Some(&b"{\"id\":1}"[..]));
    assert_eq!(next(&mut client_rx).await.as_deref(), Some(&b"{\"tooLarge\":64}"[..]));
    assert_eq!(next(&mut client_rx).await.as_deref(), Some(&b"{\"id\":2}"[..]));
    client_tx.close().await.expect("close");
    assert!(next(&mut client_rx).await.is_none());
    bounded(server).await.expect("server task");
}

#[tokio::test]
async fn reader_is_cancel_safe() {
    let (mut tx, rx) = duplex(1024);
    let mut reader = LineReader::new(rx);
    tx.write_all(b"{\"par").await.expect("write");
    // Give up on a read that is waiting for the rest of the line.
    let timed_out = tokio::time::timeout(Duration::from_millis(20), reader.read_frame()).await;
    assert!(timed_out.is_err());
    tx.write_all(b"tial\":true}\n").await.expect("write");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"partial\":true}"[..]));
    drop(tx);
    assert!(next(&mut reader).await.is_none());
    // Reading after end of stream keeps saying so.
    assert!(next(&mut reader).await.is_none());
}

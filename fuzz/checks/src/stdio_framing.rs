//! The stdio transport's line framing (`portico::transport::stdio`): the same bytes read in
//! one piece or split into arbitrary reads give the same messages, which are exactly those of
//! a naive line splitter; lines over the limit are reported and not held in memory; what was
//! read, written with the line writer and read again is unchanged.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use portico::transport::stdio::{LineReader, LineWriter};
use portico::transport::{FrameReader, FrameWriter, ReadError};
use tokio::io::{AsyncRead, ReadBuf};

/// A stream that hands out `data` in reads of the given sizes (then the rest at once).
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    next: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let want = this.sizes.get(this.next).copied().unwrap_or(usize::MAX);
        this.next += 1;
        let n = want.min(buf.remaining()).min(this.data.len() - this.pos);
        buf.put_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

#[derive(Debug, PartialEq)]
enum Item {
    Line(Vec<u8>),
    TooLarge,
}

fn read_all(data: &[u8], sizes: Vec<usize>, limit: usize, buffer: usize) -> Vec<Item> {
    let stream = Chunked { data: data.to_vec(), pos: 0, sizes, next: 0 };
    let mut reader = LineReader::new(stream).with_max_message_size(limit).with_buffer_size(buffer);
    let mut out = Vec::new();
    crate::block_on(async {
        loop {
            let r = reader.read_frame().await;
            // The reader never holds an oversized line: its buffer stays near the limit plus
            // one read, whatever the input.
            let cap = reader.buffered_capacity();
            assert!(
                cap <= limit.saturating_add(buffer).saturating_mul(4).saturating_add(4096),
                "buffer of {cap} bytes for a limit of {limit}"
            );
            match r {
                Ok(Some(line)) => out.push(Item::Line(line.to_vec())),
                Ok(None) => break,
                Err(ReadError::TooLarge { .. }) => out.push(Item::TooLarge),
                Err(e) => panic!("reading from memory failed: {e}"),
            }
        }
    });
    out
}

/// The naive splitter: lines end at `\n`, a final unterminated line counts, one trailing `\r`
/// is dropped, a line over the limit is reported, blank lines are skipped.
fn reference(data: &[u8], limit: usize) -> Vec<Item> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if parts.last().is_some_and(|l| l.is_empty()) {
        parts.pop();
    }
    for mut line in parts {
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.len() > limit {
            out.push(Item::TooLarge);
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Item::Line(line.to_vec()));
        }
    }
    out
}

/// The check.
pub fn check(data: &[u8]) {
    let mut b = crate::Bytes(data);
    let limit = [1, 2, 8, 64, 1024, 1 << 20][b.below(6)];
    let buffer = 1 + b.below(96);
    let mut sizes = Vec::new();
    for _ in 0..b.below(16) {
        sizes.push(1 + b.below(32)); // a read of 0 bytes is the end of the stream
    }
    let data = b.rest();
    let want = reference(data, limit);
    let joined = read_all(data, Vec::new(), limit, 64 * 1024);
    assert_eq!(joined, want, "one read");
    let split = read_all(data, sizes, limit, buffer);
    assert_eq!(split, want, "split reads");

    // Written back and read again: the same lines.
    let lines: Vec<Vec<u8>> = want
        .into_iter()
        .filter_map(|i| match i {
            // A line ending in `\r` loses it when read back (read as a CRLF line end); JSON
            // text needs none, and the writer is not asked to keep it.
            Item::Line(l) if l.last() != Some(&b'\r') => Some(l),
            _ => None,
        })
        .collect();
    let written = crate::block_on(async {
        let mut w = LineWriter::new(Vec::new()).with_buffer_size(buffer);
        for l in &lines {
            w.write_frame(l).await.expect("a line without a newline is written");
        }
        w.flush().await.expect("flush");
        w.get_ref().cloned().expect("not closed")
    });
    let again = read_all(&written, Vec::new(), usize::MAX, 64 * 1024);
    let expected: Vec<Item> = lines.into_iter().map(Item::Line).collect();
    assert_eq!(again, expected, "written and read again");
}

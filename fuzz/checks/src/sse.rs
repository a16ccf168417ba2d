//! The HTTP client's SSE reader and `Last-Event-ID` handling: a body read in one piece or split
//! into arbitrary network reads gives the same events and the same resumption cursor; a message
//! event is never blank; an event id a Portico server writes (`STREAM-SEQ`) parses back to its
//! numbers, and whatever the server parses as an id prints back as the same numbers.

use bytes::Bytes;
use portico::fuzzing::{SseEvent, parse_event_id, sse_events};

fn chunks(body: &[u8], sizes: &[usize]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut rest = body;
    for &n in sizes {
        let n = n.min(rest.len());
        out.push(Bytes::copy_from_slice(&rest[..n]));
        rest = &rest[n..];
    }
    if !rest.is_empty() {
        out.push(Bytes::copy_from_slice(rest));
    }
    out
}

/// The check.
pub fn check(data: &[u8]) {
    let mut b = crate::Bytes(data);
    let limit = [16, 256, 1 << 20][b.below(3)];
    let mut sizes = Vec::new();
    for _ in 0..b.below(16) {
        sizes.push(1 + b.below(24));
    }
    let body = b.rest();
    let one = crate::block_on(sse_events(vec![Bytes::copy_from_slice(body)], limit));
    let split = crate::block_on(sse_events(chunks(body, &sizes), limit));
    // The size limit counts bytes per network read, so only streams that stayed within it
    // must agree exactly.
    if one.iter().chain(&split).all(|s| s.event.is_ok()) {
        assert_eq!(one, split, "the same body read in other pieces gives other events");
    }
    for step in one.iter().chain(&split) {
        if let Ok(SseEvent::Message(data)) = &step.event {
            assert!(!data.iter().all(u8::is_ascii_whitespace), "a blank message event");
        }
        if let Some(id) = &step.last_id
            && let Some((stream, seq)) = parse_event_id(id)
        {
            assert_eq!(parse_event_id(&format!("{stream}-{seq}")), Some((stream, seq)));
        }
    }
    // Ids as the server writes them.
    let mut n = crate::Bytes(body);
    let (stream, seq) = (u64::from(n.u8()) << (n.u8() % 57), u64::from(n.u8()) << (n.u8() % 57));
    assert_eq!(parse_event_id(&format!("{stream}-{seq}")), Some((stream, seq)));
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = parse_event_id(text);
    }
}

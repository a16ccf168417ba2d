//! Reading SSE bodies: events parsed by `sse-stream`, bounded in size, with the last event id
//! and `retry` kept for resumption.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use sse_stream::{Sse, SseByteStream};

use super::reply::Reply;

type EventStream = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// The events of one SSE response.
pub(super) struct Events {
    inner: EventStream,
    /// Bytes received since the last event: bounds an event that never ends.
    pending: Arc<AtomicUsize>,
    /// The largest event's data accepted.
    limit: usize,
    /// Set when an event went past `limit`: the stream ends, and resuming it would not help.
    overflowed: Arc<AtomicBool>,
}

/// Where a stream got to: what resumption needs.
#[derive(Debug, Default, Clone)]
pub(super) struct Cursor {
    pub last_id: Option<String>,
    pub retry: Option<Duration>,
}

/// One event of interest.
#[derive(Debug)]
pub(super) enum Event {
    /// A JSON-RPC message (a `message` event, or one without a type).
    Message(Bytes),
    /// Another event type with its data (`endpoint` in the legacy transport).
    Other { event: String, data: String },
    /// Only metadata (an id, a retry) or empty data: a priming event.
    Empty,
}

impl Events {
    /// The events of `resp`; an event larger than `limit` bytes ends the stream with an error.
    pub(super) fn new(resp: Reply, limit: usize) -> Self {
        let pending = Arc::new(AtomicUsize::new(0));
        let counter = pending.clone();
        let overflowed = Arc::new(AtomicBool::new(false));
        let over = overflowed.clone();
        let bytes = resp.into_chunks().map(move |chunk| {
            let chunk = chunk.map_err(io::Error::other)?;
            let seen = counter.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            if seen > limit.saturating_add(64 * 1024) {
                over.store(true, Ordering::Relaxed);
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("an SSE event exceeds {limit} bytes")));
            }
            Ok::<Bytes, io::Error>(chunk)
        });
        Events { inner: Box::pin(SseByteStream::new(bytes)), pending, limit, overflowed }
    }

    /// Whether the stream ended because an event went past the limit.
    pub(super) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// The next event, updating `cursor`; `None` at the end of the stream, `Err` when it broke.
    ///
    /// # Cancel safety
    /// Cancel safe: an event is consumed only when the future completes.
    pub(super) async fn next(&mut self, cursor: &mut Cursor) -> Option<Result<Event, String>> {
        let item = self.inner.next().await?;
        self.pending.store(0, Ordering::Relaxed);
        let sse = match item {
            Ok(sse) => sse,
            Err(e) => return Some(Err(format!("the event stream broke: {e}"))),
        };
        if let Some(id) = sse.id {
            cursor.last_id = Some(id);
        }
        if let Some(ms) = sse.retry {
            cursor.retry = Some(Duration::from_millis(ms));
        }
        let data = match sse.data {
            Some(d) if !d.trim().is_empty() => d,
            _ => return Some(Ok(Event::Empty)),
        };
        // The stream's own bound leaves room for the next event's start in the same chunk; the
        // event itself is held to the limit.
        if data.len() > self.limit {
            self.overflowed.store(true, Ordering::Relaxed);
            return Some(Err(format!("an SSE event exceeds {} bytes", self.limit)));
        }
        Some(Ok(match sse.event.as_deref() {
            None | Some("") | Some("message") => Event::Message(Bytes::from(data)),
            Some(other) => Event::Other { event: other.to_owned(), data },
        }))
    }
}

/// Reads an SSE body delivered in `chunks` the way a response's body is read, for the fuzz
/// targets: every event (or the error ending the stream) and the resumption cursor after each.
#[cfg(feature = "fuzzing")]
pub(crate) async fn fuzz_events(chunks: Vec<Bytes>, limit: usize) -> Vec<crate::fuzzing::SseStep> {
    use crate::fuzzing::{SseEvent, SseStep};
    let stream = futures_util::stream::iter(chunks.into_iter().map(Ok::<Bytes, io::Error>));
    let resp = Reply::from(reqwest::Response::from(http::Response::new(reqwest::Body::wrap_stream(stream))));
    let mut events = Events::new(resp, limit);
    let mut cursor = Cursor::default();
    let mut steps = Vec::new();
    while let Some(item) = events.next(&mut cursor).await {
        let event = match item {
            Ok(Event::Message(data)) => Ok(SseEvent::Message(data.to_vec())),
            Ok(Event::Other { event, data }) => Ok(SseEvent::Other { event, data }),
            Ok(Event::Empty) => Ok(SseEvent::Empty),
            Err(e) => Err(e),
        };
        let stop = event.is_err();
        steps.push(SseStep { event, last_id: cursor.last_id.clone(), retry: cursor.retry });
        if stop {
            break;
        }
    }
    steps
}

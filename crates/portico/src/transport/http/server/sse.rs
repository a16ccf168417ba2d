//! Server-sent events: encoding, and the response body that streams them.

use std::convert::Infallible;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::mpsc;

/// One item of an SSE response.
#[derive(Debug, Clone)]
pub(crate) enum SseItem {
    /// A JSON-RPC message, with its event id when the stream is resumable.
    Message { id: Option<String>, data: Bytes },
    /// The priming event: an id and empty data, and the reconnection delay.
    Prime { id: String, retry_ms: Option<u64> },
    /// The legacy (2024-11-05) `endpoint` event: where to POST messages.
    Endpoint(String),
    /// The stream is complete.
    End,
}

pub(crate) fn encode(item: &SseItem) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    match item {
        SseItem::Message { id, data } => {
            b.reserve(data.len() + 40);
            if let Some(id) = id {
                b.put_slice(b"id: ");
                b.put_slice(id.as_bytes());
                b.put_u8(b'\n');
            }
            b.put_slice(b"event: message\ndata: ");
            b.put_slice(data);
            b.put_slice(b"\n\n");
        }
        SseItem::Prime { id, retry_ms } => {
            b.put_slice(b"id: ");
            b.put_slice(id.as_bytes());
            b.put_u8(b'\n');
            if let Some(ms) = retry_ms {
                b.put_slice(format!("retry: {ms}\n").as_bytes());
            }
            b.put_slice(b"data: \n\n");
        }
        SseItem::Endpoint(url) => {
            b.put_slice(b"event: endpoint\ndata: ");
            b.put_slice(url.as_bytes());
            b.put_slice(b"\n\n");
        }
        SseItem::End => {}
    }
    b.freeze()
}

/// Cancels a request when its response stream is dropped before it completed (a closed
/// stream is a cancellation in 2026-07-28).
pub(crate) struct CancelOnDrop(pub Option<crate::rpc::link::Cancel>);

impl CancelOnDrop {
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// Runs when the body is dropped (the client went away or the stream ended).
pub(crate) struct OnDrop(pub Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// The response body: items from `rx` as SSE, a comment every `keep_alive`, until `End`.
pub(crate) fn body(
    rx: mpsc::Receiver<SseItem>,
    keep_alive: Duration,
    mut cancel: CancelOnDrop,
    on_drop: OnDrop,
) -> axum::body::Body {
    let state = (rx, Some((cancel_take(&mut cancel), on_drop)));
    let stream = futures_util::stream::unfold(state, move |(mut rx, guards)| async move {
        let guards = guards?;
        let item = tokio::select! {
            item = rx.recv() => item,
            _ = tokio::time::sleep(keep_alive) => return Some((Ok::<_, Infallible>(Bytes::from_static(b": keep-alive\n\n")), (rx, Some(guards)))),
        };
        match item {
            Some(SseItem::End) | None => {
                let (mut cancel, on_drop) = guards;
                // Completed (or the producer is gone): nothing to cancel.
                if matches!(item, Some(SseItem::End)) {
                    cancel.disarm();
                }
                drop((cancel, on_drop));
                None
            }
            Some(item) => Some((Ok(encode(&item)), (rx, Some(guards)))),
        }
    });
    axum::body::Body::from_stream(stream)
}

fn cancel_take(c: &mut CancelOnDrop) -> CancelOnDrop {
    CancelOnDrop(c.0.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_framed() {
        let m = encode(&SseItem::Message { id: Some("3-1".into()), data: Bytes::from_static(b"{\"a\":1}") });
        assert_eq!(&m[..], b"id: 3-1\nevent: message\ndata: {\"a\":1}\n\n");
        let p = encode(&SseItem::Prime { id: "3-0".into(), retry_ms: Some(500) });
        assert_eq!(&p[..], b"id: 3-0\nretry: 500\ndata: \n\n");
    }
}

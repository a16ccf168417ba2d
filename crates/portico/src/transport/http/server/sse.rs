//! Server-sent events: encoding, and the response body that streams them.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// The queue of one SSE response, bounded in messages and in bytes: a reader that does not
/// read cannot make the server hold more than `bytes` of its messages (one message larger than
/// that is let through alone).
pub(crate) fn channel(messages: usize, bytes: usize) -> (SseSender, SseReceiver) {
    let (tx, rx) = mpsc::channel(messages.max(1));
    let most = u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX);
    let max = u32::try_from(bytes).unwrap_or(u32::MAX).clamp(1, most);
    (SseSender { tx, budget: Arc::new(Semaphore::new(max as usize)), max }, SseReceiver(rx))
}

/// The sending side of [`channel`].
#[derive(Clone, Debug)]
pub(crate) struct SseSender {
    tx: mpsc::Sender<(SseItem, Option<OwnedSemaphorePermit>)>,
    budget: Arc<Semaphore>,
    max: u32,
}

/// The queue is full (in messages or bytes), or its reader is gone.
#[derive(Debug)]
pub(crate) struct Refused;

impl SseSender {
    /// What `item` takes of the byte budget.
    fn cost(&self, item: &SseItem) -> u32 {
        match item {
            SseItem::Message { data, .. } => u32::try_from(data.len()).unwrap_or(u32::MAX).clamp(1, self.max),
            _ => 0,
        }
    }

    /// Queues `item` if it fits now.
    pub(crate) fn try_send(&self, item: SseItem) -> Result<(), Refused> {
        let permit = match self.cost(&item) {
            0 => None,
            n => Some(self.budget.clone().try_acquire_many_owned(n).map_err(|_| Refused)?),
        };
        self.tx.try_send((item, permit)).map_err(|_| Refused)
    }

    /// Queues `item`, waiting for room (in messages and bytes).
    pub(crate) async fn send(&self, item: SseItem) -> Result<(), Refused> {
        let permit = match self.cost(&item) {
            0 => None,
            n => Some(self.budget.clone().acquire_many_owned(n).await.map_err(|_| Refused)?),
        };
        self.tx.send((item, permit)).await.map_err(|_| Refused)
    }
}

/// The receiving side of [`channel`]: a message's bytes leave the budget once it is taken.
#[derive(Debug)]
pub(crate) struct SseReceiver(mpsc::Receiver<(SseItem, Option<OwnedSemaphorePermit>)>);

impl SseReceiver {
    async fn recv(&mut self) -> Option<SseItem> {
        self.0.recv().await.map(|(item, _permit)| item)
    }
}

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
    rx: SseReceiver,
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

    fn message(len: usize) -> SseItem {
        SseItem::Message { id: None, data: Bytes::from(vec![b'x'; len]) }
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_frees_what_is_read() {
        let (tx, mut rx) = channel(1_000, 1_000);
        tx.try_send(message(400)).expect("fits");
        tx.try_send(message(400)).expect("fits");
        assert!(tx.try_send(message(400)).is_err(), "1,200 bytes queued past a 1,000-byte budget");
        // Items without data take none of it.
        tx.try_send(SseItem::End).expect("no bytes");
        assert!(matches!(rx.recv().await, Some(SseItem::Message { .. })));
        tx.try_send(message(400)).expect("fits once one was read");
        // A message larger than the budget goes alone, once the queue is empty.
        let (tx, mut rx) = channel(10, 1_000);
        tx.try_send(message(10)).expect("fits");
        let big = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(message(5_000)).await }
        });
        tokio::task::yield_now().await;
        assert!(!big.is_finished(), "waits for the queue to drain");
        assert!(matches!(rx.recv().await, Some(SseItem::Message { data, .. }) if data.len() == 10));
        big.await.expect("join").expect("sent alone");
        assert!(tx.try_send(message(1)).is_err(), "the budget is taken by the large one");
        assert!(matches!(rx.recv().await, Some(SseItem::Message { data, .. }) if data.len() == 5_000));
        tx.try_send(message(1)).expect("free again");
    }

    #[test]
    fn events_are_framed() {
        let m = encode(&SseItem::Message { id: Some("3-1".into()), data: Bytes::from_static(b"{\"a\":1}") });
        assert_eq!(&m[..], b"id: 3-1\nevent: message\ndata: {\"a\":1}\n\n");
        let p = encode(&SseItem::Prime { id: "3-0".into(), retry_ms: Some(500) });
        assert_eq!(&p[..], b"id: 3-0\nretry: 500\ndata: \n\n");
    }
}

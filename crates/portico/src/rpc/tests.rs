//! Engine tests over the in-memory transport, with a scripted service.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use portico_schema::ErrorObject;
use serde_json::Value;
use serde_json::value::RawValue;

use super::*;
use crate::sync::lock;
use crate::transport::memory;
use dispatch::InFlight;

/// `echo` answers its params, `sleep` waits `ms` then answers, `count` records cancellations.
#[derive(Default)]
struct Script {
    dropped: AtomicUsize,
    notes: AtomicUsize,
}

struct DropCounter(Arc<Script>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Endpoint for Script {
    fn call(self: Arc<Self>, req: IncomingRequest, _peer: Peer) -> Handled {
        if &*req.method == "panic-at-once" {
            panic!("handler bug before any future");
        }
        Handled::Later(
            async move {
                match &*req.method {
                    "echo" => {
                        Ok(Bytes::from(req.params.map(|p| p.get().to_owned()).unwrap_or_else(|| "{}".into())).into())
                    }
                    "sleep" => {
                        let ms = req
                            .params
                            .as_ref()
                            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                            .and_then(|v| v["ms"].as_u64())
                            .unwrap_or(0);
                        let _guard = DropCounter(self.clone());
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        std::mem::forget(_guard);
                        Ok(Bytes::from_static(b"{\"slept\":true}").into())
                    }
                    "panic" => panic!("handler bug"),
                    m => Err(ErrorObject::method_not_found(m)),
                }
            }
            .boxed(),
        )
    }
    fn notify(&self, _method: &str, _params: Option<&RawValue>, _peer: &Peer) {
        self.notes.fetch_add(1, Ordering::SeqCst);
    }
}

fn pair() -> (Peer, Peer, Arc<Script>) {
    let (a, b) = memory::pair();
    let server = Arc::new(Script::default());
    let s = start(a, server.clone(), RpcConfig::default());
    let c = start(b, Arc::new(Script::default()), RpcConfig::default());
    (c, s, server)
}

#[tokio::test]
async fn request_response_round_trip() {
    let (client, _server, _) = pair();
    let v: Value =
        client.request("echo", Some(&serde_json::json!({"x": 1})), RequestOptions::default()).await.expect("echo");
    assert_eq!(v["x"], 1);
    let e = client.request::<Value, Value>("nope", None, RequestOptions::default()).await.expect_err("unknown method");
    assert_eq!(e.peer_error().map(|e| e.code.0), Some(-32601));
}

#[tokio::test]
async fn slow_request_does_not_block_others() {
    let (client, _server, _) = pair();
    let slow = {
        let c = client.clone();
        tokio::spawn(async move {
            c.request::<Value, Value>("sleep", Some(&serde_json::json!({"ms": 2000})), RequestOptions::default()).await
        })
    };
    // 100 echoes complete while the slow request is still running.
    for i in 0..100 {
        let v: Value =
            client.request("echo", Some(&serde_json::json!({"i": i})), RequestOptions::default()).await.expect("echo");
        assert_eq!(v["i"], i);
    }
    assert!(!slow.is_finished(), "the slow request finished too early to prove anything");
    slow.abort();
}

#[tokio::test(start_paused = true)]
async fn timeout_cancels_the_handler_on_the_peer() {
    let (client, _server, script) = pair();
    let opts = RequestOptions { timeout: Duration::from_millis(50), ..Default::default() };
    let e = client
        .request::<Value, Value>("sleep", Some(&serde_json::json!({"ms": 60_000})), opts)
        .await
        .expect_err("times out");
    assert!(e.is_timeout());
    // The peer receives notifications/cancelled and drops the handler future.
    for _ in 0..100 {
        if script.dropped.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(script.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(client.pending_len(), 0);
}

/// An abandoned request with a late hook waits for its answer a while, then is forgotten: no
/// entry outlives the window when the peer never answers (as it need not, once cancelled).
#[tokio::test(start_paused = true)]
async fn an_abandoned_request_waits_for_a_late_answer_only_so_long() {
    let (client, _server, _) = pair();
    let heard = Arc::new(AtomicUsize::new(0));
    let hook: super::LateHook = {
        let heard = heard.clone();
        Arc::new(move |_| {
            heard.fetch_add(1, Ordering::SeqCst);
        })
    };
    let opts = RequestOptions { late: Some(hook), ..Default::default() };
    let params = serde_json::json!({"ms": 60_000});
    let sleep = client.request::<Value, Value>("sleep", Some(&params), opts);
    assert!(tokio::time::timeout(Duration::from_millis(10), sleep).await.is_err(), "still waiting");
    assert_eq!(client.pending_len(), 1, "kept for a late answer");
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(client.pending_len(), 0, "forgotten after the window");
    assert_eq!(heard.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn handler_panic_becomes_internal_error() {
    let (client, _server, _) = pair();
    // In the handler's future, and in the endpoint before it makes one.
    for method in ["panic", "panic-at-once"] {
        let e = client.request::<Value, Value>(method, None, RequestOptions::default()).await.expect_err("panics");
        assert_eq!(e.peer_error().map(|e| e.code.0), Some(-32603), "{method}");
    }
    // The connection survives.
    let _: Value =
        client.request("echo", Some(&serde_json::json!({})), RequestOptions::default()).await.expect("still alive");
}

#[tokio::test]
async fn peer_vanishing_fails_pending_requests() {
    let (a, b) = memory::pair();
    let client = start(a, Arc::new(Script::default()), RpcConfig::default());
    // The "server" reads nothing and goes away.
    let (reader, writer) = crate::transport::Transport::split(b);
    let waiting = {
        let c = client.clone();
        tokio::spawn(async move { c.request::<Value, Value>("echo", None, RequestOptions::default()).await })
    };
    tokio::task::yield_now().await;
    drop(writer);
    drop(reader);
    let e = waiting.await.expect("join").expect_err("fails");
    assert!(e.is_closed(), "{e:?}");
}

#[tokio::test]
async fn a_request_started_as_the_connection_closes_fails_at_once() {
    // The close comes after the request's first look at the connection and before the
    // request is entered among those waiting (its params are serialized in between), so the
    // close finds nothing to fail. The request must still fail at once, not after its timeout
    // (a minute), now that nothing waits on the close itself.
    struct ClosesTheConnection(Peer);
    impl serde::Serialize for ClosesTheConnection {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.close("closed while a request was being sent");
            s.serialize_map(Some(0))?.end()
        }
    }
    use serde::ser::SerializeMap;
    let (client, _server, _) = pair();
    let params = ClosesTheConnection(client.clone());
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        client.request::<_, Value>("sleep", Some(&params), RequestOptions::default()),
    )
    .await
    .expect("failed at once, not after the timeout");
    let e = outcome.expect_err("closed");
    assert!(e.is_closed(), "{e:?}");
    assert_eq!(client.pending_len(), 0, "nothing left waiting");
}

#[tokio::test]
async fn raw_wire_errors() {
    use crate::transport::{FrameReader, FrameWriter, Transport};
    let (a, b) = memory::pair();
    let _server = start(a, Arc::new(Script::default()), RpcConfig::default());
    let (mut r, mut w) = b.split();
    async fn ask(w: &mut memory::MemoryWriter, r: &mut memory::MemoryReader, line: &str) -> Value {
        w.write_frame(line.as_bytes()).await.expect("write");
        let f = r.read_frame().await.expect("read").expect("frame");
        serde_json::from_slice(&f).expect("json")
    }
    assert_eq!(ask(&mut w, &mut r, "{oops").await["error"]["code"], -32700);
    assert_eq!(ask(&mut w, &mut r, r#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#).await["error"]["code"], -32601);
    assert_eq!(ask(&mut w, &mut r, r#"{"jsonrpc":"1.0","id":4,"method":"echo"}"#).await["id"], 4);
    assert_eq!(ask(&mut w, &mut r, r#"[{"jsonrpc":"2.0","id":5,"method":"echo"}]"#).await["error"]["code"], -32600);
    // A response to an unknown id is ignored; the next request still works.
    w.write_frame(br#"{"jsonrpc":"2.0","id":999,"result":{}}"#).await.expect("write");
    let v = ask(&mut w, &mut r, r#"{"jsonrpc":"2.0","id":"s","method":"echo","params":{"k":true}}"#).await;
    assert_eq!(v["id"], "s");
    assert_eq!(v["result"]["k"], true);
}

#[tokio::test]
async fn a_peer_that_reads_late_gets_every_response_once_the_queue_was_full() {
    // Tiny queues everywhere: requests answered at once find the outgoing queue full, wait for
    // room in a task of their own (holding their slot), and none is lost or duplicated.
    use crate::transport::{FrameReader, FrameWriter, Transport};
    let (a, b) = memory::pair_with_capacity(2);
    let config = RpcConfig { outgoing_capacity: 2, max_in_flight: 8, ..RpcConfig::default() };
    let _server = start(a, Arc::new(Script::default()), config);
    let (mut reader, mut writer) = b.split();
    const N: u64 = 200;
    let send = async {
        for id in 1..=N {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":{{"n":{id}}}}}"#);
            writer.write_frame(frame.as_bytes()).await.expect("write");
            writer.flush().await.expect("flush");
        }
        writer
    };
    // Let the server fill every queue before anything is read.
    let sending = tokio::spawn(send);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < N as usize {
        let frame = tokio::time::timeout(Duration::from_secs(5), reader.read_frame())
            .await
            .expect("a response within 5 s")
            .expect("read")
            .expect("not closed");
        let v: Value = serde_json::from_slice(&frame).expect("json");
        let id = v["id"].as_u64().expect("id");
        assert_eq!(v["result"]["n"], id, "each response carries its own request's result");
        assert!(seen.insert(id), "response {id} arrived twice");
    }
    let _writer = sending.await.expect("sender");
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), (1..=N).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_registered_request_leaves_the_in_flight_map_however_it_ends() {
    // Batched requests are entered in the map before they run; each must leave it, whether it
    // is answered in its first poll or after waiting (no entry left behind per request).
    let (tx, _rx) = tokio::sync::mpsc::channel(16);
    let peer = Peer::new(tx, None);
    let in_flight = InFlight::default();
    let service = Arc::new(Script::default());
    for (n, (method, params)) in [("echo", r#"{"x":1}"#), ("sleep", r#"{"ms":5}"#)].into_iter().enumerate() {
        let id = portico_schema::RequestId::Number(n as i64);
        let token = Cancel::new();
        dispatch::register(&in_flight, id.clone(), &token);
        assert_eq!(lock(&in_flight).len(), 1);
        let raw = RawValue::from_string(params.to_owned()).expect("json");
        let q = dispatch::Queued::new(id, method, Some(&raw));
        let out = dispatch::run_request(service.clone(), peer.clone(), in_flight.clone(), q, token).await;
        assert!(out.is_some(), "{method} answered");
        assert_eq!(lock(&in_flight).len(), 0, "{method}: its entry is gone");
    }
}

/// A peer flooding notifications is read at the configured rate: reading pauses (nothing is
/// dropped), and what it sent after the flood waits for it.
#[tokio::test(start_paused = true)]
async fn notifications_past_the_rate_pause_reading_and_none_is_dropped() {
    use crate::transport::{FrameReader, FrameWriter, Transport};
    for (rate, floor) in [(None, Duration::ZERO), (Some(100), Duration::from_millis(1400))] {
        let (a, b) = memory::pair();
        let script = Arc::new(Script::default());
        let _endpoint = start(a, script.clone(), RpcConfig { notification_rate: rate, ..RpcConfig::default() });
        let (mut reader, mut writer) = b.split();
        let started = tokio::time::Instant::now();
        let writing = tokio::spawn(async move {
            // A burst's worth (100), then 150 more: 1.5 s at 100 a second.
            for _ in 0..250 {
                writer.write_frame(br#"{"jsonrpc":"2.0","method":"notifications/message"}"#).await.expect("write");
            }
            writer.write_frame(br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}"#).await.expect("write");
            writer
        });
        let answer = tokio::time::timeout(Duration::from_secs(10), reader.read_frame()).await.expect("answered");
        assert!(answer.expect("read").is_some());
        let waited = started.elapsed();
        assert_eq!(script.notes.load(Ordering::SeqCst), 250, "{rate:?}: every notification handled");
        assert!(waited >= floor, "{rate:?}: answered after {waited:?}");
        if rate.is_none() {
            assert!(waited < Duration::from_millis(100), "no limit, no pause: {waited:?}");
        } else {
            assert!(waited < Duration::from_millis(2000), "paused no longer than the rate needs: {waited:?}");
        }
        drop(writing.await.expect("writer"));
    }
}

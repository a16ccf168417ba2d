//! `CallOptions::with_timeout_pause`: while the pause is held, a call's timeout does not run;
//! when the last hold ends, the timeout starts again, whole. Virtual time: the fixture's
//! `sleep` tool answers after the milliseconds it is given.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Probes, fixture_server};
use portico::ErrorKind;
use portico::client::{CallOptions, Client, EraMode, TimeoutPause};
use portico::schema::Implementation;
use serde_json::json;
use tokio::time::Instant;

async fn client(mode: EraMode) -> Client {
    let (a, b) = portico::transport::memory::pair();
    fixture_server(Arc::new(Probes::default())).connect(b);
    Client::builder(Implementation::new("c", "1")).era(mode).connect(a).await.expect("connect")
}

const MODES: [EraMode; 2] = [EraMode::Handshake(portico::schema::ProtocolVersion::V2025_11_25), EraMode::Stateless];

#[tokio::test(start_paused = true)]
async fn a_held_pause_stops_the_timeout_and_its_end_starts_it_again_whole() {
    for mode in MODES {
        let c = client(mode).await;
        let second = || CallOptions::new().with_timeout(Duration::from_secs(1));

        // Without a pause: 1 s is not enough for a 3 s answer.
        let r = c.call_tool_with("sleep", json!({"ms": 3000}), second()).await;
        assert!(r.as_ref().is_err_and(|e| e.kind() == ErrorKind::Timeout), "{mode:?}: {r:?}");

        // Held for the first 2.5 s: the timeout starts at 2.5 s and the answer comes at 3 s.
        let pause = TimeoutPause::new();
        let held = pause.hold();
        assert!(pause.is_held());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            drop(held);
        });
        let r = c.call_tool_with("sleep", json!({"ms": 3000}), second().with_timeout_pause(pause.clone())).await;
        let r = serde_json::to_value(r.expect("answered")).unwrap_or_default();
        assert_eq!(r["content"][0]["text"], "ok", "{mode:?}");
        assert!(!pause.is_held());

        // Held for 0.9 s, released, held again shortly: the timeout runs whole after each
        // release, so the call times out 1 s after the last one (3.2 s), not at 1 s.
        let start = Instant::now();
        let (first, pause2) = (pause.hold(), pause.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(900)).await;
            drop(first);
            tokio::time::sleep(Duration::from_millis(500)).await;
            let again = pause2.hold();
            tokio::time::sleep(Duration::from_millis(800)).await;
            drop(again);
        });
        let r = c.call_tool_with("sleep", json!({"ms": 10_000}), second().with_timeout_pause(pause.clone())).await;
        assert!(r.as_ref().is_err_and(|e| e.kind() == ErrorKind::Timeout), "{mode:?}: {r:?}");
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(3150) && took < Duration::from_millis(3300), "{mode:?}: {took:?}");
        c.close().await;
    }
}

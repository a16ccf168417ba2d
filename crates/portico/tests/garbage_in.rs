//! Thousands of corrupted messages: the server answers what it can, never panics, never hangs,
//! and keeps serving the next well-formed request.

mod common;

use std::sync::Arc;

use common::*;
use portico::transport::memory;
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
    r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"_meta":{"progressToken":7}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://items/1"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"explain","arguments":{"topic":"a"}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"explain"},"argument":{"name":"topic","value":"p"}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{},"requestState":"AAAA","inputResponses":{"input-0":{"action":"accept"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    r#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#,
    r#"[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]"#,
];

const JUNK: &[&str] =
    &["null", "{}", "[]", "\"\\u0000\"", "1e999", "-0", "true", "\"\u{1F600}\"", "{\"a\":[[[[[[]]]]]]}", "\"\\ud800\""];

fn mutate(rng: &mut Rng, seed: &str) -> Vec<u8> {
    let mut b = seed.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(5) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b.truncate(i);
            }
            2 => {
                let i = rng.below(b.len() + 1);
                let junk = JUNK[rng.below(JUNK.len())];
                b.splice(i..i, junk.bytes());
            }
            3 if b.len() > 2 => {
                let i = rng.below(b.len());
                let j = rng.below(b.len());
                b.swap(i, j);
            }
            _ => {
                // Replace a value: find a ':' and put junk after it.
                if let Some(pos) = b.iter().enumerate().filter(|(_, c)| **c == b':').map(|(i, _)| i).nth(rng.below(6)) {
                    let end =
                        b[pos + 1..].iter().position(|c| *c == b',' || *c == b'}').map_or(b.len(), |e| pos + 1 + e);
                    let junk = JUNK[rng.below(JUNK.len())];
                    b.splice(pos + 1..end, junk.bytes());
                }
            }
        }
    }
    b.retain(|c| *c != b'\n');
    b
}

#[tokio::test]
async fn corrupted_messages_never_break_the_server() {
    for (era_init, label) in [(true, "handshake"), (false, "fresh")] {
        let (a, b) = memory::pair();
        fixture_server(Arc::new(Probes::default())).connect(b);
        let (mut r, mut w) = a.split();
        if era_init {
            let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"f","version":"1"}}});
            w.write_frame(init.to_string().as_bytes()).await.expect("write");
            r.read_frame().await.expect("read").expect("init answer");
        }
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..3000 {
            let seed = SEEDS[rng.below(SEEDS.len())];
            let frame = mutate(&mut rng, seed);
            w.write_frame(&frame).await.expect("write");
            // Every 50 frames, a well-formed ping must be answered: the server is alive.
            if round % 50 == 49 {
                let id = format!("alive-{round}");
                w.write_frame(json!({"jsonrpc":"2.0","id":id,"method":"ping"}).to_string().as_bytes())
                    .await
                    .expect("write");
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                loop {
                    let frame = tokio::time::timeout_at(deadline, r.read_frame())
                        .await
                        .unwrap_or_else(|_| panic!("{label}: no answer to the ping after round {round}"))
                        .expect("read")
                        .unwrap_or_else(|| panic!("{label}: server closed the connection at round {round}"));
                    // Whatever comes back is valid JSON-RPC output.
                    let v: Value = serde_json::from_slice(&frame).expect("the server only writes JSON");
                    if v.get("id") == Some(&json!(id)) {
                        break;
                    }
                }
            }
        }
    }
}

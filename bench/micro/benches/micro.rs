//! Criterion micro-benchmarks of Portico through its public API (`cd bench/micro && cargo bench`;
//! its own workspace, so `cargo test --workspace` never builds criterion):
//!
//! - `codec/*`: decoding a `tools/call` request (the public `JSONRPCRequest` and
//!   `CallToolRequestParams`, with and without the 2026-07-28 `_meta`) and encoding a
//!   `CallToolResult` in its response envelope;
//! - `dispatch/*`: one echo round trip through the bench server over
//!   `portico::transport::memory` (handshake and stateless eras), and one `tools/list` of its
//!   1002 tools, on a current-thread runtime.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use portico::schema::{CallToolRequestParams, CallToolResult, JSONRPCRequest, JSONRPCResultResponse, RequestId};
use portico::transport::FrameWriter;
use portico_bench::inproc::{Client, check_echo, echo};

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("codec");
    for (name, meta) in [("decode_call_request", false), ("decode_call_request_stateless", true)] {
        let line = echo(42, meta);
        g.bench_function(name, |b| {
            b.iter(|| {
                let req: JSONRPCRequest = serde_json::from_slice(black_box(&line)).unwrap();
                let params: CallToolRequestParams = serde_json::from_value(req.params.unwrap()).unwrap();
                black_box(params)
            })
        });
    }
    g.bench_function("encode_call_result", |b| {
        b.iter(|| {
            let result = CallToolResult::text(black_box("42"));
            let response = JSONRPCResultResponse::new(RequestId::from(42), serde_json::to_value(&result).unwrap());
            black_box(serde_json::to_vec(&response).unwrap())
        })
    });
    g.finish();
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut g = c.benchmark_group("dispatch");
    for (name, stateless) in [("echo_handshake", false), ("echo_stateless", true)] {
        let mut client = rt.block_on(Client::new(!stateless));
        let mut id = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                id += 1;
                rt.block_on(async {
                    client.w.write_frame(&echo(id, stateless)).await.unwrap();
                    client.w.flush().await.unwrap();
                    check_echo(&client.read().await, Some(id));
                })
            })
        });
    }
    let mut client = rt.block_on(Client::new(true));
    g.bench_function("tools_list_1000", |b| {
        b.iter(|| {
            rt.block_on(async {
                client.w.write_frame(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await.unwrap();
                client.w.flush().await.unwrap();
                let listing = client.read().await;
                assert!(listing.len() > 300_000);
                black_box(listing)
            })
        })
    });
    g.finish();
}

criterion_group!(benches, codec, dispatch);
criterion_main!(benches);

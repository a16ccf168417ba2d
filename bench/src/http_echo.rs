//! `http-echo PORT [--threads]`: the HTTP ceiling the HTTP figures are compared with.
//!
//! Bare hyper (HTTP/1.1, keep-alive, `TCP_NODELAY`, a multi-threaded Tokio runtime with the
//! default worker count, one per CPU the process may run on, like the bench servers) on `127.0.0.1:PORT`: every `POST`, whatever its path, is
//! answered `200` with `application/json`
//! `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ID"}]}}`, where `ID` is
//! the request's `id` (parsed from the body, borrowed, no tree). It is what an HTTP round trip, a
//! body read and a JSON parse cost here, with no MCP at all; the driver's `bare` era talks to it.
//!
//! With `--threads`, the floor of `bench-server http-threads`: each connection is served on one
//! of N threads, each running a single-threaded runtime, taken in turn (N = the CPUs the process
//! may run on), as Portico's connection threads serve them.
#![allow(clippy::print_stderr)]

use std::convert::Infallible;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
}

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::POST {
        return Ok(status(StatusCode::METHOD_NOT_ALLOWED));
    }
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let Ok(Envelope { id: Some(id) }) = serde_json::from_slice::<Envelope<'_>>(&body) else {
        return Ok(status(StatusCode::ACCEPTED));
    };
    let id = id.get();
    // The text is the id's JSON text (a number for the driver's ids), as a JSON string.
    let text = id.trim_matches('"');
    let mut out = Vec::with_capacity(96 + 2 * id.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(br#""}]}}"#);
    let mut r = Response::new(Full::new(Bytes::from(out)));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(r)
}

fn status(s: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = s;
    r
}

/// Threads that each run a single-threaded runtime, as Portico's connection threads do.
fn connection_threads() -> std::io::Result<Vec<tokio::runtime::Handle>> {
    let n = std::thread::available_parallelism().map_or(1, usize::from);
    (0..n)
        .map(|i| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let handle = rt.handle().clone();
            std::thread::Builder::new()
                .name(format!("http-echo-{i}"))
                .spawn(move || rt.block_on(std::future::pending::<()>()))?;
            Ok(handle)
        })
        .collect()
}

async fn serve(tcp: tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
    let io = hyper_util::rt::TokioIo::new(tcp);
    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, hyper::service::service_fn(answer)).await;
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (port, threads) = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [port] => (port.parse::<u16>().ok(), false),
        [port, "--threads"] => (port.parse::<u16>().ok(), true),
        _ => (None, false),
    };
    let Some(port) = port else {
        eprintln!("usage: http-echo PORT [--threads]");
        return ExitCode::from(64);
    };
    let threads = match threads.then(connection_threads).transpose() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("http-echo: cannot start threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("http-echo: cannot bind 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut turn = 0usize;
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                eprintln!("http-echo: accept: {e}");
                continue;
            }
        };
        match &threads {
            None => drop(tokio::spawn(serve(tcp))),
            // Off this runtime's reactor and onto the thread's.
            Some(handles) => match tcp.into_std() {
                Ok(std) => drop(handles[turn % handles.len()].spawn(async move {
                    if let Ok(tcp) = tokio::net::TcpStream::from_std(std) {
                        serve(tcp).await;
                    }
                })),
                Err(e) => eprintln!("http-echo: cannot hand a connection to its thread: {e}"),
            },
        }
        turn = turn.wrapping_add(1);
    }
}

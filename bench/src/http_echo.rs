//! `http-echo PORT`: the HTTP ceiling the HTTP figures are compared with.
//!
//! Bare hyper (HTTP/1.1, keep-alive, `TCP_NODELAY`, a multi-threaded Tokio runtime with the
//! default worker count, one per CPU the process may run on, like the bench servers) on `127.0.0.1:PORT`: every `POST`, whatever its path, is
//! answered `200` with `application/json`
//! `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ID"}]}}`, where `ID` is
//! the request's `id` (parsed from the body, borrowed, no tree). It is what an HTTP round trip, a
//! body read and a JSON parse cost here, with no MCP at all; the driver's `bare` era talks to it.
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

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(port) = args.first().and_then(|p| p.parse::<u16>().ok()).filter(|_| args.len() == 1) else {
        eprintln!("usage: http-echo PORT");
        return ExitCode::from(64);
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("http-echo: cannot bind 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                eprintln!("http-echo: accept: {e}");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(tcp);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, hyper::service::service_fn(answer))
                .await;
        });
    }
}

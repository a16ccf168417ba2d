//! `bench-gateway http-relay UPSTREAM_PORT PORT`: the least work a gateway in the middle of two
//! Streamable HTTP hops must do, as a floor to set beside `portico serve --http`.
//!
//! Bare hyper on `127.0.0.1:PORT` (HTTP/1.1, keep-alive, `TCP_NODELAY`, one thread). Each
//! downstream connection gets its own upstream connection to `127.0.0.1:UPSTREAM_PORT`, so
//! sessions and ids need no mapping. Each request's JSON body is parsed and written again (as
//! the stdio relay does), sent upstream with the client's headers, and the upstream's answer is
//! passed back the same way (an event stream's body is passed on as it is, once it has ended:
//! a stream that never ends, such as a `GET`, is not for this relay). Nothing else: no policy,
//! no registry, no log, no validation, no timeouts.
//!
//! Its p50 added at one call in flight, measured in the same run as the gateway's, is the floor
//! of the gateway's latency target over HTTP.

use std::convert::Infallible;
use std::process::ExitCode;
use std::rc::Rc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::Mutex;

pub fn main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let ports = (args.next().and_then(|p| p.parse::<u16>().ok()), args.next().and_then(|p| p.parse::<u16>().ok()));
    let (Some(upstream), Some(port)) = ports else {
        eprintln!("usage: bench-gateway http-relay UPSTREAM_PORT PORT");
        return ExitCode::from(64);
    };
    crate::subcommand("http-relay", serve(upstream, port))
}

/// Parses a JSON body and writes it again: what any gateway that reads messages does.
fn reparse(body: &[u8]) -> Result<Bytes, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    serde_json::to_vec(&v).map(Bytes::from).map_err(|e| e.to_string())
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn serve(upstream: u16, port: u16) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| format!("bind 127.0.0.1:{port}: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            loop {
                let (tcp, _) = listener.accept().await.map_err(|e| format!("accept: {e}"))?;
                let _ = tcp.set_nodelay(true);
                // The upstream connection of this downstream connection, made at its first request.
                let to: Rc<Mutex<Option<Sender>>> = Rc::new(Mutex::new(None));
                let service = hyper::service::service_fn(move |req| {
                    let to = to.clone();
                    async move {
                        Ok::<_, Infallible>(match relay(req, upstream, &to).await {
                            Ok(r) => r,
                            Err(e) => {
                                eprintln!("http-relay: {e}");
                                let mut r = Response::new(Full::new(Bytes::from(e)));
                                *r.status_mut() = StatusCode::BAD_GATEWAY;
                                r
                            }
                        })
                    }
                });
                tokio::task::spawn_local(async move {
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        })
        .await
}

async fn relay(
    req: Request<Incoming>,
    upstream: u16,
    to: &Mutex<Option<Sender>>,
) -> Result<Response<Full<Bytes>>, String> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| format!("request body: {e}"))?.to_bytes();
    let body = if body.is_empty() { body } else { reparse(&body)? };
    let mut out = Request::builder().method(parts.method).uri(parts.uri.path());
    for (name, value) in &parts.headers {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING {
            out = out.header(name, value);
        }
    }
    let out = out.body(Full::new(body)).map_err(|e| e.to_string())?;
    let mut sender = to.lock().await;
    if sender.as_ref().is_none_or(Sender::is_closed) {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", upstream))
            .await
            .map_err(|e| format!("connect to the upstream: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let (s, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| format!("handshake: {e}"))?;
        tokio::task::spawn_local(conn);
        *sender = Some(s);
    }
    let Some(s) = sender.as_mut() else { return Err("no upstream connection".to_owned()) };
    s.ready().await.map_err(|e| format!("upstream: {e}"))?;
    let answer = s.send_request(out).await.map_err(|e| format!("upstream: {e}"))?;
    drop(sender);
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(|e| format!("response body: {e}"))?.to_bytes();
    let json = parts.headers.get(CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    let body = if json && !body.is_empty() { reparse(&body)? } else { body };
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING && name != HOST {
            r.headers_mut().append(name, value.clone());
        }
    }
    Ok(r)
}

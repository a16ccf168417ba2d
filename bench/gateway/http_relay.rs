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
//!
//! `--commit DIR` adds the least a log that records each call before answering it must do: each
//! `tools/call` answer waits, on the relay's one thread, for the commit of one record (the size
//! of an echo call's, [`crate::commit::Log`]) into a new log's database in `DIR`.

use std::cell::RefCell;
use std::convert::Infallible;
use std::path::PathBuf;
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
    let commit = match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => Some(None),
        (Some("--commit"), Some(dir), None) => Some(Some(PathBuf::from(dir))),
        _ => None,
    };
    let ((Some(upstream), Some(port)), Some(commit)) = (ports, commit) else {
        eprintln!("usage: bench-gateway http-relay UPSTREAM_PORT PORT [--commit DIR]");
        return ExitCode::from(64);
    };
    crate::subcommand("http-relay", serve(upstream, port, commit))
}

/// Parses a JSON body and writes it again: what any gateway that reads messages does. Also
/// whether it is a `tools/call`.
fn reparse(body: &[u8]) -> Result<(Bytes, bool), String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let call = v.get("method").and_then(serde_json::Value::as_str) == Some("tools/call");
    serde_json::to_vec(&v).map(|b| (Bytes::from(b), call)).map_err(|e| e.to_string())
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// The log of `--commit`, shared by the relay's connections (all on its one thread).
type Log = Rc<RefCell<crate::commit::Log>>;

async fn serve(upstream: u16, port: u16, commit: Option<PathBuf>) -> Result<(), String> {
    let log: Option<Log> = match commit {
        Some(dir) => {
            Some(Rc::new(RefCell::new(crate::commit::Log::open(&dir, crate::commit::ECHO_RECORD_BYTES).await?)))
        }
        None => None,
    };
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
                let log = log.clone();
                let service = hyper::service::service_fn(move |req| {
                    let to = to.clone();
                    let log = log.clone();
                    async move {
                        Ok::<_, Infallible>(match relay(req, upstream, &to, log.as_ref()).await {
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
    log: Option<&Log>,
) -> Result<Response<Full<Bytes>>, String> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| format!("request body: {e}"))?.to_bytes();
    let (body, call) = if body.is_empty() { (body, false) } else { reparse(&body)? };
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
    let body = if json && !body.is_empty() { reparse(&body)?.0 } else { body };
    if let Some(log) = log.filter(|_| call) {
        log.borrow_mut().commit()?;
    }
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING && name != HOST {
            r.headers_mut().append(name, value.clone());
        }
    }
    Ok(r)
}

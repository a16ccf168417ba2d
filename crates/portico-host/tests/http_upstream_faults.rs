//! An HTTP upstream that fails in the middle of calls, behind a fault-injecting front on
//! loopback: a response cut off mid-body, a stream that never ends, redirects (followed only
//! same-origin 307/308), connections reset before any answer, and a server with a certificate
//! nobody trusts. Each ends in a clear error that names the server, and the next call, once the
//! fault is gone, works.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use portico::schema::{Implementation, Tool, object};
use portico::server::Server;
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use serde_json::json;
use tower::ServiceExt as _;

/// What the front does to the next `tools/call`.
#[derive(Debug, Clone, PartialEq)]
enum Fault {
    None,
    /// Headers and half a body, then the connection is cut.
    Partial,
    /// An event stream that never sends anything, and never ends.
    Hang,
    /// A redirect with this status to this location.
    Redirect(u16, String),
}

#[derive(Clone)]
struct Front {
    fault: Arc<Mutex<Fault>>,
    real: axum::Router,
    /// `tools/call` requests the front passed to the real server, by path.
    passed: Arc<Mutex<Vec<String>>>,
}

impl Front {
    fn set(&self, f: Fault) {
        *self.fault.lock().expect("lock") = f;
    }
}

async fn handle(State(front): State<Front>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let is_call = bytes.windows(10).any(|w| w == b"tools/call");
    let fault = front.fault.lock().expect("lock").clone();
    if is_call {
        match fault {
            Fault::None => {}
            Fault::Partial => {
                let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                    Ok(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":")),
                    Err(std::io::Error::other("cut off")),
                ];
                return Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from_stream(futures_util::stream::iter(chunks)))
                    .expect("response");
            }
            Fault::Hang => {
                let never = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
                return Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(never))
                    .expect("response");
            }
            Fault::Redirect(status, location) if parts.uri.path() == "/mcp" => {
                return Response::builder()
                    .status(status)
                    .header("location", location)
                    .body(Body::empty())
                    .expect("response");
            }
            Fault::Redirect(..) => {}
        }
        front.passed.lock().expect("lock").push(parts.uri.path().to_owned());
    }
    let req = Request::from_parts(parts, Body::from(bytes));
    match front.real.clone().oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

fn server() -> Server {
    Server::builder(Implementation::new("faulty", "1.0.0"))
        .tool(Tool::new("ping", object(json!({"type": "object"}))), |_: serde_json::Value| async { "pong" })
        .build()
}

/// Serves the front on loopback; its address.
async fn start_front(front: Front) -> std::net::SocketAddr {
    let app = axum::Router::new().fallback(handle).with_state(front);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_hung_and_redirected_calls_end_clearly_and_the_next_call_works() {
    let front = Front {
        fault: Arc::new(Mutex::new(Fault::None)),
        real: StreamableHttp::new(server()).build().service(),
        passed: Arc::default(),
    };
    let addr = start_front(front.clone()).await;
    // Another origin, which must never see a request.
    let elsewhere = Front {
        fault: Arc::new(Mutex::new(Fault::None)),
        real: StreamableHttp::new(server()).build().service(),
        passed: Arc::default(),
    };
    let other = start_front(elsewhere.clone()).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!("[servers.web]\nurl = \"http://{addr}/mcp\"\nshared = true\ntimeout = 2\n");
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(20)).await;
    let ping = async || host.call_tool("web__ping", json!({}), None).await;
    let works = |r: &portico::schema::CallToolResult, after: &str| {
        assert_eq!((common::text(r).as_str(), r.is_error), ("pong", None), "after {after}: {r:?}");
    };
    works(&ping().await, "start");

    // A response cut off in the middle of its body.
    front.set(Fault::Partial);
    let r = ping().await;
    let text = common::text(&r);
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text.contains("`web`"), "the error names the server: {text}");
    front.set(Fault::None);
    works(&ping().await, "a cut-off response");

    // A stream that never ends: the call's timeout (2 s) ends it.
    front.set(Fault::Hang);
    let started = std::time::Instant::now();
    let r = ping().await;
    let took = started.elapsed();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(common::text(&r).contains("`web`"), "{r:?}");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(15), "ended after {took:?}");
    front.set(Fault::None);
    works(&ping().await, "a hung stream");

    // A same-origin 307 (a server that moved its endpoint) is followed, with the POST intact.
    front.set(Fault::Redirect(307, "/moved/mcp".into()));
    works(&ping().await, "a same-origin 307");
    assert_eq!(front.passed.lock().expect("lock").last().map(String::as_str), Some("/moved/mcp"));

    // 301 and 302 would turn the POST into a GET; a 307 to another origin would send the call
    // elsewhere: none is followed, and the error says where the server points.
    for (status, location) in [
        (301, "/moved/mcp".to_owned()),
        (302, "/moved/mcp?token=secret-in-query".to_owned()),
        (307, format!("http://{other}/mcp")),
    ] {
        front.set(Fault::Redirect(status, location.clone()));
        let r = ping().await;
        let text = common::text(&r);
        assert_eq!(r.is_error, Some(true), "{status}: {r:?}");
        assert!(text.contains(&status.to_string()) && text.contains("redirected"), "{status}: {text}");
        assert!(text.contains("`web`"), "{status}: {text}");
        assert!(!text.contains("secret-in-query"), "the location's query is left out: {text}");
    }
    assert!(elsewhere.passed.lock().expect("lock").is_empty(), "a cross-origin redirect was followed");
    front.set(Fault::None);
    works(&ping().await, "redirects");
    host.shutdown().await;
}

/// The first error the upstream `name` reports (within 30 s).
async fn first_error(host: &Host, name: &str) -> String {
    let upstream = host.upstream(name).expect("configured");
    common::eventually(Duration::from_secs(30), || upstream.status().last_error)
        .await
        .unwrap_or_else(|| panic!("no error reported: {:?}", upstream.status()))
}

/// A TLS server with a self-signed certificate: `openssl s_server` (Debian's openssl), or
/// `None` when the binary is missing.
fn untrusted_tls_server(dir: &std::path::Path) -> Option<(std::process::Child, u16)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).ok()?.port();
    let child = std::process::Command::new("openssl")
        .args(["s_server", "-quiet", "-www", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    Some((child, port))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_with_an_untrusted_certificate_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let Some((mut tls, port)) = untrusted_tls_server(dir.path()) else {
        // CI (which sets PORTICO_REQUIRE_INTEROP) must run it: a missing peer fails there.
        assert!(std::env::var_os("PORTICO_REQUIRE_INTEROP").is_none(), "openssl is required here");
        eprintln!("SKIPPED: openssl is not installed (Debian package openssl)");
        return;
    };
    // Wait for the listener (bounded).
    let up = common::eventually(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok().map(|_| ())
    })
    .await;
    assert!(up.is_some(), "openssl s_server did not start");
    let cfg = format!(
        "[servers.tls]\nurl = \"https://127.0.0.1:{port}/mcp\"\nshared = true\nstartup_timeout = 5\n[servers.tls.restart]\ninitial_backoff = 0.05\nmax_restarts = 1\n"
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    let error = first_error(&host, "tls").await.to_lowercase();
    eprintln!("the upstream's error: {error}");
    assert!(error.contains("certificate") || error.contains("tls"), "the error says it is the certificate: {error}");
    let r = host.call_tool("tls__anything", json!({}), None).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    host.shutdown().await;
    let _ = tls.kill();
    let _ = tls.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_resets_connections_is_reported_then_recovers() {
    // A listener that resets every connection before any response byte (SO_LINGER 0).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let resetting = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_zero_linger();
            drop(tcp);
        }
    });
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!(
        "[servers.web]\nurl = \"http://{addr}/mcp\"\nshared = true\nstartup_timeout = 5\n[servers.web.restart]\ninitial_backoff = 0.05\nmax_backoff = 0.2\nmax_restarts = 1000\n"
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    let upstream = host.upstream("web").expect("web");
    let error = first_error(&host, "web").await;
    // How a reset shows depends on when it lands: "connection reset", "closed", or hyper's
    // "connection was not ready". Any of them, never reqwest's bare "error sending request".
    let lower = error.to_lowercase();
    let named = ["reset", "closed", "not ready"].iter().any(|c| lower.contains(c));
    assert!(named && !lower.contains("error sending request"), "the cause is named: {error}");
    let r = host.call_tool("web__ping", json!({}), None).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");

    // The server comes back on the same port: the restarts with backoff find it.
    resetting.abort();
    let _ = resetting.await;
    let listener = tokio::net::TcpListener::bind(addr).await.expect("rebind");
    let endpoint = StreamableHttp::new(server()).build();
    let back = tokio::spawn(async move {
        let _ = endpoint.serve_with_shutdown(listener, std::future::pending()).await;
    });
    let ready = common::eventually(Duration::from_secs(20), || {
        (upstream.status().state == portico_host::upstream::State::Ready).then_some(())
    })
    .await;
    assert!(ready.is_some(), "never recovered: {:?}", upstream.status());
    // Its tools join the registry once it has listed them.
    let listed =
        common::eventually(Duration::from_secs(10), || host.registry().tools.contains_key("web__ping").then_some(()))
            .await;
    assert!(listed.is_some(), "its tools never joined the registry");
    let r = host.call_tool("web__ping", json!({}), None).await;
    assert_eq!(common::text(&r), "pong", "{r:?}");
    back.abort();
    host.shutdown().await;
}

//! The resource-server side of MCP authorization against a real OpenID provider:
//! `oidc-provider` 9.13.3 (`tests/oidc/provider.js`), installed under `.ci-cache/oidc` by
//! `scripts/install-oidc.sh`, issues real JWT and opaque access tokens (client credentials,
//! RFC 8707 resource indicators) that a Portico HTTP server behind the bearer layer checks.
//!
//! Without node or the provider, the provider tests are skipped with a notice, unless
//! `PORTICO_REQUIRE_INTEROP=1` (CI sets it), which makes that a failure. The key-rotation test
//! uses a JWKS server in the test and locally signed tokens, and always runs.
#![cfg(feature = "auth-server")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use portico::auth::server::{
    AuthInfo, IntrospectionValidator, JwtValidator, ResourceServer, ResourceServerBuilder, TokenValidator,
};
use portico::schema::{Implementation, Tool, object};
use portico::server::{RequestContext, Server};
use portico::transport::http::server::StreamableHttp;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const REQUIRE_ENV: &str = "PORTICO_REQUIRE_INTEROP";
const READ: &str = "mcp:read";
const ADMIN: &str = "mcp:admin";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Node and the provider module, or `None` (after a notice, or a failure when required).
fn installed() -> Option<(PathBuf, PathBuf)> {
    let dir = workspace_root().join(".ci-cache/oidc/node_modules");
    let module = dir.join("oidc-provider/lib/index.js");
    // Node 22 from npm when installed (oidc-provider 9 supports it), else the machine's.
    let local = dir.join(".bin/node");
    let node = if local.exists() { local } else { PathBuf::from("node") };
    let node_runs = std::process::Command::new(&node).arg("--version").output().is_ok_and(|o| o.status.success());
    if module.exists() && node_runs {
        return Some((node, module));
    }
    let message = format!(
        "{} or node is missing: run scripts/install-oidc.sh (it installs oidc-provider@9.13.3)",
        module.display()
    );
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{REQUIRE_ENV}=1 and {message}");
    }
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPED: the resource-server tests against oidc-provider did NOT run.");
    eprintln!("!! {message}");
    eprintln!("!! Set {REQUIRE_ENV}=1 to make this a failure.");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    None
}

/// A running `tests/oidc/provider.js`; killed (and its stdin closed, which also ends it) on drop.
struct Provider {
    issuer: String,
    _child: Child,
}

impl Provider {
    async fn start(node: &Path, module: &Path) -> Provider {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.js");
        let mut child = Command::new(node)
            .arg(script)
            .arg(module)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn node");
        // Its log, less the notice that it keeps tokens in memory (what a test wants).
        let stderr = child.stderr.take().expect("stderr");
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                if !l.contains("development-only in-memory adapter") {
                    eprintln!("oidc-provider: {l}");
                }
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(30), BufReader::new(stdout).read_line(&mut line))
            .await
            .expect("the provider started in time")
            .expect("read the provider's first line");
        #[derive(Deserialize)]
        struct Started {
            issuer: String,
        }
        let started: Started = serde_json::from_str(&line).unwrap_or_else(|e| panic!("provider said {line:?}: {e}"));
        Provider { issuer: started.issuer, _child: child }
    }

    /// A client-credentials token of `client` for `resource` with `scope`.
    async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let r = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some("secret"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("grant_type=client_credentials&scope={}&resource={}", enc(scope), enc(resource)))
            .send()
            .await
            .expect("token request");
        let status = r.status();
        let v: Value = r.json().await.expect("token json");
        assert!(status.is_success(), "token request refused: {v}");
        v["access_token"].as_str().expect("access_token").to_string()
    }
}

fn enc(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[derive(Deserialize)]
struct Empty {}

/// A server whose `whoami` tool reports the `AuthInfo` it sees.
fn mcp_server() -> Server {
    let schema = object(json!({"type": "object"}));
    Server::builder(Implementation::new("protected", "1.0.0"))
        .tool(Tool::new("whoami", schema.clone()), |_: Empty, cx: RequestContext| async move {
            let who = cx.extensions().get::<AuthInfo>();
            json!({
                "subject": who.and_then(AuthInfo::subject),
                "client": who.and_then(AuthInfo::client_id),
                "scopes": who.map(|w| w.scopes().iter().cloned().collect::<Vec<_>>()),
                "audience": who.map(AuthInfo::audience),
                "expires": who.and_then(AuthInfo::expires_at).is_some(),
                "tenant": who.and_then(|w| w.claim::<String>("client_id")),
            })
            .to_string()
        })
        .tool(Tool::new("admin_reset", schema), |_: Empty| async move { "reset".to_string() })
        .build()
}

/// The MCP endpoint at `http://127.0.0.1:<port>/mcp` behind the resource server that
/// `configure` builds (given the resource URI).
struct Mcp {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(configure: impl FnOnce(&str) -> ResourceServer) -> Mcp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let auth = configure(&url);
    let endpoint = StreamableHttp::new(mcp_server()).authorization(auth).build();
    let task = tokio::spawn(async move {
        let _ = endpoint.serve_with_shutdown(listener, std::future::pending()).await;
    });
    Mcp { url, task }
}

/// The resource server of most tests: `mcp:read` for everything, `mcp:admin` for `admin_reset`.
fn resource_server(url: &str, issuer: &str, validator: impl TokenValidator) -> ResourceServer {
    builder(url, issuer).validator(validator).build().expect("resource server")
}

fn builder(url: &str, issuer: &str) -> ResourceServerBuilder {
    ResourceServer::builder(url)
        .authorization_server(issuer)
        .scopes_supported([READ, ADMIN])
        .required_scopes([READ])
        .tool_scopes("admin_reset", [ADMIN])
        .resource_name("Portico test server")
}

fn jwt(issuer: &str) -> JwtValidator {
    JwtValidator::builder(issuer)
        .algorithms(["ES256", "RS256"])
        .leeway(Duration::from_secs(1))
        .require_typ("at+jwt")
        .build()
        .expect("jwt")
}

/// A stateless-era `tools/call` of `tool` with `token` (if any): status, `WWW-Authenticate`
/// and the body.
async fn call(url: &str, token: Option<&str>, tool: &str) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut r = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body);
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let r = r.send().await.expect("post");
    let status = r.status().as_u16();
    let challenge = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let body = r.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

/// What `whoami` answered.
fn whoami(body: &Value) -> Value {
    let text = body["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no result: {body}"));
    serde_json::from_str(text).expect("whoami json")
}

fn metadata_url(url: &str) -> String {
    url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
}

#[tokio::test]
async fn a_valid_token_runs_the_tool_and_the_handler_sees_the_principal() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;

    let token = p.token("mcp-client", READ, &mcp.url).await;
    let (status, _, body) = call(&mcp.url, Some(&token), "whoami").await;
    assert_eq!(status, 200, "{body}");
    let who = whoami(&body);
    assert_eq!(who["subject"], "mcp-client", "{who}");
    assert_eq!(who["client"], "mcp-client");
    assert_eq!(who["scopes"], json!([READ]));
    assert_eq!(who["audience"], json!([mcp.url]));
    assert_eq!(who["expires"], true);
    assert_eq!(who["tenant"], "mcp-client", "raw claims are there too");

    // RS256 tokens too.
    let token = p.token("rs256-client", &format!("{READ} {ADMIN}"), &mcp.url).await;
    let (status, _, body) = call(&mcp.url, Some(&token), "whoami").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(whoami(&body)["scopes"], json!([ADMIN, READ]));
    let (status, _, body) = call(&mcp.url, Some(&token), "admin_reset").await;
    assert_eq!((status, body["result"]["content"][0]["text"].as_str()), (200, Some("reset")), "{body}");
}

#[tokio::test]
async fn no_token_is_401_with_the_metadata_url_and_scopes() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;

    let (status, challenge, _) = call(&mcp.url, None, "whoami").await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer scope=\"{READ}\", resource_metadata=\"{}\"", metadata_url(&mcp.url)),
        "no error code when no token was sent"
    );
    // Another scheme is no bearer token either; two Authorization headers are malformed.
    let send = |headers: &'static [&'static str]| {
        let url = mcp.url.clone();
        async move {
            let mut r = reqwest::Client::new().post(url).header("content-type", "application/json").body("{}");
            for h in headers {
                r = r.header("authorization", *h);
            }
            let r = r.send().await.expect("post");
            let c = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            (r.status().as_u16(), c)
        }
    };
    let (status, c) = send(&["Basic bWNwOnNlY3JldA=="]).await;
    assert!(status == 401 && !c.contains("error="), "{status} {c}");
    let (status, c) = send(&["Bearer a", "Bearer b"]).await;
    assert!(status == 400 && c.contains("error=\"invalid_request\""), "{status} {c}");
    // A GET (the handshake era's stream) and the legacy HTTP+SSE paths are checked too.
    for (method, path) in [("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/sse"), ("POST", "/messages?sessionId=x")] {
        let url = mcp.url.replace("/mcp", path);
        let r = reqwest::Client::new()
            .request(method.parse().expect("method"), &url)
            .header("accept", "text/event-stream")
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 401, "{method} {path}");
    }
}

#[tokio::test]
async fn bad_tokens_are_401_invalid_token() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let other = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;
    let invalid = |what: &str, (status, challenge, body): (u16, String, Value)| {
        assert_eq!(status, 401, "{what}: {body}");
        assert!(challenge.starts_with("Bearer error=\"invalid_token\""), "{what}: {challenge}");
        assert!(challenge.contains(&format!("resource_metadata=\"{}\"", metadata_url(&mcp.url))), "{challenge}");
        challenge
    };

    // Issued for another resource (RFC 8707 audience).
    let elsewhere = p.token("mcp-client", READ, "http://127.0.0.1:1/other-mcp").await;
    let c = invalid("wrong audience", call(&mcp.url, Some(&elsewhere), "whoami").await);
    assert!(c.contains("another resource"), "{c}");

    // Issued by another provider (unknown keys, other issuer) for this very resource.
    let foreign = other.token("mcp-client", READ, &mcp.url).await;
    invalid("wrong issuer", call(&mcp.url, Some(&foreign), "whoami").await);

    // Tampered: a valid token with another payload.
    let good = p.token("mcp-client", READ, &mcp.url).await;
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged = base64_url(&json!({"iss": p.issuer, "aud": mcp.url, "sub": "admin", "scope": "mcp:read mcp:admin",
        "exp": 4_000_000_000u64}));
    parts[1] = &forged;
    invalid("forged payload", call(&mcp.url, Some(&parts.join(".")), "whoami").await);
    invalid("garbage", call(&mcp.url, Some("not-a-jwt"), "whoami").await);

    // Expired (the provider issues 1 s tokens to this client; the leeway is 1 s).
    let short = p.token("short-lived", READ, &mcp.url).await;
    assert_eq!(call(&mcp.url, Some(&short), "whoami").await.0, 200, "fresh");
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let c = invalid("expired", call(&mcp.url, Some(&short), "whoami").await);
    assert!(c.contains("expired"), "{c}");
}

fn base64_url(v: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test]
async fn missing_scopes_are_403_insufficient_scope_with_the_scopes_needed() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;

    // Per tool: mcp:read lets whoami run, not admin_reset.
    let reader = p.token("mcp-client", READ, &mcp.url).await;
    assert_eq!(call(&mcp.url, Some(&reader), "whoami").await.0, 200);
    let (status, challenge, body) = call(&mcp.url, Some(&reader), "admin_reset").await;
    assert_eq!(status, 403, "{body}");
    assert!(challenge.starts_with("Bearer error=\"insufficient_scope\""), "{challenge}");
    // What the call needs, and what the token already has (so step-up loses nothing).
    assert!(challenge.contains(&format!("scope=\"{ADMIN} {READ}\"")), "{challenge}");
    assert!(challenge.contains(&format!("resource_metadata=\"{}\"", metadata_url(&mcp.url))), "{challenge}");
    assert_eq!(body["error"], "insufficient_scope");

    // Required everywhere: a token with only mcp:admin lacks mcp:read.
    let admin_only = p.token("mcp-client", ADMIN, &mcp.url).await;
    let (status, challenge, _) = call(&mcp.url, Some(&admin_only), "whoami").await;
    assert_eq!(status, 403);
    assert!(challenge.contains(&format!("scope=\"{ADMIN} {READ}\"")), "{challenge}");

    // Both: everything runs.
    let both = p.token("mcp-client", &format!("{READ} {ADMIN}"), &mcp.url).await;
    assert_eq!(call(&mcp.url, Some(&both), "admin_reset").await.0, 200);
}

#[tokio::test]
async fn handshake_sessions_get_per_method_scopes_and_belong_to_their_principal() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| {
        builder(url, &p.issuer).method_scopes("tools/list", [ADMIN]).validator(jwt(&p.issuer)).build().expect("rs")
    })
    .await;
    let reader = p.token("mcp-client", READ, &mcp.url).await;
    let someone_else = p.token("rs256-client", READ, &mcp.url).await;
    let post_as = |body: Value, session: Option<String>, token: String| {
        let url = mcp.url.clone();
        async move {
            let mut r = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .json(&body);
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            r.send().await.expect("post")
        }
    };
    let post = |body: Value, session: Option<String>| post_as(body, session, reader.clone());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let r = post(init, None).await;
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("session").to_string();
    let r = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), Some(session.clone())).await;
    assert_eq!(r.status().as_u16(), 403);
    let c = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert!(c.contains("insufficient_scope") && c.contains(ADMIN), "{c}");
    let call =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}});
    let r = post(call.clone(), Some(session.clone())).await;
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.expect("body");
    assert!(text.contains(r#"\"subject\":\"mcp-client\""#), "{text}");
    // Another principal with a valid token cannot use (or end) this session: it is unknown to them.
    let r = post_as(call.clone(), Some(session.clone()), someone_else.clone()).await;
    assert_eq!(r.status().as_u16(), 404);
    let r = reqwest::Client::new()
        .delete(&mcp.url)
        .bearer_auth(&someone_else)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(post(call, Some(session)).await.status().as_u16(), 200, "still there for its owner");
}

#[tokio::test]
async fn protected_resource_metadata_is_served_without_a_token() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;
    let expected = json!({
        "resource": mcp.url,
        "authorization_servers": [p.issuer],
        "scopes_supported": [READ, ADMIN],
        "bearer_methods_supported": ["header"],
        "resource_name": "Portico test server",
    });
    let root = mcp.url.replace("/mcp", "/.well-known/oauth-protected-resource");
    for url in [metadata_url(&mcp.url), root] {
        let r = reqwest::get(&url).await.expect("get");
        assert_eq!(r.status().as_u16(), 200, "{url}");
        assert_eq!(r.headers().get("content-type").and_then(|v| v.to_str().ok()), Some("application/json"));
        let v: Value = r.json().await.expect("json");
        assert_eq!(v, expected, "{url}");
    }
}

#[tokio::test]
async fn introspection_validates_opaque_tokens_with_the_provider() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let introspection = IntrospectionValidator::builder(&p.issuer, "mcp-server", "secret").build().expect("v");
    let mcp = serve(|url| resource_server(url, &p.issuer, introspection)).await;

    let token = p.token("opaque-client", READ, &mcp.url).await;
    assert_eq!(token.split('.').count(), 1, "an opaque token: {token}");
    let (status, _, body) = call(&mcp.url, Some(&token), "whoami").await;
    assert_eq!(status, 200, "{body}");
    let who = whoami(&body);
    assert_eq!((who["client"].as_str(), who["scopes"].clone()), (Some("opaque-client"), json!([READ])), "{who}");
    // Cached: the same answer again.
    assert_eq!(call(&mcp.url, Some(&token), "whoami").await.0, 200);
    // Scopes still apply.
    assert_eq!(call(&mcp.url, Some(&token), "admin_reset").await.0, 403);

    let elsewhere = p.token("opaque-client", READ, "http://127.0.0.1:1/other-mcp").await;
    let (status, challenge, _) = call(&mcp.url, Some(&elsewhere), "whoami").await;
    assert!(status == 401 && challenge.contains("invalid_token"), "{status} {challenge}");
    let (status, challenge, _) = call(&mcp.url, Some("no-such-token"), "whoami").await;
    assert!(status == 401 && challenge.contains("invalid_token"), "{status} {challenge}");

    // A wrong secret: the provider refuses to answer, so the server cannot check (503).
    let wrong = IntrospectionValidator::builder(&p.issuer, "mcp-server", "wrong").build().expect("v");
    let mcp2 = serve(|url| resource_server(url, &p.issuer, wrong)).await;
    let token = p.token("opaque-client", READ, &mcp2.url).await;
    assert_eq!(call(&mcp2.url, Some(&token), "whoami").await.0, 503);
}

#[cfg(feature = "http-client")]
#[tokio::test]
async fn the_portico_client_works_through_the_bearer_layer_in_both_eras() {
    use portico::client::{Client, EraMode};
    use portico::schema::ProtocolVersion;
    use portico::transport::http::client::HttpClientTransport;
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;
    let token = p.token("mcp-client", READ, &mcp.url).await;
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let t = HttpClientTransport::new(&mcp.url).header("authorization", format!("Bearer {token}"));
        let c = Client::builder(Implementation::new("t", "0")).era(mode).connect(t).await.expect("connect");
        let r = c.call_tool("whoami", json!({})).await.expect("whoami");
        let text = r.content.first().and_then(|b| b.as_text()).expect("text");
        assert!(text.contains("\"subject\":\"mcp-client\""), "{mode:?}: {text}");
        assert!(c.call_tool("admin_reset", json!({})).await.is_err(), "{mode:?}: 403");
    }
    let t = HttpClientTransport::new(&mcp.url);
    assert!(Client::builder(Implementation::new("t", "0")).connect(t).await.is_err(), "no token, no connection");
}

/// A JWKS server in the test: serves whatever keys it is given, counting fetches.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Jwks {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn jwks_server() -> Jwks {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (k, f) = (keys.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            let (k, f) = (k.clone(), f.clone());
            async move {
                f.fetch_add(1, Ordering::SeqCst);
                let keys = k.lock().expect("keys").clone();
                ([("content-type", "application/json")], json!({ "keys": keys }).to_string())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/jwks", listener.local_addr().expect("addr").port());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Jwks { url, keys, fetches, task }
}

/// A test key (tests/oidc/keys, made with `openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256`): its signing key and public JWK under `kid`.
fn key(name: &str, kid: &str) -> (EncodingKey, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/oidc/keys/es256-{name}.pem"));
    let pem = std::fs::read(path).expect("key file");
    let enc = EncodingKey::from_ec_pem(&pem).expect("pem");
    let mut jwk = serde_json::to_value(jsonwebtoken::jwk::Jwk::from_encoding_key(&enc, Algorithm::ES256).expect("jwk"))
        .expect("jwk json");
    jwk["kid"] = json!(kid);
    jwk["use"] = json!("sig");
    (enc, jwk)
}

fn sign(key: &EncodingKey, kid: &str, claims: Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some(kid.into());
    jsonwebtoken::encode(&h, &claims, key).expect("sign")
}

#[tokio::test]
async fn jwks_rotation_refetches_on_an_unknown_kid_at_a_bounded_rate() {
    const ISSUER: &str = "https://issuer.test";
    let jwks = jwks_server().await;
    let (a, a_jwk) = key("a", "key-a");
    let (b, b_jwk) = key("b", "key-b");
    let (foreign, _) = key("foreign", "key-a");
    jwks.keys.lock().expect("keys").push(a_jwk.clone());
    let validator = JwtValidator::builder(ISSUER)
        .jwks_uri(&jwks.url)
        .algorithms(["ES256"])
        .min_refetch_interval(Duration::from_millis(1000))
        .build()
        .expect("validator");
    let mcp = serve(|url| resource_server(url, ISSUER, validator)).await;
    let claims = |iss: &str, aud: &str| {
        let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("now").as_secs() + 300;
        json!({"iss": iss, "aud": aud, "sub": "u1", "scope": READ, "exp": exp})
    };

    let t = sign(&a, "key-a", claims(ISSUER, &mcp.url));
    assert_eq!(call(&mcp.url, Some(&t), "whoami").await.0, 200);
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 1, "fetched once, on first use");
    assert_eq!(call(&mcp.url, Some(&t), "whoami").await.0, 200);
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 1, "then cached");

    // The issuer rotates to key B; a token signed with it makes the server refetch.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    jwks.keys.lock().expect("keys").push(b_jwk);
    let t = sign(&b, "key-b", claims(ISSUER, &mcp.url));
    let (status, _, body) = call(&mcp.url, Some(&t), "whoami").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(whoami(&body)["subject"], "u1");
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2, "refetched for the new kid");

    // Unknown kids right after a fetch do not reach the issuer again.
    for i in 0..5 {
        let t = sign(&b, &format!("made-up-{i}"), claims(ISSUER, &mcp.url));
        assert_eq!(call(&mcp.url, Some(&t), "whoami").await.0, 401);
    }
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2, "rate-limited");

    // Signed by a foreign key claiming kid key-a; another issuer; another audience.
    for (what, t) in [
        ("foreign key", sign(&foreign, "key-a", claims(ISSUER, &mcp.url))),
        ("foreign issuer", sign(&a, "key-a", claims("https://evil.test", &mcp.url))),
        ("other audience", sign(&a, "key-a", claims(ISSUER, "https://other.test/mcp"))),
    ] {
        let (status, challenge, _) = call(&mcp.url, Some(&t), "whoami").await;
        assert!(status == 401 && challenge.contains("invalid_token"), "{what}: {status} {challenge}");
    }
    // A symmetric algorithm with the public key as secret (algorithm confusion) is refused.
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("key-a".into());
    let hs =
        jsonwebtoken::encode(&h, &claims(ISSUER, &mcp.url), &EncodingKey::from_secret(a_jwk.to_string().as_bytes()))
            .expect("hs");
    assert_eq!(call(&mcp.url, Some(&hs), "whoami").await.0, 401);
}

/// Accepts `good` (all scopes) and `reader` (read only), for this server's URL.
struct Static(String);

impl TokenValidator for Static {
    fn validate<'a>(&'a self, token: &'a str) -> portico::auth::server::ValidateFuture<'a> {
        Box::pin(async move {
            let scopes: &[&str] = match token {
                "good" => &[READ, ADMIN],
                "reader" => &[READ],
                "owner" => &["mcp:owner"],
                "down" => return Err(portico::auth::server::TokenRejection::unavailable("the issuer is down")),
                _ => return Err(portico::auth::server::TokenRejection::invalid_token("unknown token")),
            };
            Ok(AuthInfo::new().with_subject(token).with_scopes(scopes.iter().copied()).with_audience([&self.0]))
        })
    }
}

#[tokio::test]
async fn a_custom_validator_behind_a_layer_mounted_by_hand() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
    let url = format!("{base}/mcp");
    // A scope hierarchy: owner ⊃ admin ⊃ read.
    let auth = builder(&url, "https://issuer.test")
        .scope_implies("mcp:owner", [ADMIN])
        .scope_implies(ADMIN, [READ])
        .validator(Static(url.clone()))
        .build()
        .expect("resource server");
    // What reaches the endpoint behind the layer: the Authorization header must not.
    let leaked = Arc::new(AtomicUsize::new(0));
    let seen = leaked.clone();
    let endpoint = StreamableHttp::new(mcp_server()).build();
    let app = axum::Router::new()
        .merge(
            endpoint
                .router("/mcp")
                .layer(axum::middleware::from_fn(move |req: axum::extract::Request, next: axum::middleware::Next| {
                    let seen = seen.clone();
                    async move {
                        if req.headers().contains_key("authorization") {
                            seen.fetch_add(1, Ordering::SeqCst);
                        }
                        next.run(req).await
                    }
                }))
                .layer(auth.layer()),
        )
        .merge(auth.metadata_router())
        .route("/health", axum::routing::get(|| async { "ok" }));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    assert_eq!(reqwest::get(format!("{base}/health")).await.expect("health").status().as_u16(), 200, "unprotected");
    let meta: Value = reqwest::get(auth.metadata_url()).await.expect("metadata").json().await.expect("json");
    assert_eq!(meta["resource"], url);
    assert_eq!(auth.metadata(), meta);

    let (status, _, body) = call(&url, Some("good"), "whoami").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(whoami(&body)["subject"], "good");
    assert_eq!(call(&url, Some("good"), "admin_reset").await.0, 200);
    assert_eq!(call(&url, Some("reader"), "admin_reset").await.0, 403);
    let (status, _, body) = call(&url, Some("owner"), "whoami").await;
    assert_eq!(status, 200, "owner implies read");
    assert_eq!(whoami(&body)["scopes"], json!([ADMIN, "mcp:owner", READ]), "handlers see implied scopes");
    assert_eq!(call(&url, Some("owner"), "admin_reset").await.0, 200, "and admin");
    assert_eq!(call(&url, Some("bogus"), "whoami").await.0, 401);
    let (status, challenge, _) = call(&url, Some("down"), "whoami").await;
    assert_eq!((status, challenge.as_str()), (503, ""), "cannot check now: no challenge, retry later");
    assert_eq!(leaked.load(Ordering::SeqCst), 0, "the token never got past the layer");

    // Legacy HTTP+SSE sessions belong to their principal too.
    let mut sse = reqwest::Client::new()
        .get(format!("{base}/sse"))
        .bearer_auth("good")
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("sse");
    assert_eq!(sse.status().as_u16(), 200);
    let mut events = String::new();
    while !events.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), sse.chunk()).await.expect("in time").expect("chunk");
        events.push_str(&String::from_utf8_lossy(&chunk.expect("the endpoint event")));
    }
    let path = events.lines().find_map(|l| l.strip_prefix("data:")).expect("endpoint").trim().to_string();
    let post = |token: &'static str| {
        reqwest::Client::new()
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#)
            .send()
    };
    assert_eq!(post("owner").await.expect("post").status().as_u16(), 404, "someone else's session");
    assert_eq!(post("good").await.expect("post").status().as_u16(), 202, "its owner's");
    task.abort();
}

/// Both sides of Portico's authorization against a real provider: the OAuth client discovers
/// the provider through the resource server's metadata, gets a token for this resource with
/// the challenged scope, and steps up when a tool needs more. The provider supports DPoP, so the
/// client's first token is DPoP-bound; this resource server takes bearer tokens only and says so
/// (a `Bearer` challenge without `DPoP`), and the client asks for a bearer token instead.
#[cfg(all(feature = "http-client", feature = "auth-client"))]
#[tokio::test]
async fn the_portico_oauth_client_authorizes_and_steps_up_against_the_portico_resource_server() {
    use portico::auth::{GrantType, OAuthClient};
    use portico::client::{Client, EraMode};
    use portico::schema::ProtocolVersion;
    use portico::transport::http::client::HttpClientTransport;
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let mcp = serve(|url| resource_server(url, &p.issuer, jwt(&p.issuer))).await;
    for mode in [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let oauth = OAuthClient::builder()
            .grant(GrantType::ClientCredentials)
            .client_credentials("mcp-client", Some("secret".to_string()))
            .build()
            .expect("oauth client");
        let t = HttpClientTransport::new(&mcp.url).auth(oauth.clone());
        let c = Client::builder(Implementation::new("t", "0")).era(mode).connect(t).await.expect("connect");
        let r = c.call_tool("whoami", json!({})).await.expect("whoami");
        let text = r.content.first().and_then(|b| b.as_text()).expect("text");
        let who: Value = serde_json::from_str(text).expect("json");
        assert_eq!(who["client"], "mcp-client", "{mode:?}: {who}");
        assert_eq!(who["scopes"], json!([READ]), "{mode:?}: the challenged scope only, at first");
        // `admin_reset` needs mcp:admin: 403 insufficient_scope, the client steps up, the call
        // goes through on the retry.
        let r = c.call_tool("admin_reset", json!({})).await.expect("stepped up");
        assert_eq!(r.content.first().and_then(|b| b.as_text()), Some("reset"), "{mode:?}");
        let r = c.call_tool("whoami", json!({})).await.expect("whoami");
        let who: Value = serde_json::from_str(r.content[0].as_text().expect("text")).expect("json");
        let mut scopes: Vec<String> = serde_json::from_value(who["scopes"].clone()).expect("scopes");
        scopes.sort();
        assert_eq!(scopes, vec![ADMIN.to_string(), READ.to_string()], "{mode:?}: the union after step-up");
        c.close().await;
    }
}

/// With the macros, the principal is a parameter: `Extension<AuthInfo>`.
#[cfg(feature = "macros")]
#[portico::tool]
async fn me(who: portico::server::Extension<AuthInfo>) -> String {
    format!("{} via {}", who.subject().unwrap_or("?"), who.client_id().unwrap_or("?"))
}

#[cfg(feature = "macros")]
#[tokio::test]
async fn macro_tools_take_the_principal_by_type() {
    let Some((node, module)) = installed() else { return };
    let p = Provider::start(&node, &module).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let server = me::register(Server::builder(Implementation::new("macro", "1.0.0"))).build();
    let auth = resource_server(&url, &p.issuer, jwt(&p.issuer));
    let endpoint = StreamableHttp::new(server).authorization(auth).build();
    let task = tokio::spawn(async move {
        let _ = endpoint.serve_with_shutdown(listener, std::future::pending()).await;
    });
    let token = p.token("mcp-client", READ, &url).await;
    let (status, _, body) = call(&url, Some(&token), "me").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "mcp-client via mcp-client", "{body}");
    task.abort();
}

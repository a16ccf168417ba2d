//! The OAuth client against an in-test authorization server and protected MCP endpoint
//! (one axum app on 127.0.0.1:0): discovery order, PKCE and state, resource checks, scope
//! selection, step-up and its limit, the token on every request and never in a URL, refresh
//! rotation, and the file store's permissions.
#![cfg(feature = "auth-client")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Request, Response, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico::auth::{AddressPolicy, AuthError, FileTokenStore, OAuthClient, StoredAuth, TokenStore};
use portico::client::{Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion};
use portico::transport::http::client::HttpClientTransport;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How the test servers behave.
#[derive(Clone, Default)]
struct Setup {
    /// Put `resource_metadata` in the 401 challenge.
    prm_in_challenge: bool,
    /// `scope` of the 401 challenge.
    challenge_scope: Option<&'static str>,
    /// The PRM's `scopes_supported`.
    scopes_supported: Option<Vec<&'static str>>,
    /// The PRM's `resource` (default: the MCP URL).
    resource: Option<String>,
    /// Omit `code_challenge_methods_supported` from the AS metadata.
    no_pkce: bool,
    /// A scope `tools/call` needs (403 insufficient_scope without it).
    call_needs: Option<&'static str>,
    /// `tools/call` always answers 403 insufficient_scope.
    always_forbidden: bool,
    /// `expires_in` of access tokens.
    expires_in: Option<u64>,
    /// The AS binds tokens to DPoP proofs; the MCP endpoint demands a nonce first.
    dpop: bool,
    /// The authorization response's `iss` (default: the issuer).
    iss: Option<&'static str>,
    /// The metadata's `issuer` (default: the base URL).
    metadata_issuer: Option<&'static str>,
    /// A 2025-03-26 server: no protected resource metadata, no authorization server metadata.
    legacy: bool,
    /// The token endpoint takes only the client credentials grant with this `client_id:secret`
    /// (HTTP Basic).
    client_credentials: Option<&'static str>,
    /// `resource_metadata` of the 401 challenge, instead of the real one (with `prm_in_challenge`).
    challenge_prm: Option<&'static str>,
    /// The PRM's `authorization_servers` (default: the base URL).
    authorization_server: Option<&'static str>,
}

/// One HTTP request the servers saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// Path and query.
    uri: String,
    authorization: Option<String>,
    body: String,
}

#[derive(Default)]
struct World {
    setup: Setup,
    base: String,
    seen: Vec<Seen>,
    /// PKCE challenge of the last authorization request.
    challenge: Option<String>,
    /// Access token → scopes.
    tokens: HashMap<String, String>,
    /// The only refresh token the server accepts (rotation).
    live_refresh: Option<String>,
    issued: u32,
    /// DPoP: what the MCP endpoint checked on each request.
    dpop_checks: Vec<Result<(), String>>,
}

type Shared = Arc<Mutex<World>>;

fn lock(w: &Shared) -> std::sync::MutexGuard<'_, World> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

fn json_response(status: StatusCode, v: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .expect("response")
}

fn pairs(s: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("x:?{s}")).expect("query").query_pairs().into_owned().collect()
}

async fn handle(world: Shared, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = String::from_utf8_lossy(&to_bytes(body, 1 << 20).await.unwrap_or_default()).into_owned();
    let headers: HeaderMap = parts.headers.clone();
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let uri = parts.uri.to_string();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let mut w = lock(&world);
    w.seen.push(Seen {
        method: parts.method.to_string(),
        uri,
        authorization: authorization.clone(),
        body: body.clone(),
    });
    let base = w.base.clone();
    let setup = w.setup.clone();
    let legacy_hidden = setup.legacy && path.starts_with("/.well-known/");
    match (parts.method.as_str(), path.as_str()) {
        _ if legacy_hidden => json_response(StatusCode::NOT_FOUND, json!({ "error": "not_found" })),
        ("POST", "/token") if setup.client_credentials.is_some() => {
            let f = pairs(&body);
            let expected = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(setup.client_credentials.unwrap_or_default())
            );
            if f.get("grant_type").map(String::as_str) != Some("client_credentials")
                || authorization.as_deref() != Some(expected.as_str())
            {
                return json_response(StatusCode::UNAUTHORIZED, json!({ "error": "invalid_client" }));
            }
            w.issued += 1;
            let access = format!("cc-{}", w.issued);
            w.tokens.insert(access.clone(), f.get("scope").cloned().unwrap_or_default());
            json_response(StatusCode::OK, json!({ "access_token": access, "token_type": "Bearer" }))
        }
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let mut prm = json!({
                "resource": setup.resource.clone().unwrap_or_else(|| format!("{base}/mcp")),
                "authorization_servers": [setup.authorization_server.map_or_else(|| base.to_owned(), str::to_owned)],
            });
            if let Some(s) = &setup.scopes_supported {
                prm["scopes_supported"] = json!(s);
            }
            json_response(StatusCode::OK, prm)
        }
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut meta = json!({
                "issuer": setup.metadata_issuer.map(str::to_owned).unwrap_or_else(|| base.clone()),
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            });
            if !setup.no_pkce {
                meta["code_challenge_methods_supported"] = json!(["S256"]);
            }
            if setup.dpop {
                meta["dpop_signing_alg_values_supported"] = json!(["ES256"]);
            }
            if setup.client_credentials.is_some() {
                meta["token_endpoint_auth_methods_supported"] = json!(["client_secret_basic"]);
            }
            json_response(StatusCode::OK, meta)
        }
        ("POST", "/register") => json_response(StatusCode::CREATED, json!({ "client_id": "registered-client" })),
        ("GET", "/authorize") => {
            let q = pairs(&query);
            w.challenge = q.get("code_challenge").cloned();
            let scope = q.get("scope").cloned().unwrap_or_default();
            let mut back = reqwest::Url::parse(&q["redirect_uri"]).expect("redirect_uri");
            back.query_pairs_mut()
                .append_pair("code", &format!("code:{scope}"))
                .append_pair("state", q.get("state").map(String::as_str).unwrap_or_default())
                .append_pair("iss", setup.iss.unwrap_or(&base));
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", back.as_str())
                .body(Body::empty())
                .expect("302")
        }
        ("POST", "/token") => {
            let f = pairs(&body);
            let scope = match f.get("grant_type").map(String::as_str) {
                Some("authorization_code") => {
                    let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                    if w.challenge.as_deref() != Some(computed.as_str()) {
                        return json_response(StatusCode::BAD_REQUEST, json!({ "error": "invalid_grant" }));
                    }
                    f.get("code").and_then(|c| c.strip_prefix("code:")).unwrap_or_default().to_owned()
                }
                Some("refresh_token") => {
                    if f.get("refresh_token") != w.live_refresh.as_ref() {
                        return json_response(StatusCode::BAD_REQUEST, json!({ "error": "invalid_grant" }));
                    }
                    "read".to_owned()
                }
                _ => return json_response(StatusCode::BAD_REQUEST, json!({ "error": "unsupported_grant_type" })),
            };
            if setup.dpop {
                let token_url = format!("{base}/token");
                let proof = headers.get("dpop").and_then(|v| v.to_str().ok()).unwrap_or_default();
                if let Err(e) = check_proof(proof, "POST", &token_url, None, None) {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        json!({ "error": "invalid_dpop_proof", "error_description": e }),
                    );
                }
            }
            w.issued += 1;
            let access = format!("at-{}", w.issued);
            let refresh = format!("rt-{}", w.issued);
            w.tokens.insert(access.clone(), scope);
            w.live_refresh = Some(refresh.clone());
            let kind = if setup.dpop { "DPoP" } else { "Bearer" };
            let mut t = json!({ "access_token": access, "token_type": kind, "refresh_token": refresh });
            if let Some(e) = setup.expires_in {
                t["expires_in"] = json!(e);
            }
            json_response(StatusCode::OK, t)
        }
        ("POST", "/mcp") if setup.dpop && authorization.is_some() => {
            let (scheme, token) = authorization.as_deref().and_then(|a| a.split_once(' ')).unwrap_or_default();
            let proof = headers.get("dpop").and_then(|v| v.to_str().ok()).unwrap_or_default();
            let nonce_seen = w.dpop_checks.iter().any(|c| c.is_ok());
            let check = if scheme != "DPoP" {
                Err(format!("scheme {scheme}"))
            } else {
                check_proof(proof, "POST", &format!("{base}/mcp"), Some(token), Some("rs-nonce"))
            };
            let asked = check.as_ref().is_err_and(|e| e.starts_with("nonce"));
            w.dpop_checks.push(check.clone());
            if asked && !nonce_seen {
                return Response::builder()
                    .status(401)
                    .header("www-authenticate", "DPoP error=\"use_dpop_nonce\"")
                    .header("dpop-nonce", "rs-nonce")
                    .body(Body::empty())
                    .expect("401");
            }
            mcp(&w, &setup, &base, Some(&format!("Bearer {token}")), &body)
        }
        ("POST", "/mcp") => mcp(&w, &setup, &base, authorization.as_deref(), &body),
        ("DELETE", "/mcp") => json_response(StatusCode::OK, json!({})),
        ("GET", "/mcp") => json_response(StatusCode::METHOD_NOT_ALLOWED, json!({})),
        _ => json_response(StatusCode::NOT_FOUND, json!({ "error": "not_found" })),
    }
}

/// Checks a DPoP proof: signature with its own `jwk`, `typ`, `htm`, `htu`, `ath`, `nonce`.
fn check_proof(proof: &str, htm: &str, htu: &str, token: Option<&str>, nonce: Option<&str>) -> Result<(), String> {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    let parts: Vec<&str> = proof.split('.').collect();
    if parts.len() != 3 {
        return Err("not a JWS".into());
    }
    let decode = |p: &str| -> Result<Value, String> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).map_err(|e| e.to_string())?).map_err(|e| e.to_string())
    };
    let (header, claims) = (decode(parts[0])?, decode(parts[1])?);
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
        return Err(format!("header {header}"));
    }
    let coord = |k: &str| URL_SAFE_NO_PAD.decode(header["jwk"][k].as_str().unwrap_or_default()).unwrap_or_default();
    let point = [vec![4u8], coord("x"), coord("y")].concat();
    let sig = URL_SAFE_NO_PAD.decode(parts[2]).map_err(|e| e.to_string())?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .map_err(|_| "bad signature".to_owned())?;
    if claims["htm"] != htm || claims["htu"] != htu {
        return Err(format!("htm/htu {claims}"));
    }
    if let Some(t) = token
        && claims["ath"] != URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes()))
    {
        return Err("ath".into());
    }
    if let Some(n) = nonce
        && claims["nonce"] != n
    {
        return Err("nonce missing or wrong".into());
    }
    Ok(())
}

/// The protected MCP endpoint (handshake era, no sessions).
fn mcp(w: &World, setup: &Setup, base: &str, authorization: Option<&str>, body: &str) -> Response<Body> {
    let prm =
        setup.challenge_prm.map_or_else(|| format!("{base}/.well-known/oauth-protected-resource/mcp"), str::to_owned);
    let scopes = authorization.and_then(|a| a.strip_prefix("Bearer ")).and_then(|t| w.tokens.get(t)).cloned();
    let Some(scopes) = scopes else {
        let mut c = "Bearer error=\"invalid_token\"".to_owned();
        if let Some(s) = setup.challenge_scope {
            c.push_str(&format!(", scope=\"{s}\""));
        }
        if setup.prm_in_challenge {
            c.push_str(&format!(", resource_metadata=\"{prm}\""));
        }
        return Response::builder().status(401).header("www-authenticate", c).body(Body::empty()).expect("401");
    };
    let msg: Value = serde_json::from_str(body).unwrap_or_default();
    let Some(id) = msg.get("id").cloned() else {
        return Response::builder().status(202).body(Body::empty()).expect("202");
    };
    let method = msg["method"].as_str().unwrap_or_default();
    let needs = setup.call_needs.filter(|n| !scopes.split(' ').any(|s| s == *n));
    if method == "tools/call" && (setup.always_forbidden || needs.is_some()) {
        let scope = needs.or(setup.call_needs).unwrap_or("admin");
        let c = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{prm}\"");
        return Response::builder().status(403).header("www-authenticate", c).body(Body::empty()).expect("403");
    }
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "protected", "version": "1.0.0" },
        }),
        "tools/list" => json!({ "tools": [{ "name": "t", "inputSchema": { "type": "object" } }] }),
        "tools/call" => json!({ "content": [{ "type": "text", "text": "ok" }] }),
        _ => {
            return json_response(
                StatusCode::OK,
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "no" } }),
            );
        }
    };
    json_response(StatusCode::OK, json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

/// Starts the servers; returns the shared world and the MCP URL.
async fn start(setup: Setup) -> (Shared, String) {
    let world: Shared = Arc::new(Mutex::new(World { setup, ..Default::default() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
    lock(&world).base = base.clone();
    let w = world.clone();
    let app = axum::Router::new().fallback(move |req: Request<Body>| handle(w.clone(), req));
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (world, format!("{base}/mcp"))
}

async fn connect(url: &str, oauth: OAuthClient) -> Result<Client, portico::Error> {
    Client::builder(Implementation::new("auth-test", "1.0.0"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .connect(HttpClientTransport::new(url).auth(oauth))
        .await
}

fn oauth() -> OAuthClient {
    OAuthClient::builder().client_name("auth-test").build().expect("client")
}

fn seen(world: &Shared) -> Vec<Seen> {
    lock(world).seen.clone()
}

fn authorize_queries(world: &Shared) -> Vec<HashMap<String, String>> {
    seen(world)
        .iter()
        .filter(|s| s.uri.starts_with("/authorize"))
        .map(|s| pairs(s.uri.split_once('?').map(|x| x.1).unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn discovers_in_order_and_authorizes_with_pkce_state_and_resource() {
    let (world, url) = start(Setup::default()).await;
    let client = connect(&url, oauth()).await.expect("connect");
    client.list_all_tools().await.expect("tools/list");
    client.call_tool("t", json!({})).await.expect("tools/call");
    let log = seen(&world);
    let gets: Vec<&str> = log.iter().filter(|s| s.method == "GET").map(|s| s.uri.as_str()).collect();
    // No resource_metadata in the challenge: the path-inserted well-known URL first, and the
    // root one never (the first was found).
    assert_eq!(gets[0], "/.well-known/oauth-protected-resource/mcp", "{gets:?}");
    assert_eq!(gets[1], "/.well-known/oauth-authorization-server", "{gets:?}");
    assert!(!gets.contains(&"/.well-known/oauth-protected-resource"), "{gets:?}");
    let q = &authorize_queries(&world)[0];
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43);
    assert!(q["state"].len() >= 16);
    assert_eq!(q["resource"], url);
    assert_eq!(q["client_id"], "registered-client");
    assert!(!q.contains_key("scope"), "no scope anywhere: none requested");
    let token = log.iter().find(|s| s.uri == "/token").expect("token request");
    let form = pairs(&token.body);
    assert_eq!(form["resource"], url);
    assert!(form.contains_key("code_verifier"));
    // The bearer token on every MCP request after the first 401, never in a URL.
    let mcp: Vec<&Seen> = log.iter().filter(|s| s.uri.starts_with("/mcp") && s.method == "POST").collect();
    assert!(mcp[0].authorization.is_none());
    assert!(mcp[1..].iter().all(|s| s.authorization.as_deref() == Some("Bearer at-1")), "{mcp:?}");
    assert!(log.iter().all(|s| !s.uri.contains("at-1") && !s.uri.contains("access_token")));
    client.close().await;
}

#[tokio::test]
async fn follows_the_challenge_resource_metadata_and_uses_its_scope() {
    let setup = Setup {
        prm_in_challenge: true,
        challenge_scope: Some("read"),
        scopes_supported: Some(vec!["read", "write"]),
        ..Default::default()
    };
    let (world, url) = start(setup).await;
    let client = connect(&url, oauth()).await.expect("connect");
    let q = &authorize_queries(&world)[0];
    assert_eq!(q["scope"], "read", "the challenge's scope wins over scopes_supported");
    client.close().await;
}

#[tokio::test]
async fn falls_back_to_scopes_supported() {
    let setup = Setup { scopes_supported: Some(vec!["read", "write"]), ..Default::default() };
    let (world, url) = start(setup).await;
    let client = connect(&url, oauth()).await.expect("connect");
    assert_eq!(authorize_queries(&world)[0]["scope"], "read write");
    client.close().await;
}

#[tokio::test]
async fn refuses_a_resource_that_is_not_this_server() {
    let setup = Setup { resource: Some("https://evil.example.com/mcp".into()), ..Default::default() };
    let (world, url) = start(setup).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    assert!(err.to_string().contains("evil.example.com"), "{err}");
    assert!(authorize_queries(&world).is_empty(), "no authorization request may be made");
    assert!(!seen(&world).iter().any(|s| s.uri == "/token"));
}

#[tokio::test]
async fn refuses_an_authorization_server_without_pkce_s256() {
    let (world, url) = start(Setup { no_pkce: true, ..Default::default() }).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    assert!(err.to_string().contains("S256"), "{err}");
    assert!(authorize_queries(&world).is_empty());
}

#[tokio::test]
async fn steps_up_with_the_union_of_scopes() {
    let setup = Setup { challenge_scope: Some("read"), call_needs: Some("write"), ..Default::default() };
    let (world, url) = start(setup).await;
    let client = connect(&url, oauth()).await.expect("connect");
    client.call_tool("t", json!({})).await.expect("tools/call after step-up");
    let qs = authorize_queries(&world);
    assert_eq!(qs.len(), 2);
    assert_eq!(qs[0]["scope"], "read");
    assert_eq!(qs[1]["scope"], "read write");
    client.close().await;
}

#[tokio::test]
async fn gives_up_after_the_retry_limit() {
    let setup = Setup { challenge_scope: Some("read"), always_forbidden: true, ..Default::default() };
    let (world, url) = start(setup).await;
    let oauth = OAuthClient::builder().max_authorizations(3).build().expect("client");
    let client = connect(&url, oauth).await.expect("connect");
    let before = authorize_queries(&world).len();
    let err = client.call_tool("t", json!({})).await.expect_err("must give up");
    let wire = err.peer_error().expect("answered with an error");
    assert!(
        wire.message.contains("authorization failed") && wire.message.contains("3 authorization attempts"),
        "{wire:?}"
    );
    assert_eq!(wire.data.as_ref().and_then(|d| d["httpStatus"].as_u64()), Some(401));
    let step_ups = authorize_queries(&world).len() - before;
    assert_eq!(step_ups, 3, "one request may trigger at most 3 authorizations");
    client.close().await;
}

#[tokio::test]
async fn refreshes_with_the_rotated_refresh_token() {
    // expires_in 1 s is inside the refresh margin: every request refreshes first.
    let (world, url) = start(Setup { expires_in: Some(1), ..Default::default() }).await;
    let client = connect(&url, oauth()).await.expect("connect");
    for _ in 0..3 {
        client.list_all_tools().await.expect("tools/list with a refreshed token");
    }
    let log = seen(&world);
    let refreshes: Vec<String> = log
        .iter()
        .filter(|s| s.uri == "/token")
        .map(|s| pairs(&s.body))
        .filter(|f| f["grant_type"] == "refresh_token")
        .map(|f| f["refresh_token"].clone())
        .collect();
    assert!(refreshes.len() >= 3, "{refreshes:?}");
    // Each refresh presents the token the previous one returned (the server accepts no other).
    for (i, rt) in refreshes.iter().enumerate() {
        assert_eq!(rt, &format!("rt-{}", i + 1));
    }
    assert_eq!(authorize_queries(&world).len(), 1, "refreshing needs no new authorization");
    client.close().await;
}

#[tokio::test]
async fn tokens_are_not_sent_in_urls_and_are_reported() {
    let (world, url) = start(Setup::default()).await;
    let oauth = oauth();
    let client = connect(&url, oauth.clone()).await.expect("connect");
    let tokens = oauth.tokens(&url).await.expect("tokens held");
    assert_eq!(tokens.access_token, "at-1");
    assert_eq!(tokens.refresh_token.as_deref(), Some("rt-1"));
    assert!(seen(&world).iter().all(|s| !s.uri.contains("at-1")));
    client.close().await;
}

#[test]
fn file_store_is_private_and_round_trips() {
    let dir = std::env::temp_dir().join(format!("portico-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("tokens.json");
    std::fs::write(&path, b"{}").expect("pre-existing file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let store = FileTokenStore::new(&path);
    let saved: StoredAuth = serde_json::from_value(json!({
        "issuer": "http://as", "token_endpoint": "http://as/token", "resource": "http://rs/mcp",
        "client": { "client_id": "c" }, "tokens": { "access_token": "secret-at", "refresh_token": "secret-rt" },
    }))
    .expect("stored auth");
    store.save("http://rs/mcp", &saved).expect("save");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "token file mode {mode:o}");
    }
    assert_eq!(store.load("http://rs/mcp").expect("load"), Some(saved));
    assert_eq!(store.load("http://other").expect("load"), None);
    store.remove("http://rs/mcp").expect("remove");
    assert_eq!(store.load("http://rs/mcp").expect("load"), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn registration_without_any_way_is_a_clear_error() {
    let e = AuthError::NotConfigured { issuer: "http://as".into() };
    assert!(e.is_config());
    assert!(e.to_string().contains("client_credentials"), "{e}");
}

#[tokio::test]
async fn loopback_redirect_returns_the_callback_url() {
    use portico::auth::{LoopbackRedirect, RedirectHandler};
    let opened: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen_urls = opened.clone();
    let redirect =
        LoopbackRedirect::bind(0, move |url| lock_vec(&seen_urls).push(url.to_string())).await.expect("bind 127.0.0.1");
    let uri = redirect.redirect_uri();
    assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"), "{uri}");
    // The "browser": a wrong path first (answered 404), then the redirect back.
    let browser = tokio::spawn({
        let uri = uri.clone();
        async move {
            let http = reqwest::Client::new();
            let wrong = uri.replace("/callback", "/favicon.ico");
            let status = http.get(&wrong).send().await.expect("GET").status();
            assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
            http.get(format!("{uri}?code=abc&state=xyz")).send().await.expect("GET callback").status()
        }
    });
    let auth_url = reqwest::Url::parse("http://as.test/authorize?x=1").expect("url");
    let back = redirect.authorize(&reqwest::Client::new(), auth_url).await.expect("callback");
    assert_eq!(back.path(), "/callback");
    let q: HashMap<String, String> = back.query_pairs().into_owned().collect();
    assert_eq!((q["code"].as_str(), q["state"].as_str()), ("abc", "xyz"));
    assert_eq!(browser.await.expect("browser task"), reqwest::StatusCode::OK);
    assert_eq!(lock_vec(&opened).as_slice(), ["http://as.test/authorize?x=1"]);
}

fn lock_vec(v: &Mutex<Vec<String>>) -> std::sync::MutexGuard<'_, Vec<String>> {
    v.lock().unwrap_or_else(|e| e.into_inner())
}

#[tokio::test]
async fn binds_tokens_with_dpop_and_honours_the_server_nonce() {
    let (world, url) = start(Setup { dpop: true, ..Default::default() }).await;
    let client = connect(&url, oauth()).await.expect("connect");
    client.list_all_tools().await.expect("tools/list");
    let checks = lock(&world).dpop_checks.clone();
    // The first proof lacked the nonce the server had not yet given; every one after it is
    // valid: DPoP scheme, a signature by the jwk, htm, htu, ath and the nonce.
    assert!(checks.len() >= 3, "{checks:?}");
    assert_eq!(checks[0], Err("nonce missing or wrong".to_owned()));
    assert!(checks[1..].iter().all(Result::is_ok), "{checks:?}");
    assert_eq!(authorize_queries(&world).len(), 1, "a nonce challenge needs no new authorization");
    client.close().await;
}

#[tokio::test]
async fn dpop_can_be_turned_off() {
    let (world, url) = start(Setup { dpop: true, ..Default::default() }).await;
    let oauth = OAuthClient::builder().dpop(false).build().expect("client");
    let err = connect(&url, oauth).await.expect_err("the AS demands a proof");
    assert!(err.to_string().contains("invalid_dpop_proof"), "{err}");
    assert!(lock(&world).dpop_checks.is_empty());
}

#[tokio::test]
async fn refuses_an_authorization_response_from_another_issuer() {
    let (world, url) = start(Setup { iss: Some("http://evil.example.com"), ..Default::default() }).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    assert!(err.to_string().contains("evil.example.com"), "{err}");
    assert_eq!(authorize_queries(&world).len(), 1);
    assert!(!seen(&world).iter().any(|s| s.uri == "/token"), "the code must not be redeemed");
}

#[tokio::test]
async fn refuses_metadata_of_another_issuer() {
    let (world, url) =
        start(Setup { metadata_issuer: Some("https://attacker.example.com"), ..Default::default() }).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    assert!(err.to_string().contains("attacker.example.com"), "{err}");
    assert!(!seen(&world).iter().any(|s| s.uri.starts_with("/register") || s.uri.starts_with("/authorize")));
}

#[tokio::test]
async fn a_2025_03_26_server_gets_the_default_endpoints() {
    let (world, url) = start(Setup { legacy: true, ..Default::default() }).await;
    let client = connect(&url, oauth()).await.expect("connect");
    client.list_all_tools().await.expect("tools/list");
    let uris: Vec<String> = seen(&world).iter().map(|s| format!("{} {}", s.method, s.uri)).collect();
    let pos = |what: &str| uris.iter().position(|u| u == what || u.starts_with(&format!("{what}?")));
    // Both well-known PRM URLs, then the root AS metadata (RFC 8414, OIDC), then the
    // fallback endpoints at the server's origin, in that order.
    let order = [
        pos("GET /.well-known/oauth-protected-resource/mcp"),
        pos("GET /.well-known/oauth-protected-resource"),
        pos("GET /.well-known/oauth-authorization-server"),
        pos("GET /.well-known/openid-configuration"),
        pos("POST /register"),
        pos("GET /authorize"),
        pos("POST /token"),
    ];
    assert!(order.iter().all(Option::is_some), "{uris:#?}");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{uris:#?}");
    client.close().await;
}

#[tokio::test]
async fn client_credentials_grant_with_a_secret() {
    let (world, url) = start(Setup { client_credentials: Some("svc:s3cret"), ..Default::default() }).await;
    let oauth = OAuthClient::builder()
        .grant(portico::auth::GrantType::ClientCredentials)
        .client_credentials("svc", Some("s3cret".into()))
        .build()
        .expect("client");
    let client = connect(&url, oauth).await.expect("connect");
    client.list_all_tools().await.expect("tools/list");
    assert!(authorize_queries(&world).is_empty(), "no user, no authorization endpoint");
    assert!(!seen(&world).iter().any(|s| s.uri == "/register"), "pre-registered: no registration");
    let mcp = seen(&world).into_iter().filter(|s| s.uri == "/mcp" && s.authorization.is_some()).count();
    assert!(mcp >= 2);
    client.close().await;
}

#[tokio::test]
async fn authorize_ahead_of_the_first_request() {
    let (world, url) = start(Setup::default()).await;
    let oauth = oauth();
    oauth.authorize(&url).await.expect("authorize");
    let client = connect(&url, oauth.clone()).await.expect("connect");
    let mcp: Vec<Seen> = seen(&world).into_iter().filter(|s| s.uri == "/mcp").collect();
    assert!(mcp.iter().all(|s| s.authorization.as_deref() == Some("Bearer at-1")), "no 401 needed: {mcp:?}");
    client.close().await;
    oauth.forget(&url).await.expect("forget");
    assert!(oauth.tokens(&url).await.is_none());
}

/// The whole error, its sources included.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut next = err.source();
    while let Some(e) = next {
        out.push_str(": ");
        out.push_str(&e.to_string());
        next = e.source();
    }
    out
}

#[tokio::test]
async fn discovery_never_reaches_a_metadata_service_or_the_local_network_for_a_public_server() {
    // SSRF: the server points the client at a cloud metadata service. Never reached, whatever
    // the server's own address.
    let setup = Setup {
        prm_in_challenge: true,
        challenge_prm: Some("http://169.254.169.254/latest/meta-data/iam"),
        ..Default::default()
    };
    let (world, url) = start(setup).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    let text = chain(&err);
    assert!(text.contains("169.254.169.254") && text.contains("address policy"), "{text}");
    assert!(authorize_queries(&world).is_empty(), "no authorization request may be made");

    // An authorization server on an IPv6 link-local address: refused before any request.
    let setup = Setup { authorization_server: Some("http://[fe80::1]:8080/"), ..Default::default() };
    let (world, url) = start(setup).await;
    let err = connect(&url, oauth()).await.expect_err("must refuse");
    assert!(chain(&err).contains("address policy"), "{}", chain(&err));
    assert!(!seen(&world).iter().any(|s| s.uri == "/token" || s.uri.starts_with("/authorize")));

    // Public addresses only: this server's own loopback metadata is refused (literal address)…
    let public = || {
        OAuthClient::builder()
            .client_name("auth-test")
            .address_policy(AddressPolicy::PublicOnly)
            .build()
            .expect("client")
    };
    let (world, url) = start(Setup::default()).await;
    let err = connect(&url, public()).await.expect_err("must refuse");
    assert!(chain(&err).contains("a loopback address"), "{}", chain(&err));
    assert!(!seen(&world).iter().any(|s| s.uri.starts_with("/.well-known")), "nothing fetched");

    // …and so is a hostname that resolves to loopback, by the resolver at connection time.
    let (world, url) = start(Setup::default()).await;
    let by_name = url.replace("127.0.0.1", "localhost");
    let err = connect(&by_name, public()).await.expect_err("must refuse");
    assert!(chain(&err).contains("a loopback address"), "{}", chain(&err));
    assert!(!seen(&world).iter().any(|s| s.uri.starts_with("/.well-known")), "nothing fetched");

    // The default policy lets a local server use its local authorization server.
    let (_world, url) = start(Setup::default()).await;
    let client = connect(&url, oauth()).await.expect("a local server's own metadata is allowed");
    client.close().await;
}

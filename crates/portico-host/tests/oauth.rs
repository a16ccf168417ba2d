//! An HTTP upstream behind OAuth: the gateway gets its own token from a real OpenID provider
//! (oidc-provider, pinned by scripts/install-oidc.sh) with the client credentials grant, keeps
//! it in the state directory (mode 0600), and never passes a downstream token through.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use portico::auth::server::{JwtValidator, ResourceServer};
use portico::schema::{Implementation, Tool, object};
use portico::server::{RequestContext, Server};
use portico::transport::http::server::StreamableHttp;
use portico_host::Host;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Node and the provider module, or `None` with a loud notice (a failure when required).
fn installed() -> Option<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join(".ci-cache/oidc/node_modules");
    let module = dir.join("oidc-provider/lib/index.js");
    let local = dir.join(".bin/node");
    let node = if local.exists() { local } else { PathBuf::from("node") };
    if module.exists() && std::process::Command::new(&node).arg("--version").output().is_ok_and(|o| o.status.success())
    {
        return Some((node, module));
    }
    assert!(
        std::env::var("PORTICO_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "PORTICO_REQUIRE_INTEROP=1 and oidc-provider is missing (scripts/install-oidc.sh)"
    );
    eprintln!(
        "!! SKIPPED: oidc-provider is not installed (scripts/install-oidc.sh); the OAuth upstream test did NOT run"
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oauth_upstream_is_called_with_the_gateways_own_token() {
    let Some((node, module)) = installed() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../portico/tests/oidc/provider.js");
    let mut provider = tokio::process::Command::new(node)
        .arg(script)
        .arg(module)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let mut line = String::new();
    let stdout = provider.stdout.take().expect("stdout");
    tokio::time::timeout(Duration::from_secs(30), BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("provider started")
        .expect("read");
    let issuer =
        serde_json::from_str::<serde_json::Value>(&line).expect("json")["issuer"].as_str().expect("issuer").to_owned();

    // The protected upstream: its tool reports the client id of the token it was called with.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    let server = Server::builder(Implementation::new("protected", "1.0.0"))
        .tool(
            Tool::new("whoami", object(json!({"type": "object"}))),
            |_: serde_json::Value, cx: RequestContext| async move {
                let who = cx.extensions().get::<portico::auth::server::AuthInfo>();
                who.and_then(|w| w.client_id()).unwrap_or("nobody").to_owned()
            },
        )
        .build();
    let jwt = JwtValidator::builder(&issuer).algorithms(["ES256", "RS256"]).build().expect("jwt");
    let auth = ResourceServer::builder(&url)
        .authorization_server(&issuer)
        .scopes_supported(["mcp:read"])
        .required_scopes(["mcp:read"])
        .validator(jwt)
        .build()
        .expect("resource server");
    let endpoint = StreamableHttp::new(server).authorization(auth).build();
    let upstream = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });

    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("secret"), "secret\n").expect("secret file");
    let cfg = format!(
        "[servers.api]\nurl = {url:?}\nshared = true\n[servers.api.oauth]\ngrant = \"client_credentials\"\nclient_id = \"mcp-client\"\nclient_secret = \"${{file:{}}}\"\n",
        dir.path().join("secret").display()
    );
    let host = Host::start(common::config_in(dir.path(), &cfg));
    host.ready(Duration::from_secs(30)).await;
    let status = host.upstream("api").expect("api").status();
    assert_eq!(status.state.as_str(), "ready", "{status:?}");
    let result = host.call_tool("api__whoami", json!({}), None).await;
    assert_eq!(common::text(&result), "mcp-client", "{result:?}");

    let tokens = dir.path().join("state/tokens/api.json");
    let meta = std::fs::metadata(&tokens).expect("tokens kept in the state directory");
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o600);
    let debug = format!("{:?}", host.config());
    assert!(!debug.contains("\"secret\""), "the client secret shows in Debug: {debug}");
    host.shutdown().await;
    upstream.abort();
}

//! An MCP server protected by OAuth 2.1 bearer tokens from an OpenID provider.
//!
//! ```text
//! ISSUER=https://auth.example.com cargo run -p portico-mcp --example auth_server --features auth-server
//! ```
//!
//! Tokens must be JWTs from `$ISSUER` (keys found through its metadata) whose audience is
//! `http://127.0.0.1:3000/mcp` and that grant `mcp:read`; the `admin_reset` tool also needs
//! `mcp:admin`. Without a token the server answers 401 and points at
//! `http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp`.
use portico::auth::server::{AuthInfo, JwtValidator, ResourceServer};
use portico::schema::{Implementation, Tool, object};
use portico::server::{RequestContext, Server};
use portico::transport::http::server::StreamableHttp;
use serde::Deserialize;

#[derive(Deserialize)]
struct Empty {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let issuer = std::env::var("ISSUER").unwrap_or_else(|_| "http://127.0.0.1:4000".into());
    let resource = "http://127.0.0.1:3000/mcp";
    let schema = object(serde_json::json!({ "type": "object" }));

    let server = Server::builder(Implementation::new("protected", "1.0.0"))
        .tool(Tool::new("whoami", schema.clone()), |_: Empty, cx: RequestContext| async move {
            match cx.extensions().get::<AuthInfo>() {
                Some(who) => format!("{} (client {})", who.subject().unwrap_or("?"), who.client_id().unwrap_or("?")),
                None => "anonymous".to_string(),
            }
        })
        .tool(Tool::new("admin_reset", schema), |_: Empty| async move { "reset".to_string() })
        .build();

    let auth = ResourceServer::builder(resource)
        .authorization_server(&issuer)
        .scopes_supported(["mcp:read", "mcp:admin"])
        .required_scopes(["mcp:read"])
        .tool_scopes("admin_reset", ["mcp:admin"])
        .validator(JwtValidator::builder(&issuer).build()?)
        .build()?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    eprintln!("listening on {resource}; metadata at {}", auth.metadata_url());
    StreamableHttp::new(server)
        .authorization(auth)
        .build()
        .serve_with_shutdown(listener, std::future::pending())
        .await?;
    Ok(())
}

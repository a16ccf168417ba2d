//! A complete MCP server over stdio: one tool, one resource, one prompt.
//!
//! Run it with `cargo run -p portico-mcp --example hello`, then type (or pipe) JSON-RPC lines.
use portico::schema::{
    GetPromptResult, Implementation, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Tool, object,
};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
use serde::Deserialize;

#[derive(Deserialize)]
struct Greet {
    name: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), portico::Error> {
    let schema = object(serde_json::json!({
        "type": "object",
        "properties": { "name": { "type": "string", "description": "Who to greet" } },
        "required": ["name"]
    }));
    Server::builder(Implementation::new("hello", env!("CARGO_PKG_VERSION")))
        .tool(Tool::new("greet", schema).with_description("Greets someone by name"), |a: Greet| async move {
            format!("Hello, {}!", a.name)
        })
        .resource(
            Resource::new("hello://motd", "motd").with_mime_type("text/plain"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::text(r.uri(), "Be kind to your future self."))
            },
        )
        .prompt(
            Prompt::new("welcome").with_argument(PromptArgument::new("name").with_required(true)),
            |a: Greet| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Write a warm welcome for {}.", a.name))]))
            },
        )
        .build()
        .serve(portico::transport::stdio::stdio())
        .await
}

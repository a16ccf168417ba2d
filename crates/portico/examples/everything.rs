//! Every server feature in one place, for both eras: typed tools with structured output,
//! progress, logging, cancellation, sampling, elicitation and roots through the request
//! context, static and template resources, a prompt with arguments, completion, and tools
//! added and removed at runtime.
//!
//! stdio: `cargo run -p portico-mcp --example everything`
//! Streamable HTTP: `cargo run -p portico-mcp --example everything --features http-server -- --http 3000`
//! (then point a client at `http://127.0.0.1:3000/mcp`).
use std::time::Duration;

use portico::schema::{
    CompleteRequestParams, CompleteResult, CompletionReference, CreateMessageRequestParams, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, GetPromptResult, Implementation, JsonObject, LoggingLevel, Prompt,
    PromptArgument, PromptMessage, RequestedSchema, Resource, ResourceContents, ResourceTemplate, SamplingContent,
    SamplingMessage, SamplingMessageContentBlock, StringSchema, Tool, object,
};
use portico::server::{HandlerError, Json, RequestContext, ResourceRequest, Server};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn schema(properties: Value, required: &[&str]) -> JsonObject {
    object(json!({ "type": "object", "properties": properties, "required": required }))
}

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Sum {
    sum: i64,
}

#[derive(Deserialize)]
struct Steps {
    steps: u32,
}

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
}

#[derive(Deserialize)]
struct Text {
    text: String,
}

#[derive(Deserialize)]
struct Empty {}

#[derive(Deserialize)]
struct Review {
    code: String,
    language: Option<String>,
}

/// The whole server; `main` only picks the transport.
pub fn server() -> Server {
    Server::builder(Implementation::new("everything", env!("CARGO_PKG_VERSION")))
        .instructions("A tour of every MCP server feature.")
        // Structured output: `Json<T>` becomes structuredContent (plus a text copy).
        .tool(
            Tool::new("add", schema(json!({ "a": { "type": "integer" }, "b": { "type": "integer" } }), &["a", "b"]))
                .with_description("Adds two integers")
                .with_output_schema(schema(json!({ "sum": { "type": "integer" } }), &["sum"])),
            |x: Add| async move { Json(Sum { sum: x.a + x.b }) },
        )
        // Progress and logging (sent only if the client asked for them).
        .tool(
            Tool::new("countdown", schema(json!({ "steps": { "type": "integer", "minimum": 1 } }), &["steps"]))
                .with_description("Counts down, reporting progress and logging each step"),
            |x: Steps, cx: RequestContext| async move {
                for i in 1..=x.steps {
                    cx.progress(f64::from(i), Some(f64::from(x.steps)), Some("counting")).await?;
                    cx.log(LoggingLevel::Info, Some("countdown"), format!("{} left", x.steps - i)).await?;
                }
                Ok::<_, portico::Error>("liftoff")
            },
        )
        // Cancellation: the future is dropped when the client cancels; the token serves
        // work that must notice it (spawned tasks, cleanup).
        .tool(
            Tool::new("sleep", schema(json!({ "ms": { "type": "integer" } }), &["ms"]))
                .with_description("Sleeps, stopping early when cancelled"),
            |x: Sleep, cx: RequestContext| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(x.ms)) => format!("slept {} ms", x.ms),
                    () = cx.cancellation().cancelled() => "cancelled".to_owned(),
                }
            },
        )
        // Sampling: ask the client's model.
        .tool(
            Tool::new("summarize", schema(json!({ "text": { "type": "string" } }), &["text"]))
                .with_description("Summarizes text with the client's model"),
            |x: Text, cx: RequestContext| async move {
                let msg = SamplingMessage::user_text(format!("Summarize in one line:\n{}", x.text));
                let answer = cx.create_message(CreateMessageRequestParams::new(vec![msg], 100)).await?;
                Ok::<_, portico::Error>(match answer.content {
                    SamplingContent::Single(SamplingMessageContentBlock::Text(t)) => t.text,
                    _ => "(no text)".to_owned(),
                })
            },
        )
        // Elicitation: ask the user through a form.
        .tool(
            Tool::new("greet_user", schema(json!({}), &[])).with_description("Asks the user's name, then greets them"),
            |_: Empty, cx: RequestContext| async move {
                let form = RequestedSchema::new().with_required_property("name", StringSchema::new());
                let params = ElicitRequestParams::from(ElicitRequestFormParams::new("What is your name?", form));
                let answer = cx.elicit(params).await?;
                let name = answer.content.as_ref().and_then(|c| c.get("name")).and_then(Value::as_str);
                Ok::<_, portico::Error>(match (answer.action, name) {
                    (ElicitAction::Accept, Some(name)) => format!("Hello, {name}!"),
                    _ => "Hello, stranger.".to_owned(),
                })
            },
        )
        // Roots: which directories the client exposes.
        .tool(
            Tool::new("roots", schema(json!({}), &[])).with_description("Lists the client's roots"),
            |_: Empty, cx: RequestContext| async move {
                let roots = cx.list_roots().await?;
                Ok::<_, portico::Error>(roots.roots.into_iter().map(|r| r.uri).collect::<Vec<_>>().join("\n"))
            },
        )
        // Tools added and removed at runtime: clients get notifications/tools/list_changed.
        .tool(
            Tool::new("toggle_bonus", schema(json!({}), &[])).with_description("Adds or removes the `bonus` tool"),
            |_: Empty, cx: RequestContext| async move {
                let server = cx.server();
                if server.remove_tool("bonus") {
                    "removed bonus"
                } else {
                    let bonus = Tool::new("bonus", schema(json!({}), &[])).with_description("Appears on demand");
                    server.add_tool(bonus, |_: Empty| async { "you found the bonus" });
                    "added bonus"
                }
            },
        )
        .resource(
            Resource::new("everything://readme", "readme").with_mime_type("text/markdown"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::text(r.uri(), "# Everything\nA tour of MCP."))
            },
        )
        .resource_template(
            ResourceTemplate::new("everything://notes/{id}", "note").with_mime_type("text/plain"),
            |r: ResourceRequest, _: RequestContext| async move {
                match r.var("id") {
                    Some(id @ ("1" | "2" | "3")) => Ok(ResourceContents::text(r.uri(), format!("note {id}"))),
                    _ => Err(HandlerError::resource_not_found(r.uri())),
                }
            },
        )
        .prompt(
            Prompt::new("review")
                .with_description("Asks for a code review")
                .with_argument(PromptArgument::new("code").with_required(true))
                .with_argument(PromptArgument::new("language").with_description("Completable")),
            |x: Review| async move {
                let lang = x.language.as_deref().unwrap_or("code");
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Review this {lang}:\n{}", x.code))]))
            },
        )
        .completion(|p: CompleteRequestParams, _: RequestContext| async move {
            let candidates: &[&str] = match (&p.r#ref, p.argument.name.as_str()) {
                (CompletionReference::Prompt(r), "language") if r.name == "review" => &["python", "rust", "typescript"],
                (CompletionReference::ResourceTemplate(_), "id") => &["1", "2", "3"],
                _ => &[],
            };
            let prefix = p.argument.value.as_str();
            Ok::<_, HandlerError>(CompleteResult::new(candidates.iter().filter(|c| c.starts_with(prefix)).copied()))
        })
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(server().serve(portico::transport::stdio::stdio()).await?),
        [flag, port] if flag == "--http" => serve_http(port.parse()?).await,
        _ => Err("usage: everything [--http PORT]".into()),
    }
}

#[cfg(feature = "http-server")]
async fn serve_http(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: on stdio, stdout is the protocol.
    eprintln!("everything: serving http://127.0.0.1:{port}/mcp");
    portico::transport::http::server::StreamableHttp::new(server()).serve(("127.0.0.1", port)).await?;
    Ok(())
}

#[cfg(not(feature = "http-server"))]
async fn serve_http(_port: u16) -> Result<(), Box<dyn std::error::Error>> {
    Err("--http needs the `http-server` feature: add `--features http-server`".into())
}

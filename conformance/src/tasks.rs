//! Fixtures of the `tasks-*` scenarios (the `io.modelcontextprotocol/tasks` extension).

use std::time::Duration;

use portico::schema::{
    BooleanSchema, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, RequestedSchema, StringSchema, Tool,
    object,
};
use portico::server::{RequestContext, ServerBuilder, TaskSupport};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::{NoArgs, no_args};

/// The text `failing_job` fails with.
pub const FAILING_JOB_TEXT: &str = "failing_job failed on purpose";

#[derive(Deserialize)]
struct GreetArgs {
    name: String,
}

#[derive(Deserialize)]
struct ComputeArgs {
    #[serde(default)]
    seconds: f64,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize)]
struct DeleteArgs {
    filename: String,
}

fn form(message: impl Into<String>, schema: RequestedSchema) -> ElicitRequestParams {
    ElicitRequestParams::from(ElicitRequestFormParams::new(message, schema))
}

fn field(answer: &ElicitResult, name: &str) -> Option<Value> {
    answer.content.as_ref()?.get(name).cloned()
}

/// Panics: Portico turns a handler's panic into a JSON-RPC internal error (`-32603`), the only
/// protocol error a tool handler can end with, so the task fails.
fn protocol_failure() -> &'static str {
    panic!("protocol_error_job fails on purpose")
}

/// Adds the task fixtures.
pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            Tool::new(
                "greet",
                object(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "description": "Who to greet" } },
                    "required": ["name"]
                })),
            )
            .with_description("Greets someone (never a task)"),
            |a: GreetArgs| async move { format!("Hello, {}!", a.name) },
        )
        .task_tool(
            Tool::new(
                "slow_compute",
                object(json!({
                    "type": "object",
                    "properties": {
                        "seconds": { "type": "number", "minimum": 0, "description": "How long to work" },
                        "label": { "type": "string", "description": "A label echoed in the result" }
                    }
                })),
            )
            .with_description("Works for the given number of seconds (a task when the client accepts tasks)"),
            TaskSupport::Optional,
            |a: ComputeArgs, cx: RequestContext| async move {
                cx.continue_as_task().await;
                let seconds = if a.seconds.is_finite() { a.seconds.clamp(0.0, 3600.0) } else { 0.0 };
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                format!("computed {} after {seconds} s", a.label.as_deref().unwrap_or("(no label)"))
            },
        )
        .task_tool(
            no_args("failing_job", "Fails with a tool execution error after about a second (tasks only)"),
            TaskSupport::Required,
            |_: NoArgs, cx: RequestContext| async move {
                cx.continue_as_task().await;
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<String, _>(FAILING_JOB_TEXT)
            },
        )
        .task_tool(
            no_args("protocol_error_job", "Fails with a protocol error (its handler panics)"),
            TaskSupport::Optional,
            |_: NoArgs, cx: RequestContext| async move {
                cx.continue_as_task().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                protocol_failure()
            },
        )
        .task_tool(
            Tool::new(
                "confirm_delete",
                object(json!({
                    "type": "object",
                    "properties": { "filename": { "type": "string", "description": "The file to delete" } },
                    "required": ["filename"]
                })),
            )
            .with_description("Asks for a confirmation, then pretends to delete a file"),
            TaskSupport::Optional,
            |a: DeleteArgs, cx: RequestContext| async move {
                cx.continue_as_task().await;
                let schema = RequestedSchema::new().with_required_property("confirm", BooleanSchema::new());
                let answer =
                    cx.elicit(form(format!("Delete {}?", a.filename), schema)).await.map_err(|e| e.to_string())?;
                let confirmed = field(&answer, "confirm") == Some(Value::Bool(true));
                Ok::<_, String>(if confirmed {
                    format!("Deleted {}", a.filename)
                } else {
                    format!("Kept {}", a.filename)
                })
            },
        )
        .task_tool(
            no_args("multi_input", "Asks two questions at once"),
            TaskSupport::Optional,
            |_: NoArgs, cx: RequestContext| async move {
                cx.continue_as_task().await;
                let name = RequestedSchema::new().with_required_property("name", StringSchema::new());
                let confirm = RequestedSchema::new().with_required_property("confirm", BooleanSchema::new());
                let (a, b) = tokio::join!(
                    cx.elicit(form("What is your name?", name)),
                    cx.elicit(form("Shall we proceed?", confirm)),
                );
                let (a, b) = (a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
                Ok::<_, String>(format!(
                    "name={}, confirm={}",
                    field(&a, "name").unwrap_or(Value::Null),
                    field(&b, "confirm").unwrap_or(Value::Null)
                ))
            },
        )
        .task_tool(
            no_args("test_tool_with_task", "Asks for a name (input_required), then continues as a task"),
            TaskSupport::Required,
            |_: NoArgs, cx: RequestContext| async move {
                let schema = RequestedSchema::new().with_required_property("name", StringSchema::new());
                let answer = cx
                    .input("user_name")
                    .elicit(form("What is your name?", schema))
                    .await
                    .map_err(|e| e.to_string())?;
                cx.continue_as_task().await;
                tokio::time::sleep(Duration::from_millis(200)).await;
                let name = match field(&answer, "name") {
                    Some(Value::String(s)) => s,
                    _ => "nobody".to_owned(),
                };
                Ok::<_, String>(format!("Hello, {name}!"))
            },
        )
}

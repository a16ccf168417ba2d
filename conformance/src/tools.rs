//! The tool fixtures (`tools-*` and `elicitation-*` scenarios, `json-schema-2020-12`).

use std::time::Duration;

use portico::schema::{
    AudioContent, BooleanSchema, CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, ElicitResult, EmbeddedResource, ImageContent, JsonObject,
    LegacyTitledEnumSchema, LoggingLevel, NumberSchema, NumberSchemaType, RequestedSchema, SamplingMessage,
    SamplingMessageContentBlock, StringSchema, TextResourceContents, TitledEnumOption, TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema, Tool, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema, object,
};
use portico::server::{RequestContext, Server, ServerBuilder};
use serde::Deserialize;
use serde_json::json;

use crate::{PNG_BASE64, WAV_BASE64};

/// The text of `test_simple_text`.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
/// The text of `test_error_handling`'s error result.
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";
/// The log messages `test_tool_with_logging` sends, at info level, in this order.
pub const LOG_MESSAGES: [&str; 3] = ["Tool execution started", "Tool processing data", "Tool execution completed"];

/// The pause between the log messages and progress notifications of the slow fixtures.
const STEP: Duration = Duration::from_millis(50);

/// Arguments of tools that take none (any object is accepted, as the suite may send `{}`).
#[derive(Deserialize)]
pub(crate) struct NoArgs {}

#[derive(Deserialize)]
struct SamplingArgs {
    prompt: String,
}

#[derive(Deserialize)]
struct SleepArgs {
    ms: u64,
}

#[derive(Deserialize)]
struct ElicitationArgs {
    message: String,
}

pub(crate) fn no_args(name: &str, description: &str) -> Tool {
    Tool::new(name, object(json!({ "type": "object", "properties": {} }))).with_description(description)
}

fn one_string_arg(name: &str, description: &str, arg: &str, arg_description: &str) -> Tool {
    let schema = object(json!({
        "type": "object",
        "properties": { arg: { "type": "string", "description": arg_description } },
        "required": [arg],
    }));
    Tool::new(name, schema).with_description(description)
}

/// The input schema of `json_schema_2020_12_tool`: 2020-12 keywords that must survive listing
/// (SEP-1613: `$schema`, `$defs`, `additionalProperties`; SEP-2106: `$anchor`, `allOf`/`anyOf`,
/// `if`/`then`/`else`).
fn json_schema_2020_12() -> JsonObject {
    object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    }))
}

/// Renders an elicitation answer the way the suite's scenarios describe.
fn describe(answer: &ElicitResult) -> String {
    let action = match answer.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content =
        answer.content.as_ref().map_or_else(|| "{}".to_owned(), |c| serde_json::Value::Object(c.clone()).to_string());
    format!("action={action}, content={content}")
}

async fn elicit(
    cx: &RequestContext,
    message: impl Into<String>,
    schema: RequestedSchema,
) -> Result<ElicitResult, String> {
    let params = ElicitRequestParams::from(ElicitRequestFormParams::new(message, schema));
    cx.elicit(params).await.map_err(|e| format!("elicitation failed: {e}"))
}

fn sep1034_schema() -> RequestedSchema {
    RequestedSchema::new()
        .with_property("name", StringSchema::new().with_description("User name").with_default("John Doe"))
        .with_property(
            "age",
            NumberSchema::new(NumberSchemaType::Integer).with_description("User age").with_default(30.0),
        )
        .with_property(
            "score",
            NumberSchema::new(NumberSchemaType::Number).with_description("User score").with_default(95.5),
        )
        .with_property(
            "status",
            UntitledSingleSelectEnumSchema::new(["active", "inactive", "pending"])
                .with_title("Status")
                .with_default("active"),
        )
        .with_property("verified", BooleanSchema::new().with_description("Verified user").with_default(true))
}

fn sep1330_schema() -> RequestedSchema {
    let options = |titles: [&str; 3]| -> Vec<TitledEnumOption> {
        ["value1", "value2", "value3"].into_iter().zip(titles).map(|(v, t)| TitledEnumOption::new(v, t)).collect()
    };
    RequestedSchema::new()
        .with_property("untitledSingle", UntitledSingleSelectEnumSchema::new(["option1", "option2", "option3"]))
        .with_property(
            "titledSingle",
            TitledSingleSelectEnumSchema::new(options(["First Option", "Second Option", "Third Option"])),
        )
        .with_property(
            "legacyEnum",
            LegacyTitledEnumSchema::new(["opt1", "opt2", "opt3"], ["Option One", "Option Two", "Option Three"]),
        )
        .with_property("untitledMulti", UntitledMultiSelectEnumSchema::new(["option1", "option2", "option3"]))
        .with_property(
            "titledMulti",
            TitledMultiSelectEnumSchema::new(options(["First Choice", "Second Choice", "Third Choice"])),
        )
}

/// The test-only tool `test_sleep(ms)`: sleeps, then answers `"slept"`. Not a suite fixture; the
/// binary adds it only when [`TEST_TOOLS_ENV`](crate::TEST_TOOLS_ENV) is `1`, so tests can hold a
/// call open on the server side.
pub(crate) fn add_test_tools(server: &Server) {
    let schema = object(json!({
        "type": "object",
        "properties": { "ms": { "type": "integer", "minimum": 0, "description": "How long to sleep" } },
        "required": ["ms"],
    }));
    let tool = Tool::new("test_sleep", schema).with_description("Test only: sleeps for ms milliseconds");
    server.add_tool(tool, |a: SleepArgs| async move {
        tokio::time::sleep(Duration::from_millis(a.ms)).await;
        "slept"
    });
}

/// Adds every tool fixture.
pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(no_args("test_simple_text", "Returns a simple text response"), |_: NoArgs| async { SIMPLE_TEXT })
        .tool(no_args("test_image_content", "Returns a 1x1 PNG image"), |_: NoArgs| async {
            ContentBlock::from(ImageContent::new(PNG_BASE64, "image/png"))
        })
        .tool(no_args("test_audio_content", "Returns a short WAV clip"), |_: NoArgs| async {
            ContentBlock::from(AudioContent::new(WAV_BASE64, "audio/wav"))
        })
        .tool(no_args("test_embedded_resource", "Returns an embedded text resource"), |_: NoArgs| async {
            let contents =
                TextResourceContents::new("test://embedded-resource", "This is an embedded resource content.")
                    .with_mime_type("text/plain");
            ContentBlock::from(EmbeddedResource::new(contents))
        })
        .tool(no_args("test_multiple_content_types", "Returns text, an image and a resource"), |_: NoArgs| async {
            let json = TextResourceContents::new("test://mixed-content-resource", r#"{"test":"data","value":123}"#)
                .with_mime_type("application/json");
            vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::from(ImageContent::new(PNG_BASE64, "image/png")),
                ContentBlock::from(EmbeddedResource::new(json)),
            ]
        })
        .tool(
            no_args("test_tool_with_logging", "Sends three info log messages while it runs"),
            |_: NoArgs, cx: RequestContext| async move {
                for (i, message) in LOG_MESSAGES.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.log(LoggingLevel::Info, Some("test_tool_with_logging"), message)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok::<_, String>("Tool with logging executed successfully")
            },
        )
        .tool(no_args("test_error_handling", "Always fails with a tool execution error"), |_: NoArgs| async {
            CallToolResult::error(ERROR_TEXT)
        })
        .tool(
            no_args(
                "test_reconnection",
                "Closes its SSE stream mid-call (SSE polling); the result arrives on the resumed stream",
            ),
            |_: NoArgs, cx: RequestContext| async move {
                cx.close_sse_stream();
                tokio::time::sleep(STEP).await;
                "Reconnection test completed successfully"
            },
        )
        .tool(
            no_args("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100"),
            |_: NoArgs, cx: RequestContext| async move {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.progress(progress, Some(100.0), None).await.map_err(|e| e.to_string())?;
                }
                Ok::<_, String>("Tool with progress executed successfully")
            },
        )
        .tool(
            one_string_arg(
                "test_sampling",
                "Asks the client to sample a model",
                "prompt",
                "The prompt to send to the LLM",
            ),
            |a: SamplingArgs, cx: RequestContext| async move {
                let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(a.prompt)], 100);
                let result = cx.create_message(request).await.map_err(|e| format!("sampling failed: {e}"))?;
                let said: Vec<&str> =
                    result.content.blocks().iter().filter_map(SamplingMessageContentBlock::as_text).collect();
                Ok::<_, String>(format!("LLM response: {}", said.join("")))
            },
        )
        .tool(
            one_string_arg("test_elicitation", "Asks the user for input", "message", "The message to show the user"),
            |a: ElicitationArgs, cx: RequestContext| async move {
                let schema = RequestedSchema::new()
                    .with_required_property("username", StringSchema::new().with_description("User's response"))
                    .with_required_property("email", StringSchema::new().with_description("User's email address"));
                let answer = elicit(&cx, a.message, schema).await?;
                Ok::<_, String>(format!("User response: {}", describe(&answer)))
            },
        )
        .tool(
            no_args("test_elicitation_sep1034_defaults", "Elicits fields with default values (SEP-1034)"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer =
                    elicit(&cx, "Please review and update the form fields with defaults", sep1034_schema()).await?;
                Ok::<_, String>(format!("Elicitation completed: {}", describe(&answer)))
            },
        )
        .tool(
            no_args("test_elicitation_sep1330_enums", "Elicits the five enum schema forms (SEP-1330)"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = elicit(&cx, "Please select options from the enum fields", sep1330_schema()).await?;
                Ok::<_, String>(format!("Elicitation completed: {}", describe(&answer)))
            },
        )
        .tool(
            Tool::new("json_schema_2020_12_tool", json_schema_2020_12())
                .with_description("Tool with JSON Schema 2020-12 features"),
            |a: serde_json::Value| async move { format!("Received: {a}") },
        )
}

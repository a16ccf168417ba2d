//! Fixtures of the 2026-07-28 scenarios: the diagnostic tools of `server-stateless`, the tools
//! and prompt of the `input-required-result-*` (multi round-trip request) scenarios, and a tool
//! with an `x-mcp-header` parameter for `http-custom-header-server-validation`.

use portico::schema::{
    BooleanSchema, CreateMessageRequestParams, ElicitRequestFormParams, ElicitRequestParams, ElicitResult,
    GetPromptResult, LoggingLevel, Prompt, PromptMessage, RequestedSchema, SamplingMessage,
    SamplingMessageContentBlock, StringSchema, Tool, object,
};
use portico::server::{HandlerError, RequestContext, ServerBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::{NoArgs, no_args};

/// The prompt `input-required-result-non-tool-request` gets.
pub const INPUT_REQUIRED_PROMPT: &str = "test_input_required_result_prompt";

/// A form asking for one required property.
fn form(
    message: &str,
    property: &str,
    schema: impl Into<portico::schema::PrimitiveSchemaDefinition>,
) -> ElicitRequestParams {
    ElicitRequestParams::from(ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().with_required_property(property, schema),
    ))
}

/// The string the user entered for `property`, if they accepted.
fn answered(answer: &ElicitResult, property: &str) -> Option<String> {
    let v = answer.content.as_ref()?.get(property)?;
    Some(match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn sampled_text(r: &portico::schema::CreateMessageResult) -> String {
    r.content.blocks().iter().filter_map(SamplingMessageContentBlock::as_text).collect()
}

fn user_name_form() -> ElicitRequestParams {
    form("What is your name?", "name", StringSchema::new())
}

fn confirm_form() -> ElicitRequestParams {
    form("Please confirm", "ok", BooleanSchema::new())
}

fn greeting_request() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Generate a greeting")], 50)
}

/// `test_trigger_tool_change`: registers itself again, unchanged. Listeners are told the tool
/// list changed, while the list every other scenario sees stays the same.
/// (Boxed with its type spelled out: a function that registers itself cannot leave its
/// future's type to inference.)
fn trigger_tool_change(
    _: NoArgs,
    cx: RequestContext,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = &'static str> + Send>> {
    Box::pin(async move {
        cx.server().add_tool(trigger_tool(), trigger_tool_change);
        "tool list changed"
    })
}

fn trigger_tool() -> Tool {
    no_args("test_trigger_tool_change", "Diagnostic: announces a tool list change to subscribed clients")
}

#[derive(Deserialize)]
struct HeaderArgs {
    region: String,
}

/// Adds the 2026-07-28 fixtures.
pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        // server-stateless
        .tool(
            no_args("test_missing_capability", "Diagnostic: needs sampling, so clients without it are refused"),
            |_: NoArgs, cx: RequestContext| async move {
                let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Say hello")], 20);
                let r = cx.create_message(request).await.map_err(|e| format!("sampling failed: {e}"))?;
                Ok::<_, String>(format!("LLM response: {}", sampled_text(&r)))
            },
        )
        .tool(
            no_args("test_streaming_elicitation", "Diagnostic: asks the user for their name"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = cx.elicit(user_name_form()).await.map_err(|e| format!("elicitation failed: {e}"))?;
                Ok::<_, String>(format!("Hello, {}!", answered(&answer, "name").unwrap_or_default()))
            },
        )
        .tool(
            no_args("test_logging_tool", "Diagnostic: logs at info level (sent only to clients that ask for logs)"),
            |_: NoArgs, cx: RequestContext| async move {
                for message in ["logging tool started", "logging tool finished"] {
                    cx.log(LoggingLevel::Info, Some("test_logging_tool"), message).await.map_err(|e| e.to_string())?;
                }
                Ok::<_, String>("logged")
            },
        )
        .tool(trigger_tool(), trigger_tool_change)
        .tool(
            no_args("test_trigger_prompt_change", "Diagnostic: announces a prompt list change to subscribed clients"),
            |_: NoArgs, cx: RequestContext| async move {
                crate::prompts::re_register_simple_prompt(cx.server());
                "prompt list changed"
            },
        )
        // input-required-result-*
        .tool(
            no_args("test_input_required_result_elicitation", "Asks for the user's name (input_required)"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = cx.input("user_name").elicit(user_name_form()).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(format!("Hello, {}!", answered(&answer, "name").unwrap_or_default()))
            },
        )
        .tool(
            no_args("test_input_required_result_sampling", "Asks the client to sample a model (input_required)"),
            |_: NoArgs, cx: RequestContext| async move {
                let request = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("What is the capital of France?")],
                    100,
                );
                let r = cx.input("capital_question").create_message(request).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(format!("Sampling response: {}", sampled_text(&r)))
            },
        )
        .tool(
            no_args("test_input_required_result_list_roots", "Asks the client for its roots (input_required)"),
            |_: NoArgs, cx: RequestContext| async move {
                let r = cx.input("client_roots").list_roots().await.map_err(|e| e.to_string())?;
                let uris: Vec<&str> = r.roots.iter().map(|root| root.uri.as_str()).collect();
                Ok::<_, String>(format!("Client roots: {}", uris.join(", ")))
            },
        )
        .tool(
            no_args("test_input_required_result_request_state", "Asks for a confirmation; answers state-ok"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = cx.input("confirm").elicit(confirm_form()).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(format!("state-ok: confirmed={}", answered(&answer, "ok").unwrap_or_default()))
            },
        )
        .tool(
            no_args("test_input_required_result_tampered_state", "Asks for a confirmation (sealed requestState)"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = cx.input("confirm").elicit(confirm_form()).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(format!("state-ok: confirmed={}", answered(&answer, "ok").unwrap_or_default()))
            },
        )
        .tool(
            no_args("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and roots at once"),
            |_: NoArgs, cx: RequestContext| async move {
                let (name, greeting, roots) = tokio::join!(
                    cx.input("user_name").elicit(user_name_form()),
                    cx.input("greeting").create_message(greeting_request()),
                    cx.input("client_roots").list_roots(),
                );
                let name = name.map_err(|e| e.to_string())?;
                let greeting = greeting.map_err(|e| e.to_string())?;
                let roots = roots.map_err(|e| e.to_string())?;
                Ok::<_, String>(format!(
                    "{} {}! ({} roots)",
                    sampled_text(&greeting),
                    answered(&name, "name").unwrap_or_default(),
                    roots.roots.len()
                ))
            },
        )
        .tool(
            no_args("test_input_required_result_multi_round", "Asks for a name, then a favorite color"),
            |_: NoArgs, cx: RequestContext| async move {
                let name = cx
                    .input("step1")
                    .elicit(form("Step 1: What is your name?", "name", StringSchema::new()))
                    .await
                    .map_err(|e| e.to_string())?;
                let color = cx
                    .input("step2")
                    .elicit(form("Step 2: What is your favorite color?", "color", StringSchema::new()))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(format!(
                    "{} likes {}",
                    answered(&name, "name").unwrap_or_default(),
                    answered(&color, "color").unwrap_or_default()
                ))
            },
        )
        .tool(
            no_args("test_input_required_result_capabilities", "Asks only for what the client declared"),
            |_: NoArgs, cx: RequestContext| async move {
                let caps = cx.client_capabilities();
                let (sampling, elicitation) = (caps.supports_sampling(), caps.supports_elicitation_form());
                let sampled = async {
                    match sampling {
                        true => cx
                            .input("greeting")
                            .create_message(greeting_request())
                            .await
                            .map(|r| Some(sampled_text(&r))),
                        false => Ok(None),
                    }
                };
                let elicited = async {
                    match elicitation {
                        true => cx.input("user_name").elicit(user_name_form()).await.map(|a| answered(&a, "name")),
                        false => Ok(None),
                    }
                };
                let (sampled, elicited) = tokio::join!(sampled, elicited);
                let (sampled, elicited) = (sampled.map_err(|e| e.to_string())?, elicited.map_err(|e| e.to_string())?);
                Ok::<_, String>(format!("sampling={sampled:?}, elicitation={elicited:?}"))
            },
        )
        .prompt(
            Prompt::new(INPUT_REQUIRED_PROMPT).with_description("A prompt that asks the user for context first"),
            |_: NoArgs, cx: RequestContext| async move {
                let answer = cx
                    .input("user_context")
                    .elicit(form("What context should the prompt use?", "context", StringSchema::new()))
                    .await
                    .map_err(HandlerError::from)?;
                let context = answered(&answer, "context").unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Use this context: {context}"))]))
            },
        )
        // http-custom-header-server-validation
        .tool(
            Tool::new(
                "test_custom_header",
                object(json!({
                    "type": "object",
                    "properties": {
                        "region": {
                            "type": "string",
                            "description": "Mirrored in the Mcp-Param-Region header",
                            "x-mcp-header": "Region"
                        }
                    },
                    "required": ["region"]
                })),
            )
            .with_description("Echoes a parameter the client mirrors in an HTTP header"),
            |a: HeaderArgs| async move { format!("region={}", a.region) },
        )
}

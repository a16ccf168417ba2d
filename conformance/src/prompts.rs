//! The prompt fixtures (`prompts-*` scenarios) and completions (`completion-complete`).

use portico::schema::{
    CompleteRequestParams, CompleteResult, CompletionReference, ContentBlock, EmbeddedResource, GetPromptResult,
    ImageContent, Prompt, PromptArgument, PromptMessage, Role, TextResourceContents,
};
use portico::server::{HandlerError, RequestContext, ServerBuilder};
use serde::Deserialize;

use crate::PNG_BASE64;

/// The text of `test_simple_prompt`.
pub const SIMPLE_PROMPT_TEXT: &str = "This is a simple prompt for testing.";
/// The text of the resource `test_prompt_with_embedded_resource` embeds.
pub const EMBEDDED_PROMPT_TEXT: &str = "Embedded resource content for testing.";
/// What `completion/complete` offers for `test_prompt_with_arguments`' `arg1`, filtered by prefix.
pub const ARG1_VALUES: [&str; 3] = ["paris", "park", "party"];

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct TwoArgs {
    arg1: String,
    arg2: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EmbedArgs {
    resource_uri: String,
}

fn required(name: &str, description: &str) -> PromptArgument {
    PromptArgument::new(name).with_description(description).with_required(true)
}

/// The completions of one argument: values starting with what was typed.
fn complete(p: &CompleteRequestParams) -> CompleteResult {
    let candidates: &[&str] = match (&p.r#ref, p.argument.name.as_str()) {
        (CompletionReference::Prompt(r), "arg1") if r.name == "test_prompt_with_arguments" => &ARG1_VALUES,
        _ => &[],
    };
    CompleteResult::new(candidates.iter().filter(|v| v.starts_with(p.argument.value.as_str())).copied())
}

/// `test_simple_prompt`.
fn simple_prompt() -> Prompt {
    Prompt::new("test_simple_prompt").with_description("A simple prompt without arguments")
}

async fn simple_prompt_handler(_: NoArgs) -> Result<GetPromptResult, HandlerError> {
    Ok(GetPromptResult::new(vec![PromptMessage::user(SIMPLE_PROMPT_TEXT)]))
}

/// Registers `test_simple_prompt` again, unchanged: the prompt list "changes" (listeners are
/// told) while staying the same for every other scenario.
pub(crate) fn re_register_simple_prompt(server: &portico::server::Server) {
    server.add_prompt(simple_prompt(), simple_prompt_handler);
}

/// Adds every prompt fixture and the completion handler.
pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(simple_prompt(), simple_prompt_handler)
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .with_description("A prompt with two required arguments")
                .with_argument(required("arg1", "First test argument"))
                .with_argument(required("arg2", "Second test argument")),
            |a: TwoArgs| async move {
                let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", a.arg1, a.arg2);
                Ok(GetPromptResult::new(vec![PromptMessage::user(text)]))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .with_description("A prompt that embeds a resource")
                .with_argument(required("resourceUri", "URI of the resource to embed")),
            |a: EmbedArgs| async move {
                let contents =
                    TextResourceContents::new(a.resource_uri, EMBEDDED_PROMPT_TEXT).with_mime_type("text/plain");
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(Role::User, EmbeddedResource::new(contents)),
                    PromptMessage::user("Please process the embedded resource above."),
                ]))
            },
        )
        .prompt(Prompt::new("test_prompt_with_image").with_description("A prompt with an image"), |_: NoArgs| async {
            Ok(GetPromptResult::new(vec![
                PromptMessage::new(Role::User, ContentBlock::from(ImageContent::new(PNG_BASE64, "image/png"))),
                PromptMessage::user("Please analyze the image above."),
            ]))
        })
        .completion(|p: CompleteRequestParams, _: RequestContext| async move { Ok::<_, HandlerError>(complete(&p)) })
}

//! What the expansions of the attribute macros call. Not public API: it may change in any
//! release. (A file of its own so that compile errors pointing here keep their line numbers.)

use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

use portico_schema::{CallToolResult, CompleteResult, GetPromptResult, ReadResourceResult};

use super::{CompletionOutput, PromptOutput, ResourceOutput};
use crate::server::{HandlerError, IntoCallToolResult, ResourceRequest};

pub use schemars;
pub use serde;

/// The arguments of `prompts/get`: names to strings.
pub type PromptArguments = BTreeMap<String, String>;

/// A tool function's return value as the call's result.
pub fn tool_result<R: IntoCallToolResult>(value: R) -> CallToolResult {
    value.into_call_tool_result()
}

/// A resource function's return value as the read's result.
pub fn resource_result<R: ResourceOutput>(
    value: R,
    uri: &str,
    mime_type: Option<&str>,
) -> Result<ReadResourceResult, HandlerError> {
    value.into_resource_result(uri, mime_type)
}

/// A prompt function's return value as the prompt's messages.
pub fn prompt_result<R: PromptOutput>(value: R) -> Result<GetPromptResult, HandlerError> {
    value.into_prompt_result()
}

/// A completion function's return value as the suggestions.
pub fn completion_result<R: CompletionOutput>(value: R) -> Result<CompleteResult, HandlerError> {
    value.into_complete_result()
}

fn parse<T>(raw: &str, what: &str, name: &str) -> Result<T, HandlerError>
where
    T: FromStr,
    T::Err: Display,
{
    raw.parse().map_err(|e| HandlerError::invalid_params(format!("invalid value {raw:?} for {what} `{name}`: {e}")))
}

/// Template variable `name`, parsed; a missing variable or a parse failure is `-32602`.
pub fn template_var<T>(request: &ResourceRequest, name: &str) -> Result<T, HandlerError>
where
    T: FromStr,
    T::Err: Display,
{
    match request.var(name) {
        Some(raw) => parse(raw, "template variable", name),
        None => Err(HandlerError::invalid_params(format!("missing template variable `{name}`"))),
    }
}

/// Template variable `name` if present, parsed; a parse failure is `-32602`.
pub fn template_var_opt<T>(request: &ResourceRequest, name: &str) -> Result<Option<T>, HandlerError>
where
    T: FromStr,
    T::Err: Display,
{
    request.var(name).map(|raw| parse(raw, "template variable", name)).transpose()
}

/// Prompt argument `name`, parsed; a missing argument or a parse failure is `-32602`.
pub fn prompt_arg<T>(arguments: &PromptArguments, name: &str) -> Result<T, HandlerError>
where
    T: FromStr,
    T::Err: Display,
{
    match arguments.get(name) {
        Some(raw) => parse(raw, "argument", name),
        None => Err(HandlerError::invalid_params(format!("missing required argument `{name}`"))),
    }
}

/// Prompt argument `name` if given, parsed; a parse failure is `-32602`.
pub fn prompt_arg_opt<T>(arguments: &PromptArguments, name: &str) -> Result<Option<T>, HandlerError>
where
    T: FromStr,
    T::Err: Display,
{
    arguments.get(name).map(|raw| parse(raw, "argument", name)).transpose()
}

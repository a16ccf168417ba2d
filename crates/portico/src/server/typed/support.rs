//! What the expansions of the attribute macros call. Not public API: it may change in any
//! release. (A file of its own so that compile errors pointing here keep their line numbers.)

use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

use portico_schema::{CallToolResult, CompleteResult, GetPromptResult};
use schemars::JsonSchema;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};

use super::{CompletionOutput, PromptOutput, ResourceOutput};
use crate::server::{HandlerError, IntoCallToolResult, ResourceRequest, registry::ReadOutput};

pub use schemars;
pub use serde;

/// What a tool parameter's type must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument",
    note = "tool arguments are decoded with serde and described with schemars: derive `serde::Deserialize` and `schemars::JsonSchema` for `{Self}`, or take a type that has them"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// Decodes one tool argument (`#[serde(deserialize_with)]` of the arguments struct's fields, so
/// that a type that cannot be an argument is reported once, in these words).
///
/// # Errors
/// When the value does not decode.
pub fn argument<'de, D: Deserializer<'de>, T: ToolArgument>(deserializer: D) -> Result<T, D::Error> {
    T::deserialize(deserializer)
}

/// Decodes one optional tool argument (`null` is `None`).
///
/// # Errors
/// When the value does not decode.
pub fn optional_argument<'de, D: Deserializer<'de>, T: ToolArgument>(deserializer: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(deserializer)
}

/// What a prompt argument's or template variable's type must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be parsed from a prompt argument or template variable",
    note = "prompt arguments and template variables are strings, parsed with `FromStr`: implement `FromStr` for `{Self}` (with an error that implements `Display`), or take a `String`"
)]
pub trait ParseArgument: Sized {
    /// Parses `raw`, or says why not.
    ///
    /// # Errors
    /// The parse error's message.
    fn parse_argument(raw: &str) -> Result<Self, String>;
}

impl<T> ParseArgument for T
where
    T: FromStr,
    T::Err: Display,
{
    fn parse_argument(raw: &str) -> Result<Self, String> {
        raw.parse().map_err(|e: T::Err| e.to_string())
    }
}

/// `IntoToolBox` for a toolbox by value.
#[derive(Debug)]
pub enum Owned {}

/// `IntoToolBox` for an `Arc` of a toolbox.
#[derive(Debug)]
pub enum Shared {}

/// The arguments of `prompts/get`: names to strings.
pub type PromptArguments = BTreeMap<String, String>;

/// A tool function's return value as the call's result.
pub fn tool_result<R: IntoCallToolResult>(value: R) -> CallToolResult {
    value.into_call_tool_result()
}

/// A resource function's return value as the read's result.
///
/// # Errors
/// The function's error.
pub fn resource_result<R: ResourceOutput>(
    value: R,
    uri: &str,
    mime_type: Option<&str>,
) -> Result<ReadOutput, HandlerError> {
    value.into_resource_output(uri, mime_type)
}

/// A prompt function's return value as the prompt's messages.
///
/// # Errors
/// The function's error.
pub fn prompt_result<R: PromptOutput>(value: R) -> Result<GetPromptResult, HandlerError> {
    value.into_prompt_result()
}

/// A completion function's return value as the suggestions.
///
/// # Errors
/// The function's error.
pub fn completion_result<R: CompletionOutput>(value: R) -> Result<CompleteResult, HandlerError> {
    value.into_complete_result()
}

fn parse<T: ParseArgument>(raw: &str, what: &str, name: &str) -> Result<T, HandlerError> {
    T::parse_argument(raw)
        .map_err(|e| HandlerError::invalid_params(format!("invalid value {raw:?} for {what} `{name}`: {e}")))
}

/// Template variable `name`, parsed; a missing variable or a parse failure is `-32602`.
///
/// # Errors
/// An invalid-params error saying which variable and why.
pub fn template_var<T: ParseArgument>(request: &ResourceRequest, name: &str) -> Result<T, HandlerError> {
    match request.var(name) {
        Some(raw) => parse(raw, "template variable", name),
        None => Err(HandlerError::invalid_params(format!("missing template variable `{name}`"))),
    }
}

/// Template variable `name` if present, parsed; a parse failure is `-32602`.
///
/// # Errors
/// An invalid-params error saying which variable and why.
pub fn template_var_opt<T: ParseArgument>(request: &ResourceRequest, name: &str) -> Result<Option<T>, HandlerError> {
    request.var(name).map(|raw| parse(raw, "template variable", name)).transpose()
}

/// Prompt argument `name`, parsed; a missing argument or a parse failure is `-32602`.
///
/// # Errors
/// An invalid-params error saying which argument and why.
pub fn prompt_arg<T: ParseArgument>(arguments: &PromptArguments, name: &str) -> Result<T, HandlerError> {
    match arguments.get(name) {
        Some(raw) => parse(raw, "argument", name),
        None => Err(HandlerError::invalid_params(format!("missing required argument `{name}`"))),
    }
}

/// Prompt argument `name` if given, parsed; a parse failure is `-32602`.
///
/// # Errors
/// An invalid-params error saying which argument and why.
pub fn prompt_arg_opt<T: ParseArgument>(arguments: &PromptArguments, name: &str) -> Result<Option<T>, HandlerError> {
    arguments.get(name).map(|raw| parse(raw, "argument", name)).transpose()
}

/// How a generated handler gives up before calling the function (an `Extension<T>` the
/// request does not carry): a tool error for tools, the error itself elsewhere.
pub trait Missing {
    /// The early answer for `error`.
    fn missing(error: HandlerError) -> Self;
}

impl Missing for CallToolResult {
    fn missing(error: HandlerError) -> Self {
        CallToolResult::error(error.to_string())
    }
}

impl<T> Missing for Result<T, HandlerError> {
    fn missing(error: HandlerError) -> Self {
        Err(error)
    }
}

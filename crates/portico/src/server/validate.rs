//! JSON Schema validation of tool arguments against the tool's `inputSchema` (feature
//! `validate`), before the handler's typed decoding.
//!
//! The spec asks servers to validate every tool input. Typed decoding already refuses wrong
//! types and missing fields; the schema adds what types cannot say (ranges, patterns, enums,
//! `additionalProperties: false`, formats). Each schema is compiled once, when the tool is
//! registered. Schemas without `$schema` are JSON Schema 2020-12 (the MCP default). A `$ref` is
//! resolved only inside the schema: nothing is ever fetched from the network or the file system
//! (a schema needing that is not compiled; the tool then relies on typed decoding alone, and a
//! warning says so).

use serde_json::value::RawValue;

/// The compiled input schema of one tool (with the `validate` feature; otherwise it accepts
/// everything and costs nothing).
pub(crate) struct ArgumentValidator {
    #[cfg(feature = "validate")]
    compiled: jsonschema::Validator,
}

/// How many schema violations one error message lists.
#[cfg(feature = "validate")]
const MAX_REPORTED: usize = 5;

#[cfg(feature = "validate")]
struct NoRetrieval;

#[cfg(feature = "validate")]
impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not dereferenced").into())
    }
}

impl ArgumentValidator {
    /// Compiles `tool`'s input schema; `None` when validation is off or the schema cannot be
    /// compiled.
    pub(crate) fn compile(tool: &portico_schema::Tool) -> Option<Self> {
        #[cfg(feature = "validate")]
        {
            let schema = serde_json::Value::Object(tool.input_schema.clone());
            let mut options = jsonschema::options().with_retriever(NoRetrieval);
            if !tool.input_schema.contains_key("$schema") {
                options = options.with_draft(jsonschema::Draft::Draft202012);
            }
            match options.build(&schema) {
                Ok(compiled) => Some(ArgumentValidator { compiled }),
                Err(e) => {
                    tracing::warn!(tool = %tool.name, error = %e, "input schema not compiled; arguments are only type-checked");
                    None
                }
            }
        }
        #[cfg(not(feature = "validate"))]
        {
            let _ = tool;
            None
        }
    }

    /// Checks `arguments` (absent = `{}`); the error lists the first violations.
    pub(crate) fn check(&self, arguments: Option<&RawValue>) -> Result<(), String> {
        #[cfg(feature = "validate")]
        {
            let instance: serde_json::Value = match arguments {
                Some(a) => serde_json::from_str(a.get()).map_err(|e| e.to_string())?,
                None => serde_json::Value::Object(Default::default()),
            };
            let errors: Vec<String> = self
                .compiled
                .iter_errors(&instance)
                .take(MAX_REPORTED)
                .map(|e| {
                    let at = e.instance_path.to_string();
                    if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
                })
                .collect();
            if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
        }
        #[cfg(not(feature = "validate"))]
        {
            let _ = arguments;
            Ok(())
        }
    }
}

//! Tools, resources, templates and prompts by name, with their handlers erased to one shape,
//! and opaque-cursor pagination over a deterministic (name-sorted) order.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use portico_schema::{
    CompleteRequestParams, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::context::RequestContext;
use super::encoded::EncodedContents;
use super::handler::{HandlerError, IntoCallToolResult};
use super::uri_template::{UriMatch, UriTemplate, UriTemplateError};

/// A tool handler: `Fn(Args) -> Future` or `Fn(Args, RequestContext) -> Future`, where `Args`
/// is any `Deserialize` type decoded from the call's `arguments` and the future's output is
/// [`IntoCallToolResult`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool handler",
    note = "a tool handler is an async fn or closure taking `(Args)` or `(Args, RequestContext)`, where `Args: serde::Deserialize`, and returning something that implements `IntoCallToolResult`"
)]
pub trait ToolHandler<M>: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_erased(self) -> ErasedTool;
}

/// A handler with its argument decoding erased.
#[doc(hidden)]
pub type ErasedTool = Arc<
    dyn Fn(
            Option<&RawValue>,
            RequestContext,
        ) -> Result<BoxFuture<'static, Result<crate::RelayedToolResult, HandlerError>>, serde_json::Error>
        + Send
        + Sync,
>;

fn decode_args<A: DeserializeOwned>(raw: Option<&RawValue>) -> Result<A, serde_json::Error> {
    serde_json::from_str(raw.map_or("{}", |r| r.get()))
}

impl<F, Fut, A, R> ToolHandler<(A,)> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    A: DeserializeOwned,
    R: IntoCallToolResult + 'static,
{
    fn into_erased(self) -> ErasedTool {
        Arc::new(move |raw, _cx| {
            let args = decode_args::<A>(raw)?;
            Ok(self(args).map(IntoCallToolResult::into_tool_reply).boxed())
        })
    }
}

impl<F, Fut, A, R> ToolHandler<(A, RequestContext)> for F
where
    F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    A: DeserializeOwned,
    R: IntoCallToolResult + 'static,
{
    fn into_erased(self) -> ErasedTool {
        Arc::new(move |raw, cx| {
            let args = decode_args::<A>(raw)?;
            Ok(self(args, cx).map(IntoCallToolResult::into_tool_reply).boxed())
        })
    }
}

/// What a resource handler gets: the URI read and, for a template, its variables.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    uri: String,
    vars: Option<UriMatch>,
}

impl ResourceRequest {
    /// The URI being read.
    pub fn uri(&self) -> &str {
        &self.uri
    }
    /// A template variable (percent-decoded); `None` for static resources.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.as_ref().and_then(|m| m.get(name))
    }
}

/// Converts what a resource handler returns into a [`ReadResourceResult`].
pub trait IntoReadResourceResult {
    /// The result.
    fn into_read_resource_result(self) -> ReadResourceResult;

    /// What the server answers: the result, or contents encoded beforehand.
    #[doc(hidden)]
    fn into_read_output(self) -> ReadOutput
    where
        Self: Sized,
    {
        ReadOutput::Result(self.into_read_resource_result())
    }
}

/// What a resource handler produced, as the server answers it.
#[doc(hidden)]
#[derive(Debug)]
pub enum ReadOutput {
    /// A result to encode.
    Result(ReadResourceResult),
    /// Contents encoded beforehand.
    Encoded(EncodedContents),
}

impl IntoReadResourceResult for ReadOutput {
    fn into_read_resource_result(self) -> ReadResourceResult {
        match self {
            ReadOutput::Result(r) => r,
            ReadOutput::Encoded(e) => e.read_result(),
        }
    }
    fn into_read_output(self) -> ReadOutput {
        self
    }
}

impl IntoReadResourceResult for EncodedContents {
    fn into_read_resource_result(self) -> ReadResourceResult {
        self.read_result()
    }
    fn into_read_output(self) -> ReadOutput {
        ReadOutput::Encoded(self)
    }
}

impl IntoReadResourceResult for ReadResourceResult {
    fn into_read_resource_result(self) -> ReadResourceResult {
        self
    }
}

impl IntoReadResourceResult for ResourceContents {
    fn into_read_resource_result(self) -> ReadResourceResult {
        ReadResourceResult::new(vec![self])
    }
}

impl IntoReadResourceResult for Vec<ResourceContents> {
    fn into_read_resource_result(self) -> ReadResourceResult {
        ReadResourceResult::new(self)
    }
}

/// A resource handler: an async fn or closure taking `(ResourceRequest, RequestContext)` and
/// returning `Result<impl IntoReadResourceResult, HandlerError>` (for example
/// [`ResourceContents`], or [`EncodedContents`] for contents encoded once).
pub trait ResourceHandler: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_erased(self) -> ErasedResource;
}

#[doc(hidden)]
pub type ErasedResource =
    Arc<dyn Fn(ResourceRequest, RequestContext) -> BoxFuture<'static, Result<ReadOutput, HandlerError>> + Send + Sync>;

impl<F, Fut, R> ResourceHandler for F
where
    F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    R: IntoReadResourceResult,
{
    fn into_erased(self) -> ErasedResource {
        Arc::new(move |req, cx| self(req, cx).map(|r| r.map(IntoReadResourceResult::into_read_output)).boxed())
    }
}

/// A prompt handler: an async fn or closure taking `(Args)` or `(Args, RequestContext)`, where
/// `Args` is decoded from the prompt's string arguments, returning
/// `Result<GetPromptResult, HandlerError>`.
pub trait PromptHandler<M>: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_erased(self) -> ErasedPrompt;
}

#[doc(hidden)]
pub type ErasedPrompt = Arc<
    dyn Fn(
            Option<&RawValue>,
            RequestContext,
        ) -> Result<BoxFuture<'static, Result<GetPromptResult, HandlerError>>, serde_json::Error>
        + Send
        + Sync,
>;

impl<F, Fut, A> PromptHandler<(A,)> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    A: DeserializeOwned,
{
    fn into_erased(self) -> ErasedPrompt {
        Arc::new(move |raw, _cx| Ok(self(decode_args::<A>(raw)?).boxed()))
    }
}

impl<F, Fut, A> PromptHandler<(A, RequestContext)> for F
where
    F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    A: DeserializeOwned,
{
    fn into_erased(self) -> ErasedPrompt {
        Arc::new(move |raw, cx| Ok(self(decode_args::<A>(raw)?, cx).boxed()))
    }
}

/// A completion handler for `completion/complete`.
pub trait CompletionHandler: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_erased(self) -> ErasedCompletion;
}

#[doc(hidden)]
pub type ErasedCompletion = Arc<
    dyn Fn(CompleteRequestParams, RequestContext) -> BoxFuture<'static, Result<CompleteResult, HandlerError>>
        + Send
        + Sync,
>;

impl<F, Fut> CompletionHandler for F
where
    F: Fn(CompleteRequestParams, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CompleteResult, HandlerError>> + Send + 'static,
{
    fn into_erased(self) -> ErasedCompletion {
        Arc::new(move |p, cx| self(p, cx).boxed())
    }
}

pub(crate) struct ToolEntry {
    /// Shared with whoever added it (a gateway keeps the same definition in its own registry).
    pub def: Arc<Tool>,
    pub handler: ErasedTool,
    pub enabled: AtomicBool,
    pub tasks: super::TaskSupport,
    /// The compiled input schema (feature `validate`).
    pub validator: Option<super::validate::ArgumentValidator>,
    /// Whether the input schema mirrors some argument in an `Mcp-Param-*` header
    /// ([`mirrored_params`]), worked out once here rather than per request.
    #[cfg(feature = "http-server")]
    pub mirrors_params: bool,
}

/// `(property, header name)` for every top-level property of an input schema annotated with
/// `x-mcp-header` (the 2026-07-28 Streamable HTTP `Mcp-Param-*` headers).
#[cfg(feature = "http-server")]
pub(crate) fn mirrored_params(schema: &portico_schema::JsonObject) -> impl Iterator<Item = (&str, &str)> {
    schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|props| props.iter())
        .filter_map(|(name, p)| p.get("x-mcp-header").and_then(serde_json::Value::as_str).map(|h| (name.as_str(), h)))
}

pub(crate) struct ResourceEntry {
    pub def: Resource,
    pub handler: ErasedResource,
    pub enabled: AtomicBool,
}

pub(crate) struct TemplateEntry {
    pub def: ResourceTemplate,
    pub template: UriTemplate,
    pub handler: ErasedResource,
    pub enabled: AtomicBool,
}

pub(crate) struct PromptEntry {
    pub def: Prompt,
    pub handler: ErasedPrompt,
    pub enabled: AtomicBool,
}

/// What the listing code needs of any entry.
pub(crate) trait Entry {
    type Def: Clone;
    fn def(&self) -> &Self::Def;
    fn enabled(&self) -> bool {
        self.enabled_flag().load(Ordering::Relaxed)
    }
    /// The flag `Server::set_*_enabled` flips.
    fn enabled_flag(&self) -> &AtomicBool;
}

macro_rules! entry {
    ($($t:ty => $d:ty),*) => {$(impl Entry for $t {
        type Def = $d;
        fn def(&self) -> &$d { &self.def }
        fn enabled_flag(&self) -> &AtomicBool { &self.enabled }
    })*};
}
impl Entry for ToolEntry {
    type Def = Tool;
    fn def(&self) -> &Tool {
        &self.def
    }
    fn enabled_flag(&self) -> &AtomicBool {
        &self.enabled
    }
}
entry!(ResourceEntry => Resource, TemplateEntry => ResourceTemplate, PromptEntry => Prompt);

/// Everything the server offers. Entries are `Arc`ed so a snapshot for one request is cheap.
#[derive(Default)]
pub(crate) struct Registry {
    pub tools: BTreeMap<String, Arc<ToolEntry>>,
    pub resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub templates: BTreeMap<String, Arc<TemplateEntry>>,
    pub prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub completion: Option<ErasedCompletion>,
}

impl Registry {
    /// Adds or replaces a tool (enabled).
    pub(crate) fn insert_tool(&mut self, def: Arc<Tool>, handler: ErasedTool, tasks: super::TaskSupport) {
        let validator = super::validate::ArgumentValidator::compile(&def);
        #[cfg(feature = "http-server")]
        let mirrors_params = mirrored_params(&def.input_schema).next().is_some();
        let entry = ToolEntry {
            def,
            handler,
            enabled: AtomicBool::new(true),
            tasks,
            validator,
            #[cfg(feature = "http-server")]
            mirrors_params,
        };
        self.tools.insert(entry.def.name.clone(), Arc::new(entry));
    }

    /// Adds or replaces a resource (enabled).
    pub(crate) fn insert_resource(&mut self, def: Resource, handler: ErasedResource) {
        let entry = ResourceEntry { def, handler, enabled: AtomicBool::new(true) };
        self.resources.insert(entry.def.uri.clone(), Arc::new(entry));
    }

    /// Adds or replaces a resource template (enabled), or says why the template is invalid.
    pub(crate) fn insert_template(
        &mut self,
        def: ResourceTemplate,
        handler: ErasedResource,
    ) -> Result<(), UriTemplateError> {
        let template = UriTemplate::parse(&def.uri_template)?;
        let entry = TemplateEntry { def, template, handler, enabled: AtomicBool::new(true) };
        self.templates.insert(entry.def.uri_template.clone(), Arc::new(entry));
        Ok(())
    }

    /// Adds or replaces a prompt (enabled).
    pub(crate) fn insert_prompt(&mut self, def: Prompt, handler: ErasedPrompt) {
        let entry = PromptEntry { def, handler, enabled: AtomicBool::new(true) };
        self.prompts.insert(entry.def.name.clone(), Arc::new(entry));
    }

    /// The resource handler for `uri`: an exact resource first, then the first matching template.
    pub(crate) fn find_resource(&self, uri: &str) -> Option<(ErasedResource, ResourceRequest)> {
        if let Some(e) = self.resources.get(uri).filter(|e| e.enabled()) {
            return Some((e.handler.clone(), ResourceRequest { uri: uri.to_owned(), vars: None }));
        }
        self.templates.values().filter(|e| e.enabled()).find_map(|e| {
            e.template.matches(uri).map(|m| (e.handler.clone(), ResourceRequest { uri: uri.to_owned(), vars: Some(m) }))
        })
    }
}

/// One page of a name-sorted list: the items after `cursor`, at most `page_size` of them,
/// and the cursor of the next page.
///
/// Cursors are the URL-safe base64 of the last name returned: opaque to clients, stable when
/// items are added or removed between pages.
pub(crate) fn page<'a, T: 'a>(
    items: impl Iterator<Item = (&'a String, &'a T)>,
    cursor: Option<&str>,
    page_size: Option<usize>,
) -> Result<(Vec<&'a T>, Option<String>), InvalidCursor> {
    let after = match cursor {
        None => None,
        Some(c) => {
            let bytes = URL_SAFE_NO_PAD.decode(c).map_err(|_| InvalidCursor)?;
            Some(String::from_utf8(bytes).map_err(|_| InvalidCursor)?)
        }
    };
    let mut out = Vec::new();
    let mut last: Option<&String> = None;
    let mut more = false;
    for (name, item) in items {
        if after.as_ref().is_some_and(|a| name <= a) {
            continue;
        }
        if page_size.is_some_and(|n| out.len() >= n) {
            more = true;
            break;
        }
        last = Some(name);
        out.push(item);
    }
    let next = if more { last.map(|l| URL_SAFE_NO_PAD.encode(l.as_bytes())) } else { None };
    Ok((out, next))
}

/// A cursor this server did not issue.
#[derive(Debug)]
pub(crate) struct InvalidCursor;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_everything_once() {
        let map: BTreeMap<String, u32> = (0..25).map(|i| (format!("t{i:02}"), i)).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (items, next) = page(map.iter(), cursor.as_deref(), Some(10)).expect("valid cursor");
            seen.extend(items.into_iter().copied());
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, (0..25).collect::<Vec<_>>());
        assert!(page(map.iter(), Some("%%%"), Some(10)).is_err());
        let (all, next) = page(map.iter(), None, None).expect("all");
        assert_eq!((all.len(), next), (25, None));
    }
}

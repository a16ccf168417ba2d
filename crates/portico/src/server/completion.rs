//! Argument completions that compose: one handler per prompt or resource template argument
//! ([`ServerBuilder::complete_argument`]), next to [`ServerBuilder::completion`], which answers
//! every `completion/complete` request itself.

use std::sync::Arc;

use portico_schema::{CompleteRequestParams, CompleteResult, CompletionReference};

use super::registry::{CompletionHandler, ErasedCompletion};
use super::{RequestContext, ServerBuilder};

impl ServerBuilder {
    /// Completes `argument` of the prompt or resource template `reference` with `handler`;
    /// other `completion/complete` requests go to what was registered before (or get no
    /// suggestions).
    ///
    /// Unlike [`completion`](Self::completion), which answers every request, this composes: each
    /// call adds one argument. A later `completion(…)` replaces them all.
    ///
    /// ```
    /// use portico::schema::{CompleteRequestParams, CompleteResult, CompletionReference, Implementation};
    /// use portico::server::{HandlerError, RequestContext, Server};
    ///
    /// let server = Server::builder(Implementation::new("langs", "1.0.0"))
    ///     .complete_argument(
    ///         CompletionReference::prompt("review"),
    ///         "language",
    ///         |p: CompleteRequestParams, _cx: RequestContext| async move {
    ///             let langs = ["rust", "ruby", "python"];
    ///             let values = langs.into_iter().filter(|l| l.starts_with(p.argument.value.as_str()));
    ///             Ok::<_, HandlerError>(CompleteResult::new(values))
    ///         },
    ///     )
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn complete_argument(
        mut self,
        reference: CompletionReference,
        argument: impl Into<String>,
        handler: impl CompletionHandler,
    ) -> Self {
        let argument = argument.into();
        let handler = handler.into_erased();
        let previous = self.registry.completion.take();
        let combined: ErasedCompletion = Arc::new(move |p: CompleteRequestParams, cx: RequestContext| {
            if p.argument.name == argument && same_reference(&p.r#ref, &reference) {
                handler(p, cx)
            } else if let Some(previous) = &previous {
                previous(p, cx)
            } else {
                Box::pin(async { Ok(CompleteResult::default()) })
            }
        });
        self.registry.completion = Some(combined);
        self
    }
}

fn same_reference(a: &CompletionReference, b: &CompletionReference) -> bool {
    match (a, b) {
        (CompletionReference::Prompt(a), CompletionReference::Prompt(b)) => a.name == b.name,
        (CompletionReference::ResourceTemplate(a), CompletionReference::ResourceTemplate(b)) => a.uri == b.uri,
        _ => false,
    }
}

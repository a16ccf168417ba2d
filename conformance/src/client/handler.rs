//! How the conformance client answers the server: a user who accepts every form as
//! pre-filled, a model that always says the same thing, and one root.

use futures_util::future::BoxFuture;
use portico::client::ClientHandler;
use portico::client::elicitation::accept_with_defaults;
use portico::schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult,
    LoggingMessageNotificationParams, Root, SamplingMessageContentBlock,
};

/// Answers input requests the way the suite's scenarios expect of an obliging user.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConformanceHandler;

impl ClientHandler for ConformanceHandler {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        tracing::info!(messages = params.messages.len(), "sampling requested");
        Box::pin(async {
            Ok(CreateMessageResult::new(
                SamplingMessageContentBlock::text("This is a response from the conformance client's model."),
                "portico-conformance-model",
            )
            .with_stop_reason("endTurn"))
        })
    }

    /// Accepts forms with every field left at its default (SEP-1034); declines URL
    /// elicitations, which have no one to open them.
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async move {
            Ok(match params {
                ElicitRequestParams::Form(form) => {
                    tracing::info!(message = %form.message, "form elicitation accepted with its defaults");
                    accept_with_defaults(&form.requested_schema, Default::default())
                }
                _ => ElicitResult::decline(),
            })
        })
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async { Ok(ListRootsResult::new(vec![Root::new("file:///tmp/conformance").with_name("workspace")])) })
    }

    fn on_log(&self, params: LoggingMessageNotificationParams) {
        tracing::info!(level = ?params.level, data = %params.data, "server log");
    }
}

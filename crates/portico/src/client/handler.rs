//! What a client answers when the server asks for something, and what it is told.

use futures_util::future::BoxFuture;
use portico_schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult,
    LoggingMessageNotificationParams,
};

/// The client side's callbacks: input requests from the server (sampling, elicitation, roots,
/// in both eras) and notifications (logs, list changes, resource updates).
///
/// Every method has a default: input requests answer "method not found" (declare only the
/// capabilities you implement), notifications are ignored.
pub trait ClientHandler: Send + Sync + 'static {
    /// `sampling/createMessage`: run the model.
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        let _ = params;
        Box::pin(async { Err(ErrorObject::method_not_found("sampling/createMessage")) })
    }

    /// `elicitation/create`: ask the user.
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        let _ = params;
        Box::pin(async { Err(ErrorObject::method_not_found("elicitation/create")) })
    }

    /// `roots/list`: the roots the user exposes.
    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async { Err(ErrorObject::method_not_found("roots/list")) })
    }

    /// A log message from the server.
    fn on_log(&self, params: LoggingMessageNotificationParams) {
        let _ = params;
    }

    /// The server's tool list changed.
    fn on_tools_list_changed(&self) {}

    /// The server's prompt list changed.
    fn on_prompts_list_changed(&self) {}

    /// The server's resource list changed.
    fn on_resources_list_changed(&self) {}

    /// A subscribed resource changed.
    fn on_resource_updated(&self, uri: &str) {
        let _ = uri;
    }
}

/// A handler that declines everything: for clients that only call the server.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl ClientHandler for NoHandler {}

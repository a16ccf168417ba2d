//! The server's middleware stack: the innermost service that hands a request to the era layer,
//! the per-tool routing, and how the stack is built once from the builder's layers.
//!
//! The stack is built once per server, but a request must reach its own connection's era layer:
//! where it goes ([`Route`]) travels in the request's extensions, as a private type no layer
//! can name, and the innermost service takes it out again.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tower::ServiceExt;

use super::era::EraLayer;
use super::era::resolve::ResolvedEra;
use crate::middleware::{
    BoxError, LayerFn, McpRequest, McpResponse, ParamsReplaced, Stack, build_stack, middleware_error,
};
use crate::rpc::{Handled, IncomingRequest, Peer, Reply};

/// Where a request goes after the layers, and what the era layer needs besides the request
/// itself. Private: layers cannot name it.
#[derive(Clone)]
struct Route {
    layer: Arc<EraLayer>,
    peer: Peer,
    cancel: crate::rpc::Cancel,
    close_stream: Option<Arc<Notify>>,
}

/// Runs `request` through `stack`, then the era layer.
pub(super) fn call(
    stack: Stack,
    layer: Arc<EraLayer>,
    request: IncomingRequest,
    peer: Peer,
) -> BoxFuture<'static, Reply> {
    let IncomingRequest { id, method, params, cancel, close_stream, mut extensions } = request;
    // Layers may key per-connection state on it, as handlers do with `connection_id`.
    extensions.insert(super::ConnectionId::new(peer.connection_id()));
    extensions.insert(Route { layer, peer, cancel, close_stream });
    let req = McpRequest::new(id, method, params, extensions);
    async move {
        match stack.oneshot(req).await {
            Ok(r) => r.into_outcome(),
            Err(e) => Err(middleware_error(&e)),
        }
    }
    .boxed()
}

/// The innermost service: the era layer and the handlers.
fn endpoint(req: McpRequest) -> BoxFuture<'static, Result<McpResponse, BoxError>> {
    let (id, method, params, mut extensions) = req.into_parts();
    let Some(r) = extensions.remove::<Route>() else {
        return async {
            Err(BoxError::from(
                "a request reached the server's era layer without its route: a layer cleared the request's \
                 extensions (`extensions_mut().clear()`); remove only the types the layer inserted",
            ))
        }
        .boxed();
    };
    // An era a transport resolved from the params as sent no longer holds for new params.
    if extensions.remove::<ParamsReplaced>().is_some() {
        extensions.remove::<ResolvedEra>();
    }
    let incoming = IncomingRequest { id, method, params, cancel: r.cancel, close_stream: r.close_stream, extensions };
    match r.layer.handle(incoming, r.peer) {
        Handled::Now(reply) => futures_util::future::ready(Ok(McpResponse::from_outcome(reply))).boxed(),
        Handled::Later(fut) => fut.map(|reply| Ok(McpResponse::from_outcome(reply))).boxed(),
    }
}

/// Sends `tools/call` of a tool with layers of its own through them.
#[derive(Clone)]
struct ToolRouter {
    tools: Arc<HashMap<String, Stack>>,
    rest: Stack,
}

impl tower::Service<McpRequest> for ToolRouter {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = tower::util::Oneshot<Stack, McpRequest>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each call drives its own clone to readiness (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let target = req.tool_name().and_then(|n| self.tools.get(&n)).unwrap_or(&self.rest);
        target.clone().oneshot(req)
    }
}

/// Builds the stack once: per-tool layers around the era layer for their tool, then the
/// server's layers around everything. `None` without any layer.
pub(super) fn middleware_stack(layers: &[LayerFn], per_tool: &HashMap<String, Vec<LayerFn>>) -> Option<Stack> {
    if layers.is_empty() && per_tool.is_empty() {
        return None;
    }
    let endpoint = Stack::new(tower::service_fn(endpoint));
    let inner = if per_tool.is_empty() {
        endpoint
    } else {
        let tools = per_tool.iter().map(|(name, l)| (name.clone(), build_stack(endpoint.clone(), l))).collect();
        Stack::new(ToolRouter { tools: Arc::new(tools), rest: endpoint })
    };
    Some(build_stack(inner, layers))
}

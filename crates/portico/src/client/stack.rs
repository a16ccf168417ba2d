//! The client's middleware stack: the innermost service sends the request over the connection.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tower::ServiceExt;

use crate::error::Error;
use crate::middleware::{BoxError, LayerFn, McpRequest, McpResponse, Stack, build_stack};
use crate::rpc::{Peer, RequestOptions};

/// Where a request goes after the layers: the connection, with the request's options. A
/// private extension: layers cannot name it.
#[derive(Clone)]
struct Route(Peer, RequestOptions);

/// Sends `params` as `method` through `stack`.
pub(super) async fn send(
    stack: &Stack,
    peer: &Peer,
    method: &str,
    params: Option<Box<RawValue>>,
    mut options: RequestOptions,
) -> Result<Box<RawValue>, Error> {
    let id = options.id.clone().unwrap_or_else(|| peer.next_id());
    options.id = Some(id.clone());
    let mut extensions = http::Extensions::new();
    extensions.insert(Route(peer.clone(), options));
    let req = McpRequest::new(id, method.into(), params, extensions);
    match stack.clone().oneshot(req).await {
        Ok(r) => match r.into_outcome() {
            Ok(bytes) => String::from_utf8(bytes.to_vec())
                .ok()
                .and_then(|s| RawValue::from_string(s).ok())
                .ok_or_else(|| Error::local(format!("middleware answered {method} with a result that is not JSON"))),
            Err(e) => Err(Error::peer(e)),
        },
        Err(e) => Err(match e.downcast::<Error>() {
            Ok(e) => *e,
            Err(e) => Error::local(format!("{method} failed in middleware: {e}")),
        }),
    }
}

/// The innermost service: the request goes out on the connection.
fn endpoint(req: McpRequest) -> BoxFuture<'static, Result<McpResponse, BoxError>> {
    let (_, method, params, mut extensions) = req.into_parts();
    let Some(Route(peer, options)) = extensions.remove::<Route>() else {
        return async {
            Err(BoxError::from(
                "a request reached the client's connection without its route: a layer cleared the request's \
                 extensions (`extensions_mut().clear()`); remove only the types the layer inserted",
            ))
        }
        .boxed();
    };
    async move {
        match peer.request_raw(&method, params.as_deref(), options).await {
            Ok(raw) => Ok(McpResponse::from_outcome(Ok(String::from(raw.get()).into_bytes().into()))),
            // The server's JSON-RPC errors are answers layers see; the rest are failures.
            Err(e) => match e.peer_error() {
                Some(obj) => Ok(McpResponse::error(obj.clone())),
                None => Err(Box::new(e) as BoxError),
            },
        }
    }
    .boxed()
}

/// Builds the stack once; `None` without layers.
pub(super) fn build(layers: &[LayerFn]) -> Option<Stack> {
    (!layers.is_empty()).then(|| build_stack(Stack::new(tower::service_fn(endpoint)), layers))
}

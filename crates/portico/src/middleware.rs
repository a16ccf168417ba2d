//! JSON-RPC middleware: [tower] layers around the requests a server handles and the requests a
//! client sends.
//!
//! A layer sees each request as an [`McpRequest`] (id, method, raw params, extensions) and
//! answers an [`McpResponse`] (a raw result or a JSON-RPC error). It can log, time, limit,
//! reject, or attach data for the handler ([`McpRequest::extensions_mut`], read back with
//! [`RequestContext::extensions`](crate::server::RequestContext::extensions)). Any tower layer
//! whose service keeps these types works: `tower::timeout::TimeoutLayer`,
//! `tower::limit::ConcurrencyLimitLayer`, `tower::util::MapRequestLayer`, `tower::layer::layer_fn`
//! over your own service, …
//!
//! Where they sit: on a server, after the transport has framed and decoded the message and before
//! the era layer (so a layer sees every request, `initialize` and `server/discover` included,
//! exactly as the client sent it); per tool, around `tools/call` of that tool only
//! ([`ServerBuilder::tool_layer`](crate::server::ServerBuilder::tool_layer)). On a client,
//! around every request the client sends after connecting
//! ([`ClientBuilder::layer`](crate::client::ClientBuilder::layer)).
//!
//! Ready-made: [`RequestLogLayer`] (one `tracing` event per request: method, id, tool, duration,
//! error code; never arguments or results). Limits whose state lives in each service instance
//! (`tower::limit::RateLimit`) go behind a `tower::buffer::Buffer` so that every request shares
//! one: `ServiceBuilder::new().layer(BufferLayer::new(64)).layer(RateLimitLayer::new(…))` is one
//! layer (a buffer spawns its worker, so build the server inside a Tokio runtime then).
//!
//! The stack is built once, when the server or client is built; with no layer there is no cost.
//! A layer that fails (its service returns an error, e.g. a timeout) answers the request with an
//! internal error (-32603) carrying the error's message; on a client the call fails with it.
//!
//! ```
//! use std::time::Duration;
//! use portico::middleware::{McpRequest, McpResponse};
//! use portico::schema::{ErrorObject, Implementation};
//! use portico::server::Server;
//!
//! // Refuse `tools/call` for requests without a tenant, and time every request out after 30 s.
//! #[derive(Clone)]
//! struct Tenant(String);
//!
//! let server = Server::builder(Implementation::new("demo", "1.0.0"))
//!     .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(30)))
//!     .layer(tower::layer::layer_fn(|inner| {
//!         tower::util::MapRequest::new(inner, |mut req: McpRequest| {
//!             req.extensions_mut().insert(Tenant("acme".into()));
//!             req
//!         })
//!     }))
//!     .build();
//! # let _ = server;
//! ```
//!
//! [tower]: https://docs.rs/tower

// Without the server and the client nothing builds requests or stacks; the types stay public.
#![cfg_attr(not(any(feature = "server", feature = "client")), allow(dead_code))]

use portico_schema::{ErrorObject, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// The error type of middleware services (what tower layers such as `Timeout` produce).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A JSON-RPC request as middleware sees it.
pub struct McpRequest {
    id: RequestId,
    method: Box<str>,
    params: Option<Box<RawValue>>,
    extensions: http::Extensions,
}

/// A private extension [`McpRequest::set_params`] leaves: whatever a transport derived from
/// the params as they arrived (the server's era, resolved ahead from `_meta`) no longer holds.
#[derive(Clone, Copy)]
pub(crate) struct ParamsReplaced;

impl std::fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpRequest")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl McpRequest {
    pub(crate) fn new(
        id: RequestId,
        method: Box<str>,
        params: Option<Box<RawValue>>,
        extensions: http::Extensions,
    ) -> Self {
        McpRequest { id, method, params, extensions }
    }

    pub(crate) fn into_parts(self) -> (RequestId, Box<str>, Option<Box<RawValue>>, http::Extensions) {
        (self.id, self.method, self.params, self.extensions)
    }

    /// The JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as sent (raw JSON), if any.
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// Decodes the params as `T` (e.g. [`CallToolRequestParams`](portico_schema::CallToolRequestParams)).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.params.as_deref().map_or("{}", RawValue::get))
    }

    /// Replaces the params (e.g. to fill in defaults or redact a field).
    pub fn set_params<T: Serialize>(&mut self, params: &T) -> Result<(), serde_json::Error> {
        self.params = Some(serde_json::value::to_raw_value(params)?);
        self.extensions.insert(ParamsReplaced);
        Ok(())
    }

    /// The name of the tool a `tools/call` request calls (`None` for other methods, or when
    /// the params have no string `name`).
    pub fn tool_name(&self) -> Option<String> {
        if &*self.method != portico_schema::methods::TOOLS_CALL {
            return None;
        }
        tool_name_in(self.params.as_deref())
    }

    /// Data travelling with the request: over HTTP, the HTTP request's extensions; then what
    /// layers insert. Server handlers read them with
    /// [`RequestContext::extensions`](crate::server::RequestContext::extensions).
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }

    /// See [`extensions`](Self::extensions).
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }
}

/// The string `name` of `tools/call` params, if any.
pub(crate) fn tool_name_in(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Named<'_>>(params?.get()).ok().map(|n| n.name.into_owned())
}

/// The answer to an [`McpRequest`]: a result (raw JSON object) or a JSON-RPC error.
#[derive(Debug, Clone)]
pub struct McpResponse {
    outcome: Result<crate::rpc::ResultBytes, ErrorObject>,
}

impl McpResponse {
    pub(crate) fn from_outcome(outcome: Result<crate::rpc::ResultBytes, ErrorObject>) -> Self {
        McpResponse { outcome }
    }

    pub(crate) fn into_outcome(self) -> Result<crate::rpc::ResultBytes, ErrorObject> {
        self.outcome
    }

    /// A JSON-RPC error answer (a layer refusing a request).
    pub fn error(error: ErrorObject) -> Self {
        McpResponse { outcome: Err(error) }
    }

    /// A result answer, encoded from `result` (which must serialize to a JSON object).
    pub fn result<T: Serialize>(result: &T) -> Result<Self, serde_json::Error> {
        Ok(McpResponse { outcome: Ok(serde_json::to_vec(result)?.into()) })
    }

    /// True when this is an error answer.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }

    /// The error, when this is an error answer.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        self.outcome.as_ref().err()
    }

    /// The result as JSON text, when this is a result answer.
    pub fn result_json(&self) -> Option<&str> {
        self.outcome.as_ref().ok().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// Decodes the result as `T`; `None` for an error answer.
    pub fn result_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.outcome.as_ref().ok().map(|b| serde_json::from_slice(b))
    }
}

/// The service a layer wraps: the rest of the stack, type-erased. Name it when writing a layer
/// by hand (`tower::layer::layer_fn(|inner: McpService| …)`).
pub type McpService = tower::util::BoxCloneSyncService<McpRequest, McpResponse, BoxError>;

pub(crate) type Stack = McpService;

/// A layer, stored until the stack is built.
pub(crate) type LayerFn = Box<dyn Fn(Stack) -> Stack + Send + Sync>;

/// A tower layer the builders accept: any `Layer<McpService>` whose service takes an
/// [`McpRequest`], answers an [`McpResponse`], is `Clone + Send + Sync`, and fails with an error
/// convertible to [`BoxError`]. Implemented for every such layer; not implemented by hand.
pub trait McpLayer: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_layer_fn(self) -> Box<dyn Fn(McpService) -> McpService + Send + Sync>;
}

impl<L> McpLayer for L
where
    L: tower::Layer<McpService> + Send + Sync + 'static,
    L::Service: tower::Service<McpRequest, Response = McpResponse> + Clone + Send + Sync + 'static,
    <L::Service as tower::Service<McpRequest>>::Error: Into<BoxError>,
    <L::Service as tower::Service<McpRequest>>::Future: Send + 'static,
{
    fn into_layer_fn(self) -> LayerFn {
        use tower::ServiceExt;
        Box::new(move |inner| Stack::new(self.layer(inner).map_err(Into::into)))
    }
}

/// Wraps `inner` in `layers`, the last added outermost (it sees the request first), as in axum.
pub(crate) fn build_stack(inner: Stack, layers: &[LayerFn]) -> Stack {
    layers.iter().fold(inner, |s, l| l(s))
}

/// The JSON-RPC error answering a request whose middleware failed.
#[cfg(feature = "server")]
pub(crate) fn middleware_error(e: &BoxError) -> ErrorObject {
    ErrorObject::internal_error(format!("request failed in middleware: {e}"))
}

/// A layer that logs every request through `tracing` when it ends: method, id, tool name (for
/// `tools/call`), duration in microseconds, and the error code and message of a failed one.
/// Arguments and results are never logged (they may hold secrets).
///
/// ```
/// use portico::middleware::RequestLogLayer;
/// # let builder = portico::server::Server::builder(portico::schema::Implementation::new("s", "1"));
/// let server = builder.layer(RequestLogLayer::new().level(tracing::Level::DEBUG)).build();
/// # let _ = server;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RequestLogLayer {
    level: tracing::Level,
}

impl Default for RequestLogLayer {
    fn default() -> Self {
        RequestLogLayer { level: tracing::Level::INFO }
    }
}

impl RequestLogLayer {
    /// Logs at `INFO`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs at `level` instead.
    pub fn level(mut self, level: tracing::Level) -> Self {
        self.level = level;
        self
    }
}

impl<S> tower::Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;
    fn layer(&self, inner: S) -> RequestLog<S> {
        RequestLog { inner, level: self.level }
    }
}

/// The service of [`RequestLogLayer`].
#[derive(Debug, Clone)]
pub struct RequestLog<S> {
    inner: S,
    level: tracing::Level,
}

/// Emits one event at a level chosen at run time (tracing's macros want a constant).
macro_rules! event_at {
    ($level:expr, $($rest:tt)*) => {
        match $level {
            tracing::Level::ERROR => tracing::event!(tracing::Level::ERROR, $($rest)*),
            tracing::Level::WARN => tracing::event!(tracing::Level::WARN, $($rest)*),
            tracing::Level::INFO => tracing::event!(tracing::Level::INFO, $($rest)*),
            tracing::Level::DEBUG => tracing::event!(tracing::Level::DEBUG, $($rest)*),
            _ => tracing::event!(tracing::Level::TRACE, $($rest)*),
        }
    };
}

impl<S> tower::Service<McpRequest> for RequestLog<S>
where
    S: tower::Service<McpRequest, Response = McpResponse>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let level = self.level;
        let method = req.method().to_owned();
        let id = req.id().to_string();
        let tool = req.tool_name().unwrap_or_default();
        let start = std::time::Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let outcome = fut.await;
            let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
            match &outcome {
                Ok(r) => match r.error_object() {
                    None => event_at!(level, method, id, tool, us, "mcp request done"),
                    Some(e) => {
                        let (code, message) = (e.code.0, e.message.as_str());
                        event_at!(level, method, id, tool, us, code, message, "mcp request failed")
                    }
                },
                Err(e) => event_at!(level, method, id, tool, us, error = %e, "mcp request failed in middleware"),
            }
            outcome
        })
    }
}

//! One connection's sending machinery: `_meta` for the era, input-required retries, the
//! discovery probe and the handshake.

use std::time::Duration;

use portico_schema::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, DiscoverRequestParams, DiscoverResult, ErrorCode,
    GetPromptRequestParams, InitializeRequestParams, InitializeResult, InputRequest, InputRequiredResult,
    InputResponse, InputResponses, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, RequestId,
    RequestMeta, ResultType, SetLevelRequestParams, SubscribeRequestParams, SubscriptionsListenRequestParams, methods,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use std::sync::atomic::Ordering;

use super::{CallOptions, Inner};
use crate::error::{Error, ErrorKind};
use crate::rpc::RequestOptions;
use crate::sync::lock;

/// Params types that carry a request `_meta`.
pub(super) trait HasMeta {
    fn meta_mut(&mut self) -> &mut Option<RequestMeta>;
    /// What the request names (a tool, a prompt, a resource), for the transport's routing.
    fn target(&self) -> Option<&str> {
        None
    }
}

macro_rules! has_meta {
    ($($t:ty),*) => {$(impl HasMeta for $t { fn meta_mut(&mut self) -> &mut Option<RequestMeta> { &mut self.meta } })*};
}
macro_rules! has_meta_and_target {
    ($($t:ty => $target:ident),*) => {$(impl HasMeta for $t {
        fn meta_mut(&mut self) -> &mut Option<RequestMeta> { &mut self.meta }
        fn target(&self) -> Option<&str> { Some(&self.$target) }
    })*};
}
has_meta_and_target!(CallToolRequestParams => name, GetPromptRequestParams => name, ReadResourceRequestParams => uri);
has_meta!(
    PaginatedRequestParams,
    CompleteRequestParams,
    DiscoverRequestParams,
    SubscribeRequestParams,
    SetLevelRequestParams,
    SubscriptionsListenRequestParams,
    InitializeRequestParams
);

/// Params types of the methods that may answer "input required" (2026-07-28).
pub(super) trait Retryable: HasMeta {
    fn set_input(&mut self, responses: Option<InputResponses>, state: Option<String>);
}

macro_rules! retryable {
    ($($t:ty),*) => {$(impl Retryable for $t {
        fn set_input(&mut self, responses: Option<InputResponses>, state: Option<String>) {
            self.input_responses = responses;
            self.request_state = state;
        }
    })*};
}
retryable!(CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams);

#[derive(serde::Deserialize)]
pub(super) struct Peek {
    #[serde(rename = "resultType", default)]
    pub(super) result_type: Option<ResultType>,
    #[serde(rename = "ttlMs", default)]
    pub(super) ttl_ms: Option<i64>,
}

/// Adds `members` to a request's `_meta`, except the protocol's own keys (`progressToken` and
/// the `io.modelcontextprotocol/` ones, which the client writes) and keys already there.
fn add_members(meta: &mut Option<RequestMeta>, members: &serde_json::Map<String, serde_json::Value>) {
    let mut pass = members
        .iter()
        .filter(|(k, _)| k.as_str() != "progressToken" && !k.starts_with("io.modelcontextprotocol/"))
        .peekable();
    if pass.peek().is_none() {
        return;
    }
    let m = meta.get_or_insert_with(RequestMeta::new);
    for (k, v) in pass {
        m.other.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

impl Inner {
    pub(super) fn options(&self, call: &CallOptions) -> (RequestOptions, Option<portico_schema::ProgressToken>) {
        let mut o = RequestOptions {
            timeout: call.timeout.unwrap_or(self.timeout),
            cancel: call.cancel.clone(),
            pause: call.timeout_pause.clone(),
            ..Default::default()
        };
        let mut token = None;
        if let Some(sink) = &call.on_progress {
            let t = RequestId::Number(self.next_token.fetch_add(1, Ordering::Relaxed));
            o.progress = Some((t.clone(), sink.clone()));
            token = Some(t);
        }
        (o, token)
    }

    /// Fills `_meta` for the era: progress token always, the stateless fields in 2026-07-28.
    pub(super) fn stamp(
        &self,
        meta: &mut Option<RequestMeta>,
        token: Option<portico_schema::ProgressToken>,
        caps: Option<&portico_schema::ClientCapabilities>,
    ) {
        let m = meta.get_or_insert_with(RequestMeta::new);
        if token.is_some() {
            m.progress_token = token;
        }
        if self.version.is_stateless() {
            m.protocol_version = Some(self.version.as_str().to_owned());
            m.client_capabilities = Some(caps.unwrap_or(&self.caps).clone());
            m.client_info = Some(self.info.clone());
            if let Some(level) = *lock(&self.log_level) {
                m.log_level = Some(level);
            }
        }
        if meta.as_ref().is_some_and(RequestMeta::is_empty) {
            *meta = None;
        }
    }

    pub(super) async fn send_raw<P: HasMeta + Serialize>(
        &self,
        method: &str,
        mut params: P,
        call: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let (mut options, token) = self.options(call);
        if method == methods::TOOLS_CALL && self.version.is_stateless() {
            // The server may have made a task of the call by the time its caller stops waiting.
            options.late.clone_from(&self.late_task);
        }
        self.stamp(params.meta_mut(), token, call.capabilities.as_ref());
        if let Some(members) = &call.meta {
            add_members(params.meta_mut(), members);
        }
        if let Some(trace) = &call.trace {
            trace.write(&mut params.meta_mut().get_or_insert_with(RequestMeta::new).other);
        }
        // Given here, where it is known, so that the transport need not read the request again.
        options.routing = Some(crate::rpc::Routing {
            stateless: self.version.is_stateless().then(|| self.version.as_str().to_owned()),
            name: params.target().map(str::to_owned),
        });
        self.transmit(method, Some(&params), options).await
    }

    /// Sends a request as is, through the middleware when there is some.
    pub(super) async fn transmit<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        mut options: RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let Some(stack) = &self.middleware else {
            return self.peer.request_raw(method, params, options).await;
        };
        // Middleware may change the request: the transport reads what is sent.
        options.routing = None;
        let raw = params
            .map(serde_json::value::to_raw_value)
            .transpose()
            .map_err(|e| Error::local(format!("cannot serialize {method} params")).with_source(e))?;
        super::stack::send(stack, &self.peer, method, raw, options).await
    }

    pub(super) async fn send<P: HasMeta + Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
        call: &CallOptions,
    ) -> Result<R, Error> {
        let raw = self.send_raw(method, params, call).await?;
        decode(method, &raw)
    }

    /// Sends a request that may answer "input required", answering and retrying until done.
    pub(super) async fn send_retrying<P: Retryable + Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
        call: &CallOptions,
    ) -> Result<R, Error> {
        match self.send_rounds(method, params, call).await? {
            Final::Complete(raw) => decode(method, &raw),
            Final::Task(_) => Err(Error::misbehaved(format!("{method} answered with a task; only tools/call may"))),
        }
    }

    /// [`send_retrying`](Self::send_retrying), leaving the final answer undecoded: a complete
    /// result, or (2026-07-28 tasks extension) a task to follow.
    pub(super) async fn send_rounds<P: Retryable + Serialize>(
        &self,
        method: &str,
        params: P,
        call: &CallOptions,
    ) -> Result<Final, Error> {
        let read = |raw: Box<RawValue>| {
            let peek: Peek = decode(method, &raw)?;
            Ok(match peek.result_type {
                None | Some(ResultType::Complete) => Ok(raw),
                Some(_) => Err(raw),
            })
        };
        self.send_rounds_read(method, params, call, read).await
    }

    /// [`send_rounds`](Self::send_rounds) with each answer read once by `read`: into `Ok(T)`,
    /// a complete result, or handed back (`Err`) when its `resultType` says it is not one.
    /// A result type that carries `resultType` itself (a tool result) is then decoded once,
    /// not peeked at first.
    pub(super) async fn send_rounds_read<P, T>(
        &self,
        method: &str,
        mut params: P,
        call: &CallOptions,
        read: impl Fn(Box<RawValue>) -> Result<Result<T, Box<RawValue>>, Error>,
    ) -> Result<Final<T>, Error>
    where
        P: Retryable + Serialize,
    {
        for _ in 0..=self.max_input_rounds {
            let raw = match read(self.send_raw(method, &mut params, call).await?)? {
                Ok(complete) => return Ok(Final::Complete(complete)),
                Err(raw) => raw,
            };
            let peek: Peek = decode(method, &raw)?;
            match peek.result_type {
                Some(ResultType::Task) if self.version.is_stateless() => return Ok(Final::Task(raw)),
                Some(ResultType::InputRequired) if self.version.is_stateless() => {
                    let ir: InputRequiredResult = decode(method, &raw)?;
                    // Boxed: a rare round whose future would otherwise sit inside every call's.
                    let responses = Box::pin(self.answer(ir.input_requests.unwrap_or_default(), call)).await?;
                    params.set_input(if responses.is_empty() { None } else { Some(responses) }, ir.request_state);
                }
                Some(other) => return Err(Error::misbehaved(format!("unexpected resultType {other:?} for {method}"))),
                // `read` keeps every result without a `resultType`.
                None => return Err(Error::misbehaved(format!("malformed result of {method}"))),
            }
        }
        Err(Error::misbehaved(format!("{method} still needed input after {} rounds", self.max_input_rounds)))
    }

    /// Answers one round of input requests: with the call's own handler, else the client's.
    pub(super) async fn answer(
        &self,
        requests: std::collections::BTreeMap<String, InputRequest>,
        call: &CallOptions,
    ) -> Result<InputResponses, Error> {
        match &call.on_input {
            Some(answer) => answer(requests).await,
            None => self.fulfil(requests).await,
        }
    }

    async fn fulfil(
        &self,
        requests: std::collections::BTreeMap<String, InputRequest>,
    ) -> Result<InputResponses, Error> {
        let handler = &self.service.handler;
        let mut out = InputResponses::new();
        for (key, request) in requests {
            let response = match request {
                InputRequest::Elicitation(r) => handler.elicit(r.params).await.map(InputResponse::Elicitation),
                InputRequest::Sampling(r) => handler.create_message(r.params).await.map(InputResponse::Sampling),
                InputRequest::ListRoots(_) => handler.list_roots().await.map(InputResponse::ListRoots),
                _ => return Err(Error::misbehaved(format!("unknown input request kind for {key}"))),
            };
            let response = response
                .map_err(|e| Error::local(format!("the client could not answer input request {key}: {}", e.message)))?;
            out.insert(key, response);
        }
        Ok(out)
    }

    /// The stateless probe: `Some` for a 2026-07-28 server, `None` for the handshake era.
    ///
    /// A discover result or a recognised stateless-era error means 2026-07-28; any other
    /// error, no answer in time, or an answer that is not a discover result means the
    /// handshake era.
    pub(super) async fn probe(&mut self, timeout: Duration) -> Result<Option<DiscoverResult>, Error> {
        match self.discover_negotiating(timeout).await {
            Ok(d) => Ok(Some(d)),
            Err(Refused::HandshakeOnly) => Ok(None),
            Err(Refused::Fatal(e)) => {
                let Some(pe) = e.peer_error() else {
                    if e.is_timeout() {
                        tracing::debug!("server/discover timed out; trying initialize");
                        return Ok(None);
                    }
                    if e.kind() == ErrorKind::PeerMisbehaved {
                        tracing::debug!(error = %e, "server/discover answered with no discover result; trying initialize");
                        return Ok(None);
                    }
                    return Err(e);
                };
                if pe.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
                    return Err(e);
                }
                tracing::debug!(code = pe.code.0, "server/discover refused; trying initialize");
                Ok(None)
            }
        }
    }

    /// `server/discover` at the latest revision; when the server refuses it with
    /// "unsupported protocol version" (-32022), once more at the newest stateless revision it
    /// lists. `HandshakeOnly` when the server only lists handshake-era revisions.
    pub(super) async fn discover_negotiating(&mut self, timeout: Duration) -> Result<DiscoverResult, Refused> {
        let err = match self.discover(ProtocolVersion::LATEST, timeout).await {
            Ok(d) => return self.accept_discovery(d),
            Err(e) => e,
        };
        let Some(pe) = err.peer_error().filter(|pe| pe.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) else {
            return Err(Refused::Fatal(err));
        };
        // A stateless-era server that wants another revision: never fall back blindly.
        let supported: Vec<String> = pe
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default();
        let known = || supported.iter().filter_map(|s| ProtocolVersion::parse(s));
        if let Some(v) = known().filter(|v| v.is_stateless()).max() {
            tracing::debug!(version = %v.as_str(), "server/discover refused our revision; retrying with one it lists");
            return match self.discover(v, timeout).await {
                Ok(d) => self.accept_discovery(d),
                Err(e) => Err(Refused::Fatal(e)),
            };
        }
        if known().any(|v| !v.is_stateless()) {
            return Err(Refused::HandshakeOnly);
        }
        Err(Refused::Fatal(Error::new(
            ErrorKind::PeerIncompatible,
            format!("the server supports none of our revisions: {supported:?}"),
        )))
    }

    /// Checks that the server's discover result lists the revision in use.
    fn accept_discovery(&self, d: DiscoverResult) -> Result<DiscoverResult, Refused> {
        if d.supported_versions.iter().any(|v| v == self.version.as_str()) {
            return Ok(d);
        }
        if d.supported_versions.iter().filter_map(|s| ProtocolVersion::parse(s)).any(|v| !v.is_stateless()) {
            return Err(Refused::HandshakeOnly);
        }
        Err(Refused::Fatal(Error::new(
            ErrorKind::PeerIncompatible,
            format!("the server does not list {} as supported: {:?}", self.version, d.supported_versions),
        )))
    }

    async fn discover(&mut self, version: ProtocolVersion, timeout: Duration) -> Result<DiscoverResult, Error> {
        self.version = version;
        let call = CallOptions::new().with_timeout(timeout);
        let raw = self.send_raw(methods::SERVER_DISCOVER, DiscoverRequestParams::default(), &call).await?;
        decode(methods::SERVER_DISCOVER, &raw)
    }

    pub(super) async fn initialize(&mut self, want: ProtocolVersion) -> Result<(), Error> {
        self.version = want;
        let params = InitializeRequestParams::new(want.as_str(), self.caps.clone(), self.info.clone());
        let r: InitializeResult = self.send(methods::INITIALIZE, params, &CallOptions::new()).await?;
        let Some(version) = ProtocolVersion::parse(&r.protocol_version).filter(|v| !v.is_stateless()) else {
            self.peer.close("the server chose an unsupported protocol version");
            return Err(Error::new(
                ErrorKind::PeerIncompatible,
                format!("the server chose protocol version {:?}, which this client does not speak", r.protocol_version),
            ));
        };
        self.version = version;
        self.server_caps = r.capabilities;
        self.server_info = r.server_info;
        self.instructions = r.instructions;
        self.peer.notify::<serde_json::Value>(methods::NOTIFICATION_INITIALIZED, None).await?;
        Ok(())
    }
}

/// What a request that may need input finally answered: undecoded unless read as `T`.
pub(super) enum Final<T = Box<RawValue>> {
    /// Its result.
    Complete(T),
    /// A `CreateTaskResult` (the tasks extension).
    Task(Box<RawValue>),
}

/// Why stateless discovery did not succeed.
pub(super) enum Refused {
    /// The server speaks only handshake-era revisions.
    HandshakeOnly,
    /// Anything else.
    Fatal(Error),
}

/// Reads a `tools/call` answer in one pass: a complete tool result, made into `T` by `keep`
/// (with the JSON it was read from), or handed back (`Err`) when its `resultType` says it is
/// another kind of answer (a task, input required).
pub(super) fn read_tool_result<T>(
    raw: Box<RawValue>,
    keep: impl FnOnce(CallToolResult, Box<RawValue>) -> Result<T, serde_json::Error>,
) -> Result<Result<T, Box<RawValue>>, Error> {
    let malformed = |e| Error::misbehaved(format!("malformed result of {}", methods::TOOLS_CALL)).with_source(e);
    match serde_json::from_str::<CallToolResult>(raw.get()) {
        Ok(r) if matches!(r.result_type, None | Some(ResultType::Complete)) => keep(r, raw).map(Ok).map_err(malformed),
        Ok(_) => Ok(Err(raw)),
        // Not a tool result, though it may be an answer of another kind.
        Err(e) => match decode::<Peek>(methods::TOOLS_CALL, &raw)?.result_type {
            None | Some(ResultType::Complete) => Err(malformed(e)),
            Some(_) => Ok(Err(raw)),
        },
    }
}

pub(super) fn decode<R: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<R, Error> {
    serde_json::from_str(raw.get())
        .map_err(|e| Error::misbehaved(format!("malformed result of {method}")).with_source(e))
}

impl<T: HasMeta> HasMeta for &mut T {
    fn meta_mut(&mut self) -> &mut Option<RequestMeta> {
        (**self).meta_mut()
    }
    fn target(&self) -> Option<&str> {
        (**self).target()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Result<CallToolResult, Box<RawValue>>, Error> {
        let raw = RawValue::from_string(json.to_owned()).expect("json");
        read_tool_result(raw, |result, _| Ok(result))
    }

    #[test]
    fn a_tool_answer_is_read_once_into_its_result_or_handed_back_by_its_result_type() {
        let text = |r: CallToolResult| serde_json::to_value(&r.content).expect("json")[0]["text"].clone();
        for complete in [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}]}"#,
        ] {
            let r = read(complete).expect(complete).expect("complete");
            assert_eq!(text(r), "hi", "{complete}");
        }
        for other in [
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}}}"#,
            r#"{"resultType":"task","task":{"taskId":"t1","status":"working"}}"#,
            r#"{"resultType":"task","content":[]}"#,
        ] {
            let back = read(other).expect(other).expect_err("handed back");
            assert_eq!(back.get(), other, "the same JSON");
        }
        for bad in [r#"{"content":"not a list"}"#, r#"{"resultType":"later","content":[]}"#, "[1]"] {
            let e = read(bad).expect_err(bad).to_string();
            assert!(e.contains("malformed result of tools/call"), "{bad}: {e}");
        }
        let raw = RawValue::from_string(r#"{"content":[]}"#.to_owned()).expect("json");
        let kept = read_tool_result(raw, crate::RelayedToolResult::from_decoded).expect("read").expect("complete");
        assert_eq!(kept.json().map(RawValue::get), Some(r#"{"content":[]}"#), "the relay keeps the JSON it read");
    }
}

//! Step 1 of a request: its era. The dual-era rule: a request whose `_meta` names a protocol
//! version is a stateless-era (2026-07-28) request and carries its client's capabilities
//! itself; any other request belongs to the connection's handshake, and waits for an
//! `initialize` that arrived before it.
//!
//! The params are read once ([`ParamsPeek`]): a `tools/call` keeps what it needs from that pass
//! ([`ParsedCall`]), and a transport that read the params already (Streamable HTTP) resolves the
//! era ahead, with that pass's [`ParsedCall`] ([`EraLayer::resolve_stateless_ahead`], the
//! [`Endpoint`](crate::rpc::Endpoint)'s `resolve_ahead` hook), so that they are not decoded twice.

use std::sync::{Arc, Mutex};

use portico_schema::{
    ALL_VERSIONS, ClientCapabilities, ErrorObject, Implementation, LoggingLevel, ProgressToken, ProtocolVersion,
    methods,
};

use super::EraLayer;
use super::tools::ParsedCall;
use crate::peek::{ParamsPeek, RequestMeta, may_hold_meta};
use crate::rpc::IncomingRequest;
use crate::sync::lock;

/// The era of one request, resolved before dispatch.
#[derive(Clone)]
pub(crate) struct Era {
    pub version: ProtocolVersion,
    pub caps: Arc<ClientCapabilities>,
    pub info: Option<Arc<Implementation>>,
    /// `_meta.progressToken` of the request.
    pub progress_token: Option<ProgressToken>,
    /// `_meta` log level of a stateless request.
    pub log_level: Option<LoggingLevel>,
    /// The W3C trace context in `_meta`.
    pub trace: Option<Arc<crate::trace::TraceContext>>,
    /// The members of `_meta` the protocol does not define.
    pub meta: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
}

/// The era of a stateless request, resolved by the transport (in the request's extensions).
/// Middleware that replaces the params makes the era layer drop it
/// ([`ParamsReplaced`](crate::middleware::ParamsReplaced)).
#[derive(Clone)]
pub(crate) struct ResolvedEra {
    pub(super) era: Era,
    /// A `tools/call`'s params, read in the transport's pass.
    pub(super) call: Option<ParsedCall>,
}

/// A client's stateless `_meta` identity as last seen, raw and decoded: a client sends the same
/// capabilities and info with every request, so they are decoded once.
#[derive(Default)]
pub(super) struct LastClient(Mutex<Option<Arc<SeenClient>>>);

struct SeenClient {
    caps_raw: Box<str>,
    caps: Arc<ClientCapabilities>,
    info_raw: Option<Box<str>>,
    info: Option<Arc<Implementation>>,
}

/// What a request's params say about its era, read before anything else runs.
#[derive(Default)]
pub(super) struct Peeked<'a> {
    meta: Option<RequestMeta<'a>>,
    progress_token: Option<ProgressToken>,
    log_level: Option<LoggingLevel>,
    /// A `tools/call`'s params, when this pass could read them whole.
    pub call: Option<ParsedCall>,
}

impl Peeked<'_> {
    /// Nothing read here: the era came from the transport, with what it read of a tool call.
    pub(super) fn with_call(call: Option<ParsedCall>) -> Self {
        Peeked { call, ..Peeked::default() }
    }

    /// A stateless-era request (by the dual-era rule).
    #[inline]
    pub(super) fn is_stateless(&self) -> bool {
        self.meta.as_ref().is_some_and(RequestMeta::is_stateless)
    }
}

/// Reads the `_meta` of `req`'s params (and a `tools/call`'s other members in the same pass),
/// for a request whose era no transport resolved ahead.
#[inline]
pub(super) fn peek(req: &IncomingRequest) -> Result<Peeked<'_>, ErrorObject> {
    let mut peeked = Peeked::default();
    let params = req.params.as_deref();
    if let Some(p) = params
        && !may_hold_meta(p.get())
    {
        // Without a `_meta` there is nothing to read here; a tool call's params are then read
        // by the tool call itself.
        return Ok(peeked);
    }
    let params = ParamsPeek::read(params)?;
    if let Some(meta) = &params.meta {
        (peeked.progress_token, peeked.log_level) = meta.decode_loose()?;
    }
    if &*req.method == methods::TOOLS_CALL {
        // What the pass read of a tool call is kept, unless something in it needs the usual
        // decoding's errors (in their usual order).
        peeked.call = ParsedCall::from_peek(&params);
    }
    peeked.meta = params.meta;
    Ok(peeked)
}

impl EraLayer {
    /// The era of a request that [`peek`] read; `None` for a `ping` before `initialize`, which
    /// is answered without one.
    #[inline]
    pub(super) fn era_of(&self, method: &str, peeked: &mut Peeked<'_>) -> Result<Option<Era>, ErrorObject> {
        let progress_token = peeked.progress_token.take();
        if let Some(meta) = peeked.meta.as_ref().filter(|m| m.is_stateless()) {
            return self.stateless_era(meta, progress_token, peeked.log_level).map(Some);
        }
        match self.handshake.get() {
            Some(h) => Ok(Some(Era {
                version: h.version,
                caps: h.caps.clone(),
                info: Some(h.info.clone()),
                progress_token,
                log_level: None,
                trace: peeked.meta.as_ref().and_then(RequestMeta::trace),
                meta: peeked.meta.as_ref().and_then(RequestMeta::other_members),
            })),
            None if method == methods::PING => Ok(None),
            None => Err(ErrorObject::invalid_params(format!(
                "missing required _meta field {}: send it with every request (2026-07-28), or send initialize first",
                portico_schema::META_PROTOCOL_VERSION
            ))
            .with_data(serde_json::json!({ "supported": supported_versions() }))),
        }
    }

    /// The era of a stateless request whose params a transport read, and what that pass read of
    /// a `tools/call`: `None` when anything is amiss, the era layer then reading the params
    /// again to answer the error.
    #[cfg(feature = "http-server")]
    pub(super) fn resolve_stateless_ahead(&self, method: &str, params: ParamsPeek<'_>) -> Option<ResolvedEra> {
        let call = if method == methods::TOOLS_CALL { ParsedCall::from_peek(&params) } else { None };
        let meta = params.meta?;
        let (progress_token, log_level) = meta.decode_loose().ok()?;
        let era = self.stateless_era(&meta, progress_token, log_level).ok()?;
        Some(ResolvedEra { era, call })
    }

    /// The era of a stateless request, from its `_meta`.
    fn stateless_era(
        &self,
        meta: &RequestMeta<'_>,
        progress_token: Option<ProgressToken>,
        log_level: Option<LoggingLevel>,
    ) -> Result<Era, ErrorObject> {
        let version = meta.protocol_version.as_deref().unwrap_or_default();
        let v = match ProtocolVersion::parse(version) {
            Some(v) if v.is_stateless() => v,
            _ => return Err(ErrorObject::unsupported_protocol_version(version, supported_versions())),
        };
        let Some(caps_raw) = meta.client_capabilities else {
            return Err(ErrorObject::invalid_params(format!(
                "missing required _meta field {}",
                portico_schema::META_CLIENT_CAPABILITIES
            )));
        };
        let info_raw = meta.client_info;
        let last = lock(&self.last_client.0).clone();
        let seen = match last {
            Some(s) if *s.caps_raw == *caps_raw && s.info_raw.as_deref() == info_raw => s,
            _ => {
                let invalid = |what: &str, e: serde_json::Error| {
                    ErrorObject::invalid_params(format!("invalid params: _meta {what}: {e}"))
                };
                let caps: ClientCapabilities =
                    serde_json::from_str(caps_raw).map_err(|e| invalid(portico_schema::META_CLIENT_CAPABILITIES, e))?;
                let info = match info_raw {
                    Some(raw) => Some(Arc::new(
                        serde_json::from_str::<Implementation>(raw).map_err(|e| invalid("clientInfo", e))?,
                    )),
                    None => None,
                };
                let s = Arc::new(SeenClient {
                    caps_raw: caps_raw.into(),
                    caps: Arc::new(caps),
                    info_raw: info_raw.map(Into::into),
                    info,
                });
                *lock(&self.last_client.0) = Some(s.clone());
                s
            }
        };
        Ok(Era {
            version: v,
            caps: seen.caps.clone(),
            info: seen.info.clone(),
            progress_token,
            log_level,
            trace: meta.trace(),
            meta: meta.other_members(),
        })
    }
}

/// Every revision this server speaks, newest first.
pub(super) fn supported_versions() -> Vec<String> {
    ALL_VERSIONS.iter().rev().map(|v| v.as_str().to_owned()).collect()
}

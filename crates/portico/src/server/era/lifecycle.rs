//! The connection's lifecycle methods: `initialize` (handshake era), `ping`,
//! `logging/setLevel`, and `server/discover` (stateless era).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use portico_schema::{
    DiscoverResult, EmptyResult, InitializeRequestParams, InitializeResult, ProtocolVersion, SetLevelRequestParams,
};
use serde_json::value::RawValue;
use tracing::debug;

use super::dispatch::{Call, Step};
use super::encode::{encode, encode_for};
use super::resolve::supported_versions;
use super::{EraLayer, Handshake, parse};
use crate::rpc::{Peer, Reply};
use crate::server::downgrade;
use portico_schema::ErrorObject;

impl EraLayer {
    /// `initialize`: the answer, or `None` for a stateless-era request (which that revision
    /// lacks: it goes on to "method not found").
    #[inline]
    pub(super) fn initialize(&self, stateless: bool, params: Option<&RawValue>, peer: &Peer) -> Option<Reply> {
        if stateless {
            // It creates no session, so it must not hold up what was pipelined behind it.
            if self.handshake.get().is_none() {
                self.initializing.send_replace(false);
            }
            return None;
        }
        let r = self.handshake(params, peer);
        self.initializing.send_replace(false);
        Some(r)
    }

    fn handshake(&self, params: Option<&RawValue>, peer: &Peer) -> Reply {
        let p: InitializeRequestParams = parse(params)?;
        let version = ProtocolVersion::negotiate_handshake(&p.protocol_version);
        let hs = Handshake { version, caps: Arc::new(p.capabilities), info: Arc::new(p.client_info) };
        if self.handshake.set(hs).is_err() {
            return Err(ErrorObject::invalid_request("the connection is already initialized"));
        }
        debug!(%version, "initialized");
        // Server-initiated messages go to the connection's own stream (over HTTP, the GET
        // stream), not to the stream of the initialize request.
        self.start_forwarding(self.peer.get().cloned().unwrap_or_else(|| peer.clone()));
        let inner = &self.server.inner;
        let mut caps = self.server.capabilities();
        // Extensions (the tasks extension) are served to 2026-07-28 requests only.
        caps.extensions = None;
        let mut r = InitializeResult::new(version.as_str(), caps, inner.info.clone());
        r.instructions = inner.instructions.clone();
        encode_for(&r, version, Some(downgrade::initialize_result))
    }

    /// `ping` (handshake era).
    pub(super) fn ping(&self, _: Call) -> Result<Step, ErrorObject> {
        encode(&EmptyResult::new()).map(Step::Now)
    }

    /// `logging/setLevel` (handshake era): the connection's level.
    pub(super) fn set_level(&self, call: Call) -> Result<Step, ErrorObject> {
        let p: SetLevelRequestParams = parse(call.req.params.as_deref())?;
        self.log_level.store(p.level as u8, Ordering::Relaxed);
        encode(&EmptyResult::new()).map(Step::Now)
    }

    /// `server/discover` (stateless era).
    pub(super) fn discover(&self, call: Call) -> Result<Step, ErrorObject> {
        let mut r = DiscoverResult::new(supported_versions(), self.server.capabilities());
        r.instructions = self.server.inner.instructions.clone();
        self.finish(r, &call.era).map(Step::Now)
    }
}

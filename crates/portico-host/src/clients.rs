//! [`Clients`]: the downstream sessions connected to the gateway, and what each is offered.
//!
//! The gateway installs a layer in front of its server. It learns each handshake-era
//! session (stdio, or a Streamable HTTP session) from its `initialize`, and a 2026-07-28 client
//! on stdio from its `server/discover`; notes when it was last heard from, and takes the tools
//! switched off for that session alone out of its `tools/list` answers. Stateless HTTP
//! requests belong to no session and are not listed. A session
//! not heard from for [`IDLE`] is dropped from the list, and its switches with it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use portico::middleware::{McpRequest, McpResponse};
use portico::server::ConnectionId;
use serde::Serialize;
use serde_json::Value;

use crate::Host;

/// How long a session may stay silent before it is no longer listed.
pub const IDLE: Duration = Duration::from_secs(30 * 60);

/// A downstream session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ClientSession {
    /// Its connection id (as approvals and the activity log name it).
    pub id: u64,
    /// The client's `name version`, from its `initialize`.
    pub client: Option<String>,
    /// The revision it asked for.
    pub protocol_version: Option<String>,
    /// When it initialized, in milliseconds since the Unix epoch.
    pub since: u64,
    /// When it was last heard from, the same way.
    pub last_seen: u64,
}

/// The downstream sessions of one host. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Clients {
    sessions: Arc<Mutex<BTreeMap<u64, ClientSession>>>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

impl Clients {
    fn map(&self) -> MutexGuard<'_, BTreeMap<u64, ClientSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sessions known now, by id.
    pub fn list(&self) -> Vec<ClientSession> {
        self.map().values().cloned().collect()
    }

    /// Forgets sessions silent for longer than [`IDLE`]; their ids.
    pub(crate) fn prune(&self) -> Vec<u64> {
        let cutoff = now_ms().saturating_sub(u64::try_from(IDLE.as_millis()).unwrap_or(u64::MAX));
        let mut map = self.map();
        let gone: Vec<u64> = map.values().filter(|s| s.last_seen < cutoff).map(|s| s.id).collect();
        for id in &gone {
            map.remove(id);
        }
        gone
    }

    /// Whether `id` is a session known now.
    pub fn contains(&self, id: u64) -> bool {
        self.map().contains_key(&id)
    }

    fn initialized(&self, id: u64, params: Option<&serde_json::value::RawValue>) {
        let params: Value = params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or_default();
        self.learned(id, &params["clientInfo"], params["protocolVersion"].as_str());
    }

    /// A 2026-07-28 client that asked `server/discover`: what its `_meta` says of it. Over stdio
    /// its connection is its session; over stateless HTTP each request is a connection of its
    /// own, so such a client is listed only while it keeps one.
    fn discovered(&self, id: u64, params: Option<&serde_json::value::RawValue>) {
        let params: Value = params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or_default();
        let meta = &params["_meta"];
        self.learned(
            id,
            &meta[portico::schema::META_CLIENT_INFO],
            meta[portico::schema::META_PROTOCOL_VERSION].as_str(),
        );
    }

    fn learned(&self, id: u64, info: &Value, protocol_version: Option<&str>) {
        let client = match (info["name"].as_str(), info["version"].as_str()) {
            (Some(n), Some(v)) => Some(format!("{n} {v}")),
            (Some(n), None) => Some(n.to_owned()),
            _ => None,
        };
        let now = now_ms();
        let session = ClientSession {
            id,
            client,
            protocol_version: protocol_version.map(str::to_owned),
            since: now,
            last_seen: now,
        };
        self.map().insert(id, session);
    }

    fn heard(&self, id: u64) {
        if let Some(s) = self.map().get_mut(&id) {
            s.last_seen = now_ms();
        }
    }
}

/// The gateway's layer: learns sessions, and filters `tools/list` per session.
#[derive(Clone)]
pub(crate) struct SessionLayer {
    pub(crate) host: Host,
}

impl<S> tower::Layer<S> for SessionLayer {
    type Service = Sessioned<S>;

    fn layer(&self, inner: S) -> Sessioned<S> {
        Sessioned { inner, host: self.host.clone() }
    }
}

#[derive(Clone)]
pub(crate) struct Sessioned<S> {
    inner: S,
    host: Host,
}

impl<S> tower::Service<McpRequest> for Sessioned<S>
where
    S: tower::Service<McpRequest, Response = McpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let session = req.extensions().get::<ConnectionId>().map(|c| c.get());
        let clients = self.host.clients();
        let off = match session {
            Some(id) if req.method() == "initialize" => {
                clients.initialized(id, req.params());
                Default::default()
            }
            Some(id) if req.method() == "server/discover" && !clients.contains(id) => {
                clients.discovered(id, req.params());
                Default::default()
            }
            Some(id) if clients.contains(id) => {
                clients.heard(id);
                if req.method() == "tools/list" { self.host.switches().off_for(id) } else { Default::default() }
            }
            _ => Default::default(),
        };
        // A hidden deny rule may name principals: this caller's list leaves out what it hides.
        let mut off = off;
        if req.method() == "tools/list" {
            off.extend(self.host.hidden_for(crate::host::principal_in(req.extensions())));
        }
        // The ready service goes with this call; a fresh clone waits for the next.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        Box::pin(async move {
            let response = inner.call(req).await?;
            if off.is_empty() {
                return Ok(response);
            }
            let Some(Ok(mut listed)) = response.result_as::<Value>() else { return Ok(response) };
            if let Some(tools) = listed.get_mut("tools").and_then(Value::as_array_mut) {
                tools.retain(|t| t["name"].as_str().is_none_or(|n| !off.contains(n)));
            }
            Ok(McpResponse::result(&listed).unwrap_or(response))
        })
    }
}

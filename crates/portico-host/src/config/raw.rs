//! `portico.toml` as written: every table and key, before expansion and validation.
//!
//! These types are also what the dialect readers produce from other clients' files, and what
//! `portico config import` writes back out as TOML, so they serialize as well as deserialize
//! and leave out what is empty.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawConfig {
    /// `[gateway]`.
    #[serde(default, skip_serializing_if = "RawGateway::is_default")]
    pub gateway: RawGateway,
    /// `[servers.NAME]`, by name.
    #[serde(default)]
    pub servers: BTreeMap<String, RawServer>,
    /// `[admin]`: the admin listener (approvals API, web UI).
    #[serde(default, skip_serializing_if = "RawAdmin::is_default")]
    pub admin: RawAdmin,
    /// `[approvals]`: how calls that policy asks about are decided.
    #[serde(default, skip_serializing_if = "RawApprovals::is_default")]
    pub approvals: RawApprovals,
    /// `[policy]`: rules and defaults.
    #[serde(default, skip_serializing_if = "crate::policy::raw::RawPolicy::is_empty")]
    pub policy: crate::policy::raw::RawPolicy,
    /// `[audit]`: the activity log.
    #[serde(default, skip_serializing_if = "audit_is_default")]
    pub audit: crate::audit::RawAudit,
    /// `[auth]`: OAuth 2.1 for the gateway's HTTP endpoint and the admin listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RawAuth>,
}

/// `[auth]`: who may use the gateway over HTTP. Clients bring an access token from
/// `issuer`; the gateway checks it (signature by the issuer's published keys, expiry,
/// audience = `resource`, scopes) and the token's subject becomes the call's principal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RawAuth {
    /// The authorization server's issuer URL.
    pub issuer: String,
    /// This gateway's MCP endpoint as clients address it (the token's audience); the
    /// `--http` URL when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Scopes every token must carry for the MCP endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Scopes a token must carry to use the admin listener (API and UI) in place of the admin
    /// token; `["portico:admin"]` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_scopes: Option<Vec<String>>,
}

fn audit_is_default(a: &crate::audit::RawAudit) -> bool {
    *a == crate::audit::RawAudit::default()
}

/// `[admin]`: the admin listener, separate from the MCP endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawAdmin {
    /// Its address; `127.0.0.1:8766` when not set. Loopback unless you say otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// The bearer token it requires; generated and kept in the state directory
    /// (`admin-token`, mode 0600) when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Serve the web UI on the admin listener (as `portico serve --ui`); off when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<bool>,
}

impl RawAdmin {
    fn is_default(&self) -> bool {
        *self == RawAdmin::default()
    }
}

/// `[approvals]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawApprovals {
    /// How long a call waits for a person, in seconds or as `"120s"`, `"5m"`; 120 s when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<toml::Value>,
    /// Which channels may answer: `client` (an elicitation form in the calling client), `http`
    /// (the admin API, `portico approve`, the web UI), `terminal` (`portico call` on a TTY).
    /// All when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
}

impl RawApprovals {
    fn is_default(&self) -> bool {
        *self == RawApprovals::default()
    }
}

/// `[gateway]`: how the registry is served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawGateway {
    /// The Streamable HTTP address `portico serve --http` uses when given no address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// Between the prefix and a tool's name; `__` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
    /// Where tokens and other state are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<String>,
    /// The name the gateway introduces itself with; `portico` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seconds between pings of each ready upstream; 30 when not set, 0 turns pings off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_interval: Option<f64>,
}

impl RawGateway {
    fn is_default(&self) -> bool {
        *self == RawGateway::default()
    }
}

/// `[servers.NAME]`: one upstream MCP server, by command (stdio) or by URL (HTTP).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawServer {
    /// The program to run (stdio). Never passed through a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A file of `KEY=VALUE` lines added to its environment (before `env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_file: Option<String>,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The server's URL (Streamable HTTP, or legacy HTTP+SSE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `streamable-http` (falls back to legacy SSE on the answers the spec lists; the default)
    /// or `sse` (legacy HTTP+SSE only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Headers sent with every HTTP request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `[servers.NAME.oauth]`: OAuth 2.1 for this HTTP server (tokens kept in the state
    /// directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<RawOAuth>,
    /// The revision to speak: a handshake-era one (`2025-11-25`, …) is asked for with
    /// `initialize`; `2026-07-28` is stateless only. Detected (stateless first) when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// `false` keeps the server configured but stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Start the server at its first use instead of at startup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lazy: Option<bool>,
    /// Globs of the upstream's tool names to offer (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Globs of the upstream's tool names to hide (applied after `include`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Upstream tool name → the name to offer it under (before the prefix).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rename: BTreeMap<String, String>,
    /// The prefix of this server's tool and prompt names; the server's name when not set.
    /// `""` (no prefix) is allowed when there is one server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Seconds a call may take without progress; 60 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Seconds to wait for the server to start and answer; 30 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<f64>,
    /// Calls in flight to this server at once; 32 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<usize>,
    /// Largest result passed on, in bytes; 16 MiB when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_bytes: Option<usize>,
    /// Notifications read from this server per second before reading pauses; 2,000 when not
    /// set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_notifications_per_sec: Option<usize>,
    /// Roots given to the server (`file://` URIs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
    /// `shared` (one process or session for every client) or `per-client` (one per downstream
    /// session). Stdio servers are shared by default, HTTP servers per client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolate: Option<String>,
    /// `true` is `isolate = "shared"`: for an HTTP server that keeps no state per session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// With `per-client`: the most downstream sessions with their own upstream at once; 16
    /// when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clients: Option<usize>,
    /// With `per-client`: seconds after which an unused per-client upstream is stopped; 300
    /// when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<f64>,
    /// Restart policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RawRestart>,
    /// Trust the server's `readOnlyHint`: its read-only tools are allowed without asking
    /// (unless a policy rule says otherwise). Annotations of untrusted servers are ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
}

/// `[servers.NAME.oauth]`: how the gateway gets tokens for an HTTP server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawOAuth {
    /// `authorization_code` (a person signs in in a browser; the default) or
    /// `client_credentials` (machine to machine, needs `client_id` and `client_secret`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// A pre-registered client id (else the server's dynamic registration is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret (use `${VAR}` or `${file:…}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Scopes to ask for beyond what the server's challenge names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Which addresses OAuth discovery may reach: `match-server` (the default), `public-only`
    /// or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<String>,
}

/// `[servers.NAME.restart]`: exponential backoff with jitter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawRestart {
    /// Seconds before the first restart; 0.5 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_backoff: Option<f64>,
    /// Longest wait between restarts, in seconds; 60 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_backoff: Option<f64>,
    /// Restarts in a row after which the server is marked failed; 10 when not set, 0 = never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<u32>,
}

//! The record: what the caller hands over ([`Entry`]), the keys it is written under, and its
//! canonical JSON, which is what the hash chain covers.
//!
//! # Keys
//!
//! A record is one flat JSON object (the content fields hold JSON as it was). Where
//! OpenTelemetry has a name for a field, the key is that name; the others are plain words.
//! Keys whose value is unknown are left out.
//!
//! | key | what |
//! | --- | --- |
//! | `seq` | position in the log, from 1, no gaps |
//! | `id` | a ULID: 48 bits of time, 40 random, and the record's `seq` in the last 40 (so it is found by its `seq`) |
//! | `start_time`, `end_time` | RFC 3339, UTC, microseconds |
//! | `duration_us` | microseconds |
//! | `user.id` | the principal: the authenticated subject, or `local` |
//! | `client_name`, `client_version` | the downstream client's `clientInfo` |
//! | `mcp.session.id`, `mcp.protocol.version`, `mcp.method.name`, `network.transport` | as in OpenTelemetry |
//! | `jsonrpc.request.id` | the downstream request's id, as a string |
//! | `upstream_request_id` | the id the request had at the upstream |
//! | `server` | the upstream server's name in the config |
//! | `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`, `target` | the name or URI the client used (by method; `target` for other methods) |
//! | `original_name` | the upstream's own name or URI for it |
//! | `arguments` | the arguments (levels `request` and `request-response`) |
//! | `result` | the result: content, `structuredContent`, `isError` (level `request-response`) |
//! | `error` | the JSON-RPC error (its `data` at level `request-response` only) |
//! | `policy.decision`, `policy.rule`, `policy.reason` | `allow`, `ask` or `deny`; the rule and reason |
//! | `approval.channel`, `approval.by`, `approval.time`, `approval.scope` | who approved, how, when, for how long |
//! | `status` | `success`, `error`, `denied`, `cancelled` or `timeout` |
//! | `error.type` | OpenTelemetry's: `tool_error` when `isError`, else the kind of failure |
//! | `rpc.response.status_code` | the JSON-RPC error code, as a string |
//! | `progress_count`, `request_bytes`, `response_bytes` | numbers |
//! | `truncated` | `true` when the host cut the result it passed on |
//! | `trace_id` | the W3C trace id |
//! | `audit.level` | the level the record was written at |
//! | `audit.truncated` | `{pointer: bytes}` for each field the audit cap cut (the field is then the start of its JSON, as a string) |
//!
//! A redacted value is the string `hmac-sha256:<64 hex digits>` (see [`super::redact`]).
//!
//! # Canonical JSON
//!
//! The record is written in canonical JSON ([`canonical_json`]): keys sorted by their bytes, no
//! whitespace. The log stores each record's canonical text as it was hashed.

use std::time::SystemTime;

use serde_json::Value;

pub use super::canonical::{canonical_json, json_len, write_canonical};
use super::time;

/// The record's keys.
pub(crate) mod keys {
    pub const SEQ: &str = "seq";
    pub const ID: &str = "id";
    pub const START: &str = "start_time";
    pub const END: &str = "end_time";
    pub const DURATION: &str = "duration_us";
    pub const USER: &str = "user.id";
    pub const CLIENT_NAME: &str = "client_name";
    pub const CLIENT_VERSION: &str = "client_version";
    pub const SESSION: &str = "mcp.session.id";
    pub const PROTOCOL: &str = "mcp.protocol.version";
    pub const METHOD: &str = "mcp.method.name";
    pub const TRANSPORT: &str = "network.transport";
    pub const REQUEST_ID: &str = "jsonrpc.request.id";
    pub const UPSTREAM_REQUEST_ID: &str = "upstream_request_id";
    pub const SERVER: &str = "server";
    pub const TOOL: &str = "gen_ai.tool.name";
    pub const PROMPT: &str = "gen_ai.prompt.name";
    pub const RESOURCE: &str = "mcp.resource.uri";
    pub const TARGET: &str = "target";
    pub const ORIGINAL: &str = "original_name";
    pub const ARGUMENTS: &str = "arguments";
    pub const RESULT: &str = "result";
    pub const ERROR: &str = "error";
    pub const DECISION: &str = "policy.decision";
    pub const RULE: &str = "policy.rule";
    pub const REASON: &str = "policy.reason";
    pub const APPROVAL_CHANNEL: &str = "approval.channel";
    pub const APPROVAL_BY: &str = "approval.by";
    pub const APPROVAL_TIME: &str = "approval.time";
    pub const APPROVAL_SCOPE: &str = "approval.scope";
    pub const STATUS: &str = "status";
    pub const ERROR_TYPE: &str = "error.type";
    pub const ERROR_CODE: &str = "rpc.response.status_code";
    pub const PROGRESS: &str = "progress_count";
    pub const REQUEST_BYTES: &str = "request_bytes";
    pub const RESPONSE_BYTES: &str = "response_bytes";
    pub const TRUNCATED: &str = "truncated";
    pub const TRACE_ID: &str = "trace_id";
    pub const AUDIT_LEVEL: &str = "audit.level";
    pub const AUDIT_TRUNCATED: &str = "audit.truncated";
    /// The fields that hold what was sent and received: key-name redaction looks inside them.
    pub const CONTENT: [&str; 3] = [ARGUMENTS, RESULT, ERROR];
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Status {
    /// It was answered (a tool's `isError` result is [`Status::Error`]).
    #[default]
    Success,
    /// The upstream or the tool failed.
    Error,
    /// Policy or a person refused it.
    Denied,
    /// The client cancelled it.
    Cancelled,
    /// It took too long (the upstream, or an approval no one gave).
    Timeout,
}

impl Status {
    /// As written in the record: `success`, `error`, `denied`, `cancelled`, `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Error => "error",
            Status::Denied => "denied",
            Status::Cancelled => "cancelled",
            Status::Timeout => "timeout",
        }
    }

    /// The status written as `s`.
    pub fn from_name(s: &str) -> Option<Status> {
        [Status::Success, Status::Error, Status::Denied, Status::Cancelled, Status::Timeout]
            .into_iter()
            .find(|st| st.as_str() == s)
    }
}

/// A policy decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Let through.
    Allow,
    /// Put to a person.
    Ask,
    /// Refused.
    Deny,
}

impl Decision {
    /// As written in the record: `allow`, `ask`, `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }

    /// The decision written as `s`.
    pub fn from_name(s: &str) -> Option<Decision> {
        [Decision::Allow, Decision::Ask, Decision::Deny].into_iter().find(|d| d.as_str() == s)
    }
}

/// How an `ask` was answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Approval {
    /// Where: `elicitation`, `terminal`, `http`, `web`, or a stored rule (`always`).
    pub channel: String,
    /// Who answered, when known.
    pub by: Option<String>,
    /// When.
    pub at: Option<SystemTime>,
    /// For how long: `once`, `session`, `always`.
    pub scope: Option<String>,
}

impl Approval {
    /// An approval given on `channel`.
    pub fn new(channel: impl Into<String>) -> Approval {
        Approval { channel: channel.into(), ..Approval::default() }
    }
}

/// One request through the host, as the caller knows it: what [`super::AuditLog::append`]
/// takes. `seq` and the id are assigned by the log; every other field is optional but
/// [`Entry::method`]. Start with [`Entry::new`] and set the fields.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Entry {
    /// When the request arrived; the end (or now) when not set.
    pub start: Option<SystemTime>,
    /// When it ended; now when not set.
    pub end: Option<SystemTime>,
    /// The authenticated subject, or `local` for stdio.
    pub principal: Option<String>,
    /// The downstream client's name (`clientInfo.name`).
    pub client_name: Option<String>,
    /// Its version.
    pub client_version: Option<String>,
    /// The downstream session.
    pub session: Option<String>,
    /// The protocol revision of the session.
    pub protocol_version: Option<String>,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub transport: Option<String>,
    /// The MCP method: `tools/call`, `resources/read`, `prompts/get`, `initialize`,
    /// `sampling/createMessage`, `elicitation/create`, `roots/list`, ….
    pub method: String,
    /// The downstream JSON-RPC id.
    pub request_id: Option<String>,
    /// The id the request had at the upstream.
    pub upstream_request_id: Option<String>,
    /// The upstream server (its name in the config).
    pub server: Option<String>,
    /// The tool or prompt name, or resource URI, the client used.
    pub exposed: Option<String>,
    /// The upstream's own name or URI for it.
    pub original: Option<String>,
    /// The arguments (or params).
    pub arguments: Option<Value>,
    /// The result.
    pub result: Option<Value>,
    /// The JSON-RPC error (`{code, message, data}`), or `{message}` for a failure of the host's.
    pub error: Option<Value>,
    /// The policy decision.
    pub decision: Option<Decision>,
    /// The rule that made it.
    pub rule: Option<String>,
    /// The reason given with it.
    pub reason: Option<String>,
    /// How an `ask` was answered.
    pub approval: Option<Approval>,
    /// How it ended.
    pub status: Status,
    /// OpenTelemetry's `error.type`: `tool_error` when `isError`, `timeout`, the failure's kind.
    pub error_type: Option<String>,
    /// The JSON-RPC error code; taken from `error.code` when not set.
    pub error_code: Option<i64>,
    /// Progress notifications seen.
    pub progress_count: Option<u64>,
    /// Bytes of the request's JSON.
    pub request_bytes: Option<u64>,
    /// Bytes of the response's JSON.
    pub response_bytes: Option<u64>,
    /// The host cut the result it passed on.
    pub truncated: bool,
    /// The W3C trace id.
    pub trace_id: Option<String>,
}

impl Entry {
    /// An entry for a request of `method` (`tools/call`, …) that succeeded; set the rest.
    pub fn new(method: impl Into<String>) -> Entry {
        Entry { method: method.into(), ..Entry::default() }
    }
}

/// The columns kept beside each record for queries; always what its JSON says (`verify`
/// checks).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Columns {
    pub id: String,
    /// `start_time`, microseconds.
    pub ts: i64,
    pub method: String,
    pub server: Option<String>,
    /// The tool, prompt, resource or other target the client named.
    pub tool: Option<String>,
    pub principal: Option<String>,
    pub decision: Option<String>,
    pub status: String,
}

impl Columns {
    /// The columns of a record whose string fields `text` looks up (`Err` for a field that is
    /// there but not a string).
    pub fn from_texts(text: impl Fn(&'static str) -> Result<Option<String>, String>) -> Result<Columns, String> {
        let required = |k: &'static str| text(k)?.ok_or_else(|| format!("`{k}` is missing"));
        let start = required(keys::START)?;
        Ok(Columns {
            id: required(keys::ID)?,
            ts: time::parse_timestamp(&start).ok_or_else(|| format!("`{}` is not a time", keys::START))?,
            method: required(keys::METHOD)?,
            server: text(keys::SERVER)?,
            tool: match text(keys::TOOL)? {
                Some(t) => Some(t),
                None => match text(keys::PROMPT)? {
                    Some(p) => Some(p),
                    None => match text(keys::RESOURCE)? {
                        Some(r) => Some(r),
                        None => text(keys::TARGET)?,
                    },
                },
            },
            principal: text(keys::USER)?,
            decision: text(keys::DECISION)?,
            status: required(keys::STATUS)?,
        })
    }

    /// The columns of a record's JSON.
    pub fn from_record(record: &Value) -> Result<Columns, String> {
        let map = record.as_object().ok_or("not a JSON object")?;
        Columns::from_texts(|k| match map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{k}` is not a string")),
        })
    }
}

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
//! | `id` | a ULID |
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
//! Portico's own, close to RFC 8785: object keys sorted by their UTF-8 bytes, no whitespace,
//! strings escaped as `serde_json` writes them (`"` `\` and control characters only), numbers
//! as `serde_json` writes them. The log stores each record's canonical text as it was hashed.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{Map, Value};

use super::Level;
use super::redact::Redactor;
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
    /// The columns of the record whose fields `get` looks up.
    pub fn from_fields<'a>(get: impl Fn(&str) -> Option<&'a Value>) -> Result<Columns, String> {
        let text = |k: &str| -> Result<Option<String>, String> {
            match get(k) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("`{k}` is not a string")),
            }
        };
        let required = |k: &str| text(k)?.ok_or_else(|| format!("`{k}` is missing"));
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
        Columns::from_fields(|k| map.get(k))
    }
}

/// A record ready but for its `seq`: the canonical JSON before and after where `"seq"` goes
/// (keys sorted, and `seq` sorts between `original_name`/`policy.*`/`result`… and `server`).
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// `{"a":…,"b":…,` or `{`.
    head: String,
    /// `,"server":…}` or `}`.
    tail: String,
    pub columns: Columns,
}

impl Prepared {
    /// The record's canonical JSON with `seq`.
    pub fn text(&self, seq: u64) -> String {
        let mut s = String::with_capacity(self.head.len() + self.tail.len() + 24);
        s.push_str(&self.head);
        s.push_str("\"seq\":");
        let _ = write!(s, "{seq}");
        s.push_str(&self.tail);
        s
    }
}

/// Writes `v` as canonical JSON.
pub fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            // serde_json's map is sorted already unless `preserve_order` is on somewhere.
            if map.keys().is_sorted() {
                write_members(out, map.iter());
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                write_members(out, members.into_iter());
            }
            out.push('}');
        }
    }
}

fn write_members<'a>(out: &mut String, members: impl Iterator<Item = (&'a String, &'a Value)>) {
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        write_canonical(out, v);
    }
}

/// For each byte: 0 when it stands as it is in a JSON string, else the letter of its short escape
/// (`"` `\\` `b` `f` `n` `r` `t`), or `u` for `\u00XX`.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Whether `b` is escaped in a JSON string: a control character, `"` or `\\`. Branch-free, so
/// the loops below over whole chunks compile to vector compares.
#[inline]
fn escaped(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// The offset of the first byte of `bytes` that is escaped: chunks of 32 bytes are tested whole
/// (most strings have no such byte), the chunk that has one byte by byte.
fn next_escaped(bytes: &[u8]) -> Option<usize> {
    const CHUNK: usize = 32;
    // A short string (most of a record's) is looked up byte by byte in the table.
    let by_table = |bytes: &[u8]| bytes.iter().position(|&b| ESCAPE[usize::from(b)] != 0);
    let mut chunks = bytes.chunks_exact(CHUNK);
    for (n, chunk) in (&mut chunks).enumerate() {
        if chunk.iter().fold(false, |any, &b| any | escaped(b)) {
            return by_table(chunk).map(|i| n * CHUNK + i);
        }
    }
    let rest = chunks.remainder();
    by_table(rest).map(|i| bytes.len() - rest.len() + i)
}

fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    // Most strings need no escape: find the next byte that does, copy runs whole.
    while let Some(off) = next_escaped(&bytes[start..]) {
        let i = start + off;
        out.push_str(&s[start..i]);
        let b = bytes[i];
        match ESCAPE[usize::from(b)] {
            b'u' => {
                let _ = write!(out, "\\u{b:04x}");
            }
            e => {
                out.push('\\');
                out.push(char::from(e));
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The length of `v`'s compact JSON (as `serde_json::to_vec` writes it, which is as long as its
/// canonical JSON: only the key order differs), counted without writing it.
pub fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    fn str_len(s: &str) -> usize {
        if s.len() < 64 {
            let by_table = |b: u8| match ESCAPE[usize::from(b)] {
                0 => 0,
                b'u' => 5,
                _ => 1,
            };
            return s.len() + s.bytes().map(by_table).sum::<usize>() + 2;
        }
        // What each byte adds to its one: 1 for a short escape (`\"` `\\` `\b` `\f` `\n` `\r`
        // `\t`), 5 for `\u00XX`. Branch-free, summed over the whole string by vector code.
        let extra: usize = s
            .bytes()
            .map(|b| {
                let control = usize::from(b < 0x20);
                let short = usize::from((b == 0x08) | (b == 0x0c) | (b == b'\n') | (b == b'\r') | (b == b'\t'));
                let quote = usize::from((b == b'"') | (b == b'\\'));
                control * 5 - short * 4 + quote
            })
            .sum();
        s.len() + extra + 2
    }
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => {
            let mut c = Count(0);
            let _ = write!(c, "{n}");
            c.0
        }
        Value::String(s) => str_len(s),
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(json_len).sum::<usize>(),
        Value::Object(map) => {
            2 + map.len().saturating_sub(1) + map.iter().map(|(k, v)| str_len(k) + 1 + json_len(v)).sum::<usize>()
        }
    }
}

/// `v` as canonical JSON.
pub fn canonical_json(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(&mut s, v);
    s
}

/// A record's fields before it is written: keys (all `'static`), values.
pub(crate) type Fields = Vec<(&'static str, Value)>;

fn put(fields: &mut Fields, key: &'static str, value: Option<impl Into<Value>>) {
    if let Some(v) = value {
        fields.push((key, v.into()));
    }
}

fn get<'a>(fields: &'a [(&'static str, Value)], key: &str) -> Option<&'a Value> {
    fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Turns an entry into a record ready for its `seq`: fields by level, redacted, capped.
pub(crate) fn prepare(entry: Entry, id: String, redactor: &Redactor, now_us: i64) -> Result<Prepared, String> {
    let level = redactor.level();
    let end = entry.end.map_or(now_us, time::micros);
    let start = entry.start.map_or(end, time::micros);
    let mut f: Fields = Vec::with_capacity(40);
    f.push((keys::ID, Value::String(id)));
    f.push((keys::START, Value::String(time::format_micros(start))));
    f.push((keys::END, Value::String(time::format_micros(end))));
    f.push((keys::DURATION, Value::from(end.saturating_sub(start).max(0))));
    put(&mut f, keys::USER, entry.principal);
    put(&mut f, keys::CLIENT_NAME, entry.client_name);
    put(&mut f, keys::CLIENT_VERSION, entry.client_version);
    put(&mut f, keys::SESSION, entry.session);
    put(&mut f, keys::PROTOCOL, entry.protocol_version);
    put(&mut f, keys::TRANSPORT, entry.transport);
    let target_key = match entry.method.as_str() {
        "tools/call" => keys::TOOL,
        "prompts/get" => keys::PROMPT,
        m if m.starts_with("resources/") => keys::RESOURCE,
        _ => keys::TARGET,
    };
    f.push((keys::METHOD, Value::String(entry.method)));
    put(&mut f, keys::REQUEST_ID, entry.request_id);
    put(&mut f, keys::UPSTREAM_REQUEST_ID, entry.upstream_request_id);
    put(&mut f, keys::SERVER, entry.server);
    put(&mut f, target_key, entry.exposed);
    put(&mut f, keys::ORIGINAL, entry.original);
    let error_code = entry.error_code.or_else(|| entry.error.as_ref()?.get("code")?.as_i64());
    if level >= Level::Request {
        put(&mut f, keys::ARGUMENTS, entry.arguments);
    }
    if level >= Level::RequestResponse {
        put(&mut f, keys::RESULT, entry.result);
        put(&mut f, keys::ERROR, entry.error);
    } else if let Some(mut error) = entry.error {
        // The error's message is the outcome; its `data` is a response body.
        if let Some(obj) = error.as_object_mut() {
            obj.remove("data");
        }
        if level >= Level::Request || !error.is_object() {
            f.push((keys::ERROR, error));
        } else if let Some(msg) = error.get("message").cloned() {
            f.push((keys::ERROR, serde_json::json!({ "message": msg })));
        }
    }
    put(&mut f, keys::DECISION, entry.decision.map(Decision::as_str));
    put(&mut f, keys::RULE, entry.rule);
    put(&mut f, keys::REASON, entry.reason);
    if let Some(a) = entry.approval {
        f.push((keys::APPROVAL_CHANNEL, Value::String(a.channel)));
        put(&mut f, keys::APPROVAL_BY, a.by);
        put(&mut f, keys::APPROVAL_TIME, a.at.map(|t| time::format_micros(time::micros(t))));
        put(&mut f, keys::APPROVAL_SCOPE, a.scope);
    }
    f.push((keys::STATUS, Value::String(entry.status.as_str().to_owned())));
    put(&mut f, keys::ERROR_TYPE, entry.error_type);
    put(&mut f, keys::ERROR_CODE, error_code.map(|c| c.to_string()));
    put(&mut f, keys::PROGRESS, entry.progress_count);
    put(&mut f, keys::REQUEST_BYTES, entry.request_bytes);
    put(&mut f, keys::RESPONSE_BYTES, entry.response_bytes);
    if entry.truncated {
        f.push((keys::TRUNCATED, Value::Bool(true)));
    }
    put(&mut f, keys::TRACE_ID, entry.trace_id);
    f.push((keys::AUDIT_LEVEL, Value::String(level.as_str().to_owned())));

    redactor.redact(&mut f);

    // Cut each field at the cap (in its canonical JSON), and say which were cut. A field written
    // out to be measured and kept whole is not written again below.
    let cap = redactor.max_field_bytes();
    let mut written: Vec<Option<String>> = Vec::with_capacity(f.len() + 1);
    let mut cut = Map::new();
    for (k, v) in &mut f {
        let small = matches!(*k, keys::ID | keys::START | keys::METHOD | keys::STATUS)
            || matches!(v, Value::Number(_) | Value::Bool(_))
            || matches!(v, Value::String(s) if s.len() * 6 + 2 <= cap);
        if cap == 0 || small {
            written.push(None);
            continue;
        }
        let mut text = String::new();
        write_canonical(&mut text, v);
        if text.len() > cap {
            let mut end = cap;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            cut.insert(format!("/{}", k.replace('~', "~0").replace('/', "~1")), Value::from(text.len()));
            text.truncate(end);
            *v = Value::String(text);
            written.push(None);
        } else {
            written.push(Some(text));
        }
    }
    if !cut.is_empty() {
        f.push((keys::AUDIT_TRUNCATED, Value::Object(cut)));
        written.push(None);
    }
    let columns = Columns::from_fields(|k| get(&f, k))?;
    let mut fields: Vec<((&'static str, Value), Option<String>)> = f.into_iter().zip(written).collect();
    fields.sort_unstable_by(|a, b| a.0.0.cmp(b.0.0));

    let mut head = String::with_capacity(1024);
    head.push('{');
    let mut tail = String::with_capacity(256);
    for ((k, v), text) in &fields {
        let out = if *k < keys::SEQ { &mut head } else { &mut tail };
        if *k >= keys::SEQ {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        match text {
            Some(t) => out.push_str(t),
            None => write_canonical(out, v),
        }
        if *k < keys::SEQ {
            out.push(',');
        }
    }
    tail.push('}');
    Ok(Prepared { head, tail, columns })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_len_is_the_length_serde_json_writes() {
        let v = json!({"b": [1, -2.5, 1e300, null, true, false], "a\"\n\u{1}": "x\\y\u{8}\u{c}\t\r é",
            "c": {}, "d": [], "e": {"f": [{"g": 18446744073709551615u64}]}});
        assert_eq!(json_len(&v), serde_json::to_vec(&v).map(|b| b.len()).unwrap_or(0));
        assert_eq!(json_len(&v), canonical_json(&v).len());
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every: String = (0u8..=0x7f).map(char::from).chain("é€😀".chars()).collect();
        for s in [every.as_str(), "", "plain", "\"", "a\\b"] {
            let v = Value::String(s.to_owned());
            assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap_or_default(), "{s:?}");
            assert_eq!(json_len(&v), canonical_json(&v).len());
        }
    }

    #[test]
    fn long_strings_are_escaped_and_counted_wherever_the_escape_falls() {
        // Escapes at every offset around the 32-byte chunks of the scan, and none at all.
        for len in [0usize, 1, 31, 32, 33, 64, 65, 200] {
            for at in (0..len).step_by(7).chain([len.saturating_sub(1)]) {
                for esc in ['"', '\\', '\n', '\u{1}', 'é'] {
                    let s: String = (0..len).map(|i| if i == at { esc } else { 'a' }).collect();
                    let v = Value::String(s.clone());
                    let want = serde_json::to_string(&v).unwrap_or_default();
                    assert_eq!(canonical_json(&v), want, "{s:?}");
                    assert_eq!(json_len(&v), want.len(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn canonical_sorts_keys_and_drops_whitespace() {
        let v = json!({"b": [1, 2.5, "x\n\u{1}é"], "a": {"z": null, "y": true}});
        assert_eq!(canonical_json(&v), r#"{"a":{"y":true,"z":null},"b":[1,2.5,"x\n\u0001é"]}"#);
        let parsed: Value = serde_json::from_str(&canonical_json(&v)).unwrap_or(Value::Null);
        assert_eq!(parsed, v);
    }
}

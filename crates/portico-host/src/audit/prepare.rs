//! Preparing a record: an [`Entry`] becomes its fields by level, redacted and capped, and then
//! its canonical JSON, written in key order from one slot per key (no map, no sort), with a gap
//! where its `seq` goes ([`Prepared`]).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::Level;
use super::canonical::{write_canonical, write_str};
use super::record::{Columns, Entry, keys};
use super::redact::Redactor;
use super::time;

/// A record ready but for its `seq` and its id, which the writer gives it when it takes its place
/// in the chain: the canonical JSON around where `"id"` and `"seq"` go (keys sorted: `id` comes
/// after `gen_ai.*` and before `jsonrpc.*`, `seq` after `result`… and before `server`).
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// `{"a":…,"b":…,` or `{`.
    head: String,
    /// `"jsonrpc.request.id":…,` …, up to `seq`.
    mid: String,
    /// `,"server":…}` or `}`.
    tail: String,
    /// When it was appended, in milliseconds since the epoch: the time of its ULID.
    pub ms: u64,
    /// Its columns, `id` empty until it is sealed.
    pub columns: Columns,
}

impl Prepared {
    /// The record's canonical JSON with its `seq` and its `id` (a ULID: nothing to escape).
    pub fn text(&self, seq: u64, id: &str) -> String {
        let mut s = String::with_capacity(self.head.len() + self.mid.len() + self.tail.len() + 64);
        s.push_str(&self.head);
        s.push_str("\"id\":\"");
        s.push_str(id);
        s.push_str("\",");
        s.push_str(&self.mid);
        s.push_str("\"seq\":");
        let _ = write!(s, "{seq}");
        s.push_str(&self.tail);
        s
    }
}

/// Every key a record can hold, sorted by their bytes: the order of its canonical JSON. A
/// record is prepared into one slot per key ([`Slots`]), so it is written in this order with no
/// sort and no map.
const ORDER: [&str; 40] = [
    keys::APPROVAL_BY,
    keys::APPROVAL_CHANNEL,
    keys::APPROVAL_SCOPE,
    keys::APPROVAL_TIME,
    keys::ARGUMENTS,
    keys::AUDIT_LEVEL,
    keys::AUDIT_TRUNCATED,
    keys::CLIENT_NAME,
    keys::CLIENT_VERSION,
    keys::DURATION,
    keys::END,
    keys::ERROR,
    keys::ERROR_TYPE,
    keys::PROMPT,
    keys::TOOL,
    keys::ID,
    keys::REQUEST_ID,
    keys::METHOD,
    keys::PROTOCOL,
    keys::RESOURCE,
    keys::SESSION,
    keys::TRANSPORT,
    keys::ORIGINAL,
    keys::DECISION,
    keys::REASON,
    keys::RULE,
    keys::PROGRESS,
    keys::REQUEST_BYTES,
    keys::RESPONSE_BYTES,
    keys::RESULT,
    keys::ERROR_CODE,
    keys::SEQ,
    keys::SERVER,
    keys::START,
    keys::STATUS,
    keys::TARGET,
    keys::TRACE_ID,
    keys::TRUNCATED,
    keys::UPSTREAM_REQUEST_ID,
    keys::USER,
];

/// The slot of `key` in [`ORDER`]; used in `const` blocks, so an unknown key does not compile.
const fn slot(key: &str) -> usize {
    let mut i = 0;
    while i < ORDER.len() {
        let (a, b) = (ORDER[i].as_bytes(), key.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a record key")
}

/// The slot of a key, computed at compile time.
macro_rules! at {
    ($key:expr) => {
        const { slot($key) }
    };
}

/// A field's value while the record is prepared.
#[derive(Debug)]
enum Val {
    Str(String),
    Num(u64),
    True,
    Json(Value),
    /// Canonical JSON written already (to be measured against the cap) and kept whole.
    Written(String),
}

impl Val {
    fn write(&self, out: &mut String) {
        match self {
            Val::Str(s) => write_str(out, s),
            Val::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Val::True => out.push_str("true"),
            Val::Json(v) => write_canonical(out, v),
            Val::Written(text) => out.push_str(text),
        }
    }

    /// As a JSON value, for redaction (which comes before the cap, so before any text is
    /// written: `Written` is not met here).
    fn into_value(self) -> Value {
        match self {
            Val::Str(s) => Value::String(s),
            Val::Num(n) => Value::from(n),
            Val::True => Value::Bool(true),
            Val::Json(v) => v,
            Val::Written(text) => Value::String(text),
        }
    }

    /// A string value, for the columns; `None` for one that is not a string.
    fn text(&self) -> Option<&str> {
        match self {
            Val::Str(s) | Val::Json(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Short enough that its JSON is under `cap` whatever it holds.
    fn small(&self, cap: usize) -> bool {
        match self {
            Val::Num(_) | Val::True | Val::Json(Value::Number(_) | Value::Bool(_)) => true,
            Val::Str(s) | Val::Json(Value::String(s)) => s.len() * 6 + 2 <= cap,
            _ => false,
        }
    }
}

/// A record's fields, one slot per key of [`ORDER`].
struct Slots([Option<Val>; ORDER.len()]);

impl Slots {
    fn set(&mut self, at: usize, v: Val) {
        self.0[at] = Some(v);
    }

    fn text(&mut self, at: usize, v: Option<String>) {
        if let Some(s) = v {
            self.0[at] = Some(Val::Str(s));
        }
    }

    fn num(&mut self, at: usize, v: Option<u64>) {
        if let Some(n) = v {
            self.0[at] = Some(Val::Num(n));
        }
    }

    fn json(&mut self, at: usize, v: Option<Value>) {
        if let Some(v) = v {
            self.0[at] = Some(Val::Json(v));
        }
    }

    /// Key names inside the content fields, then the pointers, field by field. A field no rule
    /// reaches is not touched.
    fn redact(&mut self, redactor: &Redactor) {
        for (key, slot) in ORDER.iter().zip(self.0.iter_mut()) {
            let content = keys::CONTENT.contains(key);
            if !content && !redactor.points_into(key) {
                continue;
            }
            if let Some(v) = slot.take() {
                let mut value = v.into_value();
                redactor.redact_field(key, content, &mut value);
                *slot = Some(Val::Json(value));
            }
        }
    }

    /// Cuts each field at the cap (in its canonical JSON) and says which were cut. A field
    /// written out to be measured and kept whole is not written again.
    fn cap(&mut self, cap: usize) -> Map<String, Value> {
        let mut cut = Map::new();
        if cap == 0 {
            return cut;
        }
        for (key, slot) in ORDER.iter().zip(self.0.iter_mut()) {
            let Some(v) = slot else { continue };
            if matches!(*key, keys::ID | keys::START | keys::METHOD | keys::STATUS) || v.small(cap) {
                continue;
            }
            let mut text = String::new();
            v.write(&mut text);
            if text.len() > cap {
                let mut end = cap;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                cut.insert(format!("/{}", key.replace('~', "~0").replace('/', "~1")), Value::from(text.len()));
                text.truncate(end);
                *v = Val::Str(text);
            } else if v.text().is_none() {
                // A string stays one: the columns read it.
                *v = Val::Written(text);
            }
        }
        cut
    }

    /// The columns, with an empty `id` (the writer gives it with the `seq`).
    fn columns(&self) -> Result<Columns, String> {
        Columns::from_texts(|k| {
            if k == keys::ID {
                return Ok(Some(String::new()));
            }
            let Ok(at) = ORDER.binary_search(&k) else { return Ok(None) };
            match &self.0[at] {
                None => Ok(None),
                Some(v) => v.text().map(|s| Some(s.to_owned())).ok_or_else(|| format!("`{k}` is not a string")),
            }
        })
    }

    /// The canonical JSON before `"id"`, between it and `"seq"`, and after `"seq"`.
    fn write(&self) -> (String, String, String) {
        let (id, seq) = (at!(keys::ID), at!(keys::SEQ));
        let mut head = String::with_capacity(512);
        head.push('{');
        let mut mid = String::with_capacity(512);
        let mut tail = String::with_capacity(256);
        for (i, (key, v)) in ORDER.iter().zip(&self.0).enumerate() {
            let Some(v) = v else { continue };
            let out = if i < id {
                &mut head
            } else if i < seq {
                &mut mid
            } else {
                &mut tail
            };
            if i > seq {
                out.push(',');
            }
            // Keys are plain: nothing in them is escaped.
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            v.write(out);
            if i < seq {
                out.push(',');
            }
        }
        tail.push('}');
        (head, mid, tail)
    }
}

/// Turns an entry appended at `now_us` into a record ready for its `seq` and id: fields by level,
/// redacted, capped. Neither `seq` nor `id` is redacted or cut.
pub(crate) fn prepare(entry: Entry, redactor: &Redactor, now_us: i64) -> Result<Prepared, String> {
    let level = redactor.level();
    let end = entry.end.map_or(now_us, time::micros);
    let start = entry.start.map_or(end, time::micros);
    let mut f = Slots([const { None }; ORDER.len()]);
    f.set(at!(keys::START), Val::Str(time::format_micros(start)));
    f.set(at!(keys::END), Val::Str(time::format_micros(end)));
    f.set(at!(keys::DURATION), Val::Num(u64::try_from(end.saturating_sub(start)).unwrap_or(0)));
    f.text(at!(keys::USER), entry.principal);
    f.text(at!(keys::CLIENT_NAME), entry.client_name);
    f.text(at!(keys::CLIENT_VERSION), entry.client_version);
    f.text(at!(keys::SESSION), entry.session);
    f.text(at!(keys::PROTOCOL), entry.protocol_version);
    f.text(at!(keys::TRANSPORT), entry.transport);
    let target = match entry.method.as_str() {
        "tools/call" => at!(keys::TOOL),
        "prompts/get" => at!(keys::PROMPT),
        m if m.starts_with("resources/") => at!(keys::RESOURCE),
        _ => at!(keys::TARGET),
    };
    f.set(at!(keys::METHOD), Val::Str(entry.method));
    f.text(at!(keys::REQUEST_ID), entry.request_id);
    f.text(at!(keys::UPSTREAM_REQUEST_ID), entry.upstream_request_id);
    f.text(at!(keys::SERVER), entry.server);
    f.text(target, entry.exposed);
    f.text(at!(keys::ORIGINAL), entry.original);
    let error_code = entry.error_code.or_else(|| entry.error.as_ref()?.get("code")?.as_i64());
    if level >= Level::Request {
        f.json(at!(keys::ARGUMENTS), entry.arguments);
    }
    if level >= Level::RequestResponse {
        f.json(at!(keys::RESULT), entry.result);
        f.json(at!(keys::ERROR), entry.error);
    } else if let Some(mut error) = entry.error {
        // The error's message is the outcome; its `data` is a response body.
        if let Some(obj) = error.as_object_mut() {
            obj.remove("data");
        }
        if level >= Level::Request || !error.is_object() {
            f.set(at!(keys::ERROR), Val::Json(error));
        } else if let Some(msg) = error.get("message").cloned() {
            f.set(at!(keys::ERROR), Val::Json(serde_json::json!({ "message": msg })));
        }
    }
    f.text(at!(keys::DECISION), entry.decision.map(|d| d.as_str().to_owned()));
    f.text(at!(keys::RULE), entry.rule);
    f.text(at!(keys::REASON), entry.reason);
    if let Some(a) = entry.approval {
        f.set(at!(keys::APPROVAL_CHANNEL), Val::Str(a.channel));
        f.text(at!(keys::APPROVAL_BY), a.by);
        f.text(at!(keys::APPROVAL_TIME), a.at.map(|t| time::format_micros(time::micros(t))));
        f.text(at!(keys::APPROVAL_SCOPE), a.scope);
    }
    f.set(at!(keys::STATUS), Val::Str(entry.status.as_str().to_owned()));
    f.text(at!(keys::ERROR_TYPE), entry.error_type);
    f.text(at!(keys::ERROR_CODE), error_code.map(|c| c.to_string()));
    f.num(at!(keys::PROGRESS), entry.progress_count);
    f.num(at!(keys::REQUEST_BYTES), entry.request_bytes);
    f.num(at!(keys::RESPONSE_BYTES), entry.response_bytes);
    if entry.truncated {
        f.set(at!(keys::TRUNCATED), Val::True);
    }
    f.text(at!(keys::TRACE_ID), entry.trace_id);
    f.set(at!(keys::AUDIT_LEVEL), Val::Str(level.as_str().to_owned()));

    f.redact(redactor);
    let cut = f.cap(redactor.max_field_bytes());
    if !cut.is_empty() {
        f.set(at!(keys::AUDIT_TRUNCATED), Val::Json(Value::Object(cut)));
    }
    let columns = f.columns()?;
    let (head, mid, tail) = f.write();
    Ok(Prepared { head, mid, tail, ms: u64::try_from(now_us / 1000).unwrap_or(0), columns })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;
    use crate::audit::canonical::canonical_json;
    use crate::audit::record::{Approval, Decision, Status};
    use crate::audit::redact::RedactConfig;

    fn redactor(pointers: &[&str], max_field_bytes: usize, level: Level) -> Redactor {
        let config = RedactConfig {
            pointers: pointers.iter().map(|p| (*p).to_owned()).collect(),
            max_field_bytes,
            ..RedactConfig::default()
        };
        Redactor::new(&config, level, &[7; 32]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn full_entry() -> Entry {
        let mut e = Entry::new("tools/call");
        e.start = Some(UNIX_EPOCH + Duration::from_micros(1_764_633_600_000_001));
        e.end = Some(UNIX_EPOCH + Duration::from_micros(1_764_633_600_001_501));
        e.principal = Some("local".into());
        e.client_name = Some("claude \"code\"".into());
        e.client_version = Some("1.0".into());
        e.session = Some("s1".into());
        e.protocol_version = Some("2025-11-25".into());
        e.transport = Some("pipe".into());
        e.request_id = Some("7".into());
        e.upstream_request_id = Some("9".into());
        e.server = Some("git".into());
        e.exposed = Some("git__log".into());
        e.original = Some("log".into());
        e.arguments = Some(json!({"path": "/tmp\n", "api_key": "sk-1", "n": [1, 2.5]}));
        e.result = Some(json!({"content": [{"type": "text", "text": "ok"}], "isError": true}));
        e.error = Some(json!({"code": -32000, "message": "m", "data": {"z": 1, "a": null}}));
        e.decision = Some(Decision::Ask);
        e.rule = Some("r".into());
        e.reason = Some("why".into());
        e.approval = Some(Approval {
            channel: "terminal".into(),
            by: Some("me".into()),
            at: Some(UNIX_EPOCH + Duration::from_micros(1_764_633_600_000_900)),
            scope: Some("once".into()),
        });
        e.status = Status::Error;
        e.error_type = Some("tool_error".into());
        e.progress_count = Some(3);
        e.request_bytes = Some(120);
        e.response_bytes = Some(64);
        e.truncated = true;
        e.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        e
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    #[test]
    fn the_key_order_is_sorted_and_no_key_needs_an_escape() {
        assert!(ORDER.windows(2).all(|w| w[0] < w[1]), "{ORDER:?}");
        for k in ORDER {
            assert_eq!(canonical_json(&Value::String(k.to_owned())), format!("\"{k}\""));
            assert_eq!(ORDER[slot(k)], k);
        }
    }

    /// Every field of an entry lands under its key, and the text is the canonical JSON of
    /// exactly those fields with `seq`.
    #[test]
    fn a_prepared_record_is_the_canonical_json_of_its_fields() {
        let r = redactor(&[], 64 * 1024, Level::RequestResponse);
        let p = prepare(full_entry(), &r, 0).unwrap_or_else(|e| panic!("{e}"));
        let text = p.text(42, "01ID");
        let v = parse(&text);
        assert_eq!(canonical_json(&v), text);
        let want = json!({
            "approval.by": "me", "approval.channel": "terminal", "approval.scope": "once",
            "approval.time": time::format_micros(1_764_633_600_000_900),
            "arguments": {"path": "/tmp\n", "api_key": r.digest(&json!("sk-1")), "n": [1, 2.5]},
            "audit.level": "request-response",
            "client_name": "claude \"code\"", "client_version": "1.0",
            "duration_us": 1500,
            "end_time": time::format_micros(1_764_633_600_001_501),
            "error": {"code": -32000, "message": "m", "data": {"z": 1, "a": null}},
            "error.type": "tool_error",
            "gen_ai.tool.name": "git__log",
            "id": "01ID",
            "jsonrpc.request.id": "7",
            "mcp.method.name": "tools/call", "mcp.protocol.version": "2025-11-25", "mcp.session.id": "s1",
            "network.transport": "pipe",
            "original_name": "log",
            "policy.decision": "ask", "policy.reason": "why", "policy.rule": "r",
            "progress_count": 3, "request_bytes": 120, "response_bytes": 64,
            "result": {"content": [{"type": "text", "text": "ok"}], "isError": true},
            "rpc.response.status_code": "-32000",
            "seq": 42, "server": "git",
            "start_time": time::format_micros(1_764_633_600_000_001),
            "status": "error",
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
            "truncated": true,
            "upstream_request_id": "9",
            "user.id": "local",
        });
        assert_eq!(v, want);
        // The columns, with the id the writer gives.
        let mut columns = p.columns.clone();
        assert_eq!(columns.id, "");
        columns.id = "01ID".into();
        assert_eq!(Columns::from_record(&v), Ok(columns));
    }

    /// Pointers reach plain fields as well as content, `*` reaches every field, and the cap cuts
    /// long fields, strings and JSON alike, and lists each in `audit.truncated`; the columns are
    /// what the record says after both.
    #[test]
    fn pointers_and_the_cap_apply_to_every_field() {
        let r = redactor(&["/server", "/*/content/0/text", "/error/message"], 160, Level::RequestResponse);
        let mut e = full_entry();
        e.principal = Some("p".repeat(200));
        let arguments = json!({"long": "x".repeat(200)});
        e.arguments = Some(arguments.clone());
        let p = prepare(e, &r, 0).unwrap_or_else(|e| panic!("{e}"));
        let text = p.text(1, "01ID");
        let v = parse(&text);
        assert_eq!(canonical_json(&v), text);
        assert_eq!(v["server"], json!(r.digest(&json!("git"))));
        assert_eq!(v["result"]["content"][0]["text"], json!(r.digest(&json!("ok"))));
        assert_eq!(v["result"]["isError"], json!(true));
        assert_eq!(v["error"]["message"], json!(r.digest(&json!("m"))));
        assert_eq!(v["error"]["code"], json!(-32000));
        // Cut: the principal (202 bytes of JSON) and the arguments, each to its first 160 bytes.
        let principal = v["user.id"].as_str().unwrap_or_default();
        assert_eq!(principal, format!("\"{}", "p".repeat(159)));
        let args = canonical_json(&arguments);
        assert_eq!(v["arguments"], json!(args[..160]));
        assert_eq!(v["audit.truncated"], json!({"/arguments": args.len(), "/user.id": 202}));
        let mut columns = p.columns.clone();
        columns.id = "01ID".into();
        assert_eq!(Columns::from_record(&v), Ok(columns));
        assert_eq!(p.columns.server.as_deref(), Some(r.digest(&json!("git")).as_str()));
        assert_eq!(p.columns.principal.as_deref(), Some(principal));
    }

    /// At `metadata`, neither arguments nor result is kept, and only the message of an error.
    #[test]
    fn the_metadata_level_keeps_the_outcome_only() {
        let r = redactor(&[], 0, Level::Metadata);
        let p = prepare(full_entry(), &r, 0).unwrap_or_else(|e| panic!("{e}"));
        let v = parse(&p.text(3, "01ID"));
        assert_eq!(v.get("arguments"), None);
        assert_eq!(v.get("result"), None);
        assert_eq!(v["error"], json!({"message": "m"}));
        assert_eq!(v["rpc.response.status_code"], json!("-32000"));
        assert_eq!(v["audit.level"], json!("metadata"));
    }
}

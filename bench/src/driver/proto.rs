//! The driver's own JSON-RPC: request lines written by hand, responses read with small
//! borrowed serde structs that keep only what is verified.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The protocol revision the driver's handshake asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// A response (or a message the server sent on its own), with the `result` typed as `R`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>"))]
pub struct Message<'a, R> {
    #[serde(default)]
    pub id: Id,
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default = "none")]
    pub result: Option<R>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

fn none<R>() -> Option<R> {
    None
}

/// A message's `id`, as far as the driver cares: its own ids are unsigned integers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    /// No `id` member: a notification.
    #[default]
    Absent,
    Null,
    Num(u64),
    /// A string, a negative or fractional number: never one of the driver's.
    Other,
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Num(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(u64::try_from(v).map_or(Id::Other, Id::Num))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Id, E> {
                Ok(Id::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Id, E> {
                Ok(Id::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// The first element of a JSON array (`None` for an empty one); the rest is skipped
/// without being built.
pub struct First<T>(pub Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<First<T>, A::Error> {
                let first = seq.next_element::<T>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// The length of a JSON array, its elements skipped.
pub struct Count(pub usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// `content[i]` of a tool result, or `contents[i]` of a resource read.
#[derive(Deserialize)]
pub struct TextItem<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
}

/// `CallToolResult`, as far as `content[0].text` and `isError`.
#[derive(Deserialize)]
pub struct CallResult<'a> {
    #[serde(borrow)]
    pub content: First<TextItem<'a>>,
    #[serde(rename = "isError", default)]
    pub is_error: Option<bool>,
}

/// `ListToolsResult`: the number of tools and the cursor.
#[derive(Deserialize)]
pub struct ListResult<'a> {
    pub tools: Count,
    #[serde(rename = "nextCursor", borrow, default)]
    pub next_cursor: Option<Cow<'a, str>>,
}

/// `ReadResourceResult`: `contents[0]`.
#[derive(Deserialize)]
pub struct ReadResult<'a> {
    #[serde(borrow)]
    pub contents: First<TextItem<'a>>,
}

/// What a parsed line is to the request the driver waits for.
pub enum Parsed<R> {
    /// A response to a request of ours with a `result`.
    Result(u64, R),
    /// A notification from the server: skipped.
    Notification,
}

/// Parses one line as a response carrying a `result` of type `R`, or a notification;
/// anything else (an error response, a request from the server, a bad id) is an error.
pub fn parse<'a, R: Deserialize<'a>>(line: &'a [u8]) -> Result<Parsed<R>, String> {
    let message: Message<'a, R> =
        serde_json::from_slice(line).map_err(|e| format!("unparseable response ({e}): {}", excerpt(line)))?;
    match (message.id, message.method) {
        (Id::Absent, Some(_)) => return Ok(Parsed::Notification),
        (_, Some(method)) => return Err(format!("unexpected request from the server: {method}")),
        _ => {}
    }
    if let Some(error) = message.error {
        return Err(format!("error response (id {:?}): {}", message.id, excerpt(error.get().as_bytes())));
    }
    let Id::Num(id) = message.id else {
        return Err(format!("response with an id the driver never sent: {}", excerpt(line)));
    };
    match message.result {
        Some(result) => Ok(Parsed::Result(id, result)),
        None => Err(format!("response {id} has neither result nor error: {}", excerpt(line))),
    }
}

/// At most 300 bytes of a line, for messages.
pub fn excerpt(line: &[u8]) -> String {
    let cut = line.len().min(300);
    let mut s = String::from_utf8_lossy(&line[..cut]).into_owned();
    if cut < line.len() {
        s.push_str(&format!("… ({} bytes)", line.len()));
    }
    s
}

/// The request `_meta` of a stateless-era (2026-07-28) client, as JSON text.
pub fn stateless_meta() -> String {
    format!(
        r#"{{"io.modelcontextprotocol/protocolVersion":"{STATELESS_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench-driver","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// The stateless-era revision.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Appends `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ID"}}}\n`,
/// with `"_meta":META` in `params` when `meta` is given.
#[inline]
pub fn echo_request(buf: &mut Vec<u8>, id: u64, meta: Option<&str>) {
    let mut ids = itoa::Buffer::new();
    let id = ids.format(id).as_bytes();
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    buf.extend_from_slice(id);
    buf.extend_from_slice(br#","method":"tools/call","params":{"name":"echo","arguments":{"text":""#);
    buf.extend_from_slice(id);
    buf.extend_from_slice(b"\"}");
    if let Some(meta) = meta {
        buf.extend_from_slice(br#","_meta":"#);
        buf.extend_from_slice(meta.as_bytes());
    }
    buf.extend_from_slice(b"}}\n");
}

/// Appends a request line with `params` given as JSON object text (or none), and `"_meta":META`
/// added to `params` when `meta` is given.
pub fn request(buf: &mut Vec<u8>, id: u64, method: &str, params: Option<&str>, meta: Option<&str>) {
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    buf.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    buf.extend_from_slice(br#","method":"#);
    buf.extend_from_slice(serde_json::Value::from(method).to_string().as_bytes());
    match (params.map(str::trim), meta) {
        (None, None) => {}
        (Some(params), None) => {
            buf.extend_from_slice(br#","params":"#);
            buf.extend_from_slice(params.as_bytes());
        }
        (params, Some(meta)) => {
            let body = params.and_then(|p| p.strip_suffix('}')).unwrap_or("{").trim_end();
            buf.extend_from_slice(br#","params":"#);
            buf.extend_from_slice(body.as_bytes());
            if !body.ends_with('{') {
                buf.push(b',');
            }
            buf.extend_from_slice(br#""_meta":"#);
            buf.extend_from_slice(meta.as_bytes());
            buf.push(b'}');
        }
    }
    buf.extend_from_slice(b"}\n");
}

/// A response line that was verified in full, kept to recognise later answers that are
/// byte-identical to it but for the id.
///
/// A later line that equals the reference up to the top-level `id` value, that value being the
/// id the driver sent this time, and the reference after it, is the verified response with
/// only its id number token replaced: it is valid JSON, answers the request it should, and
/// carries exactly the verified result.
pub struct Template {
    line: Vec<u8>,
    /// Where the top-level `id` value (decimal digits) starts and ends in `line`.
    id_at: usize,
    id_end: usize,
}

impl Template {
    /// `line` is a response, already parsed as JSON, to the request with id `id`. `None` when
    /// its top-level `id` member is not found exactly once with the value written as the
    /// driver's decimal digits: then there is no fast check and every answer is parsed.
    pub fn new(line: &[u8], id: u64) -> Option<Template> {
        let (id_at, id_end) = top_level_id(line)?;
        let mut digits = itoa::Buffer::new();
        (line[id_at..id_end] == *digits.format(id).as_bytes()).then(|| Template { line: line.to_vec(), id_at, id_end })
    }

    /// Whether `line` is the reference with `id` as its id (plain slice compares, i.e. memcmp).
    #[inline]
    pub fn matches(&self, line: &[u8], id: u64) -> bool {
        let mut digits = itoa::Buffer::new();
        let id = digits.format(id).as_bytes();
        let (head, tail) = (&self.line[..self.id_at], &self.line[self.id_end..]);
        let at = head.len() + id.len();
        line.len() == at + tail.len()
            && line[head.len()..at] == *id
            && line[..head.len()] == *head
            && line[at..] == *tail
    }
}

/// The span of the value of the member `"id"` of the top-level object of `line` (valid JSON).
///
/// A byte search for `"id":` alone is not enough: an object key such as `x\"id` anywhere in the
/// result holds those bytes too (the escaped quote before `id` is preceded by a backslash, the
/// one after it is real). So this walks the line, skipping strings (and their escapes) and
/// counting nesting, and takes only a key spelled `id` directly in the top-level object. The
/// value is the run of number characters after the colon; the caller compares it with the id
/// it expects. `None` if there is no such member, or more than one.
fn top_level_id(line: &[u8]) -> Option<(usize, usize)> {
    let skip_ws = |mut i: usize| {
        while line.get(i).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    };
    let mut depth = 0u32;
    let mut found = None;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let start = i + 1;
                let mut end = start;
                loop {
                    end += memchr::memchr2(b'"', b'\\', line.get(end..)?)?;
                    if line[end] == b'"' {
                        break;
                    }
                    end += 2; // a backslash and the character it escapes
                }
                i = end + 1;
                if depth == 1 && &line[start..end] == b"id" {
                    let colon = skip_ws(i);
                    if line.get(colon) == Some(&b':') {
                        let at = skip_ws(colon + 1);
                        let len = line[at..]
                            .iter()
                            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                            .unwrap_or(line.len() - at);
                        if found.replace((at, at + len)).is_some() {
                            return None;
                        }
                        i = at + len;
                    }
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        i += 1;
    }
    found
}

/// Checks an echo response: `content[0]` is text and equals the decimal id.
#[inline]
pub fn verify_echo(id: u64, result: &CallResult<'_>) -> Result<(), String> {
    if result.is_error == Some(true) {
        return Err(format!("echo {id} returned isError: true"));
    }
    let Some(item) = &result.content.0 else {
        return Err(format!("echo {id} returned no content"));
    };
    let mut digits = itoa::Buffer::new();
    let expected = digits.format(id);
    match (&item.kind, &item.text) {
        (Some(kind), Some(text)) if kind == "text" && text == expected => Ok(()),
        (kind, text) => {
            Err(format!("echo {id} returned content[0] type {kind:?} text {text:?}, expected text {expected:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn line(buf: &[u8]) -> Value {
        assert_eq!(buf.last(), Some(&b'\n'));
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1);
        serde_json::from_slice(buf).expect("valid JSON")
    }

    #[test]
    fn requests_are_valid_json_with_meta_in_params() {
        let meta = stateless_meta();
        let mut buf = Vec::new();
        echo_request(&mut buf, 42, None);
        assert_eq!(line(&buf)["params"], json!({"name": "echo", "arguments": {"text": "42"}}));
        buf.clear();
        echo_request(&mut buf, 7, Some(&meta));
        let v = line(&buf);
        assert_eq!(v["id"], 7);
        assert_eq!(v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], STATELESS_VERSION);
        for params in [None, Some("{}"), Some(r#"{"uri":"x"}"#)] {
            buf.clear();
            request(&mut buf, 1, "resources/read", params, Some(&meta));
            let v = line(&buf);
            assert!(v["params"]["_meta"].is_object(), "{v}");
            assert_eq!(v["params"].get("uri").is_some(), params.is_some_and(|p| p.contains("uri")));
        }
        buf.clear();
        request(&mut buf, 1, "tools/list", None, None);
        assert!(line(&buf).get("params").is_none());
    }

    #[test]
    fn responses_are_classified() {
        let ok =
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"},{"type":"text","text":"x"}]}}"#;
        match parse::<CallResult<'_>>(ok) {
            Ok(Parsed::Result(3, r)) => verify_echo(3, &r).expect("echo verifies"),
            _ => panic!("a result"),
        }
        let wrong = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"4"}]}}"#;
        match parse::<CallResult<'_>>(wrong) {
            Ok(Parsed::Result(3, r)) => assert!(verify_echo(3, &r).is_err()),
            _ => panic!("a result"),
        }
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert!(matches!(parse::<CallResult<'_>>(note), Ok(Parsed::Notification)));
        for bad in [
            &br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#[..],
            br#"{"jsonrpc":"2.0","id":3}"#,
            br#"{"jsonrpc":"2.0","id":"3","result":{"content":[]}}"#,
            br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
            b"not json",
        ] {
            assert!(parse::<CallResult<'_>>(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let list = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"YQ"}}"#;
        match parse::<ListResult<'_>>(list) {
            Ok(Parsed::Result(1, r)) => assert_eq!((r.tools.0, r.next_cursor.as_deref()), (2, Some("YQ"))),
            _ => panic!("a result"),
        }
    }

    /// `line` with its top-level id (the decimal `from`, first occurrence of `"id":FROM` after
    /// `after`) written as `to`.
    fn with_id(line: &str, after: &str, from: u64, to: u64) -> Vec<u8> {
        let key = format!("\"id\":{from}");
        let at = line.find(after).expect("marker") + line[line.find(after).expect("marker")..].find(&key).expect("id");
        format!("{}\"id\":{to}{}", &line[..at], &line[at + key.len()..]).into_bytes()
    }

    #[test]
    fn template_takes_the_top_level_id_before_or_after_the_result() {
        let before =
            r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"x\"id","inputSchema":{"id":7}}],"n":{"id":7}}}"#;
        let after = r#"{"jsonrpc":"2.0","result":{"tools":[{"name":"a","x\"id":7,"inputSchema":{"id":7}}],"n":{"id":7}},"id":7}"#;
        for (line, marker) in [(before, "{\"jsonrpc"), (after, "}},\"id")] {
            let t = Template::new(line.as_bytes(), 7).expect("a template");
            assert!(t.matches(line.as_bytes(), 7), "{line}");
            for id in [0, 8, 10, 123_456, u64::MAX] {
                let other = with_id(line, marker, 7, id);
                assert!(t.matches(&other, id), "{id}: {}", String::from_utf8_lossy(&other));
                assert!(!t.matches(&other, 7), "{id}");
                assert!(!t.matches(line.as_bytes(), id), "{id}");
                match parse::<&RawValue>(&other) {
                    Ok(Parsed::Result(got, _)) => assert_eq!(got, id),
                    _ => panic!("a result"),
                }
            }
            // The nested ids (including the one after the escaped quote) are not the one.
            for nested in [line.find("x\\\"id").expect("key"), line.find("\"inputSchema").expect("schema")] {
                let other = with_id(line, &line[nested..nested + 4], 7, 8);
                assert!(!t.matches(&other, 7) && !t.matches(&other, 8), "{}", String::from_utf8_lossy(&other));
            }
        }
    }

    #[test]
    fn template_handles_id_widths_and_spaces() {
        for (first, later) in [(9, 10), (10, 9), (1, 10_000_000_000), (99_999, 100_000)] {
            let line = format!(
                r#"{{ "result" : {{"contents":[{{"text":"\\\"id\":{first},"}}]}} , "id" : {first} , "jsonrpc":"2.0"}}"#
            );
            serde_json::from_str::<Value>(&line).expect("valid JSON");
            let t = Template::new(line.as_bytes(), first).expect("a template");
            let other = line.replacen(&format!(": {first} ,"), &format!(": {later} ,"), 1);
            assert_ne!(other, line);
            assert!(t.matches(other.as_bytes(), later), "{other}");
            assert!(!t.matches(other.as_bytes(), first), "{other}");
        }
    }

    #[test]
    fn template_rejects_any_other_byte() {
        let line = br#"{"jsonrpc":"2.0","id":42,"result":{"contents":[{"uri":"bench://blob/8","text":"a\"b\\c\n"}]}}"#;
        let t = Template::new(line, 42).expect("a template");
        let later = with_id(std::str::from_utf8(line).expect("utf-8"), "{", 42, 1000);
        assert!(t.matches(&later, 1000));
        for i in 0..later.len() {
            let mut changed = later.clone();
            changed[i] ^= 0x01;
            assert!(!t.matches(&changed, 1000), "byte {i} changed");
        }
        let mut longer = later.clone();
        longer.push(b' ');
        assert!(!t.matches(&longer, 1000));
        assert!(!t.matches(&later[..later.len() - 1], 1000));
        assert!(!t.matches(b"", 1000));
    }

    #[test]
    fn template_needs_one_top_level_id_with_the_sent_value() {
        for (line, id) in [
            (&br#"{"jsonrpc":"2.0","id":7,"result":{}}"#[..], 8),
            (br#"{"jsonrpc":"2.0","id":"7","result":{}}"#, 7),
            (br#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#, 7),
            (br#"{"jsonrpc":"2.0","id":07,"result":{}}"#, 7),
            (br#"{"jsonrpc":"2.0","result":{"id":7}}"#, 7),
            (br#"{"jsonrpc":"2.0","id":7,"id":7,"result":{}}"#, 7),
            (br#"{"jsonrpc":"2.0","result":{"x\"id":7}}"#, 7),
            (br#"{"jsonrpc":"2.0","x\"id":7,"result":{}}"#, 7),
        ] {
            assert!(Template::new(line, id).is_none(), "{}", String::from_utf8_lossy(line));
        }
        assert!(Template::new(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#, 7).is_some());
    }
}

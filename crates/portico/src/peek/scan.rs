//! The params' common shape, read without a second validating parse.
//!
//! The text comes from a `RawValue`, so it is valid JSON: a value can be skipped by its
//! structure alone (quotes, escapes, brackets), which costs a fraction of what serde's
//! validating pass does on the same bytes. The scan reads only what it can read exactly as the
//! serde path would, and declines (`None`) everything else: params that are not an object, an
//! escaped member name, a `_meta` that is not an object or `null`, a protocol version that is not
//! a plain string, a repeated member the protocol forbids. [`ParamsPeek::read`] then decodes them
//! with serde, which gives the result or the error. `arguments` is read by serde in any case (a
//! handler takes it as a `RawValue`), so its bytes are still parsed once here, not twice.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Member, MetaKey, ParamsPeek, RequestMeta};

/// A position in valid JSON text.
struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn byte(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.byte() {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.byte()? == c).then(|| self.i += 1)
    }

    /// At a string's opening quote: its text when it has no escapes (the cursor then past its
    /// closing quote), or `None`.
    #[inline]
    fn plain_string(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let k = quote_or_backslash(b.get(start..)?)?;
        if b.get(start + k) != Some(&b'"') {
            return None;
        }
        self.i = start + k + 1;
        self.s.get(start..start + k)
    }

    /// At a string's opening quote: moves past its closing quote.
    #[inline]
    fn skip_string(&mut self) -> Option<()> {
        let b = self.s.as_bytes();
        self.i += 1;
        loop {
            self.i += quote_or_backslash(b.get(self.i..)?)?;
            if b.get(self.i) == Some(&b'"') {
                self.i += 1;
                return Some(());
            }
            // A backslash and the character it escapes (ASCII in valid JSON).
            self.i += 2;
        }
    }

    /// Skips one value and returns its text.
    fn value(&mut self) -> Option<&'a str> {
        let start = self.i;
        let b = self.s.as_bytes();
        match self.byte()? {
            b'"' => self.skip_string()?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *b.get(self.i)? {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(self.byte(), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.i += 1;
                }
            }
        }
        self.s.get(start..self.i).filter(|v| !v.is_empty())
    }

    /// One value as a `RawValue`, parsed by serde (once: the cursor moves past it).
    fn raw_value(&mut self) -> Option<&'a RawValue> {
        let rest = self.s.get(self.i..)?;
        let raw = <&RawValue>::deserialize(&mut serde_json::Deserializer::from_str(rest)).ok()?;
        // Serde skips no whitespace here (the cursor is at the value), so the value is a prefix.
        if !std::ptr::eq(raw.get().as_ptr(), rest.as_ptr()) {
            return None;
        }
        self.i += raw.get().len();
        Some(raw)
    }

    /// At an object: calls `member` with each member's unescaped name, the cursor at its value
    /// (which `member` consumes). `None` when `member` declines, or a name has escapes.
    #[inline]
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            let name = self.plain_string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, name)?;
            self.ws();
            match self.byte()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// The first `"` or backslash in `b`.
#[inline]
fn quote_or_backslash(b: &[u8]) -> Option<usize> {
    memchr::memchr2(b'"', b'\\', b)
}

/// The params as [`ParamsPeek`] reads them, or `None` when they need the serde path.
pub(super) fn params(json: &str) -> Option<ParamsPeek<'_>> {
    let mut c = Cursor { s: json, i: 0 };
    c.ws();
    let mut p = ParamsPeek::default();
    let mut meta_seen = false;
    c.object(|c, name| {
        let slot = match Member::of(name) {
            Member::Meta if meta_seen => return None,
            Member::Meta => {
                meta_seen = true;
                p.meta = meta(c)?;
                return Some(());
            }
            Member::Arguments => {
                p.repeated |= p.arguments.is_some();
                p.arguments = Some(c.raw_value()?);
                return Some(());
            }
            member => match p.slot(&member) {
                Some(slot) => slot,
                None => return c.value().map(drop),
            },
        };
        *slot = Some(c.value()?);
        Some(())
    })?;
    c.ws();
    (c.i == json.len()).then_some(p)
}

/// A `_meta` as `Option<RequestMeta>` reads it: `null` is none.
fn meta<'a>(c: &mut Cursor<'a>) -> Option<Option<RequestMeta<'a>>> {
    if c.byte()? != b'{' {
        return (c.value()? == "null").then_some(None);
    }
    let mut m = RequestMeta::default();
    c.object(|c, name| {
        let key = MetaKey::known(name).unwrap_or(MetaKey::Other(Cow::Borrowed(name)));
        let slot = match key {
            MetaKey::ProtocolVersion => {
                if m.protocol_version.is_some() {
                    return None;
                }
                // A plain string; `null` is none; anything else is for serde to refuse.
                m.protocol_version = match c.byte()? {
                    b'"' => Some(Cow::Borrowed(c.plain_string()?)),
                    _ if c.value()? == "null" => None,
                    _ => return None,
                };
                return Some(());
            }
            MetaKey::Other(name) => {
                m.other.push((name, c.value()?));
                return Some(());
            }
            key => m.slot(&key)?.0,
        };
        if slot.is_some() {
            return None;
        }
        let v = c.value()?;
        *slot = (v != "null").then_some(v);
        Some(())
    })?;
    Some(Some(m))
}

/// Whether the scan reads `json` (valid JSON text) exactly as serde does, where it reads it at
/// all: the difference, if any (for tests and the `jsonrpc` fuzz target).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn agrees(json: &str) -> Result<(), String> {
    let Some(fast) = params(json) else { return Ok(()) };
    let slow = ParamsPeek::read_slowly(json).map_err(|e| format!("serde refuses what the scan read: {e:?}"))?;
    let (fast, slow) = (summary(&fast), summary(&slow));
    if fast == slow { Ok(()) } else { Err(format!("scan read {fast}, serde {slow}")) }
}

/// Everything a peek read, as text.
#[cfg(any(test, feature = "fuzzing"))]
fn summary(p: &ParamsPeek<'_>) -> String {
    let m = p.meta.as_ref().map(|m| {
        format!(
            "v={:?} caps={:?} info={:?} pt={:?} ll={:?} tp={:?} ts={:?} bg={:?} other={:?}",
            m.protocol_version,
            m.client_capabilities,
            m.client_info,
            m.progress_token,
            m.log_level,
            m.traceparent,
            m.tracestate,
            m.baggage,
            m.other
        )
    });
    format!(
        "meta={m:?} name={:?} uri={:?} task={:?} args={:?} ir={:?} rs={:?} rep={}",
        p.name,
        p.uri,
        p.task_id,
        p.arguments.map(RawValue::get),
        p.input_responses,
        p.request_state,
        p.repeated
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Params the scan reads (`true`) or leaves to serde (`false`); where it reads them, it must
    /// read exactly what serde reads.
    const CASES: &[(&str, bool)] = &[
        (r#"{}"#, true),
        (r#" { } "#, true),
        (r#"{"name":"echo","arguments":{"text":"hi"}}"#, true),
        (
            r#"{"name":"echo","arguments":{"text":"1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"icount","version":"0"}}}"#,
            true,
        ),
        (
            "{\n  \"_meta\" : { \"progressToken\" : 7 , \"acme/x\" : [1, {\"a\":\"}]\\\"\"}], \"n\": null } ,\n \"name\" : \"a\\\"b\" }",
            true,
        ),
        (r#"{"name":"a","x":{"y":[true,false,null,-1.5e3,"\\"]},"name":"b"}"#, true),
        (r#"{"arguments":[1,2],"arguments":{"k":"v"}}"#, true),
        (r#"{"uri":"file:///x","taskId":"t","inputResponses":{"a":{}},"requestState":"s"}"#, true),
        (r#"{"_meta":null,"name":"x"}"#, true),
        (r#"{"_meta":{"progressToken":null,"progressToken":3}}"#, true),
        (r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}"#, true),
        (
            r#"{"_meta":{"traceparent":"00-a-b-01","tracestate":"x=1","baggage":"k=v","io.modelcontextprotocol/logLevel":"debug"}}"#,
            true,
        ),
        (r#"{"name":"é😀","arguments":{"t":"ü\u00e9"}}"#, true),
        (r#"{"requestId":5,"io.modelcontextprotocol/protocolVersion":"x"}"#, true),
        // Left to serde: escaped names, shapes serde refuses or reads otherwise.
        (r#"{"\u005fmeta":{}}"#, false),
        (r#"{"_meta":{"pro\u0067ressToken":1}}"#, false),
        (r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}"#, false),
        (r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#, false),
        (r#"{"_meta":{},"_meta":{}}"#, false),
        (r#"{"_meta":{"progressToken":1,"progressToken":2}}"#, false),
        (r#"{"_meta":[]}"#, false),
        (r#"{"_meta":"x"}"#, false),
        (r#"[{"progressToken":1}]"#, false),
        (r#"null"#, false),
        (r#"7"#, false),
    ];

    #[test]
    fn the_scan_reads_what_serde_reads_or_leaves_the_params_to_it() {
        for (json, scanned) in CASES {
            let raw = RawValue::from_string((*json).to_owned()).expect("valid JSON");
            assert_eq!(params(raw.get()).is_some(), *scanned, "{json}");
            assert_eq!(agrees(raw.get()), Ok(()), "{json}");
            // Whichever path reads them, `read` answers as serde does.
            let read = ParamsPeek::read(Some(&raw));
            assert_eq!(read.as_ref().map(summary).ok(), ParamsPeek::read_slowly(raw.get()).as_ref().map(summary).ok());
        }
    }

    #[test]
    fn values_are_skipped_by_their_structure() {
        for (json, first) in [
            (r#""a\\"b"#, r#""a\\""#),
            (r#""\"}""#, r#""\"}""#),
            (r#"{"a":"]}"}x"#, r#"{"a":"]}"}"#),
            (r#"[[],{}],"#, r#"[[],{}]"#),
            ("-12.5e+3 ,", "-12.5e+3"),
            ("true}", "true"),
        ] {
            let mut c = Cursor { s: json, i: 0 };
            assert_eq!(c.value(), Some(first), "{json}");
        }
        // Text that is not valid JSON never panics: it is declined.
        for bad in [r#"{"a":"#, r#"{"a":"x"#, r#"{"a":[}"#, r#"{"a" 1}"#, r#"{"a":1"#, "{", r#"{"a":"\"#, "}"] {
            assert!(params(bad).is_none(), "{bad}");
        }
    }
}

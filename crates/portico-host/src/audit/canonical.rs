//! Canonical JSON: what the hash chain covers, and the length of a value's JSON.
//!
//! Portico's own, close to RFC 8785: object keys sorted by their UTF-8 bytes, no whitespace,
//! strings escaped as `serde_json` writes them (`"` `\` and control characters only), numbers
//! as `serde_json` writes them. The log stores each record's canonical text as it was hashed.

use std::fmt::Write as _;

use serde_json::Value;

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

pub(crate) fn write_str(out: &mut String, s: &str) {
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

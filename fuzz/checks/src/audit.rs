//! The activity log's canonical JSON (`portico_host::audit::record::canonical_json`), which the
//! hash chain covers: it parses back to the value it came from, is a fixpoint, and equals the
//! naive canonical form written here (members sorted, no whitespace, the same escapes).

use portico_host::audit::record::canonical_json;
use serde_json::Value;

/// The check.
pub fn check(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else { return };
    let c = canonical_json(&v);
    let back: Value = serde_json::from_str(&c).expect("canonical JSON parses");
    // What a verifier recomputes from a stored record must be what was hashed.
    assert_eq!(canonical_json(&back), c, "canonical JSON is not a fixpoint");
    assert_eq!(back, v, "canonical JSON parses back to another value");
    let mut naive = String::new();
    reference(&mut naive, &v);
    assert_eq!(c, naive, "canonical JSON differs from the naive form");
}

fn reference(out: &mut String, v: &Value) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(out, k);
                out.push(':');
                reference(out, &map[k]);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference(out, item);
            }
            out.push(']');
        }
        Value::String(s) => string(out, s),
        other => out.push_str(&other.to_string()),
    }
}

fn string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

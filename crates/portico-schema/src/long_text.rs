//! Faster encoding of long strings (text contents, base64 data) into JSON.
//!
//! `serde_json` escapes a string one byte at a time and hands every run between two escapes
//! to its writer separately; for a 1 MiB text that is most of the cost of a response. The
//! fields that may hold megabytes (`text`, `data`, `blob`) are serialized here instead: when
//! the serializer is `serde_json`'s own and the string is long, the string is escaped eight
//! bytes at a time (each word is searched for `"`, `\` and control characters with bit
//! arithmetic) into a reused per-thread buffer, and handed to `serde_json` as a raw value,
//! which it writes verbatim. The output is byte for byte what `serde_json` writes (the tests
//! compare both); any other serializer (`serde_json::to_value`, YAML, CBOR…) and any short
//! string take the ordinary path.
//!
//! Handing over a raw value without re-parsing it uses the name `serde_json` gives its raw
//! values internally. That name is checked once per process by encoding a probe: should a
//! future `serde_json` change it, the probe fails and long strings take the ordinary path.

use std::cell::RefCell;
use std::sync::OnceLock;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Strings shorter than this take `serde_json`'s path: the gain would not pay for the copy.
const LONG: usize = 4096;

/// The per-thread escape buffer is kept for the next long string while it is at most this
/// large (enough for a 1 MiB text dense with escapes); a larger one is freed after use, so a
/// thread never holds more than this between messages.
const KEEP_BUFFER: usize = 2 << 20;

/// The struct name and field name by which `serde_json` recognises a raw value.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

thread_local! {
    /// Written from the start by each use; its length is how much of it is initialised.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `serialize_with` for a string field that may be long.
pub(crate) fn serialize<S: Serializer>(value: &str, serializer: S) -> Result<S::Ok, S::Error> {
    if value.len() < LONG || !is_serde_json::<S>() || !raw_values_work() {
        return serializer.serialize_str(value);
    }
    // A nested long string (none of ours, but a user's type may hold one) finds the buffer
    // taken and uses a fresh one.
    let mut buf = BUFFER.with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default());
    let len = escape_into(value, &mut buf);
    // Only ASCII bytes were replaced, by ASCII, so this holds; checked rather than assumed.
    let written = match std::str::from_utf8(&buf[..len]) {
        Ok(quoted) => write_raw(quoted, serializer),
        Err(_) => serializer.serialize_str(value),
    };
    if buf.len() <= KEEP_BUFFER {
        BUFFER.with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                *b = buf;
            }
        });
    }
    written
}

/// Writes `json` (a valid JSON text) verbatim through `serde_json`'s raw value path.
fn write_raw<S: Serializer>(json: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let mut raw = serializer.serialize_struct(RAW_TOKEN, 1)?;
    raw.serialize_field(RAW_TOKEN, json)?;
    raw.end()
}

/// Whether `serde_json` writes a raw value handed over as [`write_raw`] does (checked once).
fn raw_values_work() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        struct Probe;
        impl Serialize for Probe {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                write_raw(r#"["\u0041",1]"#, serializer)
            }
        }
        serde_json::to_vec(&[Probe]).is_ok_and(|v| v == br#"[["\u0041",1]]"#)
    })
}

/// Whether `S` is `serde_json`'s writer-backed serializer. Decided by the type's name, a
/// constant of each instantiation: if a future compiler or `serde_json` names it differently,
/// long strings merely take the ordinary path.
fn is_serde_json<S>() -> bool {
    std::any::type_name::<S>().starts_with("&mut serde_json::ser::Serializer<")
}

const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `word` that is zero, and no other bit.
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    !((word & LOWS).wrapping_add(LOWS) | word | LOWS)
}

/// The high bit of each byte of `word` that JSON requires escaped: `"`, `\`, or below 0x20.
#[inline(always)]
fn needs_escape(word: u64) -> u64 {
    const EACH: u64 = 0x0101_0101_0101_0101;
    zero_bytes(word & (EACH * 0xe0))
        | zero_bytes(word ^ (EACH * u64::from(b'"')))
        | zero_bytes(word ^ (EACH * u64::from(b'\\')))
}

/// What each byte becomes after a `\\`: 0 if it is written as is, `u` for `\\u00XX`.
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Room an 8-byte step may need: its worst expansion (8 × `\\u00XX`) and an 8-byte store.
const STEP_ROOM: usize = 8 * 6 + 8;

/// Writes `value` as a JSON string literal, quotes included, escaped exactly as `serde_json`
/// escapes it, into `out` from its start; returns the literal's length. `out` only grows (its
/// bytes past the literal are scratch), so a reused buffer is not cleared on every use.
///
/// Each 8-byte word is stored as a whole; a word holding bytes to escape is stored piecewise,
/// each piece by one unaligned 8-byte store whose excess the next store overwrites.
fn escape_into(value: &str, out: &mut Vec<u8>) -> usize {
    let bytes = value.as_bytes();
    let mut o = 0;
    room(out, o, bytes.len() + bytes.len() / 8);
    out[o] = b'"';
    o += 1;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        if out.len() < o + STEP_ROOM {
            room(out, o, STEP_ROOM + (bytes.len() >> 4));
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let mut mask = needs_escape(w);
        let mut from = 0;
        while mask != 0 {
            let at = (mask.trailing_zeros() / 8) as usize;
            out[o..o + 8].copy_from_slice(&(w >> (8 * from)).to_le_bytes());
            o += at - from;
            o += push_escape(&mut out[o..o + 6], chunk[at]);
            from = at + 1;
            mask &= mask - 1;
        }
        if from < 8 {
            out[o..o + 8].copy_from_slice(&(w >> (8 * from)).to_le_bytes());
            o += 8 - from;
        }
    }
    let tail = words.remainder();
    room(out, o, tail.len() * 6 + 1);
    for &byte in tail {
        if ESCAPES[usize::from(byte)] == 0 {
            out[o] = byte;
            o += 1;
        } else {
            o += push_escape(&mut out[o..o + 6], byte);
        }
    }
    out[o] = b'"';
    o + 1
}

/// Makes `out[at..at + more]` exist (zero-filled when new), growing at least twofold.
#[inline(never)]
fn room(out: &mut Vec<u8>, at: usize, more: usize) {
    let want = at + more;
    if out.len() < want {
        out.resize(want.max(out.len() * 2), 0);
    }
}

/// Writes the escape of `byte` at the start of `out` (at least 6 bytes); returns its length.
#[inline(always)]
fn push_escape(out: &mut [u8], byte: u8) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match ESCAPES[usize::from(byte)] {
        b'u' => {
            out[..6].copy_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
            6
        }
        short => {
            out[0] = b'\\';
            out[1] = short;
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Holder<'a> {
        #[serde(serialize_with = "serialize")]
        text: &'a str,
    }

    /// Every byte that needs an escape, at every offset within a word, amid ASCII and
    /// multi-byte characters.
    fn tricky(len: usize) -> String {
        let pieces =
            ["a", "\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}", "é", "€", "😀", "xyzw"];
        let mut s = String::new();
        let mut i = 0usize;
        while s.len() < len {
            s.push_str(pieces[(i * 7 + i / pieces.len()) % pieces.len()]);
            i += 1;
        }
        s
    }

    fn escaped(s: &str) -> String {
        let mut out = Vec::new();
        let len = escape_into(s, &mut out);
        String::from_utf8(out[..len].to_vec()).expect("UTF-8")
    }

    #[test]
    fn long_strings_encode_exactly_as_serde_json_does() {
        for len in [LONG, LONG + 1, LONG + 7, 3 * LONG + 5, 1 << 20, LONG + 2] {
            let text = tricky(len);
            let ours = serde_json::to_string(&Holder { text: &text }).expect("encodes");
            let theirs = serde_json::to_string(&serde_json::json!({ "text": text })).expect("encodes");
            assert_eq!(ours, theirs, "length {len}");
            assert_eq!(escaped(&text), serde_json::to_string(&text).expect("encodes"));
        }
    }

    #[test]
    fn the_fast_path_is_taken_only_for_serde_json_writers() {
        assert!(is_serde_json::<&mut serde_json::Serializer<Vec<u8>>>());
        assert!(is_serde_json::<&mut serde_json::Serializer<&mut Vec<u8>, serde_json::ser::PrettyFormatter<'_>>>());
        assert!(!is_serde_json::<serde_json::value::Serializer>());
        // Through `to_value` a long string stays a string.
        let text = tricky(2 * LONG);
        let v = serde_json::to_value(Holder { text: &text }).expect("encodes");
        assert_eq!(v["text"].as_str(), Some(text.as_str()));
    }

    #[test]
    fn serde_json_still_writes_raw_values_as_we_hand_them_over() {
        assert!(raw_values_work());
        // Nested in a map and an array, pretty-printed too.
        let text = tricky(LONG + 3);
        let v = serde_json::json!({ "a": [{ "text": text }] });
        #[derive(Serialize)]
        struct Outer<'a> {
            a: [Holder<'a>; 1],
        }
        let ours = Outer { a: [Holder { text: &text }] };
        assert_eq!(serde_json::to_vec_pretty(&ours).expect("encodes"), serde_json::to_vec_pretty(&v).expect("encodes"));
    }

    #[test]
    fn every_byte_value_is_escaped_like_serde_json() {
        let mut s = String::new();
        for round in 0..40u32 {
            for b in 0u8..0x80 {
                s.push(char::from(b));
                if round % 3 == 0 {
                    s.push('ü');
                }
            }
        }
        assert!(s.len() >= LONG);
        assert_eq!(escaped(&s), serde_json::to_string(&s).expect("encodes"));
    }
}

//! Resource contents encoded once and served as the same bytes on every read.

use std::fmt;

use bytes::Bytes;
use portico_schema::{ReadResourceResult, ResourceContents};

/// The start of every encoded read result: `contents` is its first member.
const OPEN: &[u8] = br#"{"contents":["#;
/// The end of a handshake-era read result with nothing but its contents.
const CLOSE: &[u8] = b"]}";
/// A handshake-era read result with no contents.
const EMPTY: &[u8] = br#"{"contents":[]}"#;
/// The `contents` member, empty.
const EMPTY_MEMBER: &[u8] = br#""contents":[]"#;

/// Resource contents encoded to JSON once, then answered without re-encoding.
///
/// A resource read many times — a large document, a generated report, a file kept in memory —
/// costs its encoding on every read when the handler returns [`ResourceContents`]: a 1 MiB text
/// is copied and escaped each time. Build an `EncodedContents` once, keep it (cloning it is a
/// reference-count increment), and return a clone from the handler: in the handshake era every
/// read then answers the same shared bytes, written to the transport without being copied into
/// the response; in 2026-07-28 the result's `resultType`, cache hints and serverInfo are added
/// around them in one copy.
///
/// The contents are fixed when it is built; a handler that must vary them per read returns
/// [`ResourceContents`] instead.
///
/// ```
/// use portico::schema::{ResourceContents, TextResourceContents};
/// use portico::server::EncodedContents;
///
/// let manual = EncodedContents::new([ResourceContents::Text(
///     TextResourceContents::new("docs://manual", "a long text…").with_mime_type("text/markdown"),
/// )]);
/// assert_eq!(manual.contents().len(), 1);
/// ```
#[derive(Clone)]
pub struct EncodedContents {
    /// `{"contents":[…]}`, the whole handshake-era result.
    result: Bytes,
}

impl EncodedContents {
    /// Encodes `contents` (one or more, in order).
    ///
    /// A long text or blob is escaped straight into the encoding, which is allocated once at
    /// about its final size: while it is built, memory holds the contents and their encoding,
    /// nothing more.
    pub fn new(contents: impl IntoIterator<Item = ResourceContents>) -> Self {
        let contents: Vec<ResourceContents> = contents.into_iter().collect();
        let hint: usize = contents.iter().map(encoded_size_hint).sum();
        let mut out = Vec::with_capacity(OPEN.len() + hint + CLOSE.len());
        out.extend_from_slice(OPEN);
        for (i, c) in contents.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_contents(&mut out, c);
        }
        out.extend_from_slice(CLOSE);
        EncodedContents { result: Bytes::from(out) }
    }

    /// The encoded size in bytes of the contents (escaped JSON).
    pub fn encoded_len(&self) -> usize {
        self.result.len() - OPEN.len() - CLOSE.len()
    }

    /// The contents, decoded again (a copy; for inspection and tests).
    pub fn contents(&self) -> Vec<ResourceContents> {
        self.read_result().contents
    }

    /// As a read result (decoded again; for callers outside the server).
    pub(crate) fn read_result(&self) -> ReadResourceResult {
        // These bytes were encoded from `ResourceContents` above.
        serde_json::from_slice(&self.result).unwrap_or_default()
    }

    /// The read result the server would send, given the encoding of the same result with no
    /// contents (`…"contents":[]…`, with whatever the era adds before and after them): the
    /// shared bytes themselves when that is `{"contents":[]}`, otherwise one copy with the
    /// additions around the contents. `None` if the encoding holds no empty `contents` (the
    /// caller then encodes the result itself).
    pub(crate) fn around(&self, empty: &[u8]) -> Option<Bytes> {
        if empty == EMPTY {
            return Some(self.result.clone());
        }
        // `_meta` and unknown members come after `contents`.
        let open = find_member(empty, EMPTY_MEMBER)? + EMPTY_MEMBER.len() - 1;
        let items = &self.result[OPEN.len()..self.result.len() - CLOSE.len()];
        let mut out = Vec::with_capacity(empty.len() + items.len());
        out.extend_from_slice(&empty[..open]);
        out.extend_from_slice(items);
        out.extend_from_slice(&empty[open..]);
        Some(Bytes::from(out))
    }
}

/// Text and blobs at least this long are escaped straight into the encoding.
const LONG: usize = 4096;

/// Appends one contents item.
fn push_contents(out: &mut Vec<u8>, mut c: ResourceContents) {
    let value = match long_member(&mut c) {
        Some((value, _)) if value.len() >= LONG => std::mem::take(value),
        _ => return push_json(out, &c),
    };
    let member = long_member(&mut c).map_or(&b""[..], |(_, member)| member);
    if !push_around_member(out, &c, member, &value) {
        if let Some((field, _)) = long_member(&mut c) {
            *field = value;
        }
        push_json(out, &c);
    }
}

/// The text or base64 field of `c`, and its member as encoded when empty.
fn long_member(c: &mut ResourceContents) -> Option<(&mut String, &'static [u8])> {
    match c {
        ResourceContents::Text(t) => Some((&mut t.text, br#""text":"""#)),
        ResourceContents::Blob(b) => Some((&mut b.blob, br#""blob":"""#)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// Appends `shell` (encoded with `member`, a string member, empty) with `value` in that member.
/// False, and nothing appended, if the encoding has no such member.
fn push_around_member(out: &mut Vec<u8>, shell: &ResourceContents, member: &[u8], value: &str) -> bool {
    let mut encoded = Vec::with_capacity(128);
    push_json(&mut encoded, shell);
    let Some(at) = find_member(&encoded, member) else {
        return false;
    };
    let quotes = at + member.len() - 2;
    out.extend_from_slice(&encoded[..quotes]);
    push_json(out, value);
    out.extend_from_slice(&encoded[quotes + 2..]);
    true
}

/// Appends the JSON encoding of `value`.
fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Resource contents are strings and maps with string keys: encoding them into a Vec
    // cannot fail.
    if let Err(e) = serde_json::to_writer(out, value) {
        unreachable!("resource contents always encode to JSON: {e}");
    }
}

/// Where `member` (`"name":value`) starts as a member of an object in `json`. A string cannot
/// hold an unescaped quote, so a match right after `{` or `,` is a member, not text; the first
/// one is the outermost object's when its members come before any nested object's.
fn find_member(json: &[u8], member: &[u8]) -> Option<usize> {
    json.windows(member.len() + 1).position(|w| (w[0] == b'{' || w[0] == b',') && &w[1..] == member).map(|at| at + 1)
}

/// Bytes one contents item will likely take: its text or base64 plus room for the rest.
fn encoded_size_hint(c: &ResourceContents) -> usize {
    match c {
        // Text grows when escaped; a tenth more covers ordinary text.
        ResourceContents::Text(t) => t.text.len() + t.text.len() / 10 + t.uri.len() + 64,
        ResourceContents::Blob(b) => b.blob.len() + b.uri.len() + 64,
        #[allow(unreachable_patterns)]
        _ => 128,
    }
}

impl fmt::Debug for EncodedContents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncodedContents").field("encoded_len", &self.encoded_len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use portico_schema::{BlobResourceContents, TextResourceContents};

    use super::*;

    fn text(len: usize) -> String {
        (0..len).map(|i| ['a', '"', '\\', '\n', 'é'][i % 5]).collect()
    }

    #[test]
    fn the_handshake_result_is_the_plain_encoding_shared() {
        let c = ResourceContents::Text(TextResourceContents::new("a://b", text(40_000)).with_mime_type("text/plain"));
        let e = EncodedContents::new([c.clone()]);
        let plain = serde_json::to_vec(&ReadResourceResult::new(vec![c.clone()])).expect("encode");
        let answer = e.around(br#"{"contents":[]}"#).expect("contents first");
        assert_eq!(&answer[..], &plain[..]);
        // The same allocation every time: nothing is copied.
        assert_eq!(answer.as_ptr(), e.around(br#"{"contents":[]}"#).expect("again").as_ptr());
        assert_eq!(e.contents(), vec![c]);
    }

    #[test]
    fn what_the_era_adds_around_the_contents_is_kept() {
        let items = vec![
            ResourceContents::Text(TextResourceContents::new("a://1", "one")),
            ResourceContents::Blob(BlobResourceContents::new("a://2", "AAEC")),
        ];
        let e = EncodedContents::new(items.clone());
        let mut full = ReadResourceResult::new(items);
        full.result_type = Some(portico_schema::ResultType::Complete);
        full.ttl_ms = Some(5);
        full.meta = Some(portico_schema::Meta::from_iter([("k".to_owned(), serde_json::json!({"contents": []}))]));
        let mut empty = full.clone();
        empty.contents.clear();
        let empty = serde_json::to_vec(&empty).expect("encode");
        assert!(!empty.starts_with(OPEN), "resultType comes first");
        let answer = e.around(&empty).expect("an empty contents member");
        assert_eq!(&answer[..], &serde_json::to_vec(&full).expect("encode")[..]);
    }

    #[test]
    fn long_texts_and_blobs_encode_as_serde_json_does() {
        let long = text(10_000);
        let mut t = TextResourceContents::new("a://t", long.as_str()).with_mime_type("text/plain");
        t.meta = Some(portico_schema::Meta::from_iter([("text".to_owned(), serde_json::json!(""))]));
        let items = vec![
            ResourceContents::Text(t),
            ResourceContents::Blob(BlobResourceContents::new("a://b", "QUJD".repeat(2_000))),
            ResourceContents::Text(TextResourceContents::new("a://short", "short \"quoted\"")),
        ];
        let e = EncodedContents::new(items.clone());
        let plain = serde_json::to_vec(&ReadResourceResult::new(items.clone())).expect("encode");
        assert_eq!(e.around(EMPTY).as_deref(), Some(&plain[..]));
        assert_eq!(e.contents(), items);
    }

    #[test]
    fn contents_go_where_the_empty_member_is_and_nowhere_else() {
        let e = EncodedContents::new([ResourceContents::Text(TextResourceContents::new("a://1", "one"))]);
        let item = r#"{"uri":"a://1","text":"one"}"#;
        assert_eq!(e.encoded_len(), item.len());
        let answer = e.around(br#"{"resultType":"complete","contents":[],"_meta":{"x":"\"contents\":[]"}}"#);
        assert_eq!(
            answer.as_deref(),
            Some(
                format!(r#"{{"resultType":"complete","contents":[{item}],"_meta":{{"x":"\"contents\":[]"}}}}"#)
                    .as_bytes()
            )
        );
        // Only a member: not a string's text, not a non-empty array.
        assert!(e.around(br#"{"x":"\"contents\":[]"}"#).is_none());
        assert!(e.around(br#"{"contents":[1]}"#).is_none());
        assert!(e.around(b"").is_none());
    }
}

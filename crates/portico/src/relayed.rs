//! [`RelayedToolResult`]: a tool result together with the JSON it was decoded from, so that a
//! relay (a gateway, a proxy) answers with the upstream's bytes instead of encoding the result
//! again.

use std::borrow::Cow;

use portico_schema::CallToolResult;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A tool result and, while it is unchanged, the JSON text it was decoded from.
///
/// A relay receives a result from one server and answers another client with it. Decoding it
/// lets the relay inspect it (validate, review, log); encoding it again costs a second pass over
/// every byte of its content and a second buffer. A `RelayedToolResult` keeps the JSON text
/// that the result was decoded from, and a Portico server answers with that text itself
/// (spliced into the response as it is) when nothing in between changed the result and the
/// client's revision reads it the same way:
///
/// - [`Client::call_tool_relayed_with`](crate::client::Client::call_tool_relayed_with) returns
///   one, with the JSON as the upstream sent it;
/// - a tool handler returns one as
///   [`ToolReply::Relayed`](crate::server::ToolReply::Relayed).
///
/// Any change goes through [`result_mut`](Self::result_mut), which lets go of the JSON: the
/// result is then encoded as usual. The server also encodes the result itself when the JSON
/// is a 2026-07-28 result (it carries the upstream's `resultType`), when the client's revision
/// needs the result rewritten, and when the result has a `_meta` and the client speaks
/// 2026-07-28 (the server's own info goes into it).
///
/// ```
/// use portico::RelayedToolResult;
/// use portico::schema::CallToolResult;
///
/// let json = r#"{"content":[{"type":"text","text":"hi"}]}"#;
/// let mut relayed = RelayedToolResult::decode(json.to_owned()).expect("a tool result");
/// assert_eq!(relayed.json().map(|j| j.get()), Some(json));
/// relayed.result_mut().is_error = Some(true); // a change: the JSON is stale now
/// assert!(relayed.json().is_none());
/// assert_eq!(relayed.into_result(), CallToolResult::text("hi").with_is_error(true));
/// ```
#[derive(Debug, Clone)]
pub struct RelayedToolResult {
    result: CallToolResult,
    json: Option<Box<RawValue>>,
    /// The JSON may name `_meta` or `resultType`, or the decoded `_meta` was changed: the
    /// answer is then made of the JSON's other members and the decoded `_meta`.
    envelope: bool,
}

impl RelayedToolResult {
    /// Decodes `json`, a `CallToolResult` as some server encoded it, and keeps it.
    ///
    /// # Errors
    /// `json` is not a tool result.
    pub fn decode(json: String) -> Result<Self, serde_json::Error> {
        let raw = RawValue::from_string(json)?;
        Self::from_raw(raw)
    }

    /// [`decode`](Self::decode) from JSON text already checked to be one JSON value.
    ///
    /// JSON that spans lines (pretty-printed, as an HTTP server may send it) is not kept: a
    /// line break may not appear in a message on stdio or in one SSE `data` line, so such a
    /// result is encoded again, on one line.
    ///
    /// # Errors
    /// `raw` is not a tool result.
    pub fn from_raw(raw: Box<RawValue>) -> Result<Self, serde_json::Error> {
        let result: CallToolResult = serde_json::from_str(raw.get())?;
        Self::from_decoded(result, raw)
    }

    /// [`from_raw`](Self::from_raw) of a result already decoded from `raw`.
    pub(crate) fn from_decoded(result: CallToolResult, raw: Box<RawValue>) -> Result<Self, serde_json::Error> {
        // In JSON a line break can only be whitespace between tokens: inside a string it is escaped.
        let one_line = !raw.get().contains('\n') && !raw.get().contains('\r');
        let envelope = result.result_type.is_some() || result.meta.is_some() || names_envelope(raw.get())?;
        Ok(RelayedToolResult { result, json: one_line.then_some(raw), envelope })
    }

    /// The result.
    pub fn result(&self) -> &CallToolResult {
        &self.result
    }

    /// The result, to change: the JSON it came as is dropped, since it would no longer say
    /// the same.
    pub fn result_mut(&mut self) -> &mut CallToolResult {
        self.json = None;
        &mut self.result
    }

    /// The result's `_meta`, to change. The JSON is kept: a server answering with it takes
    /// `_meta` (and `resultType`) from the decoded result, never from the JSON.
    pub fn meta_mut(&mut self) -> &mut Option<portico_schema::Meta> {
        self.envelope = true;
        &mut self.result.meta
    }

    /// The JSON text the result was decoded from, while the result is unchanged (its `_meta`
    /// and `resultType` aside: see [`meta_mut`](Self::meta_mut)).
    pub fn json(&self) -> Option<&RawValue> {
        self.json.as_deref()
    }

    /// Whether the answer must be made from the JSON's members rather than the JSON as it is:
    /// the JSON may have a `_meta` or `resultType` of its own, or `_meta` was changed.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn has_envelope(&self) -> bool {
        self.envelope
    }

    /// The result, without its JSON.
    pub fn into_result(self) -> CallToolResult {
        self.result
    }

    /// The result and, while unchanged, its JSON.
    pub fn into_parts(self) -> (CallToolResult, Option<Box<RawValue>>) {
        (self.result, self.json)
    }
}

impl From<CallToolResult> for RelayedToolResult {
    /// A result with no JSON of its own: it is encoded as usual.
    fn from(result: CallToolResult) -> Self {
        RelayedToolResult { result, json: None, envelope: false }
    }
}

/// Whether the JSON object `json` may have a `_meta` or `resultType` member (whatever its
/// value, `null` included). Without a `\u` escape a member name is written as it reads, so a
/// search for the quoted names decides it; with one, the members are read.
fn names_envelope(json: &str) -> Result<bool, serde_json::Error> {
    if !json.contains("\\u") {
        return Ok(json.contains("\"_meta\"") || json.contains("\"resultType\""));
    }
    Ok(members(json)?.iter().any(|(name, _)| name == "_meta" || name == "resultType"))
}

/// The members of the JSON object `json`, in order, their values as written.
pub(crate) fn members(json: &str) -> Result<Vec<(Cow<'_, str>, &RawValue)>, serde_json::Error> {
    struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);
    impl<'de> Deserialize<'de> for Members<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                    let mut out = Vec::new();
                    while let Some((name, value)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                        out.push((name, value));
                    }
                    Ok(Members(out))
                }
            }
            d.deserialize_map(V)
        }
    }
    Ok(serde_json::from_str::<Members<'_>>(json)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_that_is_not_a_tool_result_is_refused() {
        for bad in ["[1]", r#"{"content":"text"}"#, "{", r#"{"content":[],"content":[]}"#] {
            assert!(RelayedToolResult::decode(bad.to_owned()).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_on_several_lines_is_not_kept() {
        let r = RelayedToolResult::decode("{\n  \"content\": []\r\n}".to_owned()).expect("valid");
        assert!(r.json().is_none());
        assert!(r.result().content.is_empty());
        // An escaped line break inside a string is one line.
        let r = RelayedToolResult::decode(r#"{"content":[{"type":"text","text":"a\nb"}]}"#.to_owned()).expect("valid");
        assert!(r.json().is_some());
    }

    #[test]
    fn an_envelope_member_is_found_however_its_name_is_written() {
        for (json, envelope) in [
            (r#"{"content":[]}"#, false),
            (r#"{"content":[],"_meta":{"k":1}}"#, true),
            (r#"{"content":[],"_meta":null}"#, true),
            (r#"{"content":[],"resultType":null}"#, true),
            (r#"{"content":[],"\u005fmeta":null}"#, true),
            (r#"{"content":[{"type":"text","text":"caf\u00e9"}]}"#, false),
            (r#"{"content":[{"type":"text","text":"\"_meta\""}]}"#, false),
            (r#"{"content":[{"type":"text","text":"_meta"}]}"#, true), // only a cost: the members are read
        ] {
            let r = RelayedToolResult::decode(json.to_owned()).expect(json);
            assert_eq!(r.has_envelope(), envelope, "{json}");
        }
    }

    #[test]
    fn unknown_members_are_in_the_decoded_result_too() {
        // What the JSON says beyond the schema is kept in `extra`: whoever inspects the result
        // sees all that the relayed bytes carry.
        let r = RelayedToolResult::decode(r#"{"content":[],"x-vendor":{"a":1}}"#.to_owned()).expect("valid");
        assert_eq!(r.result().extra.get("x-vendor"), Some(&serde_json::json!({"a": 1})));
        assert!(r.json().is_some());
    }
}

//! What a transport and the era layer read of a request's params without decoding them: the
//! stateless `_meta` ([`RequestMeta`]) and the members Streamable HTTP headers mirror, in one
//! pass over the params ([`ParamsPeek`]).
//!
//! Both the era layer (`server::era::resolve`) and the Streamable HTTP endpoint read the params
//! through these two types, so a request's `_meta` is decoded once whichever reads it first. See
//! `design/design.md`, "Reading the params once".
//!
//! The params reach this module already validated (a `RawValue` is valid JSON text), so the
//! common shape is read by a structural scan ([`scan`]) that does not validate again; anything
//! unusual (an escaped member name, an ill-typed `_meta`, a repeated member the protocol
//! forbids) goes through serde, which gives the same result or the error.

// Only the server reads requests' params this way.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

mod scan;

use std::borrow::Cow;

use portico_schema::{
    ErrorObject, LoggingLevel, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    ProgressToken,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The members of a request's `_meta` that decide its era, borrowed from the params. The
/// capabilities and client info stay raw JSON text (the era layer decodes them only when they differ
/// from the last ones seen), and so do the progress token and log level
/// ([`decode_loose`](Self::decode_loose)), so that a transport reading `_meta` for its own
/// checks does not fail on them. The members the protocol does not define are kept raw in
/// [`other`](Self::other) (no allocation when there are none).
#[derive(Default)]
pub(crate) struct RequestMeta<'a> {
    /// Present only in a stateless-era (2026-07-28) request.
    pub protocol_version: Option<Cow<'a, str>>,
    /// Each of these is the member's JSON text (valid JSON, `null` read as absent).
    pub client_capabilities: Option<&'a str>,
    pub client_info: Option<&'a str>,
    pub progress_token: Option<&'a str>,
    pub log_level: Option<&'a str>,
    /// W3C trace context (raw: a value that is not a string is ignored, not refused).
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
    pub baggage: Option<&'a str>,
    /// Every other member's name and JSON text, in order.
    pub other: Vec<(Cow<'a, str>, &'a str)>,
}

impl<'de> Deserialize<'de> for RequestMeta<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RequestMeta<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a _meta object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta<'de>, A::Error> {
                let mut m = RequestMeta::default();
                while let Some(key) = map.next_key::<MetaKey<'de>>()? {
                    let (slot, name) = match key {
                        MetaKey::ProtocolVersion => {
                            if m.protocol_version.is_some() {
                                return Err(de::Error::duplicate_field(META_PROTOCOL_VERSION));
                            }
                            m.protocol_version = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0);
                            continue;
                        }
                        MetaKey::Other(name) => {
                            m.other.push((name, map.next_value::<&'de RawValue>()?.get()));
                            continue;
                        }
                        key => match m.slot(&key) {
                            Some(slot) => slot,
                            // The protocol version and other members are matched above.
                            None => {
                                map.next_value::<de::IgnoredAny>()?;
                                continue;
                            }
                        },
                    };
                    if slot.is_some() {
                        return Err(de::Error::duplicate_field(name));
                    }
                    *slot = map.next_value::<Option<&'de RawValue>>()?.map(RawValue::get);
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON string, borrowed when it has no escapes (a `Cow<str>` field borrows only with
/// `#[serde(borrow)]`, which a hand-written visitor does not have).
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    #[inline]
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            #[inline]
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A member name of a `_meta`, borrowed when it has no escapes.
enum MetaKey<'a> {
    ProtocolVersion,
    ClientCapabilities,
    ClientInfo,
    ProgressToken,
    LogLevel,
    Traceparent,
    Tracestate,
    Baggage,
    Other(Cow<'a, str>),
}

impl<'a> MetaKey<'a> {
    #[inline]
    fn known(v: &str) -> Option<MetaKey<'a>> {
        Some(match v {
            META_PROTOCOL_VERSION => MetaKey::ProtocolVersion,
            META_CLIENT_CAPABILITIES => MetaKey::ClientCapabilities,
            META_CLIENT_INFO => MetaKey::ClientInfo,
            "progressToken" => MetaKey::ProgressToken,
            META_LOG_LEVEL => MetaKey::LogLevel,
            "traceparent" => MetaKey::Traceparent,
            "tracestate" => MetaKey::Tracestate,
            "baggage" => MetaKey::Baggage,
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for MetaKey<'de> {
    #[inline]
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = MetaKey<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            #[inline]
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<MetaKey<'de>, E> {
                Ok(MetaKey::known(v).unwrap_or(MetaKey::Other(Cow::Borrowed(v))))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MetaKey<'de>, E> {
                Ok(MetaKey::known(v).unwrap_or_else(|| MetaKey::Other(Cow::Owned(v.to_owned()))))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'a> RequestMeta<'a> {
    /// The slot of a member kept as JSON text, and its name; `None` for the protocol version and
    /// the members the protocol does not define, which are kept otherwise.
    fn slot(&mut self, key: &MetaKey<'_>) -> Option<(&mut Option<&'a str>, &'static str)> {
        Some(match key {
            MetaKey::ClientCapabilities => (&mut self.client_capabilities, META_CLIENT_CAPABILITIES),
            MetaKey::ClientInfo => (&mut self.client_info, META_CLIENT_INFO),
            MetaKey::ProgressToken => (&mut self.progress_token, "progressToken"),
            MetaKey::LogLevel => (&mut self.log_level, META_LOG_LEVEL),
            MetaKey::Traceparent => (&mut self.traceparent, "traceparent"),
            MetaKey::Tracestate => (&mut self.tracestate, "tracestate"),
            MetaKey::Baggage => (&mut self.baggage, "baggage"),
            MetaKey::ProtocolVersion | MetaKey::Other(_) => return None,
        })
    }

    /// The W3C trace context, when the `_meta` carries one.
    pub fn trace(&self) -> Option<std::sync::Arc<crate::trace::TraceContext>> {
        if self.traceparent.is_none() && self.tracestate.is_none() && self.baggage.is_none() {
            return None;
        }
        let text = |r: Option<&str>| r.and_then(|r| serde_json::from_str::<String>(r).ok());
        let (p, s, b) = (text(self.traceparent), text(self.tracestate), text(self.baggage));
        crate::trace::TraceContext::from_parts(p.as_deref(), s.as_deref(), b.as_deref()).map(std::sync::Arc::new)
    }

    /// The members the protocol does not define, owned; `None` when there are none (or one of
    /// them is not valid JSON, which a parser's raw value always is).
    pub fn other_members(&self) -> Option<std::sync::Arc<serde_json::Map<String, serde_json::Value>>> {
        if self.other.is_empty() {
            return None;
        }
        let mut members = serde_json::Map::new();
        for (name, raw) in &self.other {
            members.insert(name.clone().into_owned(), serde_json::from_str(raw).ok()?);
        }
        Some(std::sync::Arc::new(members))
    }

    /// True when the request names a protocol version in `_meta`: the dual-era rule makes it a
    /// stateless-era request, whatever its method.
    pub fn is_stateless(&self) -> bool {
        self.protocol_version.is_some()
    }

    /// `clientCapabilities`, present and an object.
    #[cfg(feature = "http-server")]
    pub fn has_capabilities(&self) -> bool {
        self.client_capabilities.is_some_and(|c| c.starts_with('{'))
    }

    /// The progress token and log level, decoded.
    ///
    /// # Errors
    /// `-32602` when either is present but not what the protocol allows.
    pub fn decode_loose(&self) -> Result<(Option<ProgressToken>, Option<LoggingLevel>), ErrorObject> {
        fn decode<'a, T: Deserialize<'a>>(raw: Option<&'a str>) -> Result<Option<T>, ErrorObject> {
            raw.map(serde_json::from_str).transpose().map_err(invalid)
        }
        Ok((decode(self.progress_token)?, decode(self.log_level)?))
    }
}

/// A request's params read in one pass: its `_meta` ([`RequestMeta`]) and, still raw, the
/// members that name what the request is about (`name`, `uri`, `taskId`) and what a call carries
/// (`arguments`, `inputResponses`, `requestState`). Every other member is skipped unparsed. The
/// raw members are their JSON text; `arguments`, which a handler decodes as a `RawValue`, is one.
///
/// A repeated `_meta` is an error. Of the raw members the last one wins and
/// [`repeated`](Self::repeated) says so: a reader that must reject duplicates (the era layer,
/// whose own decoding of the params does) decodes the params the usual way instead.
#[derive(Default)]
pub(crate) struct ParamsPeek<'a> {
    pub meta: Option<RequestMeta<'a>>,
    pub name: Option<&'a str>,
    pub uri: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub arguments: Option<&'a RawValue>,
    pub input_responses: Option<&'a str>,
    pub request_state: Option<&'a str>,
    /// Some raw member appeared more than once.
    pub repeated: bool,
}

impl<'a> ParamsPeek<'a> {
    /// Reads `params` (none reads as `{}`). Params that cannot hold a `_meta` member are not
    /// scanned at all when only the `_meta` is wanted: see [`may_hold_meta`].
    ///
    /// # Errors
    /// `-32602` when the params are not a JSON object (or a one-element array, read as a
    /// struct's members in order) or their `_meta` is not an object.
    pub fn read(params: Option<&'a RawValue>) -> Result<Self, ErrorObject> {
        match params {
            None => Ok(ParamsPeek::default()),
            Some(p) => match scan::params(p.get()) {
                Some(peek) => Ok(peek),
                None => Self::read_slowly(p.get()),
            },
        }
    }

    /// Reads params with serde: what [`read`](Self::read) does when the scan declines them.
    fn read_slowly(json: &'a str) -> Result<Self, ErrorObject> {
        serde_json::from_str(json).map_err(invalid)
    }

    /// The slot of a member kept as JSON text, the params marked [`repeated`](Self::repeated)
    /// when it is filled already; `None` for the members read otherwise (`_meta`, `arguments`)
    /// or not read at all.
    fn slot(&mut self, member: &Member) -> Option<&mut Option<&'a str>> {
        let slot = match member {
            Member::Name => &mut self.name,
            Member::Uri => &mut self.uri,
            Member::TaskId => &mut self.task_id,
            Member::InputResponses => &mut self.input_responses,
            Member::RequestState => &mut self.request_state,
            Member::Meta | Member::Arguments | Member::RequestId | Member::ProtocolVersion | Member::Other => {
                return None;
            }
        };
        self.repeated |= slot.is_some();
        Some(slot)
    }

    /// A raw member that is a JSON string, as text (borrowed unless it has escapes); `None`
    /// for anything else.
    pub fn string(json: &'a str) -> Option<Cow<'a, str>> {
        match json.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            // A captured value is valid JSON: a string without a backslash is its own text.
            Some(text) if !text.contains('\\') => Some(Cow::Borrowed(text)),
            Some(_) => serde_json::from_str::<String>(json).ok().map(Cow::Owned),
            None => None,
        }
    }

    /// A raw member as an optional value of `T` (`null` reads as absent).
    pub fn decode<T: Deserialize<'a>>(raw: Option<&'a str>) -> Result<Option<T>, ErrorObject> {
        raw.map(serde_json::from_str::<Option<T>>).transpose().map(Option::flatten).map_err(invalid)
    }
}

/// See [`scan::agrees`].
#[cfg(feature = "fuzzing")]
pub(crate) fn scan_agrees(json: &str) -> Result<(), String> {
    scan::agrees(json)
}

fn invalid(e: serde_json::Error) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid params: {e}"))
}

impl<'de> Deserialize<'de> for ParamsPeek<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ParamsPeek<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("params")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamsPeek<'de>, A::Error> {
                let mut p = ParamsPeek::default();
                let mut meta_seen = false;
                while let Some(key) = map.next_key::<Member>()? {
                    let slot = match key {
                        Member::Meta if meta_seen => return Err(de::Error::duplicate_field("_meta")),
                        Member::Meta => {
                            meta_seen = true;
                            p.meta = map.next_value::<Option<RequestMeta<'de>>>()?;
                            continue;
                        }
                        Member::Arguments => {
                            p.repeated |= p.arguments.is_some();
                            p.arguments = Some(map.next_value()?);
                            continue;
                        }
                        key => match p.slot(&key) {
                            Some(slot) => slot,
                            None => {
                                map.next_value::<IgnoredAny>()?;
                                continue;
                            }
                        },
                    };
                    *slot = Some(map.next_value::<&'de RawValue>()?.get());
                }
                Ok(p)
            }
            // As a derived one-member struct would: `[meta]`.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ParamsPeek<'de>, A::Error> {
                let meta = seq
                    .next_element::<Option<RequestMeta<'de>>>()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                Ok(ParamsPeek { meta, ..ParamsPeek::default() })
            }
        }
        d.deserialize_struct("ParamsPeek", &["_meta"], V)
    }
}

/// A member name of the params, matched without allocating (escaped names are unescaped into
/// a scratch buffer by the deserializer, as a derived field identifier's are). The HTTP client
/// reads outgoing params with it too (`requestId`, and the protocol version inside `_meta`).
pub(crate) enum Member {
    Meta,
    Name,
    Uri,
    TaskId,
    Arguments,
    InputResponses,
    RequestState,
    RequestId,
    /// `io.modelcontextprotocol/protocolVersion`.
    ProtocolVersion,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    #[inline]
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            #[inline]
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member, E> {
                Ok(Member::of(v))
            }
        }
        d.deserialize_identifier(V)
    }
}

impl Member {
    /// The member named `v` (unescaped).
    #[inline]
    pub(crate) fn of(v: &str) -> Member {
        match v {
            "_meta" => Member::Meta,
            "name" => Member::Name,
            "uri" => Member::Uri,
            "taskId" => Member::TaskId,
            "arguments" => Member::Arguments,
            "inputResponses" => Member::InputResponses,
            "requestState" => Member::RequestState,
            "requestId" => Member::RequestId,
            META_PROTOCOL_VERSION => Member::ProtocolVersion,
            _ => Member::Other,
        }
    }
}

/// False only when `json` cannot contain a `_meta` member: a `_meta` key is spelled `_meta` or
/// with escapes, so params with neither need no peek at all.
pub(crate) fn may_hold_meta(json: &str) -> bool {
    // Underscores and backslashes are rare in params: look at each instead of running a
    // substring search (whose set-up costs more than the scan on short params).
    let b = json.as_bytes();
    memchr::memchr2_iter(b'_', b'\\', b).any(|i| match b[i] {
        b'_' => b[i..].starts_with(b"_meta"),
        _ => b.get(i + 1) == Some(&b'u'),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_looked_for_only_where_it_may_be() {
        for (json, may) in [
            (r#"{"name":"echo","arguments":{"text":"hi"}}"#, false),
            (r#"{"a_b":1,"c":"x\ny"}"#, false),
            (r#"{"_meta":{}}"#, true),
            (r#"{"x":1,"_meta":{"progressToken":1}}"#, true),
            (r#"{"\u005fmeta":{}}"#, true),
            (r#"{"_"#, false),
            (r#"{"x":"\"#, false),
        ] {
            assert_eq!(may_hold_meta(json), may, "{json}");
        }
    }

    #[test]
    fn one_pass_reads_meta_and_targets_and_flags_repeats() {
        let raw = RawValue::from_string(
            r#"{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7},"x":[1],"name":"b"}"#
                .into(),
        )
        .expect("json");
        let p = ParamsPeek::read(Some(&raw)).expect("peek");
        let meta = p.meta.expect("meta");
        assert!(meta.is_stateless());
        assert_eq!(meta.decode_loose().expect("loose").0, Some(ProgressToken::Number(7)));
        assert_eq!(p.name, Some(r#""b""#));
        assert_eq!(p.name.and_then(ParamsPeek::string).as_deref(), Some("b"));
        assert_eq!(ParamsPeek::string(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(ParamsPeek::string("7"), None);
        assert!(p.repeated);
        let twice = RawValue::from_string(r#"{"_meta":{},"_meta":{}}"#.into()).expect("json");
        assert!(ParamsPeek::read(Some(&twice)).is_err());
    }

    #[test]
    fn members_the_protocol_does_not_define_are_kept_raw_and_only_when_there_are_some() {
        let raw = RawValue::from_string(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1,"traceparent":"x","acme/a":[1,{"b":2}],"c\u0064":null}}"#
                .into(),
        )
        .expect("json");
        let meta = ParamsPeek::read(Some(&raw)).expect("peek").meta.expect("meta");
        let other: Vec<(&str, &str)> = meta.other.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        assert_eq!(other, [("acme/a", r#"[1,{"b":2}]"#), ("cd", "null")]);
        assert!(matches!(meta.other[0].0, Cow::Borrowed(_)), "an unescaped name is borrowed");
        let owned = meta.other_members().expect("some");
        assert_eq!(
            serde_json::Value::Object((*owned).clone()),
            serde_json::json!({"acme/a": [1, {"b": 2}], "cd": null})
        );
        // Only the protocol's members: nothing kept, nothing allocated.
        let raw = RawValue::from_string(r#"{"_meta":{"progressToken":1,"baggage":"k=v"}}"#.into()).expect("json");
        let meta = ParamsPeek::read(Some(&raw)).expect("peek").meta.expect("meta");
        assert_eq!(meta.other.capacity(), 0);
        assert!(meta.other_members().is_none());
    }
}

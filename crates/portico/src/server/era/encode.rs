//! Step 4 of a request: its result stamped for its era and encoded. Stateless-era results get
//! their `resultType`, cache hints and the server's info in `_meta` (spliced in as bytes encoded
//! once per server); handshake-era results are rewritten for an older revision only where that
//! changes them.

use portico_schema::{
    CallToolResult, ErrorObject, META_SERVER_INFO, Meta, ProtocolVersion, ResultEnvelope, ResultType,
};
use serde::Serialize;

use super::{Era, EraLayer};
use crate::rpc::{Reply, ResultBytes};
use crate::server::downgrade;

impl EraLayer {
    /// A tool result, stamped and encoded, rewritten for an older revision only if needed.
    pub(super) fn finish_tool_result(&self, r: CallToolResult, era: &Era) -> Reply {
        let down = downgrade::for_call_tool_result(&r, era.version);
        self.finish_with(r, era, down)
    }

    /// A relayed tool result: answered with the JSON it came as where the client's revision
    /// reads that the same, else encoded like any result.
    ///
    /// The JSON's members go out as they were written. When the JSON has no `_meta` or
    /// `resultType` of its own, it is the answer (a handshake-era client) or is stamped around
    /// (2026-07-28: `resultType` in front, the server's info as `_meta` at the end). Otherwise
    /// the answer is made of its other members, as written, and the decoded `_meta`. A client
    /// whose revision needs the result rewritten gets it encoded.
    pub(super) fn finish_relayed_tool_result(&self, r: crate::RelayedToolResult, era: &Era) -> Reply {
        let envelope = r.has_envelope();
        let (r, json) = r.into_parts();
        let Some(json) = json else {
            return self.finish_tool_result(r, era);
        };
        let stateless = era.version.is_stateless();
        if !stateless
            && era.version < ProtocolVersion::V2025_11_25
            && downgrade::for_call_tool_result(&r, era.version).is_some()
        {
            return self.finish_tool_result(r, era);
        }
        let info = &self.server.inner;
        if !envelope {
            return Ok(if stateless {
                stamp_relayed(json.get(), &info.info_meta)
            } else {
                // The text itself becomes the reply: no copy.
                String::from(Box::<str>::from(json)).into_bytes().into()
            });
        }
        let mut meta = r.meta;
        // A 2026-07-28 result as a Portico upstream writes it: its middle is cut out whole;
        // any other shape has its members read.
        let middle = between_envelope(json.get());
        if let (Some(middle), true, None) = (middle, stateless, &meta) {
            return Ok(stamped(middle, &info.info_meta));
        }
        if stateless {
            meta.get_or_insert_with(Meta::new).insert(META_SERVER_INFO.to_owned(), info.info_json.clone());
        }
        let built = match middle {
            Some(middle) => from_middle(middle, stateless, meta.as_ref()),
            None => rebuild_relayed(json.get(), stateless, meta.as_ref()),
        };
        built.map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
    }

    /// Stamps a result for its era and encodes it.
    pub(super) fn finish<R: Serialize + ResultEnvelope>(&self, r: R, era: &Era) -> Reply {
        self.finish_with(r, era, None)
    }

    pub(super) fn finish_with<R: Serialize + ResultEnvelope>(
        &self,
        mut r: R,
        era: &Era,
        down: Option<downgrade::Downgrade>,
    ) -> Reply {
        if era.version.is_stateless() {
            let rt = r.result_type_mut();
            if rt.is_none() {
                *rt = Some(ResultType::Complete);
            }
            let complete = *rt == Some(ResultType::Complete);
            let config = &self.server.inner.config;
            if let Some((ttl, scope)) = r.cache_mut()
                && complete
            {
                ttl.get_or_insert(config.ttl_ms);
                scope.get_or_insert(config.cache_scope);
            }
            if r.meta_mut().is_some() {
                let info = self.server.inner.info_json.clone();
                r.meta_mut().get_or_insert_with(Meta::new).insert(META_SERVER_INFO.to_owned(), info);
                return encode(&r);
            }
            // No `_meta` of its own (the usual case): splice the serverInfo encoded once.
            return encode_with_server_info(&r, &self.server.inner.info_meta);
        }
        *r.result_type_mut() = None;
        encode_for(&r, era.version, down)
    }
}

/// `{…}` → `{…,"_meta":{…serverInfo…}}` in place: `object` is a serialized JSON object without
/// `_meta` (anything else is left as it is).
fn splice_server_info(object: &mut Vec<u8>, info_meta: &[u8]) {
    if object.last() != Some(&b'}') {
        return;
    }
    object.pop();
    if object.len() > 1 {
        object.push(b',');
    }
    object.reserve(info_meta.len() + 9);
    object.extend_from_slice(b"\"_meta\":");
    object.extend_from_slice(info_meta);
    object.push(b'}');
}

/// `{…}` (a JSON object without `resultType` or `_meta`) → `{"resultType":"complete",…,"_meta":{…serverInfo…}}`,
/// in one buffer.
fn stamp_relayed(object: &str, info_meta: &[u8]) -> ResultBytes {
    let middle = object.strip_prefix('{').and_then(|o| o.strip_suffix('}')).unwrap_or(object);
    stamped(middle, info_meta)
}

/// `{"resultType":"complete",MIDDLE,"_meta":{…serverInfo…}}`: `middle` is members as written
/// (none when it is blank).
fn stamped(middle: &str, info_meta: &[u8]) -> ResultBytes {
    let mut out = Vec::with_capacity(middle.len() + info_meta.len() + 40);
    out.extend_from_slice(STAMP);
    if !middle.trim().is_empty() {
        out.push(b',');
        out.extend_from_slice(middle.as_bytes());
    }
    out.push(b'}');
    splice_server_info(&mut out, info_meta);
    out.into()
}

/// The members of `object` between a leading `"resultType":"complete"` and a trailing
/// top-level `_meta`, as written: the shape of a 2026-07-28 result as Portico writes it. `None`
/// for any other shape.
///
/// The bytes `,"_meta":` cannot occur inside a JSON string (its quotes would be escaped), so the
/// last of them starts a `_meta` member; it is the top-level object's last member when its
/// value ends right before the text's final `}`.
fn between_envelope(object: &str) -> Option<&str> {
    const HEAD: &str = r#"{"resultType":"complete","#;
    const META: &str = r#","_meta":"#;
    let rest = object.strip_prefix(HEAD)?;
    let at = rest.rfind(META)?;
    let value = rest[at + META.len()..].strip_suffix('}')?;
    serde_json::from_str::<&serde_json::value::RawValue>(value).ok()?;
    Some(&rest[..at])
}

/// The opening of a 2026-07-28 result: `{` and its `resultType`.
const STAMP: &[u8] = br#"{"resultType":"complete""#;

/// A relayed result made of `middle` (members as written, without `resultType` or `_meta`),
/// with `"resultType":"complete"` first when `stateless`, and `meta` last.
fn from_middle(middle: &str, stateless: bool, meta: Option<&Meta>) -> Result<ResultBytes, serde_json::Error> {
    assemble(stateless, meta, middle.len(), |out| {
        if !middle.is_empty() {
            comma(out);
            out.extend_from_slice(middle.as_bytes());
        }
        Ok(())
    })
}

/// A relayed result made of the members of `object` (as written) but its `resultType` and
/// `_meta`, with `"resultType":"complete"` first when `stateless`, and `meta` last.
fn rebuild_relayed(object: &str, stateless: bool, meta: Option<&Meta>) -> Result<ResultBytes, serde_json::Error> {
    let members = crate::relayed::members(object)?;
    assemble(stateless, meta, object.len(), |out| {
        for (name, value) in members.iter().filter(|(name, _)| name != "_meta" && name != "resultType") {
            comma(out);
            serde_json::to_writer(&mut *out, name.as_ref())?;
            out.push(b':');
            out.extend_from_slice(value.get().as_bytes());
        }
        Ok(())
    })
}

/// `{`, the stamp when `stateless`, what `members` writes, `meta` as `_meta`, `}`.
fn assemble(
    stateless: bool,
    meta: Option<&Meta>,
    size: usize,
    members: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> Result<ResultBytes, serde_json::Error> {
    let mut out = Vec::with_capacity(size + 128);
    if stateless {
        out.extend_from_slice(STAMP);
    } else {
        out.push(b'{');
    }
    members(&mut out)?;
    if let Some(meta) = meta {
        comma(&mut out);
        out.extend_from_slice(br#""_meta":"#);
        serde_json::to_writer(&mut out, meta)?;
    }
    out.push(b'}');
    Ok(out.into())
}

/// A `,` before a member that is not the object's first.
fn comma(out: &mut Vec<u8>) {
    if out.len() > 1 {
        out.push(b',');
    }
}

/// Encodes a stateless result without `_meta` of its own, with the serverInfo `_meta` spliced
/// in (encoded once per server): one buffer, no re-encoding.
fn encode_with_server_info<R: Serialize>(r: &R, info_meta: &[u8]) -> Reply {
    // Room for a short result and the splice, so that the usual result is written once.
    let mut out = Vec::with_capacity(128 + info_meta.len());
    serde_json::to_writer(&mut out, r)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))?;
    splice_server_info(&mut out, info_meta);
    Ok(out.into())
}

pub(super) fn encode<R: Serialize>(r: &R) -> Reply {
    serde_json::to_vec(r)
        .map(ResultBytes::from)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))
}

/// Encodes for a handshake-era revision, adapting fields an older revision lacks (`down`; `None`
/// when nothing needs adapting, the result then going straight to bytes).
pub(super) fn encode_for<R: Serialize>(r: &R, version: ProtocolVersion, down: Option<downgrade::Downgrade>) -> Reply {
    let Some(down) = down.filter(|_| version < ProtocolVersion::V2025_11_25) else {
        return encode(r);
    };
    let mut v =
        serde_json::to_value(r).map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))?;
    down(&mut v, version);
    encode(&v)
}

#[cfg(test)]
mod tests {
    use super::{rebuild_relayed, splice_server_info, stamp_relayed};

    #[test]
    fn the_middle_of_a_portico_shaped_result_is_cut_out_only_when_sure() {
        use super::between_envelope;
        let meta = r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}"#;
        let ok = format!(r#"{{"resultType":"complete","content":[{{"type":"text","text":"a,\"_meta\":b"}}],{meta}}}"#);
        assert_eq!(between_envelope(&ok), Some(r#""content":[{"type":"text","text":"a,\"_meta\":b"}]"#));
        assert_eq!(between_envelope(&format!(r#"{{"resultType":"complete",{meta}}}"#)), None);
        for other in [
            // `_meta` not last, or nested only, or no `resultType` first.
            format!(r#"{{"resultType":"complete",{meta},"content":[]}}"#),
            r#"{"resultType":"complete","content":[],"x":{"a":1,"_meta":{}}}"#.to_owned(),
            format!(r#"{{"content":[],{meta}}}"#),
            r#"{"resultType":"complete","content":[]}"#.to_owned(),
        ] {
            assert_eq!(between_envelope(&other), None, "{other}");
        }
    }

    #[test]
    fn a_relayed_result_with_an_envelope_is_made_of_its_other_members() {
        let object = r#"{"resultType":"complete","content":[{"type":"text","text":"\/"}],"_meta":{"up":1},"x":null}"#;
        let mut meta = portico_schema::Meta::new();
        meta.insert("k".to_owned(), serde_json::json!("v"));
        let handshake = rebuild_relayed(object, false, Some(&meta)).expect("valid");
        assert_eq!(&handshake[..], br#"{"content":[{"type":"text","text":"\/"}],"x":null,"_meta":{"k":"v"}}"#);
        let stateless = rebuild_relayed(object, true, None).expect("valid");
        assert_eq!(&stateless[..], br#"{"resultType":"complete","content":[{"type":"text","text":"\/"}],"x":null}"#);
        // A name written with escapes is the same name.
        let escaped = rebuild_relayed(r#"{"\u005fmeta":{"up":1},"content":[]}"#, false, None).expect("valid");
        assert_eq!(&escaped[..], br#"{"content":[]}"#);
    }

    #[test]
    fn a_relayed_result_is_stamped_around_its_own_text() {
        let meta = br#"{"io.modelcontextprotocol/serverInfo":{"name":"s"}}"#;
        let info = serde_json::json!({"io.modelcontextprotocol/serverInfo": {"name": "s"}});
        for (object, want) in [
            (
                r#"{"content":[{"type":"text","text":"}"}]}"#,
                serde_json::json!({"resultType": "complete", "content": [{"type": "text", "text": "}"}], "_meta": info}),
            ),
            (r#"{ "isError" : true }"#, serde_json::json!({"resultType": "complete", "isError": true, "_meta": info})),
            ("{ }", serde_json::json!({"resultType": "complete", "_meta": info})),
        ] {
            let stamped = stamp_relayed(object, meta);
            let got: serde_json::Value = serde_json::from_slice(&stamped).expect("valid JSON");
            assert_eq!(got, want, "{object}");
        }
    }

    #[test]
    fn server_info_is_spliced_into_any_object() {
        let meta = br#"{"io.modelcontextprotocol/serverInfo":{"name":"s"}}"#;
        for (object, want) in [
            (&br#"{}"#[..], serde_json::json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}})),
            (
                &br#"{"a":1}"#[..],
                serde_json::json!({"a": 1, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}}),
            ),
        ] {
            let mut spliced = object.to_vec();
            splice_server_info(&mut spliced, meta);
            let got: serde_json::Value = serde_json::from_slice(&spliced).expect("valid JSON");
            assert_eq!(got, want);
        }
    }
}

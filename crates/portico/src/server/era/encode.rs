//! Step 4 of a request: its result stamped for its era and encoded. Stateless-era results get
//! their `resultType`, cache hints and the server's info in `_meta` (spliced in as bytes encoded
//! once per server); handshake-era results are rewritten for an older revision only where that
//! changes them.

use bytes::Bytes;
use portico_schema::{
    CallToolResult, ErrorObject, META_SERVER_INFO, Meta, ProtocolVersion, ResultEnvelope, ResultType,
};
use serde::Serialize;

use super::{Era, EraLayer};
use crate::rpc::Reply;
use crate::server::downgrade;

impl EraLayer {
    /// A tool result, stamped and encoded, rewritten for an older revision only if needed.
    pub(super) fn finish_tool_result(&self, r: CallToolResult, era: &Era) -> Reply {
        let down = downgrade::for_call_tool_result(&r, era.version);
        self.finish_with(r, era, down)
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

/// Encodes a stateless result without `_meta` of its own, with the serverInfo `_meta` spliced
/// in (encoded once per server): one buffer, no re-encoding.
fn encode_with_server_info<R: Serialize>(r: &R, info_meta: &[u8]) -> Reply {
    // Room for a short result and the splice, so that the usual result is written once.
    let mut out = Vec::with_capacity(128 + info_meta.len());
    serde_json::to_writer(&mut out, r)
        .map_err(|e| ErrorObject::internal_error(format!("cannot encode the result: {e}")))?;
    splice_server_info(&mut out, info_meta);
    Ok(Bytes::from(out))
}

pub(super) fn encode<R: Serialize>(r: &R) -> Reply {
    serde_json::to_vec(r)
        .map(Bytes::from)
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
    use super::splice_server_info;

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

//! Stateless-era (2026-07-28) request headers: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//! and `Mcp-Param-*` must agree with the body, or the request is refused with `-32020`.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use portico_schema::{ErrorObject, JsonObject};
use serde_json::Value;

use crate::server::registry::mirrored_params;

// `HeaderName`s, so that looking them up does not parse the name again.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(crate) const PARAM_PREFIX: &str = "mcp-param-";

/// Decodes a header value: `=?base64?…?=` carries non-ASCII or unsafe values.
pub(crate) fn decode_value(raw: &str) -> Option<Cow<'_, str>> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(b64) => STANDARD.decode(b64).ok().and_then(|b| String::from_utf8(b).ok()).map(Cow::Owned),
        None => Some(Cow::Borrowed(raw)),
    }
}

fn header<N>(headers: &HeaderMap, name: N) -> Result<Option<&str>, ErrorObject>
where
    N: http::header::AsHeaderName + std::fmt::Display + Copy,
{
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| mismatch(format!("header {name} has invalid characters"))),
    }
}

fn mismatch(message: impl Into<String>) -> ErrorObject {
    ErrorObject::header_mismatch(message.into())
}

/// The body facts the headers are compared with.
pub(crate) struct BodyFacts<'a> {
    pub version: &'a str,
    pub method: &'a str,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    pub name: Option<&'a str>,
    /// For tools/call: the arguments and the tool's input schema.
    pub tool: Option<(Option<&'a JsonObject>, &'a JsonObject)>,
}

/// Checks every mirrored header against the body.
pub(crate) fn validate(headers: &HeaderMap, body: &BodyFacts<'_>) -> Result<(), ErrorObject> {
    match header(headers, &PROTOCOL_VERSION)? {
        Some(v) if v == body.version => {}
        Some(v) => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version {v} does not match _meta protocolVersion {}",
                body.version
            )));
        }
        None => return Err(mismatch("missing MCP-Protocol-Version header")),
    }
    match header(headers, &METHOD)? {
        Some(m) if m == body.method => {}
        Some(m) => return Err(mismatch(format!("Mcp-Method {m} does not match method {}", body.method))),
        None => return Err(mismatch("missing Mcp-Method header")),
    }
    if let Some(name) = body.name {
        match header(headers, &NAME)?.map(decode_value) {
            Some(Some(h)) if h == name => {}
            Some(_) => return Err(mismatch("Mcp-Name does not match the body")),
            None => return Err(mismatch("missing Mcp-Name header")),
        }
    }
    if let Some((args, schema)) = body.tool {
        for (prop, header_name) in mirrored_params(schema) {
            let expected = args.and_then(|a| a.get(prop)).filter(|v| !v.is_null());
            let got = header(headers, &format!("{PARAM_PREFIX}{}", header_name.to_ascii_lowercase()))?;
            match (expected, got) {
                (None, None) => {}
                (Some(v), Some(h)) if param_matches(v, h) => {}
                (Some(_), None) => return Err(mismatch(format!("missing Mcp-Param-{header_name} header"))),
                _ => return Err(mismatch(format!("Mcp-Param-{header_name} does not match argument {prop}"))),
            }
        }
    }
    Ok(())
}

fn param_matches(value: &Value, header: &str) -> bool {
    let Some(decoded) = decode_value(header) else { return false };
    match value {
        Value::String(s) => *s == decoded,
        Value::Bool(b) => decoded == if *b { "true" } else { "false" },
        // Integers compare numerically (so "007" = 7); `number` is not allowed to be mirrored.
        Value::Number(n) => match (n.as_i64(), decoded.parse::<i64>()) {
            (Some(a), Ok(b)) => a == b,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn h(pairs: &[(HeaderName, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(k.clone(), HeaderValue::from_str(v).expect("value"));
        }
        m
    }

    #[test]
    fn headers_must_mirror_the_body() {
        let facts = BodyFacts { version: "2026-07-28", method: "tools/call", name: Some("héllo"), tool: None };
        let ok = h(&[(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/call"), (NAME, "=?base64?aMOpbGxv?=")]);
        assert!(validate(&ok, &facts).is_ok());
        let code = |m: &HeaderMap| validate(m, &facts).err().map(|e| e.code.0);
        assert_eq!(code(&h(&[(METHOD, "tools/call"), (NAME, "x")])), Some(-32020));
        assert_eq!(
            code(&h(&[(PROTOCOL_VERSION, "2025-11-25"), (METHOD, "tools/call"), (NAME, "héllo")])),
            Some(-32020)
        );
        assert_eq!(
            code(&h(&[(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/list"), (NAME, "=?base64?aMOpbGxv?=")])),
            Some(-32020)
        );
        assert_eq!(
            code(&h(&[(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/call"), (NAME, "other")])),
            Some(-32020)
        );
    }

    #[test]
    fn mirrored_params_compare_by_type() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "plain": {"type": "string"}
        }});
        let schema = schema.as_object().expect("object");
        let base = [(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/call"), (NAME, "t")];
        let check = |args: Value, extra: &[(HeaderName, &str)]| {
            let mut pairs = base.to_vec();
            pairs.extend_from_slice(extra);
            let args = args.as_object().cloned();
            let facts = BodyFacts {
                version: "2026-07-28",
                method: "tools/call",
                name: Some("t"),
                tool: Some((args.as_ref(), schema)),
            };
            validate(&h(&pairs), &facts).is_ok()
        };
        assert!(check(
            json!({"region": "eu", "count": 7, "dry": true}),
            &[
                (HeaderName::from_static("mcp-param-region"), "eu"),
                (HeaderName::from_static("mcp-param-count"), "007"),
                (HeaderName::from_static("mcp-param-dry"), "true")
            ]
        ));
        assert!(check(json!({"plain": "x"}), &[]), "absent values need no header");
        assert!(!check(json!({"region": "eu"}), &[]), "a mirrored value needs its header");
        assert!(!check(json!({"region": "eu"}), &[(HeaderName::from_static("mcp-param-region"), "us")]));
        assert!(!check(json!({}), &[(HeaderName::from_static("mcp-param-region"), "eu")]), "a header without a value");
        assert!(!check(json!({"dry": false}), &[(HeaderName::from_static("mcp-param-dry"), "False")]));
    }
}

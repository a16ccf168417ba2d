//! `WWW-Authenticate` challenges and OAuth metadata (`portico::auth`): a parsed challenge,
//! written back as a header, parses to the same challenge; metadata documents that decode
//! encode and decode to the same value; resource URIs are canonical after one pass.

use portico::auth::{
    AuthorizationServerMetadata, BearerChallenge, ProtectedResourceMetadata, authorization_server_metadata_urls,
    canonical_resource, protected_resource_metadata_urls, resource_matches,
};
use portico::fuzzing::offers_dpop;
use reqwest::Url;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn quoted(out: &mut String, name: &str, v: &Option<String>) {
    if let Some(v) = v {
        out.push_str(&format!(", {name}=\""));
        for ch in v.chars() {
            if ch == '"' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
        out.push('"');
    }
}

fn challenge(header: &str) {
    let _ = offers_dpop(header);
    let Some(c) = BearerChallenge::parse(header) else { return };
    let mut again = String::from("Bearer realm=\"mcp\"");
    quoted(&mut again, "error", &c.error);
    quoted(&mut again, "error_description", &c.error_description);
    quoted(&mut again, "scope", &c.scope);
    quoted(&mut again, "resource_metadata", &c.resource_metadata);
    assert_eq!(BearerChallenge::parse(&again).as_ref(), Some(&c), "{header:?} written back as {again:?}");
}

fn metadata<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(json: &[u8]) {
    let Ok(m) = serde_json::from_slice::<T>(json) else { return };
    let text = serde_json::to_string(&m).expect("metadata encodes");
    let again: T = serde_json::from_str(&text).expect("encoded metadata decodes");
    assert_eq!(again, m);
}

fn urls(text: &str) {
    let server = Url::parse("https://mcp.example.com/api/mcp").expect("URL");
    let _ = resource_matches(text, &server);
    let Ok(u) = Url::parse(text) else { return };
    let c = canonical_resource(&u);
    // MCP servers are http(s) URLs: only those have an origin equal to itself, and only their
    // canonical form is held to be a fixpoint (an opaque `x:y /` loses its space when parsed).
    if let Ok(cu) = Url::parse(&c)
        && matches!(cu.scheme(), "http" | "https")
    {
        assert_eq!(canonical_resource(&cu), c, "canonical_resource is not a fixpoint for {text:?}");
        assert!(resource_matches(&c, &cu), "{c:?} does not stand for itself");
    }
    let _ = protected_resource_metadata_urls(&u);
    let _ = authorization_server_metadata_urls(&u);
}

/// The check.
pub fn check(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else { return };
    match mode % 4 {
        0 => challenge(&String::from_utf8_lossy(rest)),
        1 => metadata::<AuthorizationServerMetadata>(rest),
        2 => metadata::<ProtectedResourceMetadata>(rest),
        _ => urls(&String::from_utf8_lossy(rest)),
    }
}

//! The least a server can do for the driver's echo: the floor `raw-echo` runs over stdio and the
//! `icount` scenarios `floor-handshake` / `floor-stateless` count in-process.
//!
//! [`answer`] parses a request line once, borrowed, without a tree, and writes a response that
//! has the same bytes as the bench server's. In the handshake era that is all it does. A request
//! whose `params._meta` names a protocol version is a 2026-07-28 (stateless-era) request, and the
//! floor then does what that revision asks of every server and nothing more: it checks the
//! version, requires the client's capabilities, and stamps the result with `resultType` and the
//! server's info. What the stateless era costs the floor more than the handshake era is so the
//! least any server pays for its bytes.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

/// The stateless-era revision.
pub const STATELESS: &str = "2026-07-28";

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<Arguments<'a>>,
    #[serde(borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// What a stateless server must read of every request's `_meta`.
#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<&'a RawValue>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientInfo")]
    _info: Option<&'a RawValue>,
}

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw-echo","version":"0.0.0"}}"#;
const DISCOVER_RESULT: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-echo","version":"0.0.0"}}}"#;
/// The stamp of a stateless result, split around its content (the bench server's layout, with a
/// server name of the same length).
const STATELESS_OPEN: &[u8] = br#"{"resultType":"complete","content":[{"type":"text","text":"#;
const STATELESS_CLOSE: &[u8] =
    br#"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"portico-raw-echo-svr","version":"0.1.0"}}}"#;

/// Answers one request line (without its newline) into `out`, newline included; a notification
/// gets nothing. Malformed input gets a JSON-RPC error, never a panic.
///
/// # Errors
/// Only `out`'s own write errors.
pub fn answer(line: &[u8], out: &mut impl Write) -> io::Result<()> {
    let request: Request<'_> = match serde_json::from_slice(line) {
        Ok(request) => request,
        Err(e) => {
            let message = serde_json::to_string(&format!("parse error: {e}"))?;
            return writeln!(out, r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32700,"message":{message}}}}}"#);
        }
    };
    let Some(id) = request.id else {
        return Ok(()); // a notification
    };
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    out.write_all(id.get().as_bytes())?;
    let (arguments, meta) = match request.params {
        Some(p) => (p.arguments, p.meta),
        None => (None, None),
    };
    let stateless = match meta.as_ref().and_then(|m| m.version.as_deref()) {
        None => false,
        Some(STATELESS) if meta.as_ref().is_some_and(|m| m.capabilities.is_some_and(|c| c.get().starts_with('{'))) => {
            true
        }
        Some(STATELESS) => {
            out.write_all(br#","error":{"code":-32602,"message":"missing _meta clientCapabilities"}}"#)?;
            return out.write_all(b"\n");
        }
        Some(_) => {
            out.write_all(br#","error":{"code":-32602,"message":"unsupported protocol version","data":{"supported":["2026-07-28","2025-11-25"]}}}"#)?;
            return out.write_all(b"\n");
        }
    };
    match request.method.as_ref() {
        "initialize" if !stateless => {
            out.write_all(br#","result":"#)?;
            out.write_all(INIT_RESULT.as_bytes())?;
        }
        "server/discover" if stateless => {
            out.write_all(br#","result":"#)?;
            out.write_all(DISCOVER_RESULT.as_bytes())?;
        }
        "ping" => out.write_all(br#","result":{}"#)?,
        "tools/call" => {
            let text = arguments.and_then(|a| a.text).unwrap_or(Cow::Borrowed(""));
            if stateless {
                out.write_all(br#","result":"#)?;
                out.write_all(STATELESS_OPEN)?;
                serde_json::to_writer(&mut *out, text.as_ref())?;
                out.write_all(STATELESS_CLOSE)?;
            } else {
                out.write_all(br#","result":{"content":[{"type":"text","text":"#)?;
                serde_json::to_writer(&mut *out, text.as_ref())?;
                out.write_all(b"}]}")?;
            }
        }
        _ => out.write_all(br#","error":{"code":-32601,"message":"method not found"}"#)?,
    }
    out.write_all(b"}\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::inproc::{META, check_echo, echo};

    fn answered(line: &[u8]) -> serde_json::Value {
        let mut out = Vec::new();
        answer(line, &mut out).unwrap();
        assert_eq!(out.last(), Some(&b'\n'));
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn both_eras_echo_with_the_bench_servers_layout() {
        for stateless in [false, true] {
            let mut out = Vec::new();
            answer(&echo(7, stateless), &mut out).unwrap();
            assert_eq!(check_echo(&out, Some(7)), 7);
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["result"].get("resultType").is_some(), stateless, "{v}");
            assert_eq!(v["result"].pointer("/_meta/io.modelcontextprotocol~1serverInfo/name").is_some(), stateless);
        }
    }

    #[test]
    fn a_stateless_request_is_checked_as_the_revision_asks() {
        let bad_version = META.replace("2026-07-28", "2099-01-01");
        let v = answered(
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","_meta":{bad_version}}}}}"#
            )
            .as_bytes(),
        );
        assert_eq!(v["error"]["code"], -32602, "{v}");
        let v = answered(
            br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(v["error"]["code"], -32602, "{v}");
        let v = answered(
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{{"_meta":{META}}}}}"#).as_bytes(),
        );
        assert_eq!(v["result"]["supportedVersions"][0], STATELESS, "{v}");
        // Without `_meta` there is no discovery, and the handshake era has no `server/discover`.
        let v = answered(br#"{"jsonrpc":"2.0","id":4,"method":"server/discover"}"#);
        assert_eq!(v["error"]["code"], -32601, "{v}");
    }

    #[test]
    fn malformed_lines_get_an_error_and_notifications_nothing() {
        assert_eq!(answered(b"{not json")["error"]["code"], -32700);
        let mut out = Vec::new();
        answer(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, &mut out).unwrap();
        assert!(out.is_empty());
    }
}

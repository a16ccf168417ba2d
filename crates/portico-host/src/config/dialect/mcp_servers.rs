//! What the JSON dialects share: an entry with `command`, `args`, `env` (stdio) or a URL and
//! `headers` (HTTP), told apart by a `type` or by which keys are there.

use super::entry::{Entry, Vars, each_string, each_value};
use crate::config::ConfigError;
use crate::config::raw::RawServer;

/// How a client spells the shared parts.
pub(super) struct Shape {
    /// Keys that may give the transport (`type`), first found wins.
    pub type_keys: &'static [&'static str],
    /// Keys that may hold the URL, first found wins.
    pub url_keys: &'static [&'static str],
    /// What an entry with a URL and no type is: legacy SSE in Cline, Streamable HTTP elsewhere.
    pub url_only_is_sse: bool,
    /// Whether `envFile` is read (Cursor, VS Code).
    pub env_file: bool,
}

/// The transport an entry names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
    Sse,
}

/// Reads the shared parts of `e` into a new server, each string through `vars`.
pub(super) fn read(e: &mut Entry<'_>, shape: &Shape, vars: &mut Vars<'_>) -> Result<RawServer, ConfigError> {
    let mut named = None;
    for key in shape.type_keys {
        if let Some(t) = e.string(key)? {
            named = Some(match t.as_str() {
                "stdio" => Transport::Stdio,
                "http" | "streamable-http" | "streamableHttp" | "streamable_http" => Transport::Http,
                "sse" => Transport::Sse,
                _ => return Err(ConfigError::new("expected one of stdio, http, sse").field(e.field(key))),
            });
            break;
        }
    }
    let url_key = shape.url_keys.iter().copied().find(|k| e.has(k));
    let transport = match (named, e.has("command"), url_key) {
        (Some(t), _, _) => t,
        (None, true, _) => Transport::Stdio,
        (None, false, Some(_)) if shape.url_only_is_sse => Transport::Sse,
        (None, false, Some(_)) => Transport::Http,
        (None, false, None) => {
            let url = shape.url_keys.first().map_or(String::new(), |k| format!(" or `{k}`"));
            return Err(ConfigError::new(format!("needs `command`{url}")).field(e.path()));
        }
    };
    let mut server = RawServer::default();
    if transport == Transport::Stdio {
        let command = e.string("command")?.ok_or_else(|| ConfigError::new("needs `command`").field(e.path()))?;
        server.command = Some(vars(&command, &e.field("command"))?);
        server.args = each_string(e.strings("args")?, &e.field("args"), vars)?;
        server.env = each_value(e.string_map("env")?, &e.field("env"), vars)?;
        if let Some(cwd) = e.string("cwd")? {
            server.cwd = Some(vars(&cwd, &e.field("cwd"))?);
        }
        let env_file = if shape.env_file { e.string("envFile")? } else { None };
        if let Some(file) = env_file {
            server.env_file = Some(vars(&file, &e.field("envFile"))?);
        }
    } else {
        let key = url_key.ok_or_else(|| ConfigError::new("needs `url`").field(e.path()))?;
        let url = e.string(key)?.unwrap_or_default();
        server.url = Some(vars(&url, &e.field(key))?);
        server.headers = each_value(e.string_map("headers")?, &e.field("headers"), vars)?;
        if transport == Transport::Sse {
            server.transport = Some("sse".to_owned());
        }
    }
    Ok(server)
}

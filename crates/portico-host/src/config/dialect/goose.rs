//! Goose's `~/.config/goose/config.yaml`: `extensions`, each with a `type`: `stdio` (`cmd`,
//! `args`, `envs`, `env_keys`), `streamable_http` or `sse` (`uri`, `headers`); and `enabled`,
//! `timeout`, `available_tools`. `builtin`, `platform`, `frontend` and `inline_python`
//! extensions are part of Goose, not servers Portico can start: they are skipped.
//!
//! Goose has no `${…}`: values are plain text. `env_keys` name variables whose values Goose keeps
//! in its keyring; they become `${NAME}`, to be set in Portico's environment.

use serde_json::Value;

use super::Imported;
use super::entry::{Vars, each_server, each_string, each_value, top};
use super::vars::literal;
use crate::config::ConfigError;
use crate::config::raw::RawServer;

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "extensions")? else {
        return Ok(Imported::none("extensions"));
    };
    let servers = each_server(table, "extensions", &mut notes, |name, mut e, notes| {
        let vars: &mut Vars<'_> = &mut literal;
        let mut server = RawServer::default();
        let kind = e.string("type")?.ok_or_else(|| ConfigError::new("needs `type`").field(e.path()))?;
        match kind.as_str() {
            "stdio" => {
                let cmd = e.string("cmd")?.ok_or_else(|| ConfigError::new("needs `cmd`").field(e.path()))?;
                server.command = Some(vars(&cmd, &e.field("cmd"))?);
                server.args = each_string(e.strings("args")?, &e.field("args"), vars)?;
                server.env = each_value(e.string_map("envs")?, &e.field("envs"), vars)?;
                let keys = e.strings("env_keys")?;
                if !keys.is_empty() {
                    notes.push(format!(
                        "{name}: `env_keys` → `env` (NAME = \"${{NAME}}\"): Goose keeps these values in its keyring; \
                         set {} in Portico's environment",
                        keys.join(", ")
                    ));
                }
                for key in keys {
                    server.env.entry(key.clone()).or_insert(format!("${{{key}}}"));
                }
                if let Some(cwd) = e.string("cwd")? {
                    server.cwd = Some(vars(&cwd, &e.field("cwd"))?);
                }
            }
            "streamable_http" | "sse" => {
                let uri = e.string("uri")?.ok_or_else(|| ConfigError::new("needs `uri`").field(e.path()))?;
                server.url = Some(vars(&uri, &e.field("uri"))?);
                server.headers = each_value(e.string_map("headers")?, &e.field("headers"), vars)?;
                if kind == "sse" {
                    server.transport = Some("sse".to_owned());
                }
                let (envs, env_keys) = (e.string_map("envs")?, e.strings("env_keys")?);
                if !envs.is_empty() || !env_keys.is_empty() {
                    notes
                        .push(format!("{name}: `envs` and `env_keys` not imported: an HTTP server has no environment"));
                }
            }
            "builtin" | "platform" | "frontend" | "inline_python" => {
                notes.push(format!(
                    "{name}: skipped: a `{kind}` extension is part of Goose, not an MCP server to start"
                ));
                return Ok(None);
            }
            _ => {
                notes.push(format!("{name}: skipped: Portico cannot import an extension of this `type`"));
                return Ok(None);
            }
        }
        if e.bool("enabled")? == Some(false) {
            server.enabled = Some(false);
        }
        server.timeout = e.number("timeout")?;
        server.include = e.strings("available_tools")?;
        if !server.include.is_empty() {
            notes.push(format!("{name}: `available_tools` → `include`"));
        }
        // What describes the extension to Goose's own UI goes without a note.
        e.not_imported(name, &[("name", ""), ("display_name", ""), ("description", ""), ("bundled", "")], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

//! Codex CLI's `~/.codex/config.toml` (or a trusted project's `.codex/config.toml`):
//! `[mcp_servers.NAME]` with `command`, `args`, `env`, `env_vars`, `cwd` (stdio) or `url`,
//! `http_headers`, `env_http_headers`, `bearer_token_env_var` (Streamable HTTP); and `enabled`,
//! `startup_timeout_sec`, `tool_timeout_sec`, `enabled_tools`, `disabled_tools`.
//!
//! Codex has no `${…}` of its own: it names environment variables instead, and those become
//! Portico's `${NAME}`. Every other value is plain text.

use serde_json::Value;

use super::Imported;
use super::entry::{Vars, each_server, each_string, each_value, top};
use super::vars::{escape, literal};
use crate::config::ConfigError;
use crate::config::raw::RawServer;

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "mcp_servers")? else {
        return Ok(Imported::none("mcp_servers"));
    };
    let servers = each_server(table, "mcp_servers", &mut notes, |name, mut e, notes| {
        let vars: &mut Vars<'_> = &mut literal;
        let mut server = RawServer::default();
        if let Some(command) = e.string("command")? {
            server.command = Some(escape(&command));
            server.args = each_string(e.strings("args")?, &e.field("args"), vars)?;
            server.env = each_value(e.string_map("env")?, &e.field("env"), vars)?;
            let passed = e.strings("env_vars")?;
            if !passed.is_empty() {
                notes.push(format!("{name}: `env_vars` → `env` (NAME = \"${{NAME}}\")"));
            }
            for var in passed {
                server.env.entry(var.clone()).or_insert(format!("${{{var}}}"));
            }
            server.cwd = e.string("cwd")?.map(|c| escape(&c));
        } else if let Some(url) = e.string("url")? {
            server.url = Some(escape(&url));
            server.headers = each_value(e.string_map("http_headers")?, &e.field("http_headers"), vars)?;
            for (header, var) in e.string_map("env_http_headers")? {
                server.headers.insert(header, format!("${{{var}}}"));
            }
            if let Some(var) = e.string("bearer_token_env_var")? {
                server.headers.insert("Authorization".to_owned(), format!("Bearer ${{{var}}}"));
                notes.push(format!("{name}: `bearer_token_env_var` → header `Authorization = \"Bearer ${{{var}}}\"`"));
            }
            if let Some(token) = e.string("bearer_token")? {
                server.headers.insert("Authorization".to_owned(), format!("Bearer {}", escape(&token)));
                notes.push(format!(
                    "{name}: `bearer_token` copied into header `Authorization`: better keep the token in an \
                     environment variable (`Bearer ${{VAR}}`) or a file (`Bearer ${{file:PATH}}`)"
                ));
            }
        } else {
            return Err(ConfigError::new("needs `command` or `url`").field(e.path()));
        }
        if e.bool("enabled")? == Some(false) {
            server.enabled = Some(false);
        }
        let seconds = e.number("startup_timeout_sec")?;
        let millis = e.number("startup_timeout_ms")?;
        server.startup_timeout = seconds.or(millis.map(|ms| ms / 1000.0));
        server.timeout = e.number("tool_timeout_sec")?;
        server.include = e.strings("enabled_tools")?;
        server.exclude = e.strings("disabled_tools")?;
        if !server.include.is_empty() {
            notes.push(format!("{name}: `enabled_tools` → `include`"));
        }
        if !server.exclude.is_empty() {
            notes.push(format!("{name}: `disabled_tools` → `exclude`"));
        }
        let reasons = [
            ("required", "Portico has no required servers"),
            ("scopes", "Codex's OAuth login settings"),
            ("oauth_resource", "Codex's OAuth login settings"),
        ];
        e.not_imported(name, &reasons, notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

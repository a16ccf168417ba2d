//! Windsurf's `~/.codeium/windsurf/mcp_config.json`: `mcpServers`, each `command`, `args`, `env`
//! or `serverUrl` (or `url`) and `headers`, with `disabled` and `disabledTools`.
//!
//! Variables: `${env:NAME}` becomes `${NAME}` and `${file:PATH}` stays (Portico reads both);
//! any other `${…}` is not Windsurf's and is kept as text.

use serde_json::Value;

use super::Imported;
use super::entry::{each_server, top};
use super::mcp_servers::{self, Shape};
use super::vars::{self, Piece};
use crate::config::ConfigError;

const SHAPE: Shape = Shape { type_keys: &[], url_keys: &["serverUrl", "url"], url_only_is_sse: false, env_file: false };

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "mcpServers")? else {
        return Ok(Imported::none("mcpServers"));
    };
    let servers = each_server(table, "mcpServers", &mut notes, |name, mut e, notes| {
        let mut kept = Vec::new();
        let mut windsurf = |value: &str, field: &str| {
            vars::rewrite(value, field, &mut |body| {
                if let Some(var) = body.strip_prefix("env:") {
                    return Ok(Piece::Var(format!("${{{var}}}")));
                }
                if body.starts_with("file:") {
                    return Ok(Piece::Var(format!("${{{body}}}")));
                }
                let note = format!("{name}: `${{{body}}}` is not a Windsurf variable: kept as text");
                if !kept.contains(&note) {
                    kept.push(note);
                }
                Ok(Piece::Text(format!("${{{body}}}")))
            })
        };
        let mut server = mcp_servers::read(&mut e, &SHAPE, &mut windsurf)?;
        notes.append(&mut kept);
        if e.bool("disabled")? == Some(true) {
            server.enabled = Some(false);
            notes.push(format!("{name}: `disabled: true` → `enabled = false`"));
        }
        server.exclude = e.strings("disabledTools")?;
        if !server.exclude.is_empty() {
            notes.push(format!("{name}: `disabledTools` → `exclude`"));
        }
        e.not_imported(name, &[], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

//! Cline's `cline_mcp_settings.json`: `mcpServers`, each `type` (`stdio`, `sse`,
//! `streamableHttp`; `transportType` in older files), `command`, `args`, `cwd`, `env`, `url`,
//! `headers`, `disabled`, `timeout` and `autoApprove`. An entry with only `url` is legacy SSE.
//! No variables: every value is plain text.

use serde_json::Value;

use super::Imported;
use super::entry::{each_server, top};
use super::mcp_servers::{self, Shape};
use super::vars;
use crate::config::ConfigError;

const SHAPE: Shape =
    Shape { type_keys: &["type", "transportType"], url_keys: &["url"], url_only_is_sse: true, env_file: false };

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "mcpServers")? else {
        return Ok(Imported::none("mcpServers"));
    };
    let servers = each_server(table, "mcpServers", &mut notes, |name, mut e, notes| {
        let implicit_sse = !e.has("type") && !e.has("transportType") && !e.has("command") && e.has("url");
        let mut server = mcp_servers::read(&mut e, &SHAPE, &mut vars::literal)?;
        if implicit_sse {
            notes.push(format!("{name}: an entry with only `url` is legacy SSE in Cline: `transport = \"sse\"`"));
        }
        if e.bool("disabled")? == Some(true) {
            server.enabled = Some(false);
            notes.push(format!("{name}: `disabled: true` → `enabled = false`"));
        }
        server.timeout = e.number("timeout")?;
        let approved = e.strings("autoApprove")?;
        if !approved.is_empty() {
            notes.push(format!(
                "{name}: `autoApprove` ({}) not imported: express it as an approval policy instead",
                approved.join(", ")
            ));
        }
        e.not_imported(name, &[], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

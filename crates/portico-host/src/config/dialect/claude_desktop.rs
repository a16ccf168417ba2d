//! Claude Desktop's `claude_desktop_config.json`: `mcpServers`, each `command`, `args`, `env`.
//! No variables: every value is plain text.

use serde_json::Value;

use super::Imported;
use super::entry::{each_server, top};
use super::mcp_servers::{self, Shape};
use super::vars;
use crate::config::ConfigError;

const SHAPE: Shape = Shape { type_keys: &[], url_keys: &[], url_only_is_sse: false, env_file: false };

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "mcpServers")? else {
        return Ok(Imported::none("mcpServers"));
    };
    let servers = each_server(table, "mcpServers", &mut notes, |name, mut e, notes| {
        let server = mcp_servers::read(&mut e, &SHAPE, &mut vars::literal)?;
        e.not_imported(name, &[], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

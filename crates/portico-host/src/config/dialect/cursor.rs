//! Cursor's `.cursor/mcp.json` and `~/.cursor/mcp.json`: `mcpServers`, each `type`, `command`,
//! `args`, `env`, `envFile`, `url`, `headers`.
//!
//! Variables: `${env:NAME}` becomes `${NAME}`, `${userHome}` becomes `${HOME}`,
//! `${workspaceFolder}` (and `${workspaceFolderBasename}`) the workspace folder of the
//! [`ImportContext`], `${pathSeparator}` `/`.

use serde_json::Value;

use super::entry::{each_server, top};
use super::mcp_servers::{self, Shape};
use super::vars::Editor;
use super::{ImportContext, Imported};
use crate::config::ConfigError;

const SHAPE: Shape = Shape { type_keys: &["type"], url_keys: &["url"], url_only_is_sse: false, env_file: true };

pub(super) fn read(root: &Value, cx: &ImportContext<'_>) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "mcpServers")? else {
        return Ok(Imported::none("mcpServers"));
    };
    let mut editor = Editor::cursor(cx);
    let servers = each_server(table, "mcpServers", &mut notes, |name, mut e, notes| {
        let server = mcp_servers::read(&mut e, &SHAPE, &mut |v, f| editor.rewrite(v, f))?;
        notes.extend(editor.take_notes().into_iter().map(|n| format!("{name}: {n}")));
        e.not_imported(name, &[("auth", "Cursor's OAuth client settings")], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

//! Claude Code's `.mcp.json` (project scope) and `~/.claude.json` (user scope at the top, local
//! scope under `projects.PATH`): `mcpServers`, each `type` (`stdio`, `http`, `sse`),
//! `command`, `args`, `env`, `url`, `headers`.
//!
//! Claude Code expands `${VAR}` and `${VAR:-default}`, as Portico does: values are kept as they
//! are.

use serde_json::Value;

use super::entry::{Entry, each_server, top};
use super::mcp_servers::{self, Shape};
use super::{ImportContext, Imported};
use crate::config::ConfigError;
use crate::config::raw::RawServer;

const SHAPE: Shape = Shape { type_keys: &["type"], url_keys: &["url"], url_only_is_sse: false, env_file: false };

pub(super) fn read(root: &Value, cx: &ImportContext<'_>) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let user = top(root, "mcpServers")?;
    let mut servers = match user {
        Some(table) => each_server(table, "mcpServers", &mut notes, one)?,
        None => Default::default(),
    };
    // `~/.claude.json` keeps each project's local-scope servers under its absolute path; those of
    // the workspace being imported win over the user scope, as in Claude Code.
    let project = cx.workspace.map(|w| w.to_string_lossy().into_owned());
    let local = match (top(root, "projects")?, &project) {
        (Some(projects), Some(path)) => projects.get(path).and_then(|p| p.get("mcpServers")).filter(|v| !v.is_null()),
        _ => None,
    };
    if user.is_none() && local.is_none() {
        return Ok(Imported::none("mcpServers"));
    }
    if let (Some(table), Some(path)) = (local, &project) {
        let local = each_server(table, &format!("projects.{path}.mcpServers"), &mut notes, one)?;
        for name in local.keys() {
            notes.push(format!("{name}: from the local scope of project {path}"));
        }
        servers.extend(local);
    }
    Ok(Imported { servers, notes })
}

fn one(name: &str, mut e: Entry<'_>, notes: &mut Vec<String>) -> Result<Option<RawServer>, ConfigError> {
    let server = mcp_servers::read(&mut e, &SHAPE, &mut |value, _| Ok(value.to_owned()))?;
    e.not_imported(name, &[], notes);
    Ok(Some(server))
}

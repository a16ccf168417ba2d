//! VS Code's `.vscode/mcp.json` (and the user profile's `mcp.json`): `servers`, each `type`
//! (`stdio`, `http`, `sse`), `command`, `args`, `env`, `envFile`, `url`, `headers`, `dev`; and
//! `inputs`, the values VS Code asks for (`${input:ID}`).
//!
//! Variables: `${input:ID}` is asked for through [`ImportContext::input`], once per ID, and the
//! answer written into the value; `${env:NAME}` becomes `${NAME}`, `${userHome}` `${HOME}`,
//! `${workspaceFolder}` the workspace folder of the context. Any other VS Code variable is an
//! error naming the field.

use std::collections::BTreeMap;

use serde_json::Value;

use super::entry::{Entry, each_server, top, wrong};
use super::mcp_servers::{self, Shape};
use super::vars::Editor;
use super::{ImportContext, Imported, InputRequest};
use crate::config::ConfigError;

const SHAPE: Shape = Shape { type_keys: &["type"], url_keys: &["url"], url_only_is_sse: false, env_file: true };

pub(super) fn read(root: &Value, cx: &ImportContext<'_>) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let inputs = inputs(top(root, "inputs")?)?;
    let Some(table) = top(root, "servers")? else {
        return Ok(Imported::none("servers"));
    };
    let mut editor = Editor::vscode(cx, inputs);
    let servers = each_server(table, "servers", &mut notes, |name, mut e, notes| {
        let server = mcp_servers::read(&mut e, &SHAPE, &mut |v, f| editor.rewrite(v, f))?;
        notes.extend(editor.take_notes().into_iter().map(|n| format!("{name}: {n}")));
        e.not_imported(name, &[("dev", "VS Code's development mode (watch and debug)")], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

/// `inputs: [{type, id, description, password}]`, by ID.
fn inputs(list: Option<&Value>) -> Result<BTreeMap<String, InputRequest>, ConfigError> {
    let items = match list {
        None => return Ok(BTreeMap::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(wrong("inputs", "a list", other)),
    };
    let mut inputs = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let mut e = Entry::new(format!("inputs[{i}]"), item)?;
        let id = e.string("id")?.ok_or_else(|| ConfigError::new("needs `id`").field(e.path()))?;
        let request = InputRequest {
            id: id.clone(),
            description: e.string("description")?,
            password: e.bool("password")?.unwrap_or(false),
        };
        inputs.insert(id, request);
    }
    Ok(inputs)
}

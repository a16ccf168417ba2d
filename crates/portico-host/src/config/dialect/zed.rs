//! Zed's `settings.json` (JSON with comments and trailing commas): `context_servers`, each
//! `command`, `args`, `env` or `url`, `headers`, and `enabled`. Older files wrap the command:
//! `source: "custom"`, `command: {path, args, env}`. A server with neither (its `settings` only)
//! comes from a Zed extension and is skipped. No variables: every value is plain text.

use serde_json::Value;

use super::Imported;
use super::entry::{Entry, Vars, each_server, each_string, each_value, top};
use super::vars::literal;
use crate::config::ConfigError;
use crate::config::raw::RawServer;

pub(super) fn read(root: &Value) -> Result<Imported, ConfigError> {
    let mut notes = Vec::new();
    let Some(table) = top(root, "context_servers")? else {
        return Ok(Imported::none("context_servers"));
    };
    let servers = each_server(table, "context_servers", &mut notes, |name, mut e, notes| {
        let vars: &mut Vars<'_> = &mut literal;
        let mut server = RawServer::default();
        let source = e.string("source")?;
        match e.take("command") {
            Some(Value::String(command)) => {
                server.command = Some(vars(command, &e.field("command"))?);
                server.args = each_string(e.strings("args")?, &e.field("args"), vars)?;
                server.env = each_value(e.string_map("env")?, &e.field("env"), vars)?;
            }
            Some(wrapped) => {
                let mut c = Entry::new(e.field("command"), wrapped)?;
                let path = c.string("path")?.ok_or_else(|| ConfigError::new("needs `path`").field(c.path()))?;
                server.command = Some(vars(&path, &c.field("path"))?);
                server.args = each_string(c.strings("args")?, &c.field("args"), vars)?;
                server.env = each_value(c.string_map("env")?, &c.field("env"), vars)?;
                c.not_imported(name, &[], notes);
            }
            None => match e.string("url")? {
                Some(url) => {
                    server.url = Some(vars(&url, &e.field("url"))?);
                    server.headers = each_value(e.string_map("headers")?, &e.field("headers"), vars)?;
                }
                None => {
                    let why = if source.as_deref() == Some("extension") || e.has("settings") {
                        "provided by a Zed extension"
                    } else {
                        "no `command` or `url`"
                    };
                    notes.push(format!("{name}: skipped: {why}"));
                    return Ok(None);
                }
            },
        }
        if e.bool("enabled")? == Some(false) {
            server.enabled = Some(false);
        }
        if e.take("settings").and_then(Value::as_object).is_some_and(|s| !s.is_empty()) {
            notes.push(format!("{name}: `settings` not imported: they are for a Zed extension"));
        }
        e.not_imported(name, &[], notes);
        Ok(Some(server))
    })?;
    Ok(Imported { servers, notes })
}

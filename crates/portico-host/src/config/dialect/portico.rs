//! Portico's own `portico.toml`, for symmetry: its `[servers.NAME]` tables as they are.

use serde::de::DeserializeOwned;

use super::Imported;
use super::parse::toml_error;
use crate::config::ConfigError;
use crate::config::raw::{RawConfig, RawGateway, RawServer};

pub(super) fn read(text: &str) -> Result<Imported, ConfigError> {
    match toml::from_str::<RawConfig>(text) {
        Ok(config) => Ok(Imported { servers: config.servers, notes: Vec::new() }),
        // A syntax error, or a value of the wrong type (in valid TOML) at a field.
        Err(e) => Err(match field(text) {
            Some(field) => toml_error(text, &e, "").field(field),
            None => toml_error(text, &e, "invalid TOML: "),
        }),
    }
}

/// The field a type error is about: toml's error has its position but not its key, so each key
/// is tried alone.
fn field(text: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(text).ok()?;
    if let Some(key) = bad_key::<RawGateway>(table.get("gateway")) {
        return Some(key.map_or("gateway".to_owned(), |k| format!("gateway.{k}")));
    }
    let servers = table.get("servers")?;
    let Some(servers) = servers.as_table() else { return Some("servers".to_owned()) };
    servers.iter().find_map(|(name, server)| {
        bad_key::<RawServer>(Some(server))
            .map(|key| key.map_or(format!("servers.{name}"), |k| format!("servers.{name}.{k}")))
    })
}

/// `Some(Some(key))` when `key` of `table` does not fit `T`, `Some(None)` when `table` is no
/// table, `None` when all is well.
fn bad_key<T: DeserializeOwned>(table: Option<&toml::Value>) -> Option<Option<String>> {
    let table = table?;
    let Some(entries) = table.as_table() else { return Some(None) };
    entries.iter().find_map(|(key, value)| {
        let alone = toml::Table::from_iter([(key.clone(), value.clone())]);
        T::deserialize(toml::Value::Table(alone)).is_err().then(|| Some(key.clone()))
    })
}

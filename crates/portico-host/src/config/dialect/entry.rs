//! Reading one server's entry out of a [`Value`] tree: typed reads whose errors name the field,
//! and the keys nobody read, which become "not imported" notes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::config::ConfigError;
use crate::config::raw::RawServer;

/// Turns a value read from a client's file into Portico's syntax (`value`, `field`).
pub(super) type Vars<'a> = dyn FnMut(&str, &str) -> Result<String, ConfigError> + 'a;

/// One object being read: a server's entry, or a table inside one.
pub(super) struct Entry<'v> {
    path: String,
    map: &'v Map<String, Value>,
    read: BTreeSet<&'v str>,
}

impl<'v> Entry<'v> {
    /// `value`, which must be an object, found at `path`.
    pub(super) fn new(path: String, value: &'v Value) -> Result<Self, ConfigError> {
        match value {
            Value::Object(map) => Ok(Entry { path, map, read: BTreeSet::new() }),
            other => Err(wrong(&path, "a table", other)),
        }
    }

    /// Where this object is, as a dotted path.
    pub(super) fn path(&self) -> &str {
        &self.path
    }

    /// The dotted path of `key` in this object.
    pub(super) fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// Whether `key` is there and not `null`.
    pub(super) fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    /// The value of `key`, marked as read; `null` reads as absent.
    pub(super) fn take(&mut self, key: &str) -> Option<&'v Value> {
        let (key, value) = self.map.get_key_value(key)?;
        self.read.insert(key);
        (!value.is_null()).then_some(value)
    }

    /// A string.
    pub(super) fn string(&mut self, key: &str) -> Result<Option<String>, ConfigError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(wrong(&self.field(key), "a string", other)),
        }
    }

    /// A list of strings (numbers and booleans are taken as their text, as the clients do).
    pub(super) fn strings(&mut self, key: &str) -> Result<Vec<String>, ConfigError> {
        let field = self.field(key);
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| scalar(v).ok_or_else(|| wrong(&format!("{field}[{i}]"), "a string", v)))
                .collect(),
            Some(other) => Err(wrong(&field, "a list of strings", other)),
        }
    }

    /// A table of strings (numbers and booleans are taken as their text).
    pub(super) fn string_map(&mut self, key: &str) -> Result<BTreeMap<String, String>, ConfigError> {
        let field = self.field(key);
        match self.take(key) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match scalar(v) {
                    Some(s) => Ok((k.clone(), s)),
                    None => Err(wrong(&format!("{field}.{k}"), "a string", v)),
                })
                .collect(),
            Some(other) => Err(wrong(&field, "a table of strings", other)),
        }
    }

    /// A boolean.
    pub(super) fn bool(&mut self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong(&self.field(key), "true or false", other)),
        }
    }

    /// A number.
    pub(super) fn number(&mut self, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(wrong(&self.field(key), "a number", other)),
        }
    }

    /// The keys not read, in order.
    pub(super) fn unread(&self) -> impl Iterator<Item = &'v str> + '_ {
        let mut keys: Vec<&'v str> = self.map.keys().map(String::as_str).filter(|k| !self.read.contains(k)).collect();
        keys.sort_unstable();
        keys.into_iter()
    }

    /// Notes, as `NAME: `key` not imported[: why]`, for every key not read; `why` comes from
    /// `reasons` (an empty reason drops the key without a note).
    pub(super) fn not_imported(&self, name: &str, reasons: &[(&str, &str)], notes: &mut Vec<String>) {
        for key in self.unread() {
            match reasons.iter().find(|(k, _)| *k == key) {
                Some((_, "")) => {}
                Some((_, why)) => notes.push(format!("{name}: `{key}` not imported: {why}")),
                None => notes.push(format!("{name}: `{key}` not imported")),
            }
        }
    }
}

/// The object at `key` of the file's top level, if any.
pub(super) fn top<'v>(root: &'v Value, key: &str) -> Result<Option<&'v Value>, ConfigError> {
    match root {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null())),
        other => Err(ConfigError::new(format!("expected an object at the top of the file, found {}", kind(other)))),
    }
}

/// Reads each entry of the object `table` (at `path`) with `one`, by name; `one` returns
/// `None` to skip an entry (after saying why in a note).
pub(super) fn each_server<'v>(
    table: &'v Value,
    path: &str,
    notes: &mut Vec<String>,
    mut one: impl FnMut(&str, Entry<'v>, &mut Vec<String>) -> Result<Option<RawServer>, ConfigError>,
) -> Result<BTreeMap<String, RawServer>, ConfigError> {
    let Value::Object(entries) = table else {
        return Err(wrong(path, "a table of servers", table));
    };
    let sorted: BTreeMap<&String, &Value> = entries.iter().collect();
    let mut servers = BTreeMap::new();
    for (name, value) in sorted {
        if let Some(server) = one(name, Entry::new(format!("{path}.{name}"), value)?, notes)? {
            servers.insert(name.clone(), server);
        }
    }
    Ok(servers)
}

/// The error for a value of the wrong type at `field`; it says what was found, never the value.
pub(super) fn wrong(field: &str, expected: &str, found: &Value) -> ConfigError {
    ConfigError::new(format!("expected {expected}, found {}", kind(found))).field(field)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a table",
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Passes every string through `vars`: `[i]` and `.KEY` are added to `field` for errors.
pub(super) fn each_string(items: Vec<String>, field: &str, vars: &mut Vars<'_>) -> Result<Vec<String>, ConfigError> {
    items.iter().enumerate().map(|(i, v)| vars(v, &format!("{field}[{i}]"))).collect()
}

/// Passes every value of a table through `vars`.
pub(super) fn each_value(
    map: BTreeMap<String, String>,
    field: &str,
    vars: &mut Vars<'_>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    map.into_iter().map(|(k, v)| Ok((k.clone(), vars(&v, &format!("{field}.{k}"))?))).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn typed_reads_name_the_field_and_not_the_value() {
        let v = json!({"args": ["a", 2, true], "env": {"A": "x", "B": {"no": 1}}, "cmd": "sk-secret", "n": null});
        let mut e = Entry::new("mcpServers.s".into(), &v).expect("no error");
        assert_eq!(e.strings("args").expect("no error"), ["a", "2", "true"]);
        let err = e.string_map("env").expect_err("an error");
        assert_eq!(err.field.as_deref(), Some("mcpServers.s.env.B"));
        let err = e.strings("cmd").expect_err("an error");
        assert_eq!(err.field.as_deref(), Some("mcpServers.s.cmd"));
        assert_eq!(err.message, "expected a list of strings, found a string");
        assert_eq!(e.string("n").expect("no error"), None);
        assert_eq!(e.string("absent").expect("no error"), None);
        assert_eq!(e.unread().count(), 0);
    }

    #[test]
    fn unread_keys_become_notes() {
        let v = json!({"command": "x", "autoApprove": [], "alwaysAllow": [], "bundled": true});
        let mut e = Entry::new("mcpServers.s".into(), &v).expect("no error");
        e.string("command").expect("no error");
        let mut notes = Vec::new();
        e.not_imported("s", &[("autoApprove", "use a policy"), ("bundled", "")], &mut notes);
        assert_eq!(notes, ["s: `alwaysAllow` not imported", "s: `autoApprove` not imported: use a policy"]);
    }
}

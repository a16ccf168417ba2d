//! Other MCP clients' config files, read as they are and turned into Portico's [`RawServer`]s.
//!
//! Each client keeps its servers in a file and shape of its own. [`detect`] tells which
//! [`Dialect`] a file is written in, [`read`] maps its servers onto `[servers.NAME]` tables and
//! says in [`Imported::notes`] what was mapped and what was left out, and [`usual_locations`]
//! lists where each client keeps its file.
//!
//! | dialect | file | servers | variables, as Portico writes them |
//! |---|---|---|---|
//! | `claude-desktop` | `claude_desktop_config.json` | `mcpServers` | none: plain text |
//! | `claude-code` | `.mcp.json`, `~/.claude.json` | `mcpServers` | `${VAR}`, `${VAR:-default}`: kept |
//! | `cursor` | `.cursor/mcp.json` | `mcpServers` | `${env:NAME}` → `${NAME}`, `${userHome}` → `${HOME}`, `${workspaceFolder}` → the folder |
//! | `vscode` | `.vscode/mcp.json` | `servers`, `inputs` | as Cursor, and `${input:ID}` → asked for |
//! | `windsurf` | `mcp_config.json` | `mcpServers` | `${env:NAME}` → `${NAME}`, `${file:PATH}`: kept |
//! | `zed` | `settings.json` (JSONC) | `context_servers` | none: plain text |
//! | `codex` | `~/.codex/config.toml` | `mcp_servers` | variables named by `env_vars`, `bearer_token_env_var`, … → `${NAME}` |
//! | `goose` | `~/.config/goose/config.yaml` | `extensions` | `env_keys` → `${NAME}` |
//! | `cline` | `cline_mcp_settings.json` | `mcpServers` | none: plain text |
//!
//! Plain text that happens to hold `${` is escaped (`$${`), so that Portico's expansion
//! ([`crate::config::expand`]) gives it back unchanged. A legacy SSE server gets
//! `transport = "sse"`; Streamable HTTP, the default, needs no key.
//!
//! Errors give the line and column of a syntax error and name the field of a value of the wrong
//! type (`mcpServers.github.args`). They never quote a value, which may be a secret.

mod claude_code;
mod claude_desktop;
mod cline;
mod codex;
mod cursor;
mod entry;
mod goose;
mod mcp_servers;
mod parse;
mod portico;
mod vars;
mod vscode;
mod windsurf;
mod zed;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::ConfigError;
use crate::config::raw::RawServer;

/// A client's config format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Dialect {
    /// Portico's own `portico.toml`.
    Portico,
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code's `.mcp.json` and `~/.claude.json`.
    ClaudeCode,
    /// Cursor's `mcp.json`.
    Cursor,
    /// VS Code's `mcp.json`.
    VsCode,
    /// Windsurf's `mcp_config.json`.
    Windsurf,
    /// Zed's `settings.json`.
    Zed,
    /// Codex CLI's `config.toml`.
    Codex,
    /// Goose's `config.yaml`.
    Goose,
    /// Cline's `cline_mcp_settings.json`.
    Cline,
}

impl Dialect {
    const ALL: [Dialect; 10] = [
        Dialect::Portico,
        Dialect::ClaudeDesktop,
        Dialect::ClaudeCode,
        Dialect::Cursor,
        Dialect::VsCode,
        Dialect::Windsurf,
        Dialect::Zed,
        Dialect::Codex,
        Dialect::Goose,
        Dialect::Cline,
    ];

    /// Its name on the command line: `portico`, `claude-desktop`, `claude-code`, `cursor`,
    /// `vscode`, `windsurf`, `zed`, `codex`, `goose`, `cline`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Portico => "portico",
            Dialect::ClaudeDesktop => "claude-desktop",
            Dialect::ClaudeCode => "claude-code",
            Dialect::Cursor => "cursor",
            Dialect::VsCode => "vscode",
            Dialect::Windsurf => "windsurf",
            Dialect::Zed => "zed",
            Dialect::Codex => "codex",
            Dialect::Goose => "goose",
            Dialect::Cline => "cline",
        }
    }

    /// The dialect of a [`name`](Dialect::name).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Every dialect.
    pub fn all() -> &'static [Dialect] {
        &Self::ALL
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The servers read from a client's file.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Imported {
    /// The servers, by their name in the file (kept as it is, even where it is no bare TOML key).
    pub servers: BTreeMap<String, RawServer>,
    /// What was mapped and what was left out, one line each, as `NAME: what`.
    pub notes: Vec<String>,
}

impl Imported {
    /// No servers, because the file has no `key`.
    fn none(key: &str) -> Self {
        Imported { servers: BTreeMap::new(), notes: vec![format!("the file has no `{key}`: no servers")] }
    }
}

/// What reading a file may need from outside it.
pub struct ImportContext<'a> {
    /// The workspace (project) folder, for `${workspaceFolder}` (VS Code, Cursor) and for the
    /// project's entries in `~/.claude.json`; a variable that needs it is an error without it.
    pub workspace: Option<&'a Path>,
    /// The home directory. `${userHome}` is written `${HOME}`, so that the imported file stays
    /// portable; this is for callers that look for files ([`usual_locations`]).
    pub home: Option<&'a Path>,
    /// Gives the value of VS Code's `${input:ID}`: a prompt on a terminal, or an error. Its
    /// error is returned by [`read`] (with the field added when it names none).
    pub input: &'a dyn Fn(&InputRequest) -> Result<String, ConfigError>,
}

impl Default for ImportContext<'_> {
    /// No workspace, no home, and an `input` that refuses.
    fn default() -> Self {
        ImportContext { workspace: None, home: None, input: &no_input }
    }
}

impl fmt::Debug for ImportContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportContext")
            .field("workspace", &self.workspace)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

fn no_input(request: &InputRequest) -> Result<String, ConfigError> {
    Err(ConfigError::new(format!("`${{input:{}}}` needs a value, and none can be asked for here", request.id)))
}

/// A value VS Code would ask for: an entry of `inputs`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputRequest {
    /// Its ID, as in `${input:ID}`.
    pub id: String,
    /// What to ask.
    pub description: Option<String>,
    /// Whether the answer is a secret (not to be echoed).
    pub password: bool,
}

/// The dialect of the file at `path` whose text is `text`: by the file's name (and its folder's),
/// then by what the text holds. `None` when neither tells.
pub fn detect(path: &Path, text: &str) -> Option<Dialect> {
    by_name(path).or_else(|| by_content(text))
}

fn by_name(path: &Path) -> Option<Dialect> {
    let name = path.file_name()?.to_str()?;
    let folder = path.parent().and_then(Path::file_name).and_then(|f| f.to_str()).unwrap_or_default();
    Some(match name {
        "portico.toml" => Dialect::Portico,
        ".mcp.json" | ".claude.json" => Dialect::ClaudeCode,
        "claude_desktop_config.json" => Dialect::ClaudeDesktop,
        "cline_mcp_settings.json" => Dialect::Cline,
        "mcp_config.json" => Dialect::Windsurf,
        "mcp.json" if folder == ".cursor" => Dialect::Cursor,
        // A workspace's `.vscode/mcp.json`, or a user profile's `Code/User/mcp.json`.
        "mcp.json" if folder == ".vscode" || folder == "User" => Dialect::VsCode,
        "config.toml" if folder == ".codex" => Dialect::Codex,
        "config.yaml" | "config.yml" if folder == "goose" => Dialect::Goose,
        "settings.json" if folder == "zed" || folder == ".zed" => Dialect::Zed,
        _ => return None,
    })
}

fn by_content(text: &str) -> Option<Dialect> {
    if let Ok(Value::Object(root)) = parse::jsonc(text) {
        return json_dialect(&root);
    }
    if let Ok(Value::Object(root)) = parse::toml(text) {
        return if root.contains_key("mcp_servers") {
            Some(Dialect::Codex)
        } else if root.contains_key("servers") {
            Some(Dialect::Portico)
        } else {
            None
        };
    }
    match parse::yaml(text) {
        Ok(Value::Object(root)) if root.contains_key("extensions") => Some(Dialect::Goose),
        _ => None,
    }
}

fn json_dialect(root: &serde_json::Map<String, Value>) -> Option<Dialect> {
    if root.contains_key("servers") {
        return Some(Dialect::VsCode);
    }
    if root.contains_key("context_servers") {
        return Some(Dialect::Zed);
    }
    let Some(Value::Object(servers)) = root.get("mcpServers") else {
        // `~/.claude.json` may have servers only in its projects.
        let projects = root.get("projects").and_then(Value::as_object)?;
        return projects.values().any(|p| p.get("mcpServers").is_some()).then_some(Dialect::ClaudeCode);
    };
    let any = |key: &str| servers.values().any(|s| s.get(key).is_some());
    let typed = |t: &str| servers.values().any(|s| s.get("type").and_then(Value::as_str) == Some(t));
    Some(if any("serverUrl") {
        Dialect::Windsurf
    } else if any("autoApprove") || any("transportType") || typed("streamableHttp") {
        Dialect::Cline
    } else if any("envFile") {
        Dialect::Cursor
    } else if any("type") {
        Dialect::ClaudeCode
    } else if any("url") {
        // Claude Desktop has no remote servers in its file; Cursor writes them with `url` alone.
        Dialect::Cursor
    } else {
        Dialect::ClaudeDesktop
    })
}

/// Reads `text`, written in `dialect`, into Portico's servers.
///
/// # Errors
/// On a syntax error (with line and column), a value of the wrong type or a missing one (naming
/// the field), a variable that cannot be resolved, or an error of [`ImportContext::input`].
pub fn read(dialect: Dialect, text: &str, cx: &ImportContext<'_>) -> Result<Imported, ConfigError> {
    match dialect {
        Dialect::Portico => portico::read(text),
        Dialect::ClaudeDesktop => claude_desktop::read(&parse::json(text)?),
        Dialect::ClaudeCode => claude_code::read(&parse::json(text)?, cx),
        Dialect::Cursor => cursor::read(&parse::jsonc(text)?, cx),
        Dialect::VsCode => vscode::read(&parse::jsonc(text)?, cx),
        Dialect::Windsurf => windsurf::read(&parse::jsonc(text)?),
        Dialect::Zed => zed::read(&parse::jsonc(text)?),
        Dialect::Codex => codex::read(&parse::toml(text)?),
        Dialect::Goose => goose::read(&parse::yaml(text)?),
        Dialect::Cline => cline::read(&parse::json(text)?),
    }
}

/// Where each client keeps its servers on Linux and macOS, the current project's files first:
/// for `portico config import` with no path. Nothing is checked on disk.
pub fn usual_locations(home: &Path, cwd: &Path) -> Vec<(Dialect, PathBuf)> {
    let config = home.join(".config");
    let mac = home.join("Library/Application Support");
    let cline = "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json";
    let all = [
        (Dialect::ClaudeCode, cwd.join(".mcp.json")),
        (Dialect::Cursor, cwd.join(".cursor/mcp.json")),
        (Dialect::VsCode, cwd.join(".vscode/mcp.json")),
        (Dialect::Codex, cwd.join(".codex/config.toml")),
        (Dialect::ClaudeDesktop, config.join("Claude/claude_desktop_config.json")),
        (Dialect::ClaudeDesktop, mac.join("Claude/claude_desktop_config.json")),
        (Dialect::ClaudeCode, home.join(".claude.json")),
        (Dialect::Cursor, home.join(".cursor/mcp.json")),
        (Dialect::VsCode, config.join("Code/User/mcp.json")),
        (Dialect::VsCode, mac.join("Code/User/mcp.json")),
        (Dialect::Windsurf, home.join(".codeium/windsurf/mcp_config.json")),
        (Dialect::Zed, config.join("zed/settings.json")),
        (Dialect::Codex, home.join(".codex/config.toml")),
        (Dialect::Goose, config.join("goose/config.yaml")),
        (Dialect::Cline, config.join(cline)),
        (Dialect::Cline, mac.join(cline)),
    ];
    let mut out: Vec<(Dialect, PathBuf)> = Vec::with_capacity(all.len());
    for (dialect, path) in all {
        // In the home folder, the project's files are the user's.
        if !out.iter().any(|(_, p)| *p == path) {
            out.push((dialect, path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dialect::all() {
            assert_eq!(Dialect::from_name(d.name()), Some(*d));
            assert_eq!(d.to_string(), d.name());
        }
        assert_eq!(Dialect::from_name("vs-code"), None);
    }

    #[test]
    fn usual_locations_skip_duplicates() {
        let home = Path::new("/home/ada");
        let all = usual_locations(home, home);
        assert_eq!(all.iter().filter(|(_, p)| p.ends_with(".codex/config.toml")).count(), 1);
        for (dialect, path) in &all {
            assert_eq!(detect(path, ""), Some(*dialect), "{}", path.display());
        }
    }
}

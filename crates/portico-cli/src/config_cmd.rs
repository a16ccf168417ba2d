//! `portico config import` and `portico config check`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use portico_host::config::dialect::{self, Dialect, ImportContext, InputRequest};
use portico_host::config::raw::RawConfig;
use portico_host::config::{self, ConfigError};

use crate::{Failure, config_path};

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Turn another client's MCP config into portico.toml (printed, or written with --out).
    /// Without PATH, looks in each client's usual places.
    Import {
        /// Read the file as this dialect: claude-desktop, claude-code, cursor, vscode, windsurf,
        /// zed, codex, goose, cline (detected when not given).
        #[arg(long, value_name = "DIALECT")]
        from: Option<String>,
        /// The file to import.
        path: Option<PathBuf>,
        /// Write portico.toml here instead of printing it (refuses to overwrite a file).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Load and validate the config; report warnings and errors with file, line and field.
    Check,
}

pub(crate) fn run(config: Option<&Path>, cmd: ConfigCommand) -> Result<(), Failure> {
    match cmd {
        ConfigCommand::Check => check(config),
        ConfigCommand::Import { from, path, out } => import(from.as_deref(), path, out.as_deref()),
    }
}

fn check(config: Option<&Path>) -> Result<(), Failure> {
    let path = config_path(config)?;
    let loaded = config::load(&path).map_err(|e| Failure::Usage(e.to_string()))?;
    for w in &loaded.warnings {
        eprintln!("portico: warning: {w}");
    }
    // The registry's naming rules, checked on what the config alone decides (renames).
    eprintln!(
        "portico: {} is valid ({} dialect): {} servers",
        path.display(),
        loaded.dialect.name(),
        loaded.config.servers.len()
    );
    Ok(())
}

/// Asks on the terminal for a VS Code `${input:…}`; off a terminal it is an error.
fn prompt_input(req: &InputRequest) -> Result<String, ConfigError> {
    if !std::io::stdin().is_terminal() {
        return Err(ConfigError::new(format!(
            "`${{input:{}}}` needs a value and there is no terminal to ask on; run the import on a terminal",
            req.id
        )));
    }
    eprint!(
        "{}{}: ",
        req.description.as_deref().unwrap_or(&req.id),
        if req.password { " (hidden in the output)" } else { "" }
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| ConfigError::new(format!("cannot read the answer: {e}")))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn import(from: Option<&str>, path: Option<PathBuf>, out: Option<&Path>) -> Result<(), Failure> {
    let forced = match from {
        Some(name) => Some(Dialect::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Dialect::all().iter().map(|d| d.name()).collect();
            Failure::Usage(format!("--from {name}: not one of {}", names.join(", ")))
        })?),
        None => None,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let candidates: Vec<(Option<Dialect>, PathBuf)> = match path {
        Some(p) => vec![(forced, p)],
        None => {
            let home = home.clone().ok_or_else(|| Failure::Usage("HOME is not set; give a PATH".to_owned()))?;
            dialect::usual_locations(&home, &cwd)
                .into_iter()
                .filter(|(d, p)| p.is_file() && forced.is_none_or(|f| f == *d))
                .map(|(d, p)| (Some(d), p))
                .collect()
        }
    };
    if candidates.is_empty() {
        return Err(Failure::Usage("no client config found in the usual places; give a PATH".to_owned()));
    }
    let mut merged = RawConfig::default();
    for (dialect, path) in candidates {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failure::Usage(format!("{}: cannot read: {e}", path.display())))?;
        let dialect = dialect.or_else(|| dialect::detect(&path, &text)).ok_or_else(|| {
            Failure::Usage(format!("{}: cannot tell which client wrote it; use --from", path.display()))
        })?;
        let workspace = path.parent().map(Path::to_path_buf);
        let cx = ImportContext { workspace: workspace.as_deref(), home: home.as_deref(), input: &prompt_input };
        let imported = dialect::read(dialect, &text, &cx).map_err(|e| Failure::Usage(e.in_file(&path).to_string()))?;
        let mut notes = imported.notes;
        let servers = config::legal_server_names(imported.servers, &mut notes);
        eprintln!("portico: {} ({}): {} servers", path.display(), dialect.name(), servers.len());
        for note in &notes {
            eprintln!("portico:   {note}");
        }
        for (name, server) in servers {
            if merged.servers.contains_key(&name) {
                eprintln!("portico:   `{name}` is defined again in {}; the first one is kept", path.display());
                continue;
            }
            merged.servers.insert(name, server);
        }
    }
    let text = toml::to_string_pretty(&merged).map_err(|e| Failure::Usage(format!("cannot write TOML: {e}")))?;
    let text = format!("# Imported by `portico config import`; see docs/config.md for every key.\n\n{text}");
    match out {
        Some(out) => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(out)
                .map_err(|e| Failure::Usage(format!("{}: {e}", out.display())))?;
            file.write_all(text.as_bytes()).map_err(|e| Failure::Usage(format!("{}: {e}", out.display())))?;
            eprintln!("portico: wrote {}", out.display());
        }
        None => {
            #[allow(clippy::print_stdout)]
            {
                print!("{text}");
            }
        }
    }
    Ok(())
}

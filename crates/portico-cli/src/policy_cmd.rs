//! `portico policy explain`, `portico policy list` and `portico policy revoke`.
//!
//! `explain` loads the config and its `[policy]`, starts the host so that the tool's
//! annotations are the ones its server lists now, and prints the decision, the rule that made
//! it, and why each rule above it did not match. `list` and `revoke` show and remove the
//! stored "always allow" answers in the state directory.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use clap::{Args, Subcommand};
use portico::schema::Tool;
use portico_host::Host;
use portico_host::config::{self, Config, dialect::Dialect};
use portico_host::policy::{self, AlwaysRule, AlwaysStore, Method, Policy, Request};
use portico_host::registry::Registry;
use serde_json::Value;

use crate::inspect::parse_pairs;
use crate::{Failure, config_path};

/// How long `explain` waits for the upstreams to start.

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Explain what policy decides for a call: the decision, the rule that made it, and why
    /// each rule above it did not match. Starts the configured servers to read the tool's
    /// annotations.
    Explain(ExplainArgs),
    /// The stored "always allow" answers (from approvals).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a stored "always allow" answer by its id (see `portico policy list`).
    Revoke {
        /// The id.
        id: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The tool's exposed name (`server__tool`), or its name at --server; a URI with
    /// `--method resources/read`, a prompt with `--method prompts/get`; none for
    /// `sampling/createMessage` and `elicitation/create`.
    tool: Option<String>,
    /// Arguments as key=value; a value that parses as JSON (number, true, [..], {..}) is taken
    /// as JSON, otherwise as a string.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// The server (its name in the config); TOOL is then its name at that server, or the
    /// exposed one.
    #[arg(long, value_name = "SERVER")]
    server: Option<String>,
    /// Who calls: an authenticated subject, or `local` (stdio).
    #[arg(long, default_value = "local")]
    principal: String,
    /// tools/call, resources/read, prompts/get, sampling/createMessage or elicitation/create.
    #[arg(long, default_value = "tools/call")]
    method: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(config: Option<&Path>, cmd: PolicyCommand) -> Result<(), Failure> {
    match cmd {
        PolicyCommand::Explain(args) => explain(config, args).await,
        PolicyCommand::List { json } => list(config, json),
        PolicyCommand::Revoke { id } => revoke(config, &id),
    }
}

/// The config, its policy, and the always-store of its state directory.
struct Loaded {
    config: Config,
    policy: Policy,
}

/// Loads the config and compiles its `[policy]` (read from the same file until the config
/// carries it), with warnings on stderr.
fn load(given: Option<&Path>) -> Result<Loaded, Failure> {
    let path = config_path(given)?;
    let loaded = config::load(&path).map_err(|e| Failure::Usage(e.to_string()))?;
    let prefix = format!("{}: ", path.display());
    let raw = if loaded.dialect == Dialect::Portico {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failure::Usage(format!("{}: cannot read the config: {e}", path.display())))?;
        let (raw, warnings) =
            policy::raw::from_toml(&text).map_err(|e| Failure::Usage(e.in_file(&path).to_string()))?;
        for w in warnings {
            eprintln!("portico: warning: {prefix}{w}");
        }
        raw
    } else {
        // Other clients' files have no policy: the defaults apply.
        policy::raw::RawPolicy::default()
    };
    for w in &loaded.warnings {
        // `[policy]` is read here, not by the config loader, which calls it unknown.
        if w.strip_prefix(&prefix).is_some_and(|k| k.starts_with("policy")) {
            continue;
        }
        eprintln!("portico: warning: {w}");
    }
    let policy = Policy::compile(&raw).map_err(|e| Failure::Usage(e.in_file(&path).to_string()))?;
    Ok(Loaded { config: loaded.config, policy })
}

fn open_store(config: &Config) -> Result<AlwaysStore, Failure> {
    AlwaysStore::open(&config.gateway.state_dir).map_err(|e| Failure::Usage(e.to_string()))
}

/// What a request is about, as found in the registry.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    server: String,
    name: String,
    exposed: String,
    /// The tool as its server lists it now (annotations, and the definition a stored
    /// "always allow" is bound to).
    tool: Option<Tool>,
    /// Not in the registry: annotations unknown.
    found: bool,
}

/// Finds `tool` (or the URI or prompt) for `method` in `registry`, at `server` when given.
fn resolve(registry: &Registry, method: Method, tool: Option<&str>, server: Option<&str>) -> Result<Target, Failure> {
    let missing = |what: &str| {
        Failure::Usage(format!("`portico policy explain` needs the {what} (and key=value arguments after it)"))
    };
    // Not offered now: explained without annotations when the server is known.
    let not_found = |name: &str| Target {
        server: server.unwrap_or_default().to_owned(),
        name: name.to_owned(),
        exposed: name.to_owned(),
        tool: None,
        found: false,
    };
    let at = |origin_server: &str| server.is_none_or(|s| s == origin_server);
    let target = match method {
        Method::CallTool => {
            let tool = tool.ok_or_else(|| missing("tool's name"))?;
            let entry = registry.tools.get(tool).filter(|e| at(&e.origin.server)).or_else(|| {
                registry.tools.values().find(|e| at(&e.origin.server) && server.is_some() && e.origin.name == tool)
            });
            match entry {
                Some(e) => Target {
                    server: e.origin.server.clone(),
                    name: e.origin.name.clone(),
                    exposed: e.tool.name.clone(),
                    tool: Some(Tool::clone(&e.tool)),
                    found: true,
                },
                None => not_found(tool),
            }
        }
        Method::GetPrompt => {
            let prompt = tool.ok_or_else(|| missing("prompt's name"))?;
            let entry = registry.prompts.get(prompt).filter(|e| at(&e.origin.server)).or_else(|| {
                registry.prompts.values().find(|e| at(&e.origin.server) && server.is_some() && e.origin.name == prompt)
            });
            match entry {
                Some(e) => Target {
                    server: e.origin.server.clone(),
                    name: e.origin.name.clone(),
                    exposed: e.prompt.name.clone(),
                    tool: None,
                    found: true,
                },
                None => not_found(prompt),
            }
        }
        Method::ReadResource => {
            let uri = tool.ok_or_else(|| missing("resource's URI"))?;
            match registry.resolve_uri(uri).filter(|o| at(&o.server)) {
                Some(o) => Target { server: o.server, name: o.name, exposed: uri.to_owned(), tool: None, found: true },
                None => not_found(uri),
            }
        }
        _ => {
            if tool.is_some() {
                return Err(Failure::Usage(format!("{method} has no tool: give only --server (the server asking)")));
            }
            let server =
                server.ok_or_else(|| Failure::Usage(format!("{method} needs --server (the server asking)")))?;
            return Ok(Target {
                server: server.to_owned(),
                name: String::new(),
                exposed: String::new(),
                tool: None,
                found: true,
            });
        }
    };
    if target.server.is_empty() {
        let what = match method {
            Method::GetPrompt => "prompt",
            Method::ReadResource => "resource",
            _ => "tool",
        };
        let cmd = match method {
            Method::GetPrompt => "portico prompt --help",
            Method::ReadResource => "portico read --help",
            _ => "portico tools",
        };
        return Err(Failure::Usage(format!(
            "no {what} `{}` is offered now (see `{cmd}`); give --server SERVER to explain it by its name at that server",
            target.name
        )));
    }
    Ok(target)
}

async fn explain(config: Option<&Path>, args: ExplainArgs) -> Result<(), Failure> {
    let Loaded { config, policy } = load(config)?;
    let names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
    let method = Method::parse(&args.method)
        .ok_or_else(|| Failure::Usage(format!("--method {}: not one of {}", args.method, names.join(", "))))?;
    if let Some(s) = &args.server
        && !config.servers.contains_key(s)
    {
        return Err(Failure::Usage(format!("--server {s}: no such server in the config")));
    }
    let arguments = if args.pairs.is_empty() && method != Method::CallTool && method != Method::GetPrompt {
        Value::Null
    } else {
        Value::Object(parse_pairs(&args.pairs)?)
    };
    let policy = match AlwaysStore::open(&config.gateway.state_dir) {
        Ok(store) => policy.with_store(Arc::new(store)),
        Err(e) => {
            eprintln!("portico: warning: {e}; stored \"always allow\" answers are ignored, as the gateway would");
            policy
        }
    };
    let needs_registry = matches!(method, Method::CallTool | Method::GetPrompt | Method::ReadResource);
    let registry = if needs_registry {
        let host = Host::start(config.clone());
        host.ready(config.startup_wait()).await;
        let registry = host.registry();
        host.shutdown().await;
        registry
    } else {
        Arc::new(Registry::default())
    };
    let target = resolve(&registry, method, args.tool.as_deref(), args.server.as_deref())?;
    if !target.found {
        eprintln!(
            "portico: warning: server `{}` does not offer `{}` now (is it running?); explaining without its annotations",
            target.server, target.name
        );
    }
    let trusted = config.servers.get(&target.server).is_some_and(|s| s.trusted);
    let req = Request::new(method, &target.server, &target.name)
        .exposed(&target.exposed)
        .trusted(trusted)
        .with_tool(target.tool.as_ref())
        .arguments(&arguments)
        .principal(&args.principal);
    let explanation = policy.explain(&req);
    let text = if args.json {
        serde_json::to_string_pretty(&explanation)
            .map(|s| s + "\n")
            .map_err(|e| Failure::Usage(format!("cannot encode the output: {e}")))?
    } else {
        explanation.to_string()
    };
    write_out(&text)
}

fn list(config: Option<&Path>, json: bool) -> Result<(), Failure> {
    let Loaded { config, .. } = load(config)?;
    let store = open_store(&config)?;
    let rules = store.list().map_err(|e| Failure::Usage(e.to_string()))?;
    if json {
        let text = serde_json::to_string_pretty(&rules)
            .map_err(|e| Failure::Usage(format!("cannot encode the output: {e}")))?;
        return write_out(&(text + "\n"));
    }
    if rules.is_empty() {
        eprintln!("portico: no stored \"always allow\" answers ({})", store.path().display());
        return Ok(());
    }
    write_out(&table(&rules))
}

fn revoke(config: Option<&Path>, id: &str) -> Result<(), Failure> {
    let Loaded { config, .. } = load(config)?;
    let store = open_store(&config)?;
    if store.revoke(id).map_err(|e| Failure::Usage(e.to_string()))? {
        eprintln!("portico: revoked `{id}`");
        Ok(())
    } else {
        Err(Failure::Usage(format!("no stored \"always allow\" `{id}` (see `portico policy list`)")))
    }
}

/// The rules as columns: ID, SERVER, TOOL, PRINCIPAL, STORED, NOTE.
fn table(rules: &[AlwaysRule]) -> String {
    let header = ["ID", "SERVER", "TOOL", "PRINCIPAL", "STORED", "NOTE"].map(str::to_owned);
    let rows: Vec<[String; 6]> = rules
        .iter()
        .map(|r| {
            let mut tool = r.tool.clone();
            if let Some(exposed) = r.exposed.as_ref().filter(|e| **e != r.tool) {
                tool = format!("{tool} ({exposed})");
            }
            if r.method != Method::CallTool {
                tool = format!("{} {tool}", r.method);
            }
            [
                r.id.clone(),
                r.server.clone(),
                tool,
                r.principal.clone().unwrap_or_else(|| "(anyone)".to_owned()),
                utc(r.created_at),
                r.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (cell, w) in row.iter().zip(widths) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
fn utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", rest / 3600, rest % 3600 / 60)
}

fn write_out(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Usage(format!("cannot write the output: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use portico::schema::ToolAnnotations;
    use portico_host::registry::Catalog;

    /// The real CLI's shape: `--server` is also a global option there.
    #[derive(Debug, Parser)]
    struct Cli {
        #[arg(long, global = true)]
        server: Option<String>,
        #[arg(long, short = 'c', global = true)]
        config: Option<std::path::PathBuf>,
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Top {
        #[command(subcommand)]
        Policy(PolicyCommand),
    }

    #[test]
    fn the_verbs_parse_beside_a_global_server_option() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "portico",
            "policy",
            "explain",
            "fs__write",
            "path=/tmp/x",
            "n=3",
            "--server",
            "fs",
            "--principal",
            "alice",
            "--json",
        ])
        .expect("parses");
        let Top::Policy(PolicyCommand::Explain(args)) = cli.command else { panic!("explain") };
        assert_eq!(args.tool.as_deref(), Some("fs__write"));
        assert_eq!(args.pairs, ["path=/tmp/x", "n=3"]);
        assert_eq!(args.server.as_deref(), Some("fs"));
        assert_eq!((args.principal.as_str(), args.method.as_str(), args.json), ("alice", "tools/call", true));
        let cli = Cli::try_parse_from(["portico", "policy", "revoke", "abcd1234"]).expect("parses");
        assert!(matches!(cli.command, Top::Policy(PolicyCommand::Revoke { id }) if id == "abcd1234"));
        let cli = Cli::try_parse_from(["portico", "-c", "p.toml", "policy", "list", "--json"]).expect("parses");
        assert!(matches!(cli.command, Top::Policy(PolicyCommand::List { json: true })));
    }

    fn registry() -> (Config, Registry) {
        let (raw, _) = config::parse_toml(
            "[servers.fs]\ncommand = \"x\"\ntrusted = true\nrename = { read_file = \"read\" }\n[servers.git]\ncommand = \"y\"\n",
        )
        .expect("toml");
        let config = config::validate(raw, Path::new("."), &config::expand::Environment).expect("valid");
        let mut catalog = Catalog::default();
        catalog.tools = vec![
            Tool::without_arguments("read_file").with_annotations(ToolAnnotations::new().with_read_only(true)).into(),
            Tool::without_arguments("status").into(),
        ];
        let registry = Registry::build(config.servers.values().map(|s| (s, &catalog)), "__");
        (config, registry)
    }

    #[test]
    fn targets_are_found_by_exposed_or_upstream_name() {
        let (_, reg) = registry();
        let t = resolve(&reg, Method::CallTool, Some("fs__read"), None).expect("found");
        assert_eq!(
            (t.server.as_str(), t.name.as_str(), t.exposed.as_str(), t.found),
            ("fs", "read_file", "fs__read", true)
        );
        assert_eq!(t.tool.and_then(|t| t.annotations).and_then(|a| a.read_only_hint), Some(true));
        let t = resolve(&reg, Method::CallTool, Some("read_file"), Some("fs")).expect("found");
        assert_eq!(t.exposed, "fs__read");
        let t = resolve(&reg, Method::CallTool, Some("status"), Some("git")).expect("found");
        assert_eq!((t.server.as_str(), t.exposed.as_str()), ("git", "git__status"));
        let t = resolve(&reg, Method::CallTool, Some("fs__status"), Some("git")).expect("not at git");
        assert!(!t.found && t.tool.is_none());
        let t = resolve(&reg, Method::CallTool, Some("gone"), Some("fs")).expect("explained without");
        assert_eq!((t.server.as_str(), t.name.as_str(), t.found), ("fs", "gone", false));
        assert!(
            matches!(resolve(&reg, Method::CallTool, Some("gone"), None), Err(Failure::Usage(m)) if m.contains("--server"))
        );
        assert!(matches!(resolve(&reg, Method::CallTool, None, None), Err(Failure::Usage(_))));
        let t = resolve(&reg, Method::CreateMessage, None, Some("git")).expect("sampling");
        assert_eq!((t.server.as_str(), t.name.as_str()), ("git", ""));
        assert!(resolve(&reg, Method::CreateMessage, None, None).is_err());
        assert!(resolve(&reg, Method::Elicit, Some("x"), Some("git")).is_err());
    }

    #[test]
    fn stored_rules_print_as_a_table() {
        let mut a = AlwaysRule::new("fs", "read_file").exposed("fs__read").note("terminal");
        a.id = "0a1b2c3d".into();
        a.created_at = 1_700_000_000;
        let mut b = AlwaysRule::new("git", "summary").method(Method::GetPrompt).principal("alice");
        b.id = "ffffffff".into();
        assert_eq!(
            table(&[a, b]),
            "ID        SERVER  TOOL                  PRINCIPAL  STORED                NOTE
0a1b2c3d  fs      read_file (fs__read)  (anyone)   2023-11-14 22:13 UTC  terminal
ffffffff  git     prompts/get summary   alice      1970-01-01 00:00 UTC
"
        );
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(4_107_542_400), "2100-03-01 00:00 UTC");
    }
}

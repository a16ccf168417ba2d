//! Configuration: `portico.toml` (or another client's file, read as it is), expanded and
//! validated into a [`Config`].
//!
//! The low/high split is ripgrep's: [`raw`] is the file as written (serde), [`Config`] is what
//! the host runs (every default applied, every value checked). [`load`] reads a file, picks its
//! dialect, expands `${…}` ([`expand`]) and validates; unknown keys are warnings, invalid values
//! are errors with file, line, column and field ([`ConfigError`]).

pub mod dialect;
mod error;
pub mod expand;
pub mod raw;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::{ConfigError, line_column};
use raw::{RawConfig, RawServer};
use validate::legal_name_char;
pub use validate::validate;

/// The separator between a server's prefix and a tool's name when none is configured.
pub const DEFAULT_SEPARATOR: &str = "__";

/// A value that may be secret (an environment variable, a header): compared and used as
/// usual, but never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// The whole configuration, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// How the registry is served.
    pub gateway: GatewayConfig,
    /// The upstream servers, by name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// The admin listener.
    pub admin: AdminConfig,
    /// How approvals are decided.
    pub approvals: ApprovalsConfig,
    /// `[policy]` as written (checked: it compiles).
    pub policy: crate::policy::raw::RawPolicy,
    /// `[audit]` as written (checked when the log is opened).
    pub audit: crate::audit::RawAudit,
    /// `[auth]`: OAuth for the HTTP endpoint and the admin listener; `None`: off.
    pub auth: Option<AuthConfig>,
}

impl Config {
    /// How long a one-shot command waits for the upstreams' first start: the longest
    /// `startup_timeout` among the servers (30 s with none), so a slow server configured to
    /// take longer is waited for, and nobody waits longer than the config allows.
    pub fn startup_wait(&self) -> Duration {
        self.servers.values().map(|s| s.startup_timeout).max().unwrap_or(Duration::from_secs(30))
    }
}

/// `[auth]`, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuthConfig {
    /// The authorization server's issuer URL.
    pub issuer: String,
    /// This gateway's endpoint as clients address it; `None`: the `--http` URL.
    pub resource: Option<String>,
    /// Scopes every token must carry for the MCP endpoint.
    pub scopes: Vec<String>,
    /// Scopes a token must carry for the admin listener.
    pub admin_scopes: Vec<String>,
}

/// `[admin]`, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AdminConfig {
    /// Its address.
    pub listen: SocketAddr,
    /// The token from the config; `None`: generated in the state directory.
    pub token: Option<Secret>,
    /// Serve the web UI there (`[admin] ui = true`, or `portico serve --ui`).
    pub ui: bool,
}

/// `[approvals]`, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalsConfig {
    /// How long a call waits for a person.
    pub timeout: Duration,
    /// The calling client may answer (an elicitation form).
    pub client: bool,
    /// The admin API may answer (`portico approve`, the web UI).
    pub http: bool,
    /// A terminal may answer (`portico call` on a TTY).
    pub terminal: bool,
}

/// Where the admin listener is when not configured: loopback.
pub const DEFAULT_ADMIN: &str = "127.0.0.1:8766";

/// Parses `120`, `"120s"`, `"5m"`, `"1h"`, `"250ms"` as a duration.
pub fn parse_duration(value: &toml::Value, field: &str) -> Result<Duration, ConfigError> {
    let bad =
        || ConfigError::new("must be seconds or a duration like \"120s\", \"5m\", \"1h\", \"250ms\"").field(field);
    match value {
        toml::Value::Integer(n) => u64::try_from(*n).map(Duration::from_secs).map_err(|_| bad()),
        toml::Value::Float(f) => Duration::try_from_secs_f64(*f).map_err(|_| bad()),
        toml::Value::String(s) => {
            let s = s.trim();
            let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len()));
            let n: f64 = num.parse().map_err(|_| bad())?;
            let secs = match unit.trim() {
                "ms" => n / 1000.0,
                "" | "s" => n,
                "m" | "min" => n * 60.0,
                "h" => n * 3600.0,
                _ => return Err(bad()),
            };
            Duration::try_from_secs_f64(secs).map_err(|_| bad())
        }
        _ => Err(bad()),
    }
}

/// `[gateway]`, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// Where `portico serve --http` listens when given no address.
    pub listen: Option<SocketAddr>,
    /// Between a prefix and a name.
    pub separator: String,
    /// Where state (tokens, cached tool lists) is kept.
    pub state_dir: PathBuf,
    /// The name the gateway introduces itself with.
    pub name: String,
    /// How often each ready upstream is pinged; `None`: never.
    pub ping_interval: Option<Duration>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: None,
            separator: DEFAULT_SEPARATOR.to_owned(),
            state_dir: default_state_dir(),
            name: "portico".to_owned(),
            ping_interval: Some(Duration::from_secs(30)),
        }
    }
}

fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("portico");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/portico"),
        None => PathBuf::from(".portico"),
    }
}

/// One upstream server, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Its name in the config.
    pub name: String,
    /// How to reach it.
    pub kind: ServerKind,
    /// `false`: configured but not started.
    pub enabled: bool,
    /// Started at first use.
    pub lazy: bool,
    /// Globs of upstream tool names to offer (all when empty).
    pub include: Vec<String>,
    /// Globs of upstream tool names to hide.
    pub exclude: Vec<String>,
    /// Upstream name → offered name (before the prefix).
    pub rename: BTreeMap<String, String>,
    /// The prefix of its tool and prompt names (`""`: none).
    pub prefix: String,
    /// How long a call may go without progress.
    pub timeout: Duration,
    /// How long starting (spawn or connect, and the handshake) may take.
    pub startup_timeout: Duration,
    /// Calls in flight at once.
    pub max_concurrent: usize,
    /// The largest result passed on, in bytes of JSON.
    pub max_result_bytes: usize,
    /// Notifications read from it per second (a burst of as many) before reading pauses: a
    /// server that floods notifications cannot take the gateway's CPU from the others.
    pub max_notifications_per_sec: u32,
    /// Roots given to the server.
    pub roots: Vec<String>,
    /// One process (or HTTP session) for all clients, or one per downstream session.
    pub isolate: Isolation,
    /// With [`Isolation::PerClient`]: the most per-client upstreams at once.
    pub max_clients: usize,
    /// With [`Isolation::PerClient`]: how long an unused per-client upstream lives.
    pub idle_timeout: Duration,
    /// How it is restarted.
    pub restart: RestartPolicy,
    /// Its `readOnlyHint`s are believed by the default policy.
    pub trusted: bool,
    /// The revision to speak; `None`: detected.
    pub protocol_version: Option<portico::schema::ProtocolVersion>,
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerKind {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program (never run through a shell).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Added to its environment (values may be secrets).
        env: BTreeMap<String, Secret>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A server at a URL.
    Http {
        /// Its URL.
        url: String,
        /// Sent with every request (values may be secrets).
        headers: BTreeMap<String, Secret>,
        /// Legacy HTTP+SSE only (`transport = "sse"`).
        legacy_sse: bool,
        /// OAuth, when configured.
        oauth: Option<OAuthConfig>,
    },
}

/// `[servers.NAME.oauth]`, validated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The client credentials grant (else authorization code with a person signing in).
    pub client_credentials: bool,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<Secret>,
    /// Extra scopes.
    pub scopes: Vec<String>,
    /// Which addresses discovery, registration and token requests may reach.
    pub addresses: portico::auth::AddressPolicy,
}

/// Whether downstream clients share an upstream process or HTTP session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// One process (or HTTP session) for every client; calls are multiplexed.
    #[default]
    Shared,
    /// One per downstream session (a stdio connection, a handshake-era HTTP session), so no
    /// client sees another's server-side state. The first connection still lists what the
    /// server offers and serves calls that come from no session (`portico call`).
    PerClient,
}

/// Exponential backoff with jitter between restarts.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Before the first restart.
    pub initial_backoff: Duration,
    /// The longest wait.
    pub max_backoff: Duration,
    /// Failed starts in a row after which the server is `failed`; 0: never give up.
    pub max_restarts: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            max_restarts: 10,
        }
    }
}

/// A loaded config and what was odd about it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Loaded {
    /// The config.
    pub config: Config,
    /// Unknown keys and other things worth a warning, as `file: field: what`.
    pub warnings: Vec<String>,
    /// The dialect the file was read as.
    pub dialect: dialect::Dialect,
}

/// Reads, expands and validates the config at `path`, in whichever dialect it is written.
///
/// # Errors
/// When the file cannot be read or is invalid; the error gives file, line, column and field.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(format!("cannot read the config: {e}")).in_file(path))?;
    let dialect = dialect::detect(path, &text).unwrap_or(dialect::Dialect::Portico);
    let base = path.parent().unwrap_or(Path::new("."));
    // `${workspaceFolder}` of `.vscode/mcp.json` and `.cursor/mcp.json` is the folder above.
    let workspace = match base.file_name().and_then(|n| n.to_str()) {
        Some(".vscode" | ".cursor") => base.parent().unwrap_or(base),
        _ => base,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let no_input = |req: &dialect::InputRequest| {
        Err(ConfigError::new(format!(
            "`${{input:{}}}` needs a value: run `portico config import` on a terminal",
            req.id
        )))
    };
    let (raw, mut warnings) = if dialect == dialect::Dialect::Portico {
        parse_toml(&text).map_err(|e| e.in_file(path))?
    } else {
        let cx = dialect::ImportContext { workspace: Some(workspace), home: home.as_deref(), input: &no_input };
        let imported = dialect::read(dialect, &text, &cx).map_err(|e| e.in_file(path))?;
        let mut notes = imported.notes;
        let servers = legal_server_names(imported.servers, &mut notes);
        (RawConfig { servers, ..RawConfig::default() }, notes)
    };
    let config = validate(raw, base, &expand::Environment).map_err(|e| locate(e, &text).in_file(path))?;
    for w in &mut warnings {
        *w = format!("{}: {w}", path.display());
    }
    Ok(Loaded { config, warnings, dialect })
}

/// Other clients allow any server name (`"my server"`); Portico's are `a-z A-Z 0-9 _ -`, so
/// others become legal (every other character `-`), with a note. A clash keeps the first.
pub fn legal_server_names(
    servers: BTreeMap<String, RawServer>,
    notes: &mut Vec<String>,
) -> BTreeMap<String, RawServer> {
    let mut out = BTreeMap::new();
    for (name, server) in servers {
        let legal: String = name.chars().map(|c| if legal_name_char(c) { c } else { '-' }).collect();
        let legal = if legal.is_empty() { "server".to_owned() } else { legal };
        if legal != name {
            notes.push(format!("{name}: named `{legal}` here (server names are made of a-z A-Z 0-9 _ -)"));
        }
        if out.contains_key(&legal) {
            notes.push(format!("{name}: left out, `{legal}` is already taken"));
            continue;
        }
        out.insert(legal, server);
    }
    out
}

/// Parses `portico.toml` text; unknown keys come back as warnings.
///
/// # Errors
/// On a syntax error or a value of the wrong type, with line and column.
pub fn parse_toml(text: &str) -> Result<(RawConfig, Vec<String>), ConfigError> {
    let mut unknown = Vec::new();
    let de = toml::Deserializer::new(text);
    let raw: RawConfig = match serde_ignored::deserialize(de, |path| unknown.push(path.to_string())) {
        Ok(raw) => raw,
        // The dialect reader says which field, with the value (maybe a secret) left out.
        Err(_) => {
            return Err(dialect::read(dialect::Dialect::Portico, text, &dialect::ImportContext::default())
                .err()
                .unwrap_or_else(|| ConfigError::new("invalid config")));
        }
    };
    Ok((raw, unknown.into_iter().map(|k| format!("{k}: unknown key (ignored)")).collect()))
}

/// Points an error about a server's field at the line of its `[servers.NAME]` table when the
/// error has no position yet.
fn locate(err: ConfigError, text: &str) -> ConfigError {
    if err.line.is_some() {
        return err;
    }
    let Some(name) =
        err.field.as_deref().and_then(|f| f.strip_prefix("servers.")).map(|f| f.split('.').next().unwrap_or(f))
    else {
        return err;
    };
    let headers = [format!("[servers.{name}]"), format!("[servers.\"{name}\"]")];
    let Some(offset) = headers.iter().find_map(|h| text.find(h.as_str())) else { return err };
    // The key itself, when it starts a line after the server's table header (`key =`).
    let key = err.field.as_deref().and_then(|f| f.rsplit('.').next()).unwrap_or_default();
    let mut at = offset;
    for line in text[offset..].split_inclusive('\n') {
        let start = at;
        at += line.len();
        if start == offset {
            continue; // the header itself
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("[servers.") && !trimmed.starts_with(&format!("[servers.{name}.")) {
            break; // another server's table
        }
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            return err.at_offset(text, start + (line.len() - trimmed.len()));
        }
    }
    err.at_offset(text, offset)
}

/// A valid config from `toml`, for tests (panics on an invalid one).
#[cfg(test)]
pub(crate) fn for_test(toml: &str) -> Config {
    let (raw, _) = parse_toml(toml).expect("toml");
    validate(raw, Path::new("."), &expand::Environment).expect("valid")
}

//! [`validate`]: a raw config, expanded and checked into a [`Config`], every default applied.
//! Each error names its field (the caller adds file, line and column).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::raw::{RawConfig, RawServer};
use super::{
    AdminConfig, ApprovalsConfig, AuthConfig, Config, ConfigError, DEFAULT_ADMIN, GatewayConfig, Isolation,
    OAuthConfig, RestartPolicy, Secret, ServerConfig, ServerKind, expand, parse_duration,
};

/// Expands and validates a raw config. Relative `cwd`s and `env_file`s are resolved against
/// `base` (the config file's folder).
///
/// # Errors
/// The first invalid value, naming its field.
pub fn validate(raw: RawConfig, base: &Path, source: &dyn expand::Source) -> Result<Config, ConfigError> {
    let g = raw.gateway;
    let defaults = GatewayConfig::default();
    let listen = match g.listen {
        Some(a) => Some(expand::expand(&a, "gateway.listen", source)?.parse::<SocketAddr>().map_err(|e| {
            ConfigError::new(format!("not an address like 127.0.0.1:8765: {e}")).field("gateway.listen")
        })?),
        None => None,
    };
    let separator = g.separator.unwrap_or(defaults.separator);
    if separator.is_empty() || !separator.chars().all(legal_name_char) {
        return Err(ConfigError::new("must be one or more of a-z A-Z 0-9 _ -").field("gateway.separator"));
    }
    let state_dir = match g.state_dir {
        Some(d) => base.join(expand::expand(&d, "gateway.state_dir", source)?),
        None => defaults.state_dir,
    };
    let ping_interval = match g.ping_interval {
        None => defaults.ping_interval,
        Some(0.0) => None,
        Some(s) => Some(seconds(s, "gateway.ping_interval")?),
    };
    let gateway = GatewayConfig { listen, separator, state_dir, name: g.name.unwrap_or(defaults.name), ping_interval };
    let admin = AdminConfig {
        listen: match raw.admin.listen {
            Some(a) => expand::expand(&a, "admin.listen", source)?.parse().map_err(|e| {
                ConfigError::new(format!("not an address like 127.0.0.1:8766: {e}")).field("admin.listen")
            })?,
            None => DEFAULT_ADMIN.parse().map_err(|_| ConfigError::new("bad default"))?,
        },
        token: match raw.admin.token {
            Some(t) => {
                let t = expand::expand(&t, "admin.token", source)?;
                if t.len() < 16 {
                    return Err(ConfigError::new("must be at least 16 characters").field("admin.token"));
                }
                Some(Secret::new(t))
            }
            None => None,
        },
        ui: raw.admin.ui.unwrap_or(false),
    };
    let auth = match raw.auth {
        None => None,
        Some(a) => {
            let issuer = expand::expand(&a.issuer, "auth.issuer", source)?;
            if !(issuer.starts_with("https://")
                || issuer.starts_with("http://127.0.0.1")
                || issuer.starts_with("http://localhost"))
            {
                return Err(ConfigError::new("must be an https:// URL (http only on loopback)").field("auth.issuer"));
            }
            let resource = a.resource.map(|r| expand::expand(&r, "auth.resource", source)).transpose()?;
            Some(AuthConfig {
                issuer,
                resource,
                scopes: a.scopes,
                admin_scopes: a.admin_scopes.unwrap_or_else(|| vec!["portico:admin".to_owned()]),
            })
        }
    };
    let timeout = match &raw.approvals.timeout {
        Some(v) => parse_duration(v, "approvals.timeout")?,
        None => Duration::from_secs(120),
    };
    let mut approvals = ApprovalsConfig { timeout, client: true, http: true, terminal: true };
    if let Some(channels) = &raw.approvals.channels {
        approvals.client = false;
        approvals.http = false;
        approvals.terminal = false;
        for (i, c) in channels.iter().enumerate() {
            match c.as_str() {
                "client" => approvals.client = true,
                "http" => approvals.http = true,
                "terminal" => approvals.terminal = true,
                other => {
                    return Err(ConfigError::new(format!("`{other}` is not one of client, http, terminal"))
                        .field(format!("approvals.channels[{i}]")));
                }
            }
        }
    }
    let single = raw.servers.len() == 1;
    let mut servers = BTreeMap::new();
    for (name, server) in raw.servers {
        let validated = validate_server(&name, server, single, base, source)?;
        servers.insert(name, validated);
    }
    crate::policy::Policy::compile(&raw.policy)?;
    Ok(Config { gateway, servers, admin, approvals, policy: raw.policy, audit: raw.audit, auth })
}

pub(super) fn legal_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn seconds(s: f64, field: &str) -> Result<Duration, ConfigError> {
    Duration::try_from_secs_f64(s).map_err(|_| ConfigError::new("must be a number of seconds ≥ 0").field(field))
}

fn validate_server(
    name: &str,
    s: RawServer,
    single: bool,
    base: &Path,
    source: &dyn expand::Source,
) -> Result<ServerConfig, ConfigError> {
    let f = |key: &str| format!("servers.{name}.{key}");
    if name.is_empty() || !name.chars().all(legal_name_char) {
        return Err(
            ConfigError::new("a server's name must be one or more of a-z A-Z 0-9 _ -").field(format!("servers.{name}"))
        );
    }
    let kind = match (s.command, s.url) {
        (Some(_), Some(_)) => return Err(ConfigError::new("give `command` or `url`, not both").field(f("url"))),
        (None, None) => {
            return Err(ConfigError::new("needs `command` (stdio) or `url` (HTTP)").field(format!("servers.{name}")));
        }
        (Some(command), None) => {
            let command = expand::expand(&command, &f("command"), source)?;
            if command.trim().is_empty() {
                return Err(ConfigError::new("is empty").field(f("command")));
            }
            let args = s
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| expand::expand(a, &format!("{}[{i}]", f("args")), source))
                .collect::<Result<Vec<_>, _>>()?;
            let mut env = BTreeMap::new();
            if let Some(file) = &s.env_file {
                let path = base.join(expand::expand(file, &f("env_file"), source)?);
                for item in dotenvy::from_path_iter(&path).map_err(|e| {
                    ConfigError::new(format!("cannot read {}: {e}", path.display())).field(f("env_file"))
                })? {
                    let (k, v) = item.map_err(|e| {
                        ConfigError::new(format!("{}: not a KEY=VALUE line ({})", path.display(), env_file_error(&e)))
                            .field(f("env_file"))
                    })?;
                    env.insert(k, Secret::new(v));
                }
            }
            for (k, v) in &s.env {
                env.insert(k.clone(), Secret::new(expand::expand(v, &format!("{}.{k}", f("env")), source)?));
            }
            let cwd = match &s.cwd {
                Some(c) => Some(base.join(expand::expand(c, &f("cwd"), source)?)),
                None => None,
            };
            ServerKind::Stdio { command, args, env, cwd }
        }
        (None, Some(url)) => {
            let url = expand::expand(&url, &f("url"), source)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::new("must be an http:// or https:// URL").field(f("url")));
            }
            let legacy_sse = match s.transport.as_deref() {
                None | Some("streamable-http" | "http") => false,
                Some("sse") => true,
                Some(other) => {
                    return Err(
                        ConfigError::new(format!("`{other}` is not one of streamable-http, sse")).field(f("transport"))
                    );
                }
            };
            let mut headers = BTreeMap::new();
            for (k, v) in &s.headers {
                headers.insert(k.clone(), Secret::new(expand::expand(v, &format!("{}.{k}", f("headers")), source)?));
            }
            let oauth = match &s.oauth {
                None => None,
                Some(o) => {
                    let client_credentials = match o.grant.as_deref() {
                        None | Some("authorization_code") => false,
                        Some("client_credentials") => true,
                        Some(other) => {
                            return Err(ConfigError::new(format!(
                                "`{other}` is not one of authorization_code, client_credentials"
                            ))
                            .field(f("oauth.grant")));
                        }
                    };
                    let client_id =
                        o.client_id.as_deref().map(|v| expand::expand(v, &f("oauth.client_id"), source)).transpose()?;
                    let client_secret = o
                        .client_secret
                        .as_deref()
                        .map(|v| expand::expand(v, &f("oauth.client_secret"), source).map(Secret::new))
                        .transpose()?;
                    if client_credentials && (client_id.is_none() || client_secret.is_none()) {
                        return Err(ConfigError::new("the client_credentials grant needs client_id and client_secret")
                            .field(f("oauth")));
                    }
                    if headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
                        return Err(
                            ConfigError::new("give an Authorization header or `oauth`, not both").field(f("oauth"))
                        );
                    }
                    let addresses = match o.addresses.as_deref() {
                        None | Some("match-server") => portico::auth::AddressPolicy::MatchServer,
                        Some("public-only") => portico::auth::AddressPolicy::PublicOnly,
                        Some("any") => portico::auth::AddressPolicy::Any,
                        Some(other) => {
                            return Err(ConfigError::new(format!(
                                "`{other}` is not one of match-server, public-only, any"
                            ))
                            .field(f("oauth.addresses")));
                        }
                    };
                    Some(OAuthConfig {
                        client_credentials,
                        client_id,
                        client_secret,
                        scopes: o.scopes.clone(),
                        addresses,
                    })
                }
            };
            ServerKind::Http { url, headers, legacy_sse, oauth }
        }
    };
    if matches!(kind, ServerKind::Stdio { .. }) && (!s.headers.is_empty() || s.transport.is_some() || s.oauth.is_some())
    {
        return Err(ConfigError::new("`headers`, `transport` and `oauth` are for `url` servers").field(f("headers")));
    }
    let prefix = s.prefix.unwrap_or_else(|| name.to_owned());
    if prefix.is_empty() && !single {
        return Err(ConfigError::new("an empty prefix is allowed only with a single server").field(f("prefix")));
    }
    if !prefix.chars().all(legal_name_char) {
        return Err(ConfigError::new("must be made of a-z A-Z 0-9 _ -").field(f("prefix")));
    }
    for (i, glob) in s.include.iter().chain(&s.exclude).enumerate() {
        globset::Glob::new(glob)
            .map_err(|e| ConfigError::new(format!("not a glob: {e}")).field(format!("{}[{i}]", f("include"))))?;
    }
    for (from, to) in &s.rename {
        if to.is_empty() || !to.chars().all(legal_name_char) {
            return Err(
                ConfigError::new("a new name must be made of a-z A-Z 0-9 _ -").field(format!("{}.{from}", f("rename")))
            );
        }
    }
    let is_http = matches!(kind, ServerKind::Http { .. });
    if s.shared.is_some() && !is_http {
        return Err(ConfigError::new("`shared` is for `url` servers; stdio servers use `isolate`").field(f("shared")));
    }
    let isolate = match (s.isolate.as_deref(), s.shared) {
        (Some(_), Some(_)) => return Err(ConfigError::new("give `isolate` or `shared`, not both").field(f("shared"))),
        (None, Some(true)) => Isolation::Shared,
        (None, Some(false)) => Isolation::PerClient,
        (None, None) if is_http => Isolation::PerClient,
        (None, None) | (Some("shared"), None) => Isolation::Shared,
        (Some("per-client"), None) => Isolation::PerClient,
        (Some(other), None) => {
            return Err(ConfigError::new(format!("`{other}` is not one of shared, per-client")).field(f("isolate")));
        }
    };
    for (i, root) in s.roots.iter().enumerate() {
        if !root.starts_with("file://") {
            return Err(ConfigError::new("a root must be a file:// URI").field(format!("{}[{i}]", f("roots"))));
        }
    }
    let defaults = RestartPolicy::default();
    let restart = match s.restart {
        None => defaults,
        Some(r) => RestartPolicy {
            initial_backoff: r
                .initial_backoff
                .map(|v| seconds(v, &f("restart.initial_backoff")))
                .transpose()?
                .unwrap_or(defaults.initial_backoff),
            max_backoff: r
                .max_backoff
                .map(|v| seconds(v, &f("restart.max_backoff")))
                .transpose()?
                .unwrap_or(defaults.max_backoff),
            max_restarts: r.max_restarts.unwrap_or(defaults.max_restarts),
        },
    };
    let positive = |v: Option<usize>, key: &str, default: usize| match v {
        Some(0) => Err(ConfigError::new("must be at least 1").field(f(key))),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        kind,
        enabled: s.enabled.unwrap_or(true),
        lazy: s.lazy.unwrap_or(false),
        include: s.include,
        exclude: s.exclude,
        rename: s.rename,
        prefix,
        timeout: s.timeout.map(|v| seconds(v, &f("timeout"))).transpose()?.unwrap_or(Duration::from_secs(60)),
        startup_timeout: s
            .startup_timeout
            .map(|v| seconds(v, &f("startup_timeout")))
            .transpose()?
            .unwrap_or(Duration::from_secs(30)),
        max_concurrent: positive(s.max_concurrent, "max_concurrent", 32)?,
        max_result_bytes: positive(s.max_result_bytes, "max_result_bytes", 16 << 20)?,
        max_notifications_per_sec: u32::try_from(positive(
            s.max_notifications_per_sec,
            "max_notifications_per_sec",
            2_000,
        )?)
        .unwrap_or(u32::MAX),
        roots: s.roots,
        isolate,
        trusted: s.trusted.unwrap_or(false),
        protocol_version: match &s.protocol_version {
            None => None,
            Some(v) => Some(portico::schema::ProtocolVersion::parse(v).ok_or_else(|| {
                ConfigError::new(format!("`{v}` is not a revision this build knows (2024-11-05 … 2026-07-28)"))
                    .field(f("protocol_version"))
            })?),
        },
        max_clients: positive(s.max_clients, "max_clients", 16)?,
        idle_timeout: s
            .idle_timeout
            .map(|v| seconds(v, &f("idle_timeout")))
            .transpose()?
            .unwrap_or(Duration::from_secs(300)),
        restart,
    })
}

/// Says what is wrong with an env file without quoting its (secret) line.
fn env_file_error(e: &dotenvy::Error) -> String {
    match e {
        dotenvy::Error::LineParse(_, index) => format!("at byte {index}"),
        dotenvy::Error::Io(e) => e.to_string(),
        _ => "unreadable".to_owned(),
    }
}

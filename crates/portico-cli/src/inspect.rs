//! `servers`, `tools`, `call`, `read`, `prompt`: against the configured host, or one server
//! directly (`--server`), where no policy applies.

use std::collections::BTreeMap;
use std::path::Path;

use clap::Args;
use portico::client::{CallOptions, Client};
use portico::schema::{CallToolResult, Implementation, Tool};
use portico::transport::child::{ChildHandle, ChildProcess};
use portico::transport::http::client::HttpClientTransport;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use portico_host::Host;
use portico_host::upstream::State;
use serde_json::{Map, Value};

use crate::output;
use crate::{Failure, load_config};

/// Set while the terminal shows an approval question, so the spinner waits.
pub(crate) fn paused() -> Arc<AtomicBool> {
    static PAUSED: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    PAUSED.get_or_init(|| Arc::new(AtomicBool::new(false))).clone()
}

/// How long `servers`, `tools` and the rest wait for upstreams to start.

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's exposed name (`server__tool`).
    name: String,
    /// Arguments as key=value; a value that parses as JSON (number, true, [..], {..}) is taken
    /// as JSON, otherwise as a string.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Machine output; with a value, that JSON object is the arguments.
    #[arg(long, num_args = 0..=1, value_name = "ARGS")]
    json: Option<Option<String>>,
}

#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// The resource URI.
    uri: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    /// The prompt's exposed name.
    name: String,
    /// Arguments as key=value.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What the verbs talk to.
pub(crate) enum Target {
    /// The configured host, under its policy; a terminal answers its approvals.
    Host {
        host: Host,
        supervisor: Arc<portico_host::oversight::Supervisor>,
        _terminal: Option<AbortOnDrop>,
    },
    Direct {
        client: Client,
        child: Option<ChildHandle>,
    },
}

/// Stops the terminal approval channel with the command.
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A target not yet started (starting needs the runtime).
pub(crate) enum Pending {
    Host(Box<portico_host::config::Config>),
    Direct(String),
}

impl Pending {
    pub(crate) fn new(config: Option<&Path>, server: Option<&str>) -> Result<Pending, Failure> {
        match server {
            Some(s) => Ok(Pending::Direct(s.to_owned())),
            None => Ok(Pending::Host(Box::new(load_config(config)?))),
        }
    }

    async fn start(self) -> Result<Target, Failure> {
        match self {
            Pending::Host(config) => {
                let supervisor = Arc::new(crate::supervisor(&config).await?);
                let terminal = crate::ask_tty::attach(supervisor.approvals(), paused()).map(AbortOnDrop);
                supervisor.attach_terminal(terminal.is_some());
                let wait = config.startup_wait();
                let host = Host::with_oversight(*config, supervisor.clone());
                host.ready(wait).await;
                Ok(Target::Host { host, supervisor, _terminal: terminal })
            }
            Pending::Direct(spec) => connect_direct(&spec).await,
        }
    }

    pub(crate) async fn servers(self, json: bool) -> Result<(), Failure> {
        let target = self.start().await?;
        let result = match &target {
            Target::Host { host, .. } => {
                let statuses = host.statuses();
                output::servers(&statuses, json);
                Ok(())
            }
            Target::Direct { client, child } => {
                let info = client.server_info();
                let row = serde_json::json!({
                    "name": info.name, "version": info.version, "protocol_version": client.protocol_version().as_str(),
                    "pid": child.as_ref().map(ChildHandle::pid), "state": "ready",
                });
                output::direct_server(&row, json);
                Ok(())
            }
        };
        target.close().await;
        result
    }

    pub(crate) async fn tools(self, json: bool) -> Result<(), Failure> {
        let target = self.start().await?;
        let tools: Result<Vec<(Tool, Option<String>)>, Failure> = match &target {
            Target::Host { host, .. } => Ok(host
                .registry()
                .tools
                .values()
                .map(|e| (Tool::clone(&e.tool), Some(e.origin.server.clone())))
                .collect()),
            Target::Direct { client, .. } => client
                .list_all_tools()
                .await
                .map(|t| t.into_iter().map(|t| (t, None)).collect())
                .map_err(|e| Failure::Unavailable(format!("listing tools failed: {e}"))),
        };
        let result = tools.map(|t| output::tools(&t, json));
        target.close().await;
        result
    }

    pub(crate) async fn call(self, args: CallArgs) -> Result<(), Failure> {
        let mut arguments = parse_pairs(&args.pairs)?;
        if let Some(Some(raw)) = &args.json {
            let extra: Map<String, Value> = serde_json::from_str(raw)
                .map_err(|e| Failure::Usage(format!("--json must be a JSON object of arguments: {e}")))?;
            arguments.extend(extra);
        }
        let json = args.json.is_some();
        let target = self.start().await?;
        let spinner = output::Spinner::start(&args.name);
        let result: Result<CallToolResult, Failure> = match &target {
            Target::Host { host, .. } => {
                if !host.registry().tools.contains_key(&args.name) {
                    let unavailable = host
                        .statuses()
                        .into_iter()
                        .find(|s| !matches!(s.state, State::Ready | State::Degraded) && args.name.starts_with(&s.name));
                    Err(match unavailable {
                        Some(s) => Failure::Unavailable(format!(
                            "server `{}` is {}{}",
                            s.name,
                            s.state.as_str(),
                            s.last_error.map(|e| format!(": {e}")).unwrap_or_default()
                        )),
                        None => Failure::Usage(format!("no tool `{}` (see `portico tools`)", args.name)),
                    })
                } else {
                    Ok(host.call_tool(&args.name, Value::Object(arguments), None).await)
                }
            }
            Target::Direct { client, .. } => {
                let progress = spinner.sink();
                client
                    .call_tool_with(&args.name, Value::Object(arguments), CallOptions::new().with_progress(progress))
                    .await
                    .map_err(|e| Failure::Unavailable(format!("the call failed: {e}")))
            }
        };
        drop(spinner);
        target.close().await;
        let result = result?;
        output::call_result(&result, json);
        if result.is_error == Some(true) { Err(Failure::ToolError) } else { Ok(()) }
    }

    pub(crate) async fn read(self, args: ReadArgs) -> Result<(), Failure> {
        let target = self.start().await?;
        let result = match &target {
            Target::Host { host, .. } => {
                host.read_resource(&args.uri, None, None).await.map_err(|e| Failure::Unavailable(e.to_string()))
            }
            Target::Direct { client, .. } => {
                client.read_resource(&args.uri).await.map_err(|e| Failure::Unavailable(format!("the read failed: {e}")))
            }
        };
        target.close().await;
        output::read_result(&result?, args.json);
        Ok(())
    }

    pub(crate) async fn prompt(self, args: PromptArgs) -> Result<(), Failure> {
        let pairs: BTreeMap<String, String> = args
            .pairs
            .iter()
            .map(|p| split_pair(p).map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect::<Result<_, _>>()?;
        let target = self.start().await?;
        let result = match &target {
            Target::Host { host, .. } => {
                host.get_prompt(&args.name, pairs, None).await.map_err(|e| Failure::Unavailable(e.to_string()))
            }
            Target::Direct { client, .. } => client
                .get_prompt(&args.name, pairs)
                .await
                .map_err(|e| Failure::Unavailable(format!("the prompt failed: {e}"))),
        };
        target.close().await;
        output::prompt_result(&result?, args.json);
        Ok(())
    }
}

impl Target {
    async fn close(self) {
        match self {
            Target::Host { host, supervisor, .. } => {
                host.shutdown().await;
                crate::close_audit(&supervisor).await;
            }
            Target::Direct { client, child } => {
                client.close().await;
                if let Some(child) = child {
                    let _ = child.shutdown().await;
                }
            }
        }
    }
}

async fn connect_direct(spec: &str) -> Result<Target, Failure> {
    let builder = Client::builder(Implementation::new("portico", env!("CARGO_PKG_VERSION")));
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let client = builder
            .connect(HttpClientTransport::new(spec))
            .await
            .map_err(|e| Failure::Unavailable(format!("cannot connect to {spec}: {e}")))?;
        return Ok(Target::Direct { client, child: None });
    }
    let words = shell_words::split(spec).map_err(|e| Failure::Usage(format!("--server: {e}")))?;
    let (program, rest) = words.split_first().ok_or_else(|| Failure::Usage("--server is empty".to_owned()))?;
    let (transport, child) = ChildProcess::new(program)
        .args(rest)
        .process_group(true)
        .spawn()
        .map_err(|e| Failure::Unavailable(format!("cannot start `{program}`: {e}")))?;
    match builder.connect(transport).await {
        Ok(client) => Ok(Target::Direct { client, child: Some(child) }),
        Err(e) => {
            let _ = child.shutdown().await;
            Err(Failure::Unavailable(format!("`{program}` did not complete the MCP handshake: {e}")))
        }
    }
}

fn split_pair(pair: &str) -> Result<(&str, &str), Failure> {
    pair.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| Failure::Usage(format!("`{pair}` is not KEY=VALUE")))
}

/// `key=value` pairs as a JSON object: a value that parses as JSON other than a bare string
/// is taken as JSON (`n=3`, `flag=true`, `list=[1,2]`), everything else as a string.
pub(crate) fn parse_pairs(pairs: &[String]) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    for pair in pairs {
        let (k, v) = split_pair(pair)?;
        let value = match serde_json::from_str::<Value>(v) {
            Ok(Value::String(_)) | Err(_) => Value::String(v.to_owned()),
            Ok(other) => other,
        };
        out.insert(k.to_owned(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_take_json_values_and_strings() {
        let pairs: Vec<String> = ["a=1", "b=true", "c=hello", "d=[1,2]", "e=\"q\"", "f=x=y"].map(String::from).to_vec();
        let m = parse_pairs(&pairs).expect("pairs");
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"a": 1, "b": true, "c": "hello", "d": [1, 2], "e": "\"q\"", "f": "x=y"})
        );
        assert!(parse_pairs(&["novalue".to_owned()]).is_err());
        assert!(parse_pairs(&["=v".to_owned()]).is_err());
    }
}

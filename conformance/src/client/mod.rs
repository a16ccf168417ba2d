//! What the conformance client does in each scenario.
//!
//! Each scenario is a short script over Portico's public client API; everything the suite
//! checks (era detection, `_meta`, mirrored headers, SSE resumption, input-required retries,
//! schema defaults, skill verification) is the library's doing, not this module's.

mod arguments;
mod auth;
mod handler;

use std::time::Duration;

use portico::Error;
use portico::client::skills::{SkillEntry, SkillResources};
use portico::client::{Client, EraMode};
use portico::schema::{ClientCapabilities, Implementation, ProtocolVersion, Tool};
use portico::transport::http::client::HttpClientTransport;
use serde_json::{Value, json};

pub use handler::ConformanceHandler;

/// Environment variable naming the scenario.
const SCENARIO_ENV: &str = "MCP_CONFORMANCE_SCENARIO";
/// Environment variable with the scenario's data (JSON), when it has some.
const CONTEXT_ENV: &str = "MCP_CONFORMANCE_CONTEXT";
/// Environment variable with the revision to speak (suite 0.2.0 and later).
const VERSION_ENV: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";

/// Time allowed for each request; the suite's own timeout is 30 s per scenario.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// One run, as the suite describes it.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `MCP_CONFORMANCE_SCENARIO`.
    pub name: String,
    /// The test server's MCP endpoint.
    pub url: String,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed.
    pub context: Value,
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION`, or `None` to detect the era.
    pub version: Option<ProtocolVersion>,
}

impl Scenario {
    /// Reads the scenario from the environment.
    pub fn from_env(url: String) -> Result<Self, String> {
        let name = std::env::var(SCENARIO_ENV).map_err(|_| format!("{SCENARIO_ENV} is not set"))?;
        let context = match std::env::var(CONTEXT_ENV) {
            Ok(c) => serde_json::from_str(&c).map_err(|e| format!("{CONTEXT_ENV} is not JSON: {e}"))?,
            Err(_) => Value::Null,
        };
        let version = match std::env::var(VERSION_ENV) {
            Ok(v) => Some(
                ProtocolVersion::parse(&v).ok_or_else(|| format!("{VERSION_ENV}={v:?} is not a revision we know"))?,
            ),
            Err(_) => None,
        };
        Ok(Scenario { name, url, context, version })
    }

    /// The era to connect in.
    fn era(&self) -> EraMode {
        match self.version {
            None => EraMode::Auto,
            Some(v) if v.is_stateless() => EraMode::Stateless,
            Some(v) => EraMode::Handshake(v),
        }
    }
}

/// Why a scenario could not run to its end.
type Failure = String;

fn because(what: &str) -> impl FnOnce(Error) -> Failure + '_ {
    move |e| format!("{what}: {e}")
}

/// Connects as the suite expects a full-featured client to: sampling, form elicitation and
/// roots declared, and answered by [`ConformanceHandler`].
async fn connect(s: &Scenario) -> Result<Client, Failure> {
    let caps = ClientCapabilities::new().with_sampling(false).with_elicitation(true, false).with_roots(true);
    let mut transport = HttpClientTransport::new(s.url.clone());
    if let Some(oauth) = auth::client_for(&s.name, &s.context)? {
        transport = transport.auth(oauth);
    }
    Client::builder(Implementation::new("portico-conformance-client", env!("CARGO_PKG_VERSION")))
        .capabilities(caps)
        .handler(ConformanceHandler)
        .era(s.era())
        .request_timeout(REQUEST_TIMEOUT)
        .connect(transport)
        .await
        .map_err(because("connecting failed"))
}

/// Runs the scenario, then closes the connection.
pub async fn run(s: Scenario) -> Result<(), Failure> {
    let client = connect(&s).await?;
    tracing::info!(scenario = %s.name, version = %client.protocol_version().as_str(), "connected");
    let outcome = perform(&s, &client).await;
    client.close().await;
    outcome
}

async fn perform(s: &Scenario, client: &Client) -> Result<(), Failure> {
    match s.name.as_str() {
        "initialize" | "json-schema-ref-no-deref" => {
            client.list_all_tools().await.map_err(because("tools/list failed"))?;
            Ok(())
        }
        "tools_call" => call_named(client, "add_numbers", json!({ "a": 5, "b": 3 })).await,
        "elicitation-sep1034-client-defaults" => {
            call_named(client, "test_client_elicitation_defaults", json!({})).await
        }
        "sse-retry" => call_named(client, "test_reconnection", json!({})).await,
        "sep-2322-client-request-state" => request_state(client).await,
        "http-standard-headers" => exercise_everything(client).await,
        "http-custom-headers" => context_tool_calls(s, client).await,
        "json-schema-2020-12-preservation" => echo_schema(client).await,
        "sep-2640-client-no-prefetch" => list_skills(client).await.map(drop),
        "sep-2640-client-verify-digest" | "sep-2640-client-verify-size" | "sep-2640-client-verify-frontmatter" => {
            use_first_skill(client).await
        }
        // request-metadata, http-invalid-tool-headers, and anything new: use every tool.
        _ => call_every_tool(client).await,
    }
}

/// Lists the tools, then calls `name` with `arguments`.
async fn call_named(client: &Client, name: &str, arguments: Value) -> Result<(), Failure> {
    let tools = client.list_all_tools().await.map_err(because("tools/list failed"))?;
    if !tools.iter().any(|t| t.name == name) {
        return Err(format!("the server does not list the tool {name:?}"));
    }
    call(client, name, arguments).await
}

async fn call(client: &Client, name: &str, arguments: Value) -> Result<(), Failure> {
    let result = client.call_tool(name, arguments).await.map_err(|e| format!("tools/call {name} failed: {e}"))?;
    tracing::info!(tool = name, is_error = ?result.is_error, "tool called");
    Ok(())
}

/// Calls every listed tool with arguments made up from its input schema.
async fn call_every_tool(client: &Client) -> Result<(), Failure> {
    let tools = client.list_all_tools().await.map_err(because("tools/list failed"))?;
    for tool in &tools {
        match client.call_tool(&tool.name, arguments::example(&tool.input_schema)).await {
            Ok(result) => tracing::info!(tool = tool.name.as_str(), is_error = ?result.is_error, "tool called"),
            // A protocol error is the server's answer, not a client failure: the tasks
            // extension's fixtures refuse clients without the extension (-32021) or fail on
            // purpose. Portico's own test checks which fixtures must succeed.
            Err(e) if e.peer_error().is_some() => {
                let code = e.peer_error().map(|p| p.code.0);
                tracing::info!(tool = tool.name.as_str(), ?code, "tool answered with a protocol error");
            }
            Err(e) => return Err(format!("tools/call {} failed: {e}", tool.name)),
        }
    }
    Ok(())
}

/// Lists and uses every tool, resource and prompt.
async fn exercise_everything(client: &Client) -> Result<(), Failure> {
    call_every_tool(client).await?;
    let caps = client.server_capabilities().clone();
    if caps.resources.is_some() {
        for r in client.list_all_resources().await.map_err(because("resources/list failed"))? {
            client.read_resource(&r.uri).await.map_err(|e| format!("resources/read {} failed: {e}", r.uri))?;
        }
    }
    if caps.prompts.is_some() {
        for p in client.list_all_prompts().await.map_err(because("prompts/list failed"))? {
            let args = p.arguments.iter().flatten().filter(|a| a.required == Some(true));
            let args: Vec<(String, String)> = args.map(|a| (a.name.clone(), "example".to_owned())).collect();
            client.get_prompt(&p.name, args).await.map_err(|e| format!("prompts/get {} failed: {e}", p.name))?;
        }
    }
    Ok(())
}

/// Calls the tools listed in the context's `toolCalls`, with their arguments.
async fn context_tool_calls(s: &Scenario, client: &Client) -> Result<(), Failure> {
    let calls = s
        .context
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{CONTEXT_ENV} has no toolCalls"))?;
    client.list_all_tools().await.map_err(because("tools/list failed"))?;
    for c in calls {
        let name = c.get("name").and_then(Value::as_str).ok_or("a toolCalls entry has no name")?;
        call(client, name, c.get("arguments").cloned().unwrap_or(Value::Null)).await?;
    }
    Ok(())
}

/// Tools of the request-state scenario (SEP-2322).
const ECHO_STATE: &str = "test_mrtr_echo_state";
const NO_STATE: &str = "test_mrtr_no_state";
const UNRELATED: &str = "test_mrtr_unrelated";
const NO_RESULT_TYPE: &str = "test_mrtr_no_result_type";

/// Input-required flows (SEP-2322): with and without `requestState`, a call of another tool
/// running beside one, and a result without `resultType`.
async fn request_state(client: &Client) -> Result<(), Failure> {
    let tools = client.list_all_tools().await.map_err(because("tools/list failed"))?;
    for name in [ECHO_STATE, NO_STATE, UNRELATED, NO_RESULT_TYPE] {
        if !tools.iter().any(|t| t.name == name) {
            return Err(format!("the server does not list the tool {name:?}"));
        }
    }
    let (a, b) = tokio::join!(call(client, ECHO_STATE, json!({})), call(client, UNRELATED, json!({})));
    a?;
    b?;
    call(client, NO_STATE, json!({})).await?;
    call(client, NO_RESULT_TYPE, json!({})).await
}

/// The tool whose schema the preservation scenario checks, and the tool that echoes it back.
const FOCAL_TOOL: &str = "json_schema_2020_12_tool";
const ECHO_TOOL: &str = "json_schema_echo";

/// Sends the focal tool's input schema back, as the client received it.
async fn echo_schema(client: &Client) -> Result<(), Failure> {
    let tools = client.list_all_tools().await.map_err(because("tools/list failed"))?;
    let focal: &Tool = tools
        .iter()
        .find(|t| t.name == FOCAL_TOOL)
        .ok_or_else(|| format!("the server does not list the tool {FOCAL_TOOL:?}"))?;
    call(client, ECHO_TOOL, json!({ "schema": Value::Object(focal.input_schema.clone()) })).await
}

/// Lists the server's skills (SEP-2640); reads none of their files.
async fn list_skills(client: &Client) -> Result<Vec<SkillEntry>, Failure> {
    if !client.supports_skills() {
        return Err("the server does not declare the skills extension".into());
    }
    let skills = client.list_all_skills().await.map_err(because("skills/list failed"))?;
    for s in &skills {
        tracing::info!(uri = %s.uri, name = ?s.name(), "skill listed");
    }
    Ok(skills)
}

/// Loads the first skill, as a host would once the model picks it: its `SKILL.md`, verified
/// against the entry, then its other files, each verified. Content that fails verification
/// ends the scenario with an error (the suite expects the client to refuse it).
async fn use_first_skill(client: &Client) -> Result<(), Failure> {
    let skills = list_skills(client).await?;
    let entry = skills.first().ok_or("the server lists no skills")?;
    let loaded = client.load_skill(entry).await.map_err(because("the skill was refused"))?;
    tracing::info!(uri = %entry.uri, bytes = loaded.text.len(), "skill loaded");
    if let SkillResources::Files(files) = &entry.resources {
        for f in files.iter().filter(|f| f.uri != entry.uri) {
            client.read_skill_file(entry, &f.uri).await.map_err(because("a skill file was refused"))?;
        }
    }
    Ok(())
}

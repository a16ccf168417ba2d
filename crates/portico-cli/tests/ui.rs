//! The web UI in a real browser: headless Chromium (Debian's) driven by playwright-core
//! (`tests/ui/ui_test.cjs`) against a real `portico serve --ui`, whose upstreams are Portico's
//! `everything` example and a hostile server (`tests/ui/hostile_server.py`), while real
//! downstream MCP clients (Portico's, over Streamable HTTP: one stateless, one in the handshake
//! era with a session, and one whose model answers the upstream's sampling requests) make the
//! calls that need approval.
//!
//! The script asks this test for downstream calls with `@@ {json}` lines on its stdout and
//! reads the answers on its stdin. Screenshots of every page at 1280 and 375 px go to
//! `target/ui-screenshots/`.
//!
//! `scripts/install-ui-test.sh` installs Chromium (as root) and playwright-core (pinned) under
//! `.ci-cache/ui`. Without them the test is skipped with a notice, unless
//! `PORTICO_REQUIRE_UI=1`, which makes that a failure (CI sets it).
//!
//! Every process started here is stopped when the test ends (guards kill on drop), every wait
//! is bounded, and everything listens on 127.0.0.1 on ports the kernel picks.
#![cfg(unix)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::everything;
use futures_util::future::BoxFuture;
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ErrorObject, Implementation, ProtocolVersion,
    SamplingMessageContentBlock, TextContent,
};
use portico::transport::http::client::HttpClientTransport;
use serde_json::{Value, json};

const REQUIRE_ENV: &str = "PORTICO_REQUIRE_UI";
const TOKEN: &str = "ui-test-admin-token-0123456789abcdef";
const CHROMIUM: &str = "/usr/bin/chromium";
/// The longest the gateway may take to start, and a downstream call to end.
const LIMIT: Duration = Duration::from_secs(90);
/// The longest the browser script may run (it has its own watchdog, a little shorter).
const SCRIPT_LIMIT: Duration = Duration::from_secs(260);

fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().and_then(Path::parent).map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui").join(name)
}

/// The target directory this test was built into.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("exe");
    exe.ancestors().nth(3).map_or_else(|| workspace_root().join("target"), Path::to_path_buf)
}

/// playwright-core's directory, or why the test cannot run.
fn prerequisites() -> Result<PathBuf, String> {
    if !Path::new(CHROMIUM).exists() {
        return Err(format!("{CHROMIUM} is missing"));
    }
    let module = workspace_root().join(".ci-cache/ui/node_modules/playwright-core");
    if !module.join("package.json").exists() {
        return Err(format!("{} is missing", module.display()));
    }
    let node = Command::new("node").arg("--version").output().map_err(|e| format!("node: {e}"))?;
    if !node.status.success() {
        return Err("node does not run".to_owned());
    }
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Err("python3 does not run".to_owned());
    }
    Ok(module)
}

/// A process whose stderr is kept (and printed if the test fails), killed on drop.
struct Proc {
    name: &'static str,
    child: Child,
    lines: Receiver<String>,
    log: Arc<Mutex<String>>,
}

impl Proc {
    fn spawn(name: &'static str, cmd: &mut Command) -> Proc {
        cmd.stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let (tx, lines) = channel();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut l) = keep.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
                let _ = tx.send(line);
            }
        });
        Proc { name, child, lines, log }
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The first stderr line for which `find` returns something, within [`LIMIT`].
    fn wait_for<T>(&self, what: &str, mut find: impl FnMut(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + LIMIT;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Some(found) = find(&line) {
                        return found;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("{}: no {what} within {LIMIT:?}", self.name),
                Err(RecvTimeoutError::Disconnected) => panic!("{}: exited before {what}", self.name),
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).stderr(Stdio::null()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("---- stderr of {} ----\n{}---- end of {} ----", self.name, self.log(), self.name);
        }
    }
}

fn config(dir: &Path) -> PathBuf {
    let text = format!(
        r#"[gateway]
state_dir = "state"
ping_interval = 0

[admin]
token = "{TOKEN}"

[approvals]
timeout = 90
channels = ["http"]

[[policy.rules]]
name = "additions"
tool = "ev__add"
decision = "allow"
reason = "adding numbers has no side effects"

[[policy.rules]]
name = "summaries-run"
tool = "ev__summarize"
decision = "allow"
reason = "only its sampling request is put to a person"

[[policy.rules]]
name = "tries-from-the-ui"
tool = "ev__sleep"
principal = "ui:*"
decision = "allow"

[[policy.rules]]
name = "countdowns-are-reviewed"
tool = "ev__countdown"
decision = "allow"
review_result = true

[[policy.rules]]
name = "whispers-are-asked"
tool = "hostile__trap"
args = [{{ pointer = "/tags/0", equals = "whisper" }}]
decision = "ask"

[[policy.rules]]
name = "the-trap-may-run"
server = "hostile"
decision = "allow"

[servers.ev]
command = {ev:?}

[servers.ev.restart]
initial_backoff = 3
max_backoff = 3

[servers.hostile]
command = "python3"
args = [{hostile:?}]
"#,
        ev = everything().display().to_string(),
        hostile = fixture("hostile_server.py").display().to_string(),
    );
    let path = dir.join("portico.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// The sampling client's model: answers with the first message's text it was given, so the
/// browser script sees which text reached it.
struct EchoModel;

impl ClientHandler for EchoModel {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        let first = params.messages.first().and_then(|m| m.content.blocks().first().and_then(|b| b.as_text()));
        let text = format!("saw: {}", first.unwrap_or_default());
        Box::pin(async move {
            Ok(CreateMessageResult::new(SamplingMessageContentBlock::Text(TextContent::new(text)), "echo"))
        })
    }
}

/// Answers the browser script's requests: downstream calls through the real MCP client.
struct Downstream {
    rt: tokio::runtime::Runtime,
    /// Stateless (2026-07-28).
    client: Client,
    /// Handshake era, with a session.
    session: Client,
    /// Handshake era, with a model for the upstream's sampling requests ([`EchoModel`]).
    sampler: Client,
    calls: HashMap<String, tokio::task::JoinHandle<Value>>,
}

impl Downstream {
    fn answer(&mut self, req: &Value) -> Value {
        let id = req["id"].as_str().unwrap_or_default().to_owned();
        let which = match req["client"].as_str() {
            Some("session") => &self.session,
            Some("sampler") => &self.sampler,
            _ => &self.client,
        };
        match req["do"].as_str() {
            Some("call") => {
                let client = which.clone();
                let tool = req["tool"].as_str().unwrap_or_default().to_owned();
                let args = req["args"].clone();
                let task = self.rt.spawn(async move {
                    match tokio::time::timeout(LIMIT, client.call_tool(&tool, args)).await {
                        Ok(Ok(r)) => serde_json::to_value(&r).unwrap_or_default(),
                        Ok(Err(e)) => json!({ "error": e.to_string() }),
                        Err(_) => json!({ "error": "no answer within the limit" }),
                    }
                });
                self.calls.insert(id, task);
                json!({ "ok": true })
            }
            Some("await") => {
                let Some(task) = self.calls.remove(&id) else { return json!({ "error": "no such call" }) };
                let result = self.rt.block_on(task).unwrap_or_else(|e| json!({ "error": e.to_string() }));
                json!({ "result": result })
            }
            Some("tools") => {
                let client = which;
                let listed = self.rt.block_on(async { tokio::time::timeout(LIMIT, client.list_all_tools()).await });
                let names: Vec<String> = match listed {
                    Ok(Ok(tools)) => tools.into_iter().map(|t| t.name).collect(),
                    _ => Vec::new(),
                };
                json!({ "tools": names })
            }
            _ => json!({ "error": "unknown request" }),
        }
    }
}

#[test]
fn the_web_ui_in_a_real_browser() {
    let module = match prerequisites() {
        Ok(m) => m,
        Err(why) => {
            assert!(
                std::env::var_os(REQUIRE_ENV).is_none_or(|v| v != "1"),
                "{REQUIRE_ENV}=1 and the browser tests cannot run: {why} (run scripts/install-ui-test.sh)"
            );
            eprintln!("skipped: the web UI's browser tests: {why} (run scripts/install-ui-test.sh)");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path());
    let portico = Proc::spawn(
        "portico serve",
        Command::new(env!("CARGO_BIN_EXE_portico"))
            .args(["serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--ui", "--startup-wait", "60", "-c"])
            .arg(&cfg)
            .env_remove("PORTICO_CONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let admin = portico.wait_for("the admin address", |l| {
        l.strip_prefix("portico: admin API on ").and_then(|r| r.split_whitespace().next()).map(str::to_owned)
    });
    let link = portico.wait_for("the login link", |l| {
        l.strip_prefix("portico: web UI: open ").and_then(|r| r.split_whitespace().next()).map(str::to_owned)
    });
    assert!(link.starts_with(&format!("{admin}/ui/login?token=")), "{link}");
    let mcp = portico.wait_for("the MCP endpoint", |l| {
        l.starts_with("portico: serving").then(|| l.rsplit(' ').next().map(str::to_owned)).flatten()
    });
    assert!(mcp.starts_with("http://127.0.0.1:"), "{mcp}");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let connect =
        Client::builder(Implementation::new("ui-test-client", "1.0")).connect(HttpClientTransport::new(mcp.as_str()));
    let client =
        rt.block_on(async { tokio::time::timeout(LIMIT, connect).await }).expect("connect in time").expect("connect");
    // A second client in the handshake era: a session of its own, for per-session switches.
    let connect = Client::builder(Implementation::new("ui-session-client", "1.0"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .connect(HttpClientTransport::new(mcp.as_str()));
    let session = rt
        .block_on(async { tokio::time::timeout(LIMIT, connect).await })
        .expect("connect in time")
        .expect("connect the session client");
    // A third, whose model answers the upstream's sampling requests.
    let connect = Client::builder(Implementation::new("ui-sampling-client", "1.0"))
        .era(EraMode::Handshake(ProtocolVersion::V2025_11_25))
        .capabilities(ClientCapabilities::new().with_sampling(false))
        .handler(EchoModel)
        .connect(HttpClientTransport::new(mcp.as_str()));
    let sampler = rt
        .block_on(async { tokio::time::timeout(LIMIT, connect).await })
        .expect("connect in time")
        .expect("connect the sampling client");
    let mut downstream = Downstream { rt, client, session, sampler, calls: HashMap::new() };

    let shots = target_dir().join("ui-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshots dir");
    let mut node = Proc::spawn(
        "ui_test.cjs",
        Command::new("node")
            .arg(fixture("ui_test.cjs"))
            .env("PLAYWRIGHT_CORE", &module)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .env("ADMIN", &admin)
            .env("TOKEN", TOKEN)
            .env("LOGIN_LINK", &link)
            .env("SHOTS", &shots)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped()),
    );
    let mut to_node = node.child.stdin.take().expect("stdin");
    let (tx, requests) = channel::<String>();
    let stdout = node.child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        let mut text = String::new();
        let mut reader = BufReader::new(stdout);
        loop {
            text.clear();
            match reader.read_line(&mut text) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(text.trim_end().to_owned()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let outcome = loop {
        let line = match requests.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("the browser script did not finish within {SCRIPT_LIMIT:?}"),
            Err(RecvTimeoutError::Disconnected) => break json!({ "do": "failed", "error": "the script exited" }),
        };
        let Some(req) = line.strip_prefix("@@ ").and_then(|j| serde_json::from_str::<Value>(j).ok()) else {
            continue;
        };
        if matches!(req["do"].as_str(), Some("done" | "failed")) {
            break req;
        }
        let answer = downstream.answer(&req);
        writeln!(to_node, "{answer}").expect("answer the script");
    };
    let status = node.child.wait().expect("wait for node");
    assert_eq!(outcome["do"], "done", "the browser scenarios failed: {outcome}\n---- script ----\n{}", node.log());
    assert!(status.success(), "node: {status}");
    let passed = outcome["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 23, "every scenario ran: {passed}");
    for page in ["servers", "tools", "approvals", "activity", "policy", "sampling", "completion"] {
        for width in [1280, 375] {
            let png = shots.join(format!("{page}-{width}.png"));
            assert!(png.metadata().is_ok_and(|m| m.len() > 1000), "screenshot {}", png.display());
        }
    }
    eprintln!("{}", node.log());
    drop(node);
    drop(portico);
}

//! The `portico` gateway between real MCP peers that nobody here wrote.
//!
//! Upstreams, joined by one `portico serve`:
//! - `se`: `@modelcontextprotocol/server-everything@2026.8.31` over stdio;
//! - `sehttp`: the same server over Streamable HTTP, a separate process on 127.0.0.1
//!   (`tests/interop/everything_http.mjs` keeps it on loopback and reports its port);
//! - `py`: a server written with the official Python SDK (`mcp` 2.3.0, `MCPServer`),
//!   `tests/interop/py_server.py`, over stdio, with a stateful tool (`tally`);
//! - `px`: Portico's own example `everything` over stdio.
//!
//! Downstream clients, through the gateway on stdio and on Streamable HTTP:
//! - the official Python SDK (`tests/interop/py_client.py`), in both eras: `mode="auto"`
//!   (`server/discover`, so 2026-07-28) and `mode="legacy"` (the `initialize` handshake);
//! - the official TypeScript SDK `@modelcontextprotocol/sdk@1.32.2`
//!   (`tests/interop/ts_client.mjs`), which speaks the handshake era (2025-11-25);
//! - Portico's own client, in 2026-07-28 by default and forced into the handshake era.
//!
//! Every client runs the same plan (list everything, call a tool of each upstream, read
//! resources, get prompts) and reports what it got as JSON; [`check`] asserts on the values.
//!
//! `scripts/install-interop.sh` (which runs `scripts/install-host-interop.sh`) installs the
//! peers under `.ci-cache`. Without them a test is skipped with a notice, unless
//! `PORTICO_REQUIRE_INTEROP=1`, which makes a missing peer a failure (CI sets it).
//!
//! Every process a test starts is stopped when the test ends (guards kill on drop), every
//! wait is bounded, and everything listens on 127.0.0.1 only, on ports the kernel picks.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portico::client::{Client, EraMode};
use portico::schema::{Implementation, ProtocolVersion};
use portico::transport::child::ChildProcess;
use portico::transport::http::client::HttpClientTransport;
use serde_json::{Value, json};

const REQUIRE_ENV: &str = "PORTICO_REQUIRE_INTEROP";

/// The longest a client script may run, or a process may take to start.
const LIMIT: Duration = Duration::from_secs(90);

/// The newest era, which Portico's client and the Python SDK's `mode="auto"` reach.
const MODERN: &str = "2026-07-28";
/// The last handshake revision, which the TypeScript SDK and `mode="legacy"` ask for.
const HANDSHAKE: &str = "2025-11-25";

// ---------------------------------------------------------------------------------------------
// Peers

fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().and_then(Path::parent).map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// `@modelcontextprotocol/server-everything`, from scripts/install-interop.sh.
    ServerEverything,
    /// The Python SDK's venv, from scripts/install-host-interop.sh.
    PythonSdk,
    /// The TypeScript SDK, from scripts/install-host-interop.sh.
    TypeScriptSdk,
}

impl Peer {
    fn path(self) -> PathBuf {
        let cache = workspace_root().join(".ci-cache");
        match self {
            Peer::ServerEverything => cache.join("npm/node_modules/.bin/mcp-server-everything"),
            Peer::PythonSdk => cache.join("py/bin/python"),
            Peer::TypeScriptSdk => cache.join("ts/node_modules/@modelcontextprotocol/sdk/package.json"),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Peer::ServerEverything => {
                "scripts/install-interop.sh installs @modelcontextprotocol/server-everything@2026.8.31"
            }
            Peer::PythonSdk => "scripts/install-host-interop.sh installs the Python SDK (mcp 2.3.0) in a venv",
            Peer::TypeScriptSdk => "scripts/install-host-interop.sh installs @modelcontextprotocol/sdk@1.32.2",
        }
    }
}

/// Whether every peer in `needed` is installed; if not, a notice (or a failure when
/// `PORTICO_REQUIRE_INTEROP=1`) naming what is missing and how to install it.
fn peers_present(test: &str, needed: &[Peer]) -> bool {
    let missing: Vec<String> = needed
        .iter()
        .filter(|p| !p.path().exists())
        .map(|p| format!("{} is missing: {}", p.path().display(), p.what()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{REQUIRE_ENV}=1 and {}", missing.join("; "));
    }
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPED: gateway interop test {test} did NOT run.");
    for m in &missing {
        eprintln!("!! {m}");
    }
    eprintln!("!! Run scripts/install-interop.sh; set {REQUIRE_ENV}=1 to make this a failure.");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    false
}

/// Portico's example `everything`, built once if `cargo test --workspace` has not built it.
fn portico_everything() -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let exe = std::env::current_exe().expect("test exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let path = profile_dir.join("examples/everything");
    let _guard = BUILD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "portico-mcp", "--example", "everything"])
            .current_dir(workspace_root())
            .status()
            .expect("cargo build");
        assert!(status.success(), "building example everything failed");
    }
    assert!(path.exists(), "{} missing", path.display());
    path
}

fn portico_bin() -> &'static str {
    env!("CARGO_BIN_EXE_portico")
}

// ---------------------------------------------------------------------------------------------
// Processes

/// A process the test started: stopped (SIGTERM, then SIGKILL) when dropped, its stderr kept
/// and printed if the test fails.
struct Proc {
    name: String,
    child: Child,
    log: Arc<Mutex<String>>,
    lines: Receiver<String>,
}

impl Proc {
    /// Starts `cmd` with its stderr kept (stdin and stdout as `cmd` says: set them).
    fn spawn(name: &str, cmd: &mut Command) -> Proc {
        cmd.stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut log) = sink.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
                let _ = tx.send(line);
            }
        });
        Proc { name: name.to_owned(), child, log, lines }
    }

    /// Like [`spawn`](Self::spawn), with stdin and stdout piped: the process, its stdin, and
    /// its stdout's lines.
    fn spawn_stdio(name: &str, cmd: &mut Command) -> (Proc, std::process::ChildStdin, Receiver<String>) {
        let mut proc = Proc::spawn(name, cmd.stdin(Stdio::piped()).stdout(Stdio::piped()));
        let stdin = proc.child.stdin.take().expect("piped stdin");
        let stdout = proc.child.stdout.take().expect("piped stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        (proc, stdin, lines)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The first stderr line for which `find` returns something, within [`LIMIT`].
    fn wait_for<T>(&self, what: &str, mut find: impl FnMut(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(found) = find(&line) {
                        return found;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{}: no {what} within {LIMIT:?}; stderr:\n{}", self.name, self.log())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{}: exited before {what}; stderr:\n{}", self.name, self.log())
                }
            }
        }
    }

    /// Asks the process to stop (SIGTERM) and waits up to `grace`; then kills it. `None` if
    /// it had to be killed.
    fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).stderr(Stdio::null()).status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
        if std::thread::panicking() {
            eprintln!("---- stderr of {} ----\n{}---- end of {} ----", self.name, self.log(), self.name);
        }
    }
}

/// The stderr of a process the SDK spawned ([`ChildProcess::on_stderr`]), printed if the test
/// fails.
struct StderrLog {
    name: &'static str,
    text: Arc<Mutex<String>>,
}

impl StderrLog {
    fn new(name: &'static str) -> StderrLog {
        StderrLog { name, text: Arc::default() }
    }

    /// Waits (bounded) until a line containing `needle` has been written.
    async fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + LIMIT;
        while !self.text.lock().is_ok_and(|t| t.contains(needle)) {
            assert!(Instant::now() < deadline, "{}: no `{needle}` within {LIMIT:?}", self.name);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn sink(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let text = self.text.clone();
        move |line: &str| {
            if let Ok(mut t) = text.lock() {
                t.push_str(line);
                t.push('\n');
            }
        }
    }
}

impl Drop for StderrLog {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = self.text.lock().map(|t| t.clone()).unwrap_or_default();
            eprintln!("---- stderr of {} ----\n{text}---- end of {} ----", self.name, self.name);
        }
    }
}

/// Runs a client script to its end (at most [`LIMIT`]) and returns the JSON it printed last.
fn run_client(name: &str, cmd: &mut Command) -> Value {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = String::new();
            let _ = r.read_to_string(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let Some(status) = status else { panic!("{name} did not finish within {LIMIT:?}; stderr:\n{stderr}") };
    assert!(status.success(), "{name} failed ({status}); stderr:\n{stderr}\nstdout:\n{stdout}");
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{name} printed no JSON report ({e}):\n{stdout}\n{stderr}"))
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// The children of `pid` (all threads).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Waits (bounded) until none of `pids` is alive.
fn assert_all_gone(what: &str, pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "{what}: still running: {:?}", pids.iter().filter(|p| alive(**p)));
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// The gateway and its upstreams

/// The top of every config here: state in `dir`, and tools called without asking (these tests
/// are about the protocol; the default policy asks a person before each tool call).
fn config_header(dir: &Path) -> String {
    format!(
        "[gateway]\nstate_dir = {:?}\n\n[policy.defaults]\ntools = \"allow\"\n\n",
        dir.join("state").display().to_string()
    )
}

/// server-everything on Streamable HTTP, on 127.0.0.1 and a port the kernel picked.
fn start_everything_http() -> (Proc, String) {
    let npm = workspace_root().join(".ci-cache/npm");
    let proc = Proc::spawn(
        "server-everything (streamableHttp)",
        Command::new("node")
            .arg(fixture("everything_http.mjs"))
            .arg(&npm)
            .env("PORT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let addr = proc.wait_for("LISTENING line", |l| l.strip_prefix("LISTENING ").map(str::to_owned));
    assert!(addr.starts_with("127.0.0.1:"), "server-everything listens on loopback only: {addr}");
    let url = format!("http://{addr}/mcp");
    (proc, url)
}

/// A tempdir with `portico.toml` joining the four upstreams, and server-everything on HTTP.
struct Setup {
    _dir: tempfile::TempDir,
    config: PathBuf,
    _everything_http: Proc,
}

fn setup() -> Setup {
    let (everything_http, url) = start_everything_http();
    let dir = tempfile::tempdir().expect("tempdir");
    let s = |p: &Path| format!("{:?}", p.display().to_string());
    let text = format!(
        r#"{header}# @modelcontextprotocol/server-everything over stdio.
[servers.se]
command = {everything}
args = ["stdio"]

# The same over Streamable HTTP.
[servers.sehttp]
url = "{url}"

# The Python SDK's MCPServer over stdio.
[servers.py]
command = {python}
args = [{py_server}]

# Portico's example server over stdio.
[servers.px]
command = {px}
"#,
        header = config_header(dir.path()),
        everything = s(&Peer::ServerEverything.path()),
        python = s(&Peer::PythonSdk.path()),
        py_server = s(&fixture("py_server.py")),
        px = s(&portico_everything()),
    );
    let config = dir.path().join("portico.toml");
    std::fs::write(&config, text).expect("write config");
    Setup { _dir: dir, config, _everything_http: everything_http }
}

impl Setup {
    /// `portico serve` for a stdio client to spawn.
    fn stdio_target(&self) -> Value {
        json!({"stdio": {"command": portico_bin(), "args": ["serve", "--config", self.config]}})
    }

    /// `portico serve --http 127.0.0.1:0`, once it says where it listens (after its upstreams
    /// are up): the process and the endpoint's URL.
    fn serve_http(&self) -> (Proc, String) {
        let gateway = Proc::spawn(
            "portico serve --http",
            Command::new(portico_bin())
                .arg("serve")
                .arg("--config")
                .arg(&self.config)
                .args(["--http", "127.0.0.1:0"])
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
        );
        let url = gateway.wait_for("URL on stderr", |l| {
            let start = l.find("http://127.0.0.1:")?;
            let rest = &l[start..];
            let end = rest.find("/mcp")? + "/mcp".len();
            Some(rest[..end].to_owned())
        });
        (gateway, url)
    }
}

// ---------------------------------------------------------------------------------------------
// The plan every client runs, and the checks on what it got

fn plan(target: Value, client: &str) -> Value {
    json!({
        "target": target,
        "calls": [
            {"tool": "se__echo", "args": {"message": format!("hello from {client}")}},
            {"tool": "sehttp__get-sum", "args": {"a": 2, "b": 40}},
            {"tool": "sehttp__echo", "args": {"message": "over http"}},
            {"tool": "py__reverse", "args": {"text": "gateway"}},
            {"tool": "py__tally", "args": {"amount": 1}},
            {"tool": "py__tally", "args": {"amount": 1}},
            {"tool": "py__era", "args": {}},
            {"tool": "px__add", "args": {"a": 2, "b": 3}},
        ],
        "reads": [
            "py://motd",
            "everything://readme",
            "everything://notes/2",
            "portico:se/demo://resource/static/document/features.md",
            "portico:sehttp/demo://resource/dynamic/text/1",
        ],
        "prompts": [
            {"name": "se__simple-prompt"},
            {"name": "sehttp__args-prompt", "args": {"city": "Paris"}},
            {"name": "py__haiku", "args": {"topic": "gateways"}},
            {"name": "px__review", "args": {"code": "fn main() {}", "language": "rust"}},
        ],
    })
}

/// What a run must have seen besides the plan's fixed answers.
struct Expect<'a> {
    client: &'a str,
    /// The protocol version the client and the gateway agreed on.
    era: &'a str,
    /// The `py__tally` total before this run (the upstream is shared by every client).
    tally_before: u64,
}

fn names(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {report}"))
        .iter()
        .map(|v| v.as_str().map_or_else(|| v["name"].as_str().unwrap_or_default().to_owned(), str::to_owned))
        .collect()
}

/// The step of the report's `key` list at `i`, which must not have failed.
fn step<'a>(report: &'a Value, key: &str, i: usize) -> &'a Value {
    let entry = &report[key][i];
    assert!(entry.is_object(), "{key}[{i}] missing in {report}");
    assert!(entry.get("error").is_none(), "{key}[{i}] failed: {entry}");
    entry
}

fn call_text(report: &Value, i: usize) -> &str {
    let entry = step(report, "calls", i);
    assert_eq!(entry["isError"], json!(false), "a tool error: {entry}");
    entry["text"].as_str().unwrap_or_else(|| panic!("no text: {entry}"))
}

fn read_text(report: &Value, i: usize) -> (&str, &str) {
    let entry = step(report, "reads", i);
    let first = &entry["contents"][0];
    (first["uri"].as_str().unwrap_or_default(), first["text"].as_str().unwrap_or_else(|| panic!("no text: {entry}")))
}

fn prompt_text(report: &Value, i: usize) -> &str {
    let entry = step(report, "prompts_got", i);
    entry["text"].as_str().unwrap_or_else(|| panic!("no text: {entry}"))
}

fn check(report: &Value, expect: &Expect<'_>) {
    let who = expect.client;
    assert_eq!(report["protocolVersion"], json!(expect.era), "{who}: negotiated version");
    assert_eq!(report["serverInfo"]["name"], json!("portico"), "{who}: serverInfo");

    // Tools: each upstream's, prefixed, with the upstream named in _meta.
    let tools = names(report, "tools");
    for name in ["se__echo", "se__get-sum", "sehttp__echo", "sehttp__get-sum", "py__reverse", "py__tally", "px__add"] {
        assert!(tools.iter().any(|t| t == name), "{who}: {name} missing from {tools:?}");
    }
    for tool in report["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default();
        let up = &tool["upstream"];
        let joined = format!("{}__{}", up["server"].as_str().unwrap_or("?"), up["name"].as_str().unwrap_or("?"));
        assert_eq!(joined, name, "{who}: _meta[\"dev.portico/upstream\"] of {tool}");
    }
    let of = |prefix: &str| -> Vec<String> {
        tools.iter().filter_map(|t| t.strip_prefix(prefix)).map(str::to_owned).collect::<Vec<_>>()
    };
    let (stdio_tools, http_tools) = (of("se__"), of("sehttp__"));
    assert!(stdio_tools.len() >= 10, "{who}: server-everything's tools: {stdio_tools:?}");
    assert_eq!(stdio_tools, http_tools, "{who}: one server, the same tools over stdio and HTTP");
    assert_eq!(of("py__"), ["era", "order", "reverse", "tally"], "{who}: the Python server's tools");

    // Resources: a URI offered by two servers is scoped to each, one offered once is kept.
    let resources = names(report, "resources");
    for uri in [
        "py://motd",
        "everything://readme",
        "portico:se/demo://resource/static/document/features.md",
        "portico:sehttp/demo://resource/static/document/features.md",
    ] {
        assert!(resources.iter().any(|r| r == uri), "{who}: {uri} missing from {resources:?}");
    }
    assert!(!resources.iter().any(|r| r.starts_with("demo:")), "{who}: an unscoped shared URI: {resources:?}");
    let templates = names(report, "templates");
    for t in ["everything://notes/{id}", "portico:se/demo://resource/dynamic/text/{resourceId}"] {
        assert!(templates.iter().any(|x| x == t), "{who}: template {t} missing from {templates:?}");
    }
    let prompts = names(report, "prompts");
    for p in ["se__simple-prompt", "se__args-prompt", "sehttp__args-prompt", "py__haiku", "px__review"] {
        assert!(prompts.iter().any(|x| x == p), "{who}: prompt {p} missing from {prompts:?}");
    }

    // Calls, one or more per upstream, with their answers.
    assert_eq!(call_text(report, 0), format!("Echo: hello from {who}"));
    assert_eq!(call_text(report, 1), "The sum of 2 and 40 is 42.");
    assert_eq!(call_text(report, 2), "Echo: over http");
    assert_eq!(call_text(report, 3), "yawetag");
    let n = expect.tally_before;
    assert_eq!(call_text(report, 4), format!("total {}", n + 1), "{who}: the upstream session keeps its state");
    assert_eq!(call_text(report, 5), format!("total {}", n + 2), "{who}: the upstream session keeps its state");
    // Whatever the client speaks, the gateway talks to the Python server in the newest era
    // both support.
    assert_eq!(call_text(report, 6), MODERN, "{who}: the era between the gateway and the Python server");
    let add = step(report, "calls", 7);
    assert_eq!(add["structured"], json!({"sum": 5}), "{who}: structured content passes through: {add}");
    let add_text: Value = serde_json::from_str(call_text(report, 7)).expect("px__add's text is JSON");
    assert_eq!(add_text, json!({"sum": 5}));

    // Reads: plain URIs, a template's, and scoped ones routed to the right server.
    assert_eq!(read_text(report, 0), ("py://motd", "snakes on a gateway"), "{who}");
    assert_eq!(read_text(report, 1), ("everything://readme", "# Everything\nA tour of MCP."), "{who}");
    assert_eq!(read_text(report, 2), ("everything://notes/2", "note 2"), "{who}");
    let (_, doc) = read_text(report, 3);
    assert!(doc.starts_with("# Everything Server - Features"), "{who}: {doc:.80}");
    let (_, dynamic) = read_text(report, 4);
    assert!(dynamic.starts_with("Resource 1: This is a plaintext resource"), "{who}: {dynamic:.80}");

    // Prompts, with arguments reaching the upstream.
    assert_eq!(prompt_text(report, 0), "This is a simple prompt without arguments.", "{who}");
    assert_eq!(prompt_text(report, 1), "What's weather in Paris?", "{who}");
    assert_eq!(prompt_text(report, 2), "Write a haiku about gateways.", "{who}");
    assert_eq!(prompt_text(report, 3), "Review this rust:\nfn main() {}", "{who}");
}

// ---------------------------------------------------------------------------------------------
// The clients

fn python_client(plan: &Value, mode: &str) -> Value {
    let mut plan = plan.clone();
    plan["mode"] = json!(mode);
    run_client(
        &format!("Python SDK client (mode={mode})"),
        Command::new(Peer::PythonSdk.path()).arg(fixture("py_client.py")).arg(plan.to_string()),
    )
}

fn typescript_client(plan: &Value) -> Value {
    run_client(
        "TypeScript SDK client",
        Command::new("node")
            .arg(fixture("ts_client.mjs"))
            .arg(workspace_root().join(".ci-cache/ts"))
            .arg(plan.to_string()),
    )
}

/// Runs the plan with Portico's client and reports in the scripts' shape.
async fn portico_client(client: &Client, plan: &Value) -> Value {
    let tools: Vec<Value> = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list")
        .iter()
        .map(|t| {
            let v = to_value(t);
            json!({"name": v["name"], "upstream": v["_meta"]["dev.portico/upstream"]})
        })
        .collect();
    let resources: Vec<Value> = bounded("resources/list", client.list_all_resources())
        .await
        .expect("resources/list")
        .iter()
        .map(|r| json!(r.uri))
        .collect();
    let templates: Vec<Value> = bounded("templates/list", client.list_all_resource_templates())
        .await
        .expect("resources/templates/list")
        .iter()
        .map(|t| json!(t.uri_template))
        .collect();
    let prompts: Vec<Value> = bounded("prompts/list", client.list_all_prompts())
        .await
        .expect("prompts/list")
        .iter()
        .map(|p| json!(p.name))
        .collect();

    let text_of = |content: &Value| -> String {
        content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut calls = Vec::new();
    for call in plan["calls"].as_array().into_iter().flatten() {
        let tool = call["tool"].as_str().unwrap_or_default();
        calls.push(match bounded(tool, client.call_tool(tool, call["args"].clone())).await {
            Ok(r) => {
                let v = to_value(&r);
                json!({"tool": tool, "isError": v["isError"].as_bool().unwrap_or(false), "text": text_of(&v["content"]),
                       "structured": v["structuredContent"], "meta": v["_meta"]})
            }
            Err(e) => json!({"tool": tool, "error": e.to_string()}),
        });
    }
    let mut reads = Vec::new();
    for uri in plan["reads"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        reads.push(match bounded(uri, client.read_resource(uri)).await {
            Ok(r) => {
                let v = to_value(&r);
                let contents: Vec<Value> = v["contents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| json!({"uri": c["uri"], "text": c["text"], "blob": c.get("blob").is_some()}))
                    .collect();
                json!({"uri": uri, "contents": contents})
            }
            Err(e) => json!({"uri": uri, "error": e.to_string()}),
        });
    }
    let mut prompts_got = Vec::new();
    for p in plan["prompts"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or_default();
        let args: BTreeMap<String, String> = p["args"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        prompts_got.push(match bounded(name, client.get_prompt(name, args)).await {
            Ok(r) => {
                let v = to_value(&r);
                let text: Vec<String> =
                    v["messages"].as_array().into_iter().flatten().map(|m| text_of(&json!([m["content"]]))).collect();
                json!({"name": name, "text": text.join("\n")})
            }
            Err(e) => json!({"name": name, "error": e.to_string()}),
        });
    }
    json!({
        "sdk": "portico",
        "protocolVersion": client.protocol_version().to_string(),
        "serverInfo": {"name": client.server_info().name, "version": client.server_info().version},
        "tools": tools, "resources": resources, "templates": templates, "prompts": prompts,
        "calls": calls, "reads": reads, "prompts_got": prompts_got,
    })
}

/// One of the SDK's types as JSON, to read it as the wire has it.
fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).expect("serializable")
}

async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} took longer than {LIMIT:?}"),
    }
}

fn info() -> Implementation {
    Implementation::new("portico-interop", "1.0.0")
}

/// Portico's client over stdio, spawning `portico serve`; checks the run, then that the
/// gateway exits 0 at the end of its input and leaves none of its upstreams behind.
async fn portico_over_stdio(setup: &Setup, era: EraMode, expect: &Expect<'_>) {
    let mut child = ChildProcess::new(portico_bin());
    let log = StderrLog::new("portico serve (stdio)");
    child.arg("serve").arg("--config").arg(&setup.config).on_stderr(log.sink());
    let (transport, mut handle) = child.spawn().expect("spawn portico serve");
    let gateway = handle.pid();
    // The gateway reads nothing until its upstreams are up, which can take longer than the
    // client's 5 s discovery probe; see portico_client_reaches_the_2026_era_over_stdio_when_upstreams_start_slowly.
    log.wait_for("portico: serving").await;
    let client = bounded("connect", Client::builder(info()).era(era).connect(transport)).await.expect("connect");
    let upstreams = children(gateway);
    let report = portico_client(&client, &plan(Value::Null, expect.client)).await;
    check(&report, expect);
    assert!(upstreams.len() >= 3, "the gateway runs its three stdio upstreams: {upstreams:?}");
    bounded("close", client.close()).await;
    let status = bounded("gateway exit", handle.wait()).await.expect("wait for portico serve");
    assert!(status.success(), "portico serve exits 0 at the end of its input: {status}");
    assert_all_gone("the gateway's upstreams after it exited", &upstreams);
}

// ---------------------------------------------------------------------------------------------
// Tests

const ALL_UPSTREAMS: [Peer; 2] = [Peer::ServerEverything, Peer::PythonSdk];

#[test]
fn python_sdk_client_over_stdio_in_the_2026_era() {
    if !peers_present("python_sdk_client_over_stdio_in_the_2026_era", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let report = python_client(&plan(setup.stdio_target(), "python"), "auto");
    check(&report, &Expect { client: "python", era: MODERN, tally_before: 0 });
}

#[test]
fn python_sdk_client_over_stdio_in_the_handshake_era() {
    if !peers_present("python_sdk_client_over_stdio_in_the_handshake_era", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let report = python_client(&plan(setup.stdio_target(), "python"), "legacy");
    check(&report, &Expect { client: "python", era: HANDSHAKE, tally_before: 0 });
}

/// Two Python clients, one per era, one after the other on one gateway: the upstreams are
/// shared (`isolate = "shared"`), so the second sees the Python server's state after the first.
#[test]
fn python_sdk_clients_over_streamable_http_in_both_eras() {
    if !peers_present("python_sdk_clients_over_streamable_http_in_both_eras", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let (mut gateway, url) = setup.serve_http();
    let upstreams = children(gateway.pid());
    let target = json!({"http": url});
    let modern = python_client(&plan(target.clone(), "python"), "auto");
    check(&modern, &Expect { client: "python", era: MODERN, tally_before: 0 });
    let handshake = python_client(&plan(target, "python"), "legacy");
    check(&handshake, &Expect { client: "python", era: HANDSHAKE, tally_before: 2 });
    let status = gateway.stop(Duration::from_secs(10)).expect("portico serve stops on SIGTERM within 10 s");
    assert!(status.success(), "portico serve exits 0 on SIGTERM: {status}");
    assert_all_gone("the gateway's upstreams after SIGTERM", &upstreams);
}

#[test]
fn typescript_sdk_client_over_stdio() {
    if !peers_present(
        "typescript_sdk_client_over_stdio",
        &[Peer::ServerEverything, Peer::PythonSdk, Peer::TypeScriptSdk],
    ) {
        return;
    }
    let setup = setup();
    let report = typescript_client(&plan(setup.stdio_target(), "typescript"));
    assert_eq!(report["sdkVersion"], json!("1.32.2"), "the pinned TypeScript SDK");
    check(&report, &Expect { client: "typescript", era: HANDSHAKE, tally_before: 0 });
}

#[test]
fn typescript_sdk_client_over_streamable_http() {
    if !peers_present(
        "typescript_sdk_client_over_streamable_http",
        &[Peer::ServerEverything, Peer::PythonSdk, Peer::TypeScriptSdk],
    ) {
        return;
    }
    let setup = setup();
    let (_gateway, url) = setup.serve_http();
    let report = typescript_client(&plan(json!({"http": url}), "typescript"));
    check(&report, &Expect { client: "typescript", era: HANDSHAKE, tally_before: 0 });
    assert_eq!(report["terminated"], json!(true), "the gateway accepts the session's DELETE");
}

#[tokio::test]
async fn portico_client_over_stdio_in_the_2026_era() {
    if !peers_present("portico_client_over_stdio_in_the_2026_era", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    portico_over_stdio(&setup, EraMode::Auto, &Expect { client: "portico", era: MODERN, tally_before: 0 }).await;
}

#[tokio::test]
async fn portico_client_over_streamable_http_in_the_2026_era() {
    if !peers_present("portico_client_over_streamable_http_in_the_2026_era", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let (_gateway, url) = setup.serve_http();
    let transport = HttpClientTransport::new(url.as_str());
    let client = bounded("connect", Client::builder(info()).connect(transport)).await.expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let report = portico_client(&client, &plan(Value::Null, "portico")).await;
    check(&report, &Expect { client: "portico", era: MODERN, tally_before: 0 });
    bounded("close", client.close()).await;
}

/// Portico's client forced into the handshake era, on stdio and then on HTTP.
#[tokio::test]
async fn portico_client_in_the_handshake_era() {
    if !peers_present("portico_client_in_the_handshake_era", &ALL_UPSTREAMS) {
        return;
    }
    let era = EraMode::Handshake(ProtocolVersion::V2025_11_25);
    let setup = setup();
    portico_over_stdio(&setup, era, &Expect { client: "portico", era: HANDSHAKE, tally_before: 0 }).await;

    let (_gateway, url) = setup.serve_http();
    let transport = HttpClientTransport::new(url.as_str());
    let handle = transport.handle();
    let client = bounded("connect", Client::builder(info()).era(era).connect(transport)).await.expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(handle.session_id().is_some(), "a handshake over HTTP gets a session id");
    let report = portico_client(&client, &plan(Value::Null, "portico")).await;
    check(&report, &Expect { client: "portico", era: HANDSHAKE, tally_before: 0 });
    bounded("close", client.close()).await;
}

/// When an upstream's tools change, the gateway's list follows: `px__toggle_bonus` adds or
/// removes the example's `bonus` tool, the gateway re-lists it and offers `px__bonus`, or no
/// longer does. Two other clients, one per era, keep listing tools meanwhile, as clients do
/// when told the list changed. Once things settle, each must see the list as it now is.
#[tokio::test]
async fn the_tool_list_follows_upstream_changes_while_clients_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("portico.toml");
    let text = format!(
        "{}[servers.px]\ncommand = {:?}\n",
        config_header(dir.path()),
        portico_everything().display().to_string()
    );
    std::fs::write(&config, text).expect("write config");
    let gateway = Proc::spawn(
        "portico serve --http",
        Command::new(portico_bin())
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let url = gateway.wait_for("URL on stderr", |l| {
        let start = l.find("http://127.0.0.1:")?;
        let end = l[start..].find("/mcp")? + start + "/mcp".len();
        Some(l[start..end].to_owned())
    });
    let connect = |era: EraMode| {
        let url = url.clone();
        async move {
            bounded("connect", Client::builder(info()).era(era).connect(HttpClientTransport::new(url.as_str())))
                .await
                .expect("connect")
        }
    };
    let toggler = connect(EraMode::Auto).await;
    let listers = [connect(EraMode::Auto).await, connect(EraMode::Handshake(ProtocolVersion::V2025_11_25)).await];
    let has_bonus = |tools: &[portico::schema::Tool]| tools.iter().any(|t| t.name == "px__bonus");
    for round in 0..10 {
        let stop = AtomicBool::new(false);
        let toggle = async {
            let r = bounded("toggle", toggler.call_tool("px__toggle_bonus", json!({}))).await.expect("toggle");
            // Let the gateway re-list the upstream and apply it while the listers go on.
            tokio::time::sleep(Duration::from_millis(150)).await;
            stop.store(true, Ordering::Relaxed);
            to_value(&r)["content"][0]["text"] == "added bonus"
        };
        let (added, (), ()) = tokio::join!(toggle, keep_listing(&listers[0], &stop), keep_listing(&listers[1], &stop));
        // Settled: nothing changes any more; each era's list must say what the upstream has.
        let deadline = Instant::now() + Duration::from_secs(3);
        for (i, c) in listers.iter().enumerate() {
            loop {
                let tools = bounded("tools/list", c.list_tools(None)).await.expect("tools/list").tools;
                if has_bonus(&tools) == added {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "round {round}: lister {i} ({}) still sees {} px__bonus 3 s after it was {}",
                    c.protocol_version(),
                    if added { "no" } else { "a" },
                    if added { "added" } else { "removed" },
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(gateway);
}

/// Lists tools again and again until `stop`.
async fn keep_listing(client: &Client, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let _ = client.list_tools(None).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Gateway bugs these peers found: each test asserts the behaviour that is expected, and is
// ignored until the bug is fixed.

/// A resource offered by two servers is listed as `portico:<server>/<uri>`; reading it must
/// answer with contents for that URI, the one the client asked for and the gateway offers.
/// The gateway answers with the upstream's own URI (`demo://…`), which it does not offer:
/// reading that one through the gateway fails with "resource not found".
#[tokio::test]
async fn reading_a_scoped_uri_answers_for_that_uri() {
    if !peers_present("reading_a_scoped_uri_answers_for_that_uri", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let mut child = ChildProcess::new(portico_bin());
    child.arg("serve").arg("--config").arg(&setup.config);
    let (transport, _handle) = child.spawn().expect("spawn portico serve");
    let client = bounded("connect", Client::builder(info()).connect(transport)).await.expect("connect");
    for uri in
        ["portico:se/demo://resource/static/document/features.md", "portico:sehttp/demo://resource/dynamic/text/1"]
    {
        let read = to_value(&bounded(uri, client.read_resource(uri)).await.expect("resources/read"));
        let uris: Vec<&Value> = read["contents"].as_array().into_iter().flatten().map(|c| &c["uri"]).collect();
        assert_eq!(uris, [&json!(uri)], "the URIs of the contents read for {uri}");
    }
    bounded("close", client.close()).await;
}

/// In 2026-07-28 each result names its server in `_meta["io.modelcontextprotocol/serverInfo"]`.
/// Upstreams the gateway reaches in that era put their own name there; the gateway replaces it
/// with its own for 2026-07-28 clients, but passes it through unchanged to handshake-era
/// clients, so they see a protocol-reserved key naming a server they never connected to
/// (`everything`, `py-fixture` instead of `portico`).
#[test]
fn handshake_era_results_do_not_name_the_upstream_as_their_server() {
    if !peers_present("handshake_era_results_do_not_name_the_upstream_as_their_server", &ALL_UPSTREAMS) {
        return;
    }
    let setup = setup();
    let plan = json!({
        "target": setup.stdio_target(),
        "calls": [
            {"tool": "px__add", "args": {"a": 1, "b": 2}},
            {"tool": "py__reverse", "args": {"text": "ab"}},
            {"tool": "se__echo", "args": {"message": "x"}},
        ],
    });
    let report = python_client(&plan, "legacy");
    assert_eq!(report["protocolVersion"], json!(HANDSHAKE));
    for i in 0..3 {
        let entry = step(&report, "calls", i);
        let named = &entry["meta"]["io.modelcontextprotocol/serverInfo"];
        assert!(named.is_null() || named["name"] == "portico", "{}: the result names {named}", entry["tool"]);
    }
}

/// At the end of its input `portico serve` (stdio) stops, as it does for a client that
/// subscribed to nothing. With a 2026-07-28 `subscriptions/listen` stream open, it does not:
/// it keeps running (and its upstreams with it) until it gets a signal. The same holds for any
/// server built on Portico's SDK, so every upstream built on it (here the example `everything`,
/// to which the gateway always keeps a listen open) ignores the gateway closing its stdin and
/// is stopped with SIGTERM after the 2 s grace: `portico: DEBUG portico::child: child ignored
/// stdin close; sending SIGTERM`.
#[test]
fn portico_serve_exits_at_end_of_input_while_a_client_listens() {
    if !peers_present("portico_serve_exits_at_end_of_input_while_a_client_listens", &[Peer::PythonSdk]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("portico.toml");
    let text = format!(
        "{}[servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
        config_header(dir.path()),
        Peer::PythonSdk.path().display().to_string(),
        fixture("py_server.py").display().to_string(),
    );
    std::fs::write(&config, text).expect("write config");
    let mut cmd = Command::new(portico_bin());
    cmd.arg("serve").arg("--config").arg(&config);
    let (mut gateway, stdin, stdout) = Proc::spawn_stdio("portico serve (stdio)", &mut cmd);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "portico-interop", "version": "1.0.0"},
    });
    let mut stdin = stdin;
    for frame in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
               "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}),
    ] {
        std::io::Write::write_all(&mut stdin, format!("{frame}\n").as_bytes()).expect("write a frame");
    }
    let deadline = Instant::now() + LIMIT;
    loop {
        let line = stdout
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no acknowledgement of subscriptions/listen; stderr:\n{}", gateway.log()));
        let message: Value = serde_json::from_str(&line).expect("a JSON frame");
        if message["method"] == "notifications/subscriptions/acknowledged" {
            break;
        }
    }
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Ok(Some(status)) = gateway.child.try_wait() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("portico serve exits within 10 s of the end of its input");
    assert!(status.success(), "{status}");
}

/// `portico serve` reads nothing from a stdio client until its upstreams are up (up to
/// `--startup-wait`, 30 s). Portico's own client, in its default `EraMode::Auto`, gives the
/// `server/discover` probe 5 s and then falls back to `initialize`: against a gateway whose
/// upstreams take longer to start, it silently ends up in the handshake era. Here the one
/// upstream starts after 6 s.
#[tokio::test]
async fn portico_client_reaches_the_2026_era_over_stdio_when_upstreams_start_slowly() {
    if !peers_present("portico_client_reaches_the_2026_era_over_stdio_when_upstreams_start_slowly", &[Peer::PythonSdk])
    {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("portico.toml");
    let slow = format!(
        "sleep 6; exec {:?} {:?}",
        Peer::PythonSdk.path().display().to_string(),
        fixture("py_server.py").display().to_string()
    );
    let text =
        format!("{}[servers.py]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {:?}]\n", config_header(dir.path()), slow);
    std::fs::write(&config, text).expect("write config");
    let mut child = ChildProcess::new(portico_bin());
    let log = StderrLog::new("portico serve (stdio)");
    child.arg("serve").arg("--config").arg(&config).on_stderr(log.sink());
    let (transport, _handle) = child.spawn().expect("spawn portico serve");
    let client = bounded("connect", Client::builder(info()).connect(transport)).await.expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28, "the era Portico's client reached");
    let r = bounded("py__reverse", client.call_tool("py__reverse", json!({"text": "ab"}))).await.expect("call");
    assert_eq!(to_value(&r)["content"][0]["text"], "ba");
    bounded("close", client.close()).await;
}

/// The person's own client answers Portico's approval forms: the Python SDK's elicitation
/// callback, in the handshake era (an `elicitation/create` request) and in 2026-07-28 (an
/// input-required result answered on the retry).
#[test]
fn python_sdk_client_answers_approvals_in_both_eras() {
    if !peers_present("python_sdk_client_answers_approvals_in_both_eras", &[Peer::PythonSdk]) {
        return;
    }
    for mode in ["legacy", "auto"] {
        let dir = tempfile::tempdir().expect("tempdir");
        // The default policy: every tool call asks.
        let text = format!(
            "[gateway]\nstate_dir = {:?}\n\n[servers.px]\ncommand = {:?}\n",
            dir.path().join("state").display().to_string(),
            portico_everything().display().to_string()
        );
        let config = dir.path().join("portico.toml");
        std::fs::write(&config, text).expect("write config");
        let add = |a: i64, b: i64| json!({"tool": "px__add", "args": {"a": a, "b": b}});
        let plan = json!({
            "target": {"stdio": {"command": portico_bin(), "args": ["serve", "--config", config]}},
            "mode": mode,
            "calls": [add(1, 1), add(1, 2), add(2, 2), add(3, 3)],
            "decisions": ["deny", "allow_once", "allow_session"],
        });
        let who = format!("Python SDK client (mode={mode}) answering approvals");
        let report =
            run_client(&who, Command::new(Peer::PythonSdk.path()).arg(fixture("py_client.py")).arg(plan.to_string()));
        let calls = report["calls"].as_array().cloned().unwrap_or_default();
        assert_eq!(calls.len(), 4, "{who}: {report}");
        assert_eq!(calls[0]["isError"], true, "{who}: denied: {report}");
        assert!(calls[0]["text"].as_str().is_some_and(|t| t.contains("denied by")), "{who}: {report}");
        assert_eq!(calls[1]["structured"], json!({"sum": 3}), "{who}: allowed once: {report}");
        assert_eq!(calls[2]["structured"], json!({"sum": 4}), "{who}: allowed for the session: {report}");
        assert_eq!(calls[3]["structured"], json!({"sum": 6}), "{who}: the session's answer holds: {report}");
        let asked = report["asked"].as_array().cloned().unwrap_or_default();
        assert_eq!(asked.len(), 3, "{who}: asked three times, not for the fourth call: {report}");
        for form in &asked {
            let form = form.as_str().unwrap_or_default();
            assert!(form.contains("server `px`") && form.contains("`add`"), "{who}: the form names both: {form}");
        }
    }
}

/// A handshake-era upstream on the Python SDK asks for input in the middle of a call; the
/// Python SDK client in 2026-07-28 answers it through an input-required result and a retry.
/// The gateway keeps the upstream call waiting and the retry resumes it: the upstream counts
/// one order, not two (before, the retry made the upstream call again).
#[test]
fn a_python_upstreams_question_mid_call_is_answered_by_a_2026_07_28_client_once() {
    if !peers_present(
        "a_python_upstreams_question_mid_call_is_answered_by_a_2026_07_28_client_once",
        &[Peer::PythonSdk],
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nstate_dir = {:?}\n\n[policy.defaults]\ntools = \"allow\"\n\n\
         [servers.py]\ncommand = {:?}\nargs = [{:?}]\nprotocol_version = \"2025-11-25\"\n",
        dir.path().join("state").display().to_string(),
        Peer::PythonSdk.path().display().to_string(),
        fixture("py_server.py").display().to_string()
    );
    let config = dir.path().join("portico.toml");
    std::fs::write(&config, text).expect("write config");
    let order = |item: &str| json!({"tool": "py__order", "args": {"item": item}});
    let plan = json!({
        "target": {"stdio": {"command": portico_bin(), "args": ["serve", "--config", config]}},
        "mode": "auto",
        "calls": [order("tea"), order("cake")],
        "answers": [{"name": "Ada"}, {"name": "Grace"}],
    });
    let who = "Python SDK client (2026-07-28) answering a Python SDK server's elicitation";
    let report =
        run_client(who, Command::new(Peer::PythonSdk.path()).arg(fixture("py_client.py")).arg(plan.to_string()));
    assert_eq!(report["protocolVersion"], "2026-07-28", "{who}: {report}");
    let calls = report["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 2, "{who}: {report}");
    assert_eq!(calls[0]["text"], "order 1: tea billed to Ada", "{who}: one upstream call per order: {report}");
    assert_eq!(calls[1]["text"], "order 2: cake billed to Grace", "{who}: {report}");
    let asked = report["asked"].as_array().cloned().unwrap_or_default();
    assert_eq!(asked.len(), 2, "{who}: asked once per order: {report}");
    for form in &asked {
        let form = form.as_str().unwrap_or_default();
        assert!(form.contains("py") && form.contains("Bill whom?"), "{who}: the form names the server: {form}");
    }
}
